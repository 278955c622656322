"""Tests of the irc-opt driver, run in-process (plus one run of the installed script)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from irc.diagnostics import emit_error, emit_remark, emit_warning
from irc.tools.irc_opt import IrcOptMain, main

# ---- Test-only passes, registered in a subclass (never in the product registry) ----


@dataclass(frozen=True)
class EmitOnReturnsPass(ModulePass):
    """Emits one diagnostic per `func.return`."""

    name = "test-emit"

    severity: str = "warning"
    """warning, remark or error (error fails the pass at the first return)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ret in [o for o in op.walk() if isinstance(o, func.ReturnOp)]:
            if self.severity == "warning":
                emit_warning(ret, f"returning {len(ret.arguments)} values")
            elif self.severity == "remark":
                emit_remark(ret, "seen a return")
            else:
                emit_error(ret, "returns are not allowed")


@dataclass(frozen=True)
class FailPass(ModulePass):
    """Fails without saying where."""

    name = "test-fail"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise PassFailedException("nothing works")


@dataclass(frozen=True)
class BreakIRPass(ModulePass):
    """Erases every `func.return`, leaving empty function bodies."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ret in [o for o in op.walk() if isinstance(o, func.ReturnOp)]:
            ret.detach()
            ret.erase()


@dataclass(frozen=True)
class CrashPass(ModulePass):
    """A buggy pass: raises an exception that is not a diagnostic."""

    name = "test-crash"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise TypeError("unsupported operand")


_TEST_PASSES: tuple[type[ModulePass], ...] = (EmitOnReturnsPass, FailPass, BreakIRPass, CrashPass)


class _TestOptMain(IrcOptMain):
    def register_all_passes(self) -> None:
        super().register_all_passes()
        for pass_class in _TEST_PASSES:
            self.register_pass(pass_class.name, lambda pass_class=pass_class: pass_class)


@dataclass
class Result:
    status: int
    out: str
    err: str


Opt = Callable[..., Result]


@pytest.fixture
def opt(capsys: pytest.CaptureFixture[str]) -> Opt:
    """Run the driver in-process: `opt(args...) -> Result`."""

    def run(*args: str | Path) -> Result:
        status = _TestOptMain.main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return run


def _write(tmp_path: Path, text: str, name: str = "in.mlir") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = """\
func.func @f(%a: i32) -> i32 {
  %s = arith.addi %a, %a : i32
  func.return %s : i32
}
"""

BAD_RETURN = """\
func.func @f(%a: i32) -> i64 {
  func.return %a : i32
}
"""

BAD_RETURN_MESSAGE = (
    "Expected arguments to have the same types as the function output types: "
    "expected [i64], got [i32]"
)


# ---- Success paths -----------------------------------------------------------


def test_roundtrip(opt: Opt, tmp_path: Path) -> None:
    first = opt(_write(tmp_path, GOOD))
    assert first.status == 0
    assert first.err == ""
    assert "arith.addi %a, %a : i32" in first.out
    second = opt(_write(tmp_path, first.out, "again.mlir"))
    assert second.status == 0
    assert second.out == first.out


def test_generic_output_reparses(opt: Opt, tmp_path: Path) -> None:
    generic = opt(_write(tmp_path, GOOD), "--print-op-generic")
    assert '"arith.addi"' in generic.out
    custom = opt(_write(tmp_path, generic.out, "generic.mlir"))
    assert custom.status == 0
    assert custom.out == opt(tmp_path / "in.mlir").out


def test_split_input_file_and_debuginfo_use_file_absolute_lines(
    opt: Opt,
    tmp_path: Path,
) -> None:
    text = GOOD + "\n// -----\n\nfunc.func @g() {\n  func.return\n}\n"
    result = opt(_write(tmp_path, text), "--split-input-file", "--print-debuginfo")
    assert result.status == 0
    first, second = result.out.split("// -----\n")
    assert f'func.return %s : i32 loc("{tmp_path / "in.mlir"}":3:3)' in first
    assert f'func.return loc("{tmp_path / "in.mlir"}":9:3)' in second


def test_output_file(opt: Opt, tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    result = opt(_write(tmp_path, GOOD), "-o", out)
    assert result.status == 0
    assert result.out == ""
    assert "func.func @f" in out.read_text()
    assert {p.name for p in tmp_path.iterdir()} == {"in.mlir", "out.mlir"}


def test_stdin_is_named_stdin(
    opt: Opt,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BAD_RETURN.encode())))
    result = opt("-")
    assert result.status == 1
    assert result.err.startswith(f"<stdin>:2:3: error: {BAD_RETURN_MESSAGE}\n")


def test_version(opt: Opt) -> None:
    result = opt("--version")
    assert result.status == 0
    assert re.fullmatch(r"irc \S+ \(xdsl 0\.74\.\d+\)\n", result.out)


# ---- Errors: one located message, exit 1, no traceback, no output -----------


def test_verifier_error_is_located_at_the_failing_op(opt: Opt, tmp_path: Path) -> None:
    path = _write(tmp_path, BAD_RETURN)
    result = opt(path)
    assert result.status == 1
    assert result.out == ""
    assert result.err == f"{path}:2:3: error: {BAD_RETURN_MESSAGE}\n  func.return %a : i32\n  ^\n"


def test_parse_error_in_a_later_chunk(opt: Opt, tmp_path: Path) -> None:
    text = GOOD + "// -----\nfunc.func @g(%a: i32) {\n  %s = arith.addi %a : i32\n}\n"
    path = _write(tmp_path, text)
    result = opt(path, "--split-input-file")
    assert result.status == 1
    # mlir-opt's behaviour: the good chunk is printed, the failing one is reported.
    first, second = result.out.split("// -----\n")
    assert "func.func @f" in first
    assert second == ""
    assert result.err.splitlines() == [
        f"{path}:7:22: error: Expected ','",
        "  %s = arith.addi %a : i32",
        "                     ^",
    ]
    assert "Traceback" not in result.err


def test_output_file_is_not_written_on_error(opt: Opt, tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    out.write_text("previous contents\n")
    result = opt(
        _write(tmp_path, GOOD + "// -----\n" + BAD_RETURN), "--split-input-file", "-o", out
    )
    assert result.status == 1
    assert out.read_text() == "previous contents\n"
    assert {p.name for p in tmp_path.iterdir()} == {"in.mlir", "out.mlir"}  # no temp file left


def test_missing_input_file(opt: Opt, tmp_path: Path) -> None:
    result = opt(tmp_path / "nope.mlir")
    assert result.status == 1
    assert result.err == (
        f"irc-opt: error: could not open input file '{tmp_path / 'nope.mlir'}': "
        "No such file or directory\n"
    )


def test_unknown_pass(opt: Opt, tmp_path: Path) -> None:
    result = opt(_write(tmp_path, GOOD), "-p", "test-emit,nosuchpass")
    assert result.status == 1
    assert result.err.startswith("irc-opt: error: unknown pass 'nosuchpass'; available passes: ")
    assert "test-emit" in result.err


def test_bad_pass_option(opt: Opt, tmp_path: Path) -> None:
    result = opt(_write(tmp_path, GOOD), "-p", "test-emit{bogus=1}")
    assert result.status == 1
    assert result.err == (
        "irc-opt: error: test-emit: unknown option 'bogus'; its options: severity\n"
    )


def test_bad_pipeline_syntax(opt: Opt, tmp_path: Path) -> None:
    result = opt(_write(tmp_path, GOOD), "-p", "test-emit{")
    assert result.status == 1
    assert result.err == "irc-opt: error: bad pipeline 'test-emit{': Expected argument name here\n"


def test_usage_error_exits_with_2(opt: Opt) -> None:
    result = opt("--no-such-flag")
    assert result.status == 2
    assert "unrecognized arguments: --no-such-flag" in result.err


@pytest.mark.parametrize(
    ("pipeline", "first_line"),
    [
        pytest.param(
            "test-emit{severity=error}",
            "3:3: error: returns are not allowed",
            id="pass_error_is_located_at_the_op",
        ),
        pytest.param(
            "test-fail",
            "1:1: error: pass 'test-fail' failed: nothing works",
            id="unlocated_pass_failure_names_the_pass",
        ),
        pytest.param(
            "test-crash",
            "1:1: error: internal compiler error in pass 'test-crash': TypeError: "
            "unsupported operand (set IRC_DEBUG=1 for a traceback)",
            id="crashing_pass_is_an_internal_error_without_traceback",
        ),
        pytest.param(
            "test-break-ir",
            "2:3: error: Operation arith.addi terminates block in single-block region "
            "but is not a terminator",
            id="ir_broken_by_a_pass_is_reported_at_the_broken_op",
        ),
    ],
)
def test_pass_failure_is_one_located_error(
    opt: Opt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipeline: str, first_line: str
) -> None:
    monkeypatch.delenv("IRC_DEBUG", raising=False)
    path = _write(tmp_path, GOOD)
    result = opt(path, "-p", pipeline)
    assert result.status == 1
    assert result.out == ""
    assert "Traceback" not in result.err
    assert result.err.splitlines()[0] == f"{path}:{first_line}"


def test_warnings_are_printed_and_do_not_fail(opt: Opt, tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    result = opt(path, "-p", "test-emit")
    assert result.status == 0
    assert "func.func @f" in result.out
    assert result.err.splitlines() == [
        f"{path}:3:3: warning: returning 1 values",
        "  func.return %s : i32",
        "  ^",
    ]


# ---- Pass instrumentation flags ----------------------------------------------


def test_print_ir_after_all(opt: Opt, tmp_path: Path) -> None:
    result = opt(
        _write(tmp_path, GOOD), "-p", "test-emit{severity=remark},test-emit", "--print-ir-after-all"
    )
    assert result.status == 0
    headers = [line for line in result.err.splitlines() if line.startswith("// -----//")]
    assert headers == [
        "// -----// IR Dump After test-emit //----- //",
        "// -----// IR Dump After test-emit //----- //",
    ]
    after_first = result.err.split(headers[0])[1]
    assert "builtin.module {" in after_first
    assert "func.func @f" in after_first


def test_print_between_passes_is_kept(opt: Opt, tmp_path: Path) -> None:
    result = opt(_write(tmp_path, GOOD), "-p", "test-emit,test-emit", "--print-between-passes")
    assert result.status == 0
    assert result.out.startswith("IR after test-emit:\n")


# ---- --verify-diagnostics ----------------------------------------------------

ANNOTATED = """\
func.func @f(%a: i32) -> i32 {
  // expected-warning @+2 {{returning 1 values}}
  // expected-remark @+1 {{seen a return}}
  func.return %a : i32
}

// -----

func.func @g(%a: i32) -> i64 {
  func.return %a : i32
  // expected-error @above {{expected [i64], got [i32]}}
}
"""


def test_verify_diagnostics_matches_pass_diagnostics(opt: Opt, tmp_path: Path) -> None:
    result = opt(
        _write(tmp_path, ANNOTATED),
        "--split-input-file",
        "--verify-diagnostics",
        "-p",
        "test-emit,test-emit{severity=remark}",
    )
    assert result.err == ""
    assert result.status == 0
    # The IR of the chunk without errors is printed; the failed chunk prints nothing.
    first, second = result.out.split("// -----\n")
    assert "func.func @f" in first
    assert second == ""


def test_verify_diagnostics_reports_an_unexpected_warning(opt: Opt, tmp_path: Path) -> None:
    path = _write(tmp_path, ANNOTATED)
    result = opt(path, "--split-input-file", "--verify-diagnostics", "-p", "test-emit")
    assert result.status == 1
    assert "func.func @f" in result.out  # printed as without --verify-diagnostics
    assert result.err.splitlines() == [
        f'{path}:3:6: error: expected remark "seen a return" was not produced',
        "  // expected-remark @+1 {{seen a return}}",
        "     ^",
    ]


def test_verify_diagnostics_with_a_pass_error(opt: Opt, tmp_path: Path) -> None:
    text = (
        "func.func @f() {\n  // expected-error @+1 {{returns are not allowed}}\n  func.return\n}\n"
    )
    result = opt(_write(tmp_path, text), "--verify-diagnostics", "-p", "test-emit{severity=error}")
    assert (result.status, result.out, result.err) == (0, "", "")


# ---- The installed script ----------------------------------------------------


def test_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "irc-opt"
    if not script.exists():
        pytest.skip("irc-opt is not installed next to this Python")
    path = _write(tmp_path, BAD_RETURN)
    failed = subprocess.run([script, path], capture_output=True, text=True, check=False)
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.startswith(f"{path}:2:3: error: ")
    assert "Traceback" not in failed.stderr
    ok = subprocess.run(
        [script, "--split-input-file"], input=GOOD, capture_output=True, text=True, check=False
    )
    assert (ok.returncode, ok.stderr) == (0, "")
    assert "func.func @f" in ok.stdout


def test_main_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("irc ")
