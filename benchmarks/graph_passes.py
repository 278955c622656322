#!/usr/bin/env python3
"""What the graph passes do to every shared model (the Graph-passes issue's report).

For each model of ../shared/models/manifest.json:
* transposes left after `convert-layout{to=NCHW},canonicalize` and
  `convert-layout{to=NHWC},canonicalize`, and how far the outputs moved (relative to max|out|);
* for quantized models, `insert-qdq` statistics (ops converted, casts inserted/cancelled,
  weights folded) with `emulate-rounding=true` and `false`, and the error against the
  untransformed int8 run in quantization steps (mean, share within 1 step, arg-max kept).

usage: python benchmarks/graph_passes.py [--models DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

import irc
from irc.context import get_all_passes, make_context
from irc.dialects import nn
from irc.passes.insert_qdq import insert_qdq

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def apply(module: ModuleOp, spec: str) -> ModuleOp:
    result = module.clone()
    PassPipeline.parse_spec(get_all_passes(), spec).apply(make_context(), result)
    return result


def relative_change(before: dict, after: dict) -> float:
    worst = 0.0
    for name, want in before.items():
        scale = max(float(np.abs(want.astype(np.float64)).max()), 1e-12)
        diff = float(np.abs(after[name].astype(np.float64) - want).max())
        worst = max(worst, diff / scale)
    return worst


def step_errors(before: dict, after: dict) -> str:
    steps = np.concatenate(
        [
            np.abs(after[n].astype(np.float64) - before[n].astype(np.float64)).reshape(-1)
            for n in before
        ]
    )
    argmax = all(
        int(after[n].argmax()) == int(before[n].argmax())
        for n in before
        if before[n].ndim == 2 and before[n].shape[1] > 10
    )
    within = float((steps <= 1).mean()) * 100
    kept = "kept" if argmax else "CHANGED"
    return f"mean {steps.mean():.3f} steps, {within:.2f}% within 1, arg-max {kept}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    args = parser.parse_args()
    manifest = json.loads((args.models / "manifest.json").read_text())

    print("== convert-layout,canonicalize: transposes left (output change rel. to max|out|)")
    print(f"{'model':30} {'to=NCHW':>18} {'to=NHWC':>18} {'pass s':>7}")
    quantized = []
    for entry in manifest["models"]:
        shapes = {spec["name"]: spec["shape"] for spec in entry["inputs"]}
        module = irc.import_model(args.models / entry["file"], input_shapes=shapes)
        with np.load(args.models / entry["golden"]["samples"][0]["inputs"]) as data:
            feed = {k: data[k] for k in data.files}
        base = irc.run(module, feed)
        cells, seconds = [], 0.0
        for layout in ("NCHW", "NHWC"):
            start = time.perf_counter()
            converted = apply(module, f"convert-layout{{to={layout}}},canonicalize")
            seconds += time.perf_counter() - start
            count = sum(1 for op in converted.walk() if isinstance(op, nn.TransposeOp))
            change = relative_change(base, irc.run(converted, feed))
            cells.append(f"{count:3d} ({change:.1e})")
        print(f"{entry['name']:30} {cells[0]:>18} {cells[1]:>18} {seconds:7.2f}")
        if any(np.issubdtype(v.dtype, np.integer) for v in base.values()):
            quantized.append((entry, module, feed, base))

    print("\n== insert-qdq on quantized models (against the untransformed int8 run)")
    for entry, module, feed, base in quantized:
        for emulate in (True, False):
            transformed = module.clone()
            stats = insert_qdq(transformed, emulate_rounding=emulate)
            errors = step_errors(base, irc.run(transformed, feed))
            print(f"{entry['name']:20} emulate-rounding={str(emulate).lower():5}  {stats}")
            print(f"{'':20} {errors}")


if __name__ == "__main__":
    main()
