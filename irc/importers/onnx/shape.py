"""ONNX converters for constants and data movement.

Everything here folds in numpy when its inputs are compile-time constants (`ctx.const`), so
shape computations (Shape -> Gather -> Concat -> Reshape, ConstantOfShape, Cast, ...) never
reach the IR. Converters register into `irc.importers.onnx.registry.CONVERTERS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import shape_of
from irc.importers.onnx.dtypes import dtype_for_onnx, onnx_type_name
from irc.importers.onnx.helpers import (
    cast_array,
    cast_value,
    const_floats,
    const_ints,
    normalize_axis,
    reshape,
    static_shape,
)
from irc.importers.onnx.registry import ConversionContext, Results, Unsupported, converter

INT_MAX = 2**63 - 1

# ---- Constants and identities ------------------------------------------------------------------


@converter("Constant")
def convert_constant(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    attrs = ctx.attrs(node)
    if "value" in attrs:
        return [np.asarray(attrs["value"])]
    if "value_float" in attrs:
        return [np.array(attrs["value_float"], np.float32)]
    if "value_floats" in attrs:
        return [np.array(attrs["value_floats"], np.float32)]
    if "value_int" in attrs:
        return [np.array(attrs["value_int"], np.int64)]
    if "value_ints" in attrs:
        return [np.array(attrs["value_ints"], np.int64)]
    if "sparse_value" in attrs:
        raise Unsupported("sparse constants")
    if "value_string" in attrs or "value_strings" in attrs:
        raise Unsupported("string tensors")
    raise ctx.error(node, "a Constant needs one value attribute")


@converter("Identity")
def convert_identity(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    name = node.input[0]
    array = ctx.const(name)
    return [array if array is not None else ctx.value(name)]


@converter("Dropout")
def convert_dropout(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    training = ctx.input(node, 2)
    if ctx.has(training):
        mode = ctx.const(training)
        if mode is None or bool(np.asarray(mode).reshape(-1)[0]):
            raise Unsupported("training mode")
    if len(node.output) > 1 and ctx.is_used(node.output[1]):
        raise Unsupported("the mask output is used")
    return convert_identity(ctx, node)[:1]


# ---- Shapes, sizes, casts ----------------------------------------------------------------------


@converter("Shape")
def convert_shape(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    shape = static_shape(ctx, node.input[0])
    attrs = ctx.attrs(node)
    rank = len(shape)
    start = attrs.get("start", 0)
    end = attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return [np.array(shape[start:end], np.int64)]


@converter("Size")
def convert_size(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    return [np.array(math.prod(static_shape(ctx, node.input[0])), np.int64)]


@converter("ConstantOfShape")
def convert_constant_of_shape(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    shape = const_ints(ctx, node.input[0], "the shape")
    assert shape is not None
    value = ctx.attrs(node).get("value")
    fill = np.zeros((), np.float32) if value is None else np.asarray(value).reshape(-1)[0]
    ctx.check_size(shape, np.asarray(fill).dtype)
    return [np.full(shape, fill, dtype=np.asarray(fill).dtype)]


@converter("Cast", "CastLike")
def convert_cast(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    name = node.input[0]
    if node.op_type == "CastLike":
        dtype = ctx.dtype(node.input[1])
    else:
        to = ctx.attrs(node)["to"]
        found = dtype_for_onnx(to)
        if found is None:
            raise Unsupported(f"cast to {onnx_type_name(to)}")
        dtype = found
    array = ctx.const(name)
    if array is not None:
        return [cast_array(array, dtype)]
    return [cast_value(ctx, name, dtype)]


# ---- Reshaping ---------------------------------------------------------------------------------


def _resolve_reshape(in_shape: Sequence[int], target: list[int], allowzero: bool) -> list[int]:
    out = list(target)
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if i >= len(in_shape):
                raise Unsupported(f"shape {target} copies dimension {i} the input lacks")
            out[i] = in_shape[i]
    if out.count(-1) > 1:
        raise Unsupported(f"shape {target} has more than one -1")
    if -1 in out and all(d >= 0 for d in in_shape):
        known = math.prod(d for d in out if d != -1)
        total = math.prod(in_shape)
        if known == 0 or total % known:
            raise Unsupported(f"cannot reshape {list(in_shape)} into {target}")
        out[out.index(-1)] = total // known
    return out


@converter("Reshape")
def convert_reshape(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    target = const_ints(ctx, node.input[1], "the target shape")
    assert target is not None
    allowzero = bool(ctx.attrs(node).get("allowzero", 0))
    shape = _resolve_reshape(ctx.shape(data), target, allowzero)
    array = ctx.const(data)
    if array is not None:
        return [array.reshape(shape)]
    return [reshape(ctx, ctx.value(data), shape)]


@converter("Flatten")
def convert_flatten(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    shape = static_shape(ctx, data)
    axis = ctx.attrs(node).get("axis", 1)
    if axis < 0:
        axis += len(shape)
    if not 0 <= axis <= len(shape):
        raise ctx.error(node, f"axis {axis} is out of range for rank {len(shape)}")
    target = [math.prod(shape[:axis]), math.prod(shape[axis:])]
    array = ctx.const(data)
    if array is not None:
        return [array.reshape(target)]
    return [reshape(ctx, ctx.value(data), target)]


def _squeeze_axes(ctx: ConversionContext, node: onnx.NodeProto) -> list[int] | None:
    if ctx.opset >= 13:
        return const_ints(ctx, ctx.input(node, 1), "axes")
    return ctx.attrs(node).get("axes")


@converter("Squeeze")
def convert_squeeze(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    shape = ctx.shape(data)
    axes = _squeeze_axes(ctx, node)
    if axes is None:
        if any(d < 0 for d in shape):
            raise Unsupported("squeezing every unit dimension of a dynamic shape")
        drop = {i for i, d in enumerate(shape) if d == 1}
    else:
        drop = {normalize_axis(a, len(shape)) for a in axes}
    target = [d for i, d in enumerate(shape) if i not in drop]
    array = ctx.const(data)
    if array is not None:
        return [array.reshape(target)]
    return [reshape(ctx, ctx.value(data), target)]


@converter("Unsqueeze")
def convert_unsqueeze(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    shape = list(ctx.shape(data))
    axes = _squeeze_axes(ctx, node)
    if axes is None:
        raise ctx.error(node, "Unsqueeze needs axes")
    rank = len(shape) + len(axes)
    for axis in sorted(normalize_axis(a, rank) for a in axes):
        shape.insert(axis, 1)
    array = ctx.const(data)
    if array is not None:
        return [array.reshape(shape)]
    return [reshape(ctx, ctx.value(data), shape)]


@converter("Transpose")
def convert_transpose(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    rank = len(ctx.shape(data))
    perm = ctx.attrs(node).get("perm") or list(reversed(range(rank)))
    array = ctx.const(data)
    if array is not None:
        return [np.transpose(array, perm)]
    if list(perm) == list(range(rank)):
        return [ctx.value(data)]
    return [ctx.result(nn.TransposeOp.make(ctx.value(data), perm=list(perm)))]


# ---- Concat, split, slice, pad, gather ---------------------------------------------------------


@converter("Concat")
def convert_concat(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    names = [n for n in node.input if n]
    axis = ctx.attrs(node)["axis"]
    arrays = [a for a in (ctx.const(n) for n in names) if a is not None]
    if len(arrays) == len(names):
        return [np.concatenate(arrays, axis=axis)]
    rank = len(ctx.shape(names[0]))
    axis = normalize_axis(axis, rank)
    # Empty pieces (shape arithmetic concatenating `[]`) add nothing.
    kept = [n for n in names if ctx.shape(n)[axis] != 0] or names[:1]
    if len(kept) == 1:
        return [ctx.value(kept[0])]
    return [ctx.result(nn.ConcatOp.make([ctx.value(n) for n in kept], axis=axis))]


@converter("Split")
def convert_split(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    shape = static_shape(ctx, data)
    attrs = ctx.attrs(node)
    axis = normalize_axis(attrs.get("axis", 0), len(shape))
    count = len(node.output)
    if ctx.opset >= 13:
        sizes = const_ints(ctx, ctx.input(node, 1), "split")
    else:
        sizes = attrs.get("split")
    size = shape[axis]
    if not sizes:
        if "num_outputs" in attrs:
            chunk = -(-size // attrs["num_outputs"])
            sizes = [min(chunk, max(0, size - chunk * i)) for i in range(count)]
        else:
            if size % count:
                raise ctx.error(
                    node, f"dimension {axis} of size {size} is not divisible by {count}"
                )
            sizes = [size // count] * count
    if len(sizes) != count or sum(sizes) != size:
        raise ctx.error(node, f"split sizes {sizes} do not cover dimension of size {size}")
    array = ctx.const(data)
    if array is not None:
        return np.split(array, np.cumsum(sizes)[:-1], axis=axis)
    op = ctx.emit(nn.SplitOp.make(ctx.value(data), axis=axis, sizes=sizes))
    return list(op.results)


def resolve_slice(size: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice's clamping of one axis, as `nn.slice` begin/end (end -1: through 0)."""
    if step == 0:
        raise Unsupported("slice step 0")
    if size == 0:
        return 0, 0
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        return min(max(start, 0), size), min(max(end, 0), size)
    return min(max(start, 0), size - 1), min(max(end, -1), size - 1)


@converter("Slice")
def convert_slice(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    shape = ctx.shape(data)
    starts = const_ints(ctx, node.input[1], "starts")
    ends = const_ints(ctx, node.input[2], "ends")
    assert starts is not None
    assert ends is not None
    axes = const_ints(ctx, ctx.input(node, 3), "axes") or list(range(len(starts)))
    steps = const_ints(ctx, ctx.input(node, 4), "steps") or [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(node, "starts, ends, axes and steps differ in length")
    begin = [0] * len(shape)
    end = list(shape)
    strides = [1] * len(shape)
    for start, stop, axis, step in zip(starts, ends, axes, steps):
        axis = normalize_axis(axis, len(shape))
        if shape[axis] < 0:
            raise Unsupported(f"slicing dynamic dimension {axis}")
        begin[axis], end[axis] = resolve_slice(shape[axis], start, stop, step)
        strides[axis] = step
    array = ctx.const(data)
    if array is not None:
        index = tuple(slice(b, None if e < 0 else e, s) for b, e, s in zip(begin, end, strides))
        return [array[index]]
    if begin == [0] * len(shape) and end == list(shape) and strides == [1] * len(shape):
        return [ctx.value(data)]
    return [ctx.result(nn.SliceOp.make(ctx.value(data), begin=begin, end=end, strides=strides))]


@converter("Pad")
def convert_pad(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    shape = ctx.shape(data)
    rank = len(shape)
    attrs = ctx.attrs(node)
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise Unsupported(f"mode '{mode}'")
    pads = const_ints(ctx, node.input[1], "pads")
    assert pads is not None
    value = const_floats(ctx, ctx.input(node, 2), "the constant value")
    fill = value[0] if value else 0.0
    axes = const_ints(ctx, ctx.input(node, 3), "axes")
    axes = [normalize_axis(a, rank) for a in axes] if axes else list(range(rank))
    if len(pads) != 2 * len(axes):
        raise ctx.error(node, f"expected {2 * len(axes)} pads, got {len(pads)}")
    pairs = [[0, 0] for _ in range(rank)]
    for i, axis in enumerate(axes):
        pairs[axis] = [pads[i], pads[i + len(axes)]]
    grow = [max(p, 0) for pair in pairs for p in pair]
    crop = [[max(-b, 0), max(-a, 0)] for b, a in pairs]
    array = ctx.const(data)
    if array is not None:
        ctx.check_size(
            [n + g0 + g1 for n, g0, g1 in zip(array.shape, grow[::2], grow[1::2])], array.dtype
        )
        grown = (
            np.pad(array, [(b, a) for b, a in zip(grow[::2], grow[1::2])], mode=mode)
            if mode != "constant"
            else np.pad(
                array,
                [(b, a) for b, a in zip(grow[::2], grow[1::2])],
                constant_values=np.asarray(fill).astype(array.dtype),
            )
        )
        index = tuple(slice(b, n - a) for (b, a), n in zip(crop, grown.shape))
        return [grown[index]]
    value_ = ctx.value(data)
    if any(grow):
        value_ = ctx.result(nn.PadOp.make(value_, pads=grow, mode=mode, value=fill))
    if any(b or a for b, a in crop):
        padded = shape_of(value_)
        value_ = ctx.result(
            nn.SliceOp.make(
                value_,
                begin=[b for b, _ in crop],
                end=[n - a for (_, a), n in zip(crop, padded)],
                strides=[1] * rank,
            )
        )
    return [value_]


@converter("Tile")
def convert_tile(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    repeats = const_ints(ctx, node.input[1], "repeats")
    assert repeats is not None
    array = ctx.const(data)
    if array is not None:
        if len(repeats) != array.ndim or any(r < 0 for r in repeats):
            raise ctx.error(node, f"repeats {repeats} do not fit a rank-{array.ndim} tensor")
        ctx.check_size([n * r for n, r in zip(array.shape, repeats)], array.dtype)
        return [np.tile(array, repeats)]
    value = ctx.value(data)
    for axis, count in enumerate(repeats):
        if count == 0:
            raise Unsupported("a repeat count of 0")
        if count > 1:
            value = ctx.result(nn.ConcatOp.make([value] * count, axis=axis))
    return [value]


@converter("Gather")
def convert_gather(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data, indices = node.input[0], node.input[1]
    axis = normalize_axis(ctx.attrs(node).get("axis", 0), len(ctx.shape(data)))
    array, index = ctx.const(data), ctx.const(indices)
    if array is not None and index is not None:
        return [np.take(array, index.astype(np.int64), axis=axis)]
    return [ctx.result(nn.GatherOp.make(ctx.value(data), ctx.value(indices), axis=axis))]


# ---- Resize ------------------------------------------------------------------------------------

_COORDINATE_MODES = (
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
)


def _emit_resize(
    ctx: ConversionContext,
    data: str,
    scales: list[float] | None,
    sizes: list[int] | None,
    mode: str,
    coordinate_mode: str,
    nearest_mode: str,
) -> SSAValue:
    shape = static_shape(ctx, data)
    if len(shape) != 4:
        raise Unsupported(f"resizing a rank-{len(shape)} tensor (irc resizes NCHW images)")
    if sizes is not None:
        if list(sizes[:2]) != list(shape[:2]):
            raise Unsupported("resizing the batch or channel dimension")
        out = list(sizes[2:])
        given = None
    else:
        assert scales is not None
        if scales[0] != 1 or scales[1] != 1:
            raise Unsupported("resizing the batch or channel dimension")
        # onnxruntime multiplies in float32 and truncates.
        out = [int(np.float32(n) * np.float32(s)) for n, s in zip(shape[2:], scales[2:])]
        given = list(scales[2:])
    if mode == "cubic":
        raise Unsupported("mode 'cubic'")
    if mode not in ("nearest", "linear"):
        raise Unsupported(f"mode '{mode}'")
    if coordinate_mode not in _COORDINATE_MODES:
        raise Unsupported(f"coordinate_transformation_mode '{coordinate_mode}'")
    if any(n <= 0 for n in out):
        raise Unsupported(f"an empty output size {out}")
    op = nn.ResizeOp.make(
        ctx.value(data),
        size=out,
        scales=given,
        mode="bilinear" if mode == "linear" else "nearest",
        coordinate_mode=coordinate_mode,
        nearest_mode=nearest_mode,
        layout="NCHW",
    )
    return ctx.result(op)


@converter("Resize")
def convert_resize(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    data = node.input[0]
    rank = len(ctx.shape(data))
    attrs = ctx.attrs(node)
    mode = attrs.get("mode", "nearest")
    if attrs.get("antialias", 0) and mode != "nearest":
        raise Unsupported("antialias")
    if attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise Unsupported(f"keep_aspect_ratio_policy '{attrs['keep_aspect_ratio_policy']}'")
    scales = const_floats(ctx, ctx.input(node, 2), "scales") or None
    sizes = const_ints(ctx, ctx.input(node, 3), "sizes") or None
    axes = attrs.get("axes")
    if axes is not None:
        axes = [normalize_axis(a, rank) for a in axes]
        shape = static_shape(ctx, data)
        full_scales = [1.0] * rank
        full_sizes = list(shape)
        for i, axis in enumerate(axes):
            if scales:
                full_scales[axis] = scales[i]
            if sizes:
                full_sizes[axis] = sizes[i]
        scales = full_scales if scales else None
        sizes = full_sizes if sizes else None
    if scales is None and sizes is None:
        raise ctx.error(node, "Resize needs scales or sizes")
    for values, what in ((scales, "scales"), (sizes, "sizes")):
        if values is not None and len(values) != rank:
            raise ctx.error(node, f"expected {rank} {what}, got {len(values)}")
    result = _emit_resize(
        ctx,
        data,
        scales,
        sizes,
        mode,
        attrs.get("coordinate_transformation_mode", "half_pixel"),
        attrs.get("nearest_mode", "round_prefer_floor"),
    )
    return [result]


@converter("Upsample")
def convert_upsample(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    attrs = ctx.attrs(node)
    scales = attrs.get("scales") or const_floats(ctx, ctx.input(node, 1), "scales")
    if not scales:
        raise ctx.error(node, "Upsample needs scales")
    mode = attrs.get("mode", "nearest")
    mode = "linear" if mode == "bilinear" else mode
    # Upsample samples `floor(out / scale)` (onnxruntime's "simple" nearest rounding).
    nearest = "ceil" if any(s < 1 for s in scales) else "floor"
    return [_emit_resize(ctx, node.input[0], list(scales), None, mode, "asymmetric", nearest)]
