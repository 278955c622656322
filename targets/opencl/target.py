"""The OpenCL target: generated OpenCL C kernels run through pyopencl.

Preferred layout NHWC: channels innermost makes conv/FC inner loops contiguous in both input
and filter (the CPU target's reasoning, PERF_NOTES.md), and PoCL on a CPU behaves like the
CPU; a GPU may favour other layouts later (to be measured). `runs_quantized` is False: int8
regions arrive as float through `insert-qdq`.
"""

from __future__ import annotations

import os
from typing import ClassVar

from xdsl.ir import Operation

from irc.targets.base import Availability, Layout, Support, Target, TargetRuntime
from irc.targets.opencl.support import check_op

TUNE_ENV = "IRC_OPENCL_TUNE"
"""`1`/`true`: lower with `lower-opencl{tune=true}` (measured work-group sizes, cached)."""


class OpenCLTarget(Target):
    """float32 NHWC kernels in OpenCL C (any OpenCL device; PoCL's CPU device without a GPU)."""

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
        return check_op(op)

    def lowering_passes(self) -> str:
        tune = os.environ.get(TUNE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
        return "lower-opencl{tune=true}" if tune else "lower-opencl"

    def runtime(self) -> TargetRuntime:
        from irc.targets.opencl.runtime import OpenCLRuntime

        return OpenCLRuntime()
