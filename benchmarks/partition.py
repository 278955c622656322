#!/usr/bin/env python3
"""How long `partition` takes and what it makes, per shared model and on a 5,000-op graph.

For each model of ../shared/models/manifest.json, with `targets=testplugin` and with
`targets=testplugin,reference` (min-ops=1: reference takes everything testplugin does not):
the pass time (median of 5 runs on fresh copies), the regions per target, the ops left on
the host and the bytes of region inputs and outputs. Then the same for a generated
CNN-like graph of 5,000 ops (add, relu and clip, which testplugin takes, mixed with mul and
sigmoid, which it does not, in residual blocks), the size the issue asks to partition in
under 5 s.

usage: python benchmarks/partition.py [--models DIR] [--ops N] [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

import irc
from irc.diagnostics import capture_diagnostics
from irc.dialects import nn
from irc.passes.partition import PartitionReport, partition
from irc.targets import load_plugin

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
TESTPLUGIN = "tests.plugins.testplugin:TestPluginTarget"


def synthetic_graph(num_ops: int, seed: int = 0) -> ModuleOp:
    """A chain of residual blocks with `num_ops` ops besides the return (see the docstring)."""
    rng = random.Random(seed)
    t = TensorType(f32, [1, 16])
    block = Block(arg_types=[t])
    x: SSAValue = block.args[0]
    recent: list[SSAValue] = [x]
    count = 0

    def add(op: nn.NNOp) -> SSAValue:
        block.add_op(op)
        return op.results[0]

    while count < num_ops - 1:
        roll = rng.random()
        if roll < 0.1:
            c = add(nn.ConstantOp.from_array(np.full((1, 16), 0.5, np.float32)))
            x = add(nn.AddOp.make(x, c))
            count += 2
        elif roll < 0.3:
            x = add(nn.AddOp.make(x, rng.choice(recent[-8:])))
            count += 1
        elif roll < 0.45:
            x = add(nn.MulOp.make(x, rng.choice(recent[-4:])))
            count += 1
        elif roll < 0.55:
            x = add(nn.SigmoidOp.make(x))
            count += 1
        elif roll < 0.8:
            x = add(nn.ReluOp.make(x))
            count += 1
        else:
            x = add(nn.ClipOp.make(x, min=-1.0, max=1.0))
            count += 1
        recent.append(x)
    block.add_op(ReturnOp(x))
    return ModuleOp([FuncOp("main", ([t], [t]), Region(block))])


def measure(
    module: ModuleOp, targets: Sequence[str], min_ops: int, repeat: int
) -> tuple[float, PartitionReport]:
    """Median seconds of `repeat` runs on fresh clones, and the report of the last."""
    times = []
    report = None
    for _ in range(repeat):
        copy = module.clone()
        start = time.perf_counter()
        with capture_diagnostics():
            report = partition(copy, targets, min_ops=min_ops)
        times.append(time.perf_counter() - start)
    assert report is not None
    return statistics.median(times), report


def describe(report: PartitionReport) -> str:
    (function,) = report.functions
    parts = []
    for target in function.targets:
        regions = [r for r in function.regions if r.target == target]
        ops = sum(len(r.ops) for r in regions)
        parts.append(f"{target} {len(regions)} regions/{ops} ops")
    crossing = sum(v["bytes"] for r in function.regions for v in (*r.inputs, *r.outputs))
    parts.append(f"host {len(function.host)} ops")
    parts.append(f"{crossing / 1e6:.2f} MB in/out")
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    testplugin = load_plugin(TESTPLUGIN).name
    configurations = [([testplugin], 2), ([testplugin, "reference"], 1)]

    manifest_path = args.models / "manifest.json"
    if manifest_path.is_file():
        print(f"{'model':28} {'ops':>4} {'targets':34} {'ms':>7}  result")
        for entry in json.loads(manifest_path.read_text())["models"]:
            shapes = {spec["name"]: spec["shape"] for spec in entry["inputs"]}
            module = irc.import_model(args.models / entry["file"], input_shapes=shapes)
            count = len(list(module.walk())) - 2  # without the module and the function
            for targets, min_ops in configurations:
                seconds, report = measure(module, targets, min_ops, args.repeat)
                name = ",".join(targets) + f" min-ops={min_ops}"
                print(
                    f"{entry['name']:28} {count:>4} {name:34} {seconds * 1e3:7.1f}  "
                    f"{describe(report)}"
                )
    else:
        print(f"no models at {args.models}")

    module = synthetic_graph(args.ops)
    for targets, min_ops in configurations:
        seconds, report = measure(module, targets, min_ops, max(1, args.repeat // 2))
        name = ",".join(targets) + f" min-ops={min_ops}"
        print(f"{'generated':28} {args.ops:>4} {name:34} {seconds * 1e3:7.1f}  {describe(report)}")


if __name__ == "__main__":
    main()
