"""ONNX converters for recurrent layers, `If`, comparisons and logic, `Expand`,
layer and instance normalisation, and QDQ quantization.

Every converter folds in numpy when all its inputs are compile-time constants
(so shape arithmetic such as ``Where(Equal(shape, 0), ...)`` disappears) and otherwise emits
`nn` / `quant` ops:

* LSTM and GRU are unrolled over their static sequence length: one `nn.fully_connected`
  projects the whole input sequence (input weights and the biases that simply add), then each
  step multiplies the hidden state by the recurrent weights and applies the gates with
  elementwise `nn` ops. Directions forward, reverse and bidirectional, `layout` 0 and 1,
  `initial_h` / `initial_c`, `B`, peepholes `P`, `clip`, `input_forget` and GRU's
  `linear_before_reset` are supported; `sequence_lens` only when it is absent or equal to the
  sequence length everywhere, and only the default activations.
* `If` with a condition known at import inlines the taken branch.
* LayerNormalization and InstanceNormalization are decomposed into ``nn.reduce mean``,
  `nn.sub`, `nn.mul`, `nn.add` and `nn.rsqrt`.
* QuantizeLinear / DequantizeLinear (per tensor or per axis, constant scales and zero points)
  become `quant.qcast` (rounding half to even) / `quant.dcast` with `!quant.uniform` types;
  a DequantizeLinear of a constant becomes a quantized `nn.constant` and a `quant.dcast`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import AnyFloat, IntegerType, Signedness, TensorType, i1
from xdsl.ir import Attribute, SSAValue

from irc.dialects import nn
from irc.dialects.quant import DCastOp, QCastOp, SCastOp, UniformQuantizedType
from irc.importers.onnx.dtypes import dtype_for_element, element_for_dtype
from irc.importers.onnx.registry import ConversionContext, Results, converter

Val = SSAValue | np.ndarray
"""A tensor during conversion: a run-time value or a compile-time constant."""


# ---- Small builders that fold constants --------------------------------------------------------


def _value(ctx: ConversionContext, x: Val) -> SSAValue:
    return x if isinstance(x, SSAValue) else ctx.constant(x)


def _shape(x: Val) -> tuple[int, ...]:
    if isinstance(x, np.ndarray):
        return tuple(x.shape)
    return tuple(_type_of(x).get_shape())


def _type_of(x: SSAValue) -> TensorType:
    type_ = x.type
    assert isinstance(type_, TensorType), "importers only make tensors"
    return type_


def _input(ctx: ConversionContext, node: onnx.NodeProto, index: int) -> Val | None:
    """Input `index` of `node` as a constant when known at import, else its value."""
    name = ctx.input(node, index)
    if not ctx.has(name):
        return None
    const = ctx.const(name)
    return const if const is not None else ctx.value(name)


def _required(ctx: ConversionContext, node: onnx.NodeProto, index: int) -> Val:
    """Input `index` of `node`, which the operator requires."""
    value = _input(ctx, node, index)
    if value is None:
        raise ctx.error(node, f"input {index} is required")
    return value


def _slice(ctx: ConversionContext, x: Val, axis: int, start: int, stop: int) -> Val:
    """``x[..., start:stop, ...]`` along `axis`."""
    shape = _shape(x)
    if start == 0 and stop == shape[axis]:
        return x
    if isinstance(x, np.ndarray):
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, stop)
        return np.ascontiguousarray(x[tuple(index)])
    begin = [start if d == axis else 0 for d in range(len(shape))]
    end = [stop if d == axis else size for d, size in enumerate(shape)]
    return ctx.result(nn.SliceOp.make(x, begin=begin, end=end, strides=[1] * len(shape)))


def _reshape(ctx: ConversionContext, x: Val, shape: Sequence[int]) -> Val:
    if _shape(x) == tuple(shape):
        return x
    if isinstance(x, np.ndarray):
        return x.reshape(shape)
    return ctx.result(nn.ReshapeOp.make(x, shape=list(shape)))


def _take(ctx: ConversionContext, x: Val, axis: int, index: int) -> Val:
    """``x[..., index, ...]``: the slice at `index` of `axis`, without that axis."""
    part = _slice(ctx, x, axis, index, index + 1)
    shape = _shape(part)
    return _reshape(ctx, part, shape[:axis] + shape[axis + 1 :])


def _concat(ctx: ConversionContext, parts: Sequence[Val], axis: int) -> Val:
    if len(parts) == 1:
        return parts[0]
    arrays = [p for p in parts if isinstance(p, np.ndarray)]
    if len(arrays) == len(parts):
        return np.concatenate(arrays, axis=axis)
    return ctx.result(nn.ConcatOp.make([_value(ctx, p) for p in parts], axis=axis))


def _binary(
    ctx: ConversionContext, op: type[nn.NNOp], fold: Callable[..., np.ndarray], a: Val, b: Val
) -> Val:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.asarray(fold(a, b)).astype(np.result_type(a, b), copy=False)
    return ctx.result(op.make(_value(ctx, a), _value(ctx, b)))


def _add(ctx: ConversionContext, a: Val, b: Val) -> Val:
    return _binary(ctx, nn.AddOp, np.add, a, b)


def _sub(ctx: ConversionContext, a: Val, b: Val) -> Val:
    return _binary(ctx, nn.SubOp, np.subtract, a, b)


def _mul(ctx: ConversionContext, a: Val, b: Val) -> Val:
    return _binary(ctx, nn.MulOp, np.multiply, a, b)


def _unary(ctx: ConversionContext, op: type[nn.NNOp], x: Val, **props: Any) -> SSAValue:
    return ctx.result(op.make(_value(ctx, x), **props))


def _split(ctx: ConversionContext, x: Val, axis: int, sizes: Sequence[int]) -> list[Val]:
    if len(sizes) == 1:
        return [x]
    if isinstance(x, np.ndarray):
        return list(np.split(x, np.cumsum(sizes)[:-1], axis=axis))
    return list(ctx.emit(nn.SplitOp.make(x, axis=axis, sizes=list(sizes))).results)


def _fully_connected(
    ctx: ConversionContext, x: Val, weights: Val, bias: Val | None = None
) -> SSAValue:
    operands = [_value(ctx, x), _value(ctx, weights), None if bias is None else _value(ctx, bias)]
    return ctx.result(nn.FullyConnectedOp.make(*operands))


# ---- Comparison and logic ----------------------------------------------------------------------

_COMPARISONS: dict[str, tuple[str, Callable[..., np.ndarray]]] = {
    "Equal": ("eq", np.equal),
    "Less": ("lt", np.less),
    "LessOrEqual": ("le", np.less_equal),
    "Greater": ("gt", np.greater),
    "GreaterOrEqual": ("ge", np.greater_equal),
}


@converter(*_COMPARISONS)
def convert_compare(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    kind, fold = _COMPARISONS[node.op_type]
    a, b = _required(ctx, node, 0), _required(ctx, node, 1)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return [np.asarray(fold(a, b))]
    lhs, rhs = _value(ctx, a), _value(ctx, b)
    return [ctx.result(nn.CompareOp.make(lhs, rhs, kind=kind, result_elements=i1))]


_LOGICAL: dict[str, tuple[type[nn.NNOp], Callable[..., np.ndarray]]] = {
    "And": (nn.LogicalAndOp, np.logical_and),
    "Or": (nn.LogicalOrOp, np.logical_or),
    "Xor": (nn.LogicalXorOp, np.logical_xor),
}


@converter(*_LOGICAL)
def convert_logical(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    op, fold = _LOGICAL[node.op_type]
    a, b = _required(ctx, node, 0), _required(ctx, node, 1)
    return [_binary(ctx, op, fold, a, b)]


@converter("Not")
def convert_not(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    x = _required(ctx, node, 0)
    if isinstance(x, np.ndarray):
        return [np.logical_not(x)]
    return [_unary(ctx, nn.LogicalNotOp, x)]


@converter("Where")
def convert_where(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    condition, on_true, on_false = (_required(ctx, node, i) for i in range(3))
    if (
        isinstance(condition, np.ndarray)
        and isinstance(on_true, np.ndarray)
        and isinstance(on_false, np.ndarray)
    ):
        return [np.where(condition, on_true, on_false)]
    element = ctx.element(node.input[1])
    operands = [_value(ctx, v) for v in (condition, on_true, on_false)]
    return [ctx.result(nn.SelectOp.make(*operands, result_elements=element))]


# ---- Expand -----------------------------------------------------------------------------------


@converter("Expand")
def convert_expand(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    shape = ctx.const(node.input[1])
    if shape is None:
        return ctx.unsupported(node, "Expand with a shape only known at run time")
    x = _required(ctx, node, 0)
    source = _shape(x)
    if any(d < 0 for d in source):
        return ctx.unsupported(node, "Expand of a tensor with dynamic dimensions")
    try:
        target = tuple(int(d) for d in np.broadcast_shapes(source, tuple(int(d) for d in shape)))
    except ValueError:
        raise ctx.error(
            node, f"cannot broadcast shape {list(source)} to {[int(d) for d in shape]}"
        ) from None
    if isinstance(x, np.ndarray):
        ctx.check_size(target, x.dtype)
        return [np.array(np.broadcast_to(x, target))]
    if target == source:
        return [x]
    element = _type_of(x).element_type
    if isinstance(element, UniformQuantizedType) and (axis := element.axis) is not None:
        element = element.with_axis(axis + len(target) - len(source))  # moves with the data
    return [ctx.result(nn.BroadcastToOp.make(x, shape=list(target), result_elements=element))]


# ---- If with a constant condition --------------------------------------------------------------


@converter("If")
def convert_if(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    condition = ctx.const(node.input[0])
    if condition is None:
        return ctx.unsupported(node, "If with a condition only known at run time")
    if condition.size != 1:
        raise ctx.error(
            node, f"expects a single-element condition, got shape {list(condition.shape)}"
        )
    attrs = ctx.attrs(node)
    key = "then_branch" if bool(condition.reshape(-1)[0]) else "else_branch"
    branch = attrs.get(key)
    if not isinstance(branch, onnx.GraphProto):
        raise ctx.error(node, f"has no {key}")
    if len(branch.output) != len(node.output):
        raise ctx.error(
            node,
            f"{key} has {len(branch.output)} outputs but the node has {len(node.output)}",
        )
    if branch.sparse_initializer:
        return ctx.unsupported(node, "sparse initializers in a branch")
    for tensor in branch.initializer:
        ctx.define(tensor.name, numpy_helper.to_array(tensor))
    ctx.convert_nodes(branch.node)
    results: list[Val | None] = []
    for output in branch.output:
        name = output.name
        if name in ctx.absent or not ctx.is_defined(name):
            results.append(None)
        elif (const := ctx.const(name)) is not None:
            results.append(const)
        else:
            results.append(ctx.value(name))
    return results


# ---- Normalisation -----------------------------------------------------------------------------


def _normalize(
    ctx: ConversionContext, x: SSAValue, axes: list[int], epsilon: float
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """``(x - mean) * rsqrt(var + eps)`` over `axes`, with the mean and the inverse deviation."""
    dtype = _dtype_of(x)
    mean = _unary(ctx, nn.ReduceOp, x, kind="mean", axes=axes, keepdims=True)
    centered = _sub(ctx, x, mean)
    assert isinstance(centered, SSAValue)
    variance = _unary(
        ctx, nn.ReduceOp, _mul(ctx, centered, centered), kind="mean", axes=axes, keepdims=True
    )
    shifted = _add(ctx, variance, np.array(epsilon, dtype))
    inverse = _unary(ctx, nn.RsqrtOp, shifted)
    normalized = _mul(ctx, centered, inverse)
    assert isinstance(normalized, SSAValue)
    return normalized, mean, inverse


def _dtype_of(x: SSAValue) -> np.dtype:
    return dtype_for_element(_type_of(x).element_type)


def _float_input(ctx: ConversionContext, node: onnx.NodeProto, index: int) -> SSAValue | None:
    """A float input as an SSA value; None (after recording the node) when it is not float."""
    name = ctx.input(node, index)
    if ctx.dtype(name).kind != "f":
        ctx.unsupported(node, f"{node.op_type} of a {ctx.dtype(name)} tensor")
        return None
    return ctx.value(name)


@converter("LayerNormalization")
def convert_layer_norm(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    x = _float_input(ctx, node, 0)
    if x is None:
        return [None] * len(node.output)
    attrs = ctx.attrs(node)
    rank = len(_shape(x))
    axis = int(attrs.get("axis", -1))
    if not -rank <= axis < rank:
        raise ctx.error(node, f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    y, mean, inverse = _normalize(
        ctx, x, list(range(axis, rank)), float(attrs.get("epsilon", 1e-5))
    )
    scale, bias = _input(ctx, node, 1), _input(ctx, node, 2)
    out: Val = y
    if scale is not None:
        out = _mul(ctx, out, scale)
    if bias is not None:
        out = _add(ctx, out, bias)
    outputs = [out, mean, inverse][: len(node.output)]
    return [v if i == 0 or ctx.is_used(node.output[i]) else None for i, v in enumerate(outputs)]


@converter("InstanceNormalization")
def convert_instance_norm(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    x = _float_input(ctx, node, 0)
    if x is None:
        return [None]
    shape = _shape(x)
    if len(shape) < 3:
        raise ctx.error(
            node, f"expects an input of rank >= 3 (N, C, D1, ...), got rank {len(shape)}"
        )
    epsilon = float(ctx.attrs(node).get("epsilon", 1e-5))
    y, _, _ = _normalize(ctx, x, list(range(2, len(shape))), epsilon)
    per_channel = [shape[1]] + [1] * (len(shape) - 2)
    scale, bias = _required(ctx, node, 1), _required(ctx, node, 2)
    out = _mul(ctx, y, _reshape(ctx, scale, per_channel))
    return [_add(ctx, out, _reshape(ctx, bias, per_channel))]


# ---- QuantizeLinear / DequantizeLinear ---------------------------------------------------------

_STORAGE: dict[np.dtype, IntegerType] = {
    np.dtype(np.int8): IntegerType(8),
    np.dtype(np.uint8): IntegerType(8, Signedness.UNSIGNED),
    np.dtype(np.int16): IntegerType(16),
    np.dtype(np.int32): IntegerType(32),
}
"""Storage types of quantized ONNX tensors irc imports (int32 for DequantizeLinear only)."""


def _quantized_type(
    ctx: ConversionContext,
    node: onnx.NodeProto,
    storage: np.dtype,
    expressed: Attribute,
    shape: Sequence[int],
) -> UniformQuantizedType | str:
    """The `!quant.uniform` type a Q/DQ node describes, or the reason it cannot be imported."""
    if not isinstance(expressed, AnyFloat):
        raise ctx.error(node, f"the scale must be a float tensor, got {expressed}")
    attrs = ctx.attrs(node)
    if int(attrs.get("block_size", 0)):
        return "blocked quantization (block_size)"
    scale = ctx.const(ctx.input(node, 1))
    if scale is None:
        return f"{node.op_type} with a scale only known at run time"
    zp_name = ctx.input(node, 2)
    zero_point = ctx.const(zp_name) if ctx.has(zp_name) else np.zeros(scale.shape, storage)
    if zero_point is None:
        return f"{node.op_type} with a zero point only known at run time"
    storage = np.dtype(storage)
    allowed = "int8, uint8 and int16"
    if node.op_type == "DequantizeLinear":
        allowed = "int8, uint8, int16 and int32"
    if storage not in _STORAGE or (node.op_type == "QuantizeLinear" and storage == np.int32):
        return f"{node.op_type} with {storage} storage (irc imports {allowed})"
    if scale.ndim > 1:
        return "blocked quantization (a scale of rank > 1)"
    if zero_point.shape != scale.shape and not zero_point.size == scale.size == 1:
        # A one-element scale with a scalar zero point (onnxruntime's quantizer writes
        # such pairs and onnxruntime runs them) is per tensor; other mismatches are errors.
        raise ctx.error(
            node,
            f"zero point of shape {list(zero_point.shape)} does not match the scale's "
            f"{list(scale.shape)}",
        )
    scales = [float(s) for s in scale.reshape(-1)]
    if not all(np.isfinite(s) and s > 0 for s in scales):
        return "a scale that is not positive and finite"
    zero_points = [int(z) for z in zero_point.reshape(-1)]
    if scale.ndim == 0 or scale.size == 1:
        return UniformQuantizedType.per_tensor(
            _STORAGE[storage],
            expressed,
            scales[0],
            zero_points[0],
        )
    axis = int(attrs.get("axis", 1))
    if not -len(shape) <= axis < len(shape):
        raise ctx.error(node, f"axis {axis} is out of range for rank {len(shape)}")
    axis %= len(shape)
    if shape[axis] >= 0 and shape[axis] != len(scales):
        raise ctx.error(
            node, f"has {len(scales)} scales for dimension {axis} of size {shape[axis]}"
        )
    return UniformQuantizedType.per_axis(
        _STORAGE[storage],
        expressed,
        axis,
        scales,
        zero_points,
    )


def _per_axis_shape(qtype: UniformQuantizedType, rank: int) -> list[int]:
    """A shape that broadcasts per-axis parameters along the quantized dimension."""
    shape = [1] * rank
    if qtype.axis is not None:
        shape[qtype.axis] = len(qtype.scale_values)
    return shape


def _quantize_array(x: np.ndarray, qtype: UniformQuantizedType, storage: np.dtype) -> np.ndarray:
    """ONNX QuantizeLinear in numpy: ``saturate(round_half_even(x / scale) + zero_point)``."""
    shape = _per_axis_shape(qtype, x.ndim)
    scale = np.array(qtype.scale_values, x.dtype).reshape(shape)
    zero_point = np.array(qtype.zero_point_values, np.float64).reshape(shape)
    info = np.iinfo(storage)
    stored = np.rint(x / scale).astype(np.float64) + zero_point
    return np.clip(stored, info.min, info.max).astype(storage)


@converter("QuantizeLinear")
def convert_quantize(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    x_name = node.input[0]
    if ctx.dtype(x_name).kind != "f":
        return ctx.unsupported(node, f"QuantizeLinear of a {ctx.dtype(x_name)} tensor")
    zp_name = ctx.input(node, 2)
    attrs = ctx.attrs(node)
    if ctx.has(zp_name):
        storage = ctx.dtype(zp_name)
    elif "output_dtype" in attrs and int(attrs["output_dtype"]):
        storage = onnx.helper.tensor_dtype_to_np_dtype(int(attrs["output_dtype"]))
    else:
        storage = np.dtype(np.uint8)
    shape = ctx.shape(x_name)
    qtype = _quantized_type(ctx, node, storage, ctx.element(x_name), shape)
    if isinstance(qtype, str):
        return ctx.unsupported(node, qtype)
    x = ctx.const(x_name)
    if x is not None:
        return [_quantize_array(x, qtype, np.dtype(storage))]
    result_type = TensorType(qtype, _type_of(ctx.value(x_name)).get_shape())
    return [ctx.result(QCastOp(ctx.value(x_name), result_type, rounding="half_to_even"))]


@converter("DequantizeLinear")
def convert_dequantize(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    x_name, scale_name = node.input[0], node.input[1]
    scale = ctx.const(scale_name)
    if scale is None:
        return ctx.unsupported(node, "DequantizeLinear with a scale only known at run time")
    expressed = element_for_dtype(scale.dtype)
    qtype = _quantized_type(ctx, node, ctx.dtype(x_name), expressed, ctx.shape(x_name))
    if isinstance(qtype, str):
        return ctx.unsupported(node, qtype)
    x = ctx.const(x_name)
    if x is not None:
        quantized = ctx.result(nn.ConstantOp.from_array(x, TensorType(qtype, x.shape)))
        return [ctx.result(DCastOp(quantized))]
    value = ctx.value(x_name)
    type_ = _type_of(value)
    if type_.element_type != qtype:
        if isinstance(type_.element_type, UniformQuantizedType):
            # The same stored integers, read with the parameters of this node.
            storage_type = TensorType(type_.element_type.storage_type, type_.get_shape())
            value = ctx.result(SCastOp(value, storage_type))
        value = ctx.result(SCastOp(value, TensorType(qtype, type_.get_shape())))
    return [ctx.result(DCastOp(value))]


# ---- LSTM and GRU ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Recurrence:
    """What LSTM and GRU share: attributes, sizes and the per-direction weights."""

    directions: tuple[bool, ...]
    """Per direction, whether it walks the sequence backwards."""
    hidden: int
    seq: int
    batch: int
    layout: int
    clip: float | None
    x: SSAValue
    w: Val
    r: Val
    b: Val | None
    initial_h: Val | None

    @property
    def time_axis(self) -> int:
        return self.layout

    def state_slice(self, ctx: ConversionContext, state: Val, d: int) -> Val:
        """Direction `d` of an ONNX state tensor (``[D, B, H]``, or ``[B, D, H]`` in layout 1)."""
        return _take(ctx, state, 1 if self.layout else 0, d)


_DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}


def _parse_recurrence(
    ctx: ConversionContext, node: onnx.NodeProto, gates: int, default_activations: list[str]
) -> _Recurrence | str:
    """Read the attributes and inputs common to LSTM and GRU; a string is a reason to refuse."""
    attrs = ctx.attrs(node)
    direction = attrs.get("direction", "forward")
    if direction not in _DIRECTIONS:
        raise ctx.error(node, f"unknown direction '{direction}'")
    directions = _DIRECTIONS[direction]
    activations = attrs.get("activations")
    if activations is not None:
        expected = [a.lower() for a in default_activations] * len(directions)
        if [str(a).lower() for a in activations] != expected:
            return (
                f"activations {list(activations)} (irc imports the defaults "
                f"{', '.join(default_activations)} only)"
            )
    layout = int(attrs.get("layout", 0))
    if layout not in (0, 1):
        raise ctx.error(node, f"unknown layout {layout}")
    x_name = node.input[0]
    if ctx.dtype(x_name).kind != "f":
        return f"{node.op_type} of a {ctx.dtype(x_name)} tensor"
    x_shape = ctx.shape(x_name)
    if len(x_shape) != 3:
        raise ctx.error(node, f"expects a 3-D input, got rank {len(x_shape)}")
    seq, batch, _ = x_shape if layout == 0 else (x_shape[1], x_shape[0], x_shape[2])
    if seq < 0 or batch < 0:
        return f"{node.op_type} over a dynamic sequence length or batch"
    w, r = _required(ctx, node, 1), _required(ctx, node, 2)
    w_shape, r_shape = _shape(w), _shape(r)
    hidden = int(attrs.get("hidden_size", r_shape[-1] if len(r_shape) == 3 else 0))
    expected_w = (len(directions), gates * hidden, x_shape[2])
    expected_r = (len(directions), gates * hidden, hidden)
    for what, got, want in (("W", w_shape, expected_w), ("R", r_shape, expected_r)):
        if tuple(got) != want:
            raise ctx.error(node, f"expects {what} of shape {list(want)}, got {list(got)}")
    b = _input(ctx, node, 3)
    if b is not None and _shape(b) != (len(directions), 2 * gates * hidden):
        raise ctx.error(
            node,
            f"expects B of shape {[len(directions), 2 * gates * hidden]}, got {list(_shape(b))}",
        )
    lens_name = ctx.input(node, 4)
    if ctx.has(lens_name):
        lens = ctx.const(lens_name)
        if lens is None:
            return f"{node.op_type} with sequence_lens only known at run time"
        if not np.all(lens == seq):
            return f"{node.op_type} with sequence_lens shorter than the sequence"
    initial_h = _input(ctx, node, 5)
    clip = attrs.get("clip")
    return _Recurrence(
        directions=directions,
        hidden=hidden,
        seq=seq,
        batch=batch,
        layout=layout,
        clip=None if clip is None else float(clip),
        x=ctx.value(x_name),
        w=w,
        r=r,
        b=b,
        initial_h=initial_h,
    )


def _input_steps(ctx: ConversionContext, rec: _Recurrence, weights: Val, bias: Val | None):
    """The input projection ``x_t W^T + bias`` of every step, as `[batch, gates * hidden]`."""
    projected = _fully_connected(ctx, rec.x, weights, bias)
    steps = _split(ctx, projected, rec.time_axis, [1] * rec.seq)
    width = _shape(projected)[-1]
    return [_reshape(ctx, s, [rec.batch, width]) for s in steps]


def _clip(ctx: ConversionContext, rec: _Recurrence, x: Val) -> Val:
    if rec.clip is None:
        return x
    return _unary(ctx, nn.ClipOp, x, min=-rec.clip, max=rec.clip)


def _final_state(ctx: ConversionContext, rec: _Recurrence, last: list[Val]) -> Val:
    """Y_h / Y_c: ``[D, B, H]`` (layout 0) or ``[B, D, H]`` (layout 1)."""
    piece = [rec.batch, 1, rec.hidden] if rec.layout else [1, rec.batch, rec.hidden]
    return _concat(ctx, [_reshape(ctx, s, piece) for s in last], 1 if rec.layout else 0)


def _sequence_output(ctx: ConversionContext, rec: _Recurrence, per_direction: list[list[Val]]):
    """Y: ``[S, D, B, H]`` (layout 0) or ``[B, S, D, H]`` (layout 1)."""
    piece = [rec.batch, 1, 1, rec.hidden] if rec.layout else [1, 1, rec.batch, rec.hidden]
    directions = [
        _concat(ctx, [_reshape(ctx, h, piece) for h in states], rec.time_axis)
        for states in per_direction
    ]
    return _concat(ctx, directions, 2 if rec.layout else 1)


def _run_directions(
    ctx: ConversionContext,
    node: onnx.NodeProto,
    rec: _Recurrence,
    run_direction: Callable[[int, bool], tuple[list[Val], list[Val]]],
    state_count: int,
) -> Results:
    """Run each direction (`run_direction(d, reverse)` -> hidden state per step in sequence
    order, final states) and assemble the ONNX outputs Y, Y_h (and Y_c)."""
    sequences: list[list[Val]] = []
    finals: list[list[Val]] = [[] for _ in range(state_count)]
    for d, reverse in enumerate(rec.directions):
        states, last = run_direction(d, reverse)
        sequences.append(states)
        for k, value in enumerate(last):
            finals[k].append(value)
    outputs: list[Val | None] = []
    names = list(node.output) + [""] * (1 + state_count - len(node.output))
    outputs.append(_sequence_output(ctx, rec, sequences) if ctx.is_used(names[0]) else None)
    for k in range(state_count):
        used = ctx.is_used(names[k + 1])
        outputs.append(_final_state(ctx, rec, finals[k]) if used else None)
    return outputs[: len(node.output)]


@converter("LSTM")
def convert_lstm(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """LSTM (gates i, o, f, c), unrolled.

    ``i = sigmoid(x Wi + h Ri + Pi * c + bi)``, ``f = sigmoid(... + Pf * c)`` (``1 - i`` with
    `input_forget`), ``g = tanh(x Wc + h Rc + bc)``, ``c' = f * c + i * g``,
    ``o = sigmoid(x Wo + h Ro + Po * c' + bo)``, ``h' = o * tanh(c')``; `clip` bounds every
    pre-activation.
    """
    rec = _parse_recurrence(ctx, node, 4, ["Sigmoid", "Tanh", "Tanh"])
    if isinstance(rec, str):
        return ctx.unsupported(node, rec)
    attrs = ctx.attrs(node)
    input_forget = bool(int(attrs.get("input_forget", 0)))
    initial_c, peepholes = _input(ctx, node, 6), _input(ctx, node, 7)
    hidden = rec.hidden
    if peepholes is not None and _shape(peepholes) != (len(rec.directions), 3 * hidden):
        raise ctx.error(
            node,
            f"expects P of shape {[len(rec.directions), 3 * hidden]}, "
            f"got {list(_shape(peepholes))}",
        )

    def run_direction(d: int, reverse: bool) -> tuple[list[Val], list[Val]]:
        w, r = _take(ctx, rec.w, 0, d), _take(ctx, rec.r, 0, d)
        bias: Val | None = None
        if rec.b is not None:
            b = _take(ctx, rec.b, 0, d)
            bias = _add(
                ctx, _slice(ctx, b, 0, 0, 4 * hidden), _slice(ctx, b, 0, 4 * hidden, 8 * hidden)
            )
        p_i = p_o = p_f = None
        if peepholes is not None:
            p = _take(ctx, peepholes, 0, d)
            p_i, p_o, p_f = (
                _value(ctx, _slice(ctx, p, 0, k * hidden, (k + 1) * hidden)) for k in range(3)
            )
        steps = _input_steps(ctx, rec, w, bias)
        # Loop invariants become values once, not one constant per step.
        r = _value(ctx, r)
        one = _value(ctx, np.array(1, _dtype_of(rec.x))) if input_forget else None
        h = None if rec.initial_h is None else rec.state_slice(ctx, rec.initial_h, d)
        c = None if initial_c is None else rec.state_slice(ctx, initial_c, d)
        states: dict[int, Val] = {}  # by time step, filled in the direction's order
        for t in reversed(range(rec.seq)) if reverse else range(rec.seq):
            gates = steps[t] if h is None else _add(ctx, steps[t], _fully_connected(ctx, h, r))
            if p_i is None:
                gates = _clip(ctx, rec, gates)
            i, o, f, g = _split(ctx, gates, 1, [hidden] * 4)
            if p_i is not None and p_f is not None:  # the peepholes come together
                if c is not None:
                    i = _add(ctx, i, _mul(ctx, c, p_i))
                    f = _add(ctx, f, _mul(ctx, c, p_f))
                i, f, g = (_clip(ctx, rec, v) for v in (i, f, g))
            i = _unary(ctx, nn.SigmoidOp, i)
            g = _unary(ctx, nn.TanhOp, g)
            if input_forget:
                assert one is not None
                f = _sub(ctx, one, i)
            else:
                f = _unary(ctx, nn.SigmoidOp, f)
            c = _mul(ctx, i, g) if c is None else _add(ctx, _mul(ctx, f, c), _mul(ctx, i, g))
            if p_o is not None:
                o = _clip(ctx, rec, _add(ctx, o, _mul(ctx, c, p_o)))
            o = _unary(ctx, nn.SigmoidOp, o)
            h = _mul(ctx, o, _unary(ctx, nn.TanhOp, c))
            states[t] = h
        assert h is not None
        assert c is not None
        return [states[t] for t in range(rec.seq)], [h, c]

    return _run_directions(ctx, node, rec, run_direction, 2)


@converter("GRU")
def convert_gru(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """GRU (gates z, r, h), unrolled.

    ``z = sigmoid(x Wz + h Rz + bz)``, ``r = sigmoid(x Wr + h Rr + br)``, candidate
    ``n = tanh(x Wh + (r * h) Rh + Rbh + Wbh)`` or, with `linear_before_reset`,
    ``tanh(x Wh + r * (h Rh + Rbh) + Wbh)``; ``h' = (1 - z) * n + z * h``.
    """
    rec = _parse_recurrence(ctx, node, 3, ["Sigmoid", "Tanh"])
    if isinstance(rec, str):
        return ctx.unsupported(node, rec)
    linear_before_reset = bool(int(ctx.attrs(node).get("linear_before_reset", 0)))
    hidden = rec.hidden

    def run_direction(d: int, reverse: bool) -> tuple[list[Val], list[Val]]:
        w, r = _take(ctx, rec.w, 0, d), _take(ctx, rec.r, 0, d)
        r_zr, r_h = _slice(ctx, r, 0, 0, 2 * hidden), _slice(ctx, r, 0, 2 * hidden, 3 * hidden)
        input_bias: Val | None = None
        recurrent_bias: Val | None = None  # Rbh, inside the reset product
        if rec.b is not None:
            b = _take(ctx, rec.b, 0, d)
            wb, rb = _slice(ctx, b, 0, 0, 3 * hidden), _slice(ctx, b, 0, 3 * hidden, 6 * hidden)
            if linear_before_reset:
                recurrent_bias = _slice(ctx, rb, 0, 2 * hidden, 3 * hidden)
                rb = _concat(
                    ctx, [_slice(ctx, rb, 0, 0, 2 * hidden), np.zeros(hidden, _dtype_of(rec.x))], 0
                )
            input_bias = _add(ctx, wb, rb)
        steps = _input_steps(ctx, rec, w, input_bias)
        # Loop invariants become values once, not one constant per step.
        r_zr, r_h = _value(ctx, r_zr), _value(ctx, r_h)
        if recurrent_bias is not None:
            recurrent_bias = _value(ctx, recurrent_bias)
        h = None if rec.initial_h is None else rec.state_slice(ctx, rec.initial_h, d)
        states: dict[int, Val] = {}  # by time step, filled in the direction's order
        for t in reversed(range(rec.seq)) if reverse else range(rec.seq):
            x_zr, x_h = _split(ctx, steps[t], 1, [2 * hidden, hidden])
            zr = x_zr if h is None else _add(ctx, x_zr, _fully_connected(ctx, h, r_zr))
            zr = _unary(ctx, nn.SigmoidOp, _clip(ctx, rec, zr))
            z, reset = _split(ctx, zr, 1, [hidden, hidden])
            if linear_before_reset:
                linear = (
                    recurrent_bias if h is None else _fully_connected(ctx, h, r_h, recurrent_bias)
                )
                candidate = x_h if linear is None else _add(ctx, x_h, _mul(ctx, reset, linear))
            elif h is None:
                candidate = x_h
            else:
                candidate = _add(ctx, x_h, _fully_connected(ctx, _mul(ctx, reset, h), r_h))
            n = _unary(ctx, nn.TanhOp, _clip(ctx, rec, candidate))
            if h is None:
                h = _sub(ctx, n, _mul(ctx, z, n))
            else:
                h = _add(ctx, n, _mul(ctx, z, _sub(ctx, h, n)))
            states[t] = h
        assert h is not None
        return [states[t] for t in range(rec.seq)], [h]

    return _run_directions(ctx, node, rec, run_direction, 1)
