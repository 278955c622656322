"""OpenCL device selection and per-device context/queue (cached per process).

`IRC_OPENCL_DEVICE` picks the device: `P:D` (platform and device indices) or
`platform-substring:device-substring` (case-insensitive; either side may be empty). Without
it a GPU is preferred, else any device (the PoCL CPU device of `pocl-binary-distribution`
works on a bare machine). `Device.profile` describes the device for launch-shape choices
(`DeviceProfile`: type, vendor, compute units, work-group and local-memory limits, preferred
vector widths, sub-groups, fp16).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

DEVICE_ENV = "IRC_OPENCL_DEVICE"


class DeviceError(RuntimeError):
    """No usable OpenCL device (with the reason)."""


@dataclass(frozen=True)
class DeviceProfile:
    """What launch-shape and kernel-variant choices need to know about a device, read once
    from the driver."""

    kind: str
    """`cpu`, `gpu`, `accelerator` or `other`."""
    vendor: str
    name: str
    compute_units: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_memory_bytes: int
    local_memory_is_global: bool
    """Local memory emulated in global memory (CPU devices): local-memory tiling gains nothing."""
    preferred_vector_width_float: int
    preferred_vector_width_half: int
    subgroups: bool
    """cl_khr_subgroups, cl_intel_subgroups, or an OpenCL 2.1+ device reporting sub-groups."""
    fp16: bool
    """cl_khr_fp16."""

    @property
    def is_gpu(self) -> bool:
        return self.kind == "gpu"

    def fits(self, local_size: tuple[int, ...] | None) -> bool:
        """Whether a local size is within the device's limits (None: the driver chooses)."""
        if local_size is None:
            return True
        if len(local_size) > len(self.max_work_item_sizes):
            return False
        if any(n > limit for n, limit in zip(local_size, self.max_work_item_sizes, strict=False)):
            return False
        total = 1
        for n in local_size:
            total *= n
        return total <= self.max_work_group_size

    def describe(self) -> str:
        """One line for tools and benchmarks."""
        return (
            f"{self.name} ({self.vendor}, {self.kind}): {self.compute_units} compute units, "
            f"work-groups up to {self.max_work_group_size}, "
            f"{self.local_memory_bytes // 1024} KiB local memory"
            f"{' (emulated)' if self.local_memory_is_global else ''}, float vectors of "
            f"{self.preferred_vector_width_float}, sub-groups {'yes' if self.subgroups else 'no'}, "
            f"fp16 {'yes' if self.fp16 else 'no'}"
        )


def read_profile(cl: Any, device: Any) -> DeviceProfile:
    """The `DeviceProfile` of a pyopencl device."""
    types = cl.device_type
    kind = (
        "gpu"
        if device.type & types.GPU
        else "cpu"
        if device.type & types.CPU
        else "accelerator"
        if device.type & types.ACCELERATOR
        else "other"
    )
    extensions = str(device.extensions).split()

    def info(name: str, default: Any) -> Any:
        try:
            return getattr(device, name)
        except Exception:  # an older driver without the query
            return default

    subgroups = "cl_khr_subgroups" in extensions or "cl_intel_subgroups" in extensions
    subgroups = subgroups or int(info("max_num_sub_groups", 0) or 0) > 0
    return DeviceProfile(
        kind=kind,
        vendor=str(device.vendor).strip(),
        name=str(device.name).strip(),
        compute_units=int(device.max_compute_units),
        max_work_group_size=int(device.max_work_group_size),
        max_work_item_sizes=tuple(int(n) for n in device.max_work_item_sizes),
        local_memory_bytes=int(device.local_mem_size),
        local_memory_is_global=device.local_mem_type == cl.device_local_mem_type.GLOBAL,
        preferred_vector_width_float=int(info("preferred_vector_width_float", 1)),
        preferred_vector_width_half=int(info("preferred_vector_width_half", 0)),
        subgroups=subgroups,
        fp16="cl_khr_fp16" in extensions,
    )


@dataclass
class Device:
    cl: Any
    """The pyopencl module."""
    device: Any
    context: Any
    queue: Any
    identity: str
    """Platform, device and driver versions: part of every program cache key."""
    _profiling_queue: Any = None
    _profile: DeviceProfile | None = None

    @property
    def profile(self) -> DeviceProfile:
        """The device's `DeviceProfile` (read once)."""
        if self._profile is None:
            self._profile = read_profile(self.cl, self.device)
        return self._profile

    @property
    def name(self) -> str:
        """The device's name as its driver reports it."""
        return str(self.device.name).strip()

    def has_extension(self, extension: str) -> bool:
        """Whether the device reports the OpenCL extension (e.g. `cl_khr_fp16`)."""
        return extension in str(self.device.extensions).split()

    def profiling_queue(self) -> Any:
        """An in-order queue with event profiling on, created on first use: only profiled
        runs and tuning use it, so normal runs pay nothing for profiling."""
        with _lock:
            if self._profiling_queue is None:
                props = self.cl.command_queue_properties.PROFILING_ENABLE
                self._profiling_queue = self.cl.CommandQueue(
                    self.context, self.device, properties=props
                )
            return self._profiling_queue


_devices: dict[str, Device] = {}
_failures: dict[str, str] = {}
"""Why no device matched a spec (pyopencl missing, no platform, no match): remembered per
spec so that every compile's availability check does not enumerate platforms again."""
_lock = threading.Lock()


def _find(cl: Any, spec: str) -> Any:
    try:
        platforms = cl.get_platforms()
    except Exception as exc:  # pyopencl raises LogicError/RuntimeError when no ICD is found
        raise DeviceError(f"no OpenCL platform ({type(exc).__name__}: {exc})") from None
    devices = []
    for p_index, platform in enumerate(platforms):
        try:
            found = platform.get_devices()
        except Exception:  # a platform without devices
            found = []
        devices += [(p_index, d_index, platform, d) for d_index, d in enumerate(found)]
    if not devices:
        raise DeviceError("no OpenCL device found")
    if spec:
        p_sel, sep, d_sel = spec.partition(":")
        if not sep:
            raise DeviceError(f"{DEVICE_ENV}='{spec}': expected 'platform:device'")
        for p_index, d_index, platform, d in devices:
            if p_sel.isdigit() and d_sel.isdigit():
                if (p_index, d_index) == (int(p_sel), int(d_sel)):
                    return d
            elif p_sel.lower() in platform.name.lower() and d_sel.lower() in d.name.lower():
                return d
        known = "; ".join(f"{p}:{i} {pl.name} / {d.name}" for p, i, pl, d in devices)
        raise DeviceError(f"{DEVICE_ENV}='{spec}' matches no device (devices: {known})")
    gpus = [d for *_, d in devices if d.type & cl.device_type.GPU]
    return (gpus or [d for *_, d in devices])[0]


def get_device() -> Device:
    """The selected device with its context and in-order queue (created once per spec; a
    spec that finds no device keeps failing with the same reason for the process)."""
    spec = os.environ.get(DEVICE_ENV, "").strip()
    with _lock:
        cached = _devices.get(spec)
        if cached is not None:
            return cached
        if spec in _failures:
            raise DeviceError(_failures[spec])
        try:
            import pyopencl as cl
        except Exception as exc:
            _failures[spec] = f"pyopencl is not importable ({type(exc).__name__}: {exc})"
            raise DeviceError(_failures[spec]) from None
        try:
            device = _find(cl, spec)
        except DeviceError as exc:
            _failures[spec] = str(exc)
            raise
        context = cl.Context([device])
        queue = cl.CommandQueue(context, device)
        platform = device.platform
        identity = "|".join(
            [platform.name, platform.version, device.name, device.version, device.driver_version]
        )
        made = Device(cl, device, context, queue, identity)
        _devices[spec] = made
        return made
