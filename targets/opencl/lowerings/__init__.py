"""The OpenCL target's lowerings: one module per op family, registered by op type.

`emit(op, epilogue, program)` gives the launches of one op (`registry.py`); importing this
package imports every family module, which registers its lowerings in priority order.
`registered_ops()` is what the target's `supports()` starts from. Shared template machinery:
`helpers.py` (literals, shapes, kernel signatures) and `epilogue.py` (activations, fused
epilogues).
"""

# first: its float8 gelu is tried before elementwise.py's one-element gelu
import irc.targets.opencl.lowerings.transformer  # noqa: F401
from irc.targets.opencl.lowerings import (  # noqa: F401  (registers the lowerings)
    casts,
    conv,
    conv_transpose,
    elementwise,
    gather,
    logic,
    movement,
    pad,
    pool,
    quant_casts,
    reduce,
    resize,
    softmax,
)
from irc.targets.opencl.lowerings.registry import (
    LoweringError,
    emit,
    lowering,
    lowerings_of,
    registered_ops,
)

__all__ = ["LoweringError", "emit", "lowering", "lowerings_of", "registered_ops"]
