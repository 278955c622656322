"""Dead code elimination: erase ops whose results nobody uses and that have no side effects.

This is xDSL's liveness-based `region_dce`: an op stays when it has an observable effect
(terminators, symbols such as `func.func`, ops without a `Pure`-like memory-effect trait,
e.g. `delegate.region`), or when a live op uses one of its results. Chains of dead `nn` ops
go away in one run, as do cycles in graph regions and non-entry blocks with no live op.
Block arguments and function signatures are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import region_dce


@dataclass(frozen=True)
class DCEPass(ModulePass):
    """Remove side-effect-free ops whose results are unused."""

    name = "dce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        region_dce(op.body)
