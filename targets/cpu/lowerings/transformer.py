"""CPU kernels of what transformers need besides matrix products: the `nn` transformer ops
(layer_norm, silu, attention), gather, select, comparisons, logical ops and the casts of
`i64` / `i1` tensors.

`handles(op)` says whether this module lowers an op, `check_op(op)` whether it can (the CPU
target's `supports()` asks it through `support.check_op`); the lowerings are registered
per op type (`registry.lowering`; the casts through `casts.py`, which orders them):

* **layer_norm, silu, gelu, attention** call the snippet "transformer"
  (kernels/common/transformer.c): rows on the ISA's float vectors (`irc_vf`) with a
  vectorised exp (and erf for gelu), split across OpenMP threads when large. float32
  only (a quantized gelu stays a table, `tables.py`).
* **gather** (batch_dims 0, any C type, `i32` / `i64` indices) copies contiguous slices;
  an index outside the dimension is clamped into it (the reference raises; generated code
  must never read out of bounds), negative indices count from the end.
* **select, compare, logical_and / or / xor / not** are loop nests with numpy broadcasting
  (collapsed dimensions, literal bounds); `i1` tensors are `_Bool` bytes, as numpy's bools.
* **cast** with an `i64` or `i1` side: integer and float conversions as C's, float to
  integer truncating with the reference's saturation (NaN -> 0), anything to `i1` is
  ``!= 0``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dtypes import numpy_dtype
from irc.targets.base import Support
from irc.targets.cpu import csrc
from irc.targets.cpu.attention_layout import (
    ROLES,
    AttentionChain,
    operand_layout,
    output_layout,
    plain_chain,
)
from irc.targets.cpu.c_types import C_TYPES
from irc.targets.cpu.lowerings.helpers import (
    block,
    broadcast_strides,
    c_call,
    c_float,
    collapse,
    contiguous_strides,
    ctype,
    describe,
    loop_nest,
    numel,
    parallel,
    shape,
)
from irc.targets.cpu.lowerings.registry import Emitter, Lowered, LoweringContext, lowering

__all__ = ["OPS", "attention_chain", "check_op", "handles", "lower_cast"]

csrc.define_snippet("transformer_types", "#include <stdint.h>\n", ("common",))
csrc.define_snippet("transformer", csrc.kernel_file("common/transformer.c"), ("common",))

FLOAT_OPS: frozenset[type[Operation]] = frozenset({nn.LayerNormOp, nn.SiluOp, nn.AttentionOp})
"""Ops with a float32 kernel in the "transformer" snippet."""

LOGICAL_OPS: dict[type[Operation], str] = {
    nn.LogicalAndOp: "a && b",
    nn.LogicalOrOp: "a || b",
    nn.LogicalXorOp: "a != b",
}
"""Logical binary ops on `i1` and their C expression of `a` and `b`."""

COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
"""`nn.compare` kinds and their C operator (IEEE: NaN compares unequal to everything)."""

OPS: frozenset[type[Operation]] = FLOAT_OPS | frozenset(
    {nn.GatherOp, nn.SelectOp, nn.CompareOp, nn.LogicalNotOp, *LOGICAL_OPS}
)
"""Op classes this module lowers whatever their types (casts: see `handles`)."""

_WIDE = (np.dtype(np.int64), np.dtype(np.bool_))
"""Element types whose casts this module lowers."""


def _dtypes(op: Operation) -> list[np.dtype | None]:
    out: list[np.dtype | None] = []
    for t in (*op.operand_types, *op.result_types):
        try:
            out.append(numpy_dtype(t) if isinstance(t, TensorType) else None)
        except TypeError:
            out.append(None)
    return out


MAX_KEYS = 16384
"""Longest key sequence of an attention: a block of at least 8 rows of scores (512 KiB at
this length) lives on a thread's stack."""


def _keys(op: nn.AttentionOp) -> int:
    return op.value.type.get_shape()[-2]  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)


def handles(op: Operation) -> bool:
    """Whether this module lowers `op` (`check_op` says whether it can)."""
    if type(op) in OPS:
        return True
    if isinstance(op, nn.GeluOp):  # float32 only: a quantized gelu is a table (tables.py)
        return all(d == np.dtype(np.float32) for d in _dtypes(op))
    return isinstance(op, nn.CastOp) and any(d in _WIDE for d in _dtypes(op))


def check_op(op: Operation) -> Support:
    """Whether the CPU target runs `op` (one `handles` accepts), or the reason why not."""
    types = [*op.operand_types, *op.result_types]
    if any(not isinstance(t, TensorType) for t in types):
        return Support.no("op", f"cpu: '{op.name}' has non-tensor operands or results")
    for t in types:
        assert isinstance(t, TensorType)
        if any(d < 0 for d in t.get_shape()):
            return Support.no("dynamic", f"cpu: '{op.name}' has a dynamic shape ({t})")
    dtypes = _dtypes(op)
    for t, d in zip(types, dtypes, strict=True):
        if d is None or d not in C_TYPES:
            element = t.element_type  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)
            return Support.no("dtype", f"cpu: '{op.name}' on {element} tensors")
    if type(op) in FLOAT_OPS and not all(
        isinstance(t.element_type, Float32Type)  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)
        for t in types
    ):
        return Support.no("dtype", f"cpu: '{op.name}' on float32 tensors only")
    if isinstance(op, nn.AttentionOp) and _keys(op) > MAX_KEYS:
        return Support.no(
            "attribute", f"cpu: '{op.name}' over {_keys(op)} keys (at most {MAX_KEYS})"
        )
    if isinstance(op, nn.GatherOp):
        if op.batch_dims.value.data != 0:
            return Support.no("attribute", f"cpu: '{op.name}' with batch_dims")
        if dtypes[1] not in (np.dtype(np.int32), np.dtype(np.int64)):
            return Support.no("dtype", f"cpu: '{op.name}' with {dtypes[1]} indices")
    return Support.yes()


# ---- Lowering ------------------------------------------------------------------------------------


@lowering(nn.LayerNormOp)
def layer_norm(op: nn.LayerNormOp, ctx: LoweringContext) -> Lowered:
    """`irc_layer_norm` over the rows of the trailing axes."""
    dims = shape(op.input)
    axis = op.axis.value.data % len(dims)
    rows, n = numel(dims[:axis]), numel(dims[axis:])
    epsilon = c_float(op.epsilon.value.data)

    def emit(em: Emitter, res: list[str], _: list[str]) -> list[str]:
        bias = "NULL" if op.bias is None else em.ptr(op.bias)
        args = (em.ptr(op.input), em.ptr(op.scale), bias, res[0], rows, n, epsilon)
        return block(describe(op), [], [c_call("irc_layer_norm", *args)])

    return Lowered(emit, snippets=("transformer",))


@lowering(nn.SiluOp)
def silu(op: nn.SiluOp, ctx: LoweringContext) -> Lowered:
    """`irc_silu` over the elements."""
    count = numel(shape(op.input))

    def emit(em: Emitter, res: list[str], _: list[str]) -> list[str]:
        call = c_call("irc_silu", em.ptr(op.input), res[0], count)
        return block(describe(op), [], [call])

    return Lowered(emit, snippets=("transformer",))


@lowering(nn.GeluOp)
def gelu(op: nn.GeluOp, ctx: LoweringContext) -> Lowered | None:
    """`irc_gelu` (erf or tanh form) on float32 tensors (a quantized gelu: a table)."""
    if not handles(op):
        return None
    count = numel(shape(op.input))
    tanh_form = int(op.approximate.data == "tanh")

    def emit(em: Emitter, res: list[str], _: list[str]) -> list[str]:
        call = c_call("irc_gelu", em.ptr(op.input), res[0], count, tanh_form)
        return block(describe(op), [], [call])

    return Lowered(emit, snippets=("transformer",))


@lowering(nn.AttentionOp)
def attention(op: nn.AttentionOp, ctx: LoweringContext) -> Lowered:
    """`irc_attention`: scores, mask, softmax and the value product per batch."""
    return attention_chain(plain_chain(op))


def _batch_offsets(batch: Sequence[int], strides: Sequence[int]) -> list[int]:
    """Element offset of each index of the `batch` shape (row-major order) at `strides`."""
    offsets = [0]
    for size, stride in zip(batch, strides, strict=True):
        offsets = [o + i * stride for o in offsets for i in range(size)]
    return offsets


def _longs(name: str, values: Sequence[int]) -> str:
    return f"static const long {name}[] = {{{', '.join(map(str, values)) or '0'}}};"


def attention_chain(chain: AttentionChain) -> Lowered:
    """`irc_attention` of the chain's attention, each operand read where `operand_layout`
    puts it (a folded transpose's input, in place) and the result written where
    `output_layout` puts it (a folded merging transpose's result): offsets per batch and
    row strides (`irc_att_layout`)."""
    op = chain.attention
    q, v = shape(op.query), shape(op.value)
    batch = q[:-2]
    m, d = q[-2], q[-1]
    n, e = v[-2], v[-1]
    scores = (*batch, m, n)
    offsets, msm, msn = [0], 0, 0
    if op.mask is not None:
        strides = broadcast_strides(shape(op.mask), scores)
        msm, msn = strides[-2], strides[-1]
        offsets = _batch_offsets(batch, strides[:-2])
    count = numel(batch)
    layouts = {role: operand_layout(chain, role) for role in ROLES}
    qs, ks, vs = (layouts[r].strides for r in ROLES)
    out = output_layout(chain)
    # keys [.., N, D] (d along the last axis) or [.., D, N] with key_transposed
    sd, sn = (ks[-2], ks[-1]) if op.key_transposed.value.data else (ks[-1], ks[-2])
    k_t, k_stride = (1, sn) if sd == 1 else (0, sd)
    batch_offsets = {
        "qo": _batch_offsets(batch, qs[:-2]),
        "ko": _batch_offsets(batch, ks[:-2]),
        "vo": _batch_offsets(batch, vs[:-2]),
        "oo": _batch_offsets(batch, out[:-2]),
    }
    lay = f"{{qo, ko, vo, oo, {qs[-2]}, {k_stride}, {vs[-2]}, {out[-2]}, {k_t}}}"
    reads = tuple(layouts[r].source for r in ROLES if r in chain.inputs)

    def emit(em: Emitter, res: list[str], _: list[str]) -> list[str]:
        if not numel(shape(op.output)):
            return block(describe(op), [], [])
        mask = "NULL" if op.mask is None else em.ptr(op.mask)
        decls = [_longs("mo", offsets if op.mask is not None else [0])]
        decls += [_longs(name, values) for name, values in batch_offsets.items()]
        decls.append(f"static const irc_att_layout lay = {lay};")
        call = c_call(
            "irc_attention",
            *(em.ptr(layouts["query"].source), em.ptr(layouts["key"].source)),
            *(em.ptr(layouts["value"].source), mask, res[0]),
            *(count, m, n, d, e, c_float(op.scale.value.data), "mo", msm, msn, "&lay"),
        )
        return block(describe(op), decls, [call])

    return Lowered(emit, snippets=("transformer",), reads=reads)


@lowering(nn.GatherOp)
def gather(op: nn.GatherOp, ctx: LoweringContext) -> Lowered:
    """Contiguous slice copies, indices clamped into the dimension."""
    dims = shape(op.input)
    axis = op.axis.value.data % len(dims)
    outer, size, inner = numel(dims[:axis]), dims[axis], numel(dims[axis + 1 :])
    count = numel(shape(op.indices))
    ct, it = ctype(op.input), ctype(op.indices)

    def emit(em: Emitter, res: list[str], _: list[str]) -> list[str]:
        decls = [
            f"const {ct} *restrict px = {em.ptr(op.input)};",
            f"const {it} *restrict pi = {em.ptr(op.indices)};",
            f"{ct} *restrict po = {res[0]};",
        ]
        body = [
            f"for (long o = 0; o < {outer}; ++o)",
            f"  for (long j = 0; j < {count}; ++j) {{",
            "    long k = (long)pi[j];",
            f"    k = k < 0 ? k + {size} : k;",
            f"    k = k < 0 ? 0 : (k >= {size} ? {size - 1} : k);",
            f"    memcpy(po + (o * {count} + j) * {inner}, px + (o * {size} + k) * {inner},"
            f" {inner} * sizeof({ct}));",
            "  }",
        ]
        if not (outer and count and inner):
            body = []
        return block(describe(op), decls, body)

    return Lowered(emit, snippets=("transformer_types",))


_INT_RANGES = {
    "int32_t": ("(-2147483648.0f)", "2147483648.0f", "INT32_MIN", "INT32_MAX"),
    "int64_t": ("(-9223372036854775808.0f)", "9223372036854775808.0f", "INT64_MIN", "INT64_MAX"),
}
"""(lowest float, first float above the range, min, max) of the saturating conversions."""


def _cast_expr(source: str, target: str) -> str:
    """A C expression of `a` (C type `source`) converted to C type `target`."""
    if target == "_Bool":
        return "a != 0"
    if source == "float" and target in _INT_RANGES:
        low, above, lo, hi = _INT_RANGES[target]
        return f"a != a ? 0 : (a <= {low} ? {lo} : (a >= {above} ? {hi} : ({target})a))"
    return f"({target})a"


def lower_cast(op: nn.CastOp) -> Lowered:
    """A cast with an `i64` or `i1` side (`handles`; registered by `casts.py`)."""
    source, target = ctype(op.input), ctype(op.output)
    expr = _cast_expr(source, target)
    if source == "float" and target not in (*_INT_RANGES, "_Bool", "float"):
        expr = f"({target})(a != a ? 0.0f : a)"  # narrow integers: C's conversion
    count = numel(shape(op.output))

    def emit(em: Emitter, res: list[str], _: list[str]) -> list[str]:
        decls = [
            f"const {source} *restrict pa = {em.ptr(op.input)};",
            f"{target} *restrict po = {res[0]};",
        ]
        body = loop_nest(
            [count],
            [(0, [1])],
            lambda ix: [f"const {source} a = pa[{ix[0]}];", f"po[{ix[0]}] = {expr};"],
        )
        return block(describe(op), decls, body)

    return Lowered(emit, snippets=("transformer_types",))


def _elementwise(ctx: LoweringContext, op: Operation, expr: str) -> Lowered:
    """`po[i] = expr` of operands `a`, `b`, `c` read with numpy broadcasting; a splat
    constant operand is a literal of its C type."""
    out = shape(op.results[0])
    operands: Sequence[SSAValue] = op.operands
    splats = [_splat_literal(ctx, v) for v in operands]
    strides = [contiguous_strides(out)] + [
        broadcast_strides(() if s is not None else shape(v), out)
        for v, s in zip(operands, splats, strict=True)
    ]
    dims, collapsed = collapse(out, strides)
    names = "abc"

    def emit(em: Emitter, res: list[str], _: list[str]) -> list[str]:
        decls = [f"{ctype(op.results[0])} *restrict po = {res[0]};"]
        loads = []
        for k, (value, splat) in enumerate(zip(operands, splats, strict=True)):
            ct = ctype(value)
            if splat is not None:
                decls.insert(0, f"const {ct} {names[k]} = {splat};")
            else:
                decls.insert(0, f"const {ct} *restrict p{names[k]} = {em.ptr(value)};")
                loads.append((k, ct))

        def body_of(ix: list[str]) -> list[str]:
            lines = [f"const {ct} {names[k]} = p{names[k]}[{ix[k + 1]}];" for k, ct in loads]
            return [*lines, f"po[{ix[0]}] = {expr};"]

        body = loop_nest(dims, [(0, s) for s in collapsed], body_of)
        return block(describe(op), decls, parallel(dims, body))

    return Lowered(emit, snippets=("transformer_types",))


def _splat_literal(ctx: LoweringContext, value: SSAValue) -> str | None:
    """A C literal of a constant operand whose elements are all equal, else None."""
    array = ctx.codegen.constant_array(ctx.codegen.base(value))
    if array is None or array.size == 0:
        return None
    first = array.reshape(-1)[0]
    if not np.all(array == first) and not (np.isnan(first) and np.all(np.isnan(array))):
        return None
    if array.dtype == np.bool_:
        return "1" if first else "0"
    if array.dtype.kind == "f":
        return c_float(float(first))
    if array.dtype == np.int64:
        return f"{int(first)}LL"
    return str(int(first))


@lowering(nn.LogicalNotOp)
def logical_not(op: nn.LogicalNotOp, ctx: LoweringContext) -> Lowered:
    """`!a` on `i1`."""
    return _elementwise(ctx, op, "!a")


@lowering(nn.CompareOp)
def compare(op: nn.CompareOp, ctx: LoweringContext) -> Lowered:
    """`a <op> b` with numpy broadcasting, an `i1` result."""
    return _elementwise(ctx, op, f"a {COMPARISONS[op.kind.data]} b")


@lowering(nn.SelectOp)
def select(op: nn.SelectOp, ctx: LoweringContext) -> Lowered:
    """`a ? b : c` with numpy broadcasting."""
    return _elementwise(ctx, op, "a ? b : c")


@lowering(*LOGICAL_OPS)
def logical(
    op: nn.LogicalAndOp | nn.LogicalOrOp | nn.LogicalXorOp, ctx: LoweringContext
) -> Lowered:
    """and / or / xor on `i1` (`LOGICAL_OPS`)."""
    return _elementwise(ctx, op, LOGICAL_OPS[type(op)])
