#!/usr/bin/env python3
"""irc's OpenCL target (PoCL on the CPU) beside onnxruntime and the TFLite interpreter.

For every model of ../shared/models/manifest.json, in one run: the median latency of
`CompiledModel.run` compiled with `targets=["opencl", "reference"]` (ops the OpenCL target
refuses run on the reference target; input shapes from the manifest's `inputs`), of
onnxruntime (.onnx models only, "—" otherwise) and of the TFLite interpreter (`ai_edge_litert`,
default XNNPACK delegate; .tflite only, "—" otherwise), each with 2 threads, and the ratios
irc / runtime (below 1: irc is faster). The runs are interleaved (irc, then each peer, one
call each, `--repeat` times) so that load from other processes falls on all of them alike
(onnxruntime's pool threads do not spin, or they would take the cores from PoCL's).
Also the share of the model's ops that the OpenCL target runs (from the compile summary's
`@main` line) and the compile time (program cache as found). Prints a table; asserts nothing.

PoCL's CPU device uses every core of this 2-vCPU machine (2 threads; `POCL_CPU_MAX_CU_NUM` is
set to the thread count before pyopencl loads). The absolute figures move 1.5-2x between runs
on this shared machine; compare the ratios of one run (PERF_NOTES.md).

usage: python benchmarks/opencl_vs_ort.py [--models DIR] [--only NAME ...] [--threads 2]
                                          [--repeat K] [--warmup W] [--tune] [--kernels N]
                                          [--geometry] [--detection]

`--detection` adds cpu_vs_ort.py's 640x640 DBNet-style text-detection network
("text_detection_640", built by examples/build_detection_net.py, seeded input) to the models;
`--only text_detection_640` runs it alone.

`--tune` lowers with `lower-opencl{tune=true}` (IRC_OPENCL_TUNE=1): each kernel's work-group
size measured once among a few candidates and cached on disk; without it, the default rule.

`--geometry` also prints the device profile and, per model, the launch geometry of every
OpenCL kernel launch (work-items = product of the global size, and the work-group size;
"driver" where the driver chooses): the evidence of how much parallelism a device is given.

`--kernels N` also prints, per model, the N kernels with the most device time (OpenCL events
over `--repeat` profiled runs, after the timed ones): mean ms per run, and GFLOP/s for convs,
fully_connected and batch_matmul (multiply-adds counted as 2 FLOP, from the shapes in the
kernel's description).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from side_by_side import (
    DEFAULT_MODELS,
    fmt_ms,
    load_inputs,
    ort_runner,
    ratio,
    tflite_runner,
)

DETECTION = "text_detection_640"
"""The name of `--detection`'s network (as benchmarks/cpu_vs_ort.py's)."""


def interleaved_medians(
    runners: Sequence[Callable[[], object]], repeat: int, warmup: int
) -> list[float]:
    """Median ms of each runner, timed one call each in turn, `repeat` rounds."""
    for _ in range(warmup):
        for run in runners:
            run()
    times: list[list[float]] = [[] for _ in runners]
    for _ in range(repeat):
        for run, out in zip(runners, times, strict=True):
            start = time.perf_counter()
            run()
            out.append(time.perf_counter() - start)
    return [statistics.median(t) * 1e3 for t in times]


def opencl_share(summary: str) -> tuple[int, int] | None:
    """(ops on opencl, all ops) of `@main` from a compile summary, or None."""
    for line in summary.splitlines():
        if "@main" not in line:
            continue
        match = re.search(r"opencl: (\d+) of (\d+) ops", line)
        if match:
            return int(match.group(1)), int(match.group(2))
        total = re.search(r"\d+ of (\d+) ops", line)
        return (0, int(total.group(1))) if total else None
    return None


SHAPES = re.compile(r"^(nn\.[a-z_0-9]+) ([0-9x]+(?:, [0-9x]+)*) -> ([0-9x]+)")


def kernel_flops(description: str) -> int | None:
    """FLOPs (2 per multiply-add) of a conv2d / fully_connected / batch_matmul kernel from
    its description (`nn.conv2d 1x7x7x960, 320x1x1x960, 320 -> 1x7x7x320 ...`), else None."""
    match = SHAPES.match(description)
    if match is None:
        return None
    op = match.group(1)
    ins = [[int(d) for d in s.split("x")] for s in match.group(2).split(", ")]
    out = [int(d) for d in match.group(3).split("x")]
    if op == "nn.conv2d" and len(ins) >= 2 and len(ins[1]) == 4:
        _, kh, kw, icg = ins[1]
        return 2 * int(np.prod(out)) * kh * kw * icg
    if op == "nn.fully_connected" and len(ins) >= 2:
        return 2 * int(np.prod(out)) * ins[1][-1]
    if op == "nn.batch_matmul" and len(ins) >= 1:
        return 2 * int(np.prod(out)) * ins[0][-1]
    return None


def top_kernels(model: Any, feed: dict[str, Any], runs: int, count: int) -> list[str]:
    """Lines for the `count` kernels with the most device time over `runs` profiled runs."""
    from irc.runtime.profiling import Profile

    profile = Profile()
    for _ in range(runs):
        model.run(feed, profile=profile)
    lines = []
    for row in profile.kernel_rows(order="time")[:count]:
        flops = kernel_flops(row.description)
        rate = f"{flops / row.mean_ms / 1e6:7.1f}" if flops and row.mean_ms else f"{'—':>7}"
        lines.append(f"    {row.mean_ms:7.3f} ms {rate} GFLOP/s  {row.description}")
    return lines


def launch_geometry(model: Any) -> list[str]:
    """Lines: per OpenCL launch of the compiled model, its work-items and work-group size."""
    lines = []
    for name, loaded in model.program.loaded.items():
        geometry = getattr(loaded, "launch_geometry", None)
        if geometry is None:
            continue
        rows = geometry("entry")
        items = [int(np.prod(g)) for _, g, _ in rows]
        if items:
            lines.append(
                f"    @{name}: {len(rows)} launches, work-items min {min(items)} / median "
                f"{int(np.median(items))} / max {max(items)}"
            )
        for (description, _, local), count in zip(rows, items, strict=True):
            group = "x".join(map(str, local)) if local else "driver"
            lines.append(f"      {count:8d} work-items, groups of {group:>6}  {description[:90]}")
    return lines


def run_irc(
    path: Path,
    entry: dict[str, Any],
    repeat: int,
    warmup: int,
    peers: Sequence[Callable[[], object]] = (),
    kernels: int = 0,
    geometry: bool = False,
) -> dict[str, Any]:
    """Compile the model and time it interleaved with `peers` (their medians under "peers")."""
    import irc

    inputs = load_inputs(path.parent)
    shapes = {i["name"]: tuple(i["shape"]) for i in entry.get("inputs", [])}
    shapes = {k: v for k, v in shapes.items() if all(isinstance(d, int) and d > 0 for d in v)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            model = irc.compile(path, targets=["opencl", "reference"], input_shapes=shapes or None)
            compile_s = time.perf_counter() - start
        feed = {k: inputs[k] for k in model.input_names if k in inputs} or inputs
        latency, *peer_ms = interleaved_medians([lambda: model.run(feed), *peers], repeat, warmup)
        top = top_kernels(model, feed, repeat, kernels) if kernels else []
        shapes_of_launches = launch_geometry(model) if geometry else []
    except Exception as exc:  # report and go on with the next model
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}
    summary = next((line for line in model.summary.splitlines() if "@main" in line), "")
    return {
        "ms": latency,
        "peers": peer_ms,
        "compile_s": compile_s,
        "share": opencl_share(model.summary),
        "summary": summary.strip(),
        "kernels": top,
        "geometry": shapes_of_launches,
    }


def fmt_share(share: tuple[int, int] | None) -> str:
    if share is None or share[1] == 0:
        return f"{'?':>14}"
    on, total = share
    return f"{on:>4}/{total:<4} {100 * on / total:4.0f}%"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", nargs="*", default=None, help="model names to run")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument(
        "--tune",
        action="store_true",
        help="lower with lower-opencl{tune=true}: measured work-group sizes (cached)",
    )
    parser.add_argument(
        "--kernels",
        type=int,
        default=0,
        metavar="N",
        help="also print each model's N kernels with the most device time, with GFLOP/s",
    )
    parser.add_argument(
        "--geometry",
        action="store_true",
        help="also print the device profile and every OpenCL launch's work-items",
    )
    parser.add_argument(
        "--detection",
        action="store_true",
        help="add the 640x640 text-detection network (text_detection_640)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("POCL_CPU_MAX_CU_NUM", str(args.threads))
    if args.tune:
        os.environ["IRC_OPENCL_TUNE"] = "1"

    manifest = json.loads((args.models / "manifest.json").read_text())
    entries = {e["name"]: e for e in manifest["models"]}
    paths = {name: args.models / entry["file"] for name, entry in entries.items()}
    scratch = tempfile.TemporaryDirectory(prefix="irc-bench-models-")
    if args.detection:
        from cpu_vs_ort import detection_model

        paths[DETECTION] = detection_model(Path(scratch.name))
        entries[DETECTION] = {"name": DETECTION, "file": paths[DETECTION].name}
    names = [n for n in entries if args.only is None or n in args.only]
    header = (
        f"{'model':28} {'irc/ocl':>8} {'ort':>8} {'tflite':>8} {'irc/ort':>7} "
        f"{'irc/tfl':>7} {'ops on opencl':>14} {'compile s':>9}"
    )
    print(
        f"median latency in ms, {args.threads} threads each; ratios irc / runtime "
        "(below 1: irc faster)"
    )
    print(header)
    print("-" * len(header))
    summaries: dict[str, str] = {}
    kernel_lines: dict[str, list[str]] = {}
    geometry_lines: dict[str, list[str]] = {}
    for name in names:
        entry = entries[name]
        path = paths[name]
        if not path.exists():
            print(f"{name:28} missing {path}")
            continue
        peers = [ort_runner(path, args.threads), tflite_runner(path, args.threads)]
        callable_peers = [p for p in peers if not isinstance(p, str)]
        result = run_irc(
            path, entry, args.repeat, args.warmup, callable_peers, args.kernels, args.geometry
        )
        timed = iter(result.get("peers", []))
        ort_ms, tfl_ms = (p if isinstance(p, str) else next(timed, "failed") for p in peers)
        if "error" in result:
            failed = f"{name:28} {'failed':>8} {fmt_ms(ort_ms)} {fmt_ms(tfl_ms)}"
            print(f"{failed}  irc: {result['error']}", flush=True)
            continue
        irc_ms = result["ms"]
        summaries[name] = result["summary"]
        kernel_lines[name] = result["kernels"]
        geometry_lines[name] = result["geometry"]
        print(
            f"{name:28} {fmt_ms(irc_ms)} {fmt_ms(ort_ms)} {fmt_ms(tfl_ms)} "
            f"{ratio(irc_ms, ort_ms)} {ratio(irc_ms, tfl_ms)} {fmt_share(result['share'])} "
            f"{result['compile_s']:9.2f}",
            flush=True,
        )
    print()
    print("where the ops ran (irc, targets opencl then reference):")
    for name, summary in summaries.items():
        print(f"  {name}: {summary}")
    for name, lines in kernel_lines.items():
        if lines:
            print(f"\n{name}: top {len(lines)} kernels by device time (mean per run)")
            print("\n".join(lines))
    if args.geometry:
        from irc.targets.opencl.device import get_device

        print(f"\ndevice: {get_device().profile.describe()}")
        for name, lines in geometry_lines.items():
            print(f"\n{name}: OpenCL launch geometry")
            print("\n".join(lines))
    scratch.cleanup()


if __name__ == "__main__":
    main()
