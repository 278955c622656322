"""Pools: float max_pool2d / avg_pool2d (`irc_pool2d`, the fused activation; NCHW wrapped
in transposes) and the integer form's pools (NHWC), exactly the reference's."""

from __future__ import annotations

import numpy as np

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.targets.cpu.lowerings.helpers import (
    activation_code,
    block,
    c_call,
    ctype,
    describe,
    dtype,
    integer_result,
    numel,
    shape,
    transpose_lines,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    lowering,
)


@lowering(nn.MaxPool2DOp, nn.AvgPool2DOp)
def integer_pool(op: nn.MaxPool2DOp | nn.AvgPool2DOp, ctx: LoweringContext) -> Lowered | None:
    """The integer form's pools (NHWC), exactly the reference's (`irc_pool2d_<type>`)."""
    if not integer_result(op):
        return None
    props = op.all_properties()
    is_max = isinstance(op, nn.MaxPool2DOp)
    kh, kw = ints_of(props["kernel"])
    sh, sw = ints_of(props["strides"])
    dh, dw = ints_of(props["dilations"])
    pt, pl, _, _ = ints_of(props["pads"])
    include_pad = 0 if is_max else int(bool(op.count_include_pad.value.data))
    (n, h, w, c), (_, oh, ow, _) = shape(op.input), shape(op.output)
    ct = ctype(op.input)
    lowest = int(np.iinfo(dtype(op.input)).min)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        args = (int(is_max), em.ptr(op.input), n, h, w, c, res[0], oh, ow)
        args += (kh, kw, sh, sw, dh, dw, pt, pl, include_pad, f"{lowest}LL")
        return block(describe(op), [], [c_call(f"irc_pool2d_{ct}", *args)])

    return Lowered(emit, snippets=("pool_int",))


@lowering(nn.MaxPool2DOp, nn.AvgPool2DOp)
def pool(op: nn.MaxPool2DOp | nn.AvgPool2DOp, ctx: LoweringContext) -> Lowered | None:
    """A float max or average pool (`irc_pool2d`; NCHW wrapped in transposes)."""
    if integer_result(op):
        return None
    is_max = isinstance(op, nn.MaxPool2DOp)
    props = op.all_properties()
    layout = op.layout.data
    kh, kw = ints_of(props["kernel"])
    sh, sw = ints_of(props["strides"])
    dh, dw = ints_of(props["dilations"])
    pt, pl, _, _ = ints_of(props["pads"])
    include_pad = 0 if is_max else int(bool(op.count_include_pad.value.data))
    act = activation_code(op)
    x_shape, y_shape = shape(op.input), shape(op.output)
    nchw = layout == "NCHW"
    if nchw:
        n, c, h, w = x_shape
        _, _, oh, ow = y_shape
    else:
        n, h, w, c = x_shape
        _, oh, ow, _ = y_shape
    temps = [numel(x_shape), numel(y_shape)] if nchw else []

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        body: Lines = []
        x, y = em.ptr(op.input), res[0]
        if nchw:
            body += transpose_lines(x, tmp[0], x_shape, (0, 2, 3, 1))
            x, y = tmp[0], tmp[1]
        window = (kh, kw, sh, sw, dh, dw, pt, pl)
        body.append(
            c_call("irc_pool2d", int(is_max), x, n, h, w, c, y, oh, ow, *window, include_pad, act)
        )
        if nchw:
            body += transpose_lines(y, res[0], (n, oh, ow, c), (0, 3, 1, 2))
        return block(describe(op), [], body)

    return Lowered(emit, temps, ("pool2d",))
