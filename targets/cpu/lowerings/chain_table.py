"""The "qtable" `cpu.fusion` (`qtable.py`): an elementwise chain of one 8-bit value as one
256-entry lookup per element, the table computed at compile time by the reference kernels;
the "qmul" fusion (`qmul.py`): an int8 mul, one input repeating along leading dimensions;
the "qsum" fusion (`qsum.py`): an int8 sum over contiguous axes, zero point subtracted.

Registered before `fusion`'s catch-all refusal (this package imports it first).
"""

from __future__ import annotations

import numpy as np

from irc.dialects import cpu, nn
from irc.targets.cpu.lowerings.helpers import (
    block,
    ctype,
    describe,
    fusion_inputs,
    numel,
    shape,
    zero_point,
)
from irc.targets.cpu.lowerings.registry import Emitter, Lines, Lowered, LoweringContext, lowering
from irc.targets.cpu.qfusion import requant_blocks
from irc.targets.cpu.qmul import KIND as QMUL_KIND
from irc.targets.cpu.qmul import match_mul
from irc.targets.cpu.qsum import KIND as QSUM_KIND
from irc.targets.cpu.qsum import match_sum
from irc.targets.cpu.qtable import KIND, TableChain, chain_table, match_table_chain
from irc.targets.cpu.tables import TABLE_SIZE


def _chain_of(fusion: cpu.FusionOp) -> TableChain | None:
    """The fusion's members read back as a table chain (None when they are not one)."""
    members = list(fusion.members)
    yielded = fusion.body.block.last_op
    if not members or yielded is None or yielded.operands[0].owner is not members[-1]:
        return None
    chain = match_table_chain(members[-1], set())
    if chain is None or chain.members != members:
        return None
    return chain


@lowering(cpu.FusionOp)
def table_chain(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered | None:
    """`y[i] = table[(uint8_t)x[i]]` for a "qtable" fusion."""
    if fusion.kind.data != KIND:
        return None
    chain = _chain_of(fusion)
    table = None if chain is None else chain_table(chain)
    if chain is None or table is None:
        return None  # refused by the catch-all
    final = chain.final
    count = numel(shape(final.results[0]))
    ct_out = ctype(final.results[0])
    stored = table.view(np.int8)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        index = ctx.codegen.constants.add(
            final.results[0], f"lut_8bit [{TABLE_SIZE}]", lambda: stored
        )
        decls = [
            f"const uint8_t *restrict px = (const uint8_t *){em.ptr(chain.source)};",
            f"const {ct_out} *restrict lut = (const {ct_out} *)K[{index}];",
            f"{ct_out} *restrict po = {res[0]};",
        ]
        body = [f"irc_lut8(px, (uint8_t *)po, {count}L, (const uint8_t *)lut);"]
        return block(f"table of {describe(final)}", decls, body)

    timed = (final, (chain.source,))
    return Lowered(emit, [], ("quant",), False, fusion_inputs(fusion), timed)


@lowering(cpu.FusionOp)
def quantized_mul(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered | None:
    """An int8 mul (`qmul.match_mul`): both 8-bit inputs read, the product rescaled with
    `irc_mbqm` (the reference's rescale, exact) by `irc_qmul_s8` / `irc_qmul_u8` (16 lanes
    at a time, the rescale's requantization block as a constant, the rows split over the
    pool)."""
    if fusion.kind.data != QMUL_KIND:
        return None
    mul = next((op for op in fusion.members if isinstance(op, nn.MulOp)), None)
    chain = None if mul is None else match_mul(mul)
    if chain is None or set(fusion.members) != {*chain.skipped, chain.final}:
        return None
    yielded = fusion.body.block.last_op
    if yielded is None or yielded.operands[0].owner is not chain.final:
        return None
    count = numel(shape(chain.final.results[0]))
    nb = count // chain.rows
    za, zb = chain.zero_points
    params, mode = requant_blocks(chain.rescale, 16, 16)
    zp_out = zero_point(chain.rescale.output)
    ct = ctype(chain.final.results[0])  # the inputs' storage too (`match_mul`)
    kernel = "irc_qmul_u8" if ct == "uint8_t" else "irc_qmul_s8"

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        index = ctx.codegen.constants.add(
            chain.mul.results[0], "qmul_requant_i64 [64]", lambda: params
        )
        args = f"{chain.rows}L, {nb}L, {za}, {zb}, (const int64_t *)K[{index}], {mode}"
        out = f"{zp_out}LL, {chain.low}LL, {chain.high}LL, (uint8_t *){res[0]}"
        pa, pb = em.ptr(chain.large), em.ptr(chain.small)
        call = f"{kernel}((const {ct} *){pa}, (const {ct} *){pb}, {args}, {out});"
        return block(describe(chain.mul), [], [call])

    timed = (chain.mul, (chain.large, chain.small))
    return Lowered(emit, [], ("qmul",), False, fusion_inputs(fusion), timed)


@lowering(cpu.FusionOp)
def quantized_sum(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered | None:
    """An int8 sum (`qsum.match_sum`): the 8-bit input read once, summed in int32 with its
    zero point subtracted (`irc_qsum_s8` / `irc_qsum_u8`)."""
    if fusion.kind.data != QSUM_KIND:
        return None
    reduce = next((op for op in fusion.members if isinstance(op, nn.ReduceOp)), None)
    chain = None if reduce is None else match_sum(reduce)
    if chain is None or set(fusion.members) != {*chain.skipped, chain.reduce}:
        return None
    yielded = fusion.body.block.last_op
    if yielded is None or yielded.operands[0].owner is not chain.reduce:
        return None
    ct_in = ctype(chain.source)
    kernel = "irc_qsum_u8" if ct_in == "uint8_t" else "irc_qsum_s8"

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        args = f"{chain.outer}L, {chain.count}L, {chain.inner}L, {chain.zero_point}, {res[0]}"
        call = f"{kernel}((const {ct_in} *){em.ptr(chain.source)}, {args});"
        return block(describe(chain.reduce), [], [call])

    timed = (chain.reduce, (chain.source,))
    return Lowered(emit, [], ("quant",), False, fusion_inputs(fusion), timed)
