"""Template machinery shared by the OpenCL lowerings: C literals, shapes, kernel signatures.

Every kernel is a template with the shapes baked in as literals and the body reading `gid`
(`get_global_id(0)`); nothing taken from the model reaches the source (numbers only). Float
tensors are `REAL` (`irc.targets.opencl.program.specialise`); an epilogue's residual inputs
are `RESIDUAL<j>` in templates, made kernel parameters by `_kernel`.
"""

from __future__ import annotations

import re

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects.quant import UniformQuantizedType
from irc.targets.opencl.conv_kernels import TiledKernels
from irc.targets.opencl.gpu_kernels import GpuKernels
from irc.targets.opencl.lowerings.registry import Emitted, KernelRun, LoweringError
from irc.targets.opencl.program import REAL, Program

__all__ = ["Emitted", "KernelRun", "LoweringError"]


def _f(x: float) -> str:
    """A float literal (exact for float32 values)."""
    if np.isnan(x):
        return "NAN"  # repr would print `nanf` (a constant pad value may be NaN)
    if np.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    return f"{np.float32(x)!r}".replace("np.float32(", "").rstrip(")") + "f"


FLOAT_LITERAL = re.compile(
    r"(?<![\w.])(?:[0-9]+\.[0-9]*(?:e[-+]?[0-9]+)?|[0-9]+e[-+]?[0-9]+)f\b|INFINITY|NAN\b"
)
"""A float literal as `_f` prints it, or the INFINITY / NAN macro."""


def real_literals(expr: str) -> str:
    """`expr` with its float literals as `REAL` values (`NARROW(...)`), for an expression of
    a `REAL` `v`: a float literal would make an OpenCL builtin call on half ambiguous."""
    return FLOAT_LITERAL.sub(lambda m: f"NARROW({m.group(0)})", expr)


def nan_max_update(acc: str = "acc") -> str:
    """The running maximum `acc` of pools, reductions and softmax updated with `xv`: a NaN
    element makes it NaN (and it stays NaN), as np.max does; fmax would skip the NaN."""
    return f"(xv > {acc} || isnan(xv) ? xv : {acc})"


def nan_min_update(acc: str = "acc") -> str:
    """The running minimum, as `nan_max_update`."""
    return f"(xv < {acc} || isnan(xv) ? xv : {acc})"


def softmax_shift(z: str) -> str:
    """`z - m` of a softmax row (`m` its maximum), exactly 0 where `z` is the finite maximum:
    under `-cl-mad-enable` the compiler may fuse `beta * x - m` into one fma whose unrounded
    residual (~1e28 for x ~ 1e35) made exp() overflow; an infinite maximum keeps the
    reference's NaN (`inf - inf`)."""
    return f"({z} == m && isfinite(m) ? 0.0f : {z} - m)"


RESIDUAL = re.compile(r"RESIDUAL([0-9]+)")
"""An epilogue's extra tensor input in kernel templates: `RESIDUAL<j>[gid]` (or `[gid % C]`
for a per-channel vector, `[gid pad Cin C]` for a tensor of `Cin` channels read as its
zero-padding to `C`), made the kernel parameter after its regular inputs by `_kernel`."""

RESIDUAL_LOAD = re.compile(r"RESIDUAL([0-9]+)\[gid(?: % ([0-9]+)| pad ([0-9]+) ([0-9]+))?\]")
"""A residual read: group 2 the channels of a per-channel vector, groups 3 and 4 the `Cin`
and `C` of a channel-padded one (`epilogue.channel_pad_view`), none for a same-shape one."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _numel(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _strides(shape: tuple[int, ...]) -> list[int]:
    out = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        out[d] = out[d + 1] * shape[d + 1]
    return out


def _decompose(shape: tuple[int, ...], names: list[str]) -> str:
    """C statements splitting `gid` into coordinates `names` of `shape` (row-major)."""
    lines = ["    int t = gid;\n"]
    for d in range(len(shape) - 1, -1, -1):
        lines.append(f"    const int {names[d]} = t % {shape[d]}; t /= {shape[d]};\n")
    return "".join(lines)


def _params(n_in: int, in_type: str = REAL, out_type: str = REAL) -> str:
    ins = "".join(f"__global const {in_type}* restrict x{i}, " for i in range(n_in))
    return f"({ins}__global {out_type}* restrict y)"


def _kernel(n_in: int, body: str, in_type: str = REAL, out_type: str = REAL) -> str:
    """A kernel of `n_in` inputs of C element type `in_type` and one output of `out_type`;
    the `REAL` residuals `RESIDUAL<j>` of its epilogue become inputs `x<n_in + j>`."""
    residuals = {int(m.group(1)) for m in RESIDUAL.finditer(body)}
    params = _params(n_in, in_type, out_type)
    if residuals:
        count = max(residuals) + 1
        body = RESIDUAL.sub(lambda m: f"x{n_in + int(m.group(1))}", body)
        extra = "".join(f"__global const REAL* restrict x{n_in + j}, " for j in range(count))
        params = params.replace(
            "__global " + out_type + "* restrict y", extra + "__global " + out_type + "* restrict y"
        )
    return (
        f"__kernel void KERNEL_NAME{params} {{\n    const int gid = get_global_id(0);\n{body}}}\n"
    )


INTEGER_CTYPES = {32: "int", 64: "long"}
"""The OpenCL C type of the elements of an i32 / i64 tensor (indices, shapes, casts)."""

CTYPE_BYTES = {"char": 1, "uchar": 1, "int": 4, "long": 8}
"""Bytes per element of a device buffer of each non-`REAL` C type `_ctype` gives."""


def _ctype(value: SSAValue) -> str:
    """The OpenCL C element type of a tensor's device buffer: `REAL` (float or half), the
    8-bit storage (char / uchar) of a quantized tensor, uchar for an `i1` mask, or int /
    long for an i32 / i64 tensor."""
    t = value.type
    assert isinstance(t, TensorType)
    element = t.element_type
    if isinstance(element, IntegerType) and element.width.data == 1:
        return "uchar"  # i1 masks (lowerings/logic.py): one byte per element
    if isinstance(element, IntegerType) and element.width.data in INTEGER_CTYPES:
        return INTEGER_CTYPES[element.width.data]
    if isinstance(element, UniformQuantizedType):
        if element.storage_width == 8:
            return "char" if element.is_signed else "uchar"
        raise LoweringError(
            value.owner,  # type: ignore[arg-type]  # value is an op result here (block arguments have no storage to refuse)
            f"{element.storage_width}-bit quantized storage (8-bit only)",
        )
    return REAL


def _quant_params(qtype: UniformQuantizedType, shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(channels, inner, axis size) of a quantized tensor's parameters: the channel of element
    `gid` is `(gid / inner) % channels` (channels 1: per-tensor)."""
    if qtype.axis is None or len(qtype.scale_values) == 1:
        return 1, 1, 1
    axis = qtype.axis
    return shape[axis], _numel(shape[axis + 1 :]), shape[axis]


def _describe(op: Operation) -> str:
    ins = ", ".join("x".join(map(str, _shape(v))) or "scalar" for v in op.operands)
    outs = ", ".join("x".join(map(str, _shape(v))) or "scalar" for v in op.results)
    return f"{op.name} {ins} -> {outs}"


def _dot_product(acc: str, x: str, w: str, length: int) -> str:
    """C statements adding `sum(WIDEN(x[i]) * w[i] for i < length)` to the float `acc`.

    With 8 or more terms (a multiple of 4) the sum runs in four independent partial sums,
    added pairwise at the end: a strict build (no `-cl-fast-relaxed-math`) may not reassociate
    one serial chain, which made PoCL's untiled conv2d_transpose 2.2x slower. Summation order
    is not part of the float semantics (docs/semantics.md); each partial sum is a plain sum
    from -0.0, the exact additive identity (a sum of -0.0 products stays -0.0).
    """
    if length < 8 or length % 4:
        return (
            f"            for (int ic = 0; ic < {length}; ++ic)"
            f" {acc} += WIDEN({x}[ic]) * {w}[ic];\n"
        )
    return (
        "            float s0 = -0.0f, s1 = -0.0f, s2 = -0.0f, s3 = -0.0f;\n"
        f"            for (int ic = 0; ic < {length}; ic += 4) {{\n"
        f"                s0 += WIDEN({x}[ic]) * {w}[ic];\n"
        f"                s1 += WIDEN({x}[ic + 1]) * {w}[ic + 1];\n"
        f"                s2 += WIDEN({x}[ic + 2]) * {w}[ic + 2];\n"
        f"                s3 += WIDEN({x}[ic + 3]) * {w}[ic + 3];\n"
        "            }\n"
        f"            {acc} += (s0 + s1) + (s2 + s3);\n"
    )


def _signature(n_in: int, body: str, in_types: list[str], out_type: str) -> str:
    """`_kernel` with one C element type per input."""
    text = _kernel(n_in, body, "IN_TYPE", out_type)
    for i, ct in enumerate(in_types):
        text = text.replace(
            f"__global const IN_TYPE* restrict x{i}", f"__global const {ct}* restrict x{i}"
        )
    return text


def _broadcast_index(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> str:
    """The flat index into a tensor of `shape` broadcast (numpy's rules) to the output
    coordinates `c0..c{rank-1}`."""
    rank = len(out_shape)
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    st = _strides(padded)
    terms = [f"c{d} * {st[d]}" for d in range(rank) if padded[d] != 1]
    return " + ".join(terms) or "0"


def _broadcasting(
    op: Operation,
    operands: list[SSAValue],
    expr: str,
    program: Program,
    desc: str,
    in_type: str = REAL,
    out_type: str = REAL,
    in_types: list[str] | None = None,
    local_type: str | None = None,
) -> KernelRun:
    """One work-item per output element: operands `a`, `b`, `c` read with numpy
    broadcasting (into variables of `local_type`, by default their buffers' types), result
    `expr` converted to `out_type`."""
    out_shape = _shape(op.results[0])
    rank = len(out_shape)
    types = in_types or [in_type] * len(operands)
    reads = []
    needs_coords = False
    for i, v in enumerate(operands):
        s = _shape(v)
        index = "gid" if s == out_shape else _broadcast_index(s, out_shape)
        needs_coords |= index != "gid"
        reads.append(f"    const {local_type or types[i]} {'abc'[i]} = x{i}[{index}];\n")
    coords = _decompose(out_shape, [f"c{d}" for d in range(rank)]) if needs_coords else ""
    body = coords + "".join(reads) + f"    y[gid] = ({out_type})({expr});\n"
    kernel = _signature(len(operands), body, types, out_type)
    return program.kernel(kernel, desc), list(operands), [_numel(out_shape)]


GPU_DEFAULT_UNITS = 64
"""Compute units assumed by `kernels=gpu` launch shapes when the lowering is not told."""


def _tiled(program: Program, act: list[str]) -> TiledKernels:
    """The register-blocked conv/GEMM kernel generator (conv_kernels.py) for one op."""
    return TiledKernels(program, act, _kernel, RESIDUAL_LOAD)


def _gpu(program: Program, act: list[str]) -> GpuKernels:
    """The `kernels=gpu` conv/GEMM/softmax kernel generator (gpu_kernels.py) for one op."""
    gpu = GpuKernels(program, act, _kernel, RESIDUAL_LOAD)
    gpu.compute_units = program.compute_units or GPU_DEFAULT_UNITS
    return gpu


def _one(run: KernelRun | None) -> Emitted | None:
    """A lowering's answer from one optional launch: `[run]`, or None (next lowering)."""
    return None if run is None else [run]
