#!/usr/bin/env python3
"""Import time of every shared model (the Importers issue's target: MobileNet-sized < 2 s).

For each model of ../shared/models/manifest.json: the best of `--repeat` imports (read,
convert to the `nn` dialect, verify), the op count, and the printed size of the module.

usage: python benchmarks/import_models.py [--repeat N] [--models DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from irc.importers import import_model

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
TARGET_SECONDS = 2.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    args = parser.parse_args()
    manifest = json.loads((args.models / "manifest.json").read_text())

    print(f"{'model':30} {'format':7} {'ops':>5} {'import s':>9}")
    worst = 0.0
    for entry in manifest["models"]:
        path = args.models / entry["file"]
        # Dynamic input dimensions take the manifest's (golden) input shapes.
        shapes = {spec["name"]: spec["shape"] for spec in entry["inputs"]}
        best = float("inf")
        module = None
        for _ in range(args.repeat):
            start = time.perf_counter()
            module = import_model(path, input_shapes=shapes)
            best = min(best, time.perf_counter() - start)
        ops = sum(1 for _ in module.walk())  # type: ignore[union-attr]
        worst = max(worst, best)
        print(f"{entry['name']:30} {entry['format']:7} {ops:5d} {best:9.3f}")
    verdict = "within" if worst < TARGET_SECONDS else "OVER"
    print(f"slowest import {worst:.3f} s: {verdict} the {TARGET_SECONDS:.0f} s target")


if __name__ == "__main__":
    main()
