"""The "qtable" `cpu.fusion` (`qtable.py`): an elementwise chain of one 8-bit value as one
256-entry lookup per element, the table computed at compile time by the reference kernels.

Registered before `fusion`'s catch-all refusal (this package imports it first).
"""

from __future__ import annotations

import numpy as np

from irc.dialects import cpu
from irc.targets.cpu.lowerings.helpers import (
    block,
    ctype,
    describe,
    fusion_inputs,
    loop_nest,
    numel,
    parallel,
    shape,
)
from irc.targets.cpu.lowerings.registry import Emitter, Lines, Lowered, LoweringContext, lowering
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
        body = loop_nest([count], [(0, [1])], lambda ix: [f"po[{ix[0]}] = lut[px[{ix[0]}]];"])
        return block(f"table of {describe(final)}", decls, parallel([count], body))

    timed = (final, (chain.source,))
    return Lowered(emit, [], ("quant",), False, fusion_inputs(fusion), timed)
