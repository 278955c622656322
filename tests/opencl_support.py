"""What the OpenCL tests share: whether a device is there, and a private program cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from irc.targets.opencl.target import OpenCLTarget

AVAILABLE = OpenCLTarget().available()
"""The OpenCL target's availability here (PoCL's CPU device in CI, a GPU when one is lent)."""

needs_device = pytest.mark.skipif(not AVAILABLE, reason=AVAILABLE.reason or "available")
"""Skips a test that runs kernels when no OpenCL device is available (with the reason)."""


def private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The body of a module-scoped fixture: `IRC_CACHE_DIR` set to a fresh folder while the
    module's tests run, so they build programs into it and never read the user's cache."""
    path = tmp_path_factory.mktemp("irc-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRC_CACHE_DIR", str(path))
        yield path
