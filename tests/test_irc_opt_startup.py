"""`irc-opt` imports the targets only when it needs one of their passes.

Discovering the targets imports numpy and every reference kernel (most of a second per
process; filecheck/tools/irc-opt/invocation-errors.mlir starts ten processes). A pipeline
of irc's own passes that use no kernel (dce; canonicalize folds with the reference's),
`--version` and command-line errors need none of that; a target's pass, an unknown name
(whose message lists every pass) and `IRC_PLUGINS` still discover them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import contextlib, io, sys
from irc.tools.irc_opt import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        status = main(sys.argv[1:])
    except SystemExit as exc:
        status = exc.code
print(status, "irc.targets.reference.registry" in sys.modules, repr(err.getvalue()))
"""


def _probe(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, bool, str]:
    source = tmp_path / "f.mlir"
    source.write_text("func.func @f() {\n  func.return\n}\n")
    environment = {k: v for k, v in os.environ.items() if k != "IRC_PLUGINS"}
    environment.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(source), *args],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    status, imported, err = proc.stdout.strip().split(" ", 2)
    return int(status), imported == "True", err


@pytest.mark.parametrize(
    "args",
    [
        ("-p", "dce"),
        ("-p", "dce{aggressive=true}"),
        ("--version",),
        ("--no-such-flag",),
    ],
)
def test_irc_own_passes_and_usage_errors_import_no_target(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    _, imported, _ = _probe(tmp_path, *args)
    assert not imported


def test_a_target_pass_is_found(tmp_path: Path) -> None:
    status, imported, err = _probe(tmp_path, "-p", "lower-cpu")
    assert (status, imported) == (0, True), err


def test_an_unknown_pass_lists_the_targets_passes_too(tmp_path: Path) -> None:
    status, _, err = _probe(tmp_path, "-p", "nosuchpass")
    assert status == 1
    assert "unknown pass 'nosuchpass'" in err
    assert "lower-cpu" in err
    assert "canonicalize" in err


def test_a_bad_plugin_spec_is_reported_whatever_the_pipeline(tmp_path: Path) -> None:
    status, _, err = _probe(tmp_path, "-p", "dce", env={"IRC_PLUGINS": "no_such_module_58:X"})
    assert status == 1
    assert "cannot load plugin 'no_such_module_58:X'" in err


IMPORTS_PROBE = """
import contextlib, importlib, io, sys
tool, modules, *args = sys.argv[1:]
main = importlib.import_module("irc.tools." + tool).main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
    try:
        status = main(args)
    except SystemExit as exc:
        status = exc.code
print(status, [m for m in modules.split(",") if m in sys.modules], repr(err.getvalue()))
"""

QUANT_IR = """
!q = !quant.uniform<i8:f32, 0.05:-4>
func.func @f(%acc: tensor<2xi32>) -> tensor<2x!q> {
  %w = nn.constant dense<1> : tensor<2x4xi8> -> tensor<2x4x!quant.uniform<i8:f32:0, {0.5, 0.25}>>
  %y = quant.rescale %acc multiplier = [1073741824, 5] shift = [1, -7] axis = 0
      : tensor<2xi32> to tensor<2x!q>
  func.return %y : tensor<2x!q>
}
"""


def _imports(tmp_path: Path, tool: str, modules: str, *args: str) -> tuple[int, list[str], str]:
    proc = subprocess.run(
        [sys.executable, "-c", IMPORTS_PROBE, tool, modules, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    status, rest = proc.stdout.strip().split(" ", 1)
    imported, err = rest.split("] ", 1)
    return int(status), [m.strip(" '") for m in imported.strip("[").split(",") if m], err


@pytest.mark.parametrize("generic", [(), ("--print-op-generic",)])
def test_ir_is_parsed_and_printed_without_numpy(tmp_path: Path, generic: tuple[str, ...]) -> None:
    """A round trip of `nn` and `quant` IR (per-axis scales, a rescale's i32 arrays) needs no
    numpy: most of lit's ~190 tool starts are such round trips and verifier runs."""
    source = tmp_path / "q.mlir"
    source.write_text(QUANT_IR)
    status, imported, err = _imports(tmp_path, "irc_opt", "numpy", str(source), *generic)
    assert (status, imported) == (0, []), err


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("irc_compile", ("--targets", "reference", "-o", "out.mlir")),
        ("irc_translate", ("--emit-opencl", "--targets", "reference")),
    ],
)
def test_ir_files_are_compiled_without_the_importers(
    tmp_path: Path, tool: str, args: tuple[str, ...]
) -> None:
    """The tools catch the importers' errors (`irc.importers.errors`) without importing an
    importer: an IR file needs neither `onnx` nor `tflite`."""
    source = tmp_path / "f.mlir"
    source.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %y = nn.relu %x : tensor<2xf32> -> tensor<2xf32>\n"
        "  func.return %y : tensor<2xf32>\n}\n"
    )
    modules = "onnx,tflite,irc.importers.onnx"
    _, imported, err = _imports(tmp_path, tool, modules, str(source), *args)
    assert imported == [], err
