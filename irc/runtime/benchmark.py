"""Timing a `Program` the way TFLite's `benchmark_model` does: the data of `irc-run --benchmark`.

```python
result = benchmark(program, inputs, warmup=3, runs=20)
print(result.first_run_ms, result.stats.median_ms)
```

One first run (timed on its own: it pays for lazy initialisation), `warmup` untimed runs,
then `runs` timed runs whose wall times give the statistics. With `profile=`, the timed runs
also accumulate every step's time into the `Profile` (which adds a little to each run).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from irc.runtime.executor import Program
    from irc.runtime.profiling import Profile

__all__ = ["BenchmarkResult", "RunStats", "benchmark"]


@dataclass(frozen=True)
class RunStats:
    """Statistics of the timed runs, in milliseconds."""

    count: int
    min_ms: float
    median_ms: float
    mean_ms: float
    p90_ms: float
    std_ms: float
    """Population standard deviation."""

    @classmethod
    def of(cls, times_ms: Sequence[float]) -> RunStats:
        """The statistics of `times_ms` (at least one time); p90 by linear interpolation."""
        if not times_ms:
            raise ValueError("no run times")
        ordered = sorted(times_ms)
        count = len(ordered)
        mean = sum(ordered) / count
        variance = sum((t - mean) ** 2 for t in ordered) / count
        return cls(
            count=count,
            min_ms=ordered[0],
            median_ms=_quantile(ordered, 0.5),
            mean_ms=mean,
            p90_ms=_quantile(ordered, 0.9),
            std_ms=math.sqrt(variance),
        )

    def as_dict(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "min_ms": self.min_ms,
            "median_ms": self.median_ms,
            "mean_ms": self.mean_ms,
            "p90_ms": self.p90_ms,
            "std_ms": self.std_ms,
        }


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class BenchmarkResult:
    """What `benchmark` measured; `outputs` are those of the first run."""

    first_run_ms: float
    warmup: int
    stats: RunStats
    outputs: dict[str, np.ndarray]


def benchmark(
    program: Program,
    inputs: Mapping[str, Any],
    *,
    warmup: int = 3,
    runs: int = 20,
    profile: Profile | None = None,
) -> BenchmarkResult:
    """Run `program` once (timed), `warmup` times (untimed), then `runs` times (timed).

    Raises `ValueError` for a negative `warmup` or fewer than one run; errors of the runs
    (`InputError`, `ExecutionError`) propagate.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    clock = time.perf_counter_ns
    started = clock()
    outputs = program.run(inputs)
    first_ms = (clock() - started) / 1e6
    for _ in range(warmup):
        program.run(inputs)
    times: list[float] = []
    for _ in range(runs):
        started = clock()
        program.run(inputs, profile=profile)
        times.append((clock() - started) / 1e6)
    return BenchmarkResult(first_ms, warmup, RunStats.of(times), outputs)
