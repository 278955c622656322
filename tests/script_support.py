"""irc's console scripts (irc-compile, irc-run, irc-opt, irc-translate) for tests that start
them in a fresh process."""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

import pytest


def console_script(name: str) -> str:
    """The path of the installed console script `name`: the one beside `sys.executable` (a
    virtual environment's bin/), else the one in this interpreter's scripts directory
    (sysconfig: a prefix or user install whose Python lives elsewhere), else the first on
    PATH. Without one (irc imported from a source tree that was never `pip install`ed) the
    calling test is skipped with the reason."""
    places = [Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))]
    for place in places:
        found = shutil.which(name, path=str(place))
        if found is not None:
            return found
    found = shutil.which(name)
    if found is None:
        searched = ", ".join(dict.fromkeys(str(p) for p in places))
        pytest.skip(f"the console script {name} is not installed (searched {searched} and PATH)")
    return found
