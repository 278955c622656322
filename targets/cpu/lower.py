"""`lower-cpu`: lower the CPU target's executables to C.

Every `delegate.executable ... target("cpu")` not lowered yet gets one `cpu.module` holding
the generated translation unit (one C function per entry) and the constants, packed for
their kernels (`cpu.constant`); each entry's body becomes a single `cpu.call` of its C
function, with the workspace size its buffer plan needs (see `irc.dialects.cpu` and
`irc.targets.cpu.codegen`). Executables of other targets are left alone; an op the CPU target
cannot run fails the pass with an error at that op. Quantized ops are first given their
`lower-quantized` integer form (a no-op when `lower-quantized` already ran, as the target's
`lowering_passes()` ask), so the C kernels always see integer ops and `quant.rescale`.

```mlir
// before                                      // after
delegate.executable @e target("cpu") {          delegate.executable @e target("cpu") {
  func.func @entry(%x) -> ... {                   cpu.module @kernels source = "..." {...}
    %y = nn.relu %x ...                           func.func @entry(%x) -> ... {
    func.return %y ...                              %y = cpu.call @kernels "irc_fn_0" (%x) ...
  }                                                 func.return %y ...
}                                                 }
                                                }
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error
from irc.dialects import cpu, delegate
from irc.dialects.nn import dense_from_array
from irc.targets.cpu.codegen import (
    ConstantTable,
    GeneratedFunction,
    LoweringError,
    assemble_source,
    generate_function,
)

TARGET = "cpu"
MODULE_NAME = "kernels"


def is_lowered(executable: delegate.ExecutableOp) -> bool:
    """Whether `lower-cpu` already ran on this executable."""
    return any(isinstance(op, cpu.CModuleOp) for op in executable.body.block.ops)


def lower_quantized(executable: delegate.ExecutableOp) -> None:
    """Express the executable's quantized arithmetic in the integer form (`lower-quantized`'s
    patterns; nothing happens when the pass already ran): the C kernels run that form."""
    from irc.passes.lower_quantized import lower_quantized_patterns

    walker = PatternRewriteWalker(
        GreedyRewritePatternApplier(lower_quantized_patterns(), dce_enabled=False)
    )
    walker.rewrite_region(executable.body)


def lower_executable(executable: delegate.ExecutableOp) -> None:
    """Lower one CPU executable in place (two phases: generate everything, then rewrite)."""
    lower_quantized(executable)
    funcs: list[FuncOp] = []
    for op in executable.body.block.ops:
        if not isinstance(op, FuncOp):
            emit_error(op, f"lower-cpu: unexpected '{op.name}' in a cpu executable")
        funcs.append(op)
    constants = ConstantTable()
    generated: list[GeneratedFunction] = []
    for i, func in enumerate(funcs):
        try:
            generated.append(generate_function(func, f"irc_fn_{i}", constants))
        except LoweringError as exc:
            emit_error(exc.op, f"lower-cpu: {exc.message}")
    taken = {f.sym_name.data for f in funcs}
    module_name = MODULE_NAME
    while module_name in taken:
        module_name += "_"
    module = cpu.CModuleOp(
        module_name,
        assemble_source(generated),
        [
            cpu.ConstantOp(i, packing, dense_from_array(array))
            for i, (packing, array) in enumerate(constants.entries)
        ],
    )
    Rewriter.insert_op(module, InsertPoint.at_start(executable.body.block))
    for func, gen in zip(funcs, generated, strict=True):
        _replace_body(func, module_name, gen)


def _replace_body(func: FuncOp, module_name: str, gen: GeneratedFunction) -> None:
    """The entry's ops -> one `cpu.call` of its C function and a `func.return`."""
    block = func.body.block
    old_ops = list(block.ops)
    call = cpu.CallOp(
        module_name, gen.name, gen.workspace_bytes, block.args, func.function_type.outputs.data
    )
    block.add_ops([call, ReturnOp(*call.results)])
    for op in reversed(old_ops):  # users before producers: nothing is erased while in use
        block.erase_op(op)


@dataclass(frozen=True)
class LowerCpuPass(ModulePass):
    """Lower `delegate.executable` ops of the CPU target to a C translation unit each."""

    name = "lower-cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        executables = [
            e
            for e in op.walk()
            if isinstance(e, delegate.ExecutableOp)
            and e.target.data == TARGET
            and not is_lowered(e)
        ]
        for executable in executables:
            lower_executable(executable)
