"""The CPU target's runtime: build (or fetch from the cache) and load an executable's library.

`CpuRuntime().load(executable)` lowers the executable first if `lower-cpu` has not run,
builds its translation unit through the cache (`toolchain.build`; generated code that calls
the kernel library, targets/cpu/library.py, comes with the library's core and parts, loaded
first so that it binds to them), loads it with ctypes and
prepares everything a call needs, once: the C function of every entry with its `argtypes`,
the constants copied into 64-byte aligned buffers and their pointer table, and the expected
shapes and dtypes. `execute(entry, args)` then checks the arguments (count, numpy array,
the entry's dtype: float32, or the storage integers of a quantized tensor, exact shape;
non-contiguous arrays are copied), allocates the results and makes one ctypes call.

The workspace arena is per thread (kept between calls), constants are read-only and results
are fresh arrays, so one loaded executable can serve several threads at once without a lock
(tests/test_concurrency.py); ctypes releases the GIL during the call. Loads of the same code
share one library in the process (dlopen returns the loaded one): their constants and
workspaces are still their own, only the thread count below is per library.

A library's kernels, and the loop nests generated as its tasks (`outline`), split over its own
pool (csrc `irc_parallel`, kernels/common/pool.c; for code calling the kernel library, the
pool of that library's core, one per ISA profile in the process, which every executable of
the profile shares, its thread count included): its workers are started on the first
parallel kernel (named "irc-pool"), unbound, woken as a run on 2+ threads starts, spin up to
20 us between the run's jobs and sleep as soon as it ends. The thread count is the default
(OpenMP's, `OMP_NUM_THREADS`, where the library links OpenMP; else `OMP_NUM_THREADS` or the
CPU affinity) unless `IRC_CPU_THREADS` is set when it loads, or `set_threads(n)` is called on
the loaded executable (any time, per library). Only a library with a loop still generated as
an OpenMP loop links OpenMP (`toolchain.uses_openmp`); those loops use the same count, and
OpenMP threads are bound to cores (`toolchain.prepare_openmp`) before the first such library
loads.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from irc.dialects import cpu, delegate
from irc.dialects.nn import array_from_dense
from irc.dtypes import numpy_dtype
from irc.runtime.errors import InputError
from irc.runtime.profiling import active_profile
from irc.targets.base import DeviceValue, LoadedExecutable, TargetRuntime
from irc.targets.cpu import isa, profiling, toolchain
from irc.targets.cpu.lower import TARGET, is_lowered, lower_executable

ALIGNMENT = 64
THREADS_ENV = "IRC_CPU_THREADS"
_C_NAME = re.compile(r"irc_fn_[0-9]+")


class CpuLoadError(RuntimeError):
    """An executable that the CPU runtime cannot load (not a cpu executable, no compiler, ...)."""


def _aligned_empty(nbytes: int) -> tuple[np.ndarray, int]:
    """A byte buffer with a 64-byte aligned region of `nbytes` (the array keeps it alive)."""
    raw = np.empty(max(nbytes, 1) + ALIGNMENT, dtype=np.uint8)
    address = raw.ctypes.data
    offset = (-address) % ALIGNMENT
    return raw, address + offset


@dataclass(frozen=True)
class _Entry:
    fn: Any
    """The ctypes function."""
    inputs: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[np.dtype, ...]
    output_dtypes: tuple[np.dtype, ...]
    """Element dtypes of the arguments and results (quantized tensors: storage integers)."""
    workspace: int
    """Bytes of scratch the function needs."""


class LoadedCpuExecutable(LoadedExecutable):
    """A loaded CPU executable: one C function per entry, constants uploaded once."""

    def __init__(
        self,
        library: toolchain.Library,
        handle: ctypes.CDLL,
        entries: dict[str, _Entry],
        constants: list[np.ndarray],
        table: ctypes.Array[ctypes.c_void_p],
        name: str = "",
        kernels: Sequence[ctypes.CDLL] = (),
    ):
        self.library = library
        self.name = name
        """The executable's symbol name (profile rows say `@name::@entry`)."""
        self._handle = handle  # keeps the library loaded
        self._kernels = tuple(kernels)  # its kernel library (empty: kernels in its own code)
        self._entries = entries
        self._constants = constants  # keeps the buffers the table points at alive
        self._table = table
        self._table_ptr = ctypes.addressof(table)
        self._local = threading.local()
        self._kernel_tables: dict[str, profiling.KernelTable] | None = None

    @property
    def from_cache(self) -> bool:
        """Whether the library came from the build cache (no compiler run at load)."""
        return self.library.from_cache

    @property
    def entries(self) -> tuple[str, ...]:
        return tuple(self._entries)

    @property
    def threads(self) -> int:
        """Threads the library's parallel kernels use."""
        return int(self._handle.irc_get_threads())

    def set_threads(self, count: int) -> None:
        """Run the library's parallel kernels on `count` threads (<= 0: the default)."""
        self._handle.irc_set_threads(int(count))

    def _workspace(self, nbytes: int) -> int:
        local = self._local
        if getattr(local, "size", -1) < nbytes:
            local.buffer, local.address = _aligned_empty(nbytes)
            local.size = nbytes
        return local.address

    def execute(self, entry: str, args: Sequence[Any]) -> Sequence[Any]:
        spec = self._entries.get(entry)
        if spec is None:
            known = ", ".join(f"@{name}" for name in self._entries)
            raise InputError(f"cpu: no entry @{entry} in this executable (entries: {known})")
        if len(args) != len(spec.inputs):
            raise InputError(f"cpu: @{entry} takes {len(spec.inputs)} arguments, got {len(args)}")
        keep: list[np.ndarray] = []
        pointers: list[int] = []
        for i, (arg, expected, dtype) in enumerate(zip(args, spec.inputs, spec.input_dtypes)):
            if not isinstance(arg, np.ndarray) and isinstance(arg, DeviceValue):
                arg = arg.to_host()
            if not isinstance(arg, np.ndarray):
                raise InputError(
                    f"cpu: argument #{i} of @{entry} must be a numpy array, got "
                    f"{type(arg).__name__}"
                )
            if arg.dtype != dtype:
                raise InputError(f"cpu: argument #{i} of @{entry} must be {dtype}, got {arg.dtype}")
            if arg.shape != expected:
                raise InputError(
                    f"cpu: argument #{i} of @{entry} must have shape {expected}, got {arg.shape}"
                )
            if not arg.flags.c_contiguous:
                arg = np.ascontiguousarray(arg)
            keep.append(arg)
            pointers.append(arg.ctypes.data)
        results = [
            np.empty(shape, dtype=dtype)
            for shape, dtype in zip(spec.outputs, spec.output_dtypes, strict=True)
        ]
        pointers += [r.ctypes.data for r in results]
        profile = active_profile()
        if profile is None:
            spec.fn(*pointers, self._table_ptr, self._workspace(spec.workspace))
        else:
            self._profiled_call(profile, entry, spec, pointers)
        return results

    def _profiled_call(self, profile: Any, entry: str, spec: _Entry, pointers: list[int]) -> None:
        """The call, recorded as kernel rows of `profile`: one per op when the library times
        its kernels (`IRC_CPU_PROFILE=1` at lowering), else one for the whole function; the
        kernel column names the ISA the library was built for."""
        if self._kernel_tables is None:
            found = profiling.kernel_tables(self.library.path)
            self._kernel_tables = {t.function: t for t in found}
        table = self._kernel_tables.get(spec.fn.__name__)
        before = table.times_ms() if table else []
        start = time.perf_counter_ns()
        spec.fn(*pointers, self._table_ptr, self._workspace(spec.workspace))
        elapsed = time.perf_counter_ns() - start
        kernel = f"{spec.fn.__name__} [{self.library.isa}]"
        if table:
            after = table.times_ms()
            rows = [
                (i, kernel, label, round((a - b) * 1e6))
                for i, (label, a, b) in enumerate(zip(table.labels, after, before, strict=True))
            ]
        else:
            rows = [(0, kernel, f"@{entry}, all ops", elapsed)]
        profile.record_kernels(TARGET, f"@{self.name}::@{entry}", rows)


class CpuRuntime(TargetRuntime):
    """Loads CPU executables: build through the cache, ctypes frames prepared once."""

    def load(self, executable: Operation) -> LoadedCpuExecutable:
        if not isinstance(executable, delegate.ExecutableOp) or executable.target.data != TARGET:
            raise CpuLoadError('cpu: expected a delegate.executable of target "cpu"')
        if not is_lowered(executable):
            executable = executable.clone()
            lower_executable(executable)
        probe = toolchain.probe()
        if probe.toolchain is None:
            raise CpuLoadError(f"cpu: target not available: {probe.reason}")
        modules = [op for op in executable.body.block.ops if isinstance(op, cpu.CModuleOp)]
        if len(modules) != 1:
            raise CpuLoadError(
                f"cpu: expected one cpu.module in the executable, got {len(modules)}"
            )
        module = modules[0]
        source = module.source.data
        try:
            library = toolchain.build(source, probe.toolchain)
        except isa.IsaError as exc:
            raise CpuLoadError(f"cpu: target not available: {exc}") from None
        # the kernel library first (glue: its core and parts): the library's dependencies then
        # bind to these verified copies by soname, never to files the loader finds unchecked
        kernels = [toolchain.load_library(needed.path) for needed in library.needs]
        if probe.toolchain.openmp and toolchain.uses_openmp(source):
            toolchain.prepare_openmp()
        handle = toolchain.load_library(library.path)
        handle.irc_set_threads.argtypes = [ctypes.c_int]
        handle.irc_set_threads.restype = None
        handle.irc_get_threads.restype = ctypes.c_int
        if wanted := os.environ.get(THREADS_ENV, "").strip():
            try:
                handle.irc_set_threads(int(wanted))
            except ValueError:
                raise CpuLoadError(
                    f"cpu: {THREADS_ENV} must be an integer, got {wanted!r}"
                ) from None
        constants: list[np.ndarray] = []
        addresses: list[int] = []
        for const in module.constants:
            data = np.ascontiguousarray(array_from_dense(const.value))
            raw, address = _aligned_empty(data.nbytes)
            ctypes.memmove(address, data.ctypes.data, data.nbytes)
            constants.append(raw)
            addresses.append(address)
        table = (ctypes.c_void_p * max(1, len(addresses)))(*addresses)
        entries = {
            func.sym_name.data: self._entry(handle, func)
            for func in executable.body.block.ops
            if isinstance(func, FuncOp)
        }
        return LoadedCpuExecutable(
            library, handle, entries, constants, table, executable.sym_name.data, kernels
        )

    @staticmethod
    def _entry(handle: ctypes.CDLL, func: FuncOp) -> _Entry:
        ops = list(func.body.block.ops)
        call = ops[0] if ops else None
        if not isinstance(call, cpu.CallOp):
            raise CpuLoadError(f"cpu: entry @{func.sym_name.data} is not lowered to a cpu.call")
        name = call.function.data
        if not _C_NAME.fullmatch(name):
            raise CpuLoadError(f"cpu: unexpected C function name in @{func.sym_name.data}")

        def shapes(types: Sequence[Any]) -> tuple[tuple[int, ...], ...]:
            out = []
            for t in types:
                if not isinstance(t, TensorType):
                    raise CpuLoadError(f"cpu: @{func.sym_name.data} has a non-tensor signature")
                out.append(tuple(t.get_shape()))
            return tuple(out)

        def dtypes(types: Sequence[Any]) -> tuple[np.dtype, ...]:
            return tuple(numpy_dtype(t) for t in types)

        inputs = shapes(func.function_type.inputs.data)
        outputs = shapes(func.function_type.outputs.data)
        input_dtypes = dtypes(func.function_type.inputs.data)
        output_dtypes = dtypes(func.function_type.outputs.data)
        fn = handle[name]  # a fresh function object: argtypes belong to this load only
        fn.argtypes = [ctypes.c_void_p] * (len(inputs) + len(outputs) + 2)
        fn.restype = None
        return _Entry(fn, inputs, outputs, input_dtypes, output_dtypes, call.workspace.value.data)
