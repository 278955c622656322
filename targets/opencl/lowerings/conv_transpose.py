"""conv2d_transpose (groups, strides, dilations, pads, output padding), float accumulation,
with a fused epilogue (`opencl-fuse`: a following batch norm's multiply-add, activations).

With `kernels=cpu` and a constant filter, a transpose whose stride equals its kernel (DBNet's
2x2 stride-2 upsampling) is conv_kernels.py's register-tiled GEMM; otherwise one work-item per
output element: gathering the one input pixel of each tap directly in that non-overlapping
case, else every tap that lands on the output pixel.

Sums start at +0.0, as the reference's scatter-add into an array of zeros does (a -0.0 bias
starts them at `bias + 0.0f`, +0.0): unlike conv2d's, a zero sum here is never -0.0.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.dialects.nn.base import get_int, get_ints
from irc.targets.opencl.lowerings.epilogue import compose, prelude
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    KernelRun,
    _decompose,
    _dot_product,
    _kernel,
    _one,
    _shape,
    _tiled,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program


def _taps_loop(props: dict, in_shape: tuple[int, ...], filter_shape: tuple[int, ...]) -> str:
    """Statements pointing `xp` / `wp` at each (input pixel, filter tap) pair that lands on
    output pixel (oh, ow) and adding their dot product to `acc`: output pixel (oh, ow)
    gathers input pixel ih where `oh + pad_top - kh * dilation == ih * stride` (the
    reference's scatter, inverted)."""
    _, h, w, c = in_shape
    _, kh, kw, cg = filter_shape
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    pt, pl = get_ints(props, "pads")[:2]
    pixel = f"x0 + ((n * {h} + ih) * {w} + iw) * {c} + g * {cg}"
    weight = f"x1 + ((oc * {kh} + kh) * {kw} + kw) * {cg}"
    if (sh, sw) == (kh, kw) and (dh, dw) == (1, 1) and (pt, pl) == (0, 0):
        # no two taps meet: each output pixel reads exactly one (tap, input pixel), or none
        # where an output padding row lies past the input
        return (
            f"    const int ih = oh / {kh}; const int kh = oh % {kh};\n"
            f"    const int iw = ow / {kw}; const int kw = ow % {kw};\n"
            f"    if (ih < {h} && iw < {w}) {{\n"
            f"            __global const REAL* xp = {pixel};\n"
            f"            __global const REAL* wp = {weight};\n"
            + _dot_product("acc", "xp", "wp", cg)
            + "    }\n"
        )
    return (
        f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
        f"        const int th = oh + {pt} - kh * {dh};\n"
        f"        if (th < 0 || th % {sh} != 0) continue;\n"
        f"        const int ih = th / {sh};\n"
        f"        if (ih >= {h}) continue;\n"
        f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
        f"            const int tw = ow + {pl} - kw * {dw};\n"
        f"            if (tw < 0 || tw % {sw} != 0) continue;\n"
        f"            const int iw = tw / {sw};\n"
        f"            if (iw >= {w}) continue;\n"
        f"            __global const REAL* xp = {pixel};\n"
        f"            __global const REAL* wp = {weight};\n"
        + _dot_product("acc", "xp", "wp", cg)
        + "        }\n    }\n"
    )


def _conv2d_transpose(
    op: nn.Conv2DTransposeOp, epilogue: list[Operation], program: Program
) -> KernelRun:
    """One work-item per output element (NHWC / OHWI)."""
    pre = prelude(op, epilogue)
    in_shape, filter_shape = _shape(op.input), _shape(op.filter)
    ocg = filter_shape[0] // get_int(pre.props, "groups")
    body = (
        _decompose(pre.out_shape, ["n", "oh", "ow", "oc"])
        + f"    const int g = oc / {ocg};\n"
        + ("    float acc = x2[oc] + 0.0f;\n" if op.bias is not None else "    float acc = 0.0f;\n")
        + _taps_loop(pre.props, in_shape, filter_shape)
        + "    float v = acc;\n"
        + compose(pre.act)
        + "    y[gid] = v;\n"
    )
    inputs: list[SSAValue | str] = [op.input, op.filter]
    if op.bias is not None:
        inputs.append(op.bias)
    return program.kernel(_kernel(len(inputs), body), pre.desc), inputs, [pre.n_out]


@lowering(nn.Conv2DTransposeOp)
def conv2d_transpose_tiled(
    op: nn.Conv2DTransposeOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """`kernels=cpu`, constant filter, stride equal to the kernel: the register-tiled GEMM
    (conv_kernels.py), or None."""
    filt = op.filter.owner
    if program.kernel_style != "cpu" or not isinstance(filt, nn.ConstantOp):
        return None
    pre = prelude(op, epilogue)
    filter_shape = _shape(op.filter)
    weights = array_from_dense(filt.value).astype(np.float32).reshape(filter_shape)
    tiled = _tiled(program, pre.act)
    return _one(
        tiled.conv_transpose(op, weights, _shape(op.input), pre.out_shape, pre.props, pre.desc)
    )


@lowering(nn.Conv2DTransposeOp)
def conv2d_transpose(
    op: nn.Conv2DTransposeOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """One work-item per output element."""
    return [_conv2d_transpose(op, epilogue, program)]
