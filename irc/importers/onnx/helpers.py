"""Helpers ONNX converters share: constant inputs, static shapes, axes, reshapes and casts.

Constants are folded in numpy (`ctx.const`), so shape computations never reach the IR.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.importers.onnx.dtypes import element_for_dtype
from irc.importers.onnx.registry import ConversionContext, Unsupported

__all__ = [
    "cast_array",
    "cast_value",
    "const_floats",
    "const_ints",
    "normalize_axis",
    "reshape",
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
    if tuple(value.type.get_shape()) == tuple(shape):  # type: ignore[attr-defined]
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
