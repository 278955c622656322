#!/usr/bin/env python3
"""The CPU target's float kernels of the working tree beside those of a git revision, in ONE
process, on whole models: does a kernel change that wins on the kernel alone
(`cpu_conv_kernels.py`, hot weights) also win inside a model (cold weights, activations
from L2/L3)?

For each model and ISA profile (`--isa`), the model is compiled twice: with the working
tree's kernel sources, and with `--rev`'s versions of the files named by `--files` (paths
under targets/cpu/kernels; the snippet of a `common/<name>.c` file, its pasted includes the
working tree's, or a file's text in whichever snippets hold it: a header in the prelude or in
"qfused", common/qconv.c in "qconv_tile") swapped into the library source; every other file
is the working tree's. Both
libraries are built and loaded in the same process and run in interleaved rounds; prints the
median CPU time per run (1 thread, `time.process_time`: on a shared machine the CPU a run
consumes is steadier than its wall time) and new/old per profile, and AVX2 / the best
profile for each side.

usage: python benchmarks/cpu_kernel_ab.py [--rev HEAD] [--isa avx512vnni avx2]
                                          [--files common/conv2d.c ...] [--rounds 30] [MODEL ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cpu_isa_compare import irc_runner
from side_by_side import DEFAULT_MODELS

DEFAULT_FILES = (
    "common/conv2d.c",
    "common/depthwise.c",
    "common/vector.h",
    "x86_64_avx2/vector.h",
    "x86_64_avx512/vector.h",
    "generic/vector.h",
)


def old_text(rev: str, path: str) -> str:
    """targets/cpu/kernels/`path` at git revision `rev`."""
    return subprocess.run(
        ["git", "show", f"{rev}:targets/cpu/kernels/{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def swap_in(rev: str, files: tuple[str, ...]) -> Callable[[], None]:
    """Put `rev`'s versions of `files` into csrc's snippets; returns the undo."""
    from irc.targets.cpu import csrc

    saved = dict(csrc._SNIPPETS)
    for path in files:
        name = Path(path).stem
        if path.startswith("common/") and path.endswith(".c") and name in csrc._SNIPPETS:
            deps, _ = csrc._SNIPPETS[name]
            text = csrc._pasted(old_text(rev, path))  # its #include "<dir>/<file>.h" lines
            csrc._SNIPPETS[name] = (deps, text.strip("\n") + "\n")
            continue
        current = csrc.kernel_file(path).rstrip("\n")
        holders = [k for k, (_, text) in csrc._SNIPPETS.items() if current in text]
        if not holders:
            raise SystemExit(f"{path}: not part of any snippet")
        for key in holders:  # a header: the prelude ("common"), or e.g. "qfused"
            deps, text = csrc._SNIPPETS[key]
            csrc._SNIPPETS[key] = (deps, text.replace(current, old_text(rev, path).rstrip("\n")))

    def undo() -> None:
        csrc._SNIPPETS.clear()
        csrc._SNIPPETS.update(saved)

    return undo


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["mobilenet_v2_float32"])
    parser.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--isa", nargs="+", default=["avx512vnni", "avx2"])
    parser.add_argument("--files", nargs="+", default=list(DEFAULT_FILES))
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = "1"  # before libgomp loads

    from irc.targets.cpu import isa

    profiles = [n for n in args.isa if not isa.missing(isa.PROFILES[n])]
    manifest = json.loads((args.models_dir / "manifest.json").read_text())
    files = {entry["name"]: entry["file"] for entry in manifest["models"]}
    print(f"new: working tree; old: {args.rev} of {', '.join(args.files)}; 1 thread, CPU time")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name in args.models:
        path = args.models_dir / files[name]
        runs: dict[str, Callable[[], object]] = {}
        for p in profiles:
            runs[f"new {p}"] = irc_runner(path, p)(1)
            undo = swap_in(args.rev, tuple(args.files))
            try:
                runs[f"old {p}"] = irc_runner(path, p)(1)
            finally:
                undo()
        for run in runs.values():
            for _ in range(3):
                run()
        cpu: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(args.rounds):
            for label, run in runs.items():
                start = time.process_time()
                run()
                cpu[label].append(time.process_time() - start)
        ms = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
        print(f"\n{name} (load average after: {os.getloadavg()[0]:.2f})")
        for label, value in ms.items():
            print(f"  {label:18} cpu {value:8.2f} ms")
        for p in profiles:
            print(f"  {p}: new/old {ms[f'new {p}'] / ms[f'old {p}']:.3f}")
        for p in profiles[1:]:
            best = profiles[0]
            new = ms[f"new {p}"] / ms[f"new {best}"]
            old = ms[f"old {p}"] / ms[f"old {best}"]
            print(f"  {p}/{best}: new {new:.2f}, old {old:.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
