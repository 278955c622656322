"""float16 models (`convert_float_to_float16(keep_io_types=True)`, seeded graphs) on irc's
cpu target beside onnxruntime's float16 run, in one process.

Models (`--model`, repeatable; default all): a MobileNetV3-small-like CNN
(`tests/fp16_graphs.py`), and a BERT encoder exported with dynamic batch/sequence axes, a
DeiT-tiny-like ViT and a Whisper-encoder-like model (`tests/transformer_graphs.py`,
`tests/zoo_graphs.py`) converted by `tests/fp16_transformer_graphs.to_float16`. For each:

* the share of the float16 model's ops in cpu regions at both cpu precisions;
* the error of each run against onnxruntime's float32 run of the float32 model, relative to
  the output scale (the largest over the outputs): irc cpu at its default precision (fp32:
  float32 activations, the float16 weights widened), irc cpu `precision=fp16` (16-bit
  activation storage, one rounding per op), irc's reference target (numpy float16, one
  rounding per op), onnxruntime's float16 run;
* the float32 model on irc cpu beside them (its error: irc's float32 arithmetic alone);
* median latency, interleaved (`side_by_side.interleaved_ms`), with the ratio to
  onnxruntime's float16 run. Timings are only comparable within one run of this script;
  the CPU and the load average are printed with them.

    python benchmarks/fp16_models_vs_ort.py [--model bert --model deit] [--threads 2]
        [--rounds 20] [--seq 128] [--layers N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODELS = ("mobilenetv3", "bert", "deit", "whisper")


def _model(name: str, args: argparse.Namespace) -> tuple[Any, dict[str, Any], str]:
    """The float32 ONNX model, its feeds and a title."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import numpy as np
    import transformer_graphs
    import zoo_graphs
    from fp16_graphs import mobilenet_v3_small_like

    layers = {} if args.layers is None else {"layers": args.layers}
    if name == "mobilenetv3":
        feeds = {"input": np.random.default_rng(1).uniform(-1, 1, (1, 3, 224, 224))}
        feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
        return mobilenet_v3_small_like(image=224), feeds, "MobileNetV3-small-like 224 px"
    if name == "bert":
        hidden, heads, n = 256, 4, args.layers or 4
        model = transformer_graphs.bert_like(hidden=hidden, heads=heads, layers=n, max_len=512)
        feeds = transformer_graphs.bert_inputs(1, args.seq)
        title = f"BERT-like (dynamic axes) hidden {hidden}, {heads} heads, {n} layers"
        title += f", seq {args.seq}"
        return model, feeds, title
    if name == "deit":
        title = f"DeiT-tiny-like 224 px, hidden 192, 3 heads, {args.layers or 12} layers"
        return zoo_graphs.deit_like(**layers), zoo_graphs.deit_inputs(1), title
    frames = 600
    model = zoo_graphs.whisper_encoder_like(frames=frames, **layers)
    title = f"Whisper-tiny-encoder-like 80x{frames}, hidden 384, 6 heads, {args.layers or 4} layers"
    return model, zoo_graphs.whisper_inputs(1, 80, frames), title


def _error(got: list[Any], want: list[Any]) -> float:
    import numpy as np

    return max(
        float(np.max(np.abs(g - w)) / np.max(np.abs(w))) for g, w in zip(got, want, strict=True)
    )


def run_model(name: str, args: argparse.Namespace) -> None:
    import onnx
    from side_by_side import cpu_name, interleaved_ms, interleaved_ort_session, region_share

    import irc

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fp16_transformer_graphs import to_float16

    model, feeds, title = _model(name, args)
    shapes = {k: v.shape for k, v in feeds.items()}
    with tempfile.TemporaryDirectory() as folder:
        fp32, fp16 = Path(folder) / "fp32.onnx", Path(folder) / "fp16.onnx"
        onnx.save(model, fp32)
        onnx.save(to_float16(model), fp16)
        compiled = {
            "irc cpu": irc.compile(fp16, "cpu", input_shapes=shapes),
            "irc cpu fp16": irc.compile(fp16, "cpu", input_shapes=shapes, precision="fp16"),
        }
        irc_fp32 = irc.compile(fp32, "cpu", input_shapes=shapes)
        reference = irc.compile(fp16, "reference", input_shapes=shapes)
        sessions = {
            "ort fp16": interleaved_ort_session(fp16, args.threads),
            "ort fp32": interleaved_ort_session(fp32, args.threads),
        }
    runners: dict[str, Callable[[], object]] = {}
    for label, c in compiled.items():
        runners[label] = lambda c=c: c.run(feeds)
    runners["irc fp32 model"] = lambda: irc_fp32.run(feeds)
    for label, s in sessions.items():
        runners[label] = lambda s=s: s.run(None, feeds)
    golden = sessions["ort fp32"].run(None, feeds)
    outputs = {label: list(c.run(feeds).values()) for label, c in compiled.items()}
    outputs["irc reference"] = list(reference.run(feeds).values())
    outputs["irc fp32 model"] = list(irc_fp32.run(feeds).values())
    outputs["ort fp16"] = sessions["ort fp16"].run(None, feeds)
    for runner in runners.values():
        for _ in range(2):
            runner()
    times = interleaved_ms(runners, args.rounds)
    med = {label: statistics.median(t) for label, t in times.items()}
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"\n{title}")
    print(f"{cpu_name()}, {args.threads} threads, load average {load}")
    for label, c in compiled.items():
        summary, share = region_share(c.summary)
        print(f"  {label:13s} {share} of the ops in cpu regions ({summary})")
    print("  run             median ms  vs ort fp16   error vs ort fp32 (of output scale)")
    for label in (*compiled, "irc reference", "ort fp16", "irc fp32 model", "ort fp32"):
        error = "golden" if label == "ort fp32" else f"{_error(outputs[label], golden):.2e}"
        ms = f"{med[label]:9.3f}" if label in med else "        -"
        ratio = f"{med[label] / med['ort fp16']:5.2f}x" if label in med else "     -"
        print(f"  {label:14s} {ms}   {ratio}       {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=MODELS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seq", type=int, default=128, help="BERT's sequence length")
    parser.add_argument("--layers", type=int, help="transformer layers (default: each model's)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = os.environ["IRC_CPU_THREADS"] = str(args.threads)
    os.environ.pop("IRC_CPU_PRECISION", None)  # "irc cpu" is the default precision
    for name in args.model or MODELS:
        run_model(name, args)


if __name__ == "__main__":
    main()
