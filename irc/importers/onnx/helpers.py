"""Helpers ONNX converters share: constant inputs, static shapes, axes, reshapes, casts and
conv/pool windows.

Constants are folded in numpy (`ctx.const`), so shape computations never reach the IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import shape_of
from irc.importers.onnx.dtypes import element_for_dtype
from irc.importers.onnx.registry import ConversionContext, Unsupported

__all__ = [
    "as_2d_pads",
    "as_2d_window",
    "cast_array",
    "cast_value",
    "const_floats",
    "const_ints",
    "conv_window",
    "normalize_axis",
    "reshape",
    "restore_rank",
    "same_pads",
    "static_shape",
]


def const_ints(ctx: ConversionContext, name: str, what: str) -> list[int] | None:
    """A constant integer input as a list; None when absent; Unsupported when not constant."""
    if not ctx.has(name):
        return None
    array = ctx.const(name)
    if array is None:
        raise Unsupported(f"{what} is computed at run time; irc needs it at compile time")
    return [int(v) for v in np.asarray(array).reshape(-1)]


def const_floats(ctx: ConversionContext, name: str, what: str) -> list[float] | None:
    """A constant float input as a list; None when absent; Unsupported when not constant."""
    if not ctx.has(name):
        return None
    array = ctx.const(name)
    if array is None:
        raise Unsupported(f"{what} is computed at run time; irc needs it at compile time")
    return [float(v) for v in np.asarray(array).reshape(-1)]


def static_shape(ctx: ConversionContext, name: str) -> tuple[int, ...]:
    """The shape of a tensor, which must be static (Unsupported otherwise)."""
    shape = ctx.shape(name)
    if any(d < 0 for d in shape):
        raise Unsupported(f"tensor '{name}' has a dynamic shape")
    return shape


def normalize_axis(axis: int, rank: int) -> int:
    """`axis` in `[0, rank)` (ONNX allows negative axes); Unsupported when out of range."""
    if not -rank <= axis < max(rank, 1):
        raise Unsupported(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def reshape(ctx: ConversionContext, value: SSAValue, shape: Sequence[int]) -> SSAValue:
    """`nn.reshape` unless the shape already matches."""
    if tuple(shape_of(value)) == tuple(shape):
        return value
    return ctx.result(nn.ReshapeOp.make(value, shape=list(shape)))


def cast_value(ctx: ConversionContext, name: str, dtype: np.dtype) -> SSAValue:
    """The value of a tensor converted to `dtype` (constants convert at compile time)."""
    array = ctx.const(name)
    if array is not None:
        return ctx.constant(cast_array(array, dtype))
    value = ctx.value(name)
    if ctx.dtype(name) == dtype:
        return value
    return ctx.result(nn.CastOp.make(value, result_elements=element_for_dtype(dtype)))


def cast_array(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """ONNX Cast in numpy: float to integer truncates toward zero (saturating)."""
    array = np.asarray(array)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return array != 0
    if array.dtype.kind == "f" and dtype.kind in "iu":
        info = np.iinfo(dtype)
        wide = np.trunc(array.astype(np.float64))
        wide = np.where(np.isnan(wide), 0, np.clip(wide, float(info.min), float(info.max)))
        return wide.astype(dtype)
    with np.errstate(over="ignore"):
        return array.astype(dtype)


def same_pads(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    """Begin and end padding of auto_pad SAME_UPPER / SAME_LOWER (output = ceil(in / stride))."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def conv_window(
    ctx: ConversionContext,
    node: onnx.NodeProto,
    spatial: Sequence[int],
    kernel: Sequence[int],
    attrs: dict[str, Any],
) -> tuple[list[int], list[int], list[int]]:
    """Strides, dilations and explicit [begin..., end...] pads of a conv or pool node."""
    rank = len(spatial)
    strides = list(attrs.get("strides") or [1] * rank)
    dilations = list(attrs.get("dilations") or [1] * rank)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pairs = [
            same_pads(n, k, s, d, auto_pad == "SAME_UPPER")
            for n, k, s, d in zip(spatial, kernel, strides, dilations)
        ]
        pads = [p[0] for p in pairs] + [p[1] for p in pairs]
    elif auto_pad == "VALID":
        pads = [0] * (2 * rank)
    elif auto_pad == "NOTSET":
        pads = list(attrs.get("pads") or [0] * (2 * rank))
    else:
        raise ctx.error(node, f"unknown auto_pad '{auto_pad}'")
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        raise ctx.error(node, f"strides, dilations or pads do not match {rank} spatial dims")
    return strides, dilations, pads


def as_2d_window(values: list[int], fill: int) -> list[int]:
    """A 1-D window parameter over a unit height: [v] -> [fill, v]."""
    return [fill, *values]


def as_2d_pads(pads: list[int]) -> list[int]:
    """1-D [begin, end] -> 2-D [top, left, bottom, right]; 2-D ONNX pads already are."""
    return [0, pads[0], 0, pads[1]] if len(pads) == 2 else pads


def restore_rank(ctx: ConversionContext, value: SSAValue, rank: int) -> SSAValue:
    """An NC1W value back to NCW when the node's data had `rank` 3 (see `as_2d_window`)."""
    if rank == 4:
        return value
    n, c, _, w = shape_of(value)
    return reshape(ctx, value, [n, c, w])
