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

`--baseline NAME=VALUE[,NAME=VALUE]` also compiles the model with those environment
variables set (a fusion's switch, `IRC_CPU_ISA=avx2`) and runs it interleaved: irc / baseline
is printed too.

usage: python benchmarks/transformer_models_vs_ort.py [--model deit] [--layers N]
                                                      [--threads 2] [--runs 20] [--targets cpu]
                                                      [--baseline IRC_CPU_FUSE_ATTENTION=0]
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument(
        "--baseline",
        metavar="NAME=VALUE[,NAME=VALUE]",
        help="also compile with these environment variables set, and compare",
    )
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = os.environ["IRC_CPU_THREADS"] = str(args.threads)

    import numpy as np
    import onnx
    from bert_cpu_vs_ort import compile_with_env
    from side_by_side import cpu_name, interleaved_ms, interleaved_ort_session, region_share

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
        shapes = {k: v.shape for k, v in feeds.items()}
        baseline = (
            compile_with_env(path, args.targets, shapes, args.baseline) if args.baseline else None
        )
        session = interleaved_ort_session(path, args.threads)

    runners = {"irc": lambda: compiled.run(feeds), "onnxruntime": lambda: session.run(None, feeds)}
    if baseline is not None:
        runners["baseline"] = lambda: baseline.run(feeds)
    got, want = runners["irc"](), runners["onnxruntime"]()
    error = max(
        float(np.max(np.abs(got[name] - w)) / np.max(np.abs(w)))
        for name, w in zip(compiled.output_names, want, strict=True)
    )
    times = interleaved_ms(runners, args.runs)
    irc_ms, ort_ms = (statistics.median(times[label]) for label in ("irc", "onnxruntime"))

    summary, share = region_share(compiled.summary)
    print(f"{title}, batch 1, {args.threads} threads, {cpu_name()}")
    print(f"  {summary}  ({share} of ops in target regions); irc compile {compile_s:.1f} s")
    print(
        f"  irc [{args.targets}] {irc_ms:.2f} ms, onnxruntime {ort_ms:.2f} ms, "
        f"irc/onnxruntime {irc_ms / ort_ms:.2f}x; max |diff| / output scale {error:.1e}"
    )
    if baseline is not None:
        base_ms = statistics.median(times["baseline"])
        print(
            f"  baseline ({args.baseline}) {base_ms:.2f} ms, irc/baseline {irc_ms / base_ms:.3f}x, "
            f"baseline/onnxruntime {base_ms / ort_ms:.2f}x"
        )
    print(f"  load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
