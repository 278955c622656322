"""Errors of the executor: compiling a function, checking inputs, running kernels.

Each carries the op it is about (when there is one) and that op's source location, so
tools can print a located diagnostic (`exc.diagnostic`) and the Python API still gets a
readable `str(exc)` that starts with `file:line:col:`.
"""

from __future__ import annotations

from xdsl.ir import Operation

from irc.diagnostics import Diagnostic, Severity, SourceLocation, location_of

__all__ = ["CompileError", "ExecutionError", "ExecutorError", "InputError"]


class ExecutorError(Exception):
    """Base class of the executor's errors."""

    message: str
    """The message without the location prefix."""
    op: Operation | None
    """The operation the error is about, if any."""
    location: SourceLocation | None
    """Where the error points: `op`'s location or its nearest located ancestor's."""

    def __init__(
        self,
        message: str,
        op: Operation | None = None,
        *,
        location: SourceLocation | None = None,
    ) -> None:
        if location is None and op is not None:
            location = location_of(op)
        self.message = message
        self.op = op
        self.location = location
        super().__init__(message if location is None else f"{location}: {message}")

    @property
    def diagnostic(self) -> Diagnostic:
        """The error as a located diagnostic (`file:line:col: error: message`)."""
        return Diagnostic(Severity.ERROR, self.message, self.location, self.op)


class CompileError(ExecutorError):
    """A function cannot be turned into a schedule (no kernel for an op, bad signature, ...)."""


class InputError(ExecutorError, ValueError):
    """The inputs given to `Program.run` do not match the function's signature."""


class ExecutionError(ExecutorError):
    """A kernel failed while running; the original exception is the `__cause__`."""
