"""Convolutions and matrix products: float conv2d (register-blocked implicit GEMM,
depthwise, pointwise as one row of pixels; NCHW wrapped in transposes; constant filters
packed at compile time into the layout their kernel reads, others at run time), float
fully_connected and batch_matmul, and the integer form's conv2d / fully_connected
(accumulating exactly in int32: `irc_conv2d_i32`, `irc_depthwise_i32`, inputs widened to
int32 and zero-padded in the workspace, constant filters packed to int32).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.targets.cpu import packing
from irc.targets.cpu.lowerings.helpers import (
    activation_code,
    block,
    broadcast_strides,
    c_call,
    ctype,
    describe,
    integer_result,
    loop_nest,
    numel,
    parallel,
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

CONV_WINDOW_FLOATS = 2048
"""kernels/common/conv2d.c's IRC_CONV_WINDOW_FLOATS: the floats of the zero-padded input
window that a task of `irc_conv2d_pad` copies for itself."""

WINDOW_MAX_CHANNELS = 4
"""Input channels up to which a padded conv reads its input through `irc_conv2d_pad`'s
per-task windows instead of a padded copy of the whole input (an image's first conv: the
copy is a pass over memory about as long as the conv's own work; MobileNetV2's 3x3/2 RGB
conv 0.93-0.96x the time, 1 thread, Xeon @ 2.50GHz avx512vnni)."""


def windowed_padding(c: int, kh: int, kw: int, stride_w: int, dilation_w: int) -> bool:
    """Whether a padded, non-depthwise conv of `c` input channels pads through
    `irc_conv2d_pad`'s windows: few channels, and the window of a tile of 8 pixels fits."""
    tile = kh * (7 * stride_w + (kw - 1) * dilation_w + 1) * c
    return c <= WINDOW_MAX_CHANNELS and tile <= CONV_WINDOW_FLOATS


def _widened_input(
    value: SSAValue, pads: Sequence[int], temps: list[int]
) -> Callable[[Emitter, list[str]], tuple[Lines, str]]:
    """Code giving `value` (NHWC, any integer type) as int32, zero-padded by
    `pads` = (top, left, bottom, right): in place when it already is, else in a temp."""
    dims = shape(value)
    n, h, w, c = dims
    pt, pl, pb, pr = pads
    hp, wp = h + pt + pb, w + pl + pr
    if ctype(value) == "int32_t" and not any(pads):
        return lambda em, tmp: ([], em.ptr(value))
    slot = len(temps)
    temps.append(n * hp * wp * c)

    def emit(em: Emitter, tmp: list[str]) -> tuple[Lines, str]:
        dst = f"((int32_t *){tmp[slot]})"
        lines = [
            f"memset({dst}, 0, sizeof(int32_t) * {n * hp * wp * c});",
            *parallel([n * h, w * c], []),
            f"for (long i = 0; i < {n * h}; ++i)",
            f"  for (long j = 0; j < {w * c}; ++j)",
            f"    {dst}[((i / {h} * {hp} + i % {h} + {pt}) * {wp} + {pl}) * {c} + j] = "
            f"(int32_t){em.ptr(value)}[i * {w * c} + j];",
        ]
        return lines, dst

    return emit


def _integer_bias(em: Emitter, bias: SSAValue | None) -> str:
    return "NULL" if bias is None else em.ptr(bias)


@lowering(nn.Conv2DOp)
def integer_conv2d(op: nn.Conv2DOp, ctx: LoweringContext) -> Lowered | None:
    """The integer form's conv2d: exact int32 accumulation, the filter constant."""
    if not integer_result(op):
        return None
    props = op.all_properties()
    groups = op.groups.value.data
    sh, sw = ints_of(props["strides"])
    dh, dw = ints_of(props["dilations"])
    pads = ints_of(props["pads"])
    pt, pl, pb, pr = pads
    (n, h, w, c), (oc, kh, kw, cg) = shape(op.input), shape(op.filter)
    _, oh, ow, _ = shape(op.output)
    ocg = oc // groups
    hp, wp = h + pt + pb, w + pl + pr
    depthwise = groups > 1 and groups == c and oc == c
    if ctx.codegen.constant_array(op.filter) is None:
        raise LoweringError(op, "integer conv2d needs a constant filter")
    temps: list[int] = []
    widen = _widened_input(op.input, pads, temps)

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        body, x = widen(em, tmp)
        if depthwise:
            wk = em.packed(
                op.filter,
                "depthwise_filter_i32 [KH][KW][C]",
                lambda a: packing.pack_depthwise(a, np.int32),
            )
            args = (x, n, hp, wp, c, f"(const int32_t *){wk}")
            args += (_integer_bias(em, op.bias), res[0], oh, ow, kh, kw, sh, sw, dh, dw)
            body.append(c_call("irc_depthwise_i32", *args))
        else:
            wk = em.packed(
                op.filter,
                "conv2d_filter_i32 [G][OCg/16][KH][KW][Cg][16]",
                lambda a: packing.pack_filter(a, groups, 1, np.int32),
            )
            args = (x, n, hp, wp, c, f"(const int32_t *){wk}")
            args += (_integer_bias(em, op.bias), res[0], oh, ow, oc, kh, kw)
            body.append(c_call("irc_conv2d_i32", *args, sh, sw, dh, dw, groups, cg, ocg))
        return block(describe(op), [], body)

    return Lowered(emit, temps, ("conv_int",))


@lowering(nn.FullyConnectedOp)
def integer_fully_connected(op: nn.FullyConnectedOp, ctx: LoweringContext) -> Lowered | None:
    """The integer form's fully_connected: `irc_conv2d_i32` on one row, constant weights."""
    if not integer_result(op):
        return None
    x_shape, (oc, k) = shape(op.input), shape(op.weights)
    m = numel(x_shape[:-1])
    if ctx.codegen.constant_array(op.weights) is None:
        raise LoweringError(op, "integer fully_connected needs constant weights")
    temps = [] if ctype(op.input) == "int32_t" else [m * k]

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        if ctype(op.input) == "int32_t":
            body: Lines = []
            x = em.ptr(op.input)
        else:
            body, x = [], f"((int32_t *){tmp[0]})"
            body += loop_nest(
                [m * k],
                [(0, [1])],
                lambda ix: [f"{x}[{ix[0]}] = (int32_t){em.ptr(op.input)}[{ix[0]}];"],
            )
        wk = em.packed(
            op.weights,
            "conv2d_filter_i32 [1][N/16][1][1][K][16]",
            lambda a: packing.pack_filter(a.reshape(oc, 1, 1, k), 1, 1, np.int32),
        )
        if m:
            args = (x, 1, 1, m, k, f"(const int32_t *){wk}", _integer_bias(em, op.bias))
            args += (res[0], 1, m, oc, 1, 1, 1, 1, 1, 1, 1, k, oc)
            body.append(c_call("irc_conv2d_i32", *args))
        return block(describe(op), [], body)

    return Lowered(emit, temps, ("conv_int",))


def _bias(ctx: LoweringContext, em: Emitter, bias: SSAValue | None) -> str:
    """The bias pointer; NULL when there is none or it is a constant of -0.0 only (adding
    it changes no sum). A +0.0 bias is added, as the reference does: it turns a depthwise
    conv's zero sum of -0.0 products (-0.0, its sums start there) into +0.0."""
    if bias is None:
        return "NULL"
    values = ctx.codegen.constant_array(ctx.codegen.base(bias))
    if (
        values is not None
        and values.dtype.kind == "f"
        and np.all(np.signbit(values) & (values == 0))
    ):
        return "NULL"
    return em.ptr(bias)


@lowering(nn.Conv2DOp)
def float_conv2d(op: nn.Conv2DOp, ctx: LoweringContext) -> Lowered | None:
    """A float conv2d (`conv2d`)."""
    return None if integer_result(op) else conv2d(op, ctx)


def conv2d(
    op: nn.Conv2DOp, ctx: LoweringContext, residual: tuple[SSAValue, int] | None = None
) -> Lowered:
    """A float conv2d; with `residual` = (value, activation code) the result is
    act(conv + value) (a residual add fused into the epilogue: `residual_adds`)."""
    props = op.all_properties()
    layout = op.layout.data
    groups = op.groups.value.data
    strides = ints_of(props["strides"])
    dilations = ints_of(props["dilations"])
    pt, pl, pb, pr = ints_of(props["pads"])
    act = activation_code(op)
    x_shape, w_shape, y_shape = shape(op.input), shape(op.filter), shape(op.output)
    if layout == "NCHW":
        n, c, h, w = x_shape
        oc, cg, kh, kw = w_shape
        _, _, oh, ow = y_shape
    else:
        n, h, w, c = x_shape
        oc, kh, kw, cg = w_shape
        _, oh, ow, _ = y_shape
    ocg = oc // groups
    hp, wp = h + pt + pb, w + pl + pr
    depthwise = groups > 1 and groups == c and oc == c
    pointwise = kh == kw == 1 and tuple(strides) == (1, 1) and not (pt or pl or pb or pr)
    nv = packing.float_vectors_per_block(ocg)
    filter_const = ctx.codegen.constant_array(op.filter) is not None

    temps: list[int] = []
    slots: dict[str, int] = {}

    def temp(name: str, size: int) -> None:
        slots[name] = len(temps)
        temps.append(size)

    if layout == "NCHW":
        temp("x_nhwc", numel(x_shape))
        temp("y_nhwc", numel(y_shape))
        if not filter_const:
            temp("w_ohwi", numel(w_shape))
    padded = bool(pt or pl or pb or pr) and not depthwise  # depthwise pads implicitly
    windowed = padded and windowed_padding(c, kh, kw, strides[1], dilations[1])
    if padded and not windowed:
        temp("padded", n * hp * wp * c)
    if not filter_const:
        temp(
            "w_packed",
            kh * kw * c if depthwise else packing.packed_filter_size(oc, kh, kw, cg, groups, nv),
        )

    def ohwi(array: np.ndarray) -> np.ndarray:
        return array.transpose(0, 2, 3, 1) if layout == "NCHW" else array

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        body: Lines = []
        x, y = em.ptr(op.input), res[0]
        if layout == "NCHW":
            body += transpose_lines(x, tmp[slots["x_nhwc"]], x_shape, (0, 2, 3, 1))
            x, y = tmp[slots["x_nhwc"]], tmp[slots["y_nhwc"]]
        if "padded" in slots:
            body.append(c_call("irc_pad_nhwc", tmp[slots["padded"]], x, n, h, w, c, pt, pl, pb, pr))
            x = tmp[slots["padded"]]
        if filter_const:
            if depthwise:
                wk = em.packed(
                    op.filter,
                    "depthwise_filter [KH][KW][C]",
                    lambda a: packing.pack_depthwise(ohwi(a)),
                )
            else:
                wk = em.packed(
                    op.filter,
                    f"conv2d_filter [G][OCg/{16 * nv}][KH][KW][Cg][{16 * nv}]",
                    lambda a: packing.pack_filter(ohwi(a), groups, nv),
                )
        else:
            src = em.ptr(op.filter)
            if layout == "NCHW":
                body += transpose_lines(src, tmp[slots["w_ohwi"]], w_shape, (0, 2, 3, 1))
                src = tmp[slots["w_ohwi"]]
            wk = tmp[slots["w_packed"]]
            if depthwise:
                body += transpose_lines(src, wk, (c, kh, kw), (1, 2, 0))
            else:
                body.append(c_call("irc_pack_filter", wk, src, groups, ocg, kh, kw, cg, 16 * nv))
        bias = _bias(ctx, em, op.bias)
        sh, sw = strides
        dh, dw = dilations
        extra = ("NULL", 0) if residual is None else (em.ptr(residual[0]), residual[1])
        if depthwise:
            body.append(
                c_call(
                    "irc_depthwise",
                    *(x, n, h, w, c, wk, bias, y, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, act),
                )
            )
        elif windowed:
            pads = (pt, pl, pb, pr)
            geometry = (n, h, w, c, *pads, wk, bias, y, oh, ow, oc, kh, kw, sh, sw, dh, dw)
            body.append(c_call("irc_conv2d_pad", nv, x, *geometry, groups, cg, ocg, act, *extra))
        elif pointwise:
            m = n * h * w
            geometry = (1, 1, m, c, wk, bias, y, 1, m, oc, 1, 1, 1, 1, 1, 1)
            body.append(c_call("irc_conv2d", nv, x, *geometry, groups, cg, ocg, act, *extra))
        else:
            geometry = (n, hp, wp, c, wk, bias, y, oh, ow, oc, kh, kw, sh, sw, dh, dw)
            body.append(c_call("irc_conv2d", nv, x, *geometry, groups, cg, ocg, act, *extra))
        if layout == "NCHW":
            body += transpose_lines(y, res[0], (n, oh, ow, oc), (0, 3, 1, 2))
        return block(describe(op), [], body)

    snippets = ["depthwise" if depthwise else "conv2d"]
    if "padded" in slots:
        snippets.append("pad_nhwc")
    if not filter_const and not depthwise:
        snippets.append("pack_filter")
    return Lowered(emit, temps, tuple(snippets))


@lowering(nn.FullyConnectedOp)
def fully_connected(op: nn.FullyConnectedOp, ctx: LoweringContext) -> Lowered | None:
    """A float fully_connected: `irc_conv2d` on one row of pixels."""
    if integer_result(op):
        return None
    x_shape, (oc, k) = shape(op.input), shape(op.weights)
    m = numel(x_shape[:-1])
    nv = packing.float_vectors_per_block(oc)
    weights_const = ctx.codegen.constant_array(op.weights) is not None
    act = activation_code(op)
    temps = [] if weights_const else [packing.packed_filter_size(oc, 1, 1, k, 1, nv)]

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        body: Lines = []
        if weights_const:
            wk = em.packed(
                op.weights,
                f"conv2d_filter [1][N/{16 * nv}][1][1][K][{16 * nv}]",
                lambda a: packing.pack_filter(a.reshape(oc, 1, 1, k), 1, nv),
            )
        else:
            wk = tmp[0]
            body.append(c_call("irc_pack_filter", wk, em.ptr(op.weights), 1, oc, 1, 1, k, 16 * nv))
        bias = _bias(ctx, em, op.bias)
        if m:
            geometry = (1, 1, m, k, wk, bias, res[0], 1, m, oc, 1, 1, 1, 1, 1, 1)
            args = (nv, em.ptr(op.input), *geometry, 1, k, oc, act, "NULL", 0)
            body.append(c_call("irc_conv2d", *args))
        return block(describe(op), [], body)

    snippets = ("conv2d",) if weights_const else ("conv2d", "pack_filter")
    return Lowered(emit, temps, snippets)


def _batch_offsets(dims: Sequence[int], batch: Sequence[int]) -> list[int]:
    """Element offset of each matrix of a `dims` operand at every index of the broadcast
    `batch` shape (row-major order)."""
    matrix = dims[-2] * dims[-1]
    own = dims[:-2]
    strides = broadcast_strides(own, batch) if batch else []
    strides = [s * matrix for s in strides]
    offsets = [0]
    for size, stride in zip(batch, strides, strict=True):
        offsets = [o + i * stride for o in offsets for i in range(size)]
    return offsets


@lowering(nn.BatchMatmulOp)
def batch_matmul(op: nn.BatchMatmulOp, ctx: LoweringContext) -> Lowered | None:
    """float32 `nn.batch_matmul` (numpy broadcasting of the batch dimensions, adj_x /
    adj_y as strides): per output batch the offsets of its operands, then one loop nest
    (`irc_batch_matmul`)."""
    if integer_result(op):
        return None
    x_shape, y_shape, z_shape = shape(op.lhs), shape(op.rhs), shape(op.output)
    adj_x, adj_y = op.adj_x.value.data, op.adj_y.value.data
    batch = z_shape[:-2]
    m, n = z_shape[-2], z_shape[-1]
    k = x_shape[-2] if adj_x else x_shape[-1]
    # element strides of (m, k) in x and (k, n) in y; transposes swap them
    xsm, xsk = (1, m) if adj_x else (k, 1)
    ysk, ysn = (1, k) if adj_y else (n, 1)
    x_offsets = _batch_offsets(x_shape, batch)
    y_offsets = _batch_offsets(y_shape, batch)

    def longs(name: str, values: Sequence[int]) -> str:
        return f"static const long {name}[] = {{{', '.join(map(str, values)) or '0'}}};"

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [longs("xo", x_offsets), longs("yo", y_offsets)]
        if not numel(z_shape):
            return block(describe(op), [], [])
        call = c_call(
            "irc_batch_matmul",
            em.ptr(op.lhs),
            em.ptr(op.rhs),
            res[0],
            len(x_offsets),
            m,
            k,
            n,
            "xo",
            "yo",
            xsm,
            xsk,
            ysk,
            ysn,
        )
        return block(describe(op), decls, [call])

    return Lowered(emit, snippets=("batch_matmul",))
