"""The CPU target: generated C, compiled by the system compiler, called through ctypes.

`available()` is false (with the reason) when no working C compiler is found, or when
`$IRC_CPU_ISA` forces an ISA this host cannot run (`isa.select`);
`supports(op)` answers from `support.check_op`; `lowering_passes()` is
`lower-quantized,lower-cpu` (quantized regions run natively on the integer form); the
runtime builds each executable's C through a hash-keyed cache and calls one C function per
dispatch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from xdsl.ir import Operation
from xdsl.passes import ModulePass

from irc.targets.base import Availability, Layout, PassTable, Support, Target, TargetRuntime

# The toolchain probe and the capability check are imported when first used: discovering the
# target (every `irc.context.get_all_passes()`, so every irc-opt run) only reads its passes.


class CpuTarget(Target):
    """C99 (+ OpenMP) kernels for float32 NHWC tensors and the integer form of int8 ops."""

    name: ClassVar[str] = "cpu"
    preferred_layout: ClassVar[Layout | None] = "NHWC"
    runs_quantized: ClassVar[bool] = True
    computes_float16: ClassVar[bool] = True

    def available(self) -> Availability:
        from irc.targets.cpu import isa, toolchain

        probe = toolchain.probe()
        if probe.toolchain is None:
            return Availability(False, f"cpu: {probe.reason}")
        try:
            isa.select()
        except isa.IsaError as exc:
            return Availability(False, f"cpu: {exc}")
        return Availability(True)

    def supports(self, op: Operation) -> Support:
        from irc.targets.cpu.support import check_op

        return check_op(op)

    def lowering_passes(self) -> str:
        return "lower-quantized,lower-cpu"

    def passes(self) -> Mapping[str, type[ModulePass]]:
        return _PASSES

    def emit_source(self, executable: Operation) -> str | None:
        """The C translation unit of each `cpu.c_module` of a lowered executable."""
        from irc.dialects import cpu

        sources = [op.source.data for op in executable.walk() if isinstance(op, cpu.CModuleOp)]
        return "\n".join(sources) if sources else None

    def runtime(self) -> TargetRuntime:
        from irc.targets.cpu.runtime import CpuRuntime

        return CpuRuntime()


_PASSES = PassTable(
    {
        "lower-cpu": "irc.targets.cpu.lower:LowerCpuPass",
        "cpu-fuse": "irc.targets.cpu.fuse:CpuFusePass",
        "cpu-plan-memory": "irc.targets.cpu.memory_plan:CpuPlanMemoryPass",
        "cpu-codegen": "irc.targets.cpu.generate:CpuCodegenPass",
    }
)
"""The CPU target's passes (DESIGN.md §6), registered through `Target.passes()`."""
