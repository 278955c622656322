"""Work-group (local) sizes of OpenCL launches: a rule, or measured once and cached.

`rule_local_size(global)` is the default: the largest power of two up to `RULE_MAX` that
divides the (1-D) global size; for other sizes of at least `RULE_MIN`, the largest divisor
leaving `RULE_MIN_GROUPS` work-groups (PoCL would run one group, on one core); below
`RULE_MIN`, an empty local size (the driver chooses).

`tune_local_sizes(...)` (`opencl-codegen{tune=true}`) measures, for every distinct
(kernel, global size) of a program, the driver's choice, the rule's and the other
power-of-two divisors the kernel allows, with OpenCL events on a profiling queue (one
warm-up, then the best of `REPEATS` runs), and keeps the fastest. Choices are cached per
device and kernel: in memory, and on disk as one entry per choice in the `opencl-tuning`
directory of the private irc cache (`irc.cache`: mode 0700, `<key>.choice` (JSON) plus a
`<key>.json` record of its SHA-256, written atomically). An entry that does not verify is
measured again and replaced.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from irc import cache

RULE_MIN = 16
RULE_MAX = 64
RULE_MIN_GROUPS = 8
CANDIDATES = (8, 16, 32, 64, 128, 256)
REPEATS = 3
CHOICE_SUFFIX = ".choice"

_memory: dict[str, list[int]] = {}
_memory_lock = threading.Lock()


def rule_local_size(global_size: Sequence[int]) -> list[int]:
    """The default local size of a launch (empty: the driver's choice)."""
    if len(global_size) != 1:
        return []
    size = RULE_MAX
    while size >= RULE_MIN:
        if global_size[0] % size == 0:
            return [size]
        size //= 2
    if global_size[0] < RULE_MIN:
        return []
    # PoCL's own choice for such a size is one work-group (one core): register-tiled
    # kernels have few, heavy work-items, so keep at least RULE_MIN_GROUPS groups
    cap = min(RULE_MAX, global_size[0] // RULE_MIN_GROUPS)
    return [max(d for d in range(1, cap + 1) if global_size[0] % d == 0)]


CACHE_NAMESPACE = "opencl-tuning"
"""The choices' directory in the private irc cache (`irc.cache`)."""


def tuning_dir() -> Path:
    """Where tuned choices live: the `opencl-tuning` directory of the irc cache root."""
    return cache.cache_root() / CACHE_NAMESPACE


def tuning_key(identity: str, kernel_body: str, global_size: Sequence[int]) -> str:
    """The cache key of one choice: device identity (with the build options), kernel text
    and global size."""
    text = "\0".join([identity, kernel_body, ",".join(map(str, global_size))])
    return hashlib.sha256(text.encode()).hexdigest()


def load_choice(key: str) -> list[int] | None:
    """A cached choice (memory, then a disk entry that verifies), or None."""
    with _memory_lock:
        if key in _memory:
            return list(_memory[key])
    raw = cache.read_verified(CACHE_NAMESPACE, key, CHOICE_SUFFIX)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    local = data.get("local") if isinstance(data, dict) else None
    if not isinstance(local, list) or not all(isinstance(v, int) and v > 0 for v in local):
        return None
    with _memory_lock:
        _memory[key] = list(local)
    return list(local)


def store_choice(key: str, local: Sequence[int], timings: Mapping[str, float]) -> None:
    """Cache a choice in memory and, atomically, on disk (a read-only cache is skipped)."""
    with _memory_lock:
        _memory[key] = list(local)
    choice = {"local": list(local), "ns": dict(timings)}  # the record repeats it, for people
    try:
        cache.write_entry(CACHE_NAMESPACE, key, CHOICE_SUFFIX, json.dumps(choice).encode(), choice)
    except OSError:
        pass


def clear_memory() -> None:
    """Forget the in-memory choices (tests; the disk cache stays)."""
    with _memory_lock:
        _memory.clear()


@dataclass
class TuningLaunch:
    """One launch to tune: its kernel, buffers and global size."""

    kernel: str
    kernel_body: str
    args: list[str]
    global_size: list[int]


def candidates(global_size: Sequence[int], limit: int) -> list[list[int]]:
    """Local sizes worth measuring: the driver's choice, the rule's, and the power-of-two
    divisors of the global size up to `limit`."""
    out: list[list[int]] = [[]]
    rule = rule_local_size(global_size)
    if rule:
        out.append(rule)
    if len(global_size) == 1:
        for size in CANDIDATES:
            if size <= limit and global_size[0] % size == 0 and [size] not in out:
                out.append([size])
    return out


def _time_ns(cl: Any, queue: Any, kernel: Any, global_size: tuple, local: tuple | None) -> int:
    cl.enqueue_nd_range_kernel(queue, kernel, global_size, local).wait()
    best = None
    for _ in range(REPEATS):
        event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, local)
        event.wait()
        ns = event.profile.end - event.profile.start
        best = ns if best is None else min(best, ns)
    assert best is not None
    return best


def tune_local_sizes(
    source: str, launches: Sequence[TuningLaunch], buffer_bytes: Mapping[str, int]
) -> list[list[int]]:
    """The fastest local size of every launch (measured once per device and kernel and
    cached). `buffer_bytes`: size of every buffer a launch names (filled with zeros)."""
    from irc.targets.opencl.device import get_device
    from irc.targets.opencl.runtime import BUILD_OPTIONS, build_program

    device = get_device()
    cl = device.cl
    identity = f"{device.identity}|{BUILD_OPTIONS}"
    keys = [tuning_key(identity, t.kernel_body, t.global_size) for t in launches]
    chosen: dict[str, list[int]] = {}
    for key in keys:
        if key not in chosen and (found := load_choice(key)) is not None:
            chosen[key] = found
    if all(key in chosen for key in keys):
        return [chosen[key] for key in keys]
    program = build_program(device, source).program
    queue = device.profiling_queue()
    buffers = {
        name: cl.Buffer(
            device.context,
            cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
            hostbuf=np.zeros(max(4, size), np.uint8),
        )
        for name, size in buffer_bytes.items()
    }
    limit = device.profile.max_work_group_size
    for launch, key in zip(launches, keys, strict=True):
        if key in chosen:
            continue
        kernel = cl.Kernel(program, launch.kernel)
        for position, arg in enumerate(launch.args):
            kernel.set_arg(position, buffers[arg])
        kernel_limit = kernel.get_work_group_info(
            cl.kernel_work_group_info.WORK_GROUP_SIZE, device.device
        )
        timings: dict[str, float] = {}
        best: tuple[int, list[int]] | None = None
        for local in candidates(launch.global_size, min(limit, int(kernel_limit))):
            try:
                ns = _time_ns(cl, queue, kernel, tuple(launch.global_size), tuple(local) or None)
            except cl.Error:
                continue  # a size this kernel cannot run with
            timings[",".join(map(str, local)) or "driver"] = ns
            if best is None or ns < best[0]:
                best = (ns, local)
        local = best[1] if best is not None else []
        chosen[key] = local
        store_choice(key, local, timings)
    return [chosen[key] for key in keys]
