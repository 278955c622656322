"""Elementwise ops: float binary ops (numpy broadcasting, a splat constant operand as a
literal, the fused activation), float unary ops, and the integer form's i32 binary ops
(wrapping, as numpy's) and unary ops (relu, neg, abs, clip; widening casts: `casts.py`).

Each loop nest has its dimensions collapsed where every array walks them contiguously, so
the innermost loop is long and gcc vectorises it; loops split across the threads when
large (`helpers.parallel`: tasks of the library's pool, `outline`).
"""

from __future__ import annotations

from irc.dialects import nn
from irc.targets.cpu.lowerings.conv_transpose import folded_zero_point
from irc.targets.cpu.lowerings.helpers import (
    activation_code,
    block,
    broadcast_strides,
    c_float,
    collapse,
    contiguous_strides,
    ctype,
    describe,
    integer_result,
    loop_nest,
    numel,
    parallel,
    shape,
    wrap_activation,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
    alias,
    lowering,
)

BINARY_OPS: dict[type[nn.NNOp], str] = {
    nn.AddOp: "a + b",
    nn.SubOp: "a - b",
    nn.MulOp: "a * b",
    nn.DivOp: "a / b",
    nn.MaximumOp: "irc_maxf(a, b)",
    nn.MinimumOp: "irc_minf(a, b)",
    # a negative base (-inf included) with a non-integral exponent is NaN everywhere
    # (docs/semantics.md): powf gives +inf for (-inf)^0.5, its vector variant NaN
    nn.PowOp: "((a < 0.0f && b != rintf(b)) ? NAN : powf(a, b))",
    nn.SquaredDifferenceOp: "(a - b) * (a - b)",
    nn.PReluOp: "a >= 0.0f ? a : a * b",
}
"""Elementwise binary ops and their C expression of `a` and `b` (float)."""

INTEGER_BINARY_OPS: dict[type[nn.NNOp], str] = {
    nn.AddOp: "(int32_t)((uint32_t)a + (uint32_t)b)",
    nn.SubOp: "(int32_t)((uint32_t)a - (uint32_t)b)",
    nn.MulOp: "(int32_t)((uint32_t)a * (uint32_t)b)",
    nn.MaximumOp: "(a > b ? a : b)",
    nn.MinimumOp: "(a < b ? a : b)",
}
"""i32 elementwise ops of the integer form and their C expression (wrapping, as numpy's)."""


UNARY_OPS: frozenset[type[nn.NNOp]] = frozenset(
    {
        nn.ReluOp,
        nn.Relu6Op,
        nn.ClipOp,
        nn.SigmoidOp,
        nn.TanhOp,
        nn.HardSwishOp,
        nn.LeakyReluOp,
        nn.HardSigmoidOp,
        nn.ExpOp,
        nn.LogOp,
        nn.SqrtOp,
        nn.RsqrtOp,
        nn.AbsOp,
        nn.NegOp,
        nn.ErfOp,
    }
)
"""Float unary ops with a C expression (`unary_expr`; the float32 gelu runs the transformer
kernel: `transformer.py`)."""


def unary_expr(op: nn.NNOp) -> str:
    """The C expression of `x` of a float unary op (one of `UNARY_OPS`)."""
    match op:
        case nn.ReluOp():
            return "x < 0.0f ? 0.0f : x"
        case nn.Relu6Op():
            return "irc_clampf(x, 0.0f, 6.0f)"
        case nn.ClipOp():
            expr = "x"
            if op.min is not None:
                low = c_float(op.min.value.data)
                expr = f"({expr} < {low} ? {low} : {expr})"  # -0.0 and NaN kept
            if op.max is not None:
                high = c_float(op.max.value.data)
                expr = f"({expr} > {high} ? {high} : {expr})"
            return expr
        case nn.SigmoidOp():
            return "1.0f / (1.0f + expf(-x))"
        case nn.TanhOp():
            return "tanhf(x)"
        case nn.HardSwishOp():
            return "x * (irc_clampf(x + 3.0f, 0.0f, 6.0f) / 6.0f)"
        case nn.LeakyReluOp():
            return f"x >= 0.0f ? x : x * {c_float(op.alpha.value.data)}"
        case nn.HardSigmoidOp():
            alpha, beta = c_float(op.alpha.value.data), c_float(op.beta.value.data)
            return f"irc_clampf(x * {alpha} + {beta}, 0.0f, 1.0f)"
        case nn.ExpOp():
            return "expf(x)"
        case nn.LogOp():
            return "logf(x)"
        case nn.SqrtOp():
            return "sqrtf(x)"
        case nn.RsqrtOp():
            return "1.0f / sqrtf(x)"
        case nn.AbsOp():
            return "fabsf(x)"
        case nn.NegOp():
            return "-x"
        case nn.ErfOp():
            return "erff(x)"
    raise LoweringError(op, f"no kernel for '{op.name}'")


# ---- The integer form ----


@lowering(nn.SubOp)
def zero_point_folded(op: nn.SubOp, ctx: LoweringContext) -> Lowered | None:
    """An input's zero-point subtraction that its integer conv2d_transpose does itself
    (`conv_transpose.folded_zero_point`): the sub is an alias of the narrow input."""
    return alias() if folded_zero_point(op) is not None else None


@lowering(*INTEGER_BINARY_OPS)
def integer_binary(op: nn.ElementwiseBinaryOp, ctx: LoweringContext) -> Lowered | None:
    """i32 add/sub/mul/max/min with broadcasting; an operand may be the narrower input of a
    widening cast folded in here (`casts.widening_cast_into_binary`)."""
    if not integer_result(op):
        return None
    out = shape(op.output)
    expr = INTEGER_BINARY_OPS[type(op)]
    dims, (so, sa, sb) = collapse(
        out,
        [
            contiguous_strides(out),
            broadcast_strides(shape(op.lhs), out),
            broadcast_strides(shape(op.rhs), out),
        ],
    )

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        # An operand may alias the narrower input of a widening cast folded in here.
        ta, tb = (ctype(ctx.codegen.base(v)) for v in (op.lhs, op.rhs))
        decls = [
            f"const {ta} *restrict pa = {em.ptr(op.lhs)};",
            f"const {tb} *restrict pb = {em.ptr(op.rhs)};",
            f"int32_t *restrict po = {res[0]};",
        ]

        def body_of(ix: list[str]) -> Lines:
            return [
                f"const int32_t a = pa[{ix[1]}];",
                f"const int32_t b = pb[{ix[2]}];",
                f"po[{ix[0]}] = {expr};",
            ]

        body = loop_nest(dims, [(0, so), (0, sa), (0, sb)], body_of)
        return block(describe(op), decls, parallel(dims, body))

    return Lowered(emit, snippets=("quant",))


def integer_unary(op: nn.NNOp) -> Lowered:
    """relu, neg, abs, clip (integral bounds) and casts on integers, converted to the
    result's C type."""
    count = numel(shape(op.results[0]))
    ct_in, ct_out = ctype(op.operands[0]), ctype(op.results[0])
    expr = {
        nn.ReluOp: f"({ct_out})(x < 0 ? 0 : x)",
        nn.NegOp: f"({ct_out})(-x)",
        nn.AbsOp: f"({ct_out})(x < 0 ? -x : x)",
    }.get(type(op), f"({ct_out})x")
    if isinstance(op, nn.ClipOp):
        if op.min is not None:
            low = int(op.min.value.data)
            expr = f"(x < {low} ? {low} : {expr})"
        if op.max is not None:
            high = int(op.max.value.data)
            expr = f"(x > {high} ? {high} : {expr})"

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            f"const {ct_in} *restrict px = {em.ptr(op.operands[0])};",
            f"{ct_out} *restrict po = {res[0]};",
        ]
        body = loop_nest(
            [count],
            [(0, [1])],
            lambda ix: [f"const int64_t x = px[{ix[0]}];", f"po[{ix[0]}] = {expr};"],
        )
        return block(describe(op), decls, parallel([count], body))

    return Lowered(emit, snippets=("quant",))


@lowering(nn.ClipOp, nn.ReluOp, nn.NegOp, nn.AbsOp)
def integer_unary_op(
    op: nn.ClipOp | nn.ReluOp | nn.NegOp | nn.AbsOp, ctx: LoweringContext
) -> Lowered | None:
    """The integer form's unary ops (`integer_unary`)."""
    return integer_unary(op) if integer_result(op) else None


# ---- Float ----


@lowering(*BINARY_OPS)
def binary(op: nn.ElementwiseBinaryOp, ctx: LoweringContext) -> Lowered | None:
    """A float binary op; a splat constant operand (one value, any shape) is a literal."""
    if integer_result(op):
        return None
    expr = BINARY_OPS[type(op)]
    out = shape(op.output)
    splats = [ctx.codegen.constant_splat(v) for v in (op.lhs, op.rhs)]
    dims, (so, sa, sb) = collapse(
        out,
        [
            contiguous_strides(out),
            broadcast_strides(() if splats[0] is not None else shape(op.lhs), out),
            broadcast_strides(() if splats[1] is not None else shape(op.rhs), out),
        ],
    )
    act = activation_code(op)
    full = wrap_activation(f"({expr})", act)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [f"float *restrict po = {res[0]};"]
        loads = []
        for name, value, splat, index in (
            ("a", op.lhs, splats[0], 1),
            ("b", op.rhs, splats[1], 2),
        ):
            if splat is not None:
                decls.insert(0, f"const float {name} = {c_float(splat)};")
            else:
                decls.insert(0, f"const float *restrict p{name} = {em.ptr(value)};")
                loads.append((name, index))

        def body_of(ix: list[str]) -> Lines:
            lines = [f"const float {n} = p{n}[{ix[i]}];" for n, i in loads]
            return [*lines, f"po[{ix[0]}] = {full};"]

        body = loop_nest(dims, [(0, so), (0, sa), (0, sb)], body_of)
        return block(describe(op), decls, parallel(dims, body))

    return Lowered(emit, snippets=("common",))


@lowering(*UNARY_OPS)
def unary(op: nn.NNOp, ctx: LoweringContext) -> Lowered | None:
    """A float unary op: one loop over the elements (`unary_expr`), split over the threads
    when large."""
    if integer_result(op):
        return None
    expr = unary_expr(op)
    count = numel(shape(op.results[0]))

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            f"const float *restrict px = {em.ptr(op.operands[0])};",
            f"float *restrict po = {res[0]};",
        ]
        body = loop_nest(
            [count],
            [(0, [1])],
            lambda ix: [f"const float x = px[{ix[0]}];", f"po[{ix[0]}] = {expr};"],
        )
        return block(describe(op), decls, parallel([count], body))

    return Lowered(emit, snippets=("common",))
