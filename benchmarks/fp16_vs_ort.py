"""float16 storage on the cpu target against the widened float32 path and onnxruntime, in one
process: a MobileNetV3-small-like model (tests/fp16_graphs.py, convert_float_to_float16 with
keep_io_types, seeded) and its float32 original.

Runs, interleaved (`side_by_side.interleaved_ms`, the order reversed every other round):
* `irc f16`: the float16 file on cpu at `precision="fp16"` (the cpu target's
  `computes_float16_op`: float16 weights and activations, float32 arithmetic);
* `irc f16 widened`: the same file widened by `widen-fp16` before compiling (float32
  tensors holding the float16 weights: the cpu target's default precision, fp32);
* `irc f32`: the float32 file; `ort f16` / `ort f32`: onnxruntime's CPU provider.

Prints per run the median wall time at `--threads` threads and the median CPU time
(`time.process_time`) at one thread, which a shared, loaded machine disturbs less, the ratios
to `irc f16`, and each result's error relative to the output scale against onnxruntime's
float32 run. The CPU is named; only ratios within one run of this script mean anything.

    python benchmarks/fp16_vs_ort.py [--image 224] [--threads 2] [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _cpu_ms(runners: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median CPU time (ms) of one run of each runner, interleaved."""
    times: dict[str, list[float]] = {label: [] for label in runners}
    labels = list(runners)
    for round_ in range(rounds):
        for label in labels if round_ % 2 == 0 else reversed(labels):
            start = time.process_time()
            runners[label]()
            times[label].append((time.process_time() - start) * 1e3)
    return {label: statistics.median(t) for label, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=int, default=224)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import onnx
    from side_by_side import cpu_name, interleaved_ms, interleaved_ort_session

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fp16_graphs import mobilenet_v3_small_like, to_float16

    import irc
    from irc.importers import import_model
    from irc.passes.widen_fp16 import widen_fp16
    from irc.targets.cpu import isa

    model = mobilenet_v3_small_like(image=args.image)
    shape = (1, 3, args.image, args.image)
    feeds = {"input": np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)}
    with tempfile.TemporaryDirectory() as folder:
        fp32, fp16 = Path(folder) / "fp32.onnx", Path(folder) / "fp16.onnx"
        onnx.save(model, fp32)
        onnx.save(to_float16(model), fp16)
        widened = import_model(fp16)
        widen_fp16(widened)
        compiled = {
            "irc f16": irc.compile(fp16, "cpu", precision="fp16"),
            "irc f16 widened": irc.compile(widened, "cpu"),
            "irc f32": irc.compile(fp32, "cpu"),
        }
        sessions = {
            "ort f16": {t: interleaved_ort_session(fp16, t) for t in (1, args.threads)},
            "ort f32": {t: interleaved_ort_session(fp32, t) for t in (1, args.threads)},
        }
    loaded = {
        name: [x for x in m.program.loaded.values() if hasattr(x, "set_threads")]
        for name, m in compiled.items()
    }

    def runners(threads: int) -> dict[str, Callable[[], object]]:
        def irc_run(name: str) -> Callable[[], object]:
            def run() -> object:
                for executable in loaded[name]:
                    executable.set_threads(threads)
                return compiled[name].run(feeds)

            return run

        found: dict[str, Callable[[], object]] = {n: irc_run(n) for n in compiled}
        for name, by_threads in sessions.items():
            found[name] = lambda s=by_threads[threads]: s.run(None, feeds)
        return found

    outputs = {name: np.asarray(m.run(feeds)["output"]) for name, m in compiled.items()}
    for name, by_threads in sessions.items():
        outputs[name] = by_threads[1].run(None, feeds)[0]
    golden = outputs["ort f32"]
    scale = float(np.max(np.abs(golden)))
    for run in runners(args.threads).values():
        run()
    wall = {
        k: statistics.median(v)
        for k, v in interleaved_ms(runners(args.threads), args.rounds).items()
    }
    cpu = _cpu_ms(runners(1), args.rounds)
    print(f"CPU: {cpu_name()}; irc ISA profile: {isa.select().name}")
    print(f"MobileNetV3-small-like {args.image}x{args.image}, {args.rounds} interleaved rounds")
    print(f"{'run':17s} {f'wall ms @{args.threads}':>11s} {'/irc f16':>9s} "
          f"{'CPU ms @1':>10s} {'/irc f16':>9s} {'error vs ort f32':>17s}")  # fmt: skip
    for name in runners(1):
        error = float(np.max(np.abs(outputs[name] - golden))) / scale
        print(
            f"{name:17s} {wall[name]:11.2f} {wall[name] / wall['irc f16']:9.2f} "
            f"{cpu[name]:10.2f} {cpu[name] / cpu['irc f16']:9.2f} {error:17.2e}"
        )


if __name__ == "__main__":
    main()
