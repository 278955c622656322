"""The OpenCL target's runtime: build (or fetch) programs, upload weights once, enqueue launches.

`OpenCLRuntime().load(executable)` lowers the executable if `lower-opencl` has not run, gets
its program through the cache, uploads the `ocl.upload` constants, allocates the planned
buffers and the per-entry input buffers, and creates one `cl.Kernel` per launch with its
constant/planned arguments set once. `execute(entry, args)` uploads numpy inputs (a
DeviceValue of the same context is used in place), allocates fresh output buffers, sets only
the per-call arguments and enqueues every launch without waiting; the results are
`OpenCLValue`s that download on `to_host()`. The queue is in order, so planned buffers are
safely reused from one call to the next; a lock serialises calls on one loaded executable.
In a profiled run (`irc.runtime.profiling.active_profile()`), the launches go to the
device's profiling queue instead and their OpenCL event times are added to the profile per
kernel launch; normal runs use the plain queue and pay nothing for profiling.

Program cache: in memory by key (SHA-256 of the source, the build options and the device
identity), and on disk in the private irc cache (`irc.cache`) as `opencl/<key>.bin` with
`<key>.json` recording its size and SHA-256, checked before the binary reaches the driver (a
missing, truncated or tampered entry is rebuilt from source and rewritten). Binaries are
saved after the first call's launches have run, so they include the kernels compiled for the
local sizes actually used. A build failure raises `OpenCLBuildError` with the build log and the
ops whose kernels the compiler complained about.

Precision: a program whose `ocl.program` says `precision = "fp16"` keeps float tensors as half
on the device. Executables still take and return float32 numpy arrays: inputs are converted
to float16 on upload and outputs back to float32 on download (`OpenCLValue.storage`), and the
float constants are uploaded as the float16 the IR holds. Loading such a program on a device
without cl_khr_fp16 raises `OpenCLLoadError` naming the device and the extension.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from irc import cache
from irc.dialects import delegate, ocl
from irc.dialects.nn import array_from_dense
from irc.dtypes import numpy_dtype
from irc.runtime.errors import InputError
from irc.runtime.profiling import active_profile
from irc.targets.base import DeviceValue, LoadedExecutable, TargetRuntime
from irc.targets.opencl.device import Device, get_device
from irc.targets.opencl.lower import TARGET, is_lowered, lower_executable

BUILD_OPTIONS = "-cl-fast-relaxed-math -cl-mad-enable"


class OpenCLLoadError(RuntimeError):
    """An executable the OpenCL runtime cannot load."""


class OpenCLBuildError(OpenCLLoadError):
    """The OpenCL compiler rejected a generated program (message: ops involved + build log)."""


class OpenCLValue:
    """A tensor in a device buffer (float32, or the int8/uint8 storage of a quantized
    tensor); `to_host()` downloads it. `storage` is the buffer's element type when it
    differs from `dtype` (float16 for a float32 tensor of an fp16 program)."""

    def __init__(
        self,
        device: Device,
        buffer: Any,
        shape: tuple[int, ...],
        dtype: Any = np.float32,
        storage: Any = None,
    ):
        self.device = device
        self.buffer = buffer
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.storage = self.dtype if storage is None else np.dtype(storage)

    def to_host(self) -> np.ndarray:
        out = np.empty(self.shape, dtype=self.storage)
        if out.size:
            self.device.cl.enqueue_copy(self.device.queue, out, self.buffer, is_blocking=True)
        return out if self.storage == self.dtype else out.astype(self.dtype)


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


CACHE_NAMESPACE = "opencl"
"""The program binaries' directory in the private irc cache (`irc.cache`)."""


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
        try:  # only a binary matching its recorded SHA-256 is handed to the driver
            if (binary := cache.read_verified(CACHE_NAMESPACE, key, ".bin")) is not None:
                program = cl.Program(device.context, [device.device], [binary])
                program.build(options=BUILD_OPTIONS)
                _programs[key] = program
                return BuiltProgram(program, key, True, True)
        except cl.Error:
            pass  # stale for this driver: rebuild from source
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
        cache.write_entry(CACHE_NAMESPACE, built.key, ".bin", bytes(binary))
    except OSError:
        pass  # a read-only cache only costs the next process a build


# ---- Loaded executables ------------------------------------------------------------------------


@dataclass
class _Launch:
    name: str
    description: str
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
    input_storage: list[np.dtype]
    """The device buffers' element types (float16 for float32 tensors in fp16)."""
    output_storage: list[np.dtype]


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


def _storage(dtypes: Sequence[np.dtype], precision: str) -> list[np.dtype]:
    """The device buffers' element types: float32 tensors are float16 in fp16."""
    half = precision == "fp16"
    return [np.dtype(np.float16) if half and d == np.float32 else d for d in dtypes]


FP16_EXTENSION = "cl_khr_fp16"


def check_precision(device: Device, program: ocl.ProgramOp) -> None:
    """Raise `OpenCLLoadError` when the program needs half support the device lacks."""
    if program.precision == "fp16" and not device.has_extension(FP16_EXTENSION):
        raise OpenCLLoadError(
            f"opencl: the program was lowered with precision=fp16, but device "
            f"'{device.name}' lacks the {FP16_EXTENSION} extension (lower it with "
            "precision=fp32, or leave IRC_OPENCL_PRECISION unset)"
        )


class LoadedOpenCLExecutable(LoadedExecutable):
    """A loaded OpenCL executable: program built, constants uploaded, kernels prepared."""

    def __init__(
        self,
        device: Device,
        built: BuiltProgram,
        entries: dict[str, _Entry],
        keep: list,
        name: str = "",
    ):
        self.device = device
        self.name = name
        """The executable's symbol name (profile rows)."""
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
                    if arg.storage == spec.input_storage[i]:
                        in_buffers.append(arg.buffer)
                        continue
                    arg = arg.to_host()  # another precision's buffer: convert through the host
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
                    data = np.ascontiguousarray(arg, spec.input_storage[i])
                    cl.enqueue_copy(queue, buffer, data, is_blocking=True)
                in_buffers.append(buffer)
            out_buffers = [
                cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, _buffer_bytes(s, d))
                for s, d in zip(spec.outputs, spec.output_storage, strict=True)
            ]
            profile = active_profile()
            launch_queue = queue
            if profile is not None:
                queue.finish()  # earlier work (other dispatches' launches) out of the timing
                launch_queue = self.device.profiling_queue()
            events: list[Any] = []
            for launch in spec.launches:
                for position, kind, index in launch.per_call:
                    buffers = in_buffers if kind == "in" else out_buffers
                    launch.kernel.set_arg(position, buffers[index])
                event = cl.enqueue_nd_range_kernel(
                    launch_queue, launch.kernel, launch.global_size, launch.local_size
                )
                if profile is not None:
                    events.append(event)
            if profile is not None:
                launch_queue.finish()
                profile.record_kernels(
                    TARGET,
                    f"@{self.name}::@{entry}",
                    [
                        (i, launch.name, launch.description, e.profile.end - e.profile.start)
                        for i, (launch, e) in enumerate(zip(spec.launches, events, strict=True))
                    ],
                )
            if not self.built.saved:
                queue.finish()
                save_binary(self.device, self.built)
        return [
            OpenCLValue(self.device, b, s, d, st)
            for b, s, d, st in zip(
                out_buffers, spec.outputs, spec.output_dtypes, spec.output_storage, strict=True
            )
        ]


def kernel_descriptions(source: str) -> dict[str, str]:
    """Kernel name -> the comment (what it computes) right before its definition."""
    out: dict[str, str] = {}
    comment = ""
    for line in source.splitlines():
        if m := re.fullmatch(r"/\* (.*) \*/", line):
            comment = m.group(1)
        elif m := re.match(r"__kernel void (k[0-9]+)\(", line):
            out[m.group(1)] = comment
    return out


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _buffer_bytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    """Bytes of a device buffer holding a tensor (its dtype's size per element: 8 for int64
    indices, 1 for masks and 8-bit storage; at least 4, OpenCL refuses empty buffers)."""
    return max(4, dtype.itemsize * _size(shape))


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
        check_precision(device, programs[0])
        precision = programs[0].precision
        from irc.targets.opencl.aot import embedded_program  # irc-compile --embed-binaries

        built = embedded_program(device, programs[0]) or build_program(
            device, programs[0].source.data
        )
        descriptions = kernel_descriptions(programs[0].source.data)
        flags = cl.mem_flags
        keep: list[Any] = []
        constants: list[Any] = []
        for upload in programs[0].uploads:
            data = array_from_dense(upload.value)
            # integers of quantized constants and masks; float16 of an fp16 program
            stored = data.dtype in (np.int8, np.uint8, np.float16)
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
            input_dtypes = _dtypes(func.function_type.inputs.data)
            output_dtypes = _dtypes(func.function_type.outputs.data)
            input_storage = _storage(input_dtypes, precision)
            input_buffers = [
                cl.Buffer(device.context, flags.READ_ONLY, _buffer_bytes(s, d))
                for s, d in zip(inputs, input_storage, strict=True)
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
                        op.kernel.data,
                        op.label.data if op.label else descriptions.get(op.kernel.data, ""),
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
                input_dtypes,
                output_dtypes,
                input_storage,
                _storage(output_dtypes, precision),
            )
        return LoadedOpenCLExecutable(device, built, entries, keep, executable.sym_name.data)
