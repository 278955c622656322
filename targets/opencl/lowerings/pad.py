"""pad: constant (any axes; the last axis alone as rows with `kernels=cpu`), reflect (mirror
without repeating the edge) and edge (repeat it), as numpy's; on the buffer's element type."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import get_float, get_ints
from irc.targets.opencl.lowerings.epilogue import prelude
from irc.targets.opencl.lowerings.helpers import (
    REAL,
    Emitted,
    KernelRun,
    _ctype,
    _decompose,
    _describe,
    _f,
    _kernel,
    _numel,
    _one,
    _shape,
    _strides,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program

EXTRA_PAD_MODES = ("reflect", "edge")
"""Modes `pad_mirror` lowers (the others pad with a constant)."""


def _pad(op: nn.PadOp, program: Program, desc: str) -> KernelRun:
    """reflect (mirror without repeating the edge) and edge (repeat it), as numpy's."""
    in_shape, out_shape = _shape(op.input), _shape(op.output)
    pads = get_ints(op.all_properties(), "pads")
    rank = len(in_shape)
    st = _strides(in_shape)
    lines = []
    for d in range(rank):
        size, before = in_shape[d], pads[2 * d]
        lines.append(f"    int i{d} = c{d} - {before};\n")
        if op.mode.data == "edge":
            lines.append(f"    i{d} = clamp(i{d}, 0, {size - 1});\n")
        else:
            lines.append(f"    if (i{d} < 0) i{d} = -i{d};\n")
            lines.append(f"    if (i{d} >= {size}) i{d} = {2 * (size - 1)} - i{d};\n")
    src = " + ".join(f"i{d} * {st[d]}" for d in range(rank)) or "0"
    ct = _ctype(op.output)
    body = (
        _decompose(out_shape, [f"c{d}" for d in range(rank)])
        + "".join(lines)
        + f"    y[gid] = x0[{src}];\n"
    )
    return program.kernel(_kernel(1, body, ct, ct), desc), [op.input], [_numel(out_shape)]


@lowering(nn.PadOp)
def pad_mirror(op: nn.PadOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """reflect and edge, or None."""
    if op.mode.data not in EXTRA_PAD_MODES:
        return None
    return [_pad(op, program, _describe(op))]


def _channel_pad(
    op: nn.PadOp, program: Program, desc: str, ct: str
) -> tuple[str, list[SSAValue | str], list[int]] | None:
    """A constant pad of the last axis only (BlazeFace's channel pads before a residual
    add) as one work-item per row: the row's values copied, then the fill, in `REAL4`
    vectors when every count divides by 4; None for other pads."""
    in_shape = _shape(op.input)
    props = op.all_properties()
    pads = list(get_ints(props, "pads"))
    rank = len(in_shape)
    if rank == 0 or any(pads[: 2 * (rank - 1)]) or op.mode.data != "constant":
        return None
    before, after = pads[2 * rank - 2], pads[2 * rank - 1]
    if before < 0 or after < 0:
        return None
    cin = in_shape[-1]
    cout = cin + before + after
    rows = _numel(in_shape[:-1])
    fill = get_float(props, "value")
    fill = 0.0 if fill is None else fill  # -0.0 is a fill value too
    if ct == REAL and cin % 4 == 0 and before % 4 == 0 and after % 4 == 0:
        vin, vout, vb = cin // 4, cout // 4, before // 4
        body = (
            "    __global const REAL4* xp = (__global const REAL4*)x0 + gid * " + str(vin) + ";\n"
            "    __global REAL4* yp = (__global REAL4*)y + gid * " + str(vout) + ";\n"
            f"    for (int j = 0; j < {vb}; ++j) yp[j] = (REAL4)(NARROW({_f(fill)}));\n"
            f"    for (int j = 0; j < {vin}; ++j) yp[{vb} + j] = xp[j];\n"
            f"    for (int j = {vb + vin}; j < {vout}; ++j) yp[j] = (REAL4)(NARROW({_f(fill)}));\n"
        )
        return program.kernel(_kernel(1, body, ct, ct), f"{desc} (rows x4)"), [op.input], [rows]
    fill_code = f"NARROW({_f(fill)})" if ct == REAL else f"({ct})({int(fill)})"
    body = (
        f"    __global const {ct}* xp = x0 + gid * {cin};\n"
        f"    __global {ct}* yp = y + gid * {cout};\n"
        f"    for (int j = 0; j < {before}; ++j) yp[j] = {fill_code};\n"
        f"    for (int j = 0; j < {cin}; ++j) yp[{before} + j] = xp[j];\n"
        f"    for (int j = {before + cin}; j < {cout}; ++j) yp[j] = {fill_code};\n"
    )
    return program.kernel(_kernel(1, body, ct, ct), f"{desc} (rows)"), [op.input], [rows]


@lowering(nn.PadOp)
def pad_rows(op: nn.PadOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """`kernels=cpu`: a constant pad of the last axis only, one row per work-item; or None."""
    if program.kernel_style != "cpu":
        return None
    desc = prelude(op, epilogue).desc
    ct = _ctype(op.results[0]) if op.results else REAL
    rows = _channel_pad(op, program, desc, ct)
    return _one(rows)


@lowering(nn.PadOp)
def pad(op: nn.PadOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """A constant pad, one work-item per output element."""
    pre = prelude(op, epilogue)
    desc, props, out_shape, n_out = pre.desc, pre.props, pre.out_shape, pre.n_out
    ct = _ctype(op.results[0]) if op.results else REAL
    in_shape = _shape(op.input)
    pads = list(get_ints(props, "pads"))
    rank = len(in_shape)
    st = _strides(in_shape)
    conds = []
    terms = []
    for d in range(rank):
        before = pads[2 * d]
        conds.append(f"(unsigned)(c{d} - {before}) < {in_shape[d]}u")
        terms.append(f"(c{d} - {before}) * {st[d]}")
    inside = " && ".join(conds) or "1"
    fill = get_float(props, "value")
    fill = 0.0 if fill is None else fill  # -0.0 is a fill value too
    # quantized storage pads with the value as an integer of its type (reference kernel)
    fill_code = _f(fill) if ct == REAL else f"({ct})({int(fill)})"
    body = (
        _decompose(out_shape, [f"c{d}" for d in range(rank)])
        + f"    y[gid] = ({inside}) ? x0[{' + '.join(terms) or '0'}] : {fill_code};\n"
    )
    return [(program.kernel(_kernel(1, body, ct, ct), desc), [op.input], [n_out])]
