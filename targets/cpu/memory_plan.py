"""`cpu-plan-memory`: record the workspace plan of every CPU entry in the IR.

On every entry of a CPU executable not lowered yet (after `lower-quantized`'s integer form,
applied first when it has not run) the buffer plan the C function will follow is computed
(see `irc.targets.cpu.codegen`: first-fit over live ranges, 64-byte aligned) and written
as discardable attributes (`irc.dialects.cpu`):

* `cpu.offsets = array<i64: ...>` on every op that runs a kernel (a `cpu.fusion` counts as
  one): per result, its byte offset in the workspace, or -1 when the op writes the entry's
  result buffer directly;
* `cpu.scratch = array<i64: ...>` on an op whose kernel needs scratch (a zero-padded
  input, a filter packed at run time): the byte offsets of those buffers;
* `cpu.alias` on an op whose result shares operand 0's buffer (a reshape, `quant.scast`, a
  widening cast an integer op reads through): nothing runs, nothing is allocated;
* `cpu.workspace = N : i64` on the entry: the arena's size in bytes (the `workspace` of its
  `cpu.call` after `cpu-codegen`).

The pass recomputes the plan from the ops each time, so running it twice changes nothing.
An op the target cannot run fails the pass with an error at that op.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from irc.diagnostics import emit_error
from irc.dialects import delegate
from irc.targets.cpu.codegen import LoweringError, plan_function
from irc.targets.cpu.fuse import cpu_executables, lower_quantized


def plan_executable(executable: delegate.ExecutableOp, pass_name: str = "cpu-plan-memory") -> None:
    """Record the buffer plan of every entry of one executable (errors name `pass_name`)."""
    lower_quantized(executable)
    for func in executable.body.block.ops:
        if not isinstance(func, FuncOp):
            emit_error(func, f"{pass_name}: unexpected '{func.name}' in a cpu executable")
        try:
            plan_function(func)
        except LoweringError as exc:
            emit_error(exc.op, f"{pass_name}: {exc.message}")


@dataclass(frozen=True)
class CpuPlanMemoryPass(ModulePass):
    """Record each CPU entry's workspace plan (offsets, aliases, size) as attributes."""

    name = "cpu-plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in cpu_executables(op):
            plan_executable(executable)
