"""max_pool2d and avg_pool2d (NHWC), float accumulation, NaN propagating through max."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import get_bool, get_ints
from irc.targets.opencl.lowerings.epilogue import compose, prelude
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    _decompose,
    _f,
    _kernel,
    _one,
    _shape,
    nan_max_update,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program

POOL_VECTORS = (8, 4, 2)
"""Channel vector widths of `kernels=cpu` pools (the widest dividing the channel count)."""


def _pool_vector(
    op: nn.MaxPool2DOp | nn.AvgPool2DOp,
    act: list[str],
    program: Program,
    desc: str,
    out_shape: tuple[int, ...],
) -> tuple[str, list[SSAValue | str], list[int]] | None:
    """A 2-D pool with one `floatVW` of channels per work-item (VW from `POOL_VECTORS`
    dividing C), or None: PoCL runs the one-value-per-work-item pool ~10x slower. Same
    semantics: NaN propagates through max (`select` on `xv > acc || isnan(xv)`), averages
    divide by the window's in-image count or its area (`count_include_pad`)."""
    n, h, w, c = _shape(op.input)
    vw = next((v for v in POOL_VECTORS if c % v == 0), 0)
    if not vw or any("RESIDUAL" in e for e in act):
        return None
    _, oh, ow, _ = out_shape
    props = op.all_properties()
    kh, kw = get_ints(props, "kernel")
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    pt, pl = get_ints(props, "pads")[:2]
    is_max = isinstance(op, nn.MaxPool2DOp)
    vec, real = f"float{vw}", f"REAL{vw}"
    blocks = c // vw
    if is_max:
        init, update, result = (
            f"({vec})(-INFINITY)",
            "acc = select(acc, xv, xv > acc || isnan(xv));",
            "acc",
        )
    else:
        # -0.0: the exact additive identity; padded taps add +0.0 (see `pool` below)
        init, update = f"({vec})(-0.0f)", "acc += xv;"
        padded = f"(cnt < {kh * kw} ? acc + ({vec})(0.0f) : acc)"
        if get_bool(props, "count_include_pad"):
            result = f"{padded} / {_f(kh * kw)}"
        else:
            result = f"{padded} / (float)cnt"
    body = (
        _decompose((n, oh, ow, blocks), ["n", "oh", "ow", "cb"])
        + f"    __global const {real}* xp = (__global const {real}*)x0;\n"
        + f"    {vec} acc = {init}; int cnt = 0;\n"
        f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
        f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n"
        f"        if (ih < 0 || ih >= {h}) continue;\n"
        f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
        f"            const int iw = ow * {sw} - {pl} + kw * {dw};\n"
        f"            if (iw < 0 || iw >= {w}) continue;\n"
        f"            const {vec} xv ="
        f" WIDEN{vw}(xp[((n * {h} + ih) * {w} + iw) * {blocks} + cb]);\n"
        f"            {update} ++cnt;\n"
        "        }\n    }\n"
        f"    {vec} v = {result};\n"
        + "".join(f"    v = {e};\n" for e in act if e != "v")
        + f"    ((__global {real}*)y)[gid] = NARROW{vw}(v);\n"
    )
    name = program.kernel(_kernel(1, body), f"{desc} (x{vw})")
    return name, [op.input], [n * oh * ow * blocks]


INSIDE_TAPS = 16
"""Windows of up to this many taps are unrolled by `_pool_inside`."""


def _pool_inside(
    op: nn.MaxPool2DOp | nn.AvgPool2DOp,
    act: list[str],
    program: Program,
    desc: str,
    out_shape: tuple[int, ...],
) -> tuple[str, list[SSAValue | str], list[int]] | None:
    """A pool whose every window lies inside the image (no padding taps: BlazeFace's and
    most CNNs' 2x2 stride-2 max pools): one output pixel per work-item, all its channel
    vectors in a loop, the taps unrolled without bounds checks (measured 2-3x faster on
    PoCL than one channel vector per work-item, whose work is a few loads). Same sums and
    maxima, in the same order, as `_pool_vector`; None when a window may leave the image."""
    n, h, w, c = _shape(op.input)
    vw = next((v for v in POOL_VECTORS if c % v == 0), 0)
    _, oh, ow, _ = out_shape
    props = op.all_properties()
    kh, kw = get_ints(props, "kernel")
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    pt, pl = get_ints(props, "pads")[:2]
    inside = (oh - 1) * sh + (kh - 1) * dh < h and (ow - 1) * sw + (kw - 1) * dw < w
    if not vw or any("RESIDUAL" in e for e in act) or pt or pl or not inside:
        return None
    if kh * kw > INSIDE_TAPS:
        return None
    is_max = isinstance(op, nn.MaxPool2DOp)
    vec, real = f"float{vw}", f"REAL{vw}"
    blocks = c // vw
    taps = [(i * dh * w + j * dw) * blocks for i in range(kh) for j in range(kw)]
    loads = [f"WIDEN{vw}(xp[{offset} + cb])" for offset in taps]
    lines = [
        f"    const int ow = gid % {ow}; const int t = gid / {ow};\n",
        f"    const int oh = t % {oh}; const int n = t / {oh};\n",
        f"    __global const {real}* xp = (__global const {real}*)x0"
        f" + ((n * {h} + oh * {sh}) * {w} + ow * {sw}) * {blocks};\n",
        f"    __global {real}* yp = (__global {real}*)y + gid * {blocks};\n",
        f"    for (int cb = 0; cb < {blocks}; ++cb) {{\n",
    ]
    if is_max:
        lines.append(f"        {vec} acc = {loads[0]};\n")
        for load in loads[1:]:
            lines.append(
                f"        {{ const {vec} xv = {load};"
                " acc = select(acc, xv, xv > acc || isnan(xv)); }\n"
            )
        lines.append(f"        {vec} v = acc;\n")
    else:  # a sum of the window from -0.0, the exact additive identity, over its area
        lines.append(f"        {vec} acc = ({vec})(-0.0f);\n")
        lines += [f"        acc += {load};\n" for load in loads]
        lines.append(f"        {vec} v = acc / {_f(kh * kw)};\n")
    lines += [f"        v = {e};\n" for e in act if e != "v"]
    lines += [f"        yp[cb] = NARROW{vw}(v);\n", "    }\n"]
    name = program.kernel(_kernel(1, "".join(lines)), f"{desc} (x{vw}, pixel per item)")
    return name, [op.input], [n * oh * ow]


@lowering(nn.MaxPool2DOp, nn.AvgPool2DOp)
def pool_vectorised(
    op: nn.MaxPool2DOp | nn.AvgPool2DOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """`kernels=cpu`: one `floatVW` of channels per work-item, or None."""
    if program.kernel_style != "cpu":
        return None
    pre = prelude(op, epilogue)
    desc, act, out_shape = pre.desc, pre.act, pre.out_shape
    inside = _pool_inside(op, act, program, desc, out_shape)
    return _one(inside or _pool_vector(op, act, program, desc, out_shape))


@lowering(nn.MaxPool2DOp, nn.AvgPool2DOp)
def pool(
    op: nn.MaxPool2DOp | nn.AvgPool2DOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """One work-item per output element."""
    pre = prelude(op, epilogue)
    desc, props, act, out_shape, n_out = pre.desc, pre.props, pre.act, pre.out_shape, pre.n_out
    n, h, w, c = _shape(op.input)
    _, oh, ow, _ = out_shape
    kh, kw = get_ints(props, "kernel")
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    pt, pl = get_ints(props, "pads")[:2]
    is_max = isinstance(op, nn.MaxPool2DOp)
    include_pad = not is_max and get_bool(props, "count_include_pad")
    # A sum starts at -0.0, the exact additive identity (+0.0 would turn a window of -0.0 into
    # +0.0); taps in the padding add +0.0, as the reference's sum over the padded input does.
    init = "float acc = -INFINITY; int cnt = 0;" if is_max else "float acc = -0.0f; int cnt = 0;"
    update = f"acc = {nan_max_update()};" if is_max else "acc += xv;"
    if is_max:
        result = "acc"
    elif include_pad:
        result = f"(cnt < {kh * kw} ? acc + 0.0f : acc) / {_f(kh * kw)}"
    else:
        result = f"(cnt < {kh * kw} ? acc + 0.0f : acc) / (float)cnt"
    body = (
        _decompose((n, oh, ow, c), ["n", "oh", "ow", "ch"]) + f"    {init}\n"
        f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
        f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n"
        f"        if (ih < 0 || ih >= {h}) continue;\n"
        f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
        f"            const int iw = ow * {sw} - {pl} + kw * {dw};\n"
        f"            if (iw < 0 || iw >= {w}) continue;\n"
        f"            const float xv = x0[((n * {h} + ih) * {w} + iw) * {c} + ch];\n"
        f"            {update} ++cnt;\n"
        "        }\n    }\n"
        f"    float v = {result};\n" + compose(act) + "    y[gid] = v;\n"
    )
    return [(program.kernel(_kernel(1, body), desc), [op.input], [n_out])]
