"""`nn.reduce`: two loop nests (every output set to the kind's identity, then combined over
the input; `mean` divides afterwards), float or the integer form's sum / max / min."""

from __future__ import annotations

import numpy as np

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.targets.cpu.lowerings.helpers import (
    block,
    c_float,
    collapse,
    contiguous_strides,
    ctype,
    describe,
    dtype,
    integer_result,
    loop_nest,
    numel,
    shape,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    lowering,
)


def reduction(
    op: nn.ReduceOp, ct: str, init: dict[str, str], combine: dict[str, str], snippet: str
) -> Lowered:
    """`nn.reduce` as two loop nests on C type `ct`: every output set to `init[kind]`, then
    `combine[kind]` (a statement of `po[{o}]` and `px[{x}]`) over the input; `mean` divides by
    the reduced count afterwards (float only)."""
    dims = shape(op.input)
    rank = len(dims)
    axes = {a % rank for a in ints_of(op.axes)}
    kind = op.kind.data
    kept = [d for d in range(rank) if d not in axes]
    out_strides = [0] * rank
    for d, s in zip(kept, contiguous_strides([dims[d] for d in kept])):
        out_strides[d] = s
    cdims, (sx, so) = collapse(dims, [contiguous_strides(dims), out_strides])
    out_count = numel([dims[d] for d in kept])
    count = numel([dims[d] for d in axes])

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [f"const {ct} *restrict px = {em.ptr(op.input)};", f"{ct} *restrict po = {res[0]};"]
        body = loop_nest([out_count], [(0, [1])], lambda ix: [f"po[{ix[0]}] = {init[kind]};"])
        body += loop_nest(
            cdims, [(0, sx), (0, so)], lambda ix: [combine[kind].format(x=ix[0], o=ix[1])]
        )
        if kind == "mean":
            body += loop_nest(
                [out_count],
                [(0, [1])],
                lambda ix: [f"po[{ix[0]}] = po[{ix[0]}] / {c_float(count)};"],
            )
        return block(describe(op), decls, body)

    return Lowered(emit, snippets=(snippet,))


@lowering(nn.ReduceOp)
def integer_reduce(op: nn.ReduceOp, ctx: LoweringContext) -> Lowered | None:
    """The integer form's sum (wrapping i32), max and min."""
    if not integer_result(op):
        return None
    info = np.iinfo(dtype(op.input))
    init = {"sum": "0", "max": f"{int(info.min)}LL", "min": f"{int(info.max)}LL"}
    combine = {
        "sum": "po[{o}] = (int32_t)((uint32_t)po[{o}] + (uint32_t)px[{x}]);",
        "max": "po[{o}] = px[{x}] > po[{o}] ? px[{x}] : po[{o}];",
        "min": "po[{o}] = px[{x}] < po[{o}] ? px[{x}] : po[{o}];",
    }
    return reduction(op, ctype(op.input), init, combine, "quant")


@lowering(nn.ReduceOp)
def reduce(op: nn.ReduceOp, ctx: LoweringContext) -> Lowered | None:
    """A float sum, mean, prod, max or min."""
    return None if integer_result(op) else float_reduction(op)


def float_reduction(op: nn.ReduceOp) -> Lowered:
    """The float32 loop nests of a sum, mean, prod, max or min (`binary16` runs them on a
    float16 reduce's widened input)."""
    init = {"sum": "0.0f", "mean": "0.0f", "prod": "1.0f", "max": "(-INFINITY)"}
    init["min"] = "INFINITY"
    combine = {
        "sum": "po[{o}] += px[{x}];",
        "mean": "po[{o}] += px[{x}];",
        "prod": "po[{o}] *= px[{x}];",
        "max": "po[{o}] = irc_maxf(po[{o}], px[{x}]);",
        "min": "po[{o}] = irc_minf(po[{o}], px[{x}]);",
    }
    return reduction(op, "float", init, combine, "common")
