"""Building OpenCL programs quietly: the build options, the build log, and the errors.

Every program irc builds (from generated source, from a cached or embedded binary) goes
through `build(device, source=... | binary=...)`, which returns the built program and its
build log. The log is never turned into a warning: it is kept on the program, written to
stderr when `IRC_OPENCL_BUILD_LOG=1` asks for it, and put into the error when the build
fails (`OpenCLBuildError`).

Why not pyopencl's `Program.build()`: pyopencl turns every non-empty build log into a
`pyopencl.CompilerWarning` (drivers log freely: NVIDIA always, PoCL on AVX2 CPUs a `-Wpsabi`
note per call taking a float16), which `-W error` makes fatal and which made a failing
target raise instead of falling back. Suppressing it with `warnings.catch_warnings()` is not
an option here: that swaps the process-wide filter list, is not thread-safe, and programs
are built on several threads at once; `PYOPENCL_COMPILER_OUTPUT` only chooses between a
short and a long warning. So the build calls the program object's own `_build` (the
driver's clBuildProgram, which pyopencl's `build` wraps; stable across pyopencl releases)
and reads the log with `get_build_info(device, LOG)`: no warning is ever raised, nothing
global is touched, and the log is exact. Where a pyopencl lacks `_build`, the public `build`
runs under a lock with `CompilerWarning` filtered for that call only.

The driver's compiler may also write to the process's stderr itself: PoCL's clang prints
`N warnings generated.` on file descriptor 2 for every build whose log has warnings,
bypassing the log. While builds run, descriptor 2 goes to a temporary file; afterwards that
summary line is dropped (the warnings are in the log) and anything else written meanwhile
(other threads' output) is written to the real stderr.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from irc.targets.opencl.device import Device
from irc.targets.opencl.half_storage import HALF_TABLES_MACRO

__all__ = [
    "BUILD_LOG_ENV",
    "BUILD_OPTIONS",
    "CORRECT_DIVISION",
    "FAST_MATH_BUILD_OPTIONS",
    "FAST_MATH_ENV",
    "STRICT_BUILD_OPTIONS",
    "BuildFailure",
    "OpenCLBuildError",
    "OpenCLLoadError",
    "build",
    "build_log_requested",
    "device_build_options",
    "program_build_options",
    "show_log",
]

CORRECT_DIVISION = "-cl-fp32-correctly-rounded-divide-sqrt"
STRICT_BUILD_OPTIONS = f"-cl-mad-enable {CORRECT_DIVISION}"
"""The default: IEEE NaN, Inf and signed zeros kept (docs/semantics.md); `mad` may fuse a
multiply-add with one rounding, which changes no NaN/Inf result and PoCL needs for speed.
Float division and sqrt correctly rounded (`CORRECT_DIVISION`, dropped on a device without
CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT): OpenCL allows 2.5 ulp otherwise, and compilers shrink
`(float)((double)x / (double)s)` — qcast's exact float division — to a float division
(NVIDIA's OpenCL on an H100 then rounded 5 of 384 quantization ties the wrong way)."""
FAST_MATH_BUILD_OPTIONS = "-cl-fast-relaxed-math -cl-mad-enable"
"""With `IRC_OPENCL_FAST_MATH=1`: gives up NaN and Inf (the compiler assumes none: relu,
max, clip, pools and softmax of NaN/Inf inputs become undefined) and the sign of zero."""
FAST_MATH_ENV = "IRC_OPENCL_FAST_MATH"


def _env_flag(name: str) -> bool:
    """Whether environment variable `name` is set to 1/true/yes/on."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


BUILD_OPTIONS = FAST_MATH_BUILD_OPTIONS if _env_flag(FAST_MATH_ENV) else STRICT_BUILD_OPTIONS
"""The options every program is built with (part of the cache keys and of embedded
binaries' tags)."""

BUILD_LOG_ENV = "IRC_OPENCL_BUILD_LOG"
"""`1`/`true`: write every program build's log to stderr (also when empty)."""


class OpenCLLoadError(RuntimeError):
    """An executable the OpenCL runtime cannot load."""


class OpenCLBuildError(OpenCLLoadError):
    """The OpenCL compiler rejected a generated program (message: ops involved + build log)."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log
        """The driver's build log."""


class BuildFailure(Exception):
    """clBuildProgram failed: the driver's error and its build log."""

    def __init__(self, error: str, log: str) -> None:
        super().__init__(error)
        self.error = error
        self.log = log


def build_log_requested() -> bool:
    """Whether `IRC_OPENCL_BUILD_LOG` asks for build logs on stderr."""
    return _env_flag(BUILD_LOG_ENV)


_stderr_lock = threading.Lock()


def show_log(device: Device, what: str, log: str) -> None:
    """Write a build log to stderr when `IRC_OPENCL_BUILD_LOG` asks for it."""
    if not build_log_requested():
        return
    text = log.rstrip() or "(empty)"
    with _stderr_lock:
        sys.stderr.write(f"irc: opencl: build log of {what} on '{device.name}':\n{text}\n")
        sys.stderr.flush()


_public_build_lock = threading.Lock()

_CLANG_SUMMARY = re.compile(
    rb"^\d+ (warnings?|errors?)( and \d+ (warnings?|errors?))? generated\.\n?$"
)
_stderr_lock = threading.Lock()
_stderr_users = 0
_stderr_saved: tuple[int, Any] | None = None  # the real descriptor 2, the file it goes to now


@contextlib.contextmanager
def _driver_stderr_captured() -> Iterator[None]:
    """Descriptor 2 to a temporary file while any build runs (see the module docstring)."""
    global _stderr_users, _stderr_saved
    with _stderr_lock:
        if _stderr_users == 0:
            try:
                sys.stderr.flush()
                saved, capture = os.dup(2), tempfile.TemporaryFile()
                os.dup2(capture.fileno(), 2)
                _stderr_saved = (saved, capture)
            except (OSError, ValueError):
                _stderr_saved = None  # no descriptor 2 to redirect: build as is
        _stderr_users += 1
    try:
        yield
    finally:
        with _stderr_lock:
            _stderr_users -= 1
            if _stderr_users == 0 and _stderr_saved is not None:
                saved, capture = _stderr_saved
                _stderr_saved = None
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                capture.seek(0)
                lines = capture.read().splitlines(True)
                kept = [line for line in lines if not _CLANG_SUMMARY.match(line)]
                capture.close()
                if kept:
                    with contextlib.suppress(OSError):
                        os.write(2, b"".join(kept))


def _log(device: Device, program: Any) -> str:
    try:
        log = program.get_build_info(device.device, device.cl.program_build_info.LOG)
    except Exception:  # a driver that cannot say: no log
        return ""
    return str(log or "")


def device_build_options(device: Device) -> str:
    """`BUILD_OPTIONS` for `device`: without `CORRECT_DIVISION` where the device does not
    report CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (the option is only valid where it does)."""
    if CORRECT_DIVISION not in BUILD_OPTIONS:
        return BUILD_OPTIONS
    cl = device.cl
    try:
        config = int(device.device.single_fp_config)
        flag = int(cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
    except Exception:  # a driver without the query: do not ask for it
        config, flag = 0, 1
    if config & flag:
        return BUILD_OPTIONS
    return " ".join(o for o in BUILD_OPTIONS.split() if o != CORRECT_DIVISION)


def program_build_options(device: Device) -> str:
    """What programs are built with on `device`: `device_build_options(device)`, and on a CPU
    device `-D IRC_HALF_TABLES` (half_storage.py: scalar half loads through tables)."""
    options = device_build_options(device)
    return f"{options} -D {HALF_TABLES_MACRO}" if device.profile.kind == "cpu" else options


def build(device: Device, *, source: str | None = None, binary: bytes | None = None) -> tuple:
    """Build a program for `device` from `source` or from a driver `binary` with
    `program_build_options(device)`; returns `(program, log)`. Raises `BuildFailure` (error +
    log) when the driver refuses it. Never emits `pyopencl.CompilerWarning`; safe on several
    threads."""
    cl = device.cl
    options = program_build_options(device)
    raw = getattr(cl, "_cl", None)
    low_level = getattr(raw, "_Program", None)
    if low_level is not None and hasattr(low_level, "_build"):
        if source is not None:
            program = low_level(device.context, source)
        else:
            program = low_level(device.context, [device.device], [binary])
        try:
            with _driver_stderr_captured():
                program._build(options=options.encode(), devices=[device.device])
        except cl.Error as exc:
            raise BuildFailure(str(exc), _log(device, program)) from None
        return program, _log(device, program)
    # A pyopencl without the low-level build: its public build, the warning filtered here only.
    if source is not None:
        program = cl.Program(device.context, source)
    else:
        program = cl.Program(device.context, [device.device], [binary])
    with _public_build_lock, warnings.catch_warnings(), _driver_stderr_captured():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        try:
            program.build(options=options, devices=[device.device])
        except cl.Error as exc:  # pyopencl's message carries the logs
            raise BuildFailure(str(exc), str(exc)) from None
        return program, _log(device, program)
