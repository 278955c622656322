"""nn.resize: float nearest / bilinear (`irc_resize_nearest`, `irc_resize_bilinear`, tap tables
from `resize_tables.py`) and quantized (`quant_kernels.resize_plan`: a gather of stored
values, ResizeBilinearInteger for int8, the float32 path for uint8), bit-exact with the
reference. The quantized variant comes first: an op whose result holds integers takes it.
"""

from __future__ import annotations

import numpy as np

from irc.dialects import nn
from irc.targets.cpu.lowerings.helpers import (
    block,
    c_call,
    c_float,
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
    LoweringError,
    lowering,
)
from irc.targets.cpu.quant_kernels import NativeKernelError, resize_plan


def _c_ints(name: str, ct: str, values: np.ndarray) -> str:
    return f"static const {ct} {name}[] = {{{', '.join(str(int(v)) for v in values)}}};"


@lowering(nn.ResizeOp)
def quantized_resize(op: nn.ResizeOp, ctx: LoweringContext) -> Lowered | None:
    """Quantized `nn.resize`: one call of the `resize_q` kernel of its plan, the tap tables
    static C arrays."""
    if not integer_result(op):
        return None
    try:
        plan = resize_plan(op)
    except NativeKernelError as exc:
        raise LoweringError(op, str(exc)) from None

    def floats(name: str, values: np.ndarray) -> str:
        return f"static const float {name}[] = {{{', '.join(c_float(v) for v in values)}}};"

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        x, y = em.ptr(op.input), res[0]
        geometry = (plan.images, plan.h, plan.w)
        if plan.kind == "nearest":
            decls = [_c_ints("rh", "int32_t", plan.rows[0]), _c_ints("rw", "int32_t", plan.cols[0])]
            pixel = plan.channels * dtype(op.input).itemsize
            call = c_call(
                "irc_resize_nearest_q",
                f"(const uint8_t *){x}",
                *geometry,
                pixel,
                f"(uint8_t *){y}",
                plan.oh,
                plan.ow,
                "rh",
                "rw",
            )
            return block(describe(op), decls, [call])
        (hl, hh, hw), (wl, wh, ww) = plan.rows, plan.cols
        decls = [_c_ints("hl", "int32_t", hl), _c_ints("hh", "int32_t", hh)]
        decls += [_c_ints("wl", "int32_t", wl), _c_ints("wh", "int32_t", wh)]
        if plan.kind == "bilinear_s8":
            decls += [_c_ints("hw", "int32_t", hw), _c_ints("ww", "int32_t", ww)]
        else:
            decls += [floats("hw", hw), floats("ww", ww)]
        function = (
            "irc_resize_bilinear_s8" if plan.kind == "bilinear_s8" else "irc_resize_bilinear_u8"
        )
        call = c_call(
            function,
            x,
            *geometry,
            plan.channels,
            y,
            plan.oh,
            plan.ow,
            *("hl", "hh", "hw", "wl", "wh", "ww"),
        )
        return block(describe(op), decls, [call])

    return Lowered(emit, snippets=("resize_q",))


@lowering(nn.ResizeOp)
def resize(op: nn.ResizeOp, ctx: LoweringContext) -> Lowered | None:
    """A float nearest or bilinear resize, its tap tables static C arrays (NCHW wrapped in
    transposes)."""
    if integer_result(op):
        return None
    from irc.targets.cpu.resize_tables import resize_tables  # the reference's rules: on use

    layout = op.layout.data
    x_shape, y_shape = shape(op.input), shape(op.output)
    nchw = layout == "NCHW"
    if nchw:
        n, c, h, w = x_shape
        _, _, oh, ow = y_shape
    else:
        n, h, w, c = x_shape
        _, oh, ow, _ = y_shape
    tables = resize_tables(op, h, w)
    temps = [numel(x_shape), numel(y_shape)] if nchw else []

    def ints(name: str, values: np.ndarray) -> str:
        return f"static const int {name}[] = {{{', '.join(str(int(v)) for v in values)}}};"

    def floats(name: str, values: np.ndarray) -> str:
        return f"static const float {name}[] = {{{', '.join(c_float(v) for v in values)}}};"

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        body: Lines = []
        x, y = em.ptr(op.input), res[0]
        if nchw:
            body += transpose_lines(x, tmp[0], x_shape, (0, 2, 3, 1))
            x, y = tmp[0], tmp[1]
        if op.mode.data == "nearest":
            hi, wi = tables  # nearest: (row indices, column indices)
            assert isinstance(hi, np.ndarray)
            assert isinstance(wi, np.ndarray)
            decls = [ints("hi", hi), ints("wi", wi)]
            body.append(c_call("irc_resize_nearest", x, n, h, w, c, y, oh, ow, "hi", "wi"))
        else:
            (hl, hh, hw), (wl, wh, ww) = tables
            tables_names = ("hl", "hh", "hw", "wl", "wh", "ww")
            decls = [ints("hl", hl), ints("hh", hh), floats("hw", hw)]
            decls += [ints("wl", wl), ints("wh", wh), floats("ww", ww)]
            body.append(c_call("irc_resize_bilinear", x, n, h, w, c, y, oh, ow, *tables_names))
        if nchw:
            body += transpose_lines(y, res[0], (n, oh, ow, c), (0, 3, 1, 2))
        return block(describe(op), decls, body)

    return Lowered(emit, temps, ("resize",))
