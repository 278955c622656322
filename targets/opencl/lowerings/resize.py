"""resize, nearest and bilinear, every coordinate mode: the sampling tables are computed at
lowering with the reference target's own functions (float32 tables in either precision).

With `kernels=cpu` and a channel count divisible by 2, one work-item per output row copies
(nearest) or interpolates (bilinear) whole pixels as channel vectors (`VECTOR_WIDTHS`);
otherwise one work-item per output element."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import get_floats, get_str
from irc.targets.opencl.lowerings.helpers import (
    REAL,
    Emitted,
    KernelRun,
    LoweringError,
    _ctype,
    _decompose,
    _describe,
    _numel,
    _shape,
    _signature,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program
from irc.targets.reference.shape import _linear_taps, _nearest_indices, _source_coordinates


def _resize(op: nn.ResizeOp, program: Program, desc: str) -> KernelRun:
    """Sampling tables computed at lowering by the reference target's functions (one
    definition of every coordinate and rounding mode): nearest reads `[ih..., iw...]`,
    bilinear `[low_h, high_h, weight_h]` rows then the same for w; the lerp order is the
    reference's (along h, then w)."""
    props = op.all_properties()
    n, h, w, c = _shape(op.input)
    _, oh, ow, _ = _shape(op.output)
    scales = get_floats(props, "scales")
    coordinate_mode = get_str(props, "coordinate_mode")
    mode = get_str(props, "mode")
    ct = _ctype(op.output)
    if mode == "bilinear" and ct != REAL:
        # TFLite interpolates stored integers in fixed point; insert-qdq gives this target
        # the float form instead
        raise LoweringError(op, "bilinear resize on quantized storage (run insert-qdq)")
    tables = []
    for i, (out_len, in_len) in enumerate(((oh, h), (ow, w))):
        scale = (
            np.float32(out_len) / np.float32(in_len) if scales is None else np.float32(scales[i])
        )
        coords = _source_coordinates(out_len, in_len, scale, coordinate_mode)
        if mode == "nearest":
            tables.append(_nearest_indices(coords, in_len, get_str(props, "nearest_mode")))
        else:
            low, high, weight = _linear_taps(coords, in_len)
            tables.append(np.stack([low, high, weight]).astype(np.float32))
    head = _decompose((n, oh, ow, c), ["n", "oh", "ow", "ch"])
    pixel = f"(n * {h} + (HH)) * {w} + (WW)"
    if mode == "nearest":
        table = np.concatenate([t.astype(np.float32) for t in tables])
        body = (
            head
            + f"    const int ih = (int)x1[oh]; const int iw = (int)x1[{oh} + ow];\n"
            + f"    y[gid] = x0[({pixel.replace('HH', 'ih').replace('WW', 'iw')}) * {c} + ch];\n"
        )
    else:
        table = np.concatenate([tables[0].ravel(), tables[1].ravel()])

        def at(hh: str, ww: str) -> str:
            return f"x0[({pixel.replace('HH', hh).replace('WW', ww)}) * {c} + ch]"

        body = (
            head + f"    const int lh = (int)x1[oh]; const int hh = (int)x1[{oh} + oh];"
            f" const float wh = x1[{2 * oh} + oh];\n"
            + f"    __global const float* tw = x1 + {3 * oh};\n"
            + f"    const int lw = (int)tw[ow]; const int hw = (int)tw[{ow} + ow];"
            f" const float ww = tw[{2 * ow} + ow];\n"
            + f"    const float a0 = {at('lh', 'lw')}, b0 = {at('hh', 'lw')};\n"
            + f"    const float a1 = {at('lh', 'hw')}, b1 = {at('hh', 'hw')};\n"
            + "    const float t0 = a0 + (b0 - a0) * wh; const float t1 = a1 + (b1 - a1) * wh;\n"
            + "    y[gid] = t0 + (t1 - t0) * ww;\n"
        )
    inputs: list[SSAValue | str] = [op.input, program.constant(table, table=True)]
    vw = next((width for width in VECTOR_WIDTHS if c % width == 0), 0)
    if program.kernel_style == "cpu" and vw:
        body = _row_body(mode, (n, h, w, c), (oh, ow), vw, ct)
        kernel = _signature(2, body, [ct, "float"], ct)
        return program.kernel(kernel, f"{desc} (rows x{vw})"), inputs, [n * oh]
    kernel = _signature(2, body, [ct, "float"], ct)
    return program.kernel(kernel, desc), inputs, [_numel((n, oh, ow, c))]


VECTOR_WIDTHS = (16, 8, 4, 2)
"""Channel vector widths of the row kernels, widest first."""


def _row_body(
    mode: str, in_shape: tuple[int, int, int, int], out_size: tuple[int, int], vw: int, ct: str
) -> str:
    """One output row (`gid` = n * OH + oh) per work-item, pixels as `VW`-channel vectors:
    nearest copies the source pixel's vectors; bilinear lerps the four taps along h, then
    w, in the per-element kernel's order and arithmetic."""
    _, h, w, c = in_shape
    oh, ow = out_size
    blocks = c // vw
    vec = f"{ct}{vw}" if ct != REAL else f"REAL{vw}"
    lines = [
        f"    const int oh = gid % {oh}; const int n = gid / {oh};\n",
        f"    __global const {vec}* src = (__global const {vec}*)x0 + n * {h * w * blocks};\n",
        f"    __global {vec}* dst = (__global {vec}*)y + gid * {ow * blocks};\n",
    ]
    if mode == "nearest":
        lines += [
            f"    __global const {vec}* row = src + (int)x1[oh] * {w * blocks};\n",
            f"    for (int ow = 0; ow < {ow}; ++ow) {{\n",
            f"        __global const {vec}* pixel = row + (int)x1[{oh} + ow] * {blocks};\n",
            f"        for (int j = 0; j < {blocks}; ++j) dst[ow * {blocks} + j] = pixel[j];\n",
            "    }\n",
        ]
        return "".join(lines)
    fv = f"float{vw}"
    lines += [
        f"    __global const {vec}* lo = src + (int)x1[oh] * {w * blocks};\n",
        f"    __global const {vec}* hi = src + (int)x1[{oh} + oh] * {w * blocks};\n",
        f"    const float wh = x1[{2 * oh} + oh];\n",
        f"    __global const float* tw = x1 + {3 * oh};\n",
        f"    for (int ow = 0; ow < {ow}; ++ow) {{\n",
        f"        const int lw = (int)tw[ow] * {blocks}; const int hw = (int)tw[{ow} + ow]"
        f" * {blocks}; const float ww = tw[{2 * ow} + ow];\n",
        f"        for (int j = 0; j < {blocks}; ++j) {{\n",
        f"            const {fv} a0 = WIDEN{vw}(lo[lw + j]), b0 = WIDEN{vw}(hi[lw + j]);\n",
        f"            const {fv} a1 = WIDEN{vw}(lo[hw + j]), b1 = WIDEN{vw}(hi[hw + j]);\n",
        f"            const {fv} t0 = a0 + (b0 - a0) * wh; const {fv} t1 = a1 + (b1 - a1) * wh;\n",
        f"            dst[ow * {blocks} + j] = NARROW{vw}(t0 + (t1 - t0) * ww);\n",
        "        }\n    }\n",
    ]
    return "".join(lines)


@lowering(nn.ResizeOp)
def resize(op: nn.ResizeOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per output element."""
    return [_resize(op, program, _describe(op))]
