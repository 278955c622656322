"""tests/conftest.py: the `slow` tier names real tests, and `compile_once` compiles once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import MAX_WORKERS, SLOW_TESTS, _matches, auto_num_workers
from test_dynamic_shapes import write_model

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("prefix", SLOW_TESTS)
def test_every_slow_entry_names_a_test_file_and_function(prefix: str) -> None:
    path, _, rest = prefix.partition("::")
    source = ROOT / path
    assert source.is_file(), prefix
    if rest:
        assert f"def {rest.split('[')[0]}(" in source.read_text(), prefix


def test_slow_entries_match_whole_names_only() -> None:
    assert _matches("tests/a.py::test_x[1]", "tests/a.py::test_x")
    assert _matches("tests/a.py::test_x", "tests/a.py")
    assert not _matches("tests/a.py::test_xy", "tests/a.py::test_x")
    assert not _matches("tests/ab.py::test_x", "tests/a")


def test_slow_marker_is_registered_and_applied(request: pytest.FixtureRequest) -> None:
    assert any(line.startswith("slow:") for line in request.config.getini("markers"))
    for item in request.session.items:  # the slow ones this session collected, and only they
        slow = item.get_closest_marker("slow") is not None
        assert slow == any(_matches(item.nodeid, prefix) for prefix in SLOW_TESTS), item.nodeid
    assert request.node.get_closest_marker("slow") is None


def test_compile_once_returns_one_model_per_argument_list(compile_once, tmp_path: Path) -> None:
    path = write_model(tmp_path / "m.onnx")
    first = compile_once(path, ["reference"], input_shapes={"x": (2, 4)})
    assert compile_once(str(path), ("reference",), input_shapes={"x": (2, 4)}) is first
    other = compile_once(path, ["reference"], input_shapes={"x": (3, 4)})
    assert other is not first
    assert other.inputs[0].shape == (3, 4)


def test_auto_workers_are_the_usable_cpus_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert auto_num_workers() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(64)), raising=False)
    assert auto_num_workers() == MAX_WORKERS


def test_auto_workers_hook_is_what_xdist_calls(request: pytest.FixtureRequest) -> None:
    if not request.config.pluginmanager.hasplugin("xdist"):
        pytest.skip("pytest-xdist is not installed")
    counts = request.config.hook.pytest_xdist_auto_num_workers(config=request.config)
    assert auto_num_workers() in (counts if isinstance(counts, list) else [counts])
