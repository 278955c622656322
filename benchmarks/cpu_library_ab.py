#!/usr/bin/env python3
"""The CPU kernel library (targets/cpu/library.py) against kernels pasted into each model's
translation unit (`IRC_CPU_KERNEL_LIBRARY=0`, as before the library), in ONE process: does
calling the kernels through the library, without the literal arguments reaching their
bodies, cost run time?

Each model is compiled twice for the cpu target with the same ISA profile (`--isa`, default
the host's best), once each way, both loaded in this process and run in interleaved rounds
on 1 thread (`--threads`); prints the median CPU time per run (`time.process_time`: steadier
than the wall time on a shared machine), the median wall time, and library / pasted.

usage: python benchmarks/cpu_library_ab.py [--isa NAME] [--threads 1] [--rounds 30] [MODEL ...]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cpu_isa_compare import irc_runner, measure
from side_by_side import DEFAULT_MODELS

DEFAULT = (
    "mobilenet_v2_float32/mobilenet_v2_float32.tflite",
    "mobilenet_v2_int8/mobilenet_v2_int8.tflite",
    "face_detection_short_range/face_detection_short_range.tflite",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--isa", default=None, help="ISA profile (default: the host's best)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    os.environ["IRC_COMPILE_CACHE"] = "0"  # the two forms are told apart by the environment
    from irc.targets.cpu import isa, library

    profile = args.isa or isa.best().name
    paths = args.models or [DEFAULT_MODELS / m for m in DEFAULT if (DEFAULT_MODELS / m).exists()]
    print(f"profile {profile}, {args.threads} thread(s), {args.rounds} interleaved rounds")
    print(f"{'model':<34} {'library ms':>11} {'pasted ms':>10} {'lib/pasted':>10}  (CPU; wall)")
    for path in paths:
        runners = {}
        for name, value in (("library", "1"), ("pasted", "0")):
            os.environ[library.ENV] = value
            try:
                runners[name] = irc_runner(path, profile)(args.threads)
            finally:
                del os.environ[library.ENV]
        times = measure(runners, args.rounds, warmup=3)
        (lib_wall, lib_cpu), (old_wall, old_cpu) = times["library"], times["pasted"]
        print(
            f"{path.stem:<34} {lib_cpu:>11.2f} {old_cpu:>10.2f} {lib_cpu / old_cpu:>10.3f}"
            f"  (wall {lib_wall:.2f} / {old_wall:.2f} = {lib_wall / old_wall:.3f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
