"""The test run's build cache (CPU libraries, compiler probes, OpenCL programs)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

SHARED_CACHE_NAME = "irc-cache"
"""The run's cache folder, in the run's temporary folder."""


def shared_cache_dir(basetemp: Path, worker: str | None) -> Path:
    """`irc-cache` in a pytest run's temporary folder, given the process's own (`basetemp`)
    and its xdist worker name (`PYTEST_XDIST_WORKER`, None without xdist): the same folder
    for every worker of the run (a worker's own folder, `popen-gw<N>`, lies in the run's),
    created with mode 0700 as irc's cache requires."""
    path = (basetemp.parent if worker else basetemp) / SHARED_CACHE_NAME
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def private_cache_dir(path: Path, unset: Sequence[str] = ()) -> Iterator[Path]:
    """The body of a module-scoped fixture: `IRC_CACHE_DIR` set to `path` (the run's cache)
    while the module's tests run, so they build into it and never read the user's cache; the
    environment variables `unset` are removed meanwhile (e.g. a user's kernel switches)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRC_CACHE_DIR", str(path))
        for name in unset:
            mp.delenv(name, raising=False)
        yield path
