#!/usr/bin/env python3
"""irc's CPU target beside onnxruntime and the TFLite interpreter, per shared model.

For every model of ../shared/models/manifest.json, in one run: the median latency of
`CompiledModel.run` compiled with `targets=["cpu", "reference"]` (ops the CPU target refuses
run on the reference target), of onnxruntime (.onnx models only; it cannot read .tflite:
"—") and of the TFLite interpreter (`ai_edge_litert`, XNNPACK by default; .tflite only),
with 1 and 2 threads, and the ratios irc / runtime (below 1: irc is faster). Then irc's cold
compile time (empty build cache: every C library compiled) and cached compile time (same
cache, a new compilation). Prints a table; asserts nothing.

irc's thread count is OpenMP's: libgomp reads `OMP_NUM_THREADS` once, when it loads, so
every (model, threads) measurement of irc runs in a child process started with
`OMP_NUM_THREADS` set (this script, `--irc-worker`), with its own cache directory for the
cold compile. The absolute figures move 1.5-2x between runs on this shared 2-vCPU machine;
compare the ratios of one run (PERF_NOTES.md).

usage: python benchmarks/cpu_vs_ort.py [--models DIR] [--only NAME ...] [--threads 1 2]
                                       [--repeat K] [--warmup W]
"""

from __future__ import annotations

import argparse
import json
import os
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


def irc_worker(path: Path, repeat: int, warmup: int) -> dict[str, Any]:
    """Cold and cached compile, share of ops on cpu, median run latency (this process's
    OMP_NUM_THREADS)."""
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
    return {"cold_s": cold, "cached_s": cached, "ms": latency, "summary": summary.strip()}


def run_irc(path: Path, threads: int, repeat: int, warmup: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="irc-bench-cache-") as cache:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), IRC_CACHE_DIR=cache)
        cmd = [sys.executable, __file__, "--irc-worker", str(path)]
        cmd += ["--repeat", str(repeat), "--warmup", str(warmup)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- onnxruntime and the TFLite interpreter ----------------------------------------------------


# ---- The table --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", nargs="*", default=None, help="model names to run")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--irc-worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.irc_worker is not None:
        print(json.dumps(irc_worker(args.irc_worker, args.repeat, args.warmup)))
        return

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
    for name in names:
        path = args.models / files[name]
        if not path.exists():
            print(f"{name:28} missing {path}")
            continue
        for threads in args.threads:
            result = run_irc(path, threads, args.repeat, args.warmup)
            ort_ms = run_ort(path, threads, args.repeat, args.warmup)
            tfl_ms = run_tflite(path, threads, args.repeat, args.warmup)
            if "error" in result:
                print(f"{name:28} {threads:3} irc failed: {result['error']}")
                continue
            irc_ms = result["ms"]
            summaries[name] = result["summary"]
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


if __name__ == "__main__":
    main()
