"""Execution contexts of the OpenCL runtime: per-call buffers and kernels, arguments preset.

An entry of a loaded executable is a fixed list of launches over buffers that the memory
plan fixed at compile time: constants (`c<i>`), planned intermediates (`b<i>`), the entry's
inputs (`in<i>`) and outputs (`out<i>`). An `ExecutionContext` owns one set of the
per-call buffers (inputs, planned, outputs) and one `cl.Kernel` per launch with **every**
argument set once when the context is made (`kernel.set_args`). A call then only uploads
its inputs (non-blocking, in the queue's order), enqueues the launches with
`enqueue_nd_range_kernel` and hands out its outputs; nothing is waited for until a result is
downloaded.

Contexts come from a `ContextPool` per entry. A call takes a free context (or makes one),
and the context goes back to the pool when every output value of that call has been
dropped, so a result the caller still holds is never overwritten and several threads can
run one executable at once, each in its own context, without a lock around the launches.
All contexts of a device share its in-order queue: work of different calls is ordered on
the device, and a context reused by the next call writes its buffers only after the
previous call's reads were enqueued.

A device value of the same context (another dispatch's output) passed as an input is bound
to the launches that read it instead of being copied; the next call that passes a host
array binds the context's own input buffer again.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from irc.targets.opencl.device import Device

__all__ = ["ContextPool", "EntrySpec", "ExecutionContext", "LaunchSpec", "Lease", "buffer_bytes"]

MAX_FREE_CONTEXTS = 8
"""Free contexts kept per entry (more are released: their buffers go back to the driver)."""


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def buffer_bytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    """Bytes of a device buffer holding a tensor (its dtype's size per element: 8 for int64
    indices, 1 for masks and 8-bit storage; at least 4, OpenCL refuses empty buffers)."""
    return max(4, dtype.itemsize * _size(shape))


@dataclass
class LaunchSpec:
    """One kernel launch of an entry."""

    name: str
    """The kernel's name in the program (`k3`)."""
    description: str
    """What it computes (profile rows)."""
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    args: list[tuple[str, int]]
    """Per argument: ("c" constant | "b" planned | "in" | "out", index)."""


@dataclass
class EntrySpec:
    """What a call of one entry needs: signature, planned buffers and launches."""

    inputs: list[tuple[int, ...]]
    outputs: list[tuple[int, ...]]
    input_dtypes: list[np.dtype]
    output_dtypes: list[np.dtype]
    input_storage: list[np.dtype]
    """The device buffers' element types (float16 for float32 tensors in fp16)."""
    output_storage: list[np.dtype]
    planned: dict[int, int]
    """Planned buffer id -> bytes."""
    launches: list[LaunchSpec]


class ExecutionContext:
    """The buffers and kernels of one call of an entry, every kernel argument preset."""

    def __init__(self, device: Device, program: Any, spec: EntrySpec, constants: Sequence[Any]):
        cl = device.cl
        context, flags = device.context, cl.mem_flags
        self.inputs = [
            cl.Buffer(context, flags.READ_ONLY, buffer_bytes(s, d))
            for s, d in zip(spec.inputs, spec.input_storage, strict=True)
        ]
        self.outputs = [
            cl.Buffer(context, flags.READ_WRITE, buffer_bytes(s, d))
            for s, d in zip(spec.outputs, spec.output_storage, strict=True)
        ]
        self.planned = {
            index: cl.Buffer(context, flags.READ_WRITE, max(4, size))
            for index, size in spec.planned.items()
        }
        self.kernels: list[Any] = []
        self.readers: list[list[tuple[Any, int]]] = [[] for _ in spec.inputs]
        """Per input: the (kernel, argument position) pairs that read it."""
        for launch in spec.launches:
            kernel = cl.Kernel(program, launch.name)
            values = []
            for position, (kind, index) in enumerate(launch.args):
                if kind == "c":
                    values.append(constants[index])
                elif kind == "b":
                    values.append(self.planned[index])
                elif kind == "in":
                    values.append(self.inputs[index])
                    self.readers[index].append((kernel, position))
                else:
                    values.append(self.outputs[index])
            kernel.set_args(*values)
            self.kernels.append(kernel)
        self.bound = list(self.inputs)
        """The buffer each input's readers point at now."""
        self.uploads: list[Any] = []
        """The last call's non-blocking uploads (they keep the host arrays alive)."""

    def bind_input(self, index: int, buffer: Any) -> None:
        """Point the launches reading input `index` at `buffer` (no-op when they already do)."""
        if self.bound[index] is buffer:
            return
        for kernel, position in self.readers[index]:
            kernel.set_arg(position, buffer)
        self.bound[index] = buffer

    def all_buffers(self) -> list[Any]:
        """Every buffer the context owns."""
        return [*self.inputs, *self.planned.values(), *self.outputs]


@dataclass
class ContextPool:
    """Free execution contexts of one entry; `acquire` takes or makes one, `lease` returns
    it when an object (the call's results) is garbage."""

    device: Device
    program: Any
    spec: EntrySpec
    constants: Sequence[Any]
    free: list[ExecutionContext] = field(default_factory=list)
    made: int = 0
    """Contexts made so far (tests, diagnostics)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def acquire(self) -> ExecutionContext:
        with self._lock:
            if self.free:
                return self.free.pop()
            self.made += 1
        return ExecutionContext(self.device, self.program, self.spec, self.constants)

    def release(self, context: ExecutionContext) -> None:
        with self._lock:
            if len(self.free) < MAX_FREE_CONTEXTS:
                self.free.append(context)

    def lease(self, holder: object, context: ExecutionContext) -> None:
        """Give `context` back once `holder` is garbage."""
        weakref.finalize(holder, self.release, context)


class Lease:
    """Held by every output value of a call; when the last one is dropped, the call's
    context goes back to its pool."""

    __slots__ = ("__weakref__",)
