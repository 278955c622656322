"""`lower-opencl`: lower the OpenCL target's executables to the `ocl` dialect.

Every `delegate.executable ... target("opencl")` not lowered yet gets one `ocl.program`
(the generated OpenCL C source of all its entries and the constants to upload once), and each
entry's body becomes one `ocl.execute` holding the entry's buffer plan (`ocl.alloc`) and its
kernel launches (`ocl.launch`), see `irc.dialects.ocl` and `irc.targets.opencl.codegen`. The
lowering needs no device. Executables of other targets are left alone; an op the target cannot
run fails the pass with an error at that op.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error
from irc.dialects import delegate, ocl
from irc.dialects.nn import dense_from_array
from irc.targets.opencl.codegen import Launch, LoweringError, Program, generate_entry
from irc.targets.opencl.support import check_op

TARGET = "opencl"
PROGRAM_NAME = "kernels"


def is_lowered(executable: delegate.ExecutableOp) -> bool:
    """Whether `lower-opencl` already ran on this executable."""
    return any(isinstance(op, ocl.ProgramOp) for op in executable.body.block.ops)


def lower_executable(executable: delegate.ExecutableOp) -> None:
    """Lower one OpenCL executable in place (generate everything first, then rewrite)."""
    funcs: list[FuncOp] = []
    for op in executable.body.block.ops:
        if not isinstance(op, FuncOp):
            emit_error(op, f"lower-opencl: unexpected '{op.name}' in an opencl executable")
        funcs.append(op)
    program = Program()
    plans: list[tuple[list[Launch], list[int]]] = []
    for func in funcs:
        for op in func.body.block.ops:
            answer = check_op(op) if not isinstance(op, ReturnOp) else None
            if answer is not None and not answer:
                emit_error(op, f"lower-opencl: {answer.reason}")
        try:
            plans.append(generate_entry(func, program))
        except LoweringError as exc:
            emit_error(exc.op, f"lower-opencl: {exc.message}")
    taken = {f.sym_name.data for f in funcs}
    name = PROGRAM_NAME
    while name in taken:
        name += "_"
    uploads = [ocl.UploadOp(i, dense_from_array(a)) for i, a in enumerate(program.constants)]
    Rewriter.insert_op(
        ocl.ProgramOp(name, program.source(), uploads), InsertPoint.at_start(executable.body.block)
    )
    for func, (launches, allocs) in zip(funcs, plans, strict=True):
        block = func.body.block
        old_ops = list(block.ops)
        body = [ocl.AllocOp(i, n) for i, n in enumerate(allocs)] + [
            ocl.LaunchOp(launch.kernel, launch.args, launch.global_size, []) for launch in launches
        ]
        execute = ocl.ExecuteOp(
            name, sum(allocs), block.args, func.function_type.outputs.data, body
        )
        block.add_ops([execute, ReturnOp(*execute.results)])
        for op in reversed(old_ops):  # users before producers
            block.erase_op(op)


@dataclass(frozen=True)
class LowerOpenCLPass(ModulePass):
    """Lower `delegate.executable` ops of the OpenCL target to `ocl` programs and launches."""

    name = "lower-opencl"

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
