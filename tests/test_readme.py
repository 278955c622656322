"""README.md and .ci/run must agree on the one test command (CI runs exactly what README shows)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _last_command(text: str) -> str:
    lines = [line.strip() for line in text.splitlines()]
    return next(line for line in reversed(lines) if line.startswith("ruff check"))


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert _last_command(ci) == _last_command(readme)
    assert "pip install -e '.[test]'" in readme
    assert "pip install --quiet -e '.[test]'" in ci


def test_examples_named_in_readme_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    for word in readme.split():
        if word.startswith("examples/") and word.endswith(".mlir"):
            assert (ROOT / word).is_file(), word
