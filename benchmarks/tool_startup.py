"""CPU seconds of one tool start, for the kinds of invocation `lit -sv filecheck` makes.

lit starts the tools ~190 times (irc-opt round trips and verifier runs, passes, irc-run,
irc-translate, irc-compile), so what one start costs (imports, mostly) is most of lit's
time. Each command runs `--repeat` times; the children's CPU time (user + system,
`RUSAGE_CHILDREN`) is taken per run and the median reported. With `--baseline ROOT`
(a checkout of another commit, `git archive HEAD irc dialects passes targets | tar -x -C
ROOT` plus the symlinks `irc/dialects -> ../dialects`, `irc/passes`, `irc/targets`), the
same commands run from ROOT too, interleaved run by run, and the ratio is printed: on a
shared machine only such side-by-side figures mean anything. Compare two roots made alike
(`--root`): a start from a root on PYTHONPATH costs ~10 % more than from the editable install.

    python benchmarks/tool_startup.py [--repeat 5] [--baseline /tmp/base --root /tmp/new]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILECHECK = ROOT / "filecheck"

COMMANDS: dict[str, str] = {
    "version": "irc-opt --version",
    "roundtrip nn": "irc-opt dialects/nn/ops.mlir --split-input-file",
    "generic quant": "irc-opt dialects/quant/ops.mlir --split-input-file --print-op-generic",
    "verify nn": "irc-opt dialects/nn/invalid.mlir --split-input-file --verify-diagnostics",
    "canonicalize": "irc-opt passes/canonicalize.mlir --split-input-file -p canonicalize",
    "convert-layout": "irc-opt passes/convert-layout.mlir --split-input-file"
    " -p convert-layout{to=NCHW},canonicalize",
    "lower-cpu": "irc-opt targets/cpu/lower-cpu.mlir --split-input-file --verify-diagnostics"
    " -p lower-cpu",
    "lower-opencl": "irc-opt targets/opencl/lower-opencl.mlir --split-input-file"
    " --verify-diagnostics -p lower-opencl",
    "emit-c": "irc-translate --emit-c targets/cpu/emit-c.mlir",
    "irc-run": "irc-run tools/irc-run/run.mlir",
    "irc-compile": "irc-compile tools/irc-compile/shape-buckets.mlir --targets reference"
    " --shape-buckets x=1,4 -o {tmp}/out.mlir",
}
"""Name -> command line (paths relative to filecheck/), one of each kind lit runs."""


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(command: str, root: Path | None, tmp: str) -> float:
    """One start: `python -c 'main()'` of the tool's module from `root` (None: this checkout)."""
    tool, *args = command.split()
    module = "irc.tools." + tool.replace("-", "_")
    code = f"import sys; from {module} import main; sys.exit(main())"
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)  # before the editable install's finder
    args = [a.replace("{tmp}", tmp) for a in args]
    before = _child_cpu()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=FILECHECK,  # not the checkout: `python -c` puts the cwd first on sys.path
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"{command} exited with {proc.returncode} (root {root or ROOT})")
    return _child_cpu() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout's root (see above)")
    parser.add_argument(
        "--root",
        type=Path,
        help="measure this root (made the same way) instead of the installed checkout: "
        "a root on PYTHONPATH costs more per start than the editable install, so compare "
        "two roots with each other",
    )
    args = parser.parse_args()
    header = f"{'command':16} {'cpu s':>7}"
    print(header + (f" {'base s':>7} {'ratio':>6}" if args.baseline else ""))
    totals = [0.0, 0.0]
    with tempfile.TemporaryDirectory() as tmp:
        for name, command in COMMANDS.items():
            new: list[float] = []
            old: list[float] = []
            for _ in range(args.repeat):
                new.append(_run(command, args.root, tmp))
                if args.baseline:
                    old.append(_run(command, args.baseline, tmp))
            totals[0] += statistics.median(new)
            line = f"{name:16} {statistics.median(new):7.3f}"
            if args.baseline:
                totals[1] += statistics.median(old)
                ratio = statistics.median(new) / statistics.median(old)
                line += f" {statistics.median(old):7.3f} {ratio:6.2f}"
            print(line, flush=True)
    line = f"{'sum':16} {totals[0]:7.3f}"
    if args.baseline:
        line += f" {totals[1]:7.3f} {totals[0] / totals[1]:6.2f}"
    print(line)


if __name__ == "__main__":
    main()
