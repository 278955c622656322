"""The OpenCL target: generated OpenCL C kernels run through pyopencl.

Preferred layout NHWC: channels innermost makes conv/FC inner loops contiguous in both input
and filter (the CPU target's reasoning, PERF_NOTES.md), and PoCL on a CPU behaves like the
CPU; a GPU may favour other layouts later (to be measured). `runs_quantized` is False: int8
regions arrive as float through `insert-qdq`.

`IRC_OPENCL_PRECISION=fp16` asks for half storage: `lower-opencl{precision=fp16}` (half bits
in memory through `vload_half`/`vstore_half_rte`, float arithmetic: core OpenCL, so PoCL's
CPU device and NVIDIA's OpenCL, neither with cl_khr_fp16, run it) or, on a device with
cl_khr_fp16, `precision=fp16-native` (half values, TFLite GPU's F32_F16). A float16 model
(`widen-fp16` widened it: `float16_lowering_passes(precision)`) computes in float32 with its
float16 weights unless asked otherwise (onnxruntime's way, and its error against the float32
model: docs/fp16.md); `irc.compile(..., precision="fp16")` or the variable asks for half
storage. `precision_choice()` says what was chosen and why. Nothing is printed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from irc.targets.base import Availability, Layout, PassTable, Support, Target, TargetRuntime

# The capability check is imported when first used: discovering the target (every
# `irc.context.get_all_passes()`, so every irc-opt run) only reads its passes.

TUNE_ENV = "IRC_OPENCL_TUNE"
"""`1`/`true`: lower with `lower-opencl{tune=true}` (measured work-group sizes, cached)."""

PRECISION_ENV = "IRC_OPENCL_PRECISION"
"""`fp32`, `fp16` or `fp16-native`: the `precision` of `lower-opencl` (fp16 is fp16-native
where the device has cl_khr_fp16; fp16-native is fp16 where it has not); unset, the lowering
has no precision option (fp32), except for a float16 model (fp16)."""


KERNELS_ENV = "IRC_OPENCL_KERNELS"
"""`cpu`, `gpu` or `auto` (the default): the `kernels` style of `lower-opencl` — `auto` is
`gpu` on a GPU device (with its compute units), else `cpu`."""

COMPUTE_UNITS_ENV = "IRC_OPENCL_COMPUTE_UNITS"
"""A positive integer: the compute units `gpu` kernels are shaped for instead of the device's
(launch shapes only; the kernels stay correct on any device). On PoCL, `132` gives the launch
geometry an H100 would get (benchmarks/opencl_gpu.py `--compute-units`)."""


@dataclass(frozen=True)
class KernelsChoice:
    """The kernel style `lowering_passes()` asks for, and why."""

    kernels: str
    """`cpu` or `gpu`."""
    compute_units: int
    """The device's compute units (0 when no device was read)."""
    reason: str
    """Why, in words (`irc-compile --report` and benchmarks print it)."""


def kernels_choice() -> KernelsChoice:
    """`IRC_OPENCL_KERNELS` (`cpu`, `gpu`, `auto`: GPU devices get `gpu` kernels) and the
    device's compute units (an unknown value is `auto`, with the reason)."""
    raw = os.environ.get(KERNELS_ENV, "").strip().lower() or "auto"
    from irc.targets.opencl.device import DeviceError, get_device

    try:
        profile = get_device().profile
    except DeviceError as exc:
        return KernelsChoice(raw if raw in ("cpu", "gpu") else "cpu", 0, f"no device ({exc})")
    units, units_note = _compute_units(profile.compute_units)
    if raw in ("cpu", "gpu"):
        return KernelsChoice(raw, units, f"{KERNELS_ENV}={raw}{units_note}")
    note = "" if raw == "auto" else f"{KERNELS_ENV}='{raw}' is not cpu/gpu/auto; "
    kind = "gpu" if profile.is_gpu else "cpu"
    return KernelsChoice(kind, units, f"{note}{profile.kind} device '{profile.name}'{units_note}")


def _compute_units(device_units: int) -> tuple[int, str]:
    """The compute units to shape `gpu` launches for (`COMPUTE_UNITS_ENV` or the device's),
    and a note for the reason (empty when the device's are used)."""
    raw = os.environ.get(COMPUTE_UNITS_ENV, "").strip()
    if not raw:
        return device_units, ""
    if raw.isdecimal() and int(raw) > 0:
        return int(raw), f", {COMPUTE_UNITS_ENV}={int(raw)}"
    return device_units, f", {COMPUTE_UNITS_ENV}='{raw}' is not a positive integer (ignored)"


@dataclass(frozen=True)
class PrecisionChoice:
    """What `IRC_OPENCL_PRECISION` asked for and what the target lowers with."""

    requested: str | None
    """The pipeline's choice, else the variable's value (lower-cased); None when neither."""
    precision: str
    """`fp32`, `fp16` or `fp16-native`: the precision the lowering uses."""
    reason: str
    """Why `precision` differs from `requested` (empty when they agree or nothing was asked)."""


def precision_choice(requested: str | None = None) -> PrecisionChoice:
    """The precision `lowering_passes()` uses, from `requested` (a pipeline's choice), else
    `IRC_OPENCL_PRECISION` (unset: fp32), and the device: a
    request for fp16 is always granted, as `fp16-native` (half arithmetic) where the device
    reports cl_khr_fp16 and as `fp16` (half storage, float arithmetic: any device) elsewhere;
    `fp16-native` asked for on a device without the extension is `fp16`, with the reason."""
    raw = requested or os.environ.get(PRECISION_ENV, "").strip().lower()
    if not raw:
        return PrecisionChoice(None, "fp32", "")
    if raw == "fp32":
        return PrecisionChoice(raw, "fp32", "")
    if raw not in ("fp16", "fp16-native"):
        return PrecisionChoice(
            raw,
            "fp32",
            f"{PRECISION_ENV}='{raw}' is neither fp32, fp16 nor fp16-native: lowering in fp32",
        )
    from irc.targets.opencl.device import DeviceError, get_device
    from irc.targets.opencl.runtime import FP16_EXTENSION

    try:
        device = get_device()
    except DeviceError as exc:
        return PrecisionChoice(raw, "fp16", f"no device ({exc}): half storage, float arithmetic")
    if device.has_extension(FP16_EXTENSION):
        return PrecisionChoice(raw, "fp16-native", "")
    reason = (
        f"device '{device.name}' lacks {FP16_EXTENSION}: half storage, float arithmetic"
        if raw == "fp16-native"
        else ""
    )
    return PrecisionChoice(raw, "fp16", reason)


class OpenCLTarget(Target):
    """float32 NHWC kernels in OpenCL C, or half storage with `IRC_OPENCL_PRECISION=fp16` (any
    OpenCL device; PoCL's CPU device without a GPU)."""

    name: ClassVar[str] = "opencl"
    preferred_layout: ClassVar[Layout | None] = "NHWC"
    runs_quantized: ClassVar[bool] = False

    def available(self) -> Availability:
        from irc.targets.opencl.device import DeviceError, get_device

        try:
            get_device()
        except DeviceError as exc:
            return Availability(False, f"opencl: {exc}")
        except Exception as exc:  # a broken driver: report it, do not crash discovery
            return Availability(False, f"opencl: {type(exc).__name__}: {exc}")
        return Availability(True)

    def supports(self, op: Operation) -> Support:
        from irc.targets.opencl.support import check_op

        return check_op(op)

    def lowering_passes(self) -> str:
        return _lowering_passes(precision_choice())

    def float16_lowering_passes(self, precision: str | None = None) -> str | None:
        """A float16 model's executables in the `precision` the pipeline asked for
        (`irc.compile(..., precision=...)`, `widen-fp16{precision=...}`: it wins over the
        variable), else `IRC_OPENCL_PRECISION`, else float32 (the model's float16 weights
        widened, float32 activations: onnxruntime's way, on every device). `fp16`: half
        storage (`fp16-native` with cl_khr_fp16), weights and activations 16-bit on the
        device."""
        return _lowering_passes(precision_choice(precision))

    def passes(self) -> Mapping[str, type[ModulePass]]:
        return _PASSES

    def emit_source(self, executable: Operation) -> str | None:
        """The OpenCL C of each `ocl.program` of a lowered executable."""
        from irc.dialects import ocl

        sources = [op.source.data for op in executable.walk() if isinstance(op, ocl.ProgramOp)]
        return "\n".join(sources) if sources else None

    def embed_binaries(self, module: ModuleOp) -> int:
        """Every `ocl.program` built on the current device, its binary recorded on the op
        (`irc.targets.opencl.aot.embed_binaries`)."""
        from irc.targets.opencl.aot import embed_binaries

        return embed_binaries(module)

    def runtime(self) -> TargetRuntime:
        from irc.targets.opencl.runtime import OpenCLRuntime

        return OpenCLRuntime()


def _lowering_passes(choice: PrecisionChoice) -> str:
    """`lower-opencl` with the options of the environment, the device and `choice`."""
    options = []
    if os.environ.get(TUNE_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        options.append("tune=true")
    if choice.requested is not None:
        options.append(f"precision={choice.precision}")
    kernels = kernels_choice()
    if kernels.kernels == "gpu":
        options.append(f"kernels=gpu compute-units={kernels.compute_units}")
    return f"lower-opencl{{{' '.join(options)}}}" if options else "lower-opencl"


_PASSES = PassTable(
    {
        "lower-opencl": "irc.targets.opencl.lower:LowerOpenCLPass",
        "opencl-fuse": "irc.targets.opencl.fuse:OpenCLFusePass",
        "opencl-bufferize": "irc.targets.opencl.bufferize:OpenCLBufferizePass",
        "opencl-plan-memory": "irc.targets.opencl.memory_plan:OpenCLPlanMemoryPass",
        "opencl-codegen": "irc.targets.opencl.codegen:OpenCLCodegenPass",
    }
)
"""The OpenCL target's passes (docs/design.md §6), registered through `Target.passes()`."""
