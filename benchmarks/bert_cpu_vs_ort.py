#!/usr/bin/env python3
"""A BERT-base-sized layer stack on irc's CPU target beside onnxruntime, 2 threads, one process.

Builds the BERT-like graph of tests/transformer_graphs.py (torch.onnx.export's patterns:
decomposed LayerNorm, scaled dot-product attention with an additive mask, erf GELU, the
mask's Equal/Where and Cast arithmetic, embedding Gathers) at BERT-base size (hidden 768,
12 heads, FFN 3072, sequence 128, batch 1; `--layers` encoder layers, seeded weights),
compiles it for `--targets` (canonicalize folds LayerNorm, attention and GELU into single
ops, `passes/transformer_patterns.py`), and runs it and onnxruntime (intra-op threads =
`--threads`, all graph optimisations) alternately in this process. Prints the share of ops
in target regions, the median latency of each, and irc / onnxruntime (below 1: irc is
faster), and the largest output difference relative to the output's scale.

irc's thread count: OMP_NUM_THREADS and IRC_CPU_THREADS are set before irc loads libgomp.
The machine is shared and noisy: only the ratio measured in one run means much (PERF_NOTES.md).

usage: python benchmarks/bert_cpu_vs_ort.py [--layers 2] [--seq 128] [--threads 2]
                                            [--runs 20] [--targets cpu]
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
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--targets", default="cpu")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = os.environ["IRC_CPU_THREADS"] = str(args.threads)

    import numpy as np
    import onnx
    import onnxruntime as ort

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from transformer_graphs import bert_inputs, bert_like

    import irc

    vocab = 1000
    model = bert_like(
        hidden=args.hidden, heads=args.heads, layers=args.layers, vocab=vocab, max_len=args.seq
    )
    feeds = bert_inputs(1, args.seq, vocab=vocab)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bert.onnx"
        onnx.save(model, path)
        start = time.perf_counter()
        compiled = irc.compile(
            path, args.targets.split(","), input_shapes={k: v.shape for k, v in feeds.items()}
        )
        compile_s = time.perf_counter() - start
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
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
    cpu = _cpu_name()
    print(
        f"BERT-like hidden={args.hidden} heads={args.heads} layers={args.layers} "
        f"seq={args.seq} batch=1, {args.threads} threads, {cpu}"
    )
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
