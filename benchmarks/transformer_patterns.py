#!/usr/bin/env python3
"""canonicalize's transformer patterns (GELU, LayerNorm, SiLU, attention, Linear) on or off,
side by side in one process.

Builds the BERT-like (erf GELU) and GPT-2-like (tanh GELU) graphs of
tests/transformer_graphs.py at a given size, compiles each for `--targets` twice (with
`passes/transformer_patterns.py` in canonicalize, and without: the exporter's decomposed
arithmetic and MatMul + Add), and prints the median latency of each (runs interleaved) and
their ratio, with the host-op count.
The machine is shared and noisy: only the ratio measured here means much.

usage: python benchmarks/transformer_patterns.py [--hidden 256] [--seq 128] [--targets cpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import onnx
from side_by_side import interleaved_ms

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from transformer_graphs import bert_inputs, bert_like, gpt2_inputs, gpt2_like

import irc
import irc.passes.canonicalize as canonicalize
from irc.passes.transformer_patterns import transformer_patterns


def _interleaved_ms(models: dict[str, irc.CompiledModel], feeds: dict, runs: int) -> dict:
    """Median latency of each model, runs alternating between them (the order flips every
    round), so that drift of the shared machine hits both alike."""
    for model in models.values():
        model.run(feeds)
    runners = {label: (lambda m=m: m.run(feeds)) for label, m in models.items()}
    times = interleaved_ms(runners, runs)
    return {label: statistics.median(t) for label, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--targets", default="cpu")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    targets = args.targets.split(",")
    original = canonicalize.canonicalization_patterns
    names = {type(p).__name__ for p in transformer_patterns()}

    def without_fusion() -> list:
        return [p for p in original() if type(p).__name__ not in names]

    with tempfile.TemporaryDirectory() as tmp:
        for which, build, inputs in (
            ("bert", bert_like, bert_inputs),
            ("gpt2", gpt2_like, gpt2_inputs),
        ):
            path = Path(tmp) / f"{which}.onnx"
            onnx.save(build(hidden=args.hidden, heads=4, vocab=1000, max_len=args.seq), path)
            feeds = inputs(1, args.seq, vocab=1000)
            models, host = {}, {}
            for label, patterns in (("fused", original), ("decomposed", without_fusion)):
                canonicalize.canonicalization_patterns = patterns
                try:
                    models[label] = irc.compile(path, targets)
                    models[label].resize({name: a.shape for name, a in feeds.items()})
                finally:
                    canonicalize.canonicalization_patterns = original
                host[label] = models[label].summary.count("stays on the host")
            medians = _interleaved_ms(models, feeds, args.runs)
            results = {label: (medians[label], host[label]) for label in models}
            fused, decomposed = results["fused"], results["decomposed"]
            print(
                f"{which} hidden={args.hidden} seq={args.seq} [{args.targets}]: fused "
                f"{fused[0]:.2f} ms ({fused[1]} host ops), decomposed {decomposed[0]:.2f} ms "
                f"({decomposed[1]} host ops), fused/decomposed {fused[0] / decomposed[0]:.2f}x"
            )


if __name__ == "__main__":
    main()
