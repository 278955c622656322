"""conftest.py's `private_cache`: a module marked `private_cache` builds into its own cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cache_support import private_cache_dir

pytestmark = pytest.mark.private_cache


def test_the_module_builds_into_a_fresh_folder(private_cache: Path | None) -> None:
    assert private_cache is not None
    assert os.environ["IRC_CACHE_DIR"] == str(private_cache)
    assert private_cache.is_dir()
    assert private_cache.name.startswith("irc-cache")


def test_the_same_folder_for_every_test_of_the_module(private_cache: Path | None) -> None:
    assert private_cache is not None
    assert os.environ["IRC_CACHE_DIR"] == str(private_cache)


def test_unset_variables_are_removed_meanwhile_and_restored(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IRC_TEST_SWITCH", "1")
    before = os.environ["IRC_CACHE_DIR"]
    fixture = private_cache_dir(tmp_path_factory, unset=["IRC_TEST_SWITCH"])
    path = next(fixture)
    assert os.environ["IRC_CACHE_DIR"] == str(path) != before
    assert "IRC_TEST_SWITCH" not in os.environ
    with pytest.raises(StopIteration):
        next(fixture)
    assert os.environ["IRC_CACHE_DIR"] == before
    assert os.environ["IRC_TEST_SWITCH"] == "1"
