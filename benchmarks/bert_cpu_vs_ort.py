#!/usr/bin/env python3
"""A BERT-base-sized layer stack on irc's CPU and OpenCL targets beside onnxruntime, one process.

Builds the BERT-like graph of tests/transformer_graphs.py (torch.onnx.export's patterns:
decomposed LayerNorm, scaled dot-product attention with an additive mask, erf GELU, the
mask's Equal/Where and Cast arithmetic, embedding Gathers) at BERT-base size (hidden 768,
12 heads, FFN 3072, sequence 128, batch 1; `--layers` encoder layers, seeded weights),
compiles it once per `--targets` entry (e.g. `cpu opencl`: one model on the CPU target,
one on the OpenCL target; canonicalize folds LayerNorm, attention and GELU into single ops,
`passes/transformer_patterns.py`), and runs them and onnxruntime (intra-op threads =
`--threads`, all graph optimisations) in turn in this process. Prints per model the share
of ops in target regions, the median latency, irc / onnxruntime (below 1: irc is faster)
and the largest output difference relative to the output's scale. `--baseline NAME=VALUE`
also compiles each entry of `--targets` with the environment variable NAME set to VALUE
while it compiles (e.g. `IRC_CPU_ISA=avx2`, or a switch of a fusion such as
`IRC_CPU_FUSE_RESIDUAL=0`; several joined by commas, e.g.
`IRC_CPU_FUSE_ATTENTION=0,IRC_CPU_FUSE_RESIDUAL=0`) and runs it interleaved with the others,
for an A/B of one change in one process: irc / baseline is printed too.

Thread counts: OMP_NUM_THREADS and IRC_CPU_THREADS (the CPU target), and PoCL's
POCL_MAX_PTHREAD_COUNT / POCL_CPU_MAX_CU_COUNT (the OpenCL target on PoCL's CPU device),
are set before irc loads libgomp or PoCL. The machine is shared and noisy: only the ratios
measured in one run mean much (PERF_NOTES.md).

usage: python benchmarks/bert_cpu_vs_ort.py [--layers 2] [--seq 128] [--threads 2]
                                            [--runs 20] [--targets cpu opencl]
                                            [--baseline IRC_CPU_ISA=avx2]
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
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--targets",
        nargs="+",
        default=["cpu"],
        help="one compiled model per entry, each a comma-separated target list",
    )
    parser.add_argument(
        "--baseline",
        metavar="NAME=VALUE[,NAME=VALUE]",
        help="also compile each target list with these environment variables set, and compare",
    )
    args = parser.parse_args()
    for name in ("OMP_NUM_THREADS", "IRC_CPU_THREADS", "POCL_MAX_PTHREAD_COUNT"):
        os.environ[name] = str(args.threads)
    os.environ["POCL_CPU_MAX_CU_COUNT"] = str(args.threads)

    import numpy as np
    import onnx
    from side_by_side import cpu_name, interleaved_ms, interleaved_ort_session, region_share

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from transformer_graphs import bert_inputs, bert_like

    import irc

    vocab = 1000
    model = bert_like(
        hidden=args.hidden, heads=args.heads, layers=args.layers, vocab=vocab, max_len=args.seq
    )
    feeds = bert_inputs(1, args.seq, vocab=vocab)
    shapes = {k: v.shape for k, v in feeds.items()}
    compiled: dict[str, irc.CompiledModel] = {}
    compile_s: dict[str, float] = {}
    baselines: dict[str, irc.CompiledModel] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bert.onnx"
        onnx.save(model, path)
        for targets in args.targets:
            start = time.perf_counter()
            compiled[targets] = irc.compile(path, targets.split(","), input_shapes=shapes)
            compile_s[targets] = time.perf_counter() - start
            if args.baseline:
                baselines[targets] = compile_with_env(path, targets, shapes, args.baseline)
        session = interleaved_ort_session(path, args.threads)

    runners = {f"irc [{t}]": (lambda m=m: m.run(feeds)) for t, m in compiled.items()}
    runners.update({f"baseline [{t}]": (lambda m=m: m.run(feeds)) for t, m in baselines.items()})
    runners["onnxruntime"] = lambda: session.run(None, feeds)
    want = runners["onnxruntime"]()
    errors = {}
    for targets, m in compiled.items():
        got = m.run(feeds)
        errors[targets] = max(
            float(np.max(np.abs(got[name] - w)) / np.max(np.abs(w)))
            for name, w in zip(m.output_names, want, strict=True)
        )
    times = interleaved_ms(runners, args.runs)
    ort_ms = statistics.median(times["onnxruntime"])

    print(
        f"BERT-like hidden={args.hidden} heads={args.heads} layers={args.layers} "
        f"seq={args.seq} batch=1, {args.threads} threads, {cpu_name()}"
    )
    for targets, m in compiled.items():
        summary, share = region_share(m.summary)
        irc_ms = statistics.median(times[f"irc [{targets}]"])
        print(
            f"  {summary}  ({share} of ops in target regions); compile {compile_s[targets]:.1f} s"
        )
        print(
            f"  irc [{targets}] {irc_ms:.2f} ms, onnxruntime {ort_ms:.2f} ms, "
            f"irc/onnxruntime {irc_ms / ort_ms:.2f}x; max |diff| / output scale "
            f"{errors[targets]:.1e}"
        )
        if targets in baselines:
            base_ms = statistics.median(times[f"baseline [{targets}]"])
            print(
                f"  baseline [{targets}] ({args.baseline}) {base_ms:.2f} ms, "
                f"irc/baseline {irc_ms / base_ms:.3f}x, baseline/onnxruntime "
                f"{base_ms / ort_ms:.2f}x"
            )
    print(f"  load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


def compile_with_env(path: Path, targets: str, shapes: dict, assignment: str):
    """`irc.compile` of the model for `targets` with the environment variables of
    `assignment` (NAME=VALUE, or several joined by commas) set while it compiles (the old
    values restored after)."""
    import irc

    pairs = [item.partition("=") for item in assignment.split(",") if item]
    old = {name: os.environ.get(name) for name, _, _ in pairs}
    os.environ.update({name: value for name, _, value in pairs})
    try:
        return irc.compile(path, targets.split(","), input_shapes=shapes)
    finally:
        for name, value in old.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


if __name__ == "__main__":
    main()
