#!/usr/bin/env python3
"""irc's CPU target beside onnxruntime and the TFLite interpreter, per shared model.

For every model of ../shared/models/manifest.json, in one run: the median latency of
`CompiledModel.run` compiled with `targets=["cpu", "reference"]` (ops the CPU target refuses
run on the reference target), of onnxruntime (.onnx models only; it cannot read .tflite:
"—") and of the TFLite interpreter (`ai_edge_litert`, XNNPACK by default; .tflite only),
with 1 and 2 threads, and the ratios irc / runtime (below 1: irc is faster). Then irc's cold
compile time (empty build cache: every C library compiled) and cached compile time (same
cache, a new compilation). Then, per model and thread count, where irc's time goes: the
model compiled once more with `IRC_CPU_PROFILE=1` (every kernel of the generated C timed,
targets/cpu/profiling.py), the median per kernel over the runs, grouped by kind (1x1 conv,
kxk conv, depthwise, fully connected, requantization, elementwise, ...) and the slowest
kernels, with their GFLOP/s (GOP/s for integer kernels) against the machine's peak, measured
here first: a register-blocked loop of independent 512-bit FMAs (float32) and of vpdpbusd
(int8, when the compiler targets AVX512-VNNI) per core. Prints tables; asserts nothing.

irc's thread count is OpenMP's: libgomp reads `OMP_NUM_THREADS` once, when it loads, so
every (model, threads) measurement of irc runs in a child process started with
`OMP_NUM_THREADS` set (this script, `--irc-worker`), with its own cache directory for the
cold compile; irc's runtime sets `OMP_PROC_BIND=true` there before libgomp loads
(`toolchain.prepare_openmp`). The float convolutions split over the threads only when an op
is big enough (`IRC_PARALLEL_CONV_WORK` / `IRC_PARALLEL_DW_WORK` in targets/cpu/csrc.py).
The absolute figures move 1.5-2x between runs on this shared 2-vCPU machine; compare the
ratios of one run (PERF_NOTES.md).

usage: python benchmarks/cpu_vs_ort.py [--models DIR] [--only NAME ...] [--threads 1 2]
                                       [--repeat K] [--warmup W] [--top N] [--no-kernels]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from side_by_side import (
    DEFAULT_MODELS,
    fmt_ms,
    load_inputs,
    median_ms,
    ratio,
    run_ort,
    run_tflite,
)

# ---- irc (child process per thread count) ------------------------------------------------------


def kernel_profile(path: Path, shapes: Any, repeat: int, warmup: int) -> list[list[Any]]:
    """[label, median ms per run, flops] of every generated kernel (IRC_CPU_PROFILE=1)."""
    import irc
    from irc.targets.cpu import toolchain
    from irc.targets.cpu.profiling import kernel_tables

    inputs = load_inputs(path.parent)
    os.environ["IRC_CPU_PROFILE"] = "1"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = irc.compile(path, targets=["cpu", "reference"], input_shapes=shapes)
    finally:
        del os.environ["IRC_CPU_PROFILE"]
    for _ in range(warmup):
        model.run(inputs)
    tables = [t for so in sorted(toolchain.cache_dir().glob("cpu/*.so")) for t in kernel_tables(so)]
    samples: list[list[float]] = [[] for t in tables for _ in t.labels]
    for _ in range(repeat):
        for table in tables:
            table.reset()
        model.run(inputs)
        times = [ms for table in tables for ms in table.times_ms()]
        for column, ms in zip(samples, times, strict=True):
            column.append(ms)
    labels = [(label, f) for t in tables for label, f in zip(t.labels, t.flops, strict=True)]
    rows = [
        [label, statistics.median(column), flops]
        for (label, flops), column in zip(labels, samples, strict=True)
    ]
    return [row for row in rows if row[1] > 0.0]


def irc_worker(path: Path, repeat: int, warmup: int, kernels: bool) -> dict[str, Any]:
    """Cold and cached compile, share of ops on cpu, median run latency (this process's
    OMP_NUM_THREADS), and the kernel profile."""
    import irc

    inputs = load_inputs(path.parent)
    # ONNX models with dynamic input dimensions get the golden inputs' shapes.
    shapes = {k: v.shape for k, v in inputs.items()} if path.suffix == ".onnx" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = irc.compile(path, targets=["cpu", "reference"], input_shapes=shapes)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        model = irc.compile(path, targets=["cpu", "reference"], input_shapes=shapes)
        cached = time.perf_counter() - start
    summary = next((line for line in model.summary.splitlines() if "@main" in line), "")
    latency = median_ms(lambda: model.run(inputs), repeat, warmup)
    profile = kernel_profile(path, shapes, repeat, warmup) if kernels else []
    return {
        "cold_s": cold,
        "cached_s": cached,
        "ms": latency,
        "summary": summary.strip(),
        "kernels": profile,
    }


def run_irc(path: Path, threads: int, repeat: int, warmup: int, kernels: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="irc-bench-cache-") as cache:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), IRC_CACHE_DIR=cache)
        cmd = [sys.executable, __file__, "--irc-worker", str(path)]
        cmd += ["--repeat", str(repeat), "--warmup", str(warmup)]
        cmd += [] if kernels else ["--no-kernels"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", nargs="*", default=None, help="model names to run")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--top", type=int, default=8, help="slowest kernels listed per run")
    parser.add_argument("--no-kernels", action="store_true", help="skip the kernel profiles")
    parser.add_argument("--irc-worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    kernels = not args.no_kernels

    if args.irc_worker is not None:
        print(json.dumps(irc_worker(args.irc_worker, args.repeat, args.warmup, kernels)))
        return

    from irc.targets.cpu import isa

    print(f"cpu ISA profile: {isa.select().name} (host best: {isa.best().name}; IRC_CPU_ISA)")
    peak = measure_peak()
    print(
        f"peak per core (measured): float32 {peak['float']:.0f} GFLOP/s, "
        f"int8 vpdpbusd {peak['int8']:.0f} GOP/s"
    )

    manifest = json.loads((args.models / "manifest.json").read_text())
    files = {entry["name"]: entry["file"] for entry in manifest["models"]}
    names = [n for n in files if args.only is None or n in args.only]
    header = (
        f"{'model':28} {'thr':>3} {'irc/cpu':>8} {'ort':>8} {'tflite':>8} "
        f"{'irc/ort':>7} {'irc/tfl':>7} {'cold s':>7} {'cached s':>8}"
    )
    print("median latency in ms; ratios irc / runtime (below 1: irc faster)")
    print(header)
    print("-" * len(header))
    summaries: dict[str, str] = {}
    profiles: list[tuple[str, int, list[list[Any]]]] = []
    for name in names:
        path = args.models / files[name]
        if not path.exists():
            print(f"{name:28} missing {path}")
            continue
        for threads in args.threads:
            result = run_irc(path, threads, args.repeat, args.warmup, kernels)
            ort_ms = run_ort(path, threads, args.repeat, args.warmup)
            tfl_ms = run_tflite(path, threads, args.repeat, args.warmup)
            if "error" in result:
                print(f"{name:28} {threads:3} irc failed: {result['error']}")
                continue
            irc_ms = result["ms"]
            summaries[name] = result["summary"]
            if result.get("kernels"):
                profiles.append((name, threads, result["kernels"]))
            print(
                f"{name:28} {threads:3} {fmt_ms(irc_ms)} {fmt_ms(ort_ms)} {fmt_ms(tfl_ms)} "
                f"{ratio(irc_ms, ort_ms)} {ratio(irc_ms, tfl_ms)} "
                f"{result['cold_s']:7.2f} {result['cached_s']:8.2f}",
                flush=True,
            )
    print()
    print("where the ops ran (irc, targets cpu then reference):")
    for name, summary in summaries.items():
        print(f"  {name}: {summary}")
    for name, threads, rows in profiles:
        print()
        print(f"irc kernels of {name}, {threads} thread(s): median ms per run")
        print_kernels(rows, peak, threads, args.top)


if __name__ == "__main__":
    main()
