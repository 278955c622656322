#!/usr/bin/env python3
"""The OpenCL target built strict (the default, `-cl-mad-enable`) beside fast math
(`-cl-fast-relaxed-math -cl-mad-enable`, `IRC_OPENCL_FAST_MATH=1`), in one process.

Strict keeps NaN, ±Inf and signed zeros (docs/semantics.md); fast math lets the compiler
assume there are none. The model (default MobileNetV2 float32 of ../shared/models) is
compiled twice, once per build option set, and the two are timed in interleaved rounds
(`--rounds` x `--repeat` runs each), so load on this shared machine hits both alike. Prints
the median ms of each and the ratio strict / fast (above 1: strict slower); asserts nothing.

usage: python benchmarks/opencl_fast_math.py [--model PATH] [--rounds 5] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from pathlib import Path

os.environ.setdefault("POCL_CPU_MAX_CU_NUM", "2")

import numpy as np

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = MODELS / "mobilenet_v2_float32" / "mobilenet_v2_float32.tflite"
    parser.add_argument("--model", type=Path, default=default)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--options", nargs="*", default=[], help="more build option sets to time beside them"
    )
    args = parser.parse_args()
    if not args.model.exists():
        raise SystemExit(f"{args.model}: not found (the shared models are needed)")

    import irc
    from irc.targets.opencl import build, runtime

    models = {}
    for name, options in [
        ("strict", build.STRICT_BUILD_OPTIONS),
        ("fast", build.FAST_MATH_BUILD_OPTIONS),
        *[(extra, extra) for extra in args.options],
    ]:
        # read at every program build (build.py) and in the program cache key (runtime.py)
        build.BUILD_OPTIONS = runtime.BUILD_OPTIONS = options
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models[name] = irc.compile(str(args.model), targets=["opencl", "reference"])
    rng = np.random.default_rng(0)
    spec = models["strict"].inputs
    feed = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in spec}
    times: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        for _ in range(3):
            model.run(feed)
    for _ in range(args.rounds):
        for name, model in models.items():
            for _ in range(args.repeat):
                start = time.perf_counter()
                model.run(feed)
                times[name].append((time.perf_counter() - start) * 1e3)
    fast = statistics.median(times["fast"])
    print(f"{args.model.name}: median ms over {args.rounds} x {args.repeat} interleaved runs")
    for name in models:
        ms = statistics.median(times[name])
        print(f"  {name:<50} {ms:8.2f} ms   / fast math {ms / fast:6.3f}")


if __name__ == "__main__":
    main()
