#!/usr/bin/env python3
"""irc's CPU target beside onnxruntime and the TFLite interpreter, per model.

For every model of ../shared/models/manifest.json (and, with `--detection`, a 640x640
DBNet-style text-detection network built by examples/build_detection_net.py), in one
process: the median latency of `CompiledModel.run` compiled with `targets=["cpu",
"reference"]` (ops the CPU target refuses run on the reference target), of onnxruntime
(.onnx models only; it cannot read .tflite: "—") and of the TFLite interpreter
(`ai_edge_litert`, XNNPACK by default; .tflite only), with 1 and 2 threads, interleaved
(irc, then each peer, at one thread count, then the next count, over `--repeat` rounds;
each turn one untimed run, then RUNS_PER_TURN timed ones), and the ratios irc / runtime
(below 1: irc is faster) and irc / the best peer. Then irc's cold compile time (empty
build cache: every C library compiled) and cached compile time (same cache, a new
compilation). Then, per model and thread count,
where irc's time goes: the model compiled once more with `IRC_CPU_PROFILE=1` (every kernel
of the generated C timed, targets/cpu/profiling.py), the median per kernel over the runs,
grouped by kind (1x1 conv, kxk conv, depthwise, fully connected, requantization,
elementwise, ...) and the slowest kernels, with their GFLOP/s (GOP/s for integer kernels)
against the machine's peak, measured here first: a register-blocked loop of independent
FMAs on the ISA profile's vectors (float32) and of vpdpbusd (int8, when the compiler
targets AVX512-VNNI) per core. Prints tables; asserts nothing.

irc's thread count is set per loaded library (`irc_set_threads`, what
`LoadedCpuExecutable.set_threads` and `IRC_CPU_THREADS` call): its kernels split over the
library's own pool (kernels/common/pool.h), and the few loops still generated as OpenMP
loops take the same count, so one process measures every thread count. The float
convolutions split over the threads only when an op is big enough
(`IRC_PARALLEL_CONV_WORK` / `IRC_PARALLEL_DW_WORK` in kernels/common). The absolute
figures move 1.5-2x between runs on this shared 2-vCPU machine (the load average is
printed before and after); compare the ratios of one run (PERF_NOTES.md).

usage: python benchmarks/cpu_vs_ort.py [--models DIR] [--only NAME ...] [--detection]
                                       [--threads 1 2] [--repeat K] [--warmup W] [--top N]
                                       [--no-kernels]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from side_by_side import (
    DEFAULT_MODELS,
    NOT_APPLICABLE,
    fmt_ms,
    load_inputs,
    ort_runner,
    ratio,
    tflite_runner,
)

# ---- irc, in this process -----------------------------------------------------------------------


def compile_irc(path: Path, cache: Path, profile: bool = False) -> tuple[Any, list[Any]]:
    """`path` compiled for cpu (then reference) with its own build cache `cache`, and the
    loaded C libraries of its cpu regions (ctypes handles: `irc_set_threads`)."""
    import ctypes

    import irc

    inputs = load_inputs(path.parent)
    # ONNX models with dynamic input dimensions get the golden inputs' shapes.
    shapes = {k: v.shape for k, v in inputs.items()} if path.suffix == ".onnx" else None
    saved = {name: os.environ.get(name) for name in ("IRC_CACHE_DIR", "IRC_CPU_PROFILE")}
    os.environ["IRC_CACHE_DIR"] = str(cache)
    if profile:
        os.environ["IRC_CPU_PROFILE"] = "1"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = irc.compile(path, targets=["cpu", "reference"], input_shapes=shapes)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    model.run(inputs)  # every library loaded
    libraries = [ctypes.CDLL(str(so)) for so in sorted(cache.glob("cpu/*.so"))]
    return model, libraries


_SAVE_BASELINE = """
import sys, warnings
import numpy as np
import irc
path, out, shapes = sys.argv[1], sys.argv[2], np.load(sys.argv[3])
shapes = {k: v.shape for k, v in shapes.items()} or None
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    irc.compile(path, targets=["cpu", "reference"], input_shapes=shapes).save(out)
"""


def compile_baseline(path: Path, tree: Path, cache: Path) -> tuple[Any, list[Any]]:
    """`path` compiled by the irc of another checkout `tree` (a git worktree of an older
    commit: `irc/targets`, `irc/dialects`, `irc/passes` must be links to its `targets`,
    `dialects`, `passes`, the editable install's package layout), in a child process that
    saves the artifact; loaded here with its own build cache `cache` (`irc.load`: its C, the
    older kernels included, built as it is). Returns the model and its C libraries, as
    `compile_irc` does, so that both run interleaved in one process (A/B on a shared
    machine)."""
    import ctypes
    import subprocess

    import numpy as np

    import irc

    inputs = load_inputs(path.parent)
    shapes = inputs if path.suffix == ".onnx" else {}
    artifact = cache / "baseline.irc.mlir"
    np.savez(cache / "shapes.npz", **{k: np.empty(v.shape, np.uint8) for k, v in shapes.items()})
    env = dict(os.environ, PYTHONPATH=str(tree), IRC_CACHE_DIR=str(cache))
    code = [sys.executable, "-c", _SAVE_BASELINE, str(path), str(artifact)]
    subprocess.run([*code, str(cache / "shapes.npz")], env=env, check=True, cwd=tree)
    saved = os.environ.get("IRC_CACHE_DIR")
    os.environ["IRC_CACHE_DIR"] = str(cache)
    try:
        model = irc.load(artifact)
        model.run(inputs)  # every library built and loaded
    finally:
        if saved is None:
            del os.environ["IRC_CACHE_DIR"]
        else:
            os.environ["IRC_CACHE_DIR"] = saved
    libraries = [ctypes.CDLL(str(so)) for so in sorted(cache.glob("cpu/*.so"))]
    return model, libraries


def set_threads(libraries: list[Any], threads: int) -> None:
    for library in libraries:
        library.irc_set_threads(threads)


def compile_times(path: Path) -> tuple[float, float]:
    """Seconds of a cold compile (empty build cache) and of a cached one."""
    import irc

    inputs = load_inputs(path.parent)
    shapes = {k: v.shape for k, v in inputs.items()} if path.suffix == ".onnx" else None
    with tempfile.TemporaryDirectory(prefix="irc-bench-cache-") as cache:
        saved = os.environ.get("IRC_CACHE_DIR")
        os.environ["IRC_CACHE_DIR"] = cache
        try:
            times = []
            for _ in range(2):
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    irc.compile(path, targets=["cpu", "reference"], input_shapes=shapes)
                times.append(time.perf_counter() - start)
        finally:
            if saved is None:
                del os.environ["IRC_CACHE_DIR"]
            else:
                os.environ["IRC_CACHE_DIR"] = saved
    return times[0], times[1]


def peer_runner(path: Path, kind: str, threads: int) -> Callable[[], object] | str:
    """One run of `path` on onnxruntime ("ort") or the TFLite interpreter ("tflite") with
    `threads` threads, or why there is none ("—": not its format, "missing"). onnxruntime's
    pool threads do not spin after a run: interleaved, they would take the cores of irc's
    next run (side_by_side.interleaved_ort_session)."""
    return ort_runner(path, threads) if kind == "ort" else tflite_runner(path, threads)


RUNS_PER_TURN = 2
"""Timed runs of one runtime per turn, after one untimed run: a peer's threads may still spin
(onnxruntime's do by default) when the next runtime's turn starts."""


def interleaved(
    path: Path,
    thread_counts: Sequence[int],
    repeat: int,
    warmup: int,
    baseline: Path | None = None,
) -> dict[int, dict[str, float | str]]:
    """Median ms of irc, ort and tflite (and "base": irc of the `baseline` checkout) per
    thread count, measured round by round in turn."""
    inputs = load_inputs(path.parent)
    with (
        tempfile.TemporaryDirectory(prefix="irc-bench-cache-") as cache,
        tempfile.TemporaryDirectory(prefix="irc-bench-base-") as base_cache,
    ):
        model, libraries = compile_irc(path, Path(cache))
        if baseline is not None:
            base_model, base_libraries = compile_baseline(path, baseline, Path(base_cache))
            libraries = libraries + base_libraries
        runners: dict[tuple[int, str], Callable[[], object] | str] = {}
        for threads in thread_counts:
            runners[threads, "irc"] = lambda: model.run(inputs)
            if baseline is not None:
                runners[threads, "base"] = lambda: base_model.run(inputs)
            for kind in ("ort", "tflite"):
                runners[threads, kind] = peer_runner(path, kind, threads)
        samples: dict[tuple[int, str], list[float]] = {key: [] for key in runners}
        for round_ in range(warmup + repeat):
            for threads in thread_counts:
                set_threads(libraries, threads)
                for (count, kind), run in runners.items():
                    if count != threads or isinstance(run, str):
                        continue
                    run()  # untimed: the previous runtime's spinning threads settle
                    for _ in range(RUNS_PER_TURN):
                        start = time.perf_counter()
                        run()
                        if round_ >= warmup:
                            samples[count, kind].append(time.perf_counter() - start)
    result: dict[int, dict[str, float | str]] = {}
    for (threads, kind), run in runners.items():
        value = run if isinstance(run, str) else statistics.median(samples[threads, kind]) * 1e3
        result.setdefault(threads, {})[kind] = value
    return result


POOL_COUNTERS = ("jobs", "indices", "by_workers", "wait_ns", "joined", "join_ns")
"""What `irc_pool_counters` (kernels/common/pool.h) reports, in its order."""


def pool_counters(libraries: list[Any]) -> list[int]:
    """The pool counters of `libraries` summed (and reset), `POOL_COUNTERS`' order."""
    import ctypes

    total = [0] * len(POOL_COUNTERS)
    for library in libraries:
        read = getattr(library, "irc_pool_counters", None)
        if read is None:
            continue
        counts = (ctypes.c_long * len(POOL_COUNTERS))()
        read(counts)
        total = [a + b for a, b in zip(total, counts, strict=True)]
    return total


def kernel_profiles(
    path: Path,
    thread_counts: Sequence[int],
    repeat: int,
    warmup: int,
    pool: dict[int, list[int]] | None = None,
) -> dict[int, list[list[Any]]]:
    """Per thread count, [label, median ms per run, flops] of every generated kernel
    (IRC_CPU_PROFILE=1), the thread counts taking turns run by run; with `pool`, also the
    pool counters summed over the timed runs per thread count (`pool_counters`)."""
    from irc.targets.cpu.profiling import kernel_tables

    inputs = load_inputs(path.parent)
    with tempfile.TemporaryDirectory(prefix="irc-bench-cache-") as cache:
        model, libraries = compile_irc(path, Path(cache), profile=True)
        tables = [t for so in sorted(Path(cache).glob("cpu/*.so")) for t in kernel_tables(so)]
        labels = [(label, f) for t in tables for label, f in zip(t.labels, t.flops, strict=True)]
        samples = {n: [[] for _ in labels] for n in thread_counts}
        for round_ in range(warmup + repeat):
            for threads in thread_counts:
                set_threads(libraries, threads)
                for table in tables:
                    table.reset()
                pool_counters(libraries)
                model.run(inputs)
                counts = pool_counters(libraries)
                if round_ < warmup:
                    continue
                if pool is not None:
                    before = pool.get(threads, [0] * len(counts))
                    pool[threads] = [a + b for a, b in zip(before, counts, strict=True)]
                times = [ms for table in tables for ms in table.times_ms()]
                for column, ms in zip(samples[threads], times, strict=True):
                    column.append(ms)
    profiles = {}
    for threads in thread_counts:
        rows = [
            [label, statistics.median(column), flops]
            for (label, flops), column in zip(labels, samples[threads], strict=True)
        ]
        profiles[threads] = [row for row in rows if row[1] > 0.0]
    return profiles


def detection_model(folder: Path) -> Path:
    """examples/build_detection_net.py's 640x640 network in `folder` with a seeded input
    (inputs_0.npz), as the shared models lay theirs out."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import onnx
    from build_detection_net import build_model  # type: ignore[import-not-found]

    proto = build_model(640)
    path = folder / "text_detection_640.onnx"
    onnx.save(proto, str(path))
    (graph_input,) = proto.graph.input
    shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    image = np.random.default_rng(0).uniform(0.0, 1.0, shape).astype(np.float32)
    np.savez(folder / "inputs_0.npz", **{graph_input.name: image})
    return path


# ---- The machine's peak -------------------------------------------------------------------------

_PEAK_SOURCE = r"""
#include <stdint.h>
#if defined(__AVX512VNNI__)
#include <immintrin.h>
#endif
/* The native vector of the ISA profile it is built for (as the kernels' irc_vf). */
#if defined(__AVX512F__) && !defined(IRC_PORTABLE)
#define VL 16
#elif defined(__AVX2__) && !defined(IRC_PORTABLE)
#define VL 8
#else
#define VL 4
#endif
typedef float v16 __attribute__((vector_size(4 * VL)));
int irc_peak_lanes(void) { return VL; }
/* 12 independent accumulators: enough to cover the FMA latency on two ports. */
double irc_peak_fma(long n) {
  v16 acc[12], b = (v16){0} + 1.0000001f, c = (v16){0} + 1e-7f;
  for (int i = 0; i < 12; ++i) acc[i] = (v16){0} + (float)i;
  for (long k = 0; k < n; ++k)
    for (int i = 0; i < 12; ++i) acc[i] = acc[i] * b + c;
  float s = 0;
  for (int i = 0; i < 12; ++i) s += acc[i][0];
  return s;
}
double irc_peak_vnni(long n) {
#if defined(__AVX512VNNI__)
  __m512i acc[12], a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(2);
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
  for (long k = 0; k < n; ++k)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  long s = 0;
  for (int i = 0; i < 12; ++i) s += _mm512_reduce_add_epi32(acc[i]);
  return (double)s;
#else
  (void)n;
  return -1.0;
#endif
}
"""


def measure_peak() -> dict[str, float]:
    """Per-core GFLOP/s of float32 FMAs on the ISA profile's vectors and GOP/s of vpdpbusd
    (0 without VNNI), best of 5, over the CPU time of the measuring thread (on a loaded
    machine the wall time of a shared core would halve the peak)."""
    import ctypes

    from irc.targets.cpu import toolchain

    probe = toolchain.probe()
    if probe.toolchain is None:
        return {"float": 0.0, "int8": 0.0}
    with tempfile.TemporaryDirectory(prefix="irc-peak-") as cache:
        os.environ["IRC_CACHE_DIR"], saved = cache, os.environ.get("IRC_CACHE_DIR")
        try:
            library = toolchain.build(_PEAK_SOURCE, probe.toolchain)
            handle = ctypes.CDLL(str(library.path))
        finally:
            if saved is None:
                del os.environ["IRC_CACHE_DIR"]
            else:
                os.environ["IRC_CACHE_DIR"] = saved
    result = {}
    n = 2_000_000
    lanes = handle.irc_peak_lanes()
    for kind, fn, ops in (
        ("float", handle.irc_peak_fma, 12 * lanes * 2),
        ("int8", handle.irc_peak_vnni, 12 * 64 * 2),
    ):
        fn.restype = ctypes.c_double
        fn.argtypes = [ctypes.c_long]
        best = float("inf")
        for _ in range(5):  # this thread's CPU time: a shared core's waits do not count
            start = time.thread_time()
            value = fn(n)
            best = min(best, time.thread_time() - start)
        result[kind] = 0.0 if value < 0 else n * ops / best / 1e9
    return result


# ---- The kernel table -------------------------------------------------------------------------


def kernel_kind(label: str) -> str:
    """A kernel label (`nn.conv2d 1x56x56x24, 144x1x1x24, 144 -> 1x56x56x144 int8_t`) ->
    its kind for the summary."""
    name = label.split(" ", 1)[0]
    if name == "nn.conv2d":
        filt = label.split(", ")[1].split("x")
        if filt[-1] == "1" and len(filt) == 4 and filt[0] != "1":
            return "conv depthwise"
        return "conv 1x1" if filt[1:3] == ["1", "1"] else "conv kxk"
    if name == "nn.fully_connected":
        return "fully_connected"
    return name


def print_kernels(rows: list[list[Any]], peak: dict[str, float], threads: int, top: int) -> None:
    """The kernels grouped by kind and element type, then the slowest ones."""
    total = sum(ms for _, ms, _ in rows)

    def rate(ms: float, flops: float, element: str) -> str:
        if not flops or not ms:
            return f"{'':>9} {'':>6}"
        per_s = flops / ms / 1e6
        machine = peak.get("float" if element == "float" else "int8", 0.0) * threads
        share = f"{100 * per_s / machine:5.1f}%" if machine else f"{'—':>6}"
        return f"{per_s:9.1f} {share}"

    kinds: dict[tuple[str, str], list[float]] = {}
    for label, ms, flops in rows:
        key = (kernel_kind(label), label.rsplit(" ", 1)[-1])
        entry = kinds.setdefault(key, [0.0, 0.0, 0.0])
        entry[0] += ms
        entry[1] += flops
        entry[2] += 1
    print(f"    {'kind':34} {'n':>4} {'ms':>8} {'share':>6} {'G(FL)OP/s':>9} {'%peak':>6}")
    for (kind, element), (ms, flops, count) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        name = f"{kind} ({element})"
        print(
            f"    {name:34} {int(count):4} {ms:8.3f} {100 * ms / total:5.1f}% "
            f"{rate(ms, flops, element)}"
        )
    print(f"    {'all kernels':34} {len(rows):4} {total:8.3f}")
    print(f"    slowest {top}:")
    for label, ms, flops in sorted(rows, key=lambda r: -r[1])[:top]:
        print(f"      {ms:7.3f} ms {rate(ms, flops, label.rsplit(' ', 1)[-1])}  {label}")


# ---- The table --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", nargs="*", default=None, help="model names to run")
    parser.add_argument(
        "--detection", action="store_true", help="add the 640x640 text-detection network"
    )
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--top", type=int, default=8, help="slowest kernels listed per run")
    parser.add_argument("--no-kernels", action="store_true", help="skip the kernel profiles")
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        default=None,
        help="also run the model as compiled by the irc of this checkout (a git worktree of "
        "an older commit whose irc/ links targets, dialects, passes), interleaved: irc/base",
    )
    args = parser.parse_args(argv)

    from irc.targets.cpu import isa

    cpu_name = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "unknown CPU",
        )
        if Path("/proc/cpuinfo").exists()
        else "unknown CPU"
    )
    print(f"cpu: {cpu_name}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"cpu ISA profile: {isa.select().name} (host best: {isa.best().name}; IRC_CPU_ISA)")
    peak = measure_peak()
    print(
        f"peak per core (measured): float32 {peak['float']:.0f} GFLOP/s, "
        f"int8 vpdpbusd {peak['int8']:.0f} GOP/s"
    )

    manifest = json.loads((args.models / "manifest.json").read_text())
    paths = {
        entry["name"]: args.models / entry["file"]
        for entry in manifest["models"]
        if args.only is None or entry["name"] in args.only
    }
    scratch = tempfile.TemporaryDirectory(prefix="irc-bench-models-")
    if args.detection:
        paths["text_detection_640"] = detection_model(Path(scratch.name))
    header = (
        f"{'model':28} {'thr':>3} {'irc/cpu':>8} {'ort':>8} {'tflite':>8} "
        f"{'irc/ort':>7} {'irc/tfl':>7} {'irc/best':>8} {'cold s':>7} {'cached s':>8}"
    )
    print(
        "median latency in ms, irc and the peers interleaved; "
        "ratios irc / runtime (below 1: irc faster)"
    )
    print(header)
    print("-" * len(header))
    profiles: list[tuple[str, int, list[list[Any]]]] = []
    for name, path in paths.items():
        if not path.exists():
            print(f"{name:28} missing {path}")
            continue
        try:
            cold, cached = compile_times(path)
            times = interleaved(path, args.threads, args.repeat, args.warmup, args.baseline_tree)
        except Exception as exc:
            print(f"{name:28} irc failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            continue
        for threads in args.threads:
            row = times[threads]
            irc_ms = row["irc"]
            assert isinstance(irc_ms, float)
            peers = [v for k, v in row.items() if k not in ("irc", "base") and isinstance(v, float)]
            best = min(peers) if peers else NOT_APPLICABLE
            print(
                f"{name:28} {threads:3} {fmt_ms(irc_ms)} {fmt_ms(row['ort'])} "
                f"{fmt_ms(row['tflite'])} {ratio(irc_ms, row['ort'])} "
                f"{ratio(irc_ms, row['tflite'])} {ratio(irc_ms, best):>8} "
                f"{cold:7.2f} {cached:8.2f}",
                flush=True,
            )
            if "base" in row:
                base_ms = row["base"]
                assert isinstance(base_ms, float)
                print(
                    f"{'':28} {threads:3} base {fmt_ms(base_ms)}: irc/base "
                    f"{ratio(irc_ms, base_ms)}, base/best {ratio(base_ms, best)}",
                    flush=True,
                )
        if not args.no_kernels:
            found = kernel_profiles(path, args.threads, args.repeat, args.warmup)
            profiles += [(name, threads, found[threads]) for threads in args.threads]
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for name, threads, rows in profiles:
        print()
        print(f"irc kernels of {name}, {threads} thread(s): median ms per run")
        print_kernels(rows, peak, threads, args.top)
    scratch.cleanup()


if __name__ == "__main__":
    main()
