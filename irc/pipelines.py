"""Pipeline presets: which registered passes run, in which order, for a purpose.

Presets only string registered passes together (by their DESIGN.md §6 names, through
`irc.context.get_all_passes()`); every step stays runnable alone with `irc-opt -p NAME`.

* `reference_passes(module)` / `prepare_for_reference(module)`: what the reference target
  needs before the executor runs a module. Quantized arithmetic (`nn.add`, `nn.conv2d`, ...
  on `!quant.uniform` tensors) has no reference kernel of its own: TOSA-style, it is defined
  by `lower-quantized`, which rewrites it into integer arithmetic and `quant.rescale`. So
  when the module has quantized ops and `lower-quantized` is registered, that pass runs;
  otherwise nothing does (float modules run as they are). Without the pass, quantized
  arithmetic reaches the executor and is reported there as unsupported, at its op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

__all__ = ["LOWER_QUANTIZED", "prepare_for_reference", "reference_passes", "run_passes"]

LOWER_QUANTIZED = "lower-quantized"
"""The registered name of the pass that expresses quantized ops in integer arithmetic."""


def _has_quantized_ops(module: ModuleOp) -> bool:
    from irc.targets.reference import is_quantized_op

    return any(is_quantized_op(op) for op in module.walk())


def reference_passes(module: ModuleOp) -> list[ModulePass]:
    """The passes `prepare_for_reference` would run on `module` (possibly none)."""
    from irc.context import get_all_passes

    passes = get_all_passes()
    if LOWER_QUANTIZED in passes and _has_quantized_ops(module):
        return [passes[LOWER_QUANTIZED]()()]
    return []


def run_passes(module: ModuleOp, passes: list[ModulePass], ctx: Context | None = None) -> ModuleOp:
    """Apply `passes` in order to `module` (in place), verifying after each; return it.

    A pass failure propagates as the pass raised it; a pass that leaves invalid IR raises
    `IrcDiagnosticError` located at the broken op (as `irc-opt` reports it).
    """
    if passes:
        from irc.context import make_context
        from irc.diagnostics import verify_module

        ctx = make_context() if ctx is None else ctx
        for module_pass in passes:
            module_pass.apply(ctx, module)
            verify_module(module)
    return module


def prepare_for_reference(module: ModuleOp, ctx: Context | None = None) -> ModuleOp:
    """Run the passes the reference target needs before execution; modifies `module` in place.

    Today that is `lower-quantized` when the module has quantized ops and the pass is
    registered, else nothing. Returns `module`, for chaining.
    """
    return run_passes(module, reference_passes(module), ctx)
