"""Converters of TFLite data-movement, shape and reduction operators (see `ops`).

Shapes, axes, permutations, paddings and slice bounds must be constant (they become op
properties); a shape the model computes at run time is refused, except for RESHAPE, which
falls back to the model's declared output shape when the graph keeps its own input shapes.
Data movement copies stored values, so a quantized output keeps its input's parameters
(`set_moved_output` reinterprets when the model declares others, as TFLite's copy does).
"""

from __future__ import annotations

from typing import Any

import tflite
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.quant import UniformQuantizedType
from irc.importers.tflite.helpers import (
    activation,
    element,
    normalize_axis,
    one,
    reshape,
    shape,
)
from irc.importers.tflite.reader import OperatorInfo, options_vector
from irc.importers.tflite.registry import TFLiteImporter, Unsupported, converter
from irc.importers.tflite.slices import resolve_strided_slice

# ---- Reductions and softmax --------------------------------------------------------------------

_REDUCE_KINDS = {
    "MEAN": "mean",
    "SUM": "sum",
    "REDUCE_MAX": "max",
    "REDUCE_MIN": "min",
    "REDUCE_PROD": "prod",
}


@converter(*_REDUCE_KINDS)
def reduce(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 0)
    rank = len(shape(x))
    axes = sorted({normalize_axis(a, rank) for a in imp.ints(op, 1, "axes")})
    keep_dims = bool(imp.options(op, "ReducerOptions").KeepDims())
    if not axes:  # TFLite copies the input
        imp.set_moved_output(op, x)
        return
    y = nn.ReduceOp.make(
        x,
        result_elements=imp.out_element(op),
        kind=_REDUCE_KINDS[op.op_type],
        axes=axes,
        keepdims=keep_dims,
    )
    imp.set_output(op, imp.emit(y))


@converter("SOFTMAX")
def softmax(imp: TFLiteImporter, op: OperatorInfo) -> None:
    beta = imp.options(op, "SoftmaxOptions").Beta()
    y = nn.SoftmaxOp.make(imp.input(op, 0), result_elements=imp.out_element(op), beta=beta)
    imp.set_output(op, imp.emit(y))


@converter("LOG_SOFTMAX")
def log_softmax(imp: TFLiteImporter, op: OperatorInfo) -> None:
    y = nn.LogSoftmaxOp.make(imp.input(op, 0), result_elements=imp.out_element(op))
    imp.set_output(op, imp.emit(y))


# ---- Shapes ------------------------------------------------------------------------------------


@converter("RESHAPE")
def reshape_op(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """The new shape comes from a 1-D shape input when there is one (TFLite's rule), else
    from the options; a computed shape falls back to the model's declared output shape."""
    x = imp.input(op, 0)
    shape_tensor = imp.tensor(op, 1)
    target: list[int] | None = None
    if shape_tensor is not None and len(shape_tensor.shape) == 1:
        if imp.is_constant(op, 1):
            target = imp.ints(op, 1, "shape")
        else:
            declared = imp.output_tensor(op).shape
            if imp.shapes_overridden:
                raise Unsupported("a reshape to a computed shape")
            target = list(declared)
    if target is None:
        o = imp.options(op, "ReshapeOptions")
        if o.NewShapeIsNone() and shape_tensor is None:
            raise imp.fail("no new shape: neither a shape input nor options")
        target = options_vector(o.NewShapeAsNumpy()) if not o.NewShapeIsNone() else None
        if target is None:
            if imp.shapes_overridden:
                raise Unsupported("a reshape to a computed shape")
            target = list(imp.output_tensor(op).shape)
    if sum(1 for d in target if d == -1) > 1 or any(d < -1 for d in target):
        raise imp.fail(f"invalid new shape {target}")
    y = nn.ReshapeOp.make(x, shape=target, result_elements=imp.moved_element(op, x))
    imp.set_moved_output(op, imp.emit(y))


@converter("SQUEEZE")
def squeeze(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 0)
    x_shape = shape(x)
    dims = options_vector(imp.options(op, "SqueezeOptions").SqueezeDimsAsNumpy())
    if dims:
        drop = {normalize_axis(d, len(x_shape)) for d in dims}
        if any(x_shape[d] not in (1, -1) for d in drop):
            raise imp.fail(f"cannot squeeze dimensions {sorted(drop)} of shape {list(x_shape)}")
    else:
        if any(d < 0 for d in x_shape):
            raise Unsupported("squeezing all unit dimensions of a dynamic shape")
        drop = {d for d, size in enumerate(x_shape) if size == 1}
    target = [size for d, size in enumerate(x_shape) if d not in drop]
    imp.set_moved_output(op, reshape(imp, x, target))


@converter("EXPAND_DIMS")
def expand_dims(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 0)
    x_shape = list(shape(x))
    axis = normalize_axis(one(imp, imp.ints(op, 1, "axis"), "axis"), len(x_shape) + 1)
    x_shape.insert(axis, 1)
    imp.set_moved_output(op, reshape(imp, x, x_shape))


@converter("TRANSPOSE")
def transpose(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 0)
    perm = [normalize_axis(p, len(shape(x))) for p in imp.ints(op, 1, "perm")]
    y = nn.TransposeOp.make(x, perm=perm, result_elements=imp.moved_element(op, x))
    imp.set_moved_output(op, imp.emit(y))


@converter("CONCATENATION")
def concatenation(imp: TFLiteImporter, op: OperatorInfo) -> None:
    o = imp.options(op, "ConcatenationOptions")
    values = imp.inputs(op)
    if not values:
        raise imp.fail("no inputs")
    y = nn.ConcatOp.make(
        values,
        result_elements=imp.out_element(op),
        axis=normalize_axis(o.Axis(), len(shape(values[0]))),
        activation=activation(o.FusedActivationFunction()),
    )
    imp.set_output(op, imp.emit(y))


def _split(imp: TFLiteImporter, op: OperatorInfo, x: SSAValue, axis: int, sizes: list[int]) -> None:
    if len(sizes) != len(op.outputs):
        raise imp.fail(f"{len(sizes)} pieces for {len(op.outputs)} outputs")
    results = imp.emit_all(nn.SplitOp.make(x, axis=axis, sizes=sizes))
    for k, value in enumerate(results):
        imp.set_moved_output(op, value, k)


@converter("PACK")
def pack(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """Stack along a new axis: each input gets a unit dimension there, then one concat."""
    values = imp.inputs(op)
    if not values:
        raise imp.fail("no inputs")
    rank = len(shape(values[0]))
    axis = normalize_axis(imp.options(op, "PackOptions").Axis(), rank + 1)
    expanded = []
    for value in values:
        target = list(shape(value))
        target.insert(axis, 1)
        expanded.append(reshape(imp, value, target))
    y = nn.ConcatOp.make(expanded, axis=axis, result_elements=imp.out_element(op))
    imp.set_output(op, imp.emit(y))


@converter("UNPACK")
def unpack(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """Split into unit slices along the axis, then drop that axis from each."""
    x = imp.input(op, 0)
    x_shape = shape(x)
    axis = normalize_axis(imp.options(op, "UnpackOptions").Axis(), len(x_shape))
    count = len(op.outputs)
    if x_shape[axis] != count:
        raise imp.fail(f"{count} outputs for dimension {axis} of size {x_shape[axis]}")
    pieces = imp.emit_all(nn.SplitOp.make(x, axis=axis, sizes=[1] * count))
    target = [size for d, size in enumerate(x_shape) if d != axis]
    for k, piece in enumerate(pieces):
        imp.set_moved_output(op, reshape(imp, piece, target), k)


@converter("SPLIT")
def split(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 1, "input")
    x_shape = shape(x)
    axis = normalize_axis(one(imp, imp.ints(op, 0, "axis"), "axis"), len(x_shape))
    count = len(op.outputs)
    size = x_shape[axis]
    if size < 0:
        raise Unsupported("splitting a dynamic dimension")
    if size % count:
        raise imp.fail(f"dimension {axis} of size {size} does not split into {count} pieces")
    _split(imp, op, x, axis, [size // count] * count)


@converter("SPLIT_V")
def split_v(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 0, "input")
    x_shape = shape(x)
    sizes = imp.ints(op, 1, "size_splits")
    axis = normalize_axis(one(imp, imp.ints(op, 2, "axis"), "axis"), len(x_shape))
    if sizes.count(-1) == 1:
        if x_shape[axis] < 0:
            raise Unsupported("splitting a dynamic dimension")
        sizes[sizes.index(-1)] = x_shape[axis] - (sum(sizes) + 1)
    _split(imp, op, x, axis, sizes)


@converter("SLICE")
def slice_op(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 0)
    x_shape = shape(x)
    begin = imp.ints(op, 1, "begin")
    size = imp.ints(op, 2, "size")
    if len(begin) != len(x_shape) or len(size) != len(x_shape):
        raise imp.fail(f"begin {begin} and size {size} do not match rank {len(x_shape)}")
    end = []
    for b, s, dim in zip(begin, size, x_shape):
        if s == -1:
            if dim < 0:
                raise Unsupported("a slice to the end of a dynamic dimension")
            end.append(dim)
        else:
            end.append(b + s)
    y = nn.SliceOp.make(x, begin=begin, end=end, strides=[1] * len(x_shape))
    imp.set_moved_output(op, imp.emit(y))


@converter("STRIDED_SLICE")
def strided_slice(imp: TFLiteImporter, op: OperatorInfo) -> None:
    o = imp.options(op, "StridedSliceOptions")
    x = imp.input(op, 0)
    x_shape = shape(x)
    if any(d < 0 for d in x_shape):
        raise Unsupported("a strided slice of a dynamic shape")
    spec = resolve_strided_slice(
        x_shape,
        imp.ints(op, 1, "begin"),
        imp.ints(op, 2, "end"),
        imp.ints(op, 3, "strides"),
        begin_mask=o.BeginMask(),
        end_mask=o.EndMask(),
        ellipsis_mask=o.EllipsisMask(),
        new_axis_mask=o.NewAxisMask(),
        shrink_axis_mask=o.ShrinkAxisMask(),
        offset=bool(o.Offset()),
    )
    y = x
    if not spec.is_identity(x_shape):
        y = imp.emit(nn.SliceOp.make(x, begin=spec.begin, end=spec.end, strides=spec.strides))
    imp.set_moved_output(op, reshape(imp, y, spec.output_shape))


@converter("PAD", "PADV2")
def pad(imp: TFLiteImporter, op: OperatorInfo) -> None:
    x = imp.input(op, 0)
    pads = _paddings(imp, op, len(shape(x)))
    source = element(x)
    value = 0.0
    if imp.tensor(op, 2) is not None:
        stored = imp.constant(op, 2, "constant_values").reshape(-1)
        if stored.size != 1:
            raise imp.fail(f"constant_values must hold one value, got {stored.size}")
        value = float(stored[0])  # a quantized pad value is the stored integer already
    elif isinstance(source, UniformQuantizedType):
        out = imp.out_element(op)
        assert isinstance(out, UniformQuantizedType)
        value = float(out.zero_point_values[0])  # TFLite pads with the output's zero point
    imp.set_moved_output(op, imp.emit(nn.PadOp.make(x, pads=pads, value=value)))


def _paddings(imp: TFLiteImporter, op: OperatorInfo, rank: int) -> list[int]:
    paddings = imp.constant(op, 1, "paddings")
    if paddings.size != 2 * rank:
        raise imp.fail(f"paddings of shape {list(paddings.shape)} for a rank-{rank} input")
    pads = [int(v) for v in paddings.reshape(-1)]
    if any(p < 0 for p in pads):
        raise imp.fail(f"negative paddings {pads}")
    return pads


@converter("MIRROR_PAD")
def mirror_pad(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """REFLECT is `nn.pad` mode reflect; SYMMETRIC (the edge repeated) is built from reversed
    slices concatenated around the input, one dimension at a time."""
    x = imp.input(op, 0)
    x_shape = shape(x)
    pads = _paddings(imp, op, len(x_shape))
    mode = imp.options(op, "MirrorPadOptions").Mode()
    if mode == tflite.MirrorPadMode.REFLECT:
        y = imp.emit(nn.PadOp.make(x, pads=pads, mode="reflect"))
    elif mode == tflite.MirrorPadMode.SYMMETRIC:
        y = x
        for d, size in enumerate(x_shape):
            before, after = pads[2 * d], pads[2 * d + 1]
            if not (before or after):
                continue
            if size < 0:
                raise Unsupported("symmetric padding of a dynamic dimension")
            if max(before, after) > size:
                raise imp.fail(f"symmetric padding {max(before, after)} exceeds size {size}")
            pieces = []
            if before:
                pieces.append(_reversed_slice(imp, y, d, before - 1, -1))
            pieces.append(y)
            if after:
                pieces.append(_reversed_slice(imp, y, d, size - 1, size - after - 1))
            y = imp.emit(nn.ConcatOp.make(pieces, axis=d, result_elements=element(y)))
    else:
        raise Unsupported(f"mirror pad mode {mode}")
    imp.set_moved_output(op, y)


def _reversed_slice(imp: TFLiteImporter, x: SSAValue, dim: int, start: int, stop: int) -> SSAValue:
    """`x[start:stop:-1]` along `dim` (stop -1: through index 0)."""
    x_shape = shape(x)
    begin = [start if d == dim else 0 for d in range(len(x_shape))]
    end = [stop if d == dim else size for d, size in enumerate(x_shape)]
    strides = [-1 if d == dim else 1 for d in range(len(x_shape))]
    return imp.emit(nn.SliceOp.make(x, begin=begin, end=end, strides=strides))


@converter("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def resize(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """TFLite's flags as ONNX-style coordinate modes (bit-exact against TFLite, see
    tests/test_reference_quant_nn.py)."""
    x = imp.input(op, 0)
    size = imp.ints(op, 1, "size")
    if len(size) != 2:
        raise imp.fail(f"size must hold 2 values, got {size}")
    bilinear = op.op_type == "RESIZE_BILINEAR"
    table = "ResizeBilinearOptions" if bilinear else "ResizeNearestNeighborOptions"
    o = imp.options(op, table)
    align, half = bool(o.AlignCorners()), bool(o.HalfPixelCenters())
    if align and half:
        raise Unsupported("align_corners together with half_pixel_centers")
    if bilinear:
        props: dict[str, Any] = {
            "mode": "bilinear",
            "coordinate_mode": "align_corners" if align else "half_pixel" if half else "asymmetric",
        }
    elif align:
        props = {"coordinate_mode": "align_corners", "nearest_mode": "round_prefer_ceil"}
    elif half:
        props = {"coordinate_mode": "tf_half_pixel_for_nn", "nearest_mode": "floor"}
    else:
        props = {"coordinate_mode": "asymmetric", "nearest_mode": "floor"}
    y = nn.ResizeOp.make(x, size=size, layout="NHWC", **props)
    imp.set_moved_output(op, imp.emit(y))


@converter("GATHER")
def gather(imp: TFLiteImporter, op: OperatorInfo) -> None:
    o = imp.options(op, "GatherOptions")
    x = imp.input(op, 0)
    indices = imp.input(op, 1)
    axis = normalize_axis(o.Axis(), len(shape(x)))
    batch_dims = o.BatchDims()
    if batch_dims < 0:
        batch_dims += len(shape(indices))
    y = nn.GatherOp.make(x, indices, axis=axis, batch_dims=batch_dims)
    imp.set_moved_output(op, imp.emit(y))


@converter("DEPTH_TO_SPACE")
def depth_to_space(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """[N, H, W, b*b*C] -> [N, H, W, b, b, C] -> [N, H, b, W, b, C] -> [N, H*b, W*b, C]."""
    x = imp.input(op, 0)
    block = imp.options(op, "DepthToSpaceOptions").BlockSize()
    n, h, w, c = _static_nhwc(imp, x)
    if block <= 0 or c % (block * block):
        raise imp.fail(f"block size {block} does not divide the {c} channels")
    depth = c // (block * block)
    y = reshape(imp, x, [n, h, w, block, block, depth])
    y = imp.emit(nn.TransposeOp.make(y, perm=[0, 1, 3, 2, 4, 5]))
    imp.set_moved_output(op, reshape(imp, y, [n, h * block, w * block, depth]))


@converter("SPACE_TO_DEPTH")
def space_to_depth(imp: TFLiteImporter, op: OperatorInfo) -> None:
    """[N, H, W, C] -> [N, H/b, b, W/b, b, C] -> [N, H/b, W/b, b, b, C] -> [.., b*b*C]."""
    x = imp.input(op, 0)
    block = imp.options(op, "SpaceToDepthOptions").BlockSize()
    n, h, w, c = _static_nhwc(imp, x)
    if block <= 0 or h % block or w % block:
        raise imp.fail(f"block size {block} does not divide the spatial size {h}x{w}")
    y = reshape(imp, x, [n, h // block, block, w // block, block, c])
    y = imp.emit(nn.TransposeOp.make(y, perm=[0, 1, 3, 2, 4, 5]))
    imp.set_moved_output(op, reshape(imp, y, [n, h // block, w // block, block * block * c]))


def _static_nhwc(imp: TFLiteImporter, x: SSAValue) -> tuple[int, int, int, int]:
    x_shape = shape(x)
    if len(x_shape) != 4:
        raise imp.fail(f"expected a 4-D NHWC input, got shape {list(x_shape)}")
    if any(d < 0 for d in x_shape[1:]):
        raise Unsupported("a dynamic spatial or channel size")
    n, h, w, c = x_shape
    return n, h, w, c
