"""cast between float32, i32, i64 and `i1` tensors (the reference's semantics).

Float to integer truncates toward zero and saturates, NaN giving 0 (`convert_<int>_sat_rtz`,
the NaN tested on the bits so that `IRC_OPENCL_FAST_MATH` cannot drop it); i64's upper bound
is the reference's, the largest float64 below 2^63 (9223372036854774784); anything to `i1`
is `!= 0` (NaN is true, as numpy's); integers to float round to nearest; i64 to i32 keeps
the low 32 bits (numpy's wrap-around); `i1` to anything is 0 or 1.
"""

from __future__ import annotations

from xdsl.ir import Operation

from irc.dialects import nn
from irc.targets.opencl.lowerings.helpers import (
    REAL,
    Emitted,
    KernelRun,
    _ctype,
    _describe,
    _kernel,
    _numel,
    _shape,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.lowerings.typed import typed_input
from irc.targets.opencl.program import Program

NOT_NAN = "((as_uint(a) & 0x7fffffffu) <= 0x7f800000u)"
"""Whether the float `a` is a number (from its bits)."""

I64_HIGH = 9223372036854774784
"""The reference's saturation of float to i64 (np.nextafter(2.0**63, 0): 2^63 - 1 is no
float64)."""


def cast_expr(source: str, target: str) -> str:
    """The C expression converting `a` (C type `source`: `float` for a `REAL` buffer, after
    widening) to the C type `target` (`float` for a `REAL` result, before narrowing)."""
    if target == "uchar":
        if source == "float":
            return "(uchar)((as_uint(a) & 0x7fffffffu) != 0u)"
        return "(uchar)(a != 0)"
    if source == "float" and target == "long":
        return (
            f"(!{NOT_NAN} ? 0L : a >= 9223372036854775808.0f ? {I64_HIGH}L"
            " : convert_long_sat_rtz(a))"
        )
    if source == "float" and target == "int":
        return f"({NOT_NAN} ? convert_int_sat_rtz(a) : 0)"
    return f"({target})(a)"


def _cast(op: nn.CastOp, program: Program, desc: str) -> KernelRun:
    source, target = _ctype(op.input), _ctype(op.output)
    read = "WIDEN(x0[gid])" if source == REAL else "x0[gid]"
    source_c = "float" if source == REAL else source
    target_c = "float" if target == REAL else target
    value = cast_expr(source_c, target_c)
    store = f"NARROW({value})" if target == REAL else value
    body = f"    const {source_c} a = {read};\n    y[gid] = {store};\n"
    if source == target:
        body = "    y[gid] = x0[gid];\n"
    kernel = program.kernel(_kernel(1, body, source, target), desc)
    return kernel, [typed_input(op.input, program)], [_numel(_shape(op.output))]


@lowering(nn.CastOp)
def cast(op: nn.CastOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per element."""
    return [_cast(op, program, _describe(op))]
