"""The CPU target: generated C, compiled by the system compiler, called through ctypes.

`available()` is false (with the reason) when no working C compiler is found, or when
`$IRC_CPU_ISA` forces an ISA this host cannot run (`isa.select`);
`supports(op)` answers from `support.check_op`; `lowering_passes()` is
`lower-quantized,lower-cpu` (quantized regions run natively on the integer form); the
runtime builds each executable's C through a hash-keyed cache and calls one C function per
dispatch.

A float16 model (docs/fp16.md) computes in float32 with its float16 weights by default
(`precision=fp32`: `widen-fp16` widens it whole, as onnxruntime's CPU provider runs it);
`IRC_CPU_PRECISION=fp16`, or `precision="fp16"` (`irc.compile`, `widen-fp16{precision=fp16}`),
asks for 16-bit activation storage: `computes_float16_op` keeps the `f16` tensors of the ops
with float16 kernels here (`binary16.computes_float16`), and `widen-fp16` computes the others
in float32 between casts. `precision_choice()` says what was chosen and why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from xdsl.ir import Operation
from xdsl.passes import ModulePass

from irc.targets.base import Availability, Layout, PassTable, Support, Target, TargetRuntime

# The toolchain probe and the capability check are imported when first used: discovering the
# target (every `irc.context.get_all_passes()`, so every irc-opt run) only reads its passes.

PRECISION_ENV = "IRC_CPU_PRECISION"
"""`fp32` (the default) or `fp16`: a float16 model's activation storage on cpu when the
pipeline asks for none (`precision` of `widen-fp16` / `irc.compile`)."""

PRECISIONS = ("fp32", "fp16")


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision a float16 model's ops get on cpu, and why."""

    precision: str
    """`fp32` (float32 activations, the float16 weights widened) or `fp16` (16-bit storage
    of the activations of ops with float16 kernels)."""
    reason: str
    """Where it came from, in words."""


def precision_choice(requested: str | None = None) -> PrecisionChoice:
    """`requested` (the pipeline's `precision`), else `IRC_CPU_PRECISION`, else `fp32`; an
    unknown value is `fp32`, with the reason."""
    if requested is not None:
        source, raw = "precision", requested.strip().lower()
    else:
        source, raw = PRECISION_ENV, os.environ.get(PRECISION_ENV, "").strip().lower()
    if not raw:
        return PrecisionChoice("fp32", "the default: float32 activations, float16 weights")
    if raw in PRECISIONS:
        return PrecisionChoice(raw, f"{source}={raw}")
    return PrecisionChoice("fp32", f"{source}='{raw}' is neither fp32 nor fp16: fp32")


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

    def computes_float16_op(self, op: Operation, precision: str | None = None) -> bool:
        """With precision `fp16` (`precision_choice`): whether `op` has a float16 kernel here
        (`binary16.computes_float16`); with `fp32` (the default) never."""
        if precision_choice(precision).precision != "fp16":
            return False
        from irc.targets.cpu.lowerings.binary16 import computes_float16

        return computes_float16(op)

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
"""The CPU target's passes (docs/design.md §6), registered through `Target.passes()`."""
