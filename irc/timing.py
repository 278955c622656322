"""Pass instrumentation: per-step timing (MLIR's `-mlir-timing`) and progress on a terminal.

The compiler marks its steps with `step(name, module)`; with nothing installed that costs a
context-variable read. Tools install instrumentations around a compilation:

```python
timing = PassTiming()
with instrumented(timing, Progress.for_tool("irc-compile")):
    compiled = irc.compile("model.onnx", ["opencl", "cpu"])
sys.stderr.write(timing.report())
```

Steps nest (`lower @main_opencl_0` holds that executable's lowering passes) and a step that
runs several times (a pass in every partitioning round, a lowering pass on every executable
of its target) is one line with the times added, as in MLIR's tree display:

```
===-------------------------------------------------------------------------===
                         ... Execution time report ...
===-------------------------------------------------------------------------===
  Total Execution Time: 0.4120 seconds

  ----Wall Time----  ----Name----
    0.0310 (  7.5%)  import
    0.0502 ( 12.2%)  canonicalize
    0.1700 ( 41.3%)  lower @main_opencl_0
    0.1690 ( 41.0%)    lower-opencl
    0.4120 (100.0%)  Total
```

The instrumentations are held in a `contextvars.ContextVar`, so they follow the thread (and
task) that installed them and a compilation on another thread is not observed.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from xdsl.ir import Operation

__all__ = [
    "PROGRESS_DELAY_ENV",
    "Instrumentation",
    "PassTiming",
    "Progress",
    "Step",
    "StepSequence",
    "active_instrumentations",
    "instrumented",
    "step",
    "tool_instrumentation",
]


@dataclass
class Step:
    """One running step: a pass, a group of passes, or another phase of a compilation."""

    name: str
    module: Operation | None = None
    """The IR the step works on, when it has one (an instrumentation may read it)."""
    result: Any = None
    """What the step produced, for instrumentations that want it (`partition`: its report)."""
    failed: bool = False
    """Whether the step ended with an exception."""


class Instrumentation(Protocol):
    """Called around every step; `after_step` runs also when the step failed."""

    def before_step(self, step: Step) -> None: ...

    def after_step(self, step: Step) -> None: ...


_ACTIVE: contextvars.ContextVar[tuple[Instrumentation, ...]] = contextvars.ContextVar(
    "irc_instrumentations", default=()
)


@contextmanager
def instrumented(*instrumentations: Instrumentation) -> Iterator[None]:
    """Install `instrumentations` (after those already installed) for the `with` body.

    Instrumentations with a `close()` method (`Progress`) are closed on exit.
    """
    token = _ACTIVE.set(_ACTIVE.get() + instrumentations)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
        for instrumentation in instrumentations:
            close = getattr(instrumentation, "close", None)
            if close is not None:
                close()


def active_instrumentations() -> tuple[Instrumentation, ...]:
    """The instrumentations installed here and now (`instrumented`)."""
    return _ACTIVE.get()


@contextmanager
def step(name: str, module: Operation | None = None) -> Iterator[Step]:
    """Mark a step of the compilation for the installed instrumentations."""
    current = Step(name, module)
    active = _ACTIVE.get()
    if not active:
        yield current
        return
    for instrumentation in active:
        instrumentation.before_step(current)
    try:
        yield current
    except BaseException:
        current.failed = True
        raise
    finally:
        for instrumentation in reversed(active):
            instrumentation.after_step(current)


class StepSequence:
    """Steps begun and ended by hand, for drivers that only get a callback between passes
    (xDSL's `PassPipeline`): `begin(name, module)`, `end()`, and `end_all(failed=True)`
    after an exception."""

    def __init__(self) -> None:
        self._open: list[tuple[Step, tuple[Instrumentation, ...]]] = []

    def begin(self, name: str, module: Operation | None = None) -> None:
        current = Step(name, module)
        active = _ACTIVE.get()
        for instrumentation in active:
            instrumentation.before_step(current)
        self._open.append((current, active))

    def end(self, *, failed: bool = False) -> None:
        current, active = self._open.pop()
        current.failed = failed
        for instrumentation in reversed(active):
            instrumentation.after_step(current)

    def end_all(self, *, failed: bool = False) -> None:
        while self._open:
            self.end(failed=failed)


@contextmanager
def tool_instrumentation(tool: str, *, timing: bool) -> Iterator[PassTiming | None]:
    """What a command-line tool installs around a compilation: progress on a terminal
    (`Progress.for_tool`) and, with `timing`, a `PassTiming` whose report goes to stderr
    when the body ends without an exception."""
    timer = PassTiming() if timing else None
    extra: tuple[Instrumentation, ...] = () if timer is None else (timer,)
    with instrumented(Progress.for_tool(tool), *extra):
        yield timer
    if timer is not None:
        sys.stderr.write(timer.report())


# ---- Timing --------------------------------------------------------------------------------------


@dataclass
class _Timer:
    """Accumulated wall time of one step name under one parent; children in first-seen order."""

    name: str
    seconds: float = 0.0
    children: dict[str, _Timer] = field(default_factory=dict)

    def child(self, name: str) -> _Timer:
        timer = self.children.get(name)
        if timer is None:
            timer = self.children[name] = _Timer(name)
        return timer


_RULE = "===" + "-" * 73 + "==="
_TITLE = "... Execution time report ..."


class PassTiming:
    """Wall time per step, nested, like MLIR's `-mlir-timing -mlir-timing-display=tree`.

    `start(name)` / `stop()` time steps by hand (irc-opt's pass callback, a tool's output
    phase); as an instrumentation it times every `step`. The total runs from creation (or
    `reset`) to `report()`.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every time and start the total again."""
        self._root = _Timer("Total")
        self._stack: list[tuple[_Timer, float]] = []
        self._created = time.perf_counter()

    def start(self, name: str) -> None:
        """Start a step inside the innermost running one."""
        parent = self._stack[-1][0] if self._stack else self._root
        self._stack.append((parent.child(name), time.perf_counter()))

    def stop(self) -> None:
        """Stop the innermost running step, adding its time."""
        timer, started = self._stack.pop()
        timer.seconds += time.perf_counter() - started

    def before_step(self, step: Step) -> None:
        self.start(step.name)

    def after_step(self, step: Step) -> None:
        self.stop()

    def times(self) -> dict[str, float]:
        """Seconds per step path (`lower @main_opencl_0/lower-opencl`), in first-seen order."""
        out: dict[str, float] = {}

        def visit(timer: _Timer, prefix: str) -> None:
            for child in timer.children.values():
                path = f"{prefix}{child.name}"
                out[path] = child.seconds
                visit(child, path + "/")

        visit(self._root, "")
        return out

    def report(self) -> str:
        """The report, MLIR's layout: a header, the total, one line per step, `Total`."""
        while self._stack:  # a step left running (an exception): count it up to now
            self.stop()
        total = time.perf_counter() - self._created
        lines = [
            _RULE,
            _TITLE.center(len(_RULE)).rstrip(),
            _RULE,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]

        def line(seconds: float, name: str, depth: int) -> str:
            share = 100.0 * seconds / total if total > 0 else 0.0
            return f"  {seconds:8.4f} ({share:5.1f}%)  {'  ' * depth}{name}"

        def visit(timer: _Timer, depth: int) -> None:
            for child in timer.children.values():
                lines.append(line(child.seconds, child.name, depth))
                visit(child, depth + 1)

        visit(self._root, 0)
        lines.append(line(total, "Total", 0))
        return "\n".join(lines) + "\n"


# ---- Progress ------------------------------------------------------------------------------------


PROGRESS_DELAY_ENV = "IRC_PROGRESS_DELAY"
"""Environment variable: seconds a step runs before the tools announce it (default 1)."""


def _count_ops(module: Operation | None) -> int | None:
    return None if module is None else sum(1 for _ in module.walk())


class Progress:
    """Progress lines for slow steps, on a terminal only.

    A step still running `delay` seconds after it started is announced on `stream`
    (``irc-compile: lower-opencl (in prepare), 412 ops...``) by a watching thread, and its
    end is reported with its time; with `delay` 0 every step is announced as it starts.
    When `stream` is not a terminal nothing is ever written, and no thread is started.
    """

    def __init__(self, stream: TextIO, *, tool: str, delay: float = 1.0) -> None:
        self.stream = stream
        self.tool = tool
        self.delay = delay
        self.enabled = _is_terminal(stream)
        self._lock = threading.Lock()
        self._running: list[tuple[Step, float, int | None]] = []
        self._announced: set[int] = set()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_tool(cls, tool: str, delay: float | None = None) -> Progress:
        """Progress on `sys.stderr` for a command-line tool; the delay is `delay`, else
        `IRC_PROGRESS_DELAY` (seconds) from the environment, else 1 s."""
        if delay is None:
            try:
                delay = max(float(os.environ.get(PROGRESS_DELAY_ENV, "1")), 0.0)
            except ValueError:
                delay = 1.0
        return cls(sys.stderr, tool=tool, delay=delay)

    def before_step(self, step: Step) -> None:
        if not self.enabled:
            return
        ops = _count_ops(step.module)
        with self._lock:
            self._running.append((step, time.perf_counter(), ops))
            if self.delay <= 0:
                self._announce(len(self._running) - 1)
                return
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="irc-progress", daemon=True)
            self._thread.start()

    def after_step(self, step: Step) -> None:
        if not self.enabled:
            return
        with self._lock:
            index = next(
                i for i in reversed(range(len(self._running))) if self._running[i][0] is step
            )
            _, started, _ = self._running.pop(index)
            announced = id(step) in self._announced
            self._announced.discard(id(step))
            if announced:
                outcome = "failed" if step.failed else "done"
                self._write(f"{step.name} {outcome} in {time.perf_counter() - started:.1f} s")

    def close(self) -> None:
        """Stop the watching thread (idempotent; the next step starts another)."""
        if self._thread is not None:
            self._stopped.set()
            self._thread.join()
            self._thread = None
            self._stopped.clear()

    def _watch(self) -> None:
        poll = min(0.1, max(self.delay / 4, 0.005))
        while not self._stopped.wait(poll):
            with self._lock:
                if not self._running:
                    continue
                now = time.perf_counter()
                for depth, (running, started, _) in enumerate(self._running):
                    if id(running) not in self._announced and now - started >= self.delay:
                        self._announce(depth)

    def _announce(self, depth: int) -> None:
        """Announce the running step at `depth` (the lock is held)."""
        running, _, ops = self._running[depth]
        self._announced.add(id(running))
        parent = f" (in {self._running[depth - 1][0].name})" if depth else ""
        size = "" if ops is None else f", {ops} ops"
        self._write(f"{running.name}{parent}{size}...")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(f"{self.tool}: {text}\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal: progress is best effort
            self.enabled = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
