#!/usr/bin/env python3
"""DeiT-tiny (and the other model-zoo graphs) on irc's CPU target beside onnxruntime, 2
threads, one process.

Builds a graph of tests/zoo_graphs.py (torch.onnx.export's / ultralytics' op patterns,
seeded weights) at its real size — DeiT-tiny: 224 px, patch 16, hidden 192, 3 heads, 12
layers; Whisper-tiny's encoder: 80 x 3000 log-mel, hidden 384, 6 heads, 4 layers;
MobileViT-like at 256 px; YOLOv8-like at 320 px — compiles it for `--targets` with the
batch-1 input shapes, and runs it and onnxruntime (intra-op threads = `--threads`, all graph
optimisations) alternately in this process. Prints the share of ops in target regions, the
median latency of each, irc / onnxruntime (below 1: irc is faster), and the largest output
difference relative to the output's scale.

irc's thread count: OMP_NUM_THREADS and IRC_CPU_THREADS are set before irc loads libgomp.
The machine is shared and noisy: only the ratio measured in one run means much (PERF_NOTES.md).

usage: python benchmarks/transformer_models_vs_ort.py [--model deit] [--layers N]
                                                      [--threads 2] [--runs 20] [--targets cpu]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", choices=["deit", "whisper", "mobilevit", "yolov8"], default="deit"
    )
    parser.add_argument("--layers", type=int, help="encoder layers (default: the real model's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--targets", default="cpu")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = os.environ["IRC_CPU_THREADS"] = str(args.threads)

    import numpy as np
    import onnx
    import onnxruntime as ort

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import zoo_graphs

    import irc

    layers = {} if args.layers is None else {"layers": args.layers}
    if args.model == "deit":
        model, feeds = zoo_graphs.deit_like(**layers), zoo_graphs.deit_inputs(1)
        title = f"DeiT-tiny-like 224 px, hidden 192, 3 heads, {args.layers or 12} layers"
    elif args.model == "whisper":
        model, feeds = zoo_graphs.whisper_encoder_like(**layers), zoo_graphs.whisper_inputs(1)
        title = f"Whisper-tiny-encoder-like 80x3000, hidden 384, 6 heads, {args.layers or 4} layers"
    elif args.model == "mobilevit":
        model = zoo_graphs.mobilevit_like(image=256)
        feeds = zoo_graphs.image_inputs("pixel_values", 1, 256)
        title = "MobileViT-like 256 px"
    else:
        model, feeds = zoo_graphs.yolov8_like(image=320), zoo_graphs.image_inputs("images", 1, 320)
        title = "YOLOv8-like 320 px"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{args.model}.onnx"
        onnx.save(model, path)
        start = time.perf_counter()
        compiled = irc.compile(
            path, args.targets.split(","), input_shapes={k: v.shape for k, v in feeds.items()}
        )
        compile_s = time.perf_counter() - start
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        # interleaved with irc in one process: spinning pool threads would take the cores of
        # whichever runtime runs next (as in cpu_vs_ort.py / opencl_vs_ort.py)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    runners = {"irc": lambda: compiled.run(feeds), "onnxruntime": lambda: session.run(None, feeds)}
    got, want = runners["irc"](), runners["onnxruntime"]()
    error = max(
        float(np.max(np.abs(got[name] - w)) / np.max(np.abs(w)))
        for name, w in zip(compiled.output_names, want, strict=True)
    )
    times: dict[str, list[float]] = {label: [] for label in runners}
    labels = list(runners)
    for round_ in range(args.runs):
        for label in labels if round_ % 2 == 0 else reversed(labels):
            start = time.perf_counter()
            runners[label]()
            times[label].append((time.perf_counter() - start) * 1e3)
    irc_ms, ort_ms = (statistics.median(times[label]) for label in labels)

    summary = next(line for line in compiled.summary.splitlines() if line.startswith("@"))
    counts = re.search(r"(\d+) of (\d+) ops", summary)
    share = f"{100 * int(counts[1]) / int(counts[2]):.0f} %" if counts else "?"
    print(f"{title}, batch 1, {args.threads} threads, {_cpu_name()}")
    print(f"  {summary}  ({share} of ops in target regions); irc compile {compile_s:.1f} s")
    print(
        f"  irc [{args.targets}] {irc_ms:.2f} ms, onnxruntime {ort_ms:.2f} ms, "
        f"irc/onnxruntime {irc_ms / ort_ms:.2f}x; max |diff| / output scale {error:.1e}"
    )


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
