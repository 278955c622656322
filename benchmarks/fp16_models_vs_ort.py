"""A float16 MobileNetV3-small-like model (tests/fp16_graphs.py: convert_float_to_float16 with
keep_io_types, seeded) beside its float32 original, on irc and onnxruntime, in one process.

Runs interleaved (`side_by_side.interleaved_ms`) and prints medians, the ratios fp16/fp32 per
runtime and irc/onnxruntime per precision, and each run's error relative to the output scale
against onnxruntime's float32 run. Timings are only comparable within one run of this script.

    python benchmarks/fp16_models_vs_ort.py [--image 224] [--threads 2] [--rounds 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=int, default=224)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--targets", default="cpu")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = os.environ["IRC_CPU_THREADS"] = str(args.threads)

    import numpy as np
    import onnx
    from side_by_side import cpu_name, interleaved_ms, interleaved_ort_session, region_share

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fp16_graphs import mobilenet_v3_small_like, to_float16

    import irc

    model = mobilenet_v3_small_like(image=args.image)
    feeds = {
        "input": np.random.default_rng(1)
        .uniform(-1, 1, (1, 3, args.image, args.image))
        .astype(np.float32)
    }
    with tempfile.TemporaryDirectory() as folder:
        paths = {"fp32": Path(folder) / "fp32.onnx", "fp16": Path(folder) / "fp16.onnx"}
        onnx.save(model, paths["fp32"])
        onnx.save(to_float16(model), paths["fp16"])
        compiled = {k: irc.compile(p, args.targets.split(",")) for k, p in paths.items()}
        sessions = {k: interleaved_ort_session(p, args.threads) for k, p in paths.items()}
        runners = {}
        for k in paths:
            runners[f"irc {k}"] = lambda k=k: compiled[k].run(feeds)
            runners[f"ort {k}"] = lambda k=k: sessions[k].run(None, feeds)
        golden = sessions["fp32"].run(None, feeds)[0]
        outputs = {
            "irc fp32": compiled["fp32"].run(feeds)["output"],
            "irc fp16": compiled["fp16"].run(feeds)["output"],
            "ort fp32": golden,
            "ort fp16": sessions["fp16"].run(None, feeds)[0],
        }
        for label in runners:
            for _ in range(3):
                runners[label]()
        times = interleaved_ms(runners, args.rounds)
    med = {label: statistics.median(t) for label, t in times.items()}
    scale = float(np.max(np.abs(golden)))
    print(f"MobileNetV3-small-like {args.image} px, {args.threads} threads, {cpu_name()}")
    summary, share = region_share(compiled["fp16"].summary)
    print(f"targets {args.targets}, fp16 model: {summary} ({share} in target regions)")
    for label, ms in med.items():
        error = float(np.max(np.abs(outputs[label] - golden))) / scale
        print(f"  {label:9s} {ms:8.3f} ms   error vs ort fp32 {error:.2e} of output scale")
    print(f"fp16/fp32: irc {med['irc fp16'] / med['irc fp32']:.2f}x, "
          f"ort {med['ort fp16'] / med['ort fp32']:.2f}x")  # fmt: skip
    print(f"irc/ort: fp32 {med['irc fp32'] / med['ort fp32']:.2f}x, "
          f"fp16 {med['irc fp16'] / med['ort fp16']:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
