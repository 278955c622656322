"""`irc.timing`: the MLIR-style timing report, progress on terminals only, and the tools'
`--timing` flags."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest
from script_support import console_script

from irc.timing import PassTiming, Progress, StepSequence, instrumented, step
from irc.tools import irc_compile, irc_opt, irc_run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "inverted_residual.mlir")

_LINE = re.compile(r"^  +(\d+\.\d{4}) \( *(\d+\.\d)%\)  ( *)(\S.*)$")


class _Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _report_lines(report: str) -> list[tuple[float, int, str]]:
    """(seconds, depth, name) of every line of a timing report; checks the header."""
    lines = report.splitlines()
    assert lines[0] == lines[2] == "===" + "-" * 73 + "==="
    assert lines[1].strip() == "... Execution time report ..."
    assert re.fullmatch(r"  Total Execution Time: \d+\.\d{4} seconds", lines[3])
    assert lines[5] == "  ----Wall Time----  ----Name----"
    rows = []
    for line in lines[6:]:
        match = _LINE.match(line)
        assert match, line
        rows.append((float(match[1]), len(match[3]) // 2, match[4]))
    return rows


def test_report_nests_and_adds_repeated_steps() -> None:
    timing = PassTiming()
    with instrumented(timing):
        for _ in range(2):
            with step("lower"), step("lower-cpu"):
                time.sleep(0.01)
        with step("partition"):
            pass
    rows = _report_lines(timing.report())
    assert [(depth, name) for _, depth, name in rows] == [
        (0, "lower"),
        (1, "lower-cpu"),
        (0, "partition"),
        (0, "Total"),
    ]
    assert rows[1][0] >= 0.02  # both runs of lower-cpu, added
    assert rows[0][0] >= rows[1][0]
    assert rows[-1][0] >= rows[0][0] + rows[2][0]
    assert set(timing.times()) == {"lower", "lower/lower-cpu", "partition"}


def test_steps_without_instrumentation_cost_nothing_visible() -> None:
    with step("anything") as current:
        current.result = 1
    timing = PassTiming()
    assert timing.times() == {}


def test_failed_step_is_reported_and_timed() -> None:
    timing = PassTiming()
    seen = []

    class Recorder:
        def before_step(self, s) -> None:
            seen.append(("before", s.name))

        def after_step(self, s) -> None:
            seen.append(("after", s.name, s.failed))

    with pytest.raises(RuntimeError), instrumented(timing, Recorder()), step("bad"):
        raise RuntimeError("boom")
    assert seen == [("before", "bad"), ("after", "bad", True)]
    assert "bad" in timing.times()


def test_step_sequence_begins_and_ends_by_hand() -> None:
    timing = PassTiming()
    steps = StepSequence()
    with instrumented(timing):
        steps.begin("a")
        steps.begin("b")
        steps.end_all()
    assert list(timing.times()) == ["a", "a/b"]


def test_progress_announces_slow_steps_on_a_terminal() -> None:
    stream = _Terminal()
    with instrumented(Progress(stream, tool="irc-test", delay=0.02)):
        with step("fast"):
            pass
        with step("slow"):
            time.sleep(0.15)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "irc-test: slow..."
    assert re.fullmatch(r"irc-test: slow done in \d+\.\d s", lines[1])
    assert len(lines) == 2


def test_progress_names_the_enclosing_step_and_op_count() -> None:
    import irc

    module = irc.parse_module(Path(EXAMPLE).read_text())
    stream = _Terminal()
    with instrumented(Progress(stream, tool="t", delay=0.02)), step("compile"):
        with step("canonicalize", module):
            time.sleep(0.15)
    text = stream.getvalue()
    ops = sum(1 for _ in module.walk())
    assert f"t: canonicalize (in compile), {ops} ops...\n" in text


def test_no_progress_without_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream, tool="irc-test", delay=0.0)
    with instrumented(progress), step("slow"):
        time.sleep(0.05)
    assert stream.getvalue() == ""
    assert progress._thread is None  # nothing watched


def test_irc_compile_timing(capsys: pytest.CaptureFixture[str]) -> None:
    assert irc_compile.main([EXAMPLE, "--targets", "reference", "--timing", "-o", "/dev/null"]) == 0
    captured = capsys.readouterr()
    names = [name for _, depth, name in _report_lines(captured.err) if depth == 0]
    assert names[:4] == ["parse", "import", "canonicalize", "partition"]
    assert {"outline-delegates", "prepare", "output"} <= set(names)
    assert names[-1] == "Total"
    assert captured.out.startswith("targets: reference\n")  # stdout: only the summary


def test_irc_compile_is_quiet_without_timing_or_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert irc_compile.main([EXAMPLE, "--targets", "reference", "-o", "/dev/null"]) == 0
    assert capsys.readouterr().err == ""


def test_irc_opt_timing(capsys: pytest.CaptureFixture[str]) -> None:
    assert irc_opt.main([EXAMPLE, "-p", "canonicalize,infer-shapes", "--timing"]) == 0
    captured = capsys.readouterr()
    rows = _report_lines(captured.err)
    assert [name for _, _, name in rows] == [
        "parse",
        "canonicalize",
        "infer-shapes",
        "output",
        "Total",
    ]
    assert "nn.conv2d" in captured.out


def test_irc_run_timing(capsys: pytest.CaptureFixture[str]) -> None:
    assert irc_run.main([EXAMPLE, "--targets", "reference", "--timing"]) == 0
    captured = capsys.readouterr()
    names = [name for _, _, name in _report_lines(captured.err)]
    assert "partition" in names
    assert "output:" in captured.out


def _run_on_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run a command with stderr on a pseudo-terminal; (status, stdout, stderr)."""
    import os
    import pty
    import subprocess

    leader, follower = pty.openpty()
    try:
        done = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=follower, env=env)
        os.close(follower)
        out = done.communicate(timeout=120)[0]
        err = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(leader)
    return done.returncode, out.decode(), err.decode().replace("\r\n", "\n")


def test_irc_opt_shows_progress_on_a_terminal() -> None:
    import os

    argv = [console_script("irc-opt"), EXAMPLE, "-p", "canonicalize"]
    env = {**os.environ, "IRC_PROGRESS_DELAY": "0"}
    status, out, err = _run_on_terminal(argv, env)
    assert status == 0
    assert "nn.conv2d" in out
    assert re.search(r"^irc-opt: canonicalize, \d+ ops\.\.\.$", err, re.MULTILINE), err
    assert re.search(r"^irc-opt: canonicalize done in \d+\.\d s$", err, re.MULTILINE), err
