"""The integer form's quantization ops: `quant.rescale` and the 8-bit lookup tables.

* **rescale**: TFLite's MultiplyByQuantizedMultiplier (`irc_mbqm`, the C mirror of the
  reference's, bit-exact), on 8 int64 vector lanes (`irc_mbqm_q8`; channels innermost step 8
  channels at a time, per-lane multipliers and shifts), scalar only for tails, split across
  threads when large; then the result's zero point and range.
* **tables**: quantized unary ops with their own 8-bit algorithm (`tables.TABLE_OPS`) as a
  256-entry constant holding the reference kernel's result for every input byte.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from irc.dialects import quant
from irc.targets.cpu.lowerings.helpers import (
    block,
    ctype,
    describe,
    dtype,
    integer_result,
    numel,
    shape,
    value_range,
    zero_point,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
    lowering,
)
from irc.targets.cpu.tables import TABLE_OPS, TABLE_SIZE, TableError, lookup_table

PAR_RESCALE = 1 << 16
"""Elements from which a `quant.rescale` loop is split across OpenMP threads."""
RESCALE_CHUNK = 4096
"""Elements per task of a rescale whose parameters are shared by contiguous runs."""


@lowering(*TABLE_OPS)
def integer_table(op: Operation, ctx: LoweringContext) -> Lowered | None:
    """A quantized 8-bit unary op (`tables.py`): `y[i] = table[(uint8_t)x[i]]`, the table
    a constant holding the reference kernel's result for every input byte."""
    if not integer_result(op):
        return None
    try:
        table = lookup_table(op)
    except TableError as exc:
        raise LoweringError(op, str(exc)) from None
    count = numel(shape(op.results[0]))
    ct_out = ctype(op.results[0])
    stored = table.view(np.int8)  # the bytes, as an i8 constant

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        index = ctx.codegen.constants.add(op.results[0], f"lut_8bit [{TABLE_SIZE}]", lambda: stored)
        decls = [
            f"const uint8_t *restrict px = (const uint8_t *){em.ptr(op.operands[0])};",
            f"const {ct_out} *restrict lut = (const {ct_out} *)K[{index}];",
            f"{ct_out} *restrict po = {res[0]};",
        ]
        body = [f"irc_lut8(px, (uint8_t *)po, {count}L, (const uint8_t *)lut);"]
        return block(describe(op), decls, body)

    return Lowered(emit, snippets=("quant",))


@lowering(quant.RescaleOp)
def rescale(op: quant.RescaleOp, ctx: LoweringContext) -> Lowered:
    """`quant.rescale`: TFLite's MultiplyByQuantizedMultiplier (`irc_mbqm`), exactly the
    reference's (targets/reference/quant.py), then the result's zero point and range."""
    dims = shape(op.input)
    count = numel(dims)
    multipliers, shifts = list(op.multiplier_values), list(op.shift_values)
    channels = len(multipliers)
    if op.axis is None or channels == 1:
        outer, channels, inner = 1, 1, count
        multipliers, shifts = multipliers[:1], shifts[:1]
    else:
        axis = op.axis.value.data % len(dims)
        outer, inner = numel(dims[:axis]), numel(dims[axis + 1 :])
    zp_in, zp_out = zero_point(op.input), zero_point(op.output)
    low, high = value_range(op.output)
    single = int(op.rounding.data == "single_round")
    ct_in, ct_out = ctype(op.input), ctype(op.output)

    if single:  # (x * m + rounder) >> total
        lanes_a = [(1 << (30 - v)) if 31 - v > 0 else 0 for v in shifts]
        lanes_b = [31 - v for v in shifts]
    else:  # left, right shifts
        lanes_a = [max(v, 0) for v in shifts]
        lanes_b = [max(-v, 0) for v in shifts]
    vector = all(0 <= v < 64 for v in (lanes_b if single else lanes_a + lanes_b))
    size_in, size_out = dtype(op.input).itemsize, dtype(op.output).itemsize
    vfn = "irc_mbqm1_q8" if single else "irc_mbqm_q8"

    def scalar(k: str) -> Lines:
        value = f"{zp_out}LL + irc_mbqm((int64_t)px[{k}] - ({zp_in}LL), mc, sc, {single})"
        return [
            f"const int64_t v = {value};",
            f"po[{k}] = ({ct_out})(v < ({low}LL) ? ({low}LL) : (v > {high}LL ? {high}LL : v));",
        ]

    def lanes(k: str) -> Lines:
        value = f"{vfn}(__builtin_convertvector(xin, irc_q8) - ({zp_in}LL), mv, av, bv)"
        return [
            "irc_in8 xin;",
            f"__builtin_memcpy(&xin, px + {k}, sizeof xin);",
            f"const irc_q8 v = irc_q8_clamp({zp_out}LL + {value}, {low}LL, {high}LL);",
            "const irc_out8 out = __builtin_convertvector(v, irc_out8);",
            f"__builtin_memcpy(po + {k}, &out, sizeof out);",
        ]

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            f"static const int32_t rm[] = {{{', '.join(map(str, multipliers))}}};",
            f"static const int32_t rs[] = {{{', '.join(map(str, shifts))}}};",
            f"const {ct_in} *restrict px = {em.ptr(op.input)};",
            f"{ct_out} *restrict po = {res[0]};",
        ]
        if vector:
            decls += [
                f"static const int64_t qm[] = {{{', '.join(map(str, multipliers))}}};",
                f"static const int64_t qa[] = {{{', '.join(map(str, lanes_a))}}};",
                f"static const int64_t qb[] = {{{', '.join(map(str, lanes_b))}}};",
                f"typedef {ct_in} irc_in8 __attribute__((vector_size({8 * size_in})));",
                f"typedef {ct_out} irc_out8 __attribute__((vector_size({8 * size_out})));",
            ]
        pragma = ["IRC_PARFOR(schedule(static))"] if count >= PAR_RESCALE else []
        if not count:
            body: Lines = []
        elif inner == 1:  # per-channel on the innermost axis: channels innermost
            whole = channels - channels % 8 if vector else 0
            body = [*pragma, f"for (long o = 0; o < {outer}; ++o) {{"]
            if whole:
                body += [
                    f"  for (long c = 0; c < {whole}; c += 8) {{",
                    f"    const long k = o * {channels} + c;",
                    "    irc_q8 mv, av, bv;",
                    "    __builtin_memcpy(&mv, qm + c, sizeof mv);",
                    "    __builtin_memcpy(&av, qa + c, sizeof av);",
                    "    __builtin_memcpy(&bv, qb + c, sizeof bv);",
                    *("    " + line for line in lanes("k")),
                    "  }",
                ]
            if whole < channels:
                body += [
                    f"  for (long c = {whole}; c < {channels}; ++c) {{",
                    f"    const long k = o * {channels} + c;",
                    "    const int64_t mc = rm[c];",
                    "    const int sc = rs[c];",
                    *("    " + line for line in scalar("k")),
                    "  }",
                ]
            body.append("}")
        else:  # blocks of `inner` elements sharing (m, s), split into chunks for threads
            chunk = min(inner, RESCALE_CHUNK)
            pieces = -(-inner // chunk)
            tasks = outer * channels * pieces
            body = [
                *pragma,
                f"for (long t = 0; t < {tasks}; ++t) {{",
                f"  const long oc = t / {pieces}, c = oc % {channels};",
                f"  const long start = oc * {inner} + (t % {pieces}) * {chunk};",
                f"  const long stop = start + {chunk} < (oc + 1) * {inner}"
                f" ? start + {chunk} : (oc + 1) * {inner};",
                "  const int64_t mc = rm[c];",
                "  const int sc = rs[c];",
                "  long k = start;",
            ]
            if vector:
                body += [
                    "  const irc_q8 mv = (irc_q8){0} + qm[c], av = (irc_q8){0} + qa[c],"
                    " bv = (irc_q8){0} + qb[c];",
                    "  for (; k + 8 <= stop; k += 8) {",
                    *("    " + line for line in lanes("k")),
                    "  }",
                ]
            body += [
                "  for (; k < stop; ++k) {",
                *("    " + line for line in scalar("k")),
                "  }",
                "}",
            ]
        return block(describe(op), decls, body)

    return Lowered(emit, snippets=("quant",))
