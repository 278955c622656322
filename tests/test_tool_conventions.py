"""What every irc tool does the same way: `--version`, the warning (or, with `--strict`, the
error) for a requested target that cannot run, target names as a string, inputs of
hand-written IR named as written, and the layering (core never imports the CLI layer)."""

from __future__ import annotations

import ast
import logging
import re
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

import irc
from irc.targets import TargetError
from irc.tools import irc_compile, irc_opt, irc_run, irc_translate

ROOT = Path(__file__).resolve().parent.parent

ADD = """\
func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  %s = nn.add %x, %y : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %r = nn.relu %s : tensor<2xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
"""

NO_COMPILER = "/nonexistent/irc-test-cc"


@pytest.fixture
def add_ir(tmp_path: Path) -> Path:
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    return path


@pytest.fixture
def inputs() -> dict[str, np.ndarray]:
    return {"x": np.array([1, -5], np.float32), "y": np.array([2, 1], np.float32)}


# ---- --version -----------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [irc_opt, irc_translate, irc_compile, irc_run])
def test_every_tool_prints_the_versions(tool, capsys: pytest.CaptureFixture[str]) -> None:
    assert tool.main(["--version"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (f"irc {version('irc')} (xdsl {version('xdsl')})\n", "")


def test_package_version_comes_from_the_metadata() -> None:
    assert irc.__version__ == version("irc")
    assert re.fullmatch(r"\d+\.\d+.*", irc.__version__)


# ---- A requested target that cannot run -------------------------------------------------------


def test_an_unavailable_target_is_a_logged_warning_and_falls_back(
    add_ir: Path,
    inputs: dict[str, np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("IRC_CC", NO_COMPILER)
    with caplog.at_level(logging.WARNING, logger="irc"):
        model = irc.compile(add_ir, targets="cpu")  # under -W error: no exception
    [record] = caplog.records
    assert record.name == "irc.compiler"
    assert record.getMessage().startswith("target 'cpu' is not available: no working C compiler")
    assert record.getMessage().endswith(f"{NO_COMPILER}' not found; its ops fall back to the host")
    assert "cpu: unavailable" in model.summary
    positional = {"arg0": inputs["x"], "arg1": inputs["y"]}  # the API names them by position
    np.testing.assert_array_equal(model.run(positional)["result0"], [3, 0])


def test_strict_makes_it_an_error(
    add_ir: Path, inputs: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IRC_CC", NO_COMPILER)
    message = "^target 'cpu' is not available: no working C compiler"
    with pytest.raises(TargetError, match=message):
        irc.compile(add_ir, targets=["reference", "cpu"], strict=True)
    with pytest.raises(TargetError, match=message):
        irc.run(add_ir, inputs, targets="cpu", strict=True)


def test_strict_also_refuses_ops_left_on_the_host(add_ir: Path) -> None:
    from irc.diagnostics import IrcDiagnosticError

    with pytest.raises(IrcDiagnosticError, match="strict=true: 2 ops would stay on the host"):
        irc.compile(add_ir, targets="reference", strict=True, deny_ops=["add", "relu"])


def test_the_tools_warn_in_one_line_and_fail_with_strict(
    add_ir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("IRC_CC", NO_COMPILER)
    warning = (
        "warning: target 'cpu' is not available: no working C compiler: "
        f"'{NO_COMPILER}' not found; its ops fall back to the host\n"
    )
    assert irc_run.main([str(add_ir), "--targets", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert err == f"irc-run: {warning}"
    assert out.startswith("result0: shape=(2,)")
    out_file = tmp_path / "out.mlir"
    assert irc_compile.main([str(add_ir), "--targets", "cpu", "-o", str(out_file)]) == 0
    assert capsys.readouterr().err == f"irc-compile: {warning}"
    for tool, name in ((irc_run, "irc-run"), (irc_compile, "irc-compile")):
        assert tool.main([str(add_ir), "--targets", "cpu", "--strict"]) == 1
        out, err = capsys.readouterr()
        assert err == (
            f"{name}: error: target 'cpu' is not available: no working C compiler: "
            f"'{NO_COMPILER}' not found\n"
        )


def test_strict_needs_targets(add_ir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert irc_run.main([str(add_ir), "--strict"]) == 2
    assert "--strict needs --targets" in capsys.readouterr().err


# ---- Targets as a string, inputs named as written ------------------------------------------------


def test_a_target_name_string_is_one_target(add_ir: Path) -> None:
    model = irc.compile(add_ir, targets="reference")
    assert model.targets == ("reference",)
    assert model.summary.startswith("targets: reference\n")


def test_irc_run_names_inputs_after_the_block_arguments(
    add_ir: Path, tmp_path: Path, inputs: dict[str, np.ndarray], capsys
) -> None:
    np.savez(tmp_path / "in.npz", **inputs)
    assert irc_run.main([str(add_ir), "--inputs", str(tmp_path / "in.npz")]) == 0
    assert capsys.readouterr().out.startswith("result0: shape=(2,) dtype=float32 min=0 max=3")
    unnamed = tmp_path / "unnamed.mlir"
    unnamed.write_text(ADD.replace("%x", "%0").replace("%y", "%1"))
    assert irc_run.main([str(unnamed), "--inputs", str(tmp_path / "in.npz")]) == 1
    assert "expected inputs: 'arg0', 'arg1'" in capsys.readouterr().err


# ---- Layering ------------------------------------------------------------------------------------


def _imports(path: Path) -> list[str]:
    """Every module a file imports, at any depth (functions and TYPE_CHECKING included)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def test_core_passes_and_targets_never_import_the_tools() -> None:
    offenders = []
    for folder in ("irc", "passes", "targets", "dialects"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.is_relative_to(ROOT / "irc" / "tools"):
                continue
            if any(name.startswith("irc.tools") for name in _imports(path)):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_each_tool_shares_helpers_through_common_only() -> None:
    for path in (ROOT / "irc" / "tools").glob("irc_*.py"):
        tools = {name for name in _imports(path) if name.startswith("irc.tools.irc_")}
        assert tools == set(), f"{path.name} imports {sorted(tools)}"


def test_library_oserrors_become_one_tool_error_line(
    add_ir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "no such dir" / "g.svg"
    argv = [str(add_ir), "--targets", "reference", "-o", str(tmp_path / "o.mlir")]
    assert irc_compile.main([*argv, "--graph", str(graph)]) == 1
    assert capsys.readouterr().err == (
        f"irc-compile: error: could not write the graph to '{graph}': No such file or directory\n"
    )


def test_python_warnings_print_as_one_tool_line(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse
    import warnings

    from irc.tools.common import run_tool

    def body(args: argparse.Namespace) -> int:
        text = "Built kernel retrieved from cache.\nBuild log: 234 warnings"
        warnings.warn(text, UserWarning, stacklevel=1)
        logging.getLogger("irc.somewhere").warning("a library warning")
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("always")  # the suite's -W error would raise it instead
        assert run_tool("irc-x", argparse.ArgumentParser(), body, []) == 0
    assert capsys.readouterr().err == (
        "irc-x: warning: UserWarning: Built kernel retrieved from cache. (+1 lines)\n"
        "irc-x: warning: a library warning\n"
    )


def test_every_tool_output_is_an_ordinary_file(
    add_ir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One mode policy (irc.fileio): 0666 less the umask, whichever tool writes."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        assert irc_opt.main([str(add_ir), "-o", str(tmp_path / "opt.mlir")]) == 0
        assert irc_run.main([str(add_ir), "--outputs", str(tmp_path / "out.npz")]) == 0
        argv = [str(add_ir), "--targets", "reference", "-o", str(tmp_path / "c.mlir")]
        assert irc_compile.main(argv) == 0
    finally:
        os.umask(old)
    capsys.readouterr()
    for name in ("opt.mlir", "out.npz", "c.mlir"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name
