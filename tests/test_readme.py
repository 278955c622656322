"""README.md stays true: .ci/run runs README's test command, the quick start runs as written,
and the tools' documented outputs are current."""

import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _last_command(text: str) -> str:
    lines = [line.strip() for line in text.splitlines()]
    return next(line for line in reversed(lines) if line.startswith("ruff check"))


def _line_of(text: str, line: str) -> int:
    return [s.strip() for s in text.splitlines()].index(line)


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert _last_command(ci) == _last_command(readme)
    slow_tier = "pytest -W error -q -n auto --dist loadfile -m slow"
    after = [s.strip() for s in readme.splitlines()][_line_of(readme, _last_command(readme)) :]
    assert slow_tier in after[:12]  # the README's next command
    assert ci.splitlines()[_line_of(ci, _last_command(ci)) + 1] == slow_tier
    assert "pip install -e '.[test]'" in readme
    assert "pip install --quiet -e '.[test]'" in ci


def test_examples_named_in_readme_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    for word in readme.split():
        if word.startswith("examples/") and word.endswith(".mlir"):
            assert (ROOT / word).is_file(), word


# ---- The quick start, run as written -------------------------------------------------------------


def _quick_start_commands() -> list[list[str]]:
    """Command 1 of README's quick start: its `sh` block's `&&`-chained commands."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Quick start") :]
    block = section[section.index("```sh") + len("```sh") : section.index("```\n", 10)]
    return [shlex.split(command) for command in " ".join(block.split("\n")).split("&&")]


def _executable(name: str) -> str:
    """`python` is this interpreter; a tool is the script installed beside it."""
    if name == "python":
        return sys.executable
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    assert found is not None, f"{name} is not installed"
    return found


def test_quick_start_runs_as_written(tmp_path: Path) -> None:
    commands = _quick_start_commands()
    assert commands[0] == ["pip", "install", "-e", ".[test]"]
    assert [argv[0] for argv in commands[1:]] == ["python", "irc-compile", "irc-run"]
    outputs = []
    for argv in commands[1:]:  # the install is what CI (and this test's venv) already did
        resolved = [_executable(argv[0])]
        resolved += [str(ROOT / arg) if (ROOT / arg).is_file() else arg for arg in argv[1:]]
        done = subprocess.run(resolved, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stderr}"
        assert "Traceback" not in done.stderr
        # No progress lines without a terminal (a driver may still warn on stderr).
        assert not re.search(r"^irc-\w+: .*(\.\.\.| s)$", done.stderr, re.MULTILINE)
        outputs.append(done.stdout)
    assert outputs[0].startswith("wrote mobilenet_mini.onnx: ")
    assert "@main: opencl: " in outputs[1]
    assert re.search(r"^runs: 20: min \d+\.\d+ ms, median", outputs[2], re.MULTILINE)
    page = (tmp_path / "mobilenet_mini.html").read_text()
    svg = page[page.index("<svg") : page.index("</svg>") + len("</svg>")]
    ops = [g for g in ET.fromstring(svg).iter() if g.get("class") == "node op"]
    assert len(ops) == 45


def test_readme_documents_every_tool_with_output() -> None:
    readme = (ROOT / "README.md").read_text()
    for tool in ("irc-opt", "irc-translate", "irc-compile", "irc-run", "benchmarks/"):
        assert re.search(rf"^\$ (python )?{tool}", readme, re.MULTILINE), tool
    for script in re.findall(r"`(\w+\.py)`", readme[readme.index("**`benchmarks/`**") :]):
        if script != "build_mobilenet.py":
            assert (ROOT / "benchmarks" / script).is_file(), script


def test_irc_opt_example_output_is_current(capsys) -> None:
    from irc.tools import irc_opt

    readme = (ROOT / "README.md").read_text()
    command = "$ irc-opt examples/inverted_residual.mlir -p canonicalize,infer-shapes\n"
    shown = readme[readme.index(command) + len(command) :].split("```")[0]
    assert (
        irc_opt.main(
            [str(ROOT / "examples/inverted_residual.mlir"), "-p", "canonicalize,infer-shapes"]
        )
        == 0
    )
    printed = capsys.readouterr().out.splitlines()
    lines = [line for line in shown.splitlines() if line.strip() != "..."]
    assert len(lines) > 5
    assert all(line in printed for line in lines)


def test_prerequisites_match_the_package() -> None:
    """README's prerequisites name the Python pyproject.toml requires, a C compiler and a
    virtual environment, before the quick start's install."""
    readme = (ROOT / "README.md").read_text()
    requires = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text())
    assert requires is not None
    section = readme[readme.index("## Prerequisites") : readme.index("## Quick start")]
    assert f"Python {requires.group(1)} or newer" in section
    assert "C compiler" in section
    assert "python3 -m venv .venv && . .venv/bin/activate" in section
