"""ONNX converters for quantized operators: QOperator ops and dynamic quantization.

QOperator ops (`QLinearConv`, `QLinearMatMul` and onnxruntime's `com.microsoft` ops
`QLinearAdd`, `QLinearMul`, `QLinearGlobalAveragePool`, `QLinearAveragePool`, `QGemm`,
`QLinearConcat`, `QLinearSigmoid`, `QLinearLeakyRelu`, `QLinearSoftmax`) carry their
scales and zero points as inputs. When those are compile-time constants they become the
quantized `nn` op of the float operator, on `!quant.uniform` tensors (per-tensor activations,
per-tensor or per-output-channel weights, int8 or uint8): `lower-quantized` defines its
integer arithmetic, as for TFLite models but requantizing with one rounding as onnxruntime
does (`irc.rescale_rounding = "single_round"`). The stored integers of an input are
re-read with the node's parameters through `quant.scast` (QOperator tensors between ops are
plain uint8/int8 tensors). An integer product whose activation and weights are stored
differently (uint8 data with int8 weights, onnxruntime's usual mix) shifts the activation to
the weights' storage first with an exact `quant.rescale` (multiplier 1: ``x - 128`` with the
zero point moved by 128) and shifts the result back. `QLinearSoftmax` whose output is not
quantized as TFLite's integer softmax writes it (scale 1/256, zero point at the storage
minimum; onnxruntime uses 1/255) is dequantized, computed in float and quantized again.

Dynamic quantization (scales only known at run time) is explicit integer arithmetic:

* `DynamicQuantizeLinear` computes ``scale = (max(x, 0) - min(x, 0)) / 255`` and the zero point
  with `nn.reduce`/float ops, rounds half to even through a `quant.qcast` to
  ``!quant.uniform<i32:f32, 1.0>`` and saturates to uint8 with a `quant.rescale` by 1;
* `MatMulInteger` and `ConvInteger` widen both operands to i32, subtract their zero points
  and accumulate into i32 (`nn.fully_connected` when the right operand is a constant matrix,
  else `nn.batch_matmul`; `nn.conv2d`).

Constant inputs fold in numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import (
    Float32Type,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.rewriter import Rewriter

from irc.dialects import nn
from irc.dialects.quant import (
    RESCALE_ROUNDING,
    DCastOp,
    QCastOp,
    RescaleOp,
    SCastOp,
    UniformQuantizedType,
    quantized_element,
)
from irc.importers.onnx.dtypes import element_for_dtype
from irc.importers.onnx.helpers import (
    as_2d_pads,
    as_2d_window,
    conv_window,
    normalize_axis,
    reshape,
    restore_rank,
    static_shape,
)
from irc.importers.onnx.ops import convert_pool
from irc.importers.onnx.registry import ConversionContext, Results, Unsupported, converter

_STORAGE: dict[np.dtype, IntegerType] = {
    np.dtype(np.int8): IntegerType(8),
    np.dtype(np.uint8): IntegerType(8, Signedness.UNSIGNED),
}
"""Storage of QOperator tensors (8-bit, as onnxruntime's kernels)."""

_SHIFT = 128
"""uint8 and int8 storage of one real value differ by 128 (and so do their zero points)."""

_SINGLE_ROUND = StringAttr("single_round")

_UNIT_MULTIPLIER, _UNIT_SHIFT = 1 << 30, 1
"""A `quant.rescale` by exactly 1: ``2^30 * 2^(1 - 31)``."""

# ---- Quantization parameters -------------------------------------------------------------------


def _storage(dtype: np.dtype) -> IntegerType:
    storage = _STORAGE.get(np.dtype(dtype))
    if storage is None:
        raise Unsupported(f"{dtype} quantized tensors (irc imports int8 and uint8 here)")
    return storage


def _const_param(ctx: ConversionContext, name: str, what: str) -> np.ndarray:
    array = ctx.const(name)
    if array is None:
        raise Unsupported(f"{what} only known at run time")
    return np.asarray(array)


def _qtype(
    ctx: ConversionContext,
    scale_name: str,
    zp_name: str,
    dtype: np.dtype,
    axis: int | None = None,
) -> UniformQuantizedType:
    """The `!quant.uniform` type of constant (scale, zero point) inputs: per tensor, or along
    `axis` when the scale has more than one element."""
    scale = _const_param(ctx, scale_name, "a scale").astype(np.float64).reshape(-1)
    if ctx.has(zp_name):
        zero_point = _const_param(ctx, zp_name, "a zero point")
        dtype = zero_point.dtype
        zero_point = zero_point.astype(np.int64).reshape(-1)
    else:
        zero_point = np.zeros(1, np.int64)
    storage = _storage(dtype)
    if zero_point.size == 1 and scale.size > 1:
        zero_point = np.repeat(zero_point, scale.size)
    if scale.size == 1 and zero_point.size > 1 and np.all(zero_point == zero_point[0]):
        zero_point = zero_point[:1]
    if zero_point.size != scale.size:
        raise Unsupported(f"{zero_point.size} zero points for {scale.size} scales")
    if not np.all(np.isfinite(scale) & (scale > 0)):
        raise Unsupported("a scale that is not positive and finite")
    if scale.size == 1:
        return UniformQuantizedType.per_tensor(storage, f32, float(scale[0]), int(zero_point[0]))
    if axis is None:
        raise Unsupported(f"{scale.size} scales for a tensor quantized per tensor")
    return UniformQuantizedType.per_axis(
        storage, f32, axis, [float(s) for s in scale], [int(z) for z in zero_point]
    )


def _is_unsigned(qtype: UniformQuantizedType) -> bool:
    return qtype.storage_type.signedness.data == Signedness.UNSIGNED


def _with_storage(qtype: UniformQuantizedType, unsigned: bool) -> UniformQuantizedType:
    """The same real values stored as uint8 or int8 (zero points moved by 128)."""
    if _is_unsigned(qtype) == unsigned:
        return qtype
    delta = _SHIFT if unsigned else -_SHIFT
    storage = _STORAGE[np.dtype(np.uint8 if unsigned else np.int8)]
    zero_points = [z + delta for z in qtype.zero_point_values]
    if qtype.axis is None:
        return UniformQuantizedType.per_tensor(storage, f32, qtype.scale_values[0], zero_points[0])
    return UniformQuantizedType.per_axis(
        storage, f32, qtype.axis, list(qtype.scale_values), zero_points
    )


# ---- Values --------------------------------------------------------------------------------------


def _type_of(value: SSAValue) -> TensorType:
    type_ = value.type
    assert isinstance(type_, TensorType), "importers only make tensors"
    return type_


def _quantized_input(
    ctx: ConversionContext, name: str, scale_name: str, zp_name: str, axis: int | None = None
) -> SSAValue:
    """Input `name` read as a quantized tensor with the given (constant) parameters."""
    qtype = _qtype(ctx, scale_name, zp_name, ctx.dtype(name), axis)
    array = ctx.const(name)
    if array is not None:
        if np.dtype(array.dtype) not in _STORAGE:
            raise Unsupported(f"a {array.dtype} quantized constant")
        return ctx.result(nn.ConstantOp.from_array(array, TensorType(qtype, array.shape)))
    return _retag(ctx, ctx.value(name), qtype)


def _retag(ctx: ConversionContext, value: SSAValue, qtype: UniformQuantizedType) -> SSAValue:
    """The stored integers of `value` read as `qtype` (`quant.scast`, none when equal)."""
    type_ = _type_of(value)
    element = type_.element_type
    if element == qtype:
        return value
    shape = type_.get_shape()
    if isinstance(element, UniformQuantizedType):
        value = ctx.result(SCastOp(value, TensorType(element.storage_type, shape)))
        element = element.storage_type
    if not isinstance(element, IntegerType) or element.width.data != 8:
        raise Unsupported(f"a quantized input stored as {element}")
    if (element.signedness.data == Signedness.UNSIGNED) != _is_unsigned(qtype):
        raise Unsupported(f"{element} data with {qtype.storage_type} zero points")
    return ctx.result(SCastOp(value, TensorType(qtype, shape)))


def _restore(ctx: ConversionContext, value: SSAValue, qtype: UniformQuantizedType) -> SSAValue:
    """`value` re-expressed exactly in `qtype` (same scale; storage differing by 128)."""
    type_ = _type_of(value)
    if type_.element_type == qtype:
        return value
    result = TensorType(qtype, type_.get_shape())
    return ctx.result(RescaleOp(value, result, [_UNIT_MULTIPLIER], [_UNIT_SHIFT]))


def _to_storage_of(ctx: ConversionContext, value: SSAValue, unsigned: bool) -> SSAValue:
    """A quantized activation moved to uint8 or int8 storage (exact)."""
    qtype = _type_of(value).element_type
    assert isinstance(qtype, UniformQuantizedType)
    return _restore(ctx, value, _with_storage(qtype, unsigned))


def _product(
    ctx: ConversionContext,
    x: SSAValue,
    weights_unsigned: bool,
    y_type: UniformQuantizedType,
    build: ...,
) -> SSAValue:
    """Emit an integer product (conv, FC, matmul) whose data storage follows the weights'.

    `build(x, result_element)` emits the op; the result is given back in `y_type`."""
    x = _to_storage_of(ctx, x, weights_unsigned)
    inner = _with_storage(y_type, weights_unsigned)
    return _restore(ctx, build(x, inner), y_type)


def _retyped(ctx: ConversionContext, value: SSAValue, qtype: UniformQuantizedType) -> SSAValue:
    """Rebuild the op that defined `value` (just emitted) with a result of element `qtype`."""
    old = value.owner
    assert isinstance(old, IRDLOperation)
    new = type(old).build(
        operands=[list(old.operands)] if isinstance(old, nn.ConcatOp) else list(old.operands),
        result_types=[TensorType(qtype, _type_of(value).get_shape())],
        properties=dict(old.properties),
        attributes=dict(old.attributes),
    )
    new.location = old.location
    new.attributes[RESCALE_ROUNDING] = _SINGLE_ROUND
    Rewriter.replace_op(old, new)
    return new.results[0]


def _qresult(ctx: ConversionContext, op: Operation) -> SSAValue:
    """Emit a QOperator op's quantized `nn` op: it requantizes as onnxruntime does, with one
    rounding (`RESCALE_ROUNDING`); returns its result."""
    if quantized_element(_type_of(op.results[0])) is not None:
        op.attributes[RESCALE_ROUNDING] = _SINGLE_ROUND
    return ctx.result(op)


# ---- QLinearConv / ConvInteger -----------------------------------------------------------------


def _conv_geometry(
    ctx: ConversionContext, node: onnx.NodeProto, x_name: str, w_name: str
) -> tuple[tuple[int, ...], dict[str, object]]:
    attrs = ctx.attrs(node)
    shape = static_shape(ctx, x_name)
    w_shape = static_shape(ctx, w_name)
    if len(shape) not in (3, 4) or len(w_shape) != len(shape):
        raise Unsupported(f"a {len(shape) - 2}-D convolution (irc has 1-D and 2-D ones)")
    kernel = list(attrs.get("kernel_shape") or w_shape[2:])
    strides, dilations, pads = conv_window(ctx, node, shape[2:], kernel, attrs)
    if len(shape) == 3:
        strides, dilations = as_2d_window(strides, 1), as_2d_window(dilations, 1)
    props: dict[str, object] = {
        "strides": strides,
        "pads": as_2d_pads(pads),
        "dilations": dilations,
        "groups": attrs.get("group", 1),
        "layout": "NCHW",
    }
    return shape, props


def _filter_4d(array: np.ndarray) -> np.ndarray:
    return array if array.ndim == 4 else array.reshape(array.shape[0], array.shape[1], 1, -1)


def _data_4d(ctx: ConversionContext, value: SSAValue, shape: Sequence[int]) -> SSAValue:
    if len(shape) == 3:
        return reshape(ctx, value, [shape[0], shape[1], 1, shape[2]])
    return value


@converter("QLinearConv")
def convert_qlinear_conv(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """`nn.conv2d` on quantized data and filter (per output channel), i32 bias."""
    x_name, w_name = node.input[0], node.input[3]
    shape, props = _conv_geometry(ctx, node, x_name, w_name)
    w_array = ctx.const(w_name)
    if w_array is None:
        raise Unsupported("a filter only known at run time")
    w_type = _qtype(ctx, node.input[4], node.input[5], w_array.dtype, axis=0)
    y_type = _qtype(ctx, node.input[6], node.input[7], ctx.dtype(x_name))
    x = _quantized_input(ctx, x_name, node.input[1], node.input[2])
    w_array = _filter_4d(w_array)
    weights = ctx.result(nn.ConstantOp.from_array(w_array, TensorType(w_type, w_array.shape)))
    bias_name = ctx.input(node, 8)
    bias = None
    if ctx.has(bias_name):
        bias_array = ctx.const(bias_name)
        if bias_array is None:
            raise Unsupported("a bias only known at run time")
        bias = ctx.constant(np.asarray(bias_array, np.int32).reshape(-1))

    def build(data: SSAValue, result: UniformQuantizedType) -> SSAValue:
        data = _data_4d(ctx, data, shape)
        op = nn.Conv2DOp.make(data, weights, bias, result_elements=result, **props)
        return restore_rank(ctx, _qresult(ctx, op), len(shape))

    return [_product(ctx, x, _is_unsigned(w_type), y_type, build)]


def _centered_i32(ctx: ConversionContext, name: str, zp_name: str) -> SSAValue | np.ndarray:
    """An integer input widened to i32 with its zero point subtracted (folded for constants)."""
    zp_const = ctx.const(zp_name) if ctx.has(zp_name) else np.zeros((), np.int32)
    array = ctx.const(name)
    if array is not None and zp_const is not None:
        zp = np.asarray(zp_const, np.int32)
        if zp.ndim == 1 and array.ndim == 2 and zp.size == array.shape[1] > 1:
            zp = zp.reshape(1, -1)  # MatMulInteger: per column of B
        elif zp.ndim == 1 and zp.size > 1 and array.ndim >= 2:
            zp = zp.reshape(-1, *[1] * (array.ndim - 1))  # ConvInteger: per output channel
        return array.astype(np.int32) - zp
    value = ctx.value(name)
    if ctx.dtype(name) != np.int32:
        value = ctx.result(nn.CastOp.make(value, result_elements=i32))
    if ctx.has(zp_name):
        zp_shape = ctx.shape(zp_name)
        if any(d != 1 for d in zp_shape):
            raise Unsupported("a per-row zero point of the left operand")
        zp = ctx.value(zp_name)
        if ctx.dtype(zp_name) != np.int32:
            zp = ctx.result(nn.CastOp.make(zp, result_elements=i32))
        value = ctx.result(nn.SubOp.make(value, zp))
    return value


@converter("ConvInteger")
def convert_conv_integer(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """``conv(x - x_zp, w - w_zp)`` into i32 (`nn.conv2d` on i32 operands)."""
    x_name, w_name = node.input[0], node.input[1]
    shape, props = _conv_geometry(ctx, node, x_name, w_name)
    w = _centered_i32(ctx, w_name, ctx.input(node, 3))
    if not isinstance(w, np.ndarray):
        raise Unsupported("a filter only known at run time")
    x = _centered_i32(ctx, x_name, ctx.input(node, 2))
    x = _data_4d(ctx, ctx.constant(x) if isinstance(x, np.ndarray) else x, shape)
    op = nn.Conv2DOp.make(x, ctx.constant(_filter_4d(w)), None, result_elements=i32, **props)
    return [restore_rank(ctx, ctx.result(op), len(shape))]


# ---- Matrix products ---------------------------------------------------------------------------


def _matmul(
    ctx: ConversionContext,
    a: SSAValue,
    b: SSAValue | np.ndarray,
    b_qtype: object,
    result: Attribute | None,
) -> SSAValue:
    """``a @ b``: `nn.fully_connected` with `[N, K]` weights when `b` is a constant matrix,
    else `nn.batch_matmul`."""
    if isinstance(b, np.ndarray):
        weights = np.ascontiguousarray(b.T)
        if isinstance(b_qtype, UniformQuantizedType):
            w_type = b_qtype
            if b_qtype.axis is not None:
                w_type = UniformQuantizedType.per_axis(
                    b_qtype.storage_type,
                    f32,
                    0,
                    list(b_qtype.scale_values),
                    list(b_qtype.zero_point_values),
                )
            w = ctx.result(nn.ConstantOp.from_array(weights, TensorType(w_type, weights.shape)))
        else:
            w = ctx.constant(weights)
        return _qresult(ctx, nn.FullyConnectedOp.make(a, w, None, result_elements=result))
    return _qresult(ctx, nn.BatchMatmulOp.make(a, b, result_elements=result))


@converter("QLinearMatMul")
def convert_qlinear_matmul(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    a_name, b_name = node.input[0], node.input[3]
    if len(ctx.shape(a_name)) < 2 or len(ctx.shape(b_name)) < 2:
        raise Unsupported("a 1-D operand")
    b_array = ctx.const(b_name)
    y_type = _qtype(ctx, node.input[6], node.input[7], ctx.dtype(a_name))
    a = _quantized_input(ctx, a_name, node.input[1], node.input[2])
    if b_array is not None and b_array.ndim == 2:
        b_type = _qtype(ctx, node.input[4], node.input[5], b_array.dtype, axis=1)

        def build(data: SSAValue, result: UniformQuantizedType) -> SSAValue:
            return _matmul(ctx, data, b_array, b_type, result)

        return [_product(ctx, a, _is_unsigned(b_type), y_type, build)]
    b = _quantized_input(ctx, b_name, node.input[4], node.input[5])
    b_type = _type_of(b).element_type
    assert isinstance(b_type, UniformQuantizedType)

    def build_batched(data: SSAValue, result: UniformQuantizedType) -> SSAValue:
        rhs = _to_storage_of(ctx, b, _is_unsigned(b_type))
        return _qresult(ctx, nn.BatchMatmulOp.make(data, rhs, result_elements=result))

    return [_product(ctx, a, _is_unsigned(b_type), y_type, build_batched)]


@converter("MatMulInteger")
def convert_matmul_integer(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """``(a - a_zp) @ (b - b_zp)`` into i32."""
    a_name, b_name = node.input[0], node.input[1]
    if len(ctx.shape(a_name)) < 2 or len(ctx.shape(b_name)) < 2:
        raise Unsupported("a 1-D operand")
    b = _centered_i32(ctx, b_name, ctx.input(node, 3))
    a = _centered_i32(ctx, a_name, ctx.input(node, 2))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return [np.matmul(a, b)]
    a = ctx.constant(a) if isinstance(a, np.ndarray) else a
    if isinstance(b, np.ndarray) and b.ndim != 2:
        b = ctx.constant(b)
    return [_matmul(ctx, a, b, None, i32)]


@converter("com.microsoft.QGemm")
def convert_qgemm(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """``alpha * A' B' + C``: quantized `nn.fully_connected` (a float result without y_scale)."""
    attrs = ctx.attrs(node)
    alpha = float(attrs.get("alpha", 1.0))
    if int(attrs.get("transA", 0)):
        raise Unsupported("transA")
    a_name, b_name = node.input[0], node.input[3]
    b_array = ctx.const(b_name)
    if b_array is None or b_array.ndim != 2:
        raise Unsupported("B only known at run time")
    weights = b_array if int(attrs.get("transB", 0)) else b_array.T
    weights = np.ascontiguousarray(weights)
    w_type = _qtype(ctx, node.input[4], node.input[5], b_array.dtype, axis=0)
    if alpha != 1.0:
        scales = [s * alpha for s in w_type.scale_values]
        w_type = (
            UniformQuantizedType.per_tensor(
                w_type.storage_type, f32, scales[0], w_type.zero_point_values[0]
            )
            if w_type.axis is None
            else UniformQuantizedType.per_axis(
                w_type.storage_type, f32, 0, scales, list(w_type.zero_point_values)
            )
        )
    float_result = not ctx.has(ctx.input(node, 7))
    a = _quantized_input(ctx, a_name, node.input[1], node.input[2])
    w = ctx.result(nn.ConstantOp.from_array(weights, TensorType(w_type, weights.shape)))
    bias = None
    c_name = ctx.input(node, 6)
    if ctx.has(c_name):
        c = ctx.const(c_name)
        if c is None or c.size not in (1, weights.shape[0]):
            raise Unsupported("C that is not a constant row")
        bias = ctx.constant(
            np.broadcast_to(np.asarray(c, np.int32).reshape(-1), (weights.shape[0],)).copy()
        )
    if float_result:
        return [_float_gemm(ctx, a, w, bias, ctx.const(node.input[1]), w_type)]

    def build(data: SSAValue, result: UniformQuantizedType) -> SSAValue:
        return _qresult(ctx, nn.FullyConnectedOp.make(data, w, bias, result_elements=result))

    y_type = _qtype(ctx, node.input[7], ctx.input(node, 8), ctx.dtype(a_name))
    return [_product(ctx, a, _is_unsigned(w_type), y_type, build)]


def _float_gemm(
    ctx: ConversionContext,
    a: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    a_scale: np.ndarray | None,
    w_type: UniformQuantizedType,
) -> SSAValue:
    """QGemm without y_scale: the i32 accumulator scaled to float (``* a_scale * b_scale``)."""
    a_type = _type_of(a).element_type
    assert isinstance(a_type, UniformQuantizedType)
    assert a_scale is not None
    data = ctx.result(SCastOp(a, TensorType(a_type.storage_type, _type_of(a).get_shape())))
    data = ctx.result(nn.CastOp.make(data, result_elements=i32))
    data = ctx.result(nn.SubOp.make(data, ctx.constant(np.int32(a_type.zero_point_values[0]))))
    w_owner = w.owner
    assert isinstance(w_owner, nn.ConstantOp)
    stored = w_owner.to_array().astype(np.int32)
    zps = np.asarray(w_type.zero_point_values, np.int32).reshape(-1, 1)
    weights = ctx.constant(stored - zps)
    acc = ctx.result(nn.FullyConnectedOp.make(data, weights, bias, result_elements=i32))
    real = ctx.result(nn.CastOp.make(acc, result_elements=f32))
    scale = np.float32(a_scale.reshape(-1)[0]) * np.asarray(w_type.scale_values, np.float32)
    return ctx.result(nn.MulOp.make(real, ctx.constant(scale.astype(np.float32))))


# ---- Elementwise, activations, pools, concat, softmax ------------------------------------------


@converter("com.microsoft.QLinearAdd", "com.microsoft.QLinearMul")
def convert_qlinear_binary(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    a = _quantized_input(ctx, node.input[0], node.input[1], ctx.input(node, 2))
    b = _quantized_input(ctx, node.input[3], node.input[4], ctx.input(node, 5))
    y_type = _qtype(ctx, node.input[6], ctx.input(node, 7), ctx.dtype(node.input[0]))
    a = _to_storage_of(ctx, a, _is_unsigned(y_type))
    b = _to_storage_of(ctx, b, _is_unsigned(y_type))
    op_class = nn.AddOp if node.op_type == "QLinearAdd" else nn.MulOp
    return [_qresult(ctx, op_class.make(a, b, result_elements=y_type))]


def _unary_types(
    ctx: ConversionContext, node: onnx.NodeProto
) -> tuple[SSAValue, UniformQuantizedType]:
    x = _quantized_input(ctx, node.input[0], node.input[1], ctx.input(node, 2))
    y_type = _qtype(ctx, node.input[3], ctx.input(node, 4), ctx.dtype(node.input[0]))
    return x, y_type


@converter("com.microsoft.QLinearSigmoid", "com.microsoft.QLinearLeakyRelu")
def convert_qlinear_activation(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    x, y_type = _unary_types(ctx, node)
    if node.op_type == "QLinearSigmoid":
        return [ctx.result(nn.SigmoidOp.make(x, result_elements=y_type))]
    alpha = float(ctx.attrs(node).get("alpha", 0.01))
    return [_qresult(ctx, nn.LeakyReluOp.make(x, alpha=alpha, result_elements=y_type))]


@converter("com.microsoft.QLinearGlobalAveragePool")
def convert_qlinear_global_pool(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    x, y_type = _unary_types(ctx, node)
    rank = len(ctx.shape(node.input[0]))
    channels_last = bool(ctx.attrs(node).get("channels_last", 0))
    axes = list(range(1, rank - 1)) if channels_last else list(range(2, rank))
    op = nn.ReduceOp.make(x, kind="mean", axes=axes, keepdims=True, result_elements=y_type)
    return [_qresult(ctx, op)]


@converter("com.microsoft.QLinearAveragePool")
def convert_qlinear_average_pool(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """The float AveragePool conversion on the quantized input, with the result retyped."""
    attrs = ctx.attrs(node)
    if int(attrs.get("channels_last", 0)):
        raise Unsupported("channels_last")
    x, y_type = _unary_types(ctx, node)
    temp = f"{node.output[0]}::quantized_input"
    ctx.define(temp, x)
    pool = onnx.NodeProto()
    pool.CopyFrom(node)
    pool.op_type, pool.domain = "AveragePool", ""
    del pool.input[:]
    pool.input.append(temp)
    del pool.attribute[:]
    pool.attribute.extend(a for a in node.attribute if a.name != "channels_last")
    (y,) = convert_pool(ctx, pool)
    assert isinstance(y, SSAValue)
    if not isinstance(y.owner, nn.AvgPool2DOp):
        raise Unsupported("a 1-D pool")
    return [_retyped(ctx, y, y_type)]


@converter("com.microsoft.QLinearConcat")
def convert_qlinear_concat(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Inputs: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input."""
    if (len(node.input) - 2) % 3 or len(node.input) < 5:
        raise ctx.error(node, f"expects 2 + 3 * n inputs, got {len(node.input)}")
    first = node.input[2]
    y_type = _qtype(ctx, node.input[0], node.input[1], ctx.dtype(first))
    inputs = []
    for i in range(2, len(node.input), 3):
        x = _quantized_input(ctx, node.input[i], node.input[i + 1], node.input[i + 2])
        inputs.append(_to_storage_of(ctx, x, _is_unsigned(y_type)))
    rank = len(ctx.shape(first))
    axis = normalize_axis(int(ctx.attrs(node)["axis"]), rank)
    return [_qresult(ctx, nn.ConcatOp.make(inputs, axis=axis, result_elements=y_type))]


@converter("com.microsoft.QLinearSoftmax")
def convert_qlinear_softmax(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    attrs = ctx.attrs(node)
    x, y_type = _unary_types(ctx, node)
    rank = len(ctx.shape(node.input[0]))
    axis = normalize_axis(int(attrs.get("axis", -1)), rank)
    if int(attrs.get("opset", 13)) < 13 and axis != rank - 1:
        raise Unsupported("softmax over flattened trailing axes (opset < 13)")
    low = y_type.storage_range[0]
    if abs(y_type.scale_values[0] * 256 - 1) <= 1e-3 and y_type.zero_point_values[0] == low:
        return [ctx.result(nn.SoftmaxOp.make(x, axis=axis, result_elements=y_type))]
    # Other output parameters than TFLite's integer softmax takes (onnxruntime writes
    # 1/255): dequantize, softmax in float, quantize (onnxruntime's own definition).
    real = ctx.result(DCastOp(x))
    y = ctx.result(nn.SoftmaxOp.make(real, axis=axis))
    result = TensorType(y_type, _type_of(y).get_shape())
    return [ctx.result(QCastOp(y, result, rounding="half_to_even"))]


# ---- DynamicQuantizeLinear ---------------------------------------------------------------------


def _round_half_even_i32(ctx: ConversionContext, x: SSAValue) -> SSAValue:
    """Round a float tensor half to even into i32 (a `quant.qcast` of unit scale)."""
    shape = _type_of(x).get_shape()
    unit = UniformQuantizedType.per_tensor(IntegerType(32), f32, 1.0, 0)
    q = ctx.result(QCastOp(x, TensorType(unit, shape), rounding="half_to_even"))
    return ctx.result(SCastOp(q, TensorType(i32, shape)))


def _saturate_u8(ctx: ConversionContext, x: SSAValue) -> SSAValue:
    """i32 -> u8, saturating: a `quant.rescale` by exactly 1 clamps to the result's range."""
    result = TensorType(element_for_dtype(np.uint8), _type_of(x).get_shape())
    return ctx.result(RescaleOp(x, result, [_UNIT_MULTIPLIER], [_UNIT_SHIFT]))


@converter("DynamicQuantizeLinear")
def convert_dynamic_quantize(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """y = saturate(round(x / s) + zp) with s = (max(x, 0) - min(x, 0)) / 255 and
    zp = saturate(round(-min(x, 0) / s)), all rounding half to even (the ONNX definition)."""
    name = node.input[0]
    if not isinstance(ctx.element(name), Float32Type):
        raise Unsupported(f"DynamicQuantizeLinear of a {ctx.dtype(name)} tensor")
    x_const = ctx.const(name)
    if x_const is not None:
        return list(_dynamic_quantize_array(x_const))
    x = ctx.value(name)
    rank = len(ctx.shape(name))
    zero = ctx.constant(np.float32(0))
    axes = list(range(rank))
    low = ctx.result(nn.ReduceOp.make(x, kind="min", axes=axes, keepdims=False))
    high = ctx.result(nn.ReduceOp.make(x, kind="max", axes=axes, keepdims=False))
    low = ctx.result(nn.MinimumOp.make(low, zero))
    high = ctx.result(nn.MaximumOp.make(high, zero))
    span = ctx.result(nn.SubOp.make(high, low))
    scale = ctx.result(nn.DivOp.make(span, ctx.constant(np.float32(255))))
    zp_real = ctx.result(nn.DivOp.make(ctx.result(nn.NegOp.make(low)), scale))
    zp = _saturate_u8(ctx, _round_half_even_i32(ctx, zp_real))
    zp_i32 = ctx.result(nn.CastOp.make(zp, result_elements=i32))
    stored = _round_half_even_i32(ctx, ctx.result(nn.DivOp.make(x, scale)))
    y = _saturate_u8(ctx, ctx.result(nn.AddOp.make(stored, zp_i32)))
    return [y, scale, zp]


def _dynamic_quantize_array(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    low = min(float(x.min()), 0.0) if x.size else 0.0
    high = max(float(x.max()), 0.0) if x.size else 0.0
    scale = np.float32((np.float32(high) - np.float32(low)) / np.float32(255))
    zp = np.uint8(np.clip(np.rint(-np.float32(low) / scale), 0, 255))
    y = np.clip(np.rint(x / scale) + float(zp), 0, 255).astype(np.uint8)
    return y, np.asarray(scale, np.float32), np.asarray(zp, np.uint8)
