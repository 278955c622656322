"""Reference kernels of the `nn` constants, data-movement ops, reductions and softmax.

Data-movement kernels (reshape, transpose, concat, split, slice, pad, gather, broadcast_to
and nearest resize) are also registered for quantized tensors: on storage integers they do
exactly what they do on floats. Kernels return C-contiguous arrays (a splat constant is a
broadcast view); constants and reshapes share memory with their input, so kernel results are
values to read, never buffers to write into (constants are returned read-only).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from irc.dialects import nn
from irc.dialects.nn.base import element_of, floats_of, ints_of, shape_of
from irc.targets.reference.common import activation_name, apply_float_activation, result_dtype
from irc.targets.reference.registry import Kernel, UnsupportedOpError, is_quantized_op, kernel


def _widen(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


# ---- Constants ---------------------------------------------------------------------------------


@kernel(nn.ConstantOp, quantized=True)
def constant(op: nn.ConstantOp) -> Kernel:
    value = op.to_array()
    if value.flags.writeable:
        value = value.view()
        value.flags.writeable = False

    def run() -> tuple[np.ndarray, ...]:
        return (value,)

    return run


# ---- Data movement -----------------------------------------------------------------------------


@kernel(nn.ReshapeOp, quantized=True)
def reshape(op: nn.ReshapeOp) -> Kernel:
    static = shape_of(op.output)
    # The declared shape also resolves `-1` for empty tensors, which numpy cannot.
    shape = static if all(d >= 0 for d in static) else ints_of(op.shape)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.ascontiguousarray(x).reshape(shape),)

    return run


@kernel(nn.TransposeOp, quantized=True)
def transpose(op: nn.TransposeOp) -> Kernel:
    perm = ints_of(op.perm)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.ascontiguousarray(np.transpose(x, perm)),)

    return run


@kernel(nn.ConcatOp, quantized=True)
def concat(op: nn.ConcatOp) -> Kernel:
    if is_quantized_op(op):
        result = element_of(op.output)
        for i, value in enumerate(op.inputs):
            if element_of(value) != result:
                raise UnsupportedOpError(
                    op,
                    f"concat input #{i} is quantized differently from the result; run "
                    "lower-quantized first to requantize it",
                )
        if activation_name(op) != "none":
            raise UnsupportedOpError(
                op, "quantized concat with a fused activation needs lower-quantized"
            )
    axis = _axis(op.axis.value.data, len(shape_of(op.output)))
    out_dtype = result_dtype(op.output)

    def run(*inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        y = np.concatenate(inputs, axis=axis)
        return (apply_float_activation(op, y).astype(out_dtype, copy=False),)

    return run


@kernel(nn.SplitOp, quantized=True)
def split(op: nn.SplitOp) -> Kernel:
    sizes = ints_of(op.sizes)
    bounds = np.cumsum(sizes)[:-1]
    axis = _axis(op.axis.value.data, len(shape_of(op.input)))

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(np.ascontiguousarray(p) for p in np.split(x, bounds, axis=axis))

    return run


@kernel(nn.SliceOp, quantized=True)
def slice_(op: nn.SliceOp) -> Kernel:
    # `end = -1` with a negative stride means "through index 0": Python spells that `None`
    # (a literal -1 would mean the last element).
    index = tuple(
        slice(b, None if e < 0 else e, s)
        for b, e, s in zip(ints_of(op.begin), ints_of(op.end), ints_of(op.strides), strict=True)
    )

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.ascontiguousarray(x[index]),)

    return run


_NUMPY_PAD_MODES: dict[str, Literal["reflect", "edge"]] = {"reflect": "reflect", "edge": "edge"}
"""The verifier's other `nn.pad` modes, by the name numpy's `pad` gives them."""


@kernel(nn.PadOp, quantized=True)
def pad(op: nn.PadOp) -> Kernel:
    flat = ints_of(op.pads)
    pairs = tuple((flat[i], flat[i + 1]) for i in range(0, len(flat), 2))
    mode = op.mode.data  # constant, reflect (no edge repeat) and edge mean what numpy's do
    out_dtype = result_dtype(op.output)
    fill = op.value.value.data
    # Integer (and quantized storage) tensors pad with the value as an integer of their type.
    value = out_dtype.type(fill if out_dtype.kind == "f" else int(fill))

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if mode == "constant":
            return (np.pad(x, pairs, mode="constant", constant_values=value),)
        return (np.pad(x, pairs, mode=_NUMPY_PAD_MODES[mode]),)

    return run


# ---- Resize ------------------------------------------------------------------------------------
#
# ONNX Resize's formulas, evaluated in float32 in the order onnxruntime evaluates them, so that
# nearest-neighbour ties (`x.5` source coordinates) round the same way.


def _source_coordinates(
    out_len: int, in_len: int, scale: np.float32, coordinate_mode: str
) -> np.ndarray:
    """The input coordinate (float32) each output index samples, before any clamping.

    An axis that keeps its size at scale 1 is not resized at all, whatever the coordinate
    mode (onnxruntime and `onnx.reference` skip it; `tf_half_pixel_for_nn` would otherwise
    shift it by half a pixel).
    """
    x = np.arange(out_len, dtype=np.float32)
    if out_len == in_len and scale == 1:
        return x
    half = np.float32(0.5)
    match coordinate_mode:
        case "half_pixel":
            return (x + half) / scale - half
        case "pytorch_half_pixel":
            return (x + half) / scale - half if out_len > 1 else np.zeros_like(x)
        case "align_corners":
            if out_len == 1:
                return np.zeros_like(x)
            return x * np.float32(in_len - 1) / np.float32(out_len - 1)
        case "asymmetric":
            return x / scale
        case "tf_half_pixel_for_nn":
            return (x + half) / scale
    raise ValueError(f"unknown coordinate mode '{coordinate_mode}'")


_TIE_TOLERANCE = 1e-6
"""How far from ``k + 0.5`` a float32 coordinate still counts as a tie (onnxruntime's)."""


def _nearest_indices(coords: np.ndarray, in_len: int, nearest_mode: str) -> np.ndarray:
    """Round source coordinates to input indices, clamped into the input.

    A coordinate that is mathematically ``k + 0.5`` often comes out of float32 a few ulps off
    (``0.5 / (1 / 7) = 3.4999998``); the `round_prefer_*` modes treat anything within
    `_TIE_TOLERANCE` of a half as a tie, as onnxruntime does since its fix of issue 28291.
    `floor` and `ceil` take the float32 coordinate as it is (so does onnxruntime).
    """
    wide = coords.astype(np.float64)  # exact `x - floor(x)` and `x + 0.5`
    nearest = np.floor(wide + 0.5)
    tie = np.abs(wide - np.floor(wide) - 0.5) <= _TIE_TOLERANCE
    match nearest_mode:
        case "round_prefer_floor":
            index = np.where(tie, np.floor(wide), nearest)
        case "round_prefer_ceil":
            index = np.where(tie, np.ceil(wide), nearest)
        case "floor":
            index = np.floor(wide)
        case "ceil":
            index = np.ceil(wide)
        case _:
            raise ValueError(f"unknown nearest mode '{nearest_mode}'")
    return np.clip(index, 0, in_len - 1).astype(np.intp)


def _linear_taps(coords: np.ndarray, in_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Low and high input indices and the weight of the high one (coordinates clamped)."""
    clamped = np.clip(coords, np.float32(0), np.float32(in_len - 1))
    low = np.floor(clamped).astype(np.intp)
    high = np.minimum(low + 1, in_len - 1)
    return low, high, clamped - low.astype(np.float32)


def _lerp(x: np.ndarray, axis: int, taps: tuple[np.ndarray, ...]) -> np.ndarray:
    low, high, weight = taps
    shape = [1] * x.ndim
    shape[axis] = weight.size
    w = weight.reshape(shape).astype(x.dtype, copy=False)
    a, b = np.take(x, low, axis=axis), np.take(x, high, axis=axis)
    with np.errstate(all="ignore"):  # inf - inf and inf * 0 are NaN, as in C; no warning
        return a + (b - a) * w


@kernel(nn.ResizeOp, quantized=True)
def resize(op: nn.ResizeOp) -> Kernel:
    mode = op.mode.data
    if mode == "bilinear" and is_quantized_op(op):
        # TFLite's integer interpolation (fixed-point weights), not a float lerp.
        from irc.targets.reference.quant_nn import resize_bilinear

        return resize_bilinear(op)
    h_axis, w_axis = (1, 2) if op.layout.data == "NHWC" else (2, 3)
    out_h, out_w = ints_of(op.size)
    scales = None if op.scales is None else tuple(np.float32(s) for s in floats_of(op.scales))
    coordinate_mode = op.coordinate_mode.data
    nearest_mode = op.nearest_mode.data
    out_dtype = result_dtype(op.output)

    def plan(in_h: int, in_w: int) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """Per axis: nearest input indices, or bilinear (low, high, weight) taps."""
        axes = []
        for out_len, in_len, i in ((out_h, in_h, 0), (out_w, in_w, 1)):
            scale = np.float32(out_len) / np.float32(in_len) if scales is None else scales[i]
            coords = _source_coordinates(out_len, in_len, scale, coordinate_mode)
            if mode == "nearest":
                axes.append((_nearest_indices(coords, in_len, nearest_mode),))
            else:
                axes.append(_linear_taps(coords, in_len))
        return axes[0], axes[1]

    in_shape = shape_of(op.input)
    static_plan = None
    if in_shape[h_axis] >= 0 and in_shape[w_axis] >= 0:
        static_plan = plan(in_shape[h_axis], in_shape[w_axis])

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        plan_h, plan_w = static_plan or plan(x.shape[h_axis], x.shape[w_axis])
        if mode == "nearest":
            return (np.take(np.take(x, plan_h[0], axis=h_axis), plan_w[0], axis=w_axis),)
        wide = x.astype(np.float64) if x.dtype.kind != "f" else _widen(x)
        y = _lerp(_lerp(wide, h_axis, plan_h), w_axis, plan_w)
        if out_dtype.kind in "iu":
            # Plain integer tensors: round half to even, saturating (the ONNX reference
            # implementation's `saturate_cast`; onnxruntime truncates in NCHW and uses fixed
            # point in NHWC, so it has no single answer to match).
            info = np.iinfo(out_dtype)
            y = np.clip(np.round(y), info.min, info.max)
        return (y.astype(out_dtype, copy=False),)

    return run


# ---- Gather ------------------------------------------------------------------------------------


@kernel(nn.GatherOp, quantized=True)
def gather(op: nn.GatherOp) -> Kernel:
    axis = _axis(op.axis.value.data, len(shape_of(op.input)))
    batch_dims = op.batch_dims.value.data

    def run(x: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        size = x.shape[axis]
        if indices.size and not (-size <= indices.min() and indices.max() < size):
            raise IndexError(f"gather index out of range for dimension {axis} of size {size}")
        indices = indices.astype(np.intp, copy=False)
        indices = np.where(indices < 0, indices + size, indices)
        if batch_dims == 0:
            return (np.take(x, indices, axis=axis),)
        batch = x.shape[:batch_dims]
        count = int(np.prod(batch))
        xs = x.reshape(count, *x.shape[batch_dims:])
        ids = indices.reshape(count, *indices.shape[batch_dims:])
        out_shape = (
            *x.shape[:axis],
            *indices.shape[batch_dims:],
            *x.shape[axis + 1 :],
        )
        pieces = [np.take(xs[b], ids[b], axis=axis - batch_dims) for b in range(count)]
        if not pieces:
            return (np.empty(out_shape, x.dtype),)
        return (np.stack(pieces).reshape(out_shape),)

    return run


@kernel(nn.BroadcastToOp, quantized=True)
def broadcast_to(op: nn.BroadcastToOp) -> Kernel:
    shape = ints_of(op.shape)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        # Not ascontiguousarray: it makes 0-d arrays 1-d.
        return (np.asarray(np.broadcast_to(x, shape), order="C"),)

    return run


# ---- Reductions --------------------------------------------------------------------------------


def _lowest(dtype: np.dtype) -> float | bool | int:
    if dtype.kind == "f":
        return -np.inf
    if dtype == np.bool_:
        return False
    return np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> float | bool | int:
    if dtype.kind == "f":
        return np.inf
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).max


@kernel(nn.ReduceOp)
def reduce(op: nn.ReduceOp) -> Kernel:
    rank = len(shape_of(op.input))
    axes = tuple(_axis(a, rank) for a in ints_of(op.axes))
    keepdims = bool(op.keepdims.value.data)
    kind = op.kind.data
    out_dtype = result_dtype(op.output)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        x = _widen(x)
        integer = x.dtype.kind in "iub"
        with np.errstate(all="ignore"):
            match kind:
                case "sum":
                    y = np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)
                case "prod":
                    y = np.prod(x, axis=axes, keepdims=keepdims, dtype=x.dtype)
                case "max":
                    y = np.max(x, axis=axes, keepdims=keepdims, initial=_lowest(x.dtype))
                case "min":
                    y = np.min(x, axis=axes, keepdims=keepdims, initial=_highest(x.dtype))
                case "mean" if integer:
                    # Integer mean: the exact sum, divided rounding toward zero (as ONNX).
                    count = max(1, int(np.prod([x.shape[a] for a in axes])))
                    total = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
                    y = np.sign(total) * (np.abs(total) // count)
                case "mean":
                    y = np.mean(x, axis=axes, keepdims=keepdims)
                case _:
                    raise ValueError(f"unknown reduction '{kind}'")
        return (np.asarray(y).astype(out_dtype, copy=False),)

    return run


def _scaled_max_shifted(x: np.ndarray, axis: int, beta: float) -> np.ndarray:
    """``beta * x - max(beta * x)`` along `axis`: the exponent of a stable softmax."""
    z = x if beta == 1.0 else x * x.dtype.type(beta)
    return z - np.max(z, axis=axis, keepdims=True)


@kernel(nn.SoftmaxOp)
def softmax(op: nn.SoftmaxOp) -> Kernel:
    axis = op.axis.value.data
    beta = op.beta.value.data
    out_dtype = result_dtype(op.output)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):
            e = np.exp(_scaled_max_shifted(_widen(x), axis, beta))
            y = e / np.sum(e, axis=axis, keepdims=True)
        return (y.astype(out_dtype, copy=False),)

    return run


@kernel(nn.LogSoftmaxOp)
def log_softmax(op: nn.LogSoftmaxOp) -> Kernel:
    axis = op.axis.value.data
    out_dtype = result_dtype(op.output)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):
            z = _scaled_max_shifted(_widen(x), axis, 1.0)
            y = z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))
        return (y.astype(out_dtype, copy=False),)

    return run
