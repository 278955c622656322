"""quant.dcast and quant.qcast on 8-bit storage (char/uchar buffers), bit-exact with the
reference kernels."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.dialects import quant
from irc.dialects.quant import UniformQuantizedType
from irc.targets.opencl.lowerings.helpers import (
    REAL,
    Emitted,
    _ctype,
    _describe,
    _kernel,
    _numel,
    _quant_params,
    _shape,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program


def _dcast(op: quant.DCastOp, program: Program, desc: str) -> tuple[str, list, list[int]]:
    """Dequantize through a float table built at lowering: `table[ch][q - qmin]` holds
    `float32(scale[ch] * (q - zp[ch]))` computed in double, the reference kernel's formula, for
    every stored 8-bit value, so the kernel is bit-exact with it."""
    shape = _shape(op.input)
    element = op.input.type.element_type  # type: ignore[union-attr]  # nn op operands and results are TensorTypes (their operand/result definitions)
    assert isinstance(element, UniformQuantizedType)
    ct = _ctype(op.input)
    channels, inner, _ = _quant_params(element, shape)
    qmin = -128 if ct == "char" else 0
    stored = np.arange(qmin, qmin + 256, dtype=np.int64)
    scales = np.array(element.scale_values, np.float64)
    zps = np.array(element.zero_point_values, np.int64)
    if channels == 1:
        scales, zps = scales[:1], zps[:1]
    n = _numel(shape)
    if channels == 1 and n % CAST_VECTOR == 0 and program.kernel_style == "cpu":
        # The table's formula, 16 values per work-item: the double product of one multiply is
        # correctly rounded whatever the build options, then rounded once to float.
        vt, ft = f"{ct}{CAST_VECTOR}", f"REAL{CAST_VECTOR}"
        body = (
            f"    const double{CAST_VECTOR} q = convert_double{CAST_VECTOR}("
            f"convert_int{CAST_VECTOR}(x0[gid]) - {int(zps[0])});\n"
            f"    y[gid] = convert_{ft}(q * {float(scales[0])!r});\n"
        )
        return program.kernel(_kernel(1, body, vt, ft), desc), [op.input], [n // CAST_VECTOR]
    table = (scales[:, None] * (stored[None, :] - zps[:, None])).astype(np.float32)
    table_name = program.constant(table, table=True)
    index = f"(int)x0[gid] - ({qmin})"
    if channels > 1:
        index = f"((gid / {inner}) % {channels}) * 256 + {index}"
    body = f"    y[gid] = x1[{index}];\n"
    kernel = _kernel(2, body, ct, REAL).replace(
        f"__global const {ct}* restrict x1", "__global const float* restrict x1"
    )
    return program.kernel(kernel, desc), [op.input, table_name], [_numel(shape)]


def _qcast(op: quant.QCastOp, program: Program, desc: str) -> tuple[str, list, list[int]]:
    """`clamp(round(x / scale) + zp)` as the reference kernel: the division in float32 (done
    in double and rounded once to float, so `-cl-fast-relaxed-math` cannot make it
    inexact), then rounding half away from zero via floor(|v|) + (frac >= 0.5) with the sign,
    or half to even (rint); saturation to the storage range."""
    shape = _shape(op.output)
    element = op.output.type.element_type
    assert isinstance(element, UniformQuantizedType)
    ct = _ctype(op.output)
    channels, inner, _ = _quant_params(element, shape)
    low, high = element.storage_range
    scales = np.array(element.scale_values, np.float32)
    zps = np.array(element.zero_point_values, np.int64)
    inputs: list[SSAValue | str] = [op.input]
    if channels == 1:
        params = f"    const double s = {float(scales[0])!r}; const int zp = {int(zps[0])};\n"
    else:
        packed = np.stack([scales.astype(np.float32), zps.astype(np.float32)], axis=1)
        inputs.append(program.constant(packed, table=True))
        params = (
            f"    const int ch = (gid / {inner}) % {channels};\n"
            "    const double s = (double)x1[2 * ch]; const int zp = (int)x1[2 * ch + 1];\n"
        )
    n = _numel(shape)
    if channels == 1 and n % CAST_VECTOR == 0 and program.kernel_style == "cpu":
        return _qcast_vector(op, program, desc, float(scales[0]), int(zps[0]), (low, high), n)
    if op.rounding.data == "half_to_even":
        rounding = "    const float r = rint(v);\n"
    else:
        rounding = (
            "    const float m = fabs(v); float w = floor(m);\n"
            "    if (m - w >= 0.5f) w += 1.0f;\n"
            "    const float r = copysign(w, v);\n"
        )
    body = (
        params
        + "    const float v = (float)((double)x0[gid] / s);\n"
        + rounding
        + "    const float c = isnan(r) ? 0.0f : fmin(fmax(r, (float)("
        + f"{low} - zp)), (float)({high} - zp));\n"
        + f"    y[gid] = ({ct})((int)c + zp);\n"
    )
    kernel = _kernel(len(inputs), body, REAL, ct).replace(
        "__global const REAL* restrict x1", "__global const float* restrict x1"
    )
    return program.kernel(kernel, desc), inputs, [_numel(shape)]


CAST_VECTOR = 16
"""Values per work-item of the per-tensor qcast / dcast kernels with `kernels=cpu` (when the
element count allows): PoCL runs one-value work-items of these 8-bit casts ~15x slower than
`float16` vectors. `kernels=gpu` keeps one value per work-item (a GPU wants the work-items)."""


def _qcast_vector(
    op: quant.QCastOp,
    program: Program,
    desc: str,
    scale: float,
    zp: int,
    storage: tuple[int, int],
    n: int,
) -> tuple[str, list, list[int]]:
    """`_qcast`'s arithmetic on 16 values per work-item (per-tensor parameters): the same
    double division rounded once to float, the same rounding and saturation, lane by lane."""
    w = CAST_VECTOR
    ct = _ctype(op.output)
    low, high = storage
    if op.rounding.data == "half_to_even":
        rounding = f"    const float{w} r = rint(v);\n"
    else:
        rounding = (
            f"    const float{w} m = fabs(v); const float{w} f = floor(m);\n"
            f"    const float{w} r = copysign(f + select((float{w})(0.0f), (float{w})(1.0f),"
            " m - f >= 0.5f), v);\n"
        )
    body = (
        f"    const float{w} v = convert_float{w}(convert_double{w}(x0[gid]) / {scale!r});\n"
        + rounding
        + f"    const float{w} c = select(fmin(fmax(r, (float{w})({float(low - zp)!r}f)),"
        f" (float{w})({float(high - zp)!r}f)), (float{w})(0.0f), isnan(r));\n"
        f"    y[gid] = convert_{ct}{w}(convert_int{w}(c) + {zp});\n"
    )
    kernel = _kernel(1, body, f"REAL{w}", f"{ct}{w}")
    return program.kernel(kernel, desc), [op.input], [n // w]


@lowering(quant.DCastOp)
def dcast(op: quant.DCastOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """Through a float table (16 values per work-item with `kernels=cpu` when per-tensor)."""
    return [_dcast(op, program, _describe(op))]


@lowering(quant.QCastOp)
def qcast(op: quant.QCastOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """Divide, round and saturate as the reference."""
    return [_qcast(op, program, _describe(op))]
