"""Reference kernels for convolution, matrix products, pooling and batch normalisation.

These kernels define what the `nn` ops in `irc.dialects.nn.conv` compute; every other target
is tested against them. All are vectorised numpy: a convolution is one im2col copy plus one
(batched) GEMM, a depthwise convolution one broadcast multiply-accumulate per kernel tap, a
transposed convolution one GEMM plus one strided scatter-add per kernel tap, and a pool one
strided max or add per kernel tap (a sliding-window reduction for global-sized windows).

Numerics:
- Float tensors compute in float32 (float64 for float64 tensors, float16 via float32) and
  accumulate through BLAS, as onnxruntime does.
- Integer tensors (what `lower-quantized` leaves behind: int8/uint8/int16/int32 operands and an
  i32 or i64 result) compute exactly. Products and sums run in float64, exact while every
  partial sum stays below 2**53 (true for any int8 or int16 model), then round to int64 and
  cast to the result type (wrapping like a two's complement accumulator).
- Integer average pooling divides the window sum by the count rounding half away from zero,
  TFLite's reference int8 average pool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.ir import Operation

from irc.dialects import nn
from irc.dialects.nn.base import NNOp, get_bool, get_int, get_ints, get_str, shape_of
from irc.targets.reference.common import activation_name, float_activation
from irc.targets.reference.registry import Kernel, kernel, numpy_dtype

ArrayFn = Callable[[np.ndarray], np.ndarray]

_DEPTHWISE_BLOCK_BYTES = 256 * 1024
"""Bytes of output a depthwise conv accumulates at once: the accumulator, the scratch product
and the input rows of one block stay in L2 across the KH*KW taps (256 KiB measured best on
MobileNetV2 sizes, 1.5-2x faster than whole-tensor passes)."""

# ---- Numeric helpers ---------------------------------------------------------------------------


def _is_integer(a: np.ndarray) -> bool:
    return a.dtype.kind in "iub"


def _compute_dtype(result: np.dtype, *arrays: np.ndarray | None) -> np.dtype:
    """float64 when exact integer arithmetic or float64 precision is needed, else float32."""
    if result.kind in "iub" or any(a is not None and _is_integer(a) for a in arrays):
        return np.dtype(np.float64)
    if result == np.float64 or any(a is not None and a.dtype == np.float64 for a in arrays):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def _finish(acc: np.ndarray, result: np.dtype, activation: ArrayFn | None) -> np.ndarray:
    """Round (integer results), apply the fused activation and cast to the result dtype."""
    if result.kind in "iu":
        # Through int64: float -> int32 casts of out-of-range values are undefined in numpy,
        # int64 -> int32 wraps like a 32-bit accumulator.
        acc = np.rint(acc).astype(np.int64)
    if activation is not None:
        acc = activation(acc)
    return np.ascontiguousarray(acc.astype(result, copy=False))


def _activation(op: Operation) -> ArrayFn | None:
    return float_activation(activation_name(op))


# ---- Sliding windows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    """Spatial window geometry of a conv or pool: kernel, strides, dilations, pads."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]
    """[top, left, bottom, right]."""

    def out_size(self, h: int, w: int) -> tuple[int, int]:
        sizes = []
        for i, size in enumerate((h, w)):
            effective = self.dilations[i] * (self.kernel[i] - 1) + 1
            padded = size + self.pads[i] + self.pads[i + 2]
            sizes.append((padded - effective) // self.strides[i] + 1)
        return sizes[0], sizes[1]

    @property
    def is_pointwise(self) -> bool:
        """A 1x1 window at stride 1 without padding: the output is the input, pixel by pixel."""
        return self.kernel == (1, 1) and self.strides == (1, 1) and not any(self.pads)

    def taps(self) -> list[tuple[int, int]]:
        return [(i, j) for i in range(self.kernel[0]) for j in range(self.kernel[1])]

    def tap_slices(self, i: int, j: int, oh: int, ow: int, row0: int = 0) -> tuple[slice, slice]:
        """Rows and columns of the padded input that kernel tap (i, j) reads for output rows
        row0..row0+oh and columns 0..ow."""
        (sh, sw), (dh, dw) = self.strides, self.dilations
        h0 = row0 * sh + i * dh
        w0 = j * dw
        return slice(h0, h0 + sh * (oh - 1) + 1, sh), slice(w0, w0 + sw * (ow - 1) + 1, sw)


def _window_of(op: NNOp, kernel_hw: tuple[int, int] | None = None) -> _Window:
    """The op's window; `kernel_hw` for convs, whose kernel size is the filter's."""
    props = op.all_properties()
    kh, kw = kernel_hw if kernel_hw is not None else get_ints(props, "kernel")
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    top, left, bottom, right = get_ints(props, "pads")
    return _Window((kh, kw), (sh, sw), (dh, dw), (top, left, bottom, right))


def _filter_hw(shape: tuple[int, ...], layout: str) -> tuple[int, int]:
    """(KH, KW) of an OHWI (NHWC) or OIHW / IOHW (NCHW) filter."""
    return (shape[1], shape[2]) if layout == "NHWC" else (shape[2], shape[3])


def _hw_axes(layout: str) -> tuple[int, int]:
    return (1, 2) if layout == "NHWC" else (2, 3)


def _pad_spatial(x: np.ndarray, pads: tuple[int, ...], layout: str, value: float) -> np.ndarray:
    """`x` with its spatial dims padded by `pads` = [top, left, bottom, right] cells of `value`."""
    if not any(pads):
        return x
    top, left, bottom, right = pads
    ha, wa = _hw_axes(layout)
    shape = list(x.shape)
    shape[ha] += top + bottom
    shape[wa] += left + right
    out = np.full(shape, value, dtype=x.dtype)
    interior = [slice(None)] * 4
    interior[ha] = slice(top, top + x.shape[ha])
    interior[wa] = slice(left, left + x.shape[wa])
    out[tuple(interior)] = x
    return out


def _spatial_index(layout: str, rows: slice, cols: slice) -> tuple[slice, ...]:
    full = slice(None)
    return (full, rows, cols, full) if layout == "NHWC" else (full, full, rows, cols)


# ---- Convolution -------------------------------------------------------------------------------


def _conv_nhwc(x: np.ndarray, w: np.ndarray, win: _Window, groups: int) -> np.ndarray:
    """NHWC input, OHWI filter: im2col as [G, N*OH*OW, KH*KW*Cg] times [G, KH*KW*Cg, OCg]."""
    n, h, wd, _ = x.shape
    oc, kh, kw, cg = w.shape
    ocg = oc // groups
    oh, ow = win.out_size(h, wd)
    if win.is_pointwise:
        col = x.reshape(n * h * wd, groups, cg).transpose(1, 0, 2)
    else:
        xp = _pad_spatial(x, win.pads, "NHWC", 0)
        col = np.empty((groups, n, oh, ow, kh, kw, cg), dtype=x.dtype)
        for i, j in win.taps():
            rows, cols = win.tap_slices(i, j, oh, ow)
            tap = xp[:, rows, cols, :].reshape(n, oh, ow, groups, cg)
            col[:, :, :, :, i, j, :] = tap.transpose(3, 0, 1, 2, 4)
        col = col.reshape(groups, n * oh * ow, kh * kw * cg)
    wmat = w.reshape(groups, ocg, kh * kw * cg).transpose(0, 2, 1)
    out = np.matmul(col, wmat)  # [G, M, OCg]
    if groups == 1:
        return out.reshape(n, oh, ow, oc)
    return out.transpose(1, 0, 2).reshape(n, oh, ow, oc)


def _conv_nchw(x: np.ndarray, w: np.ndarray, win: _Window, groups: int) -> np.ndarray:
    """NCHW input, OIHW filter: [G, OCg, Cg*KH*KW] times im2col [N, G, Cg*KH*KW, OH*OW]."""
    n, _, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    ocg = oc // groups
    oh, ow = win.out_size(h, wd)
    if win.is_pointwise:
        col = x.reshape(n, groups, cg, h * wd)
    else:
        xp = _pad_spatial(x, win.pads, "NCHW", 0)
        col = np.empty((n, groups, cg, kh, kw, oh, ow), dtype=x.dtype)
        for i, j in win.taps():
            rows, cols = win.tap_slices(i, j, oh, ow)
            col[:, :, :, i, j] = xp[:, :, rows, cols].reshape(n, groups, cg, oh, ow)
        col = col.reshape(n, groups, cg * kh * kw, oh * ow)
    out = np.matmul(w.reshape(groups, ocg, cg * kh * kw), col)  # [N, G, OCg, OH*OW]
    return out.reshape(n, oc, oh, ow)


def _accumulate_taps(
    acc: np.ndarray, tmp: np.ndarray, taps: list[tuple[np.ndarray, np.ndarray]]
) -> None:
    """acc = sum of tap * weight over `taps`, through the scratch buffer `tmp`."""
    (first, weight), *rest = taps
    np.multiply(first, weight, out=acc)
    for tap, weight in rest:
        np.multiply(tap, weight, out=tmp)
        acc += tmp


def _depthwise_nhwc(x: np.ndarray, w: np.ndarray, win: _Window) -> np.ndarray:
    """groups == C_in, NHWC: one broadcast multiply-accumulate per tap over blocks of rows.

    Output channel `c * M + m` (M, the depth multiplier, is `OC / C`) reads input channel `c`.
    """
    n, h, wd, c = x.shape
    oc, kh, kw, _ = w.shape
    mult = oc // c
    oh, ow = win.out_size(h, wd)
    # [KH, KW, OW, C, M]: each tap's weights repeated along a row, so that at stride 1 numpy
    # runs one contiguous inner loop per output row (OW * C values) rather than one per pixel.
    taps = w.reshape(c, mult, kh, kw).transpose(2, 3, 0, 1)[:, :, None]
    taps = np.ascontiguousarray(np.broadcast_to(taps, (kh, kw, ow, c, mult)))
    xp = _pad_spatial(x, win.pads, "NHWC", 0)
    out = np.empty((n, oh, ow, c, mult), dtype=x.dtype)
    rows_per_block = _rows_per_block(n * ow * oc * x.dtype.itemsize, oh)
    scratch = np.empty((n, rows_per_block, ow, c, mult), dtype=x.dtype)
    if mult == 1:  # drop the multiplier axis: broadcasting over it would split the inner loop
        taps, out_view, scratch = taps[..., 0], out[..., 0], scratch[..., 0]
    else:
        out_view = out
    for row0 in range(0, oh, rows_per_block):
        rows_here = min(rows_per_block, oh - row0)
        block_taps = []
        for i, j in win.taps():
            rows, cols = win.tap_slices(i, j, rows_here, ow, row0)
            tap = xp[:, rows, cols, :]
            block_taps.append((tap if mult == 1 else tap[..., None], taps[i, j]))
        _accumulate_taps(out_view[:, row0 : row0 + rows_here], scratch[:, :rows_here], block_taps)
    return out.reshape(n, oh, ow, oc)


def _depthwise_nchw(x: np.ndarray, w: np.ndarray, win: _Window) -> np.ndarray:
    """groups == C_in, NCHW: one broadcast multiply-accumulate per tap over blocks of planes.

    At unit horizontal stride every output row is computed `Wp` (padded input width) wide
    rather than `OW`: tap (i, j) then reads one contiguous run of the flattened padded plane
    per output plane, which numpy processes as a single inner loop; the `Wp - OW` extra
    columns, which read across row ends, are cropped at the end.
    """
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    mult = oc // c
    (sh, sw), (dh, dw) = win.strides, win.dilations
    top, left, bottom, right = win.pads
    oh, ow = win.out_size(h, wd)
    hp, wp = h + top + bottom, wd + left + right
    planes = n * c
    # One spare plane: wide rows of the last plane read up to (KW - 1) * dw values past it.
    padded = np.zeros((planes + 1, hp, wp), dtype=x.dtype)
    padded[:planes, top : top + h, left : left + wd] = x.reshape(planes, h, wd)
    flat = padded.reshape(-1)
    wide = sw == 1
    width = wp if wide else ow
    # [KH, KW, N*C, M, 1, 1]
    taps = np.tile(w.reshape(c, mult, kh, kw), (n, 1, 1, 1)).transpose(2, 3, 0, 1)
    taps = np.ascontiguousarray(taps)[..., None, None]
    out = np.empty((planes, mult, oh, width), dtype=x.dtype)
    per_block = max(1, _DEPTHWISE_BLOCK_BYTES // (mult * oh * width * x.dtype.itemsize))
    scratch = np.empty((min(per_block, planes), mult, oh, width), dtype=x.dtype)
    for p0 in range(0, planes, per_block):
        p1 = min(planes, p0 + per_block)
        block_taps = []
        for i, j in win.taps():
            start = (p0 * hp + i * dh) * wp + j * dw
            base = flat[start : start + (p1 - p0) * hp * wp].reshape(p1 - p0, hp, wp)
            tap = base[:, : sh * (oh - 1) + 1 : sh]
            if not wide:
                tap = tap[:, :, : sw * (ow - 1) + 1 : sw]
            block_taps.append((tap[:, None], taps[i, j, p0:p1]))
        _accumulate_taps(out[p0:p1], scratch[: p1 - p0], block_taps)
    if wide:
        out = np.ascontiguousarray(out[..., :ow])
    return out.reshape(n, oc, oh, ow)


def _rows_per_block(row_bytes: int, rows: int) -> int:
    return max(1, min(rows, _DEPTHWISE_BLOCK_BYTES // max(row_bytes, 1)))


def _add_bias(acc: np.ndarray, bias: np.ndarray | None, channel_axis: int) -> np.ndarray:
    if bias is None:
        return acc
    shape = [1] * acc.ndim
    shape[channel_axis] = bias.shape[0]
    acc += bias.astype(acc.dtype).reshape(shape)
    return acc


@kernel(nn.Conv2DOp)
def conv2d(op: nn.Conv2DOp) -> Kernel:
    props = op.all_properties()
    groups = get_int(props, "groups")
    layout = get_str(props, "layout")
    win = _window_of(op, _filter_hw(shape_of(op.filter), layout))
    result = numpy_dtype(op.output.type)
    activation = _activation(op)

    def run(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        dtype = _compute_dtype(result, x, w, b)
        x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
        channels = x.shape[3] if layout == "NHWC" else x.shape[1]
        if groups > 1 and groups == channels:
            depthwise = _depthwise_nhwc if layout == "NHWC" else _depthwise_nchw
            acc = depthwise(x, w, win)
        elif layout == "NHWC":
            acc = _conv_nhwc(x, w, win, groups)
        else:
            acc = _conv_nchw(x, w, win, groups)
        acc = _add_bias(acc, b, 3 if layout == "NHWC" else 1)
        return (_finish(acc, result, activation),)

    return run


@kernel(nn.Conv2DTransposeOp)
def conv2d_transpose(op: nn.Conv2DTransposeOp) -> Kernel:
    """Every input pixel scatters `x[n, h, w, :] @ W[:, i, j, :]` to output pixel
    `(h * stride + i * dilation - pad_begin, ...)`: one GEMM for all taps, then one strided
    add per tap into the uncropped output, which is then cropped by the pads (and extended
    by `output_padding`, cells that only receive the bias)."""
    props = op.all_properties()
    groups = get_int(props, "groups")
    layout = get_str(props, "layout")
    output_padding = get_ints(props, "output_padding")
    kh, kw = _filter_hw(shape_of(op.filter), layout)
    win = _window_of(op, (kh, kw))
    result = numpy_dtype(op.output.type)
    activation = _activation(op)

    def run(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        dtype = _compute_dtype(result, x, w, b)
        x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
        if layout == "NHWC":
            n, h, wd, c = x.shape
            oc = w.shape[0]
            cg, ocg = c // groups, oc // groups
            # OHWI = [G, OCg, KH, KW, Cg] -> [G, Cg, KH*KW*OCg]
            wmat = w.reshape(groups, ocg, kh, kw, cg).transpose(0, 4, 2, 3, 1)
            xg = x.reshape(n * h * wd, groups, cg).transpose(1, 0, 2)
        else:
            n, c, h, wd = x.shape
            cg, ocg = c // groups, w.shape[1]
            oc = ocg * groups
            # IOHW = [G, Cg, OCg, KH, KW] -> [G, Cg, KH*KW*OCg]
            wmat = w.reshape(groups, cg, ocg, kh, kw).transpose(0, 1, 3, 4, 2)
            xg = x.transpose(0, 2, 3, 1).reshape(n * h * wd, groups, cg).transpose(1, 0, 2)
        wmat = wmat.reshape(groups, cg, kh * kw * ocg)
        # [G, N, H, W, KH, KW, OCg]: the contribution of every input pixel to every tap.
        contrib = np.matmul(xg, wmat).reshape(groups, n, h, wd, kh, kw, ocg)
        (sh, sw), (dh, dw), pads = win.strides, win.dilations, win.pads
        full_h = (h - 1) * sh + dh * (kh - 1) + 1
        full_w = (wd - 1) * sw + dw * (kw - 1) + 1
        oh = full_h - pads[0] - pads[2] + output_padding[0]
        ow = full_w - pads[1] - pads[3] + output_padding[1]
        acc = np.zeros(
            (n, max(full_h, pads[0] + oh), max(full_w, pads[1] + ow), groups, ocg), dtype=dtype
        )
        for i, j in win.taps():
            rows = slice(i * dh, i * dh + (h - 1) * sh + 1, sh)
            cols = slice(j * dw, j * dw + (wd - 1) * sw + 1, sw)
            acc[:, rows, cols] += contrib[:, :, :, :, i, j].transpose(1, 2, 3, 0, 4)
        acc = acc[:, pads[0] : pads[0] + oh, pads[1] : pads[1] + ow].reshape(n, oh, ow, oc)
        if layout == "NCHW":
            acc = acc.transpose(0, 3, 1, 2)
        acc = _add_bias(np.ascontiguousarray(acc), b, 3 if layout == "NHWC" else 1)
        return (_finish(acc, result, activation),)

    return run


# ---- Matrix products ---------------------------------------------------------------------------


@kernel(nn.FullyConnectedOp)
def fully_connected(op: nn.FullyConnectedOp) -> Kernel:
    result = numpy_dtype(op.output.type)
    activation = _activation(op)

    def run(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        dtype = _compute_dtype(result, x, w, b)
        x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
        acc = x.reshape(-1, x.shape[-1]) @ w.T
        acc = _add_bias(acc, b, 1).reshape((*x.shape[:-1], w.shape[0]))
        return (_finish(acc, result, activation),)

    return run


@kernel(nn.BatchMatmulOp)
def batch_matmul(op: nn.BatchMatmulOp) -> Kernel:
    props = op.all_properties()
    adj_x, adj_y = get_bool(props, "adj_x"), get_bool(props, "adj_y")
    result = numpy_dtype(op.output.type)

    def run(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        dtype = _compute_dtype(result, a, b)
        a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
        if adj_x:
            a = np.swapaxes(a, -1, -2)
        if adj_y:
            b = np.swapaxes(b, -1, -2)
        return (_finish(np.matmul(a, b), result, None),)

    return run


# ---- Pooling -----------------------------------------------------------------------------------


def _reduce_windows(
    xp: np.ndarray, win: _Window, layout: str, oh: int, ow: int, reduce: np.ufunc
) -> np.ndarray:
    """`reduce` (np.maximum or np.add) over every window of the padded input.

    Small windows accumulate one strided view per tap (a long inner loop per output row);
    windows with more taps than the output has pixels (global pools) reduce a sliding-window
    view instead, whose inner loop runs along a window row.
    """
    (kh, kw), (sh, sw), (dh, dw) = win.kernel, win.strides, win.dilations
    if kh * kw <= oh * ow:
        first, *rest = (
            xp[_spatial_index(layout, *win.tap_slices(i, j, oh, ow))] for i, j in win.taps()
        )
        acc = first.copy()
        for tap in rest:
            reduce(acc, tap, out=acc)
        return acc
    extent = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    view = sliding_window_view(xp, extent, axis=_hw_axes(layout))
    rows, cols = slice(0, sh * (oh - 1) + 1, sh), slice(0, sw * (ow - 1) + 1, sw)
    view = view[(*_spatial_index(layout, rows, cols), slice(None, None, dh), slice(None, None, dw))]
    return reduce.reduce(view, axis=(-2, -1))


def _valid_counts(size: int, out: int, k: int, stride: int, dilation: int, pad: int) -> np.ndarray:
    """For each output position along one axis, how many window taps land inside the input."""
    pos = np.arange(out)[:, None] * stride - pad + np.arange(k)[None, :] * dilation
    return ((pos >= 0) & (pos < size)).sum(axis=1)


@kernel(nn.MaxPool2DOp)
def max_pool2d(op: nn.MaxPool2DOp) -> Kernel:
    layout = get_str(op.all_properties(), "layout")
    win = _window_of(op)
    result = numpy_dtype(op.output.type)
    activation = _activation(op)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        ha, wa = _hw_axes(layout)
        oh, ow = win.out_size(x.shape[ha], x.shape[wa])
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        xp = _pad_spatial(x, win.pads, layout, lowest)
        out = _reduce_windows(xp, win, layout, oh, ow, np.maximum)
        if activation is not None:
            out = activation(out)
        return (np.ascontiguousarray(out.astype(result, copy=False)),)

    return run


def _divide_round_half_away(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """TFLite's `(sum > 0 ? sum + count / 2 : sum - count / 2) / count`, C division."""
    half = count // 2
    return np.where(total > 0, (total + half) // count, -((half - total) // count))


@kernel(nn.AvgPool2DOp)
def avg_pool2d(op: nn.AvgPool2DOp) -> Kernel:
    props = op.all_properties()
    layout = get_str(props, "layout")
    include_pad = get_bool(props, "count_include_pad")
    win = _window_of(op)
    result = numpy_dtype(op.output.type)
    activation = _activation(op)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        ha, wa = _hw_axes(layout)
        h, wd = x.shape[ha], x.shape[wa]
        oh, ow = win.out_size(h, wd)
        (kh, kw), (sh, sw), (dh, dw), pads = win.kernel, win.strides, win.dilations, win.pads
        if include_pad:
            count = np.full((oh, ow), kh * kw, dtype=np.int64)
        else:
            count = np.outer(
                _valid_counts(h, oh, kh, sh, dh, pads[0]),
                _valid_counts(wd, ow, kw, sw, dw, pads[1]),
            )
        if layout == "NHWC":
            count = count[:, :, None]
        integer = _is_integer(x)
        acc_dtype = np.int64 if integer else _compute_dtype(x.dtype, x)
        xp = _pad_spatial(x.astype(acc_dtype, copy=False), pads, layout, 0)
        total = _reduce_windows(xp, win, layout, oh, ow, np.add)
        if integer:
            out = _divide_round_half_away(total, count)
        else:
            out = total / count.astype(acc_dtype)
        if activation is not None:
            out = activation(out)
        return (np.ascontiguousarray(out.astype(result, copy=False)),)

    return run


# ---- Normalisation -----------------------------------------------------------------------------


@kernel(nn.BatchNormOp)
def batch_norm(op: nn.BatchNormOp) -> Kernel:
    props = op.all_properties()
    layout = get_str(props, "layout")
    epsilon = op.epsilon.value.data
    result = numpy_dtype(op.output.type)

    def run(
        x: np.ndarray, scale: np.ndarray, offset: np.ndarray, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        # y = x * a + b with a = scale / sqrt(var + eps), b = offset - mean * a (in float64).
        a = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + epsilon)
        b = offset.astype(np.float64) - mean.astype(np.float64) * a
        shape = [1] * x.ndim
        shape[1 if layout == "NCHW" else -1] = a.shape[0]
        dtype = _compute_dtype(result, x)
        a, b = a.astype(dtype).reshape(shape), b.astype(dtype).reshape(shape)
        out = x.astype(dtype, copy=False) * a
        out += b
        return (out.astype(result, copy=False),)

    return run
