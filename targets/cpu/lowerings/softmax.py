"""softmax and log_softmax: float (`irc_softmax`, one call per op) and quantized, bit-exact
with TFLite's reference kernels from the plans of `quant_kernels.py` (the per-element part
as constant tables, the per-row part in C: `_row_kernel`).

The quantized variants come first: an op whose result holds integers takes them.
"""

from __future__ import annotations

import numpy as np

from irc.dialects import nn
from irc.targets.cpu.lowerings.helpers import (
    block,
    c_call,
    c_float,
    ctype,
    describe,
    integer_result,
    numel,
    shape,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
    lowering,
)
from irc.targets.cpu.quant_kernels import (
    PARALLEL_ELEMENTS,
    LogSoftmaxPlan,
    NativeKernelError,
    SoftmaxPlan,
    log_softmax_plan,
    softmax_plan,
)


def _c_table(name: str, values: np.ndarray) -> str:
    """A static int32 table of len(values) entries, its trailing zeros left implicit."""
    nonzero = np.flatnonzero(values)
    used = values[: int(nonzero[-1]) + 1 if nonzero.size else 1]
    return f"static const int32_t {name}[{values.size}] = {{{', '.join(map(str, used.tolist()))}}};"


def _row_kernel(
    op: nn.SoftmaxOp | nn.LogSoftmaxOp,
    plan: SoftmaxPlan | LogSoftmaxPlan,
    tables: Lines,
    per_row: Lines,
    per_element: Lines,
) -> Lowered:
    """The row loop both softmaxes share: for each row (`n` elements `inner` apart) the
    maximum `mx`, `sum` of the `summand` table at ``mx - x``, then `per_row` statements and,
    for every element (`idx` = ``mx - x``), `per_element` statements computing `y`; rows
    longer than the 2^bits values of `idx` compute each value once and gather."""
    ct_in, ct_out = ctype(op.input), ctype(op.output)
    n, inner, rows = plan.n, plan.inner, plan.outer * plan.inner
    base = f"r * {n}" if inner == 1 else f"(r / {inner}) * {n * inner} + r % {inner}"
    step = "k" if inner == 1 else f"k * {inner}"
    lo, hi = f"({plan.low}LL)", f"({plan.high}LL)"
    levels = plan.summand_table.size  # the values of `row max - x`

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            *tables,
            f"const {ct_in} *restrict px = {em.ptr(op.input)};",
            f"{ct_out} *restrict po = {res[0]};",
        ]
        if not rows or not n:
            return block(describe(op), decls, [])
        large = rows > 1 and rows * n >= PARALLEL_ELEMENTS
        body = [
            *(["IRC_PARFOR(schedule(static))"] if large else []),
            f"for (long r = 0; r < {rows}; ++r) {{",
            f"  const {ct_in} *restrict xs = px + {base};",
            f"  {ct_out} *restrict ys = po + {base};",
            "  int mx = xs[0];",
            f"  for (long k = 1; k < {n}; ++k) mx = xs[{step}] > mx ? xs[{step}] : mx;",
            "  int64_t sum = 0;",
            f"  for (long k = 0; k < {n}; ++k) sum += summand[mx - xs[{step}]];",
            *("  " + line for line in per_row),
        ]
        clamp = f"({ct_out})(y < {lo} ? {lo} : (y > {hi} ? {hi} : y))"
        if n > levels:  # each of the `levels` results once per row, then a gather
            body += [
                f"  {ct_out} row_out[{levels}];",
                f"  for (int idx = 0; idx < {levels}; ++idx) {{",
                *("    " + line for line in per_element),
                f"    row_out[idx] = {clamp};",
                "  }",
                f"  for (long k = 0; k < {n}; ++k) ys[{step}] = row_out[mx - xs[{step}]];",
            ]
        else:
            body += [
                f"  for (long k = 0; k < {n}; ++k) {{",
                f"    const int idx = mx - xs[{step}];",
                *("    " + line for line in per_element),
                f"    ys[{step}] = {clamp};",
                "  }",
            ]
        body.append("}")
        return block(describe(op), decls, body)

    return Lowered(emit, snippets=("softmax_q",))


@lowering(nn.SoftmaxOp)
def quantized_softmax(op: nn.SoftmaxOp, ctx: LoweringContext) -> Lowered | None:
    """Quantized `nn.softmax`: per row the maximum, the sum of table summands, its reciprocal
    (`irc_softmax_reciprocal`) and ``rdbpot(srdhm(reciprocal, exp), exponent)``."""
    if not integer_result(op):
        return None
    try:
        plan = softmax_plan(op)
    except NativeKernelError as exc:
        raise LoweringError(op, str(exc)) from None
    return _row_kernel(
        op,
        plan,
        [_c_table("summand", plan.summand_table), _c_table("exp_q31", plan.exp_table)],
        [
            "int over;",
            "const int64_t recip = irc_softmax_reciprocal(sum, &over);",
            f"const int exponent = over + {31 - plan.out_bits};",
        ],
        [
            "const int64_t y = irc_rdbpot(irc_srdhm(recip, exp_q31[idx]), exponent)"
            f" + ({plan.low}LL);"
        ],
    )


@lowering(nn.LogSoftmaxOp)
def quantized_log_softmax(op: nn.LogSoftmaxOp, ctx: LoweringContext) -> Lowered | None:
    """Quantized `nn.log_softmax`: per row the maximum, the sum of table summands, its Q5.26
    logarithm (`irc_log_sum_q12`) and the cut-off; per element ``rdbpot(diff - log, 22)``
    plus the result's maximum, or its minimum beyond the cut-off."""
    if not integer_result(op):
        return None
    try:
        plan = log_softmax_plan(op)
    except NativeKernelError as exc:
        raise LoweringError(op, str(exc)) from None
    floor = plan.diff_min - 1
    return _row_kernel(
        op,
        plan,
        [_c_table("summand", plan.summand_table), _c_table("diff_q5", plan.diff_table)],
        [
            "const int64_t log_sum = irc_log_sum_q12(sum);",
            "const int64_t cutoff = irc_rdbpot(irc_srdhm(log_sum + INT32_MIN,"
            f" {plan.reverse_divisor}), {plan.reverse_right_shift});",
            f"const int64_t adjusted = cutoff > ({floor}LL) ? cutoff : ({floor}LL);",
        ],
        [
            "const int64_t y = -idx > adjusted"
            f" ? irc_rdbpot(diff_q5[idx] - log_sum, 22) + ({plan.high}LL) : ({plan.low}LL);"
        ],
    )


@lowering(nn.SoftmaxOp, nn.LogSoftmaxOp)
def softmax(op: nn.SoftmaxOp | nn.LogSoftmaxOp, ctx: LoweringContext) -> Lowered | None:
    """A float softmax (with its beta) or log_softmax along one axis (`irc_softmax`)."""
    if integer_result(op):
        return None
    is_log = isinstance(op, nn.LogSoftmaxOp)
    dims = shape(op.input)
    axis = op.axis.value.data % len(dims)
    outer, n, inner = numel(dims[:axis]), dims[axis], numel(dims[axis + 1 :])
    beta = 1.0 if is_log else op.beta.value.data

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        call = c_call(
            "irc_softmax",
            *(em.ptr(op.input), res[0], outer, n, inner),
            *(c_float(beta), int(beta != 1.0), int(is_log)),
        )
        return block(describe(op), [], [call])

    return Lowered(emit, snippets=("softmax",))
