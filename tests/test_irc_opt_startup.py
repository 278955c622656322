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
