"""Elementwise unary and binary ops, computed in `REAL` with their fused epilogue.

add/sub/mul/div/maximum/minimum read their operands with numpy broadcasting by output
coordinates (a per-channel vector at `gid % C`, without them) and take an epilogue; the
activation ops of `UNARY_OPS` and the other unary ops (abs, neg, exp, log, sqrt, rsqrt, erf,
gelu exact/tanh) are one work-item per element; pow, squared_difference and prelu broadcast
as numpy does.
"""

from __future__ import annotations

from xdsl.ir import Operation

from irc.dialects import nn
from irc.targets.opencl.lowerings.epilogue import (
    BINARY_EXPR,
    UNARY_OPS,
    _activations,
    compose,
    is_channel_vector,
    prelude,
    unary_expr,
)
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    _broadcasting,
    _decompose,
    _describe,
    _f,
    _kernel,
    _numel,
    _shape,
    _strides,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.lowerings.transformer import GELU_TAIL
from irc.targets.opencl.program import Program

SQRT1_2 = 0.7071067811865476


SQRT_2_OVER_PI = 0.7978845608028654


EXTRA_UNARY: dict[type[Operation], str] = {
    nn.AbsOp: "fabs(v)",
    nn.NegOp: "(-v)",
    nn.ExpOp: "exp(v)",
    nn.LogOp: "log(v)",
    nn.SqrtOp: "sqrt(v)",
    nn.RsqrtOp: "(1.0f / sqrt(v))",
    nn.ErfOp: "erf(v)",
}
"""Unary ops as expressions of the float `v` (gelu is built from its approximation)."""


EXTRA_BINARY: dict[type[Operation], str] = {
    # pow of a negative base is defined for integral exponents only (numpy gives NaN
    # otherwise, -inf included, where C99's pow gives +inf): pown keeps the sign that a
    # relaxed exp2(b * log2(a)) would lose.
    nn.PowOp: "(b == rint(b) && fabs(b) < 16777216.0f) ? pown(a, (int)b)"
    " : (a < 0.0f && b != rint(b) ? NAN : pow(a, b))",
    nn.SquaredDifferenceOp: "(a - b) * (a - b)",
    nn.PReluOp: "(a >= 0.0f ? a : a * b)",
}
"""Float binary ops as expressions of `a` and `b` (numpy broadcasting)."""


@lowering(*BINARY_EXPR)
def binary(op: Operation, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per output element, operands broadcast."""
    pre = prelude(op, epilogue)
    desc, act, out_shape, n_out = pre.desc, pre.act, pre.out_shape, pre.n_out
    a_v, b_v = op.operands
    index_code = ""
    idx = []
    rank = len(out_shape)
    for v in (a_v, b_v):
        s = _shape(v)
        if s == out_shape:
            idx.append("gid")
            continue
        if is_channel_vector(s, out_shape):  # a per-channel scale or shift: no coordinates
            idx.append(f"gid % {out_shape[-1]}")
            continue
        padded = (1,) * (rank - len(s)) + s
        st = _strides(padded)
        terms = []
        for d in range(rank):
            if padded[d] != 1:
                terms.append(f"c{d} * {st[d]}")
        idx.append(" + ".join(terms) or "0")
        index_code = "x"
    coords = _decompose(out_shape, [f"c{d}" for d in range(rank)]) if index_code else ""
    expr = BINARY_EXPR[type(op)]
    body = (
        coords
        + f"    const REAL a = x0[{idx[0]}]; const REAL b = x1[{idx[1]}];\n"
        + f"    REAL v = {expr};\n"
        + compose(act, real=True)
        + "    y[gid] = v;\n"
    )
    return [(program.kernel(_kernel(2, body), desc), [a_v, b_v], [n_out])]


@lowering(*UNARY_OPS)
def unary(op: Operation, epilogue: list[Operation], program: Program) -> Emitted | None:
    """The activation of `v` and the epilogue."""
    pre = prelude(op, epilogue)
    desc, act, n_out = pre.desc, pre.act, pre.n_out
    body = "    REAL v = x0[gid];\n" + compose([unary_expr(op), *act], real=True)
    body += "    y[gid] = v;\n"
    return [(program.kernel(_kernel(1, body), desc), [op.operands[0]], [n_out])]


def _unary(op: Operation, epilogue: list[Operation], program: Program, desc: str) -> Emitted:
    if isinstance(op, nn.GeluOp):
        if op.approximate.data == "tanh":
            # 0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u)): no cancellation where tanh(u) is
            # near -1 (PoCL's tanh(-inf) is -0.99999994, which made gelu(-1e30) -3e22, not -0)
            u2 = _f(2.0 * SQRT_2_OVER_PI)
            expr = f"v / (1.0f + exp(-{u2} * (v + 0.044715f * v * v * v)))"
        else:  # 1 + erf(z) == erfc(-z): no cancellation for v < 0 (as the reference)
            expr = f"0.5f * v * erfc(v * {_f(-SQRT1_2)})"
        expr = f"(v < {_f(GELU_TAIL)} ? v * 0.0f : {expr})"  # -0.0 (-inf: NaN), as the reference
    else:
        expr = EXTRA_UNARY[type(op)]
    body = "    REAL v = x0[gid];\n" + compose([expr, *_activations(op, epilogue)], real=True)
    body += "    y[gid] = v;\n"
    n = _numel(_shape(op.results[0]))
    return [(program.kernel(_kernel(1, body), desc), [op.operands[0]], [n])]


@lowering(*EXTRA_UNARY, nn.GeluOp)
def unary_extra(op: Operation, epilogue: list[Operation], program: Program) -> Emitted | None:
    """The other unary ops (gelu from its formula)."""
    return _unary(op, epilogue, program, _describe(op))


@lowering(*EXTRA_BINARY)
def binary_extra(op: Operation, epilogue: list[Operation], program: Program) -> Emitted | None:
    """pow, squared_difference and prelu with numpy broadcasting."""
    return [_broadcasting(op, list(op.operands), EXTRA_BINARY[type(op)], program, _describe(op))]
