"""`cpu-codegen`: generate the C of the fused, planned CPU executables.

Every `delegate.executable ... target("cpu")` not lowered yet, whose entries carry the
buffer plan of `cpu-plan-memory`, gets one `cpu.module` holding the generated translation
unit (one C function per entry; one kernel per op or `cpu.fusion`, at the planned offsets)
and the constants, packed for their kernels (`cpu.constant`); each entry's body becomes a
single `cpu.call` of its C function with the plan's workspace size (see `irc.dialects.cpu`
and `irc.targets.cpu.codegen`). An entry without a plan, or an op the target cannot run,
fails the pass with an error at that entry or op.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error
from irc.dialects import cpu, delegate
from irc.dialects.nn import dense_from_array
from irc.targets.cpu.codegen import (
    ConstantTable,
    FunctionCodegen,
    GeneratedFunction,
    LoweringError,
    assemble_source,
)
from irc.targets.cpu.fuse import cpu_executables

MODULE_NAME = "kernels"


def generate_executable(executable: delegate.ExecutableOp, pass_name: str = "cpu-codegen") -> None:
    """Lower one planned CPU executable to C in place (generate everything, then rewrite)."""
    funcs: list[FuncOp] = []
    for op in executable.body.block.ops:
        if not isinstance(op, FuncOp):
            emit_error(op, f"{pass_name}: unexpected '{op.name}' in a cpu executable")
        funcs.append(op)
    constants = ConstantTable()
    generated: list[GeneratedFunction] = []
    for i, func in enumerate(funcs):
        try:
            generated.append(FunctionCodegen(func, f"irc_fn_{i}", constants).generate())
        except LoweringError as exc:
            emit_error(exc.op, f"{pass_name}: {exc.message}")
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
    func.attributes.pop(cpu.PLAN_WORKSPACE, None)


@dataclass(frozen=True)
class CpuCodegenPass(ModulePass):
    """Generate each planned CPU executable's C into a `cpu.module` and `cpu.call`s."""

    name = "cpu-codegen"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in cpu_executables(op):
            generate_executable(executable)
