"""What the OpenCL tests share: whether a device is there, and a private program cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from cache_support import private_cache_dir

from irc.targets.opencl.target import OpenCLTarget

__all__ = ["AVAILABLE", "needs_device", "opencl_c_errors", "private_cache_dir"]

AVAILABLE = OpenCLTarget().available()
"""The OpenCL target's availability here (PoCL's CPU device in CI, a GPU when one is lent)."""

needs_device = pytest.mark.skipif(not AVAILABLE, reason=AVAILABLE.reason or "available")
"""Skips a test that runs kernels when no OpenCL device is available (with the reason)."""


def opencl_c_errors(source: str, fp16: bool = True) -> list[str]:
    """Type-check OpenCL C 1.2 `source` with libclang (the `clang` test dependency), the
    OpenCL builtins declared and cl_khr_fp64 (plus cl_khr_fp16 with `fp16`) enabled; returns
    the errors as `line: message | source line`. Skips the test when clang is missing."""
    ci = pytest.importorskip("clang.cindex")
    # opencl-c-base.h (which -fdeclare-opencl-builtins includes) is not in the libclang
    # wheel; PoCL's binary distribution ships it
    pocl = pytest.importorskip("pocl_binary_distribution")
    include = Path(pocl.__file__).parent / ".libs/share/pocl/include"
    extensions = "+cl_khr_fp64" + (",+cl_khr_fp16" if fp16 else "")
    args = ["-x", "cl", "-cl-std=CL1.2", "-Xclang", "-fdeclare-opencl-builtins"]
    args += ["--target=spir-unknown-unknown", f"-I{include}", "-Xclang", f"-cl-ext={extensions}"]
    unit = ci.Index.create().parse("kernels.cl", args=args, unsaved_files=[("kernels.cl", source)])
    lines = source.splitlines()
    return [
        f"{d.location.line}: {d.spelling} | {lines[d.location.line - 1].strip()[:160]}"
        if d.location.file is not None and 0 < d.location.line <= len(lines)
        else d.spelling
        for d in unit.diagnostics
        if d.severity >= ci.Diagnostic.Error
    ]
