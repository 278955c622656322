"""OpenCL device selection and per-device context/queue (cached per process).

`IRC_OPENCL_DEVICE` picks the device: `P:D` (platform and device indices) or
`platform-substring:device-substring` (case-insensitive; either side may be empty). Without
it a GPU is preferred, else any device (the PoCL CPU device of `pocl-binary-distribution`
works on a bare machine).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

DEVICE_ENV = "IRC_OPENCL_DEVICE"


class DeviceError(RuntimeError):
    """No usable OpenCL device (with the reason)."""


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
