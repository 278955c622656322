#!/usr/bin/env python3
"""irc's CPU target built for each ISA profile, beside the best peer, in ONE process.

For every chosen shared model: irc compiled once per ISA profile (`IRC_CPU_ISA`: the
host's best and `--isa` others, e.g. avx2 on an AVX-512 machine: the kernels an AVX2-only
CPU gets), and the peer that reads the model (TFLite + XNNPACK for .tflite, onnxruntime for
.onnx), all with the same thread count, timed in interleaved rounds (one run of each per
round) so that the machine's load moves all of them alike. Reports the median wall time
and, with one thread, the median CPU time of a run (`time.process_time`: on a shared,
overloaded machine the CPU a run consumes is steadier than its wall time, which includes
the waits for a core), and the ratios irc/peer and ISA/best ISA.

The peer always runs its own best kernels for the host (XNNPACK and onnxruntime pick their ISA
by cpuid, with no override): on an AVX-512 VNNI machine `irc/avx2 / tflite` compares irc's AVX2
kernels with XNNPACK's VNNI ones, a lower bound of what an AVX2-only CPU would show, not like
for like (int8 most of all: vpdpbusd does 64 multiply-adds per instruction, AVX2's vpmaddwd
16 plus an add).

Several thread counts (`--threads 1 2`) run in the same process and the same interleaved
rounds: OMP_NUM_THREADS is set to the largest before libgomp loads, and each irc run first
sets its libraries' thread count (`LoadedCpuExecutable.set_threads`); the peer gets one
interpreter or session per thread count. So the ratio of irc at 2 threads to irc at 1
thread, and to the peer at 2 threads, are measured under the same load.

usage: python benchmarks/cpu_isa_compare.py [--models DIR] [--only NAME ...] [--threads N ...]
                                            [--isa avx2 ...] [--rounds K] [--warmup W]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from side_by_side import DEFAULT_MODELS, load_inputs

Runner = Callable[[], object]


def peer_runner(path: Path, threads: int) -> tuple[str, Runner] | None:
    """(name, one run) of the peer runtime that reads `path`, or None."""
    inputs = load_inputs(path.parent)
    if path.suffix == ".tflite":
        from ai_edge_litert.interpreter import Interpreter

        interpreter = Interpreter(model_path=str(path), num_threads=threads)
        interpreter.allocate_tensors()
        details = interpreter.get_input_details()

        def run_tflite() -> None:
            for d in details:
                interpreter.set_tensor(d["index"], inputs[d["name"]])
            interpreter.invoke()

        return "tflite", run_tflite
    if path.suffix == ".onnx":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feed = {i.name: inputs[i.name] for i in session.get_inputs()}
        return "ort", lambda: session.run(None, feed)
    return None


def irc_runner(path: Path, isa_name: str) -> Callable[[int], Runner]:
    """threads -> one run of `path` compiled for the cpu target with the ISA profile
    `isa_name`, its cpu libraries' parallel loops on that many threads."""
    import irc

    inputs = load_inputs(path.parent)
    shapes = {k: v.shape for k, v in inputs.items()} if path.suffix == ".onnx" else None
    os.environ["IRC_CPU_ISA"] = isa_name
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = irc.compile(path, targets=["cpu", "reference"], input_shapes=shapes)
        model.run(inputs)  # loads (builds) the library with this profile
    finally:
        del os.environ["IRC_CPU_ISA"]
    loaded = [x for x in model.program.loaded.values() if hasattr(x, "set_threads")]

    def with_threads(threads: int) -> Runner:
        def run() -> object:
            for executable in loaded:
                executable.set_threads(threads)
            return model.run(inputs)

        return run

    return with_threads


def measure(runners: dict[str, Runner], rounds: int, warmup: int) -> dict[str, tuple[float, float]]:
    """name -> (median wall ms, median CPU ms) over interleaved rounds."""
    for run in runners.values():
        for _ in range(warmup):
            run()
    wall: dict[str, list[float]] = {name: [] for name in runners}
    cpu: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            c0, t0 = time.process_time(), time.perf_counter()
            run()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {n: (statistics.median(wall[n]) * 1e3, statistics.median(cpu[n]) * 1e3) for n in runners}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--isa", nargs="*", default=["avx2"], help="profiles besides the best")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(max(args.threads))  # before libgomp loads

    from irc.targets.cpu import isa

    best = isa.best().name
    profiles = [best] + [n for n in args.isa if n != best and not isa.missing(isa.PROFILES[n])]
    cpu_name = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    counts = ", ".join(str(t) for t in args.threads)
    print(f"{cpu_name}; host best ISA {best}; {counts} thread(s); {args.rounds} rounds")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    manifest = json.loads((args.models / "manifest.json").read_text())
    files = {entry["name"]: entry["file"] for entry in manifest["models"]}
    names = [n for n in files if args.only is None or n in args.only]
    for name in names:
        path = args.models / files[name]
        builders = {p: irc_runner(path, p) for p in profiles}
        runners: dict[str, Runner] = {}
        peer_name = None
        for threads in args.threads:
            for p in profiles:
                runners[f"irc/{p} x{threads}"] = builders[p](threads)
            peer = peer_runner(path, threads)
            if peer is not None:
                peer_name = peer[0]
                runners[f"{peer[0]} x{threads}"] = peer[1]
        results = measure(runners, args.rounds, args.warmup)
        print(f"\n{name} (load average after: {os.getloadavg()[0]:.2f})")
        for label, (wall_ms, cpu_ms) in results.items():
            line = f"  {label:20} wall {wall_ms:8.2f} ms"
            if label.endswith(" x1"):
                line += f"   cpu {cpu_ms:8.2f} ms"
            print(line)
        for threads in args.threads:
            column = 1 if threads == 1 else 0
            what = f"x{threads}, " + ("cpu" if threads == 1 else "wall")

            def ms(label: str, threads: int = threads, column: int = column) -> float:
                return results[f"{label} x{threads}"][column]  # noqa: B023 (called at once)

            if peer_name is not None:
                for p in profiles:
                    print(f"  irc/{p} / {peer_name} ({what}): {ms(f'irc/{p}') / ms(peer_name):.2f}")
            for p in profiles[1:]:
                print(f"  irc/{p} / irc/{best} ({what}): {ms(f'irc/{p}') / ms(f'irc/{best}'):.2f}")
        if 1 in args.threads:
            for threads in args.threads:
                if threads == 1:
                    continue
                for label in [f"irc/{p}" for p in profiles] + ([peer_name] if peer_name else []):
                    speedup = results[f"{label} x1"][0] / results[f"{label} x{threads}"][0]
                    print(f"  {label} speed-up x1 -> x{threads} (wall): {speedup:.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
