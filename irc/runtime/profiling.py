"""Time per step of a `Program`: the data behind `irc-run --profile`.

```python
profile = Profile()
for _ in range(10):
    program.run(inputs, profile=profile)
print(profile.format())  # one row per dispatch, host op and transfer
```

A run records into a local list and merges it into the profile under a lock at the end, so
one `Profile` may be shared by runs on several threads. Without `profile=`, `Program.run`
takes its untimed loop and pays nothing for this module.

Times are wall-clock around each step's callable. A target runtime that works
asynchronously (it returns device values before the device has finished) shows its time
where the executor waits for it: in the next step that needs the data, often a transfer.

While a profiled run is in progress, `active_profile()` returns its profile, and a target
runtime that can time its kernels on the device (the OpenCL runtime, from OpenCL events)
adds them with `Profile.record_kernels`: `kernel_rows()` and the second table of `format()`
show device time per kernel launch. Unprofiled runs leave `active_profile()` None.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from irc.runtime.executor import Program

__all__ = ["KernelRow", "Profile", "ProfileRow", "active_profile", "kernel_profiling"]

_ACTIVE: ContextVar[Profile | None] = ContextVar("irc_active_profile", default=None)


def active_profile() -> Profile | None:
    """The profile of the run in progress in this thread/context, if it is profiled."""
    return _ACTIVE.get()


@contextmanager
def kernel_profiling(profile: Profile | None) -> Iterator[None]:
    """Make `profile` the active one for the duration of a run (None: no profiling)."""
    token = _ACTIVE.set(profile)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@dataclass(frozen=True)
class KernelRow:
    """The accumulated device time of one kernel launch of a dispatch."""

    target: str
    dispatch: str
    """`@exe::@entry` of the dispatch that ran the launch."""
    index: int
    """The launch's position in the entry."""
    kernel: str
    """The kernel's name in its program (`k3`)."""
    description: str
    """What the kernel computes (`nn.conv2d 1x8x8x3, ... -> 1x8x8x16`)."""
    calls: int
    total_ms: float

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class ProfileRow:
    """The accumulated time of one step of the schedule."""

    index: int
    """The step's position in `Program.steps`."""
    kind: str
    """"dispatch" (an executable's entry on a target runtime), "host" (an op run by the
    executor's step factory, by default a reference kernel) or "transfer" (a dispatch result
    copied to the host with `to_host()`)."""
    name: str
    """The op name (`nn.conv2d`), `@exe::@entry` for a dispatch, `to_host @exe::@entry#N`
    for a transfer of the entry's result N."""
    target: str
    """The target of a dispatch or transfer; empty for host ops."""
    location: str
    """`file:line:col` of the op (or its nearest located ancestor); empty when unknown."""
    calls: int
    total_ms: float

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0


class Profile:
    """Accumulates step times of one `Program` over any number of runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._program: Program | None = None
        self._step_ns: list[int] = []
        self._calls: list[int] = []
        self._run_ns = 0
        self._runs = 0
        self._kernels: dict[tuple[str, str, int], list] = {}
        """(target, dispatch, launch index) -> [kernel, description, calls, ns]."""

    @property
    def program(self) -> Program | None:
        """The program this profile records (set by its first run)."""
        return self._program

    @property
    def runs(self) -> int:
        """How many runs were recorded."""
        return self._runs

    @property
    def total_ms(self) -> float:
        """Wall time of all recorded runs (steps plus the executor's own work)."""
        return self._run_ns / 1e6

    def record(self, program: Program, step_ns: Sequence[int], run_ns: int) -> None:
        """Add one run of `program`: nanoseconds per step (in schedule order) and in all."""
        with self._lock:
            if self._program is None:
                self._program = program
                self._step_ns = [0] * len(program.steps)
                self._calls = [0] * len(program.steps)
            elif self._program is not program:
                raise ValueError(
                    f"this Profile records {self._program!r}; use a new Profile for {program!r}"
                )
            if len(step_ns) != len(self._step_ns):
                raise ValueError(f"expected {len(self._step_ns)} step times, got {len(step_ns)}")
            for index, ns in enumerate(step_ns):
                self._step_ns[index] += ns
                self._calls[index] += 1
            self._run_ns += run_ns
            self._runs += 1

    def record_kernels(
        self, target: str, dispatch: str, launches: Sequence[tuple[int, str, str, int]]
    ) -> None:
        """Add device times of one dispatch's kernel launches: (launch index, kernel name,
        description, nanoseconds) each."""
        with self._lock:
            for index, kernel, description, ns in launches:
                entry = self._kernels.setdefault(
                    (target, dispatch, index), [kernel, description, 0, 0]
                )
                entry[2] += 1
                entry[3] += ns

    def kernel_rows(self, *, order: Literal["schedule", "time"] = "schedule") -> list[KernelRow]:
        """One row per kernel launch timed on a device, in dispatch and launch order or
        slowest first."""
        with self._lock:
            items = [(key, list(value)) for key, value in self._kernels.items()]
        rows = [
            KernelRow(target, dispatch, index, kernel, description, calls, ns / 1e6)
            for (target, dispatch, index), (kernel, description, calls, ns) in items
        ]
        if order == "time":
            rows.sort(key=lambda row: -row.total_ms)
        return rows

    def rows(self, *, order: Literal["schedule", "time"] = "schedule") -> list[ProfileRow]:
        """One row per step, in schedule order or slowest first."""
        from irc.diagnostics import location_of

        with self._lock:
            program, step_ns, calls = self._program, list(self._step_ns), list(self._calls)
        if program is None:
            return []
        rows = []
        for index, step in enumerate(program.steps):
            location = location_of(step.op)
            rows.append(
                ProfileRow(
                    index=index,
                    kind=step.kind,
                    name=step.label or step.op.name,
                    target=step.target,
                    location="" if location is None else str(location),
                    calls=calls[index],
                    total_ms=step_ns[index] / 1e6,
                )
            )
        if order == "time":
            rows.sort(key=lambda row: (-row.total_ms, row.index))
        return rows

    def format(self, *, order: Literal["schedule", "time"] = "schedule", top: int = 0) -> str:
        """The rows as a text table (`top` > 0 keeps that many rows), with a total line."""
        rows = self.rows(order=order)
        shown = rows[:top] if top > 0 else rows
        header = ("#", "kind", "target", "op", "location", "calls", "total ms", "mean ms", "%")
        step_total = sum(row.total_ms for row in rows) or 1.0
        table = [header] + [
            (
                str(row.index),
                row.kind,
                row.target or "-",
                row.name,
                row.location or "-",
                str(row.calls),
                f"{row.total_ms:.3f}",
                f"{row.mean_ms:.3f}",
                f"{100 * row.total_ms / step_total:.1f}",
            )
            for row in shown
        ]
        widths = [max(len(line[i]) for line in table) for i in range(len(header))]
        numeric = {0, 5, 6, 7, 8}
        lines = [
            "  ".join(
                cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
                for i, cell in enumerate(line)
            ).rstrip()
            for line in table
        ]
        if len(shown) < len(rows):
            lines.append(f"... {len(rows) - len(shown)} more steps")
        mean = self.total_ms / self._runs if self._runs else 0.0
        lines.append(f"{self._runs} runs, {self.total_ms:.3f} ms in all, {mean:.3f} ms per run")
        kernels = self.kernel_rows(order=order)
        if kernels:
            lines += ["", "device time per kernel launch (from device events):"]
            lines += self._kernel_table(kernels[:top] if top > 0 else kernels)
            if top > 0 and len(kernels) > top:
                lines.append(f"... {len(kernels) - top} more kernels")
        return "\n".join(lines)

    @staticmethod
    def _kernel_table(rows: Sequence[KernelRow]) -> list[str]:
        header = ("target", "dispatch", "#", "kernel", "op", "calls", "total ms", "mean ms", "%")
        total = sum(row.total_ms for row in rows) or 1.0
        table = [header] + [
            (
                row.target,
                row.dispatch,
                str(row.index),
                row.kernel,
                row.description,
                str(row.calls),
                f"{row.total_ms:.3f}",
                f"{row.mean_ms:.3f}",
                f"{100 * row.total_ms / total:.1f}",
            )
            for row in rows
        ]
        widths = [max(len(line[i]) for line in table) for i in range(len(header))]
        numeric = {2, 5, 6, 7, 8}
        return [
            "  ".join(
                cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
                for i, cell in enumerate(line)
            ).rstrip()
            for line in table
        ]
