"""Comparisons, logic and select on `i1` tensors: uchar buffers holding 0 or 1, as numpy's
bool. Float comparisons run on float copies of their operands (the NaN test reads float
bits); i32 / i64 / `i1` ones on the integers. select picks between float, i32, i64 or `i1`
tensors.
"""

from __future__ import annotations

from xdsl.ir import Operation

from irc.dialects import nn
from irc.targets.opencl.lowerings.helpers import (
    REAL,
    Emitted,
    KernelRun,
    _broadcasting,
    _ctype,
    _describe,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.lowerings.typed import typed_input
from irc.targets.opencl.program import Program

UNORDERED = "((as_uint(a) & 0x7fffffffu) > 0x7f800000u || (as_uint(b) & 0x7fffffffu) > 0x7f800000u)"
"""Whether `a` or `b` is NaN, from the bits: right even where a program is built with
`-cl-fast-relaxed-math` (`IRC_OPENCL_FAST_MATH=1`), which lets the compiler assume float
comparisons never see a NaN."""


COMPARE_EXPR = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


LOGICAL_EXPR: dict[type[Operation], str] = {
    nn.LogicalAndOp: "(a != 0) & (b != 0)",
    nn.LogicalOrOp: "(a != 0) | (b != 0)",
    nn.LogicalXorOp: "(a != 0) ^ (b != 0)",
}


BOOL_OPS: tuple[type[Operation], ...] = (
    nn.CompareOp,
    nn.LogicalAndOp,
    nn.LogicalOrOp,
    nn.LogicalXorOp,
    nn.LogicalNotOp,
    nn.SelectOp,
)
"""Ops on `i1` tensors: uchar buffers holding 0 or 1."""


def _boolean(op: Operation, program: Program, desc: str) -> KernelRun:
    inputs = [typed_input(v, program) for v in op.operands]
    if isinstance(op, nn.CompareOp):
        kind = op.kind.data
        expr = f"a {COMPARE_EXPR[kind]} b"
        ct = _ctype(op.lhs)
        if ct != REAL:  # integers and masks: no NaN
            name, _, size = _broadcasting(
                op, list(op.operands), expr, program, desc, ct, out_type="uchar"
            )
            return name, inputs, size
        expr = f"{UNORDERED} || {expr}" if kind == "ne" else f"!({UNORDERED}) && {expr}"
        name, _, size = _broadcasting(
            op, list(op.operands), expr, program, desc, out_type="uchar", local_type="float"
        )
        return name, inputs, size
    if isinstance(op, nn.LogicalNotOp):
        name, _, size = _broadcasting(op, [op.input], "a == 0", program, desc, "uchar", "uchar")
        return name, inputs, size
    if isinstance(op, nn.SelectOp):
        ct = _ctype(op.output)
        name, _, size = _broadcasting(
            op,
            [op.condition, op.on_true, op.on_false],
            "a != 0 ? b : c",
            program,
            desc,
            out_type=ct,
            in_types=["uchar", ct, ct],
        )
        return name, inputs, size
    name, _, size = _broadcasting(
        op, list(op.operands), LOGICAL_EXPR[type(op)], program, desc, "uchar", "uchar"
    )
    return name, inputs, size


@lowering(*BOOL_OPS)
def boolean(op: Operation, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per output element, operands broadcast."""
    return [_boolean(op, program, _describe(op))]
