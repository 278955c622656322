"""Converters from TFLite builtin operators to `nn` / `quant` ops, one function per operator.

This module holds the converters of convolutions, matrix products, pooling, elementwise and
quantization operators; `shape_ops` holds data movement and reductions, `helpers` what they
share.

Each converter reads its operator's inputs and options through the `TFLiteImporter` accessors,
emits ops and binds the outputs. Semantics follow TFLite's reference kernels (the tests compare
against them operator by operator); the comments name the TFLite rule where irc had to choose.
A converter raises `Unsupported` for an option value irc cannot express; the importer collects
those with the operators it has no converter for.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import tflite
from xdsl.dialects.builtin import TensorType, f16, f32
from xdsl.ir import SSAValue

from irc.dialects import nn, quant
from irc.dialects.nn.base import is_float
from irc.dialects.quant import UniformQuantizedType
from irc.importers.tflite.helpers import (
    activation,
    bias,
    dequantize_array,
    element,
    rank4,
    reshape,
    shape,
    weights,
    window_pads,
)
from irc.importers.tflite.reader import OperatorInfo
from irc.importers.tflite.registry import Converter, TFLiteImporter, Unsupported, converter
from irc.quantization import quantize_multiplier

# ---- Convolution, matrix products, pooling ----------------------------------------------------


@converter("CONV_2D")
def conv_2d(imp: TFLiteImporter, op: OperatorInfo) -> None:
    o = imp.options(op, "Conv2DOptions")
    x = imp.input(op, 0, "input")
    w = weights(imp, op, 1, x)
    b = bias(imp, op, 2, x)
    _, h, wd, c = rank4(imp, x, "input")
    _, kh, kw, ic = rank4(imp, w, "filter")
    if ic <= 0 or (c >= 0 and c % ic):
        raise imp.fail(f"filter input depth {ic} does not divide the input's {c} channels")
    strides = [o.StrideH(), o.StrideW()]
    dilations = [o.DilationHFactor(), o.DilationWFactor()]
    y = nn.Conv2DOp.make(
        x,
        w,
        b,
        result_elements=imp.out_element(op),
        strides=strides,
        pads=window_pads(o.Padding(), (h, wd), (kh, kw), strides, dilations),
        dilations=dilations,
        groups=c // ic if c >= 0 else 1,
        layout="NHWC",
        activation=activation(o.FusedActivationFunction()),
    )
    imp.set_output(op, imp.emit(y))


@converter("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(imp: TFLiteImporter, op: OperatorInfo) -> None:
    o = imp.options(op, "DepthwiseConv2DOptions")
    x = imp.input(op, 0, "input")
    _, h, wd, c = rank4(imp, x, "input")
    if c < 0:
        raise Unsupported("depthwise convolution with a dynamic channel count")
    w = _depthwise_filter(imp, op, x)
    out_channels, kh, kw, _ = rank4(imp, w, "filter")
    if out_channels % c:
        raise imp.fail(f"filter has {out_channels} channels, not a multiple of the input's {c}")
    strides = [o.StrideH(), o.StrideW()]
    dilations = [o.DilationHFactor(), o.DilationWFactor()]
    y = nn.Conv2DOp.make(
        x,
        w,
        bias(imp, op, 2, x),
        result_elements=imp.out_element(op),
        strides=strides,
        pads=window_pads(o.Padding(), (h, wd), (kh, kw), strides, dilations),
        dilations=dilations,
        groups=c,
        layout="NHWC",
        activation=activation(o.FusedActivationFunction()),
    )
    imp.set_output(op, imp.emit(y))


def _depthwise_filter(imp: TFLiteImporter, op: OperatorInfo, x: SSAValue) -> SSAValue:
    """TFLite's `[1, H, W, C*M]` as the grouped-conv OHWI filter `[C*M, H, W, 1]`.

    The per-axis quantized dimension (3, the channels) moves to 0 with the data.
    """
    tensor = imp.input_tensor(op, 1, "filter")
    if len(tensor.shape) != 4 or tensor.shape[0] != 1:
        raise imp.fail(f"expected a [1, H, W, C*M] filter, got {list(tensor.shape)}")
    qtype = imp.element(tensor.index)
    perm = (3, 1, 2, 0)
    moved = qtype
    if isinstance(qtype, UniformQuantizedType) and qtype.axis is not None:
        if qtype.axis != 3:
            raise imp.fail(f"filter is quantized along dimension {qtype.axis}, expected 3")
        moved = qtype.with_axis(0)
    if imp.is_constant(op, 1):
        array = np.transpose(imp.array(tensor.index), perm)
        if is_float(element(x)) and isinstance(moved, UniformQuantizedType):
            return imp.constant_value(dequantize_array(array, moved), name=tensor.name)
        result = TensorType(moved, array.shape) if isinstance(moved, UniformQuantizedType) else None
        return imp.constant_value(array, result, name=tensor.name)
    return imp.emit(
        nn.TransposeOp.make(imp.value(tensor.index), perm=list(perm), result_elements=moved)
    )


@converter("TRANSPOSE_CONV")
def transpose_conv(imp: TFLiteImporter, op: OperatorInfo) -> None:
    o = imp.options(op, "TransposeConvOptions")
    output_shape = imp.ints(op, 0, "output_shape")
    x = imp.input(op, 2, "input")
    w = weights(imp, op, 1, x)
    b = bias(imp, op, 3, x)
    if len(output_shape) != 4:
        raise imp.fail(f"output_shape must have 4 values, got {output_shape}")
    strides = [o.StrideH(), o.StrideW()]
    _, kh, kw, _ = rank4(imp, w, "filter")
    # TFLite pads as a forward conv from the output back to the input would
    # (ComputePaddingHeightWidth on the output size), keeps the `before` part and drops
    # whatever falls outside `output_shape`.
    pads = window_pads(o.Padding(), output_shape[1:3], (kh, kw), strides)
    props = _transposed(imp, x, w, strides, pads[:2], output_shape[1:3])
    y = nn.Conv2DTransposeOp.make(
        x,
        w,
        b,
        result_elements=imp.out_element(op),
        activation=activation(o.FusedActivationFunction()),
        **props,
    )
    imp.set_output(op, imp.emit(y))


def _transposed(
    imp: TFLiteImporter,
    x: SSAValue,
    w: SSAValue,
    strides: Sequence[int],
    before: Sequence[int],
    out_hw: Sequence[int],
) -> dict[str, object]:
    """conv2d_transpose properties giving exactly `out_hw` with `before` cells cropped."""
    _, h, wd, _ = rank4(imp, x, "input")
    _, kh, kw, _ = rank4(imp, w, "filter")
    after, extra = [], []
    for size, k, s, b0, out in zip((h, wd), (kh, kw), strides, before, out_hw):
        if size < 0:
            raise Unsupported("transposed convolution of a dynamic spatial size")
        full = (size - 1) * s + k
        rest = full - b0 - out
        after.append(max(rest, 0))
        extra.append(max(-rest, 0))  # rows TFLite writes only the bias into
    return {
        "strides": list(strides),
        "pads": [before[0], before[1], after[0], after[1]],
        "output_padding": extra,
        "layout": "NHWC",
    }


@converter("Convolution2DTransposeBias")
def mediapipe_transpose_conv_bias(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """MediaPipe's custom transposed convolution with bias.

    Inputs: input, weights (OHWI), bias. The custom options are the raw C struct
    `TfLiteTransposeConvParams {padding, stride_width, stride_height}` (int32 each; padding in
    TfLitePadding's numbering: 1 = SAME, 2 = VALID). The output is ``stride * (in - 1) + k -
    pad`` with ``pad = max(0, k - (in - 1) % stride - 1)`` for SAME, half of it cropped at the top.
    """
    if len(op.custom_options) < 12:
        raise imp.fail(
            f"expected 12 bytes of TfLiteTransposeConvParams, got {len(op.custom_options)}"
        )
    padding, stride_w, stride_h = struct.unpack_from("<iii", op.custom_options)
    if padding not in (0, 1, 2):
        raise Unsupported(f"padding {padding}")
    if stride_w <= 0 or stride_h <= 0:
        raise imp.fail(f"strides must be positive, got {stride_h}x{stride_w}")
    x = imp.input(op, 0, "input")
    w = weights(imp, op, 1, x)
    b = bias(imp, op, 2, x)
    _, h, wd, _ = rank4(imp, x, "input")
    _, kh, kw, _ = rank4(imp, w, "filter")
    before, out_hw = [], []
    for size, k, s in zip((h, wd), (kh, kw), (stride_h, stride_w)):
        if size < 0:
            raise Unsupported("transposed convolution of a dynamic spatial size")
        total = max(0, k - (size - 1) % s - 1) if padding == 1 else 0
        before.append(total // 2)
        out_hw.append(s * (size - 1) + k - total)
    props = _transposed(imp, x, w, (stride_h, stride_w), before, out_hw)
    y = nn.Conv2DTransposeOp.make(x, w, b, result_elements=imp.out_element(op), **props)
    imp.set_output(op, imp.emit(y))


@converter("FULLY_CONNECTED")
def fully_connected(imp: TFLiteImporter, op: OperatorInfo) -> None:
    o = imp.options(op, "FullyConnectedOptions")
    if o.WeightsFormat() != tflite.FullyConnectedOptionsWeightsFormat.DEFAULT:
        raise Unsupported("shuffled weights format")
    x = imp.input(op, 0, "input")
    w = weights(imp, op, 1, x)
    b = bias(imp, op, 2, x)
    w_shape = shape(w)
    if len(w_shape) != 2:
        raise imp.fail(f"expected [N, K] weights, got shape {list(w_shape)}")
    depth = w_shape[1]
    x_shape = shape(x)
    # TFLite flattens the input to [size / K, K]; keep_num_dims keeps its leading dims instead.
    if not o.KeepNumDims() and (len(x_shape) != 2 or x_shape[1] != depth):
        x = reshape(imp, x, [-1, depth])
    y = nn.FullyConnectedOp.make(
        x,
        w,
        b,
        result_elements=imp.out_element(op),
        activation=activation(o.FusedActivationFunction()),
    )
    imp.set_output(op, imp.emit(y))


@converter("BATCH_MATMUL")
def batch_matmul(imp: TFLiteImporter, op: OperatorInfo) -> None:
    o = imp.options(op, "BatchMatMulOptions")
    a = imp.input(op, 0, "lhs")
    b = weights(imp, op, 1, a)
    y = nn.BatchMatmulOp.make(
        a, b, result_elements=imp.out_element(op), adj_x=bool(o.AdjX()), adj_y=bool(o.AdjY())
    )
    imp.set_output(op, imp.emit(y))


def _pool(op_class: type[nn.NNOp]) -> Converter:
    def convert(imp: TFLiteImporter, op: OperatorInfo) -> None:
        o = imp.options(op, "Pool2DOptions")
        x = imp.input(op, 0, "input")
        _, h, wd, _ = rank4(imp, x, "input")
        kernel = [o.FilterHeight(), o.FilterWidth()]
        strides = [o.StrideH(), o.StrideW()]
        y = op_class.make(
            x,
            result_elements=imp.out_element(op),
            kernel=kernel,
            strides=strides,
            pads=window_pads(o.Padding(), (h, wd), kernel, strides),
            layout="NHWC",
            activation=activation(o.FusedActivationFunction()),
        )
        imp.set_output(op, imp.emit(y))

    return convert


converter("MAX_POOL_2D")(_pool(nn.MaxPool2DOp))
converter("AVERAGE_POOL_2D")(_pool(nn.AvgPool2DOp))


# ---- Elementwise -------------------------------------------------------------------------------

_BINARY_WITH_ACTIVATION = {
    "ADD": (nn.AddOp, "AddOptions"),
    "SUB": (nn.SubOp, "SubOptions"),
    "MUL": (nn.MulOp, "MulOptions"),
    "DIV": (nn.DivOp, "DivOptions"),
}
_BINARY = {
    "MAXIMUM": nn.MaximumOp,
    "MINIMUM": nn.MinimumOp,
    "POW": nn.PowOp,
    "SQUARED_DIFFERENCE": nn.SquaredDifferenceOp,
    "PRELU": nn.PReluOp,
}
_UNARY = {
    "RELU": nn.ReluOp,
    "RELU6": nn.Relu6Op,
    "LOGISTIC": nn.SigmoidOp,
    "TANH": nn.TanhOp,
    "HARD_SWISH": nn.HardSwishOp,
    "EXP": nn.ExpOp,
    "LOG": nn.LogOp,
    "SQRT": nn.SqrtOp,
    "RSQRT": nn.RsqrtOp,
    "ABS": nn.AbsOp,
    "NEG": nn.NegOp,
}


@converter(*_BINARY_WITH_ACTIVATION)
def binary_with_activation(imp: TFLiteImporter, op: OperatorInfo) -> None:
    op_class, table = _BINARY_WITH_ACTIVATION[op.op_type]
    o = imp.options(op, table)
    y = op_class.make(
        imp.input(op, 0),
        imp.input(op, 1),
        result_elements=imp.out_element(op),
        activation=activation(o.FusedActivationFunction()),
    )
    imp.set_output(op, imp.emit(y))


@converter(*_BINARY)
def binary(imp: TFLiteImporter, op: OperatorInfo) -> None:
    y = _BINARY[op.op_type].make(
        imp.input(op, 0), imp.input(op, 1), result_elements=imp.out_element(op)
    )
    imp.set_output(op, imp.emit(y))


@converter(*_UNARY)
def unary(imp: TFLiteImporter, op: OperatorInfo) -> None:
    y = _UNARY[op.op_type].make(imp.input(op, 0), result_elements=imp.out_element(op))
    imp.set_output(op, imp.emit(y))


@converter("SQUARE")
def square(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 0)
    imp.set_output(op, imp.emit(nn.MulOp.make(x, x, result_elements=imp.out_element(op))))


@converter("RELU_N1_TO_1")
def relu_n1_to_1(imp: TFLiteImporter, op: OperatorInfo) -> None:
    y = nn.ClipOp.make(imp.input(op, 0), result_elements=imp.out_element(op), min=-1.0, max=1.0)
    imp.set_output(op, imp.emit(y))


@converter("LEAKY_RELU")
def leaky_relu(imp: TFLiteImporter, op: OperatorInfo) -> None:
    alpha = imp.options(op, "LeakyReluOptions").Alpha()
    y = nn.LeakyReluOp.make(imp.input(op, 0), result_elements=imp.out_element(op), alpha=alpha)
    imp.set_output(op, imp.emit(y))


@converter("GELU")
def gelu(imp: TFLiteImporter, op: OperatorInfo) -> None:
    approximate = "tanh" if imp.options(op, "GeluOptions").Approximate() else "none"
    y = nn.GeluOp.make(
        imp.input(op, 0), result_elements=imp.out_element(op), approximate=approximate
    )
    imp.set_output(op, imp.emit(y))


@converter("CAST")
def cast(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """CAST converts stored values; a quantized side is handled as its storage integers."""
    x = imp.input(op, 0)
    target = imp.out_element(op)
    source = element(x)
    if isinstance(source, UniformQuantizedType):
        x = imp.emit(quant.SCastOp(x, TensorType(source.storage_type, shape(x))))
    storage = target.storage_type if isinstance(target, UniformQuantizedType) else target
    y = x if element(x) == storage else imp.emit(nn.CastOp.make(x, result_elements=storage))
    if isinstance(target, UniformQuantizedType):
        y = imp.emit(quant.SCastOp(y, TensorType(target, shape(y))))
    imp.set_output(op, y)


# ---- Quantization ------------------------------------------------------------------------------


@converter("QUANTIZE")
def quantize(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """float -> quantized: `quant.qcast` (TFLite rounds half away from zero); quantized ->
    quantized: TFLite's Requantize, one `quant.rescale` by ``s_in / s_out``."""
    x = imp.input(op, 0)
    target = imp.out_element(op)
    if not isinstance(target, UniformQuantizedType):
        raise imp.fail(f"the output must be quantized, got {target}")
    source = element(x)
    if isinstance(source, UniformQuantizedType):
        if source.is_per_axis or target.is_per_axis:
            raise Unsupported("per-axis requantization")
        multiplier, shift = quantize_multiplier(source.scale_values[0] / target.scale_values[0])
        y = quant.RescaleOp(x, TensorType(target, shape(x)), [multiplier], [shift])
        imp.set_output(op, imp.emit(y))
        return
    if not is_float(source):
        raise imp.fail(f"cannot quantize {source} values")
    if source != f32:
        x = imp.emit(nn.CastOp.make(x, result_elements=f32))
    imp.set_output(op, imp.emit(quant.QCastOp(x, TensorType(target, shape(x)))))


@converter("DEQUANTIZE")
def dequantize(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """quantized -> float: `quant.dcast`; a constant (MediaPipe's float16 weights, int8 weights)
    is converted at import into a float32 constant."""
    tensor = imp.input_tensor(op, 0)
    target = imp.out_element(op)
    source = imp.element(tensor.index)
    if imp.is_constant(op, 0):
        array = imp.array(tensor.index)
        if isinstance(source, UniformQuantizedType):
            array = dequantize_array(array, source)
        if target not in (f32, f16):
            raise Unsupported(f"dequantizing into {target}")
        dtype = np.float32 if target == f32 else np.float16
        out = imp.output_tensor(op)
        imp.set_output(op, imp.constant_value(array.astype(dtype), name=out.name))
        return
    x = imp.value(tensor.index)
    if isinstance(source, UniformQuantizedType):
        y = imp.emit(quant.DCastOp(x))
        if element(y) != target:
            y = imp.emit(nn.CastOp.make(y, result_elements=target))
    else:
        y = imp.emit(nn.CastOp.make(x, result_elements=target))
    imp.set_output(op, y)


@converter("DENSIFY")
def densify(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """The sparse constant input is densified when read; the output is that constant."""
    tensor = imp.input_tensor(op, 0)
    if not imp.is_constant(op, 0):
        raise Unsupported("densifying a non-constant tensor")
    array = imp.array(tensor.index)
    out = imp.output_tensor(op)
    result = imp.out_element(op)
    result_type = (
        TensorType(result, array.shape) if isinstance(result, UniformQuantizedType) else None
    )
    imp.set_output(op, imp.constant_value(array, result_type, name=out.name))
