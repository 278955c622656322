"""The OpenCL target's runtime: build (or fetch) programs, upload weights once, enqueue launches.

`OpenCLRuntime().load(executable)` lowers the executable if `lower-opencl` has not run, gets
its program through the cache, uploads the `ocl.upload` constants, allocates the planned
buffers and the per-entry input buffers, and creates one `cl.Kernel` per launch with its
constant/planned arguments set once. `execute(entry, args)` uploads numpy inputs (a
DeviceValue of the same context is used in place), allocates fresh output buffers, sets only
the per-call arguments and enqueues every launch without waiting; the results are
`OpenCLValue`s that download on `to_host()`. The queue is in order, so planned buffers are
safely reused from one call to the next; a lock serialises calls on one loaded executable.

Program cache: in memory by key (SHA-256 of the source, the build options and the device
identity), and on disk under `$IRC_CACHE_DIR/opencl/<key>.bin` with `<key>.json` recording the
SHA-256 of the binary, which is checked before loading (a bad entry is rebuilt). Binaries are
saved after the first call's launches have run, so they include the kernels compiled for the
local sizes actually used. A build failure raises `OpenCLBuildError` with the build log and the
ops whose kernels the compiler complained about.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from irc.dialects import delegate, ocl
from irc.dialects.nn import array_from_dense
from irc.dtypes import numpy_dtype
from irc.runtime.errors import InputError
from irc.targets.base import DeviceValue, LoadedExecutable, TargetRuntime
from irc.targets.cpu.toolchain import cache_dir
from irc.targets.opencl.device import Device, get_device
from irc.targets.opencl.lower import TARGET, is_lowered, lower_executable

BUILD_OPTIONS = "-cl-fast-relaxed-math -cl-mad-enable"


class OpenCLLoadError(RuntimeError):
    """An executable the OpenCL runtime cannot load."""


class OpenCLBuildError(OpenCLLoadError):
    """The OpenCL compiler rejected a generated program (message: ops involved + build log)."""


class OpenCLValue:
    """A tensor in a device buffer (float32, or the int8/uint8 storage of a quantized
    tensor); `to_host()` downloads it."""

    def __init__(
        self,
        device: Device,
        buffer: Any,
        shape: tuple[int, ...],
        dtype: Any = np.float32,
    ):
        self.device = device
        self.buffer = buffer
        self.shape = shape
        self.dtype = np.dtype(dtype)

    def to_host(self) -> np.ndarray:
        out = np.empty(self.shape, dtype=self.dtype)
        if out.size:
            self.device.cl.enqueue_copy(self.device.queue, out, self.buffer, is_blocking=True)
        return out


# ---- Program cache -----------------------------------------------------------------------------

_programs: dict[str, Any] = {}
_programs_lock = threading.Lock()


@dataclass
class BuiltProgram:
    program: Any
    key: str
    from_cache: bool
    """Loaded from memory or disk, not compiled from source."""
    saved: bool


def _paths(key: str) -> tuple[Path, Path]:
    root = cache_dir() / "opencl"
    return root / f"{key}.bin", root / f"{key}.json"


def _kernel_ops(source: str) -> dict[int, str]:
    """Source line -> the comment (op description) of the kernel starting at or before it."""
    out: dict[int, str] = {}
    current = "?"
    for number, line in enumerate(source.splitlines(), start=1):
        m = re.fullmatch(r"/\* (.*) \*/", line)
        if m:
            current = m.group(1)
        out[number] = current
    return out


def build_program(device: Device, source: str) -> BuiltProgram:
    """The program for `source` on `device`: from memory, from disk, or compiled."""
    cl = device.cl
    key = hashlib.sha256("\0".join([source, BUILD_OPTIONS, device.identity]).encode()).hexdigest()
    with _programs_lock:
        if key in _programs:
            return BuiltProgram(_programs[key], key, True, True)
        bin_path, meta_path = _paths(key)
        try:
            binary = bin_path.read_bytes()
            meta = json.loads(meta_path.read_text())
            if meta.get("key") == key and meta.get("sha256") == hashlib.sha256(binary).hexdigest():
                program = cl.Program(device.context, [device.device], [binary])
                program.build(options=BUILD_OPTIONS)
                _programs[key] = program
                return BuiltProgram(program, key, True, True)
        except (OSError, ValueError, cl.Error):
            pass  # missing, corrupt or stale: rebuild from source
        program = cl.Program(device.context, source)
        try:
            program.build(options=BUILD_OPTIONS)
        except cl.Error as exc:
            log = str(exc)
            lines = _kernel_ops(source)
            numbers = re.findall(r"(?:\.cl|>):(\d+):\d+:", log)
            ops = sorted({lines.get(int(n), "?") for n in numbers})
            where = "; ".join(ops) if ops else "unknown op"
            raise OpenCLBuildError(
                f"opencl: program build failed (kernels of: {where})\n{log}"
            ) from None
        _programs[key] = program
        return BuiltProgram(program, key, False, False)


def save_binary(device: Device, built: BuiltProgram) -> None:
    """Write the program's binary to the disk cache (atomically, with its SHA-256)."""
    if built.saved:
        return
    built.saved = True
    try:
        (binary,) = built.program.get_info(device.cl.program_info.BINARIES)
        bin_path, meta_path = _paths(built.key)
        bin_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = bin_path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(bytes(binary))
        tmp.replace(bin_path)
        meta = {"key": built.key, "sha256": hashlib.sha256(bytes(binary)).hexdigest()}
        tmp = meta_path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(meta))
        tmp.replace(meta_path)
    except (OSError, ValueError):
        pass  # a read-only cache only costs the next process a build


# ---- Loaded executables ------------------------------------------------------------------------


@dataclass
class _Launch:
    kernel: Any
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    per_call: list[tuple[int, str, int]]
    """(argument position, "in"/"out", index) set on every call."""


@dataclass
class _Entry:
    inputs: list[tuple[int, ...]]
    outputs: list[tuple[int, ...]]
    input_buffers: list[Any]
    launches: list[_Launch]
    input_dtypes: list[np.dtype]
    output_dtypes: list[np.dtype]


def _shapes(types: Sequence[Any], where: str) -> list[tuple[int, ...]]:
    out = []
    for t in types:
        if not isinstance(t, TensorType):
            raise OpenCLLoadError(f"opencl: {where} has a non-tensor signature")
        out.append(tuple(t.get_shape()))
    return out


def _dtypes(types: Sequence[Any]) -> list[np.dtype]:
    """float32, or a quantized tensor's 8-bit storage dtype."""
    return [np.dtype(numpy_dtype(t)) for t in types]


class LoadedOpenCLExecutable(LoadedExecutable):
    """A loaded OpenCL executable: program built, constants uploaded, kernels prepared."""

    def __init__(self, device: Device, built: BuiltProgram, entries: dict[str, _Entry], keep: list):
        self.device = device
        self.built = built
        self._entries = entries
        self._keep = keep  # constant and planned buffers the kernels point at
        self._lock = threading.Lock()

    @property
    def from_cache(self) -> bool:
        """Whether the program came from the cache (no compile at load)."""
        return self.built.from_cache

    def accepts_device_values(self) -> bool:
        return True

    def execute(self, entry: str, args: Sequence[Any]) -> Sequence[Any]:
        spec = self._entries.get(entry)
        if spec is None:
            known = ", ".join(f"@{name}" for name in self._entries)
            raise InputError(f"opencl: no entry @{entry} in this executable (entries: {known})")
        if len(args) != len(spec.inputs):
            raise InputError(
                f"opencl: @{entry} takes {len(spec.inputs)} arguments, got {len(args)}"
            )
        cl, queue = self.device.cl, self.device.queue
        with self._lock:
            in_buffers: list[Any] = []
            for i, (arg, expected) in enumerate(zip(args, spec.inputs, strict=True)):
                if isinstance(arg, OpenCLValue) and arg.device.context == self.device.context:
                    if arg.shape != expected or arg.dtype != spec.input_dtypes[i]:
                        raise InputError(
                            f"opencl: argument #{i} of @{entry} must be {spec.input_dtypes[i]} "
                            f"of shape {expected}, got {arg.dtype} of shape {arg.shape}"
                        )
                    in_buffers.append(arg.buffer)
                    continue
                if not isinstance(arg, np.ndarray) and isinstance(arg, DeviceValue):
                    arg = arg.to_host()
                if not isinstance(arg, np.ndarray):
                    raise InputError(
                        f"opencl: argument #{i} of @{entry} must be a numpy array, got "
                        f"{type(arg).__name__}"
                    )
                if arg.dtype != spec.input_dtypes[i]:
                    raise InputError(
                        f"opencl: argument #{i} of @{entry} must be {spec.input_dtypes[i]}, "
                        f"got {arg.dtype}"
                    )
                if arg.shape != expected:
                    raise InputError(
                        f"opencl: argument #{i} of @{entry} must have shape {expected}, "
                        f"got {arg.shape}"
                    )
                buffer = spec.input_buffers[i]
                if arg.size:
                    cl.enqueue_copy(queue, buffer, np.ascontiguousarray(arg), is_blocking=True)
                in_buffers.append(buffer)
            out_buffers = [
                cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, max(4, 4 * _size(s)))
                for s in spec.outputs
            ]
            for launch in spec.launches:
                for position, kind, index in launch.per_call:
                    buffers = in_buffers if kind == "in" else out_buffers
                    launch.kernel.set_arg(position, buffers[index])
                cl.enqueue_nd_range_kernel(
                    queue, launch.kernel, launch.global_size, launch.local_size
                )
            if not self.built.saved:
                queue.finish()
                save_binary(self.device, self.built)
        return [
            OpenCLValue(self.device, b, s, d)
            for b, s, d in zip(out_buffers, spec.outputs, spec.output_dtypes, strict=True)
        ]


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


class OpenCLRuntime(TargetRuntime):
    """Loads OpenCL executables: program through the cache, weights uploaded once."""

    def load(self, executable: Operation) -> LoadedOpenCLExecutable:
        if not isinstance(executable, delegate.ExecutableOp) or executable.target.data != TARGET:
            raise OpenCLLoadError('opencl: expected a delegate.executable of target "opencl"')
        if not is_lowered(executable):
            executable = executable.clone()
            lower_executable(executable)
        device = get_device()
        cl = device.cl
        programs = [op for op in executable.body.block.ops if isinstance(op, ocl.ProgramOp)]
        if len(programs) != 1:
            raise OpenCLLoadError(f"opencl: expected one ocl.program, got {len(programs)}")
        built = build_program(device, programs[0].source.data)
        flags = cl.mem_flags
        keep: list[Any] = []
        constants: list[Any] = []
        for upload in programs[0].uploads:
            data = array_from_dense(upload.value)
            stored = data.dtype in (np.int8, np.uint8)  # integers of quantized constants
            data = np.ascontiguousarray(data, None if stored else np.float32)
            if data.size:
                buffer = cl.Buffer(
                    device.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=data
                )
            else:
                buffer = cl.Buffer(device.context, flags.READ_ONLY, 4)
            constants.append(buffer)
        keep += constants
        entries: dict[str, _Entry] = {}
        for func in executable.body.block.ops:
            if not isinstance(func, FuncOp):
                continue
            name = func.sym_name.data
            ops = list(func.body.block.ops)
            execute = ops[0] if ops else None
            if not isinstance(execute, ocl.ExecuteOp):
                raise OpenCLLoadError(f"opencl: entry @{name} is not lowered to ocl.execute")
            inputs = _shapes(func.function_type.inputs.data, f"@{name}")
            outputs = _shapes(func.function_type.outputs.data, f"@{name}")
            input_buffers = [
                cl.Buffer(device.context, flags.READ_ONLY, max(4, 4 * _size(s))) for s in inputs
            ]
            planned: dict[int, Any] = {}
            launches: list[_Launch] = []
            for op in execute.body.block.ops:
                if isinstance(op, ocl.AllocOp):
                    planned[op.id.value.data] = cl.Buffer(
                        device.context, flags.READ_WRITE, max(4, op.bytes.value.data)
                    )
                    continue
                assert isinstance(op, ocl.LaunchOp)
                kernel = cl.Kernel(built.program, op.kernel.data)
                per_call: list[tuple[int, str, int]] = []
                for position, arg in enumerate(op.args.data):
                    m = ocl.BUFFER_NAME.fullmatch(arg.data)
                    assert m is not None
                    kind, index = m.group(1), int(m.group(2))
                    if kind == "c":
                        kernel.set_arg(position, constants[index])
                    elif kind == "b":
                        kernel.set_arg(position, planned[index])
                    else:
                        per_call.append((position, kind, index))
                local = tuple(a.value.data for a in op.local_size.data) or None
                launches.append(
                    _Launch(
                        kernel,
                        tuple(a.value.data for a in op.global_size.data),
                        local,
                        per_call,
                    )
                )
            keep += list(planned.values())
            entries[name] = _Entry(
                inputs,
                outputs,
                input_buffers,
                launches,
                _dtypes(func.function_type.inputs.data),
                _dtypes(func.function_type.outputs.data),
            )
        return LoadedOpenCLExecutable(device, built, entries, keep)
