"""What the command-line tools share: errors, output files, options, `--version`, warnings.

Library code (`irc`, `irc.compiler`, passes, targets) never imports this module: it raises
library errors (`OSError`, `TargetError`, `ModelImportError`, located diagnostics) and logs
warnings on the `irc` logger; the tools turn those into `<tool>: error: ...` /
`<tool>: warning: ...` lines here.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from irc.fileio import MODEL_SUFFIXES, Content, is_model_file, write_atomically

if TYPE_CHECKING:
    from types import TracebackType

    from irc.diagnostics import Diagnostic

__all__ = [
    "MODEL_SUFFIXES",
    "ToolError",
    "add_model_options",
    "add_target_options",
    "add_version_option",
    "is_model_file",
    "load_plugins",
    "parse_bindings",
    "parse_input_shapes",
    "parse_targets",
    "print_tool_error",
    "report_diagnostic",
    "run_tool",
    "version_line",
    "write_output",
]


class ToolError(Exception):
    """A failure to report as `<tool>: error: <message>` (no IR location to point at)."""


def print_tool_error(tool: str, message: str) -> None:
    sys.stderr.write(f"{tool}: error: {message}\n")


def write_output(path: str, content: Content, what: str) -> None:
    """`irc.fileio.write_atomically` (mode 0666 less the umask), its `OSError` as a
    ToolError naming `what` and the file."""
    try:
        write_atomically(path, content)
    except OSError as exc:
        raise ToolError(f"could not write {what} to '{path}': {exc.strerror or exc}") from None


def report_diagnostic(tool: str, diagnostic: Diagnostic, filename: str, source: str) -> None:
    """A located diagnostic with its source line and a caret (as irc-opt prints them);
    an unlocated one as `<tool>: error: <filename>: ...`."""
    from irc.diagnostics import format_with_source

    if diagnostic.location is None:
        print_tool_error(tool, f"{filename}: {diagnostic.message}")
        return
    sys.stderr.write(format_with_source(diagnostic, filename, source.splitlines()) + "\n")


# ---- --version -----------------------------------------------------------------------------------


def version_line() -> str:
    """`irc <version> (xdsl <version>)`, what every tool's `--version` prints."""
    from importlib.metadata import version

    import irc

    return f"irc {irc.__version__} (xdsl {version('xdsl')})"


def add_version_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action=_VersionAction, help="print irc's version and exit")


class _VersionAction(argparse.Action):
    """argparse's `version` action with `version_line` looked up only when asked for: the
    package metadata lookup costs tens of milliseconds on every tool start otherwise."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kwargs: object) -> None:
        sys.stdout.write(version_line() + "\n")
        parser.exit()


# ---- --targets, --plugin, --strict (irc-compile, irc-run) ----------------------------------------


def add_target_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """`--targets t1,t2`, `--strict` and `--plugin module:attr` (repeatable)."""
    parser.add_argument(
        "--targets",
        metavar="T1,T2",
        required=required,
        help="targets in priority order, e.g. opencl,reference"
        + ("" if required else " (default: run everything on the reference target)"),
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail instead of falling back: every target must be available and no op may "
        "stay on the host (default: a warning, and the next target or the host runs the ops)",
    )
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE:ATTR",
        help="load a target plugin (a Target class, instance or factory); repeatable",
    )


def parse_targets(text: str) -> list[str]:
    """`--targets a,b` as a list; ToolError when it names no target."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ToolError(f"bad --targets '{text}': expected target names, e.g. opencl,reference")
    return names


def load_plugins(specs: Sequence[str] | None, targets: Sequence[str]) -> None:
    """Load `--plugin`s, then check that every target is known (ToolError otherwise)."""
    from irc.targets import TargetError, get_target, load_plugin

    try:
        for spec in specs or ():
            load_plugin(spec)
        for name in targets:
            get_target(name)
    except TargetError as exc:
        raise ToolError(str(exc)) from None


# ---- Model options (irc-translate, irc-compile, irc-run) -----------------------------------------


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


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The import options both irc-translate and irc-run take."""
    parser.add_argument(
        "--bind",
        action="append",
        metavar="NAME=VALUE",
        help="fix a model input to a constant at import (repeatable)",
    )
    parser.add_argument(
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
    no traceback (`IRC_DEBUG=1` re-raises). Warnings the library logs (the `irc` logger)
    print as `<tool>: warning: ...` on stderr meanwhile."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 0
    try:
        with _warnings_on_stderr(tool):
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


class _ToolWarnings(logging.Handler):
    """Prints the `irc` logger's warnings as `<tool>: warning: <message>` on stderr."""

    def __init__(self, tool: str) -> None:
        super().__init__(logging.WARNING)
        self.tool = tool

    def emit(self, record: logging.LogRecord) -> None:
        severity = "warning" if record.levelno < logging.ERROR else "error"
        sys.stderr.write(f"{self.tool}: {severity}: {record.getMessage()}\n")


class _warnings_on_stderr:
    """While a tool runs, the `irc` logger's records go to `_ToolWarnings` only, and a Python
    warning (a driver's `CompilerWarning`, a numpy `RuntimeWarning`) prints as one line
    `<tool>: warning: <its first line>` instead of Python's two-line source excerpt."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.handler = _ToolWarnings(tool)
        self.logger = logging.getLogger("irc")
        self.propagate = self.logger.propagate
        self.caught = warnings.catch_warnings()

    def __enter__(self) -> None:
        self.logger.addHandler(self.handler)
        self.logger.propagate = False
        self.caught.__enter__()
        warnings.showwarning = self._show

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.caught.__exit__(exc_type, exc, traceback)
        self.logger.removeHandler(self.handler)
        self.logger.propagate = self.propagate

    def _show(
        self, message: Warning | str, category: type[Warning], *args: object, **kw: object
    ) -> None:
        lines = str(message).strip().splitlines() or [category.__name__]
        more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
        sys.stderr.write(f"{self.tool}: warning: {category.__name__}: {lines[0]}{more}\n")
