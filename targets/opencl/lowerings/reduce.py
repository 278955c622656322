"""reduce over `axes` (mean, sum, max, min, prod): one work-item per kept element, float
accumulation in order."""

from __future__ import annotations

from xdsl.ir import Operation

from irc.dialects import nn
from irc.dialects.nn.base import get_ints, get_str
from irc.targets.opencl.lowerings.epilogue import prelude
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    KernelRun,
    _decompose,
    _describe,
    _f,
    _kernel,
    _numel,
    _shape,
    _strides,
    nan_max_update,
    nan_min_update,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program

EXTRA_REDUCE_KINDS = ("prod",)
"""Kinds `reduce_product` lowers (the generic kernel has the others)."""


def _reduce(op: nn.ReduceOp, program: Program, desc: str) -> KernelRun:
    """prod over `axes`: one work-item per kept element, float32 accumulation in order."""
    in_shape = _shape(op.input)
    rank = len(in_shape)
    axes = sorted(a % rank for a in get_ints(op.all_properties(), "axes"))
    kept = [d for d in range(rank) if d not in axes]
    st = _strides(in_shape)
    coords = _decompose(tuple(in_shape[d] for d in kept), [f"c{d}" for d in kept]) if kept else ""
    base = " + ".join(f"c{d} * {st[d]}" for d in kept) or "0"
    loops = "".join(
        "    " * (depth + 1) + f"for (int r{d} = 0; r{d} < {in_shape[d]}; ++r{d})\n"
        for depth, d in enumerate(axes)
    )
    off = " + ".join(f"r{d} * {st[d]}" for d in axes) or "0"
    body = (
        coords
        + f"    const int base = {base};\n    float acc = 1.0f;\n"
        + loops
        + "    " * (len(axes) + 1)
        + f"acc *= x0[base + {off}];\n"
        + "    y[gid] = acc;\n"
    )
    return program.kernel(_kernel(1, body), desc), [op.input], [_numel(_shape(op.output))]


@lowering(nn.ReduceOp)
def reduce_product(op: nn.ReduceOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """prod, or None."""
    if op.kind.data not in EXTRA_REDUCE_KINDS:
        return None
    return [_reduce(op, program, _describe(op))]


@lowering(nn.ReduceOp)
def reduce(op: nn.ReduceOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """mean, sum, max and min."""
    pre = prelude(op, epilogue)
    desc, props, n_out = pre.desc, pre.props, pre.n_out
    in_shape = _shape(op.input)
    rank = len(in_shape)
    axes = sorted(a % rank for a in get_ints(props, "axes")) if rank else []
    kept = [d for d in range(rank) if d not in axes]
    st = _strides(in_shape)
    kind = get_str(props, "kind")
    init = {"mean": "0.0f", "sum": "0.0f", "max": "-INFINITY", "min": "INFINITY"}
    upd = {"mean": "acc += xv;", "sum": "acc += xv;", "max": f"acc = {nan_max_update()};"}
    upd["min"] = f"acc = {nan_min_update()};"
    kept_shape = tuple(in_shape[d] for d in kept)
    coords = _decompose(kept_shape, [f"c{d}" for d in kept]) if kept else ""
    base = " + ".join(f"c{d} * {st[d]}" for d in kept) or "0"
    loops = ""
    for depth, d in enumerate(axes):
        loops += "    " * (depth + 1) + f"for (int r{d} = 0; r{d} < {in_shape[d]}; ++r{d})\n"
    off = " + ".join(f"r{d} * {st[d]}" for d in axes) or "0"
    count = _numel(tuple(in_shape[d] for d in axes))
    body = (
        coords
        + f"    const int base = {base};\n    float acc = {init[kind]};\n"
        + loops
        + "    " * (len(axes) + 1)
        + f"{{ const float xv = x0[base + {off}]; {upd[kind]} }}\n"
        + (f"    float v = acc / {_f(count)};\n" if kind == "mean" else "    float v = acc;\n")
        + "    y[gid] = v;\n"
    )
    return [(program.kernel(_kernel(1, body), desc), [op.input], [n_out])]
