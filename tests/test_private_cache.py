"""conftest.py's `private_cache`: a module marked `private_cache` builds into the run's cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cache_support import SHARED_CACHE_NAME, private_cache_dir, shared_cache_dir

pytestmark = pytest.mark.private_cache


def test_the_module_builds_into_the_runs_folder(
    private_cache: Path | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert private_cache is not None
    assert os.environ["IRC_CACHE_DIR"] == str(private_cache)
    assert private_cache.is_dir()
    assert private_cache.stat().st_mode & 0o777 == 0o700
    assert private_cache.name == SHARED_CACHE_NAME
    # this run's temporary folder (a worker's own folder lies in it), never the user's cache
    assert private_cache.parent in tmp_path_factory.getbasetemp().parents or (
        private_cache.parent == tmp_path_factory.getbasetemp()
    )


def test_the_same_folder_for_every_test_of_the_module(private_cache: Path | None) -> None:
    assert private_cache is not None
    assert os.environ["IRC_CACHE_DIR"] == str(private_cache)


def test_every_worker_of_a_run_gets_the_same_folder(tmp_path: Path) -> None:
    run = tmp_path / "pytest-7"
    (run / "popen-gw0").mkdir(parents=True)
    (run / "popen-gw1").mkdir()
    folders = {
        shared_cache_dir(run, None),
        shared_cache_dir(run / "popen-gw0", "gw0"),
        shared_cache_dir(run / "popen-gw1", "gw1"),
    }
    assert folders == {run / SHARED_CACHE_NAME}
    assert (run / SHARED_CACHE_NAME).stat().st_mode & 0o777 == 0o700


def test_unset_variables_are_removed_meanwhile_and_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IRC_TEST_SWITCH", "1")
    before = os.environ["IRC_CACHE_DIR"]
    fixture = private_cache_dir(tmp_path, unset=["IRC_TEST_SWITCH"])
    path = next(fixture)
    assert os.environ["IRC_CACHE_DIR"] == str(path) == str(tmp_path) != before
    assert "IRC_TEST_SWITCH" not in os.environ
    with pytest.raises(StopIteration):
        next(fixture)
    assert os.environ["IRC_CACHE_DIR"] == before
    assert os.environ["IRC_TEST_SWITCH"] == "1"
