"""The CPU target: generated C, compiled by the system compiler, called through ctypes.

`available()` is false (with the reason) when no working C compiler is found, or when
`$IRC_CPU_ISA` forces an ISA this host cannot run (`isa.select`);
`supports(op)` answers from `support.check_op`; `lowering_passes()` is
`lower-quantized,lower-cpu` (quantized regions run natively on the integer form); the
runtime builds each executable's C through a hash-keyed cache and calls one C function per
dispatch.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.ir import Operation

from irc.targets.base import Availability, Layout, Support, Target, TargetRuntime
from irc.targets.cpu import isa, toolchain
from irc.targets.cpu.support import check_op


class CpuTarget(Target):
    """C99 (+ OpenMP) kernels for float32 NHWC tensors and the integer form of int8 ops."""

    name: ClassVar[str] = "cpu"
    preferred_layout: ClassVar[Layout | None] = "NHWC"
    runs_quantized: ClassVar[bool] = True

    def available(self) -> Availability:
        probe = toolchain.probe()
        if probe.toolchain is None:
            return Availability(False, f"cpu: {probe.reason}")
        try:
            isa.select()
        except isa.IsaError as exc:
            return Availability(False, f"cpu: {exc}")
        return Availability(True)

    def supports(self, op: Operation) -> Support:
        return check_op(op)

    def lowering_passes(self) -> str:
        return "lower-quantized,lower-cpu"

    def runtime(self) -> TargetRuntime:
        from irc.targets.cpu.runtime import CpuRuntime

        return CpuRuntime()
