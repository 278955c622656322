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

irc's thread count is OpenMP's, read once when libgomp loads: run the script once per
thread count (`--threads`, which sets OMP_NUM_THREADS before irc loads anything).

usage: python benchmarks/cpu_isa_compare.py [--models DIR] [--only NAME ...] [--threads N]
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


def irc_runner(path: Path, isa_name: str) -> Runner:
    """One run of `path` compiled for the cpu target with the ISA profile `isa_name`."""
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
    return lambda: model.run(inputs)


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
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--isa", nargs="*", default=["avx2"], help="profiles besides the best")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before libgomp loads

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
    print(f"{cpu_name}; host best ISA {best}; {args.threads} thread(s); {args.rounds} rounds")
    manifest = json.loads((args.models / "manifest.json").read_text())
    files = {entry["name"]: entry["file"] for entry in manifest["models"]}
    names = [n for n in files if args.only is None or n in args.only]
    for name in names:
        path = args.models / files[name]
        runners = {f"irc/{p}": irc_runner(path, p) for p in profiles}
        peer = peer_runner(path, args.threads)
        if peer is not None:
            runners[peer[0]] = peer[1]
        results = measure(runners, args.rounds, args.warmup)
        print(f"\n{name}")
        for label, (wall_ms, cpu_ms) in results.items():
            line = f"  {label:16} wall {wall_ms:8.2f} ms"
            if args.threads == 1:
                line += f"   cpu {cpu_ms:8.2f} ms"
            print(line)
        column = 1 if args.threads == 1 else 0
        what = "cpu" if args.threads == 1 else "wall"
        if peer is not None:
            for p in profiles:
                r = results[f"irc/{p}"][column] / results[peer[0]][column]
                print(f"  irc/{p} / {peer[0]} ({what}): {r:.2f}")
        for p in profiles[1:]:
            r = results[f"irc/{p}"][column] / results[f"irc/{best}"][column]
            print(f"  irc/{p} / irc/{best} ({what}): {r:.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
