"""conv2d_transpose (groups, strides, dilations, pads, output padding), float accumulation."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import get_int, get_ints
from irc.targets.opencl.lowerings.epilogue import _activations, compose
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    KernelRun,
    _decompose,
    _describe,
    _dot_product,
    _kernel,
    _numel,
    _shape,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program


def _conv2d_transpose(
    op: nn.Conv2DTransposeOp, epilogue: list[Operation], program: Program, desc: str
) -> KernelRun:
    """NHWC / OHWI: output pixel (oh, ow) gathers input pixel ih where
    `oh + pad_top - kh * dilation == ih * stride` (the scatter of the reference, inverted)."""
    props = op.all_properties()
    _, h, w, c = _shape(op.input)
    oc, kh, kw, cg = _shape(op.filter)
    out_shape = _shape(op.output)
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    pt, pl = get_ints(props, "pads")[:2]
    groups = get_int(props, "groups")
    ocg = oc // groups
    has_bias = op.bias is not None
    body = (
        _decompose(out_shape, ["n", "oh", "ow", "oc"])
        + f"    const int g = oc / {ocg};\n"
        + ("    float acc = x2[oc];\n" if has_bias else "    float acc = 0.0f;\n")
        + f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
        f"        const int th = oh + {pt} - kh * {dh};\n"
        f"        if (th < 0 || th % {sh} != 0) continue;\n"
        f"        const int ih = th / {sh};\n"
        f"        if (ih >= {h}) continue;\n"
        f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
        f"            const int tw = ow + {pl} - kw * {dw};\n"
        f"            if (tw < 0 || tw % {sw} != 0) continue;\n"
        f"            const int iw = tw / {sw};\n"
        f"            if (iw >= {w}) continue;\n"
        f"            __global const REAL* xp = x0 + ((n * {h} + ih) * {w} + iw) * {c}"
        f" + g * {cg};\n"
        f"            __global const REAL* wp = x1 + ((oc * {kh} + kh) * {kw} + kw) * {cg};\n"
        + _dot_product("acc", "xp", "wp", cg)
        + "        }\n    }\n    float v = acc;\n"
        + compose(_activations(op, epilogue))
        + "    y[gid] = v;\n"
    )
    inputs: list[SSAValue | str] = [op.input, op.filter]
    if op.bias is not None:
        inputs.append(op.bias)
    return program.kernel(_kernel(len(inputs), body), desc), inputs, [_numel(out_shape)]


@lowering(nn.Conv2DTransposeOp)
def conv2d_transpose(
    op: nn.Conv2DTransposeOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """One work-item per output element."""
    return [_conv2d_transpose(op, epilogue, program, _describe(op))]
