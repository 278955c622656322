#!/usr/bin/env python3
"""Per-kernel time of the CPU target on two models side by side (an int8 model and its float
version, say), interleaved in one process.

Both models are compiled for `--targets cpu` with `IRC_CPU_PROFILE=1` (every kernel of the
generated functions timed, `targets/cpu/profiling.py`; a fused kernel's label starts with
its `cpu.fusion` kind: `qtable`, `qmul`, `qsum`, `qconv`, `qadd`, `conv_add` ...), then run
in turns (warm-up excluded) with the runtime's profile. Prints, per kernel kind (the label's
op name, with the fusion kind where there is one), the milliseconds per run of each model
and the largest kernels of the first one, and the ratio of the kernel sums. Timings on the
shared machine move between runs: compare the two columns of one run (PERF_NOTES.md).

usage: python benchmarks/cpu_kernel_profile.py FIRST.onnx SECOND.onnx [--threads 2]
                                               [--runs 30] [--top 15] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

FUSED_KINDS = ("qconv", "qadd", "qtable", "qmul", "qsum", "conv_add", "dynamic_fc")
"""`cpu.fusion` kinds: the first word of a fused kernel's label."""


def kind_of(label: str) -> str:
    """`qtable quant.scast 1x8 -> 1x8 int8_t` -> `qtable quant.scast`; `nn.add 1x8 ...` ->
    `nn.add`."""
    words = label.split(" ")
    return " ".join(words[:2]) if words[0] in FUSED_KINDS else words[0]


def _inputs(compiled, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        spec.name: np.asarray(rng.normal(0, 1, spec.shape), np.float32) for spec in compiled.inputs
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before libgomp loads
    os.environ["IRC_CPU_PROFILE"] = "1"  # read when the models are lowered

    import irc
    from irc.runtime.profiling import Profile

    compiled = [irc.compile(path, targets=["cpu"]) for path in args.models]
    feeds = [_inputs(c, args.seed) for c in compiled]
    profiles = [Profile() for _ in compiled]
    for c, f in zip(compiled, feeds, strict=True):
        for _ in range(3):
            c.program.run(f)
    for _ in range(args.runs):
        for c, f, p in zip(compiled, feeds, profiles, strict=True):
            c.program.run(f, profile=p)

    per_kernel: list[dict[str, float]] = []
    for profile in profiles:
        times: dict[str, float] = defaultdict(float)
        for row in profile.kernel_rows(order="time"):
            times[f"{row.index:4d} {row.description}"] += row.total_ms / args.runs
        per_kernel.append(times)
    by_kind: list[dict[str, float]] = []
    for times in per_kernel:
        kinds: dict[str, float] = defaultdict(float)
        for key, ms in times.items():
            kinds[kind_of(key[5:])] += ms
        by_kind.append(kinds)

    names = [os.path.basename(p) for p in args.models]
    print(f"ms per run, {args.threads} threads, {args.runs} runs, load {os.getloadavg()[0]:.2f}")
    print(f"{'kernel kind':<26} {names[0]:>24} {names[1]:>24}")
    order = sorted(
        set(by_kind[0]) | set(by_kind[1]), key=lambda k: -max(b.get(k, 0) for b in by_kind)
    )
    for kind in order:
        print(f"{kind:<26} {by_kind[0].get(kind, 0.0):>24.3f} {by_kind[1].get(kind, 0.0):>24.3f}")
    totals = [sum(k.values()) for k in by_kind]
    ratio = totals[0] / totals[1]
    print(f"{'all kernels':<26} {totals[0]:>24.3f} {totals[1]:>24.3f}  ratio {ratio:.3f}")
    print(f"\nlargest kernels of {names[0]}:")
    for key, ms in sorted(per_kernel[0].items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {ms:8.3f} ms  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
