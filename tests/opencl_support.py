"""What the OpenCL tests share: whether a device is there, and OpenCL C checks with libclang."""

from __future__ import annotations

from pathlib import Path

import pytest

from irc.targets.opencl.target import OpenCLTarget

__all__ = [
    "AVAILABLE",
    "kernel_style_params",
    "needs_device",
    "opencl_c_errors",
    "wide_vector_calls",
]

AVAILABLE = OpenCLTarget().available()
"""The OpenCL target's availability here (PoCL's CPU device in CI, a GPU when one is lent)."""

needs_device = pytest.mark.skipif(not AVAILABLE, reason=AVAILABLE.reason or "available")
"""Skips a test that runs kernels when no OpenCL device is available (with the reason)."""


def kernel_style_params() -> list[object]:
    """pytest params of the two OpenCL kernel styles, `cpu` and `gpu`: the one this device
    gets by default (`kernels_choice()`: `gpu` on a GPU) runs in README's test command, the
    other in the `slow` tier that CI runs after it, as `cpu_support.isa_params` does with the
    ISA profiles."""
    from irc.targets.opencl.target import kernels_choice

    default = kernels_choice().kernels if AVAILABLE else "cpu"
    return [
        pytest.param(style, id=style, marks=() if style == default else pytest.mark.slow)
        for style in ("cpu", "gpu")
    ]


def _parse(source: str, fp16: bool) -> tuple:
    """(clang.cindex, the parsed translation unit) of OpenCL C 1.2 `source`."""
    ci = pytest.importorskip("clang.cindex")
    # opencl-c-base.h (which -fdeclare-opencl-builtins includes) is not in the libclang
    # wheel; PoCL's binary distribution ships it
    pocl = pytest.importorskip("pocl_binary_distribution")
    include = Path(pocl.__file__).parent / ".libs/share/pocl/include"
    extensions = "+cl_khr_fp64" + (",+cl_khr_fp16" if fp16 else "")
    args = ["-x", "cl", "-cl-std=CL1.2", "-Xclang", "-fdeclare-opencl-builtins"]
    args += ["--target=spir-unknown-unknown", f"-I{include}", "-Xclang", f"-cl-ext={extensions}"]
    return ci, ci.Index.create().parse(
        "kernels.cl", args=args, unsaved_files=[("kernels.cl", source)]
    )


def wide_vector_calls(source: str) -> list[str]:
    """Calls in OpenCL C `source` that pass a 512-bit vector (float16, double8) by value,
    as `line: callee(type)`. On a CPU without AVX-512 (PoCL on AVX2), clang warns about each
    such call ("AVX vector argument ... without 'avx512f' enabled changes the ABI"), which
    only its code generation sees: this finds them on any machine."""
    ci, unit = _parse(source, fp16=True)
    found = []
    for cursor in unit.cursor.walk_preorder():
        if cursor.kind != ci.CursorKind.CALL_EXPR:
            continue
        for arg in cursor.get_arguments():
            t = arg.type.get_canonical()
            if t.kind in (ci.TypeKind.EXTVECTOR, ci.TypeKind.VECTOR) and t.get_size() >= 64:
                found.append(f"{cursor.location.line}: {cursor.spelling}({arg.type.spelling})")
                break
    return found


def opencl_c_errors(source: str, fp16: bool = True) -> list[str]:
    """Type-check OpenCL C 1.2 `source` with libclang (the `clang` test dependency), the
    OpenCL builtins declared and cl_khr_fp64 (plus cl_khr_fp16 with `fp16`) enabled; returns
    the errors as `line: message | source line`. Skips the test when clang is missing."""
    ci, unit = _parse(source, fp16)
    lines = source.splitlines()
    return [
        f"{d.location.line}: {d.spelling} | {lines[d.location.line - 1].strip()[:160]}"
        if d.location.file is not None and 0 < d.location.line <= len(lines)
        else d.spelling
        for d in unit.diagnostics
        if d.severity >= ci.Diagnostic.Error
    ]


def run_cases_bit_exact(cases: list, kernels: str, name: str) -> str:
    """Lower the cases (cpu_support.Case) as one OpenCL executable `name` in the `kernels`
    style (gpu style shaped for 132 compute units), run it on the device and require every
    output bit for bit equal to the reference's; returns the generated program's source."""
    import numpy as np
    from cpu_support import build_executable, reference_outputs
    from xdsl.dialects.builtin import StringAttr

    from irc.context import make_context
    from irc.dialects import ocl
    from irc.targets.opencl.lower import LowerOpenCLPass
    from irc.targets.opencl.runtime import OpenCLRuntime

    module, executable, built = build_executable(cases, name)
    executable.properties["target"] = StringAttr("opencl")
    expected = [reference_outputs(b) for b in built]
    LowerOpenCLPass(kernels=kernels, compute_units=132).apply(make_context(), module)
    module.verify()
    outs = iter(
        OpenCLRuntime().load(executable).execute("entry", [a for b in built for a in b.args])
    )
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            host = next(outs).to_host()
            np.testing.assert_array_equal(host, ref, err_msg=b.case.id)
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    return program.source.data
