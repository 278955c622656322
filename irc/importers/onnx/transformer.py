"""ONNX converters for ops that transformer and older CNN exports contain: `Range`, `Trilu`,
`CumSum`, `Mod`, `LRN` and `Einsum`.

`torch.onnx.export` of a Hugging Face model with dynamic batch and sequence axes computes
position ids and attention masks from the input shapes (Shape -> Gather -> Unsqueeze ->
Concat -> Range / Expand / ConstantOfShape / Trilu / Where). With static input shapes
those chains are compile-time constants and fold here in numpy, as in `shape`; on run-time
tensors `Trilu` and `CumSum` become a select / a product with a constant mask, and
`LRN` (AlexNet, Inception-v1) becomes square, a channel-window sum of slices, and a
power; `Einsum` (`torch.einsum` in attention and rotary-embedding code) becomes transposes,
reshapes, sums and one `nn.batch_matmul`. Converters register into
`irc.importers.onnx.registry.CONVERTERS`.
"""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import is_float, shape_of
from irc.importers.onnx.helpers import normalize_axis, reshape, static_shape
from irc.importers.onnx.registry import ConversionContext, Results, Unsupported, converter

__all__ = [
    "convert_cumsum",
    "convert_einsum",
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


# ---- Einsum ------------------------------------------------------------------------------------


def _einsum_terms(
    ctx: ConversionContext, node: onnx.NodeProto, ranks: list[int]
) -> tuple[list[list[str]], list[str]]:
    """The equation's input terms and output term as lists of index symbols: letters, and
    ``...N`` for the N-th (right-aligned) dimension an ellipsis stands for. Without ``->``
    the output is the ellipsis dimensions then the letters used once, in alphabetical order
    (the ONNX and numpy rule)."""
    equation = str(ctx.attrs(node).get("equation", "")).replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    texts = lhs.split(",")
    if len(texts) != len(ranks):
        raise ctx.error(
            node, f"equation '{equation}' has {len(texts)} inputs, the node {len(ranks)}"
        )
    width = 0
    for text, rank in zip(texts, ranks, strict=True):
        body = text.replace("...", "")
        if text.count("...") > 1 or (body and not body.isalpha()):
            raise ctx.error(node, f"bad term '{text}' in equation '{equation}'")
        letters = len(body)
        if ("..." in text and letters > rank) or ("..." not in text and letters != rank):
            raise ctx.error(node, f"term '{text}' does not fit an input of rank {rank}")
        if "..." in text:
            width = max(width, rank - letters)

    def symbols(text: str, count: int) -> list[str]:
        head, dots, tail = text.partition("...")
        middle = [f"...{width - count + i}" for i in range(count)] if dots else []
        return [*head, *middle, *tail]

    terms = [
        symbols(text, rank - len(text.replace("...", "")))
        for text, rank in zip(texts, ranks, strict=True)
    ]
    if arrow:
        if rhs.count("...") > 1 or (
            rhs.replace("...", "") and not rhs.replace("...", "").isalpha()
        ):
            raise ctx.error(node, f"bad output term '{rhs}' in equation '{equation}'")
        output = symbols(rhs, width)
    else:
        counts: dict[str, int] = {}
        for term in terms:
            for symbol in term:
                counts[symbol] = counts.get(symbol, 0) + 1
        once = sorted(s for s, n in counts.items() if n == 1 and not s.startswith("..."))
        output = [f"...{i}" for i in range(width)] + once
    if len(set(output)) != len(output):
        raise ctx.error(node, f"output term of '{equation}' repeats an index")
    used = {symbol for term in terms for symbol in term}
    if any(symbol not in used for symbol in output):
        raise ctx.error(node, f"output term of '{equation}' has an index no input has")
    return terms, output


def _sum_out(
    ctx: ConversionContext, value: SSAValue, term: list[str], keep: set[str]
) -> tuple[SSAValue, list[str]]:
    """`value` summed over the dimensions of `term` whose symbols are not in `keep`."""
    axes = [i for i, symbol in enumerate(term) if symbol not in keep]
    if not axes:
        return value, term
    summed = ctx.result(nn.ReduceOp.make(value, kind="sum", axes=axes, keepdims=False))
    return summed, [symbol for symbol in term if symbol in keep]


def _permuted(
    ctx: ConversionContext, value: SSAValue, term: list[str], order: list[str]
) -> SSAValue:
    perm = [term.index(symbol) for symbol in order]
    if perm == list(range(len(perm))):
        return value
    return ctx.result(nn.TransposeOp.make(value, perm=perm))


@converter("Einsum")
def convert_einsum(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Einstein summation of one or two tensors; folded when every input is constant.

    Two operands: indices only one side has and the output lacks are summed first; the
    rest are batch indices (both sides and the output: they broadcast, size 1 against n),
    contracted ones (both sides, not the output) and free ones (one side and the output).
    Each side is transposed to ``[batch..., free..., contracted...]`` (the right one to
    ``[batch..., contracted..., free...]``), reshaped to ``[batch..., M, K]`` / ``[batch...,
    K, N]``, multiplied by `nn.batch_matmul`, and reshaped and transposed to the output
    order. Repeated indices in one term (diagonals) are not supported."""
    names = list(node.input)
    if not 1 <= len(names) <= 2:
        raise Unsupported(f"Einsum of {len(names)} operands (irc converts one or two)")
    terms, output = _einsum_terms(ctx, node, [len(ctx.shape(n)) for n in names])
    if any(len(set(term)) != len(term) for term in terms):
        raise Unsupported("Einsum with an index repeated in one term (a diagonal)")
    constants = [a for a in (ctx.const(n) for n in names) if a is not None]
    if len(constants) == len(names):
        equation = str(ctx.attrs(node)["equation"])
        return [np.asarray(np.einsum(equation, *constants)).astype(constants[0].dtype)]
    shapes = [static_shape(ctx, n) for n in names]
    values = [_float_value(ctx, n) for n in names]
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes, strict=True):
        for symbol, size in zip(term, shape, strict=True):
            known = sizes.get(symbol)
            if known is not None and size != known and 1 not in (size, known):
                raise ctx.error(node, f"index '{symbol}' has sizes {known} and {size}")
            sizes[symbol] = size if known is None else max(known, size)
    if len(names) == 1:
        value, term = _sum_out(ctx, values[0], terms[0], set(output))
        return [_permuted(ctx, value, term, output)]
    (a, ta), (b, tb) = (
        _sum_out(ctx, v, t, set(output) | set(other))
        for v, t, other in ((values[0], terms[0], terms[1]), (values[1], terms[1], terms[0]))
    )
    batch = [s for s in output if s in ta and s in tb]
    contracted = [s for s in ta if s in tb and s not in output]
    left = [s for s in output if s in ta and s not in tb]
    right = [s for s in output if s in tb and s not in ta]
    a_shape = dict(zip(ta, shape_of(a), strict=True))
    b_shape = dict(zip(tb, shape_of(b), strict=True))
    if any(a_shape[s] != b_shape[s] for s in contracted):
        raise Unsupported("Einsum contracting an index that broadcasts")
    m = int(np.prod([sizes[s] for s in left], dtype=np.int64))
    k = int(np.prod([a_shape[s] for s in contracted], dtype=np.int64))
    n = int(np.prod([sizes[s] for s in right], dtype=np.int64))
    lhs = _permuted(ctx, a, ta, batch + left + contracted)
    lhs = reshape(ctx, lhs, [a_shape[s] for s in batch] + [m, k])
    rhs = _permuted(ctx, b, tb, batch + contracted + right)
    rhs = reshape(ctx, rhs, [b_shape[s] for s in batch] + [k, n])
    product = ctx.result(nn.BatchMatmulOp.make(lhs, rhs))
    product_term = batch + left + right
    product = reshape(ctx, product, [sizes[s] for s in product_term])
    return [_permuted(ctx, product, product_term, output)]
