"""ONNX converters for ops that transformer and older CNN exports contain: `Range`, `Trilu`,
`CumSum`, `Mod` and `LRN`.

`torch.onnx.export` of a Hugging Face model with dynamic batch and sequence axes computes
position ids and attention masks from the input shapes (Shape -> Gather -> Unsqueeze ->
Concat -> Range / Expand / ConstantOfShape / Trilu / Where). With static input shapes
those chains are compile-time constants and fold here in numpy, as in `shape`; on run-time
tensors `Trilu` and `CumSum` become a select / a product with a constant mask, and
`LRN` (AlexNet, Inception-v1) becomes square, a channel-window sum of slices, and a
power. Converters register into `irc.importers.onnx.registry.CONVERTERS`.
"""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import is_float
from irc.importers.onnx.helpers import normalize_axis, static_shape
from irc.importers.onnx.registry import ConversionContext, Results, Unsupported, converter

__all__ = [
    "convert_cumsum",
    "convert_lrn",
    "convert_mod",
    "convert_range",
    "convert_trilu",
]


def _scalar(ctx: ConversionContext, node: onnx.NodeProto, index: int, what: str) -> np.ndarray:
    """Input `index` as a compile-time scalar (Unsupported when only known at run time)."""
    array = ctx.const(ctx.input(node, index))
    if array is None:
        raise Unsupported(f"{node.op_type} with a {what} only known at run time")
    if array.size != 1:
        raise ctx.error(node, f"the {what} must be a scalar, got shape {list(array.shape)}")
    return array.reshape(())


def _float_value(ctx: ConversionContext, name: str) -> SSAValue:
    value = ctx.value(name)
    type_ = value.type
    assert isinstance(type_, TensorType)
    if not is_float(type_.element_type):
        raise Unsupported(f"tensor '{name}' of element type {type_.element_type}")
    return value


# ---- Range -------------------------------------------------------------------------------------


@converter("Range")
def convert_range(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """`arange(start, limit, delta)`: its length depends on the values, so all three must be
    known at import (they are, once the input shapes are: `torch.arange(seq_len)`)."""
    start, limit, delta = (
        _scalar(ctx, node, i, w) for i, w in enumerate(("start", "limit", "delta"))
    )
    if delta == 0:
        raise ctx.error(node, "delta is 0")
    dtype = start.dtype
    count = max(int(np.ceil((limit.item() - start.item()) / delta.item())), 0)
    ctx.check_size([count], dtype)
    return [
        (
            start + np.arange(count, dtype=np.float64 if dtype.kind == "f" else np.int64) * delta
        ).astype(dtype)
    ]


# ---- Trilu -------------------------------------------------------------------------------------


@converter("Trilu")
def convert_trilu(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Upper (`upper=1`, the default) or lower triangle of the last two dimensions, the
    `k`-th diagonal included; a run-time tensor keeps its triangle through `nn.select`."""
    upper = bool(ctx.attrs(node).get("upper", 1))
    k = 0
    if ctx.has(ctx.input(node, 1)):
        k = int(_scalar(ctx, node, 1, "diagonal k"))
    data = node.input[0]
    array = ctx.const(data)
    if array is not None:
        if array.ndim < 2:
            raise ctx.error(node, f"Trilu needs rank 2 or more, got {array.ndim}")
        return [np.triu(array, k) if upper else np.tril(array, k)]
    shape = static_shape(ctx, data)
    if len(shape) < 2:
        raise ctx.error(node, f"Trilu needs rank 2 or more, got {len(shape)}")
    rows, cols = shape[-2:]
    ones = np.ones((rows, cols), np.bool_)
    keep = np.triu(ones, k) if upper else np.tril(ones, k)
    zero = np.zeros((), ctx.dtype(data))
    operands = [ctx.constant(keep), ctx.value(data), ctx.constant(zero)]
    return [ctx.result(nn.SelectOp.make(*operands, result_elements=ctx.element(data)))]


# ---- CumSum ------------------------------------------------------------------------------------


@converter("CumSum")
def convert_cumsum(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Folded when the data is constant; otherwise a float tensor becomes a matmul with a
    constant triangular matrix along the (static) axis, and an integer tensor (RoBERTa's
    position ids from the padding mask) an exact masked product summed by `nn.reduce`."""
    data = node.input[0]
    rank = len(ctx.shape(data))
    axis = normalize_axis(int(_scalar(ctx, node, 1, "axis")), rank)
    attrs = ctx.attrs(node)
    exclusive, reverse = bool(attrs.get("exclusive", 0)), bool(attrs.get("reverse", 0))
    array = ctx.const(data)
    if array is not None:
        x = np.flip(array, axis) if reverse else array
        out = np.cumsum(x, axis=axis, dtype=array.dtype)
        if exclusive:
            out = out - x
        return [np.ascontiguousarray(np.flip(out, axis) if reverse else out)]
    value = ctx.value(data)
    shape = static_shape(ctx, data)
    n = shape[axis]
    # out[..., j] = sum_i x[..., i] * keep[i, j] along the axis moved last.
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    keep = (i >= j) if reverse else (i <= j)
    if exclusive:
        keep &= i != j
    dtype = ctx.dtype(data)
    perm = [d for d in range(rank) if d != axis] + [axis]
    moved = value if axis == rank - 1 else ctx.result(nn.TransposeOp.make(value, perm=perm))
    if dtype.kind == "f":
        summed = ctx.result(nn.BatchMatmulOp.make(moved, ctx.constant(keep.astype(dtype))))
    elif dtype.kind in "iu":  # exact: [..., 1, n] * keep^T [n, n], summed over the inputs
        moved_shape = [shape[d] for d in perm]
        rows = ctx.result(nn.ReshapeOp.make(moved, shape=[*moved_shape[:-1], 1, n]))
        terms = ctx.result(
            nn.MulOp.make(rows, ctx.constant(np.ascontiguousarray(keep.T).astype(dtype)))
        )
        summed = ctx.result(nn.ReduceOp.make(terms, kind="sum", axes=[-1]))
    else:
        raise Unsupported(f"CumSum of {dtype} tensors")
    if axis == rank - 1:
        return [summed]
    inverse = [int(p) for p in np.argsort(perm)]
    return [ctx.result(nn.TransposeOp.make(summed, perm=inverse))]


# ---- Mod ---------------------------------------------------------------------------------------


@converter("Mod")
def convert_mod(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Folded on constants (index arithmetic of exported shape computations)."""
    a, b = ctx.const(node.input[0]), ctx.const(node.input[1])
    if a is None or b is None:
        raise Unsupported("Mod of tensors only known at run time")
    fmod = bool(ctx.attrs(node).get("fmod", 0))
    if a.dtype.kind in "iu" and np.any(b == 0):
        raise ctx.error(node, "integer Mod by zero")
    out = np.fmod(a, b) if fmod else np.mod(a, b)
    return [np.asarray(out).astype(np.result_type(a, b), copy=False)]


# ---- LRN ---------------------------------------------------------------------------------------


@converter("LRN")
def convert_lrn(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Local response normalisation across channels (axis 1)::

        y = x / (bias + alpha / size * sum_{c' in window(c)} x[c']^2) ^ beta

    with the window ``[c - floor((size-1)/2), c + ceil((size-1)/2)]`` clipped to the
    channels: zero padding of the squares, then `size` shifted slices added."""
    attrs = ctx.attrs(node)
    size = int(attrs.get("size", 0))
    if size <= 0:
        raise ctx.error(node, f"LRN needs a positive size, got {size}")
    alpha = float(attrs.get("alpha", 1e-4))
    beta = float(attrs.get("beta", 0.75))
    bias = float(attrs.get("bias", 1.0))
    data = node.input[0]
    shape = static_shape(ctx, data)
    if len(shape) < 3:
        raise ctx.error(node, f"LRN needs an [N, C, ...] tensor, got rank {len(shape)}")
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    array = ctx.const(data)
    if array is not None:
        pads = [(0, 0), (before, after)] + [(0, 0)] * (array.ndim - 2)
        squares = np.pad(array.astype(np.float64) ** 2, pads)
        window = sum(squares[:, k : k + shape[1]] for k in range(size))
        return [(array / (bias + alpha / size * window) ** beta).astype(array.dtype)]
    x = _float_value(ctx, data)
    dtype = ctx.dtype(data)
    squares = ctx.result(nn.MulOp.make(x, x))
    rank = len(shape)
    pads = [0, 0, before, after] + [0, 0] * (rank - 2)
    padded = ctx.result(nn.PadOp.make(squares, pads=pads)) if size > 1 else squares
    total: SSAValue | None = None
    for k in range(size):
        begin = [0, k] + [0] * (rank - 2)
        end = [shape[0], k + shape[1], *shape[2:]]
        part = padded
        if size > 1:
            part = ctx.result(nn.SliceOp.make(padded, begin=begin, end=end, strides=[1] * rank))
        total = part if total is None else ctx.result(nn.AddOp.make(total, part))
    assert total is not None
    scaled = ctx.result(nn.MulOp.make(total, ctx.constant(np.array(alpha / size, dtype))))
    shifted = ctx.result(nn.AddOp.make(scaled, ctx.constant(np.array(bias, dtype))))
    denominator = ctx.result(nn.PowOp.make(shifted, ctx.constant(np.array(beta, dtype))))
    return [ctx.result(nn.DivOp.make(x, denominator))]
