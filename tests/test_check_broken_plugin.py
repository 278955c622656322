"""`irc-run --check` as a layer-by-layer debugger, through the installed command: a plugin
target with a wrong relu kernel is caught at the dispatch that holds the relu, and only there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# Two regions of the plugin (its min-ops is the default 2) around two host ops it refuses:
# [add, add] -> exp, neg (host) -> [relu, add]. relu(-exp(...)) is 0, so the true result is %b;
# the broken relu lets -exp(...) through.
MODEL = """\
func.func @main(%x: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = nn.add %x, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %t = nn.add %s, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %e = nn.exp %t : tensor<2x3xf32> -> tensor<2x3xf32>
  %n = nn.neg %e : tensor<2x3xf32> -> tensor<2x3xf32>
  %r = nn.relu %n : tensor<2x3xf32> -> tensor<2x3xf32>
  %y = nn.add %r, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""
PLUGIN = "tests.plugins.brokenplugin:BrokenReluTarget"


def irc_run(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("irc-run", path=os.path.dirname(sys.executable))
    assert tool is not None, "irc-run is not installed next to this Python"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [tool, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


def test_check_points_at_the_broken_dispatch(tmp_path: Path) -> None:
    model = tmp_path / "model.mlir"
    model.write_text(MODEL)
    done = irc_run(str(model), "--plugin", PLUGIN, "--targets", "brokenrelu", "--check")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    rows = {}
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"(@\S+) \[(\w+)\]: max abs (\S+), max rel (\S+)", line)
        if match:
            rows[match[1]] = (match[2], float(match[3]), float(match[4]))
    broken = {label for label, (target, abs_, _) in rows.items() if abs_ > 0}
    assert len(rows) == 2, done.stdout  # [add, add] and [relu, add]
    # exp(x + b) > 0, so the true relu(-exp(...)) is 0 everywhere and the broken one is not
    assert len(broken) == 1, done.stdout
    (label,) = broken
    target, max_abs, max_rel = rows[label]
    assert target == "brokenrelu"
    assert max_abs > 0.1
    assert max_rel > 1
    assert all(rows[other][1] == 0 for other in rows if other != label)
    assert re.search(rf"largest abs \S+ \({re.escape(label)}\)", done.stdout), done.stdout


def test_without_check_the_wrong_result_goes_through(tmp_path: Path) -> None:
    """The plugin really is wrong: its output differs from the reference target's."""
    model = tmp_path / "model.mlir"
    model.write_text(MODEL)
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "inputs.npz",
        x=rng.standard_normal((2, 3)).astype(np.float32),  # irc-run: named as written
        b=rng.standard_normal((2, 3)).astype(np.float32),
    )
    outputs = {}
    for targets in ("brokenrelu", "reference"):
        out = tmp_path / f"{targets}.npz"
        done = irc_run(
            str(model),
            "--plugin",
            PLUGIN,
            "--targets",
            targets,
            "--inputs",
            str(tmp_path / "inputs.npz"),
            "--outputs",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        with np.load(out) as saved:
            outputs[targets] = saved[saved.files[0]]
    with np.load(tmp_path / "inputs.npz") as inputs:
        bias = inputs["b"]
    assert np.array_equal(outputs["reference"], bias)
    assert (outputs["brokenrelu"] < bias).all()
