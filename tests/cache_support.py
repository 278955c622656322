"""A private build cache for a test module (CPU libraries, OpenCL programs)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest


def private_cache_dir(
    tmp_path_factory: pytest.TempPathFactory, unset: Sequence[str] = ()
) -> Iterator[Path]:
    """The body of a module-scoped fixture: `IRC_CACHE_DIR` set to a fresh folder while the
    module's tests run, so they build into it and never read the user's cache; the
    environment variables `unset` are removed meanwhile (e.g. a user's kernel switches)."""
    path = tmp_path_factory.mktemp("irc-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRC_CACHE_DIR", str(path))
        for name in unset:
            mp.delenv(name, raising=False)
        yield path
