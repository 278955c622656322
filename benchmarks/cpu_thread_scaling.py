#!/usr/bin/env python3
"""How each kernel of irc's CPU target scales from one thread to more, per model.

For every model of ../shared/models/manifest.json (and, with `--detection`, the 640x640
text-detection network of cpu_vs_ort.py), in one process: the model compiled with
`IRC_CPU_PROFILE=1` (every kernel of the generated C timed), run with 1 and N threads in
turn (`cpu_vs_ort.kernel_profiles`: medians per kernel), then per kernel the times at both
counts, the speedup and the time lost against a perfect split (t_N - t_1 / N), the kernels
that lose the most first, and the whole run's sum; then what the library's thread pool did
at N threads (`irc_pool_counters`, kernels/common/pool.h): jobs per run, the share of indices
and jobs the workers took, how long after a job's start they joined, and how long the caller
waited for them. Which kernels do not speed up, and whether the pool's workers were there to
help, is what this answers; the absolute figures move with the shared machine's load
(printed). Asserts nothing.

usage: python benchmarks/cpu_thread_scaling.py [--models DIR] [--only NAME ...] [--detection]
                                               [--threads 2] [--repeat K] [--warmup W] [--top N]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from cpu_vs_ort import POOL_COUNTERS, detection_model, kernel_kind, kernel_profiles
from side_by_side import DEFAULT_MODELS


def scaling_kind(label: str) -> str:
    """`cpu_vs_ort.kernel_kind`, the fused int8 convs (`qconv nn.conv2d ...`) split the same
    way (depthwise, 1x1, kxk) and marked int8."""
    if label.startswith("qconv "):
        return f"int8 {kernel_kind(label.removeprefix('qconv '))}"
    return kernel_kind(label)


def print_scaling(rows1: list[list], rowsn: list[list], threads: int, top: int) -> None:
    """Per kernel (matched by position and label): ms at 1 and `threads` threads."""
    by_label1: dict[str, list[float]] = {}
    for label, ms, _ in rows1:
        by_label1.setdefault(label, []).append(ms)
    table = []
    seen: dict[str, int] = {}
    for label, ms, _ in rowsn:
        k = seen.get(label, 0)
        seen[label] = k + 1
        ones = by_label1.get(label, [])
        if k < len(ones):
            table.append((label, ones[k], ms))
    t1 = sum(r[1] for r in table)
    tn = sum(r[2] for r in table)
    print(f"    all kernels: {t1:8.3f} ms at 1, {tn:8.3f} ms at {threads}: x{t1 / tn:.2f}")
    kinds: dict[str, list[float]] = {}
    for label, a, b in table:
        entry = kinds.setdefault(scaling_kind(label), [0.0, 0.0, 0.0])
        entry[0] += a
        entry[1] += b
        entry[2] += 1
    print(f"    {'kind':30} {'n':>4} {'ms@1':>8} {f'ms@{threads}':>8} {'speedup':>7} {'lost':>7}")
    for kind, (a, b, n) in sorted(kinds.items(), key=lambda kv: -(kv[1][1] - kv[1][0] / threads)):
        print(f"    {kind:30} {int(n):4} {a:8.3f} {b:8.3f} {a / b:7.2f} {b - a / threads:7.3f}")
    print(f"    kernels losing most against a perfect split (top {top}):")
    for label, a, b in sorted(table, key=lambda r: -(r[2] - r[1] / threads))[:top]:
        print(f"      {a:7.3f} {b:7.3f} x{a / b:5.2f} lost {b - a / threads:6.3f}  {label}")


def print_pool(counts: list[int], runs: int, threads: int) -> None:
    """Per run at `threads` threads: the jobs the pool split, the share of their indices the
    workers ran, how long the caller waited for workers' indices after its own work (the
    split's imbalance plus preempted workers), and how long after a job's start a worker
    ran its first index (wake-up or spin, or a worker the OS did not run)."""
    c = dict(zip(POOL_COUNTERS, counts, strict=True))
    if not c["jobs"]:
        print(f"    pool at {threads}: no job split over threads")
        return
    share = 100.0 * c["by_workers"] / max(1, c["indices"])
    joined = 100.0 * c["joined"] / (c["jobs"] * max(1, threads - 1))
    join_us = c["join_ns"] / max(1, c["joined"]) / 1e3
    print(
        f"    pool at {threads}, per run: {c['jobs'] / runs:.0f} jobs, "
        f"{c['indices'] / runs:.0f} indices, workers ran {share:.0f}% of them and joined "
        f"{joined:.0f}% of the jobs, {join_us:.1f} us after a job's start on average; the "
        f"caller waited {c['wait_ns'] / runs / 1e6:.3f} ms for workers' indices"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", nargs="*", default=None, help="model names to run")
    parser.add_argument("--detection", action="store_true", help="add the 640x640 network")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    manifest = json.loads((args.models / "manifest.json").read_text())
    paths = [
        args.models / entry["file"]
        for entry in manifest["models"]
        if not args.only or entry["name"] in args.only
    ]
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="irc-scaling-") as folder:
        if args.detection:
            paths.append(detection_model(Path(folder)))
        for path in paths:
            pool: dict[int, list[int]] = {}
            profiles = kernel_profiles(path, [1, args.threads], args.repeat, args.warmup, pool)
            print(f"{path.stem}:")
            print_scaling(profiles[1], profiles[args.threads], args.threads, args.top)
            if args.threads in pool:
                print_pool(pool[args.threads], args.repeat, args.threads)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
