"""Compiling a program's kernels in a second process, for PoCL's first launches.

PoCL compiles each kernel (specialised for its local size) at the kernel's first enqueue,
and its LLVM layer takes one process-wide lock: builds and kernel compilations of one process
never run side by side, whatever the threads or contexts (measured: two threads building
into two contexts run one after the other). MobileNetV2's warm-up is then ~4.4 CPU seconds
on one core of a two-core machine. A second process has its own lock, and PoCL's kernel
cache (`POCL_CACHE_DIR`, on by default) is shared on disk: what one process compiled, the
other loads in milliseconds. So a warm-up over many kernels starts this module as a helper
process (`python -P compile_helper.py`: it imports only pyopencl and numpy, not irc) that
compiles kernels from the end of the list while the loading process compiles from the front;
when they meet, the loader's ordinary warm-up finds the helper's kernels in the cache.

The protocol (lines of ASCII after the payload; no pickle: the payload is JSON and raw bytes):

* parent -> helper, stdin: the `Payload` (`encode_payload`: the size of a JSON header, 8
  bytes little-endian, the header, then each constant's bytes in the header's order), then
  lines `p <i>` (the parent claimed kernel i) and, when it is done, `stop`;
* helper -> parent, stdout: `c <i>` (about to compile kernel i), `d <i>` (compiled);
  `ready` once the program is built.

The helper stops at the first kernel the parent claimed (both sides go towards each other),
at `stop`, or when its list is done. Anything going wrong in the helper only costs the
parent the kernels it then compiles itself: the helper is an optimisation, never needed.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HELPER_ENV",
    "MIN_KERNELS",
    "CompileHelper",
    "HelperLaunch",
    "Payload",
    "decode_payload",
    "encode_payload",
]

HELPER_ENV = "IRC_OPENCL_COMPILE_HELPER"
"""`0`/`off`: never start a helper process; `on`: start one whenever PoCL's kernel cache is
on and there are `MIN_KERNELS` kernels to compile (also on a one-core machine); unset: also
needs two or more CPUs and one of them idle (the 1-minute load average at most the CPU count
minus one: under a parallel test run or a busy machine the helper's ~0.45 CPU seconds of
start-up would buy nothing)."""

MIN_KERNELS = 8
"""Fewer kernels to compile than this: no helper (starting it costs ~0.3 s of CPU)."""

MAX_CONSTANT_BYTES = 256 << 20
"""More constant bytes than this: no helper (they are copied to it)."""


@dataclass
class HelperLaunch:
    """One kernel to compile: its launch geometry and, per argument, a buffer key and size."""

    kernel: str
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    args: list[tuple[str, int]]
    """Per argument: (buffer key, bytes); one buffer per key, zero-filled unless a constant."""


@dataclass
class Payload:
    """What the helper needs: the device, the program and the kernels, in the parent's order."""

    identity: str
    """`Device.identity` of the parent's device (platform, device and driver versions)."""
    source: str
    options: str
    launches: list[HelperLaunch]
    constants: dict[str, bytes] = field(default_factory=dict)
    """Buffer key -> its contents (the program's constants; other buffers start as zeros)."""


def encode_payload(payload: Payload) -> bytes:
    """The payload as the helper reads it: header size, JSON header, constants' bytes."""
    header = {
        "identity": payload.identity,
        "source": payload.source,
        "options": payload.options,
        "launches": [
            [
                item.kernel,
                list(item.global_size),
                None if item.local_size is None else list(item.local_size),
                item.args,
            ]
            for item in payload.launches
        ],
        "constants": [[key, len(data)] for key, data in payload.constants.items()],
    }
    head = json.dumps(header).encode()
    return b"".join([len(head).to_bytes(8, "little"), head, *payload.constants.values()])


def decode_payload(read: Callable[[int], bytes]) -> Payload:
    """The payload `encode_payload` wrote, from `read(count)` (exactly count bytes)."""
    header = json.loads(read(int.from_bytes(read(8), "little")))
    launches = [
        HelperLaunch(
            str(kernel),
            tuple(int(n) for n in global_size),
            None if local_size is None else tuple(int(n) for n in local_size),
            [(str(key), int(size)) for key, size in args],
        )
        for kernel, global_size, local_size, args in header["launches"]
    ]
    constants = {str(key): read(int(size)) for key, size in header["constants"]}
    return Payload(
        str(header["identity"]), str(header["source"]), str(header["options"]), launches, constants
    )


def _device_identity(platform: Any, device: Any) -> str:
    """`Device.identity` (device.py) of a pyopencl platform and device."""
    parts = [platform.name, platform.version, device.name, device.version]
    return "|".join([*parts, device.driver_version])


def enabled(cpus: int | None = None) -> bool:
    """Whether `HELPER_ENV` and the machine allow a helper process."""
    choice = os.environ.get(HELPER_ENV, "").strip().lower()
    if choice in ("0", "off", "false", "no", "never"):
        return False
    if choice in ("1", "on", "true", "yes", "always"):
        return True
    count = (os.cpu_count() if cpus is None else cpus) or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:  # no load average here: assume the other CPUs are free
        busy = 1.0
    return count >= 2 and busy <= count - 1


class CompileHelper:
    """The helper process seen from the loading process (see the module docstring)."""

    def __init__(self, payload: Payload) -> None:
        self.count = len(payload.launches)
        self.claimed: set[int] = set()
        """Kernels the helper started (or finished) compiling."""
        self.done: set[int] = set()
        self.lowest = self.count
        """The lowest index the helper claimed (it goes down from the end); once it has
        exited, the lowest it finished."""
        self._cond = threading.Condition()
        self._proc = subprocess.Popen(
            [sys.executable, "-P", __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._send(encode_payload(payload))

    def _send(self, data: bytes) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except (OSError, ValueError):
            pass  # the helper is gone: the parent compiles everything itself

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        with contextlib.suppress(OSError, ValueError):  # the pipe closed under the read
            for line in stdout:
                kind, _, index = line.decode("ascii", "replace").strip().partition(" ")
                if not index.isdigit():
                    continue
                i = int(index)
                with self._cond:
                    if kind == "c":
                        self.claimed.add(i)
                        self.lowest = min(self.lowest, i)
                    elif kind == "d":
                        self.done.add(i)
                    self._cond.notify_all()
        with self._cond:  # exited: what it did not finish is the parent's again
            self.lowest = min(self.done, default=self.count)
            self._cond.notify_all()

    def claim(self, index: int) -> bool:
        """Claim kernel `index` for the parent; False when the helper already has it (the
        parent is then done: the rest from here on is the helper's)."""
        with self._cond:
            if index >= self.lowest or index in self.claimed:
                return False
        self._send(f"p {index}\n".encode())
        return True

    @property
    def returncode(self) -> int | None:
        """The helper's exit status (None while it runs)."""
        return self._proc.poll()

    def finish(self, timeout: float = 300.0) -> None:
        """Tell the helper to stop after its current kernel and wait for that kernel; a
        helper compiling nothing (still starting, say) is ended at once (PoCL writes every
        cache file under a temporary name and renames it: an ended helper leaves no partial
        entry)."""
        self._send(b"stop\n")
        with self._cond:
            busy = bool(self.claimed - self.done)
        if not busy:
            with contextlib.suppress(OSError):
                self._proc.terminate()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        finally:
            if self._proc.stdin is not None:
                with contextlib.suppress(OSError):  # lines to a helper that has exited
                    self._proc.stdin.close()
            # the reader sees the end of the pipe once the helper and any linker it started
            # are gone; closing the pipe under a blocked read is the last resort
            self._reader.join(timeout=5)
            if self._proc.stdout is not None:
                with contextlib.suppress(OSError):
                    self._proc.stdout.close()
            self._reader.join(timeout=5)


def compile_from_both_ends(
    helper: CompileHelper, compile_here: Callable[[int], None], count: int
) -> int:
    """Compile kernels `0..count-1` here from the front while the helper goes from the back;
    returns how many were compiled here."""
    here = 0
    try:
        for i in range(count):
            if not helper.claim(i):
                break
            compile_here(i)
            here += 1
    finally:
        helper.finish()
    return here


# ---- the helper process ------------------------------------------------------------------------


def _parent_claims(stdin_fd: int, buffered: bytearray, claims: set[int]) -> bool:
    """Read the parent's pending lines without blocking; True on `stop` or end of input."""
    while select.select([stdin_fd], [], [], 0)[0]:
        chunk = os.read(stdin_fd, 4096)
        if not chunk:
            return True
        buffered += chunk
    *lines, rest = bytes(buffered).split(b"\n")
    buffered[:] = rest
    for line in lines:
        text = line.decode("ascii", "replace").strip()
        if text == "stop":
            return True
        kind, _, index = text.partition(" ")
        if kind == "p" and index.isdigit():
            claims.add(int(index))
    return False


def _serve(payload: Payload, stdin_fd: int, buffered: bytearray) -> None:
    import numpy as np
    import pyopencl as cl

    device = next(
        (
            d
            for p in cl.get_platforms()
            for d in p.get_devices()
            if _device_identity(p, d) == payload.identity
        ),
        None,
    )
    if device is None:
        return
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    # the parent built this source a moment ago: PoCL's cache answers, and the kernels
    # compiled here land where the parent looks, if the build is the same: the driver's own
    # clBuildProgram with the parent's options (pyopencl's public `build` adds options of its
    # own: another program, other cache entries). Its log was the parent's to show.
    low_level = getattr(getattr(cl, "_cl", None), "_Program", None)
    if low_level is not None and hasattr(low_level, "_build"):
        program = low_level(context, payload.source)
        program._build(options=payload.options.encode(), devices=[device])
    else:
        program = cl.Program(context, payload.source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program.build(options=payload.options, devices=[device])
    print("ready", flush=True)
    buffers: dict[str, object] = {}
    zero = np.zeros(1, np.uint8)
    claims: set[int] = set()
    for i in range(len(payload.launches) - 1, -1, -1):
        if _parent_claims(stdin_fd, buffered, claims) or (claims and i <= max(claims)):
            return
        print(f"c {i}", flush=True)
        launch = payload.launches[i]
        values = []
        for key, size in launch.args:
            if key not in buffers:
                flags = cl.mem_flags
                data = payload.constants.get(key)
                if data:
                    buffer = cl.Buffer(
                        context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=data
                    )
                else:
                    buffer = cl.Buffer(context, flags.READ_WRITE, max(4, size))
                    cl.enqueue_fill_buffer(queue, buffer, zero, 0, max(4, size))
                buffers[key] = buffer
            values.append(buffers[key])
        kernel = cl.Kernel(program, launch.kernel)
        kernel.set_args(*values)
        cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size, launch.local_size)
        queue.finish()
        print(f"d {i}", flush=True)


def _read_exactly(stdin_fd: int, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = os.read(stdin_fd, min(1 << 20, count - len(data)))
        if not chunk:
            raise EOFError("the parent closed the pipe")
        data += chunk
    return bytes(data)


def main() -> int:
    """The helper process: read the payload, compile kernels from the end; exit 0."""
    stdin_fd = sys.stdin.fileno()
    try:
        payload = decode_payload(lambda count: _read_exactly(stdin_fd, count))
        _serve(payload, stdin_fd, bytearray())
    except Exception:  # the parent compiles whatever is left
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
