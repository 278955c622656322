#!/usr/bin/env python3
"""PoCL's kernel compile cost and run time of fp16's scalar store on a CPU device, A/B.

A = before: `irc_f2h` through `vstore_half_rte`; B = now: in integer arithmetic
(half_storage.py's `_integer_store`, on CPU devices only).

For each model (`../shared/models`: MobileNetV2 and face detection by default) in fp16
(`--precisions`), each variant is compiled in a process of its own with PoCL's kernel cache
empty (a fresh
`POCL_CACHE_DIR`, set before pyopencl loads) and its compile's CPU seconds printed (PoCL
compiles the kernels at load; the compile helper process included), then both variants are
compiled in this process and run interleaved (`--repeat` rounds, one call each): their
median latencies and the ratio B / A. Asserts nothing.

    python benchmarks/opencl_compile_cost_ab.py [--models DIR] [--only NAME ...] [--repeat N]
        [--precisions fp16 fp32]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["POCL_CACHE_DIR"] = tempfile.mkdtemp(prefix="pocl-ab-")
os.environ.setdefault("POCL_CPU_MAX_CU_NUM", "2")
os.environ["IRC_CACHE_DIR"] = tempfile.mkdtemp(prefix="irc-ab-")
os.environ["IRC_COMPILE_CACHE"] = "0"

import numpy as np
from opencl_vs_ort import interleaved_medians
from side_by_side import DEFAULT_MODELS, load_inputs

MODELS = {
    "mobilenet_v2_float32": "mobilenet_v2_float32.tflite",
    "face_detection_short_range": "face_detection_short_range.tflite",
}


def _old_header() -> str:
    """half_storage.HEADER as committed before the integer stores (git), else the builtins."""
    from irc.targets.opencl import half_storage

    text = half_storage.HEADER
    start = text.find("#ifdef IRC_HALF_TABLES\nushort")
    while start >= 0:
        middle = text.index("#else\n", start)
        end = text.index("#endif\n", middle)
        text = text[:start] + text[middle + 6 : end] + text[end + 7 :]
        start = text.find("#ifdef IRC_HALF_TABLES\nushort")
    return text


def _compile(path: Path, precision: str, variant: str):  # type: ignore[no-untyped-def]
    """`path` compiled for opencl + reference in `precision` with `variant`'s choices;
    (model, CPU seconds of the compile)."""
    import irc
    from irc.targets.opencl import codegen

    new_header = codegen.HALF_STORAGE_HEADER
    if variant == "A":
        codegen.HALF_STORAGE_HEADER = _old_header()
    os.environ["IRC_OPENCL_PRECISION"] = precision
    try:
        start = os.times()
        model = irc.compile(path, ["opencl", "reference"])
        end = os.times()
    finally:
        codegen.HALF_STORAGE_HEADER = new_header
    cpu = end.user + end.system - start.user - start.system
    children = end.children_user + end.children_system
    return model, cpu + children - start.children_user - start.children_system


def _compile_cpu(models: Path, name: str, precision: str, variant: str) -> float:
    """CPU seconds of one compile in a fresh process with empty PoCL and irc caches."""
    env = dict(os.environ)
    env["POCL_CACHE_DIR"] = tempfile.mkdtemp(prefix="pocl-ab-")
    env["IRC_CACHE_DIR"] = tempfile.mkdtemp(prefix="irc-ab-")
    args = ["--models", str(models), "--compile-only", variant, precision, name]
    out = subprocess.run(
        [sys.executable, __file__, *args], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", nargs="*", default=sorted(MODELS))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--precisions", nargs="*", default=["fp16"])
    parser.add_argument("--compile-only", nargs=3, metavar=("VARIANT", "PRECISION", "NAME"))
    args = parser.parse_args()
    if args.compile_only:  # a child: one compile, its CPU seconds on stdout
        variant, precision, name = args.compile_only
        _, seconds = _compile(args.models / name / MODELS[name], precision, variant)
        print(f"{seconds:.3f}")
        return
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo"], capture_output=True)
    print(cpu.stdout.decode().strip(), f"| PoCL cache {os.environ['POCL_CACHE_DIR']} (empty)")
    header = f"{'model':<24} {'prec':<5} {'compile A':>9} {'B':>6}"
    print(f"{header} {'run A ms':>9} {'B':>7} {'B/A':>5}")
    for name in args.only:
        path = args.models / name / MODELS[name]
        feed = load_inputs(args.models / name)
        for precision in args.precisions:
            cpu_a, cpu_b = (_compile_cpu(args.models, name, precision, v) for v in "AB")
            a, _ = _compile(path, precision, "A")
            b, _ = _compile(path, precision, "B")
            want = a.run(feed)
            got = b.run(feed)
            for key in want:
                np.testing.assert_allclose(got[key], want[key], rtol=1e-3, atol=1e-4)
            ms_a, ms_b = interleaved_medians(
                [lambda a=a, feed=feed: a.run(feed), lambda b=b, feed=feed: b.run(feed)],
                args.repeat,
                3,
            )
            print(
                f"{name:<24} {precision:<5} {cpu_a:9.2f} {cpu_b:6.2f} {ms_a:9.2f} {ms_b:7.2f}"
                f" {ms_b / ms_a:5.2f}"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
