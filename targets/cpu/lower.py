"""`lower-cpu`: lower the CPU target's executables to C.

The whole lowering, as one pass: on every `delegate.executable ... target("cpu")` not
lowered yet it runs, in order, the three passes irc-opt can also run one by one
(`--print-ir-after-all` shows each step; see `irc.dialects.cpu`):

1. `cpu-fuse` (`fuse.py`): quantized ops in `lower-quantized`'s integer form (a no-op when
   that pass already ran, as the target's `lowering_passes()` ask), then the chains run as
   one kernel wrapped in `cpu.fusion` ops (int8 conv / fully_connected chains, the int8
   add, float conv + residual add);
2. `cpu-plan-memory` (`memory_plan.py`): the workspace plan recorded on the entries' ops;
3. `cpu-codegen` (`generate.py`): one `cpu.module` with the generated translation unit and
   the packed constants, each entry's body one `cpu.call` of its C function.

Executables of other targets are left alone; an op the CPU target cannot run fails the
pass with an error at that op.

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
from xdsl.passes import ModulePass

from irc.dialects import delegate
from irc.targets.cpu.fuse import TARGET, cpu_executables, fuse_executable, is_lowered
from irc.targets.cpu.generate import generate_executable
from irc.targets.cpu.memory_plan import plan_executable

__all__ = ["TARGET", "LowerCpuPass", "is_lowered", "lower_executable"]


def lower_executable(executable: delegate.ExecutableOp) -> None:
    """Lower one CPU executable in place: `cpu-fuse`, `cpu-plan-memory`, `cpu-codegen`."""
    fuse_executable(executable)
    plan_executable(executable, "lower-cpu")
    generate_executable(executable, "lower-cpu")


@dataclass(frozen=True)
class LowerCpuPass(ModulePass):
    """Lower `delegate.executable` ops of the CPU target to a C translation unit each
    (`cpu-fuse`, `cpu-plan-memory`, `cpu-codegen`)."""

    name = "lower-cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in cpu_executables(op):
            lower_executable(executable)
