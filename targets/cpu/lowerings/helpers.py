"""Shared pieces of the CPU target's lowerings: shapes and C types of values, C literals and
calls, collapsed loop nests, statement blocks, activations, quantization parameters.

Every lowering builds its C from these; none of them reads model text into the source (C
names are generated, comments hold dialect op names and shapes only: `describe`, `block`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import cpu
from irc.dialects.quant import quantized_element
from irc.dtypes import numpy_dtype
from irc.sanitize import c_comment
from irc.targets.cpu import csrc
from irc.targets.cpu.c_types import C_TYPES
from irc.targets.cpu.lowerings.registry import Lines, LoweringError


def shape(value: SSAValue) -> tuple[int, ...]:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def numel(dims: Sequence[int]) -> int:
    return math.prod(dims)


def dtype(value: SSAValue) -> np.dtype:
    """The numpy dtype holding `value`'s elements (quantized: storage integers)."""
    return numpy_dtype(value.type)


def ctype(value: SSAValue) -> str:
    """The C type of `value`'s elements (`float`, `int8_t`, ...)."""
    return C_TYPES[dtype(value)]


def units(value: SSAValue) -> int:
    """Workspace units (4 bytes, a float) that `value` takes."""
    return -(-numel(shape(value)) * dtype(value).itemsize // 4)


def c_float(value: float) -> str:
    """A C float literal for `value` rounded to float32 (exact: 9 significant digits)."""
    f = np.float32(value)
    if np.isnan(f):
        return "NAN"
    if np.isinf(f):
        return "INFINITY" if f > 0 else "(-INFINITY)"
    text = f"{float(f):.9g}"
    if not any(ch in text for ch in ".e"):
        text += ".0"
    text += "f"
    return f"({text})" if text.startswith("-") else text


def c_call(function: str, *args: object) -> str:
    """`function(a, b, ...);` with every argument formatted by `str`."""
    return f"{function}({', '.join(map(str, args))});"


def contiguous_strides(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * dims[d + 1]
    return strides


def broadcast_strides(dims: Sequence[int], out: Sequence[int]) -> list[int]:
    """Strides of a tensor of shape `dims` read at the indices of its broadcast `out` shape."""
    own = contiguous_strides(dims)
    offset = len(out) - len(dims)
    return [0 if d < offset or dims[d - offset] == 1 else own[d - offset] for d in range(len(out))]


def collapse(
    dims: Sequence[int], strides: Sequence[Sequence[int]]
) -> tuple[list[int], list[list[int]]]:
    """Drop unit dimensions and merge neighbours that every array walks contiguously."""
    keep = [d for d in range(len(dims)) if dims[d] != 1]
    out_dims: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d in reversed(keep):
        if out_dims and all(s[d] == st[0] * out_dims[0] for s, st in zip(strides, out_strides)):
            out_dims[0] *= dims[d]
            continue
        out_dims.insert(0, dims[d])
        for s, st in zip(strides, out_strides):
            st.insert(0, s[d])
    return out_dims, out_strides


def index_expr(offset: int, strides: Sequence[int]) -> str:
    terms = []
    for k, s in enumerate(strides):
        if s == 1:
            terms.append(f"i{k}")
        elif s != 0:
            terms.append(f"i{k} * {s}")
    if offset or not terms:
        terms.append(str(offset))
    return " + ".join(terms)


PAR_ELEMENTS = 1 << 15
"""Elements from which a loop nest is split across threads (~5 us of one core)."""

PARFOR = "IRC_PARFOR(schedule(static))"
"""The line `parallel` puts before a loop nest that may be split: codegen outlines the
op's block into a task of the library's pool (`outline`), else an OpenMP loop."""


def parallel(dims: Sequence[int], lines: Lines) -> Lines:
    """`lines` (a loop nest over `dims`, iterations of its outer loop independent) marked to
    be split across threads when it is large enough: the pool runs it when it is its op's
    only statement after declarations (`outline`), OpenMP otherwise."""
    if numel(dims) < PAR_ELEMENTS or not dims or dims[0] < 2:
        return lines
    return [f"{PARFOR} /* work: {numel(dims)} */", *lines]


def loop_nest(
    dims: Sequence[int],
    arrays: Sequence[tuple[int, Sequence[int]]],
    body: Callable[[list[str]], Lines],
) -> Lines:
    """Nested loops over `dims`; `body` gets one index expression per (offset, strides)."""
    if numel(dims) == 0:
        return []
    lines: Lines = [
        "  " * k + f"for (long i{k} = 0; i{k} < {d}; ++i{k})" for k, d in enumerate(dims)
    ]
    indent = "  " * len(dims)
    inner = body([index_expr(offset, st) for offset, st in arrays])
    if len(inner) == 1 or not lines:
        lines.extend(indent + line for line in inner)
    else:
        lines[-1] += " {"
        lines.extend(indent + line for line in inner)
        lines.append("  " * (len(dims) - 1) + "}")
    return lines


def block(comment: str, decls: Lines, body: Lines) -> Lines:
    """A `{ ... }` statement block with a comment line (comments never contain model text)."""
    head = f"/* {c_comment(comment)} */"
    return [head, "{", *("  " + d for d in decls), *("  " + b for b in body), "}"]


def describe(op: Operation) -> str:
    """`nn.add 1x8x8x4, 4 -> 1x8x8x4`: the op's dialect name and its shapes only."""

    def fmt(v: SSAValue) -> str:
        dims = shape(v)
        return "x".join(map(str, dims)) if dims else "scalar"

    ins = ", ".join(fmt(v) for v in op.operands)
    outs = ", ".join(fmt(v) for v in op.results)
    return f"{op.name} {ins} -> {outs}" if ins else f"{op.name} -> {outs}"


def transpose_lines(src: str, dst: str, dims: Sequence[int], perm: Sequence[int]) -> Lines:
    """dst = transpose(src of shape `dims`, perm) as a collapsed loop nest."""
    out_dims = [dims[p] for p in perm]
    in_strides = contiguous_strides(dims)
    cdims, (so, si) = collapse(
        out_dims, [contiguous_strides(out_dims), [in_strides[p] for p in perm]]
    )
    return loop_nest(cdims, [(0, so), (0, si)], lambda ix: [f"{dst}[{ix[0]}] = {src}[{ix[1]}];"])


def activation_code(op: Operation) -> int:
    """The kernel library's code of `op`'s fused activation (0: none)."""
    attr = op.properties.get("activation")
    name = "none" if attr is None else attr.data  # type: ignore[attr-defined]  # an nn op's `activation` property is an ActivationAttr
    if name not in csrc.ACTIVATION_CODES:
        raise LoweringError(op, f"activation '{name}' is not supported")
    return csrc.ACTIVATION_CODES[name]


def zero_point(value: SSAValue) -> int:
    """The (first) zero point of a quantized value, 0 for any other."""
    qtype = quantized_element(value.type)
    return 0 if qtype is None else int(qtype.zero_point_values[0])


def value_range(value: SSAValue) -> tuple[int, int]:
    """The stored range of a quantized value, else its integer type's range."""
    qtype = quantized_element(value.type)
    if qtype is not None:
        return qtype.storage_range
    info = np.iinfo(dtype(value))
    return int(info.min), int(info.max)


def integer_result(op: Operation) -> bool:
    """Whether `op`'s (first) result holds integers: the integer form of `lower-quantized`
    (or a quantized op's storage), which the integer variants of a lowering take."""
    return ctype(op.results[0]) != "float"


def fusion_inputs(fusion: cpu.FusionOp) -> tuple[SSAValue, ...]:
    """The values the ops of a fusion read from above it, in first-use order."""
    members = fusion.members
    inside = set(members)
    found: dict[SSAValue, None] = {}
    for op in members:
        for value in op.operands:
            if value.owner not in inside:
                found[value] = None
    return tuple(found)


def wrap_activation(expr: str, code: int) -> str:
    """`expr` through the fused activation of library code `code` (none: as it is)."""
    return expr if code == 0 else f"irc_act({expr}, {code})"


def copy_rows(
    dst: str,
    dst_offset: int,
    dst_row: int,
    src: str,
    src_offset: int,
    src_row: int,
    rows: int,
    count: int,
    ct: str = "float",
) -> Lines:
    """`rows` copies of `count` elements of C type `ct` between row-strided buffers."""
    if rows == 1 or (dst_row == count and src_row == count):
        return [
            f"memcpy({dst} + {dst_offset}, {src} + {src_offset}, sizeof({ct}) * {rows * count});"
        ]
    return [
        f"for (long r = 0; r < {rows}; ++r)",
        f"  memcpy({dst} + {dst_offset} + r * {dst_row}, {src} + {src_offset} + r * {src_row}, "
        f"sizeof({ct}) * {count});",
    ]
