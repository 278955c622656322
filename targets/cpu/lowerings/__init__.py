"""The CPU target's lowerings: one module per op family, registered by op type.

`lower(op, ctx)` gives how one op runs in the generated C function (`registry.py`);
importing this package imports every family module, which registers its lowerings in
priority order. `registered_ops()` is what the target's `supports()` starts from. Shared
C-building pieces: `helpers.py`.

Families: `elementwise` (float and i32 binary / unary ops), `casts` (nn.cast, quant.scast),
`quant_casts` (quant.qcast / dcast), `quant` (quant.rescale, 8-bit tables), `conv`
(conv2d, fully_connected, batch_matmul), `conv_transpose`, `pool`, `reduce`, `softmax`,
`resize`, `movement` (reshape, transpose, concat, split, slice, pad, broadcast_to),
`transformer` (layer_norm, silu, gelu, attention, gather, select, compare, logic) and
`fusion` (the `cpu.fusion` kinds of `cpu-fuse`).
"""

from irc.targets.cpu.lowerings import (  # noqa: F401  (registers the lowerings)
    casts,
    chain_table,
    conv,
    conv_transpose,
    elementwise,
    fusion,
    movement,
    pool,
    quant,
    quant_casts,
    reduce,
    resize,
    softmax,
    transformer,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lowered,
    LoweringContext,
    LoweringError,
    lower,
    lowering,
    lowerings_of,
    registered_ops,
)

__all__ = [
    "Emitter",
    "Lowered",
    "LoweringContext",
    "LoweringError",
    "lower",
    "lowering",
    "lowerings_of",
    "registered_ops",
]
