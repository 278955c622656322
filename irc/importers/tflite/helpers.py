"""Helpers TFLite converters share: fused activations, padding, weights, shapes and axes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tflite
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import format_shape, is_float
from irc.dialects.quant import UniformQuantizedType
from irc.importers.tflite.reader import OperatorInfo
from irc.importers.tflite.registry import TFLiteImporter, Unsupported

__all__ = [
    "activation",
    "bias",
    "dequantize_array",
    "element",
    "normalize_axis",
    "one",
    "rank4",
    "reshape",
    "shape",
    "weights",
    "window_pads",
]

_ACTIVATIONS = {
    tflite.ActivationFunctionType.NONE: "none",
    tflite.ActivationFunctionType.RELU: "relu",
    tflite.ActivationFunctionType.RELU_N1_TO_1: "relu_n1_to_1",
    tflite.ActivationFunctionType.RELU6: "relu6",
}
_ACTIVATION_NAMES = {
    v: k for k, v in vars(tflite.ActivationFunctionType).items() if not k.startswith("_")
}


def activation(code: int) -> str:
    """The `activation` property for a fused activation.

    TANH and SIGN_BIT are refused: TFLite's kernels for the ops that carry a fused activation
    (CalculateActivationRange) clamp only for the RELU family and silently ignore the others,
    so neither "tanh" nor "none" would state what the model means and TFLite computes.
    """
    if code not in _ACTIVATIONS:
        raise Unsupported(f"fused activation {_ACTIVATION_NAMES.get(code, code)}")
    return _ACTIVATIONS[code]


def shape(value: SSAValue) -> tuple[int, ...]:
    """The shape of a tensor value."""
    type_ = value.type
    assert isinstance(type_, TensorType)
    return type_.get_shape()


def element(value: SSAValue) -> Attribute:
    """The element type of a tensor value."""
    type_ = value.type
    assert isinstance(type_, TensorType)
    return type_.element_type


def window_pads(
    padding: int,
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int] = (1, 1),
) -> list[int]:
    """`[top, left, bottom, right]` for TFLite's SAME/VALID (ComputePaddingHeightWidth)."""
    if padding == tflite.Padding.VALID:
        return [0, 0, 0, 0]
    if padding != tflite.Padding.SAME:
        raise Unsupported(f"padding {padding}")
    before, after = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        if size < 0:
            raise Unsupported("SAME padding of a dynamic spatial dimension")
        if s <= 0 or d <= 0:
            raise ValueError(
                f"strides {list(strides)} and dilations {list(dilations)} must be positive"
            )
        out = (size + s - 1) // s
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        before.append(total // 2)
        after.append(total - total // 2)  # the odd cell goes to the bottom/right
    return [before[0], before[1], after[0], after[1]]


def dequantize_array(array: np.ndarray, qtype: UniformQuantizedType) -> np.ndarray:
    """TFLite's Dequantize of constant data: ``float(scale) * float(stored - zero_point)``."""
    scales = np.asarray(qtype.scale_values, np.float32)
    zero_points = np.asarray(qtype.zero_point_values, np.int64)
    if qtype.axis is not None and scales.size > 1:
        broadcast = [1] * array.ndim
        broadcast[qtype.axis] = scales.size
        scales, zero_points = scales.reshape(broadcast), zero_points.reshape(broadcast)
    centered = (array.astype(np.int64) - zero_points).astype(np.float32)
    return (scales * centered).astype(np.float32)


def weights(imp: TFLiteImporter, op: OperatorInfo, k: int, data: SSAValue) -> SSAValue:
    """A filter/weights operand; quantized constant weights of a float op (hybrid models)
    are dequantized at import, since `nn` products take float x float or int x int."""
    tensor = imp.input_tensor(op, k, "weights")
    qtype = imp.element(tensor.index)
    if is_float(element(data)) and isinstance(qtype, UniformQuantizedType):
        if not imp.is_constant(op, k):
            raise Unsupported("float input with non-constant quantized weights")
        return imp.constant_value(
            dequantize_array(imp.array(tensor.index), qtype), name=tensor.name
        )
    return imp.value(tensor.index)


def bias(imp: TFLiteImporter, op: OperatorInfo, k: int, data: SSAValue) -> SSAValue | None:
    """The optional bias input `k`, dequantized like `weights` for a float op."""
    tensor = imp.tensor(op, k)
    if tensor is None:
        return None
    return weights(imp, op, k, data)


def reshape(imp: TFLiteImporter, value: SSAValue, target: Sequence[int]) -> SSAValue:
    """`nn.reshape` to a shape that may contain one dynamic (-1) dimension."""
    target = [int(d) for d in target]
    if sum(1 for d in target if d < 0) > 1:
        raise Unsupported("a reshape with more than one dynamic dimension")
    if tuple(target) == shape(value):
        return value
    return imp.emit(nn.ReshapeOp.make(value, shape=[d if d >= 0 else -1 for d in target]))


def rank4(imp: TFLiteImporter, value: SSAValue, what: str) -> tuple[int, int, int, int]:
    """The dims of a 4-D (NHWC or OHWI) value; a clear error for any other rank."""
    dims = shape(value)
    if len(dims) != 4:
        raise imp.fail(f"expected a 4-D {what}, got shape {format_shape(dims)}")
    n, h, w, c = dims
    return n, h, w, c


def one(imp: TFLiteImporter, values: list[int], what: str) -> int:
    """The single entry of `values` (a clear error otherwise)."""
    if len(values) != 1:
        raise imp.fail(f"expected one {what}, got {values}")
    return values[0]


def normalize_axis(axis: int, rank: int) -> int:
    """`axis` in `[0, rank)` (TFLite allows negative axes); ValueError when out of range."""
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank
