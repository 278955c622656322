"""Helpers shared by the command-line tools: errors, atomic output, model options."""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import IO

MODEL_SUFFIXES = (".tflite", ".onnx")


class ToolError(Exception):
    """A failure to report as `<tool>: error: <message>` (no IR location to point at)."""


def print_tool_error(tool: str, message: str) -> None:
    sys.stderr.write(f"{tool}: error: {message}\n")


def is_model_file(path: str) -> bool:
    """Whether a path names a model to import rather than an IR file."""
    return os.path.splitext(path)[1].lower() in MODEL_SUFFIXES


def write_atomically(path: str, write: Callable[[IO[bytes]], None], what: str = "output") -> None:
    """Write a file through a temp file in the same folder and a rename: all or nothing."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, temp_path = tempfile.mkstemp(dir=directory, prefix=".irc-", suffix=".tmp")
    except OSError as exc:
        raise ToolError(f"could not write {what} to '{path}': {exc.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp_path, 0o666 & ~umask)  # mkstemp makes it 0600; outputs are ordinary files
        with os.fdopen(fd, "wb") as stream:
            write(stream)
        os.replace(temp_path, path)
    except BaseException as exc:
        os.unlink(temp_path)
        if isinstance(exc, OSError):
            raise ToolError(f"could not write {what} to '{path}': {exc.strerror}") from None
        raise


_NUMBER = re.compile(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|nan)")


def parse_bindings(items: Sequence[str] | None) -> dict[str, int | float]:
    """`--bind name=value` options: inputs fixed to constants at import."""
    bindings: dict[str, int | float] = {}
    for item in items or ():
        name, sep, text = item.partition("=")
        if not sep or not name or not _NUMBER.fullmatch(text.strip()):
            raise ToolError(f"bad --bind '{item}': expected NAME=NUMBER, e.g. sr=16000")
        text = text.strip()
        bindings[name] = int(text) if re.fullmatch(r"[-+]?\d+", text) else float(text)
    return bindings


def parse_input_shapes(items: Sequence[str] | None) -> dict[str, tuple[int, ...]]:
    """`--input-shape name=1x3x224x224` options: static shapes for dynamic inputs."""
    shapes: dict[str, tuple[int, ...]] = {}
    for item in items or ():
        name, sep, text = item.rpartition("=")
        if not sep or not name or not re.fullmatch(r"\d+(x\d+)*|scalar", text.strip()):
            raise ToolError(f"bad --input-shape '{item}': expected NAME=DIMS, e.g. x=1x3x224x224")
        text = text.strip()
        shapes[name] = () if text == "scalar" else tuple(int(d) for d in text.split("x"))
    return shapes


def add_model_options(parser: object) -> None:
    """The import options both irc-translate and irc-run take."""
    parser.add_argument(  # type: ignore[attr-defined]
        "--bind",
        action="append",
        metavar="NAME=VALUE",
        help="fix a model input to a constant at import (repeatable)",
    )
    parser.add_argument(  # type: ignore[attr-defined]
        "--input-shape",
        action="append",
        metavar="NAME=DIMS",
        help="static shape for an input with dynamic dimensions, e.g. x=1x3x224x224",
    )


def run_tool(
    tool: str,
    parser: argparse.ArgumentParser,
    body: Callable[[argparse.Namespace], int],
    argv: Sequence[str] | None,
) -> int:
    """A tool's `main`: parse (usage errors exit 2), run `body`, and turn a ToolError into
    `<tool>: error: ...` and any other exception (a bug in irc) into one line too, exit 1,
    no traceback (`IRC_DEBUG=1` re-raises)."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 0
    try:
        return body(args)
    except BrokenPipeError:
        # The reader went away (`irc-run ... | head`): stop quietly, as `cat` does, and keep
        # the interpreter's final flush of stdout from failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    except ToolError as exc:
        print_tool_error(tool, str(exc))
        return 1
    except Exception as exc:
        if os.environ.get("IRC_DEBUG"):
            raise
        print_tool_error(
            tool, f"internal error: {type(exc).__name__}: {exc} (set IRC_DEBUG=1 for a traceback)"
        )
        return 1
