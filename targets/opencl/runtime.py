"""The OpenCL target's runtime: build (or fetch) programs, upload weights once, enqueue launches.

`OpenCLRuntime().load(executable)` lowers the executable if `lower-opencl` has not run, gets
its program through the cache (building the programs of its sibling OpenCL executables on
other threads at the same time), uploads the `ocl.upload` constants, and prepares the first
execution context of every entry (`execution.py`: per-call input, planned and output buffers
and one kernel per launch with every argument preset). A program whose kernels were not run
yet in this process is then run once on zero-filled buffers, so that drivers that compile
kernels at their first enqueue (PoCL specialises every kernel for its local size there) do
that work at load — at compile time — and not in the first real call; the build and that
warm-up are steps (`irc.timing.step`) that a tool's progress display announces when they
take over a second (`IRC_PROGRESS_DELAY`). On PoCL, whose compiler works under one lock per
process, a warm-up of `MIN_KERNELS` or more kernels of a program that took a while to build
shares the kernels with a helper process (compile_helper.py) that goes from the back of the
list while this process goes from the front; PoCL's kernel cache hands its kernels over.

`execute(entry, args)` takes a free execution context, uploads numpy inputs without waiting
(a device value of the same context is bound in place), enqueues every launch of the entry
on the device's in-order queue with `enqueue_nd_range_kernel` and returns `OpenCLValue`s
that download on `to_host()` (the one wait of a call). The context returns to its pool when
the call's results are dropped; calls on several threads each use their own context.
In a profiled run (`irc.runtime.profiling.active_profile()`), the launches go to the
device's profiling queue instead and their OpenCL event times are added to the profile per
kernel launch; normal runs use the plain queue and pay nothing for profiling.

Program cache: in memory by key (SHA-256 of the source, the build options and the device
identity), and on disk in the private irc cache (`irc.cache`) as `opencl/<key>.bin` with
`<key>.json` recording its size and SHA-256, checked before the binary reaches the driver (a
missing, truncated or tampered entry is rebuilt from source and rewritten). Binaries are
saved at load, after the warm-up, so they include the kernels compiled for the local sizes
actually used. On PoCL with its own kernel cache on (the default; `POCL_KERNEL_CACHE=0` turns
it off) no binary is saved: asking PoCL for a program binary compiles a generic work-group
function of every kernel (7.7 s for MobileNetV2 on a 2-core Xeon), which its own cache
makes redundant — a build from source of a known program takes ~0.1 s there.
`IRC_OPENCL_BINARY_CACHE=on` saves them anyway, `off` never. Build logs: `build.py` (never a
`CompilerWarning`; on stderr with `IRC_OPENCL_BUILD_LOG=1`; in the error when a build fails,
with the ops whose kernels the compiler complained about).

Precision: a program whose `ocl.program` says `precision = "fp16"` or `"fp16-native"` keeps
float tensors as half on the device. Executables still take and return float32 numpy arrays:
inputs are converted to float16 on upload (numpy's rounding, nearest even) and outputs back to
float32 on download (`OpenCLValue.storage`), and the float constants are uploaded as the
float16 the IR holds. `fp16` runs on any device (half bits through vload_half/vstore_half);
loading an `fp16-native` program on a device without cl_khr_fp16 raises `OpenCLLoadError`
naming the device and the extension.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
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
from irc.targets.opencl.build import (
    BUILD_LOG_ENV,
    BUILD_OPTIONS,
    FAST_MATH_BUILD_OPTIONS,
    FAST_MATH_ENV,
    STRICT_BUILD_OPTIONS,
    BuildFailure,
    OpenCLBuildError,
    OpenCLLoadError,
    build,
    program_build_options,
    show_log,
)
from irc.targets.opencl.compile_helper import (
    MAX_CONSTANT_BYTES,
    MIN_KERNELS,
    CompileHelper,
    HelperLaunch,
    Payload,
    compile_from_both_ends,
)
from irc.targets.opencl.compile_helper import enabled as helper_enabled
from irc.targets.opencl.device import Device, get_device
from irc.targets.opencl.execution import (
    ContextPool,
    EntrySpec,
    ExecutionContext,
    LaunchSpec,
    Lease,
)
from irc.targets.opencl.lower import TARGET, is_lowered, lower_executable
from irc.targets.opencl.program import HALF_PRECISIONS

__all__ = [
    "BINARY_CACHE_ENV",
    "BUILD_LOG_ENV",
    "BUILD_OPTIONS",
    "FAST_MATH_BUILD_OPTIONS",
    "FAST_MATH_ENV",
    "STRICT_BUILD_OPTIONS",
    "BuiltProgram",
    "LoadedOpenCLExecutable",
    "OpenCLBuildError",
    "OpenCLLoadError",
    "OpenCLRuntime",
    "OpenCLValue",
    "build_program",
    "prefetch_programs",
    "save_binary",
]

BINARY_CACHE_ENV = "IRC_OPENCL_BINARY_CACHE"
"""`on`: save program binaries in irc's cache on every device; `off`: never; unset/`auto`:
on every device but PoCL with its own kernel cache on."""


HELPER_MIN_BUILD_SECONDS = 0.5
"""A program built faster than this gets no compile helper (compile_helper.py): PoCL's cache
knew it, or its kernels are few and small."""


class OpenCLValue:
    """A tensor in a device buffer (float32, or the int8/uint8 storage of a quantized
    tensor); `to_host()` downloads it. `storage` is the buffer's element type when it
    differs from `dtype` (float16 for a float32 tensor of an fp16 program). `owner` keeps
    the execution context that wrote the buffer from being reused while the value lives."""

    def __init__(
        self,
        device: Device,
        buffer: Any,
        shape: tuple[int, ...],
        dtype: Any = np.float32,
        storage: Any = None,
        owner: object = None,
    ):
        self.device = device
        self.buffer = buffer
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.storage = self.dtype if storage is None else np.dtype(storage)
        self.owner = owner

    def to_host(self) -> np.ndarray:
        out = np.empty(self.shape, dtype=self.storage)
        if out.size:
            self.device.cl.enqueue_copy(self.device.queue, out, self.buffer, is_blocking=True)
        return out if self.storage == self.dtype else out.astype(self.dtype)


# ---- Program cache -----------------------------------------------------------------------------

_programs: dict[str, Any] = {}
_programs_lock = threading.Lock()
_in_flight: dict[str, Future] = {}
"""Builds running now, by key: a second request for the same program waits for the first."""
_warmed: set[tuple[str, str, tuple[int, ...], tuple[int, ...] | None]] = set()
"""(program key, kernel, global size, local size) launched at least once in this process."""
_builders: ThreadPoolExecutor | None = None
_unsaved: set[str] = set()
"""Keys of programs built in this process whose binary is still to be written to the disk
cache (by the `save_binary` of the load that uses it, which may not be the builder's: a
`prefetch_programs` worker only builds)."""


@dataclass
class BuiltProgram:
    program: Any
    key: str
    from_cache: bool
    """Loaded from memory or disk, not compiled from source."""
    saved: bool
    """Nothing (more) to write to the disk cache."""
    log: str = ""
    """The driver's build log (empty when the program came from memory)."""
    build_seconds: float = 0.0
    """Wall seconds of the driver's build from source in this process (0: none)."""


CACHE_NAMESPACE = "opencl"
"""The program binaries' directory in the private irc cache (`irc.cache`)."""


def program_key(device: Device, source: str) -> str:
    """The cache key of a program: source, build options and device identity."""
    text = "\0".join([source, BUILD_OPTIONS, device.identity])
    return hashlib.sha256(text.encode()).hexdigest()


def pocl_kernel_cache_on(device: Device) -> bool:
    """Whether `device` is PoCL's with its own kernel cache on (`POCL_KERNEL_CACHE`)."""
    pocl = "portable computing language" in str(device.device.platform.name).lower()
    return pocl and os.environ.get("POCL_KERNEL_CACHE", "1").strip() != "0"


def saves_binaries(device: Device) -> bool:
    """Whether binaries go to irc's disk cache on `device` (`IRC_OPENCL_BINARY_CACHE`)."""
    choice = os.environ.get(BINARY_CACHE_ENV, "").strip().lower()
    if choice in ("on", "1", "true", "yes", "always"):
        return True
    if choice in ("off", "0", "false", "no", "never"):
        return False
    return not pocl_kernel_cache_on(device)


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


def _build_error(source: str, failure: BuildFailure) -> OpenCLBuildError:
    log = failure.log or failure.error
    lines = _kernel_ops(source)
    numbers = re.findall(r"(?:\.cl|>):(\d+):\d+:", log)
    ops = sorted({lines.get(int(n), "?") for n in numbers})
    where = "; ".join(ops) if ops else "unknown op"
    return OpenCLBuildError(
        f"opencl: program build failed (kernels of: {where})\n{failure.error}\n{log}", log
    )


def _build_uncached(device: Device, source: str, key: str) -> BuiltProgram:
    keep_binary = saves_binaries(device)
    if keep_binary:  # only a binary matching its recorded SHA-256 is handed to the driver
        binary = cache.read_verified(CACHE_NAMESPACE, key, ".bin")
        if binary is not None:
            try:
                program, log = build(device, binary=binary)
            except BuildFailure:
                pass  # stale for this driver: rebuild from source
            else:
                show_log(device, f"program {key[:12]} (cached binary)", log)
                return BuiltProgram(program, key, True, True, log)
    start = time.perf_counter()
    try:
        program, log = build(device, source=source)
    except BuildFailure as failure:
        raise _build_error(source, failure) from None
    seconds = time.perf_counter() - start
    show_log(device, f"program {key[:12]} (source)", log)
    return BuiltProgram(program, key, False, not keep_binary, log, seconds)


def build_program(device: Device, source: str) -> BuiltProgram:
    """The program for `source` on `device`: from memory, from disk, or compiled (a build
    of the same program already running on another thread is waited for)."""
    key = program_key(device, source)
    with _programs_lock:
        if key in _programs:
            return BuiltProgram(_programs[key], key, True, key not in _unsaved)
        running = _in_flight.get(key)
        if running is None:
            running = _in_flight[key] = Future()
            owner = True
        else:
            owner = False
    if not owner:
        built = running.result()  # raises the builder's error
        return BuiltProgram(
            built.program, key, True, key not in _unsaved, built.log, built.build_seconds
        )
    try:
        built = _build_uncached(device, source, key)
    except BaseException as exc:
        with _programs_lock:
            del _in_flight[key]
        running.set_exception(exc)
        raise
    with _programs_lock:
        _programs[key] = built.program
        if not built.saved:
            _unsaved.add(key)
        del _in_flight[key]
    running.set_result(built)
    return built


def prefetch_programs(device: Device, sources: Sequence[str]) -> list[Future]:
    """Start building `sources` on worker threads (the drivers' compilers release the GIL);
    `build_program` on one of them later waits for its build. Returns the futures."""
    global _builders
    todo = []
    with _programs_lock:
        for source in dict.fromkeys(sources):
            key = program_key(device, source)
            if key not in _programs and key not in _in_flight:
                todo.append(source)
        if todo and _builders is None:
            workers = max(1, min(4, os.cpu_count() or 1))
            _builders = ThreadPoolExecutor(workers, thread_name_prefix="irc-opencl-build")
        builders = _builders
    if builders is None:
        return []
    return [builders.submit(build_program, device, source) for source in todo]


def save_binary(device: Device, built: BuiltProgram) -> None:
    """Write the program's binary to the disk cache (atomically, with its SHA-256)."""
    if built.saved:
        return
    built.saved = True
    _unsaved.discard(built.key)
    try:
        (binary,) = built.program.get_info(device.cl.program_info.BINARIES)
        cache.write_entry(CACHE_NAMESPACE, built.key, ".bin", bytes(binary))
    except OSError:
        pass  # a read-only cache only costs the next process a build


# ---- Loaded executables ------------------------------------------------------------------------


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
    """The device buffers' element types: float32 tensors are float16 in fp16 (either)."""
    half = precision in HALF_PRECISIONS
    return [np.dtype(np.float16) if half and d == np.float32 else d for d in dtypes]


FP16_EXTENSION = "cl_khr_fp16"


def check_precision(device: Device, program: ocl.ProgramOp) -> None:
    """Raise `OpenCLLoadError` when the program needs half support the device lacks."""
    if program.precision == "fp16-native" and not device.has_extension(FP16_EXTENSION):
        raise OpenCLLoadError(
            f"opencl: the program was lowered with precision=fp16-native, but device "
            f"'{device.name}' lacks the {FP16_EXTENSION} extension (lower it with "
            "precision=fp16, which any device runs, or fp32)"
        )


@dataclass
class _Entry:
    spec: EntrySpec
    pool: ContextPool


class LoadedOpenCLExecutable(LoadedExecutable):
    """A loaded OpenCL executable: program built, constants uploaded, kernels prepared."""

    def __init__(
        self,
        device: Device,
        built: BuiltProgram,
        entries: dict[str, _Entry],
        constants: list,
        name: str = "",
        source: str = "",
    ):
        self.device = device
        self.name = name
        """The executable's symbol name (profile rows)."""
        self.built = built
        self.source = source
        """The program's source (what a compile helper process builds)."""
        self._entries = entries
        self._constants = constants  # the kernels point at them

    @property
    def from_cache(self) -> bool:
        """Whether the program came from the cache (no compile at load)."""
        return self.built.from_cache

    def accepts_device_values(self) -> bool:
        return True

    def contexts_made(self, entry: str) -> int:
        """How many execution contexts `entry` has made so far (tests, diagnostics)."""
        return self._entries[entry].pool.made

    def launch_geometry(self, entry: str) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
        """(description, global size, local size) of every launch of `entry`."""
        return [
            (launch.description, launch.global_size, launch.local_size or ())
            for launch in self._entries[entry].spec.launches
        ]

    def _host_input(self, entry: str, i: int, arg: Any, spec: EntrySpec) -> np.ndarray:
        if not isinstance(arg, np.ndarray) and isinstance(arg, DeviceValue):
            arg = arg.to_host()
        if not isinstance(arg, np.ndarray):
            raise InputError(
                f"opencl: argument #{i} of @{entry} must be a numpy array, got {type(arg).__name__}"
            )
        if arg.dtype != spec.input_dtypes[i]:
            raise InputError(
                f"opencl: argument #{i} of @{entry} must be {spec.input_dtypes[i]}, got {arg.dtype}"
            )
        if arg.shape != spec.inputs[i]:
            raise InputError(
                f"opencl: argument #{i} of @{entry} must have shape {spec.inputs[i]}, "
                f"got {arg.shape}"
            )
        return arg

    def _inputs(self, entry: str, spec: EntrySpec, args: Sequence[Any]) -> list[Any]:
        """Per argument: a device buffer to bind, or a host array to upload."""
        out: list[Any] = []
        for i, (arg, expected) in enumerate(zip(args, spec.inputs, strict=True)):
            if isinstance(arg, OpenCLValue) and arg.device.context == self.device.context:
                if arg.shape != expected or arg.dtype != spec.input_dtypes[i]:
                    raise InputError(
                        f"opencl: argument #{i} of @{entry} must be {spec.input_dtypes[i]} "
                        f"of shape {expected}, got {arg.dtype} of shape {arg.shape}"
                    )
                if arg.storage == spec.input_storage[i]:
                    out.append(arg)
                    continue
                arg = arg.to_host()  # another precision's buffer: convert through the host
            out.append(self._host_input(entry, i, arg, spec))
        return out

    def execute(self, entry: str, args: Sequence[Any]) -> Sequence[Any]:
        found = self._entries.get(entry)
        if found is None:
            known = ", ".join(f"@{name}" for name in self._entries)
            raise InputError(f"opencl: no entry @{entry} in this executable (entries: {known})")
        spec = found.spec
        if len(args) != len(spec.inputs):
            raise InputError(
                f"opencl: @{entry} takes {len(spec.inputs)} arguments, got {len(args)}"
            )
        inputs = self._inputs(entry, spec, args)
        context = found.pool.acquire()
        try:
            self._enqueue(entry, spec, context, inputs)
        except BaseException:
            self.device.queue.finish()
            found.pool.release(context)
            raise
        if not spec.outputs:
            found.pool.release(context)
            return []
        lease = Lease()
        found.pool.lease(lease, context)
        return [
            OpenCLValue(self.device, buffer, shape, dtype, storage, lease)
            for buffer, shape, dtype, storage in zip(
                context.outputs, spec.outputs, spec.output_dtypes, spec.output_storage, strict=True
            )
        ]

    def _enqueue(
        self, entry: str, spec: EntrySpec, context: ExecutionContext, inputs: list[Any]
    ) -> None:
        """Uploads without waiting, then every launch of the entry, in the queue's order."""
        cl, queue = self.device.cl, self.device.queue
        uploads = []
        for i, value in enumerate(inputs):
            if isinstance(value, OpenCLValue):
                context.bind_input(i, value.buffer)
                continue
            buffer = context.inputs[i]
            context.bind_input(i, buffer)
            if value.size:
                storage = spec.input_storage[i]
                if storage == np.float16 and value.dtype != np.float16:
                    with np.errstate(over="ignore"):  # to half: beyond its range is ±inf
                        data = np.ascontiguousarray(value, storage)
                else:
                    data = np.ascontiguousarray(value, storage)
                uploads.append(cl.enqueue_copy(queue, buffer, data, is_blocking=False))
        context.uploads = uploads  # the previous call's uploads are long done (in order)
        profile = active_profile()
        if profile is None:
            for kernel, launch in zip(context.kernels, spec.launches, strict=True):
                cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size, launch.local_size)
            return
        queue.finish()  # uploads and earlier dispatches' launches out of the timing
        launch_queue = self.device.profiling_queue()
        events = [
            cl.enqueue_nd_range_kernel(launch_queue, kernel, launch.global_size, launch.local_size)
            for kernel, launch in zip(context.kernels, spec.launches, strict=True)
        ]
        launch_queue.finish()
        profile.record_kernels(
            TARGET,
            f"@{self.name}::@{entry}",
            [
                (i, launch.name, launch.description, e.profile.end - e.profile.start)
                for i, (launch, e) in enumerate(zip(spec.launches, events, strict=True))
            ],
        )

    def _cold_launches(self) -> list[tuple[_Entry, int]]:
        """(entry, launch index) of every launch signature (kernel, global and local size)
        not run yet in this process, once each, in launch order."""
        seen: set[tuple[str, tuple[int, ...], tuple[int, ...] | None]] = set()
        out = []
        with _programs_lock:
            for entry in self._entries.values():
                for i, launch in enumerate(entry.spec.launches):
                    signature = (launch.name, launch.global_size, launch.local_size)
                    warmed = (self.built.key, *signature) in _warmed
                    if not warmed and signature not in seen:
                        seen.add(signature)
                        out.append((entry, i))
        return out

    def _helper_payload(
        self, cold: list[tuple[_Entry, int]], contexts: dict[int, ExecutionContext]
    ) -> Payload | None:
        """What a compile helper process needs for `cold` (None: constants too large)."""
        cl, queue = self.device.cl, self.device.queue
        launches: list[HelperLaunch] = []
        constants: dict[str, bytes] = {}
        total = 0
        for entry, i in cold:
            launch = entry.spec.launches[i]
            context = contexts[id(entry)]
            buffers = {"b": context.planned, "in": dict(enumerate(context.inputs))}
            buffers["out"] = dict(enumerate(context.outputs))
            args: list[tuple[str, int]] = []
            for kind, index in launch.args:
                if kind == "c":
                    key, buffer = f"c{index}", self._constants[index]
                    if key not in constants:
                        total += buffer.size
                        if total > MAX_CONSTANT_BYTES:
                            return None
                        host = np.empty(buffer.size, np.uint8)
                        cl.enqueue_copy(queue, host, buffer, is_blocking=True)
                        constants[key] = host.tobytes()
                else:
                    key, buffer = f"{id(entry)}:{kind}{index}", buffers[kind][index]
                args.append((key, int(buffer.size)))
            launches.append(HelperLaunch(launch.name, launch.global_size, launch.local_size, args))
        options = program_build_options(self.device)
        return Payload(self.device.identity, self.source, options, launches, constants)

    def _helper_pays(self, cold: list[tuple[_Entry, int]]) -> bool:
        """Whether a helper process compiling from the back of `cold` (compile_helper.py)
        pays: PoCL with its kernel cache on, `MIN_KERNELS` or more kernels, a program whose
        build took a while (a quick build means PoCL's cache knew the program, and so its
        kernels), and `compile_helper.enabled()` (the switch, a free CPU)."""
        if len(cold) < MIN_KERNELS or self.built.build_seconds < HELPER_MIN_BUILD_SECONDS:
            return False
        return helper_enabled() and pocl_kernel_cache_on(self.device)

    def _compile_with_helper(self, cold: list[tuple[_Entry, int]]) -> None:
        """Launch `cold` from the front here, on zero-filled buffers, while a helper
        process compiles from the back (what is left goes to the ordinary warm-up)."""
        cl, queue = self.device.cl, self.device.queue
        zero = np.zeros(1, np.uint8)
        contexts: dict[int, ExecutionContext] = {}
        pools: dict[int, ContextPool] = {}
        for entry, _ in cold:
            if id(entry) not in contexts:
                contexts[id(entry)] = context = entry.pool.acquire()
                pools[id(entry)] = entry.pool
                for buffer in context.all_buffers():
                    cl.enqueue_fill_buffer(queue, buffer, zero, 0, buffer.size)
        try:
            payload = self._helper_payload(cold, contexts)
            if payload is None:
                return
            try:
                helper = CompileHelper(payload)
            except OSError:  # no process to start: the warm-up compiles everything here
                return

            def compile_here(index: int) -> None:
                entry, i = cold[index]
                launch = entry.spec.launches[i]
                kernel = contexts[id(entry)].kernels[i]
                cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size, launch.local_size)
                queue.finish()

            compile_from_both_ends(helper, compile_here, len(cold))
        finally:
            for key, context in contexts.items():
                pools[key].release(context)

    def warm_up(self) -> int:
        """Run every entry once on zero-filled buffers when some of its launches (kernel,
        global and local size) never ran in this process, so that the driver's compilation
        at first enqueue happens now; returns how many entries ran. On PoCL a helper process
        may compile part of the kernels meanwhile (`_helper_pays`, compile_helper.py)."""
        cl, queue = self.device.cl, self.device.queue
        cold = self._cold_launches()
        if not cold:
            return 0
        if self._helper_pays(cold):
            self._compile_with_helper(cold)
        zero = np.zeros(1, np.uint8)
        ran = 0
        for entry in self._entries.values():
            signatures = {
                (self.built.key, launch.name, launch.global_size, launch.local_size)
                for launch in entry.spec.launches
            }
            with _programs_lock:
                if signatures <= _warmed:
                    continue
            context = entry.pool.acquire()
            try:
                for buffer in context.all_buffers():
                    cl.enqueue_fill_buffer(queue, buffer, zero, 0, buffer.size)
                for kernel, launch in zip(context.kernels, entry.spec.launches, strict=True):
                    cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size, launch.local_size)
                queue.finish()
            finally:
                entry.pool.release(context)
            with _programs_lock:
                _warmed.update(signatures)
            ran += 1
        return ran


def kernel_descriptions(source: str) -> dict[str, str]:
    """Kernel name -> the comment (what it computes) right before its definition."""
    out: dict[str, str] = {}
    comment = ""
    for line in source.splitlines():
        if m := re.fullmatch(r"/\* (.*) \*/", line):
            comment = m.group(1)
        elif m := re.match(r"__kernel (?:__attribute__\(\(.*?\)\) )?void (k[0-9]+)\(", line):
            out[m.group(1)] = comment
    return out


def _fit_local_sizes(device: Device, spec: EntrySpec, context: ExecutionContext) -> None:
    """Leave the local size to the driver for a launch whose local size the device (its
    `DeviceProfile`) or the compiled kernel cannot run: the IR's rule does not know the
    device."""
    cl = device.cl
    profile = device.profile
    for launch, kernel in zip(spec.launches, context.kernels, strict=True):
        local = launch.local_size
        if local is None:
            continue
        limit = int(
            kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device.device)
        )
        if not profile.fits(local) or int(np.prod(local)) > limit:
            launch.local_size = None


def _sibling_sources(executable: delegate.ExecutableOp, device: Device) -> list[str]:
    """Sources of the other lowered OpenCL executables next to `executable` that this
    device can build (fp16 ones only with cl_khr_fp16)."""
    parent = executable.parent_block()
    if parent is None:
        return []
    out = []
    for other in parent.ops:
        if other is executable or not isinstance(other, delegate.ExecutableOp):
            continue
        if other.target.data != TARGET or not is_lowered(other):
            continue
        for op in other.body.block.ops:
            if isinstance(op, ocl.ProgramOp):
                if op.precision == "fp16-native" and not device.has_extension(FP16_EXTENSION):
                    continue
                out.append(op.source.data)
    return out


def _entry_spec(func: FuncOp, precision: str, descriptions: dict[str, str]) -> EntrySpec:
    name = func.sym_name.data
    ops = list(func.body.block.ops)
    execute = ops[0] if ops else None
    if not isinstance(execute, ocl.ExecuteOp):
        raise OpenCLLoadError(f"opencl: entry @{name} is not lowered to ocl.execute")
    input_dtypes = _dtypes(func.function_type.inputs.data)
    output_dtypes = _dtypes(func.function_type.outputs.data)
    planned: dict[int, int] = {}
    launches: list[LaunchSpec] = []
    for op in execute.body.block.ops:
        if isinstance(op, ocl.AllocOp):
            planned[op.id.value.data] = op.bytes.value.data
            continue
        assert isinstance(op, ocl.LaunchOp)
        args: list[tuple[str, int]] = []
        for arg in op.args.data:
            m = ocl.BUFFER_NAME.fullmatch(arg.data)
            assert m is not None
            args.append((m.group(1), int(m.group(2))))
        local = tuple(a.value.data for a in op.local_size.data) or None
        launches.append(
            LaunchSpec(
                op.kernel.data,
                op.label.data if op.label else descriptions.get(op.kernel.data, ""),
                tuple(a.value.data for a in op.global_size.data),
                local,
                args,
            )
        )
    return EntrySpec(
        _shapes(func.function_type.inputs.data, f"@{name}"),
        _shapes(func.function_type.outputs.data, f"@{name}"),
        input_dtypes,
        output_dtypes,
        _storage(input_dtypes, precision),
        _storage(output_dtypes, precision),
        planned,
        launches,
    )


class OpenCLRuntime(TargetRuntime):
    """Loads OpenCL executables: program through the cache, weights uploaded once, kernels
    compiled and run once at load."""

    def load(self, executable: Operation) -> LoadedOpenCLExecutable:
        from irc.timing import step

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

        name = executable.sym_name.data
        source = programs[0].source.data
        with step(f"opencl: build @{name}"):
            # pyright sees aot's BuiltProgram under the irc.targets name (.typecheck maps it)
            # and this module's under targets.: one class, two module names
            built: BuiltProgram | None = embedded_program(device, programs[0])  # pyright: ignore[reportAssignmentType]
            if built is None:
                prefetch_programs(device, _sibling_sources(executable, device))
                built = build_program(device, source)
        descriptions = kernel_descriptions(source)
        flags = cl.mem_flags
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
        entries: dict[str, _Entry] = {}
        for func in executable.body.block.ops:
            if isinstance(func, FuncOp):
                spec = _entry_spec(func, precision, descriptions)
                pool = ContextPool(device, built.program, spec, constants)
                first = pool.acquire()  # the first call's context, made now
                _fit_local_sizes(device, spec, first)
                pool.release(first)
                entries[func.sym_name.data] = _Entry(spec, pool)
        loaded = LoadedOpenCLExecutable(device, built, entries, constants, name, source)
        with step(f"opencl: compile kernels of @{name}"):
            loaded.warm_up()
            save_binary(device, built)
        return loaded
