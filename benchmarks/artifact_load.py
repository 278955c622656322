#!/usr/bin/env python3
"""Artifact size and load time: weights in a binary file next to the text vs all-text artifacts.

For each model and target list, compiles the model, saves it the current way
(`CompiledModel.save`: `X.irc.mlir` + `X.irc.weights`) and as one self-contained text (the
format-1 layout, weights as `dense<"0x...">`), then times, in this one process:

* `irc.load` of the current artifact (wall and CPU time);
* `irc.load` of the all-text artifact with the parser as it is now;
* `irc.load` of the all-text artifact with the parser as it was before the artifact work (the
  lexer's per-character string regex and xDSL's per-literal type constraint put back): the
  "before" column;
* `irc-run ARTIFACT --benchmark --runs 1` in a fresh process, its `init:` line (import, parse,
  prepare), for both layouts.

Sizes are compared with the bytes of the module's dense constants (the weights as the targets
packed them); the goal is a load under 0.3 s for MobileNetV2 and files within 1.1x those bytes.
The machine is shared and noisy: load times are the best of `--repeat`, and only the ratios
measured side by side mean much.

usage: python benchmarks/artifact_load.py [--models a,b] [--targets cpu opencl] [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import irc
from irc.artifact import iter_dense, weights_path
from irc.diagnostics import LocatingParser

MODELS = Path(__file__).resolve().parents[1].parent / "shared" / "models"
LOAD_GOAL_S = 0.3
SIZE_GOAL = 1.1


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """Smallest wall time of `repeat` calls."""
    return best_wall_and_cpu(repeat, fn)[0]


def best_wall_and_cpu(repeat: int, fn: Callable[[], object]) -> tuple[float, float]:
    """Smallest wall time and smallest CPU time (this process, all threads) of `repeat`
    calls: on a machine shared with other jobs the CPU time is what an idle one would show."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


@contextlib.contextmanager
def parser_before() -> Iterator[None]:
    """The parser as it was before: xDSL's type check of every dense literal (the constraint
    built each time) and a string regex with one alternation per character."""
    from xdsl.parser.attribute_parser import AttrParser
    from xdsl.utils.mlir_lexer import MLIRLexer

    regex = MLIRLexer._unescaped_characters_regex
    had_override = "_parse_dense_literal_type" in vars(LocatingParser)
    MLIRLexer._unescaped_characters_regex = re.compile(  # type: ignore[misc]
        r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
    )
    if had_override:
        override = vars(LocatingParser)["_parse_dense_literal_type"]
        LocatingParser._parse_dense_literal_type = AttrParser._parse_dense_literal_type  # type: ignore[method-assign]
    try:
        yield
    finally:
        MLIRLexer._unescaped_characters_regex = regex  # type: ignore[misc]
        if had_override:
            LocatingParser._parse_dense_literal_type = override  # type: ignore[method-assign]


def run_init_ms(path: Path) -> float:
    """`irc-run PATH --benchmark --runs 1`'s `init:` in a fresh process (ms)."""
    tool = Path(sys.executable).parent / "irc-run"
    result = subprocess.run(
        [str(tool), str(path), "--benchmark", "--warmup", "0", "--runs", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    match = re.search(r"init: ([0-9.]+) ms", result.stdout)
    if match is None:
        raise RuntimeError(f"no init line from irc-run: {result.stdout}{result.stderr}")
    return float(match.group(1))


def measure(model: Path, targets: list[str], repeat: int, folder: Path) -> dict[str, float]:
    compiled = irc.compile(model, targets)
    dense = sum(len(attr.data.data) for attr in iter_dense(compiled.module))
    new = folder / f"{model.stem}_{'_'.join(targets)}.irc.mlir"
    old = folder / f"{model.stem}_{'_'.join(targets)}.text.irc.mlir"
    save_s = best_of(1, lambda: compiled.save(new))
    old.write_text(compiled.to_text())
    irc.load(new)  # the targets' on-disk caches are warm for every timing below
    load_new_s, load_new_cpu_s = best_wall_and_cpu(repeat, lambda: irc.load(new))
    row = {
        "load_new_s": load_new_s,
        "load_new_cpu_s": load_new_cpu_s,
        "dense_mb": dense / 1e6,
        "new_mb": (new.stat().st_size + Path(weights_path(new)).stat().st_size) / 1e6,
        "new_text_kb": new.stat().st_size / 1e3,
        "old_mb": old.stat().st_size / 1e6,
        "save_s": save_s,
        "load_old_s": best_of(repeat, lambda: irc.load(old)),
    }
    with parser_before():
        row["load_before_s"] = best_of(max(1, repeat // 2), lambda: irc.load(old))
    row["init_new_ms"] = run_init_ms(new)
    row["init_old_ms"] = run_init_ms(old)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mobilenet_v2_float32,mobilenet_v2_int8")
    parser.add_argument("--targets", nargs="+", default=["cpu", "opencl"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    print(
        f"{'model':22} {'targets':8} {'dense MB':>8} {'saved MB':>8} {'ratio':>6} "
        f"{'text MB':>8} {'load s':>7} {'cpu s':>6} {'text s':>7} {'before s':>8} {'speedup':>7} "
        f"{'init ms':>8} {'text init':>9}"
    )
    worst_load, worst_cpu, worst_ratio = 0.0, 0.0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model = MODELS / name / f"{name}.tflite"
            if not model.exists():
                print(f"{name}: not found under {MODELS}, skipped")
                continue
            for targets in args.targets:
                names = targets.split(",")
                row = measure(model, names, args.repeat, Path(tmp))
                ratio = row["new_mb"] / row["dense_mb"]
                worst_load = max(worst_load, row["load_new_s"])
                worst_cpu = max(worst_cpu, row["load_new_cpu_s"])
                worst_ratio = max(worst_ratio, ratio)
                print(
                    f"{name:22} {targets:8} {row['dense_mb']:8.2f} {row['new_mb']:8.2f} "
                    f"{ratio:6.3f} {row['old_mb']:8.2f} {row['load_new_s']:7.3f} "
                    f"{row['load_new_cpu_s']:6.3f} "
                    f"{row['load_old_s']:7.3f} {row['load_before_s']:8.3f} "
                    f"{row['load_before_s'] / row['load_new_s']:6.1f}x "
                    f"{row['init_new_ms']:8.0f} {row['init_old_ms']:9.0f}"
                )
    print(
        f"load: slowest {worst_load:.3f} s wall, {worst_cpu:.3f} s CPU "
        f"({'within' if worst_cpu <= LOAD_GOAL_S else 'OVER'} the {LOAD_GOAL_S} s goal on an "
        f"idle machine); size: at most {worst_ratio:.3f}x the dense bytes "
        f"({'within' if worst_ratio <= SIZE_GOAL else 'OVER'} the {SIZE_GOAL}x goal)"
    )
    print(f"(CPU: {_cpu()}; shared machine, best of {args.repeat})")


def _cpu() -> str:
    with contextlib.suppress(OSError):
        info = Path("/proc/cpuinfo").read_text()
        isa = "AVX-512" if " avx512f" in info else "AVX2"
        for line in info.splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {isa}, {os.cpu_count()} cores"
    return "unknown"


if __name__ == "__main__":
    main()
