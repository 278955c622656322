"""`nn` constants, data-movement ops (reshape, transpose, concat, split, slice, pad, resize,
gather, broadcast_to) and reductions (reduce, softmax, log_softmax).

Data-movement ops keep their element type, quantization included (TFLite requires equal
quantization parameters for these, except concat whose inputs may differ); they also accept
plain integer tensors, as ONNX shape arithmetic needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Self

from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from irc.dialects.nn.base import (
    DYNAMIC,
    LAYOUTS,
    NNOp,
    Shape,
    activation_prop,
    attr_prop,
    bool_prop,
    check_layout_and_activation,
    check_length,
    check_non_negative,
    check_one_of,
    check_positive,
    check_rank,
    element_of,
    float_prop,
    format_shape,
    get_bool,
    get_floats,
    get_int,
    get_ints,
    get_str,
    int_prop,
    ints_prop,
    is_float,
    is_integer,
    is_quantized,
    layout_prop,
    normalize_axis,
    opt_floats_prop,
    product,
    shape_of,
    str_prop,
    tensor_type,
)
from irc.dialects.quant import UniformQuantizedType, quantized_element

if TYPE_CHECKING:
    import numpy as np

# ---- Constants ---------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(NNOp):
    """A constant tensor.

    `value` holds the data (float, integer, or the storage integers of a quantized tensor);
    when the result is quantized, its type follows after `->`. Large values print as
    ``dense<"0x...">`` hex and are built from bytes (`from_array`), never element by element.

    Example:
    ```mlir
    %w = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %q = nn.constant dense<[1, -2]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 0.5>>
    ```
    """

    name = "nn.constant"

    output = result_def(TensorType)
    value = attr_prop(DenseIntOrFPElementsAttr)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr, result_type: Attribute | None = None):
        super().__init__(
            result_types=[value.type if result_type is None else result_type],
            properties={"value": value},
        )

    @classmethod
    def from_array(cls, array: np.ndarray, result_type: Attribute | None = None) -> Self:
        """Build a constant from a numpy array, through its bytes (fast for big weights)."""
        return cls(dense_from_array(array), result_type)

    def to_array(self) -> np.ndarray:
        """The constant's data as a numpy array (a zero-copy view where possible)."""
        return array_from_dense(self.value)

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        value = props["value"]
        assert isinstance(value, DenseIntOrFPElementsAttr)
        return [tensor_type(value.get_type(), "value").get_shape()]

    def verify_element_types(self) -> None:
        data = self.value.get_type().element_type
        result = element_of(self.output)
        if isinstance(result, UniformQuantizedType):
            if not isinstance(data, IntegerType) or data.width != result.storage_type.width:
                raise VerifyException(
                    f"a quantized constant stores {result.storage_type}, got {data} data"
                )
        elif data != result:
            raise VerifyException(f"value element type {data} differs from result type {result}")

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)
        if self.output.type != self.value.get_type():
            printer.print_string(" -> ")
            printer.print_attribute(self.output.type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attributes = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense elements attribute", pos, parser.pos)
        result_type = None
        if parser.parse_optional_punctuation("->") is not None:
            result_type = parser.parse_type()
        op = cls(value, result_type)
        op.attributes |= attributes
        return op


def dense_from_array(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding `array`'s bytes (float16/32/64, bool, int8-64, uint8)."""
    import numpy as np  # not at import: irc-opt parses and prints IR without numpy

    from irc.dtypes import element_type

    array = np.asarray(array, order="C")  # not ascontiguousarray: it makes 0-d arrays 1-d
    dtype = array.dtype
    if dtype.kind == "u" and dtype != np.uint8:  # the one unsigned type: uint8 quantized storage
        raise ValueError(f"unsupported constant dtype {dtype}")
    try:
        element = element_type(dtype)
    except TypeError:
        raise ValueError(f"unsupported constant dtype {dtype}") from None
    if dtype == np.bool_:
        array = -array.astype(np.int8)  # xDSL stores an i1 `true` as all ones (-1), as it parses
    assert isinstance(element, IntegerType | AnyFloat)  # element_type makes no other kind
    return DenseIntOrFPElementsAttr(TensorType(element, array.shape), BytesAttr(array.tobytes()))


def array_from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The data of a dense attribute as a numpy array of its shape."""
    import numpy as np

    from irc.dtypes import numpy_dtype

    type_ = tensor_type(attr.get_type(), "value")
    dtype = numpy_dtype(type_)
    stored = np.dtype(np.int8) if dtype == np.bool_ else dtype  # i1: one byte, 0 or -1
    shape = type_.get_shape()
    data = np.frombuffer(attr.data.data, dtype=stored)
    if data.size == 1 and product(shape) != 1:
        data = np.broadcast_to(data, shape)  # a splat
    data = data.reshape(shape)
    return data.astype(np.bool_) if dtype == np.bool_ else data


# ---- Data movement -----------------------------------------------------------------------------


class DataMovementOp(NNOp):
    """An op that moves elements without changing them: one element type in and out."""

    def verify_element_types(self) -> None:
        data = element_of(self.operands[0])
        for i, result in enumerate(self.results):
            element = element_of(result)
            if not _same_data_element(data, element):
                label = "result" if len(self.results) == 1 else f"result #{i}"
                raise VerifyException(f"{label} element type {element} differs from input {data}")


def _same_data_element(a: Attribute, b: Attribute) -> bool:
    """Equal types; per-axis quantized types may differ in their axis (it moves with data)."""
    if isinstance(a, UniformQuantizedType) and isinstance(b, UniformQuantizedType):
        return a.with_axis(0) == b.with_axis(0) if a.is_per_axis and b.is_per_axis else a == b
    return a == b


@irdl_op_definition
class ReshapeOp(DataMovementOp):
    """Reshape without moving data; `shape` may hold one -1 for the inferred dimension.

    Example:
    ```mlir
    %y = nn.reshape %x shape = [1, -1] : tensor<1x7x7x64xf32> -> tensor<1x3136xf32>
    ```
    """

    name = "nn.reshape"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    shape = ints_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        target = list(get_ints(props, "shape"))
        if sum(1 for d in target if d == -1) > 1:
            raise VerifyException(f"shape {target} has more than one -1")
        if any(d < -1 for d in target):
            raise VerifyException(f"shape {target} has a negative dimension other than -1")
        count = product(x)
        known = product([d for d in target if d != -1])
        if -1 in target:
            if count >= 0:
                if known == 0 or count % known:
                    raise VerifyException(
                        f"cannot reshape {format_shape(x)} ({count} elements) into {target}"
                    )
                target[target.index(-1)] = count // known
            else:
                target[target.index(-1)] = DYNAMIC
        elif count >= 0 and count != known:
            raise VerifyException(
                f"cannot reshape {format_shape(x)} ({count} elements) into "
                f"{format_shape(target)} ({known} elements)"
            )
        return [tuple(target)]


@irdl_op_definition
class TransposeOp(DataMovementOp):
    """Permute dimensions: ``out.shape[i] = in.shape[perm[i]]``.

    A per-axis quantized dimension moves with the data.

    Example:
    ```mlir
    %y = nn.transpose %x perm = [0, 3, 1, 2] : tensor<1x8x8x3xf32> -> tensor<1x3x8x8xf32>
    ```
    """

    name = "nn.transpose"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = ints_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        perm = get_ints(props, "perm")
        if sorted(perm) != list(range(len(x))):
            raise VerifyException(
                f"perm {list(perm)} is not a permutation of the {len(x)} input dimensions"
            )
        return [tuple(x[p] for p in perm)]

    def verify_element_types(self) -> None:
        super().verify_element_types()
        source, result = quantized_element(self.input.type), quantized_element(self.output.type)
        if source is not None and (axis := source.axis) is not None:
            expected = list(get_ints(self.properties, "perm")).index(axis)
            if result is None or result.axis != expected:
                raise VerifyException(
                    f"the quantized dimension {axis} must move to {expected} in the result"
                )


@irdl_op_definition
class ConcatOp(NNOp):
    """Concatenate along `axis`; quantized inputs may have different scales (requantized).

    Example:
    ```mlir
    %y = nn.concat %a, %b axis = 3
        : tensor<1x8x8x2xf32>, tensor<1x8x8x3xf32> -> tensor<1x8x8x5xf32>
    ```
    """

    name = "nn.concat"

    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = int_prop()
    activation = activation_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        check_layout_and_activation(props)
        if not operand_shapes:
            raise VerifyException("expected at least one input")
        first = operand_shapes[0]
        axis = normalize_axis(get_int(props, "axis"), len(first))
        out = list(first)
        for i, shape in enumerate(operand_shapes[1:], start=1):
            if len(shape) != len(first):
                raise VerifyException(
                    f"input #{i} has rank {len(shape)}, input #0 has rank {len(first)}"
                )
            for d, (a, b) in enumerate(zip(out, shape)):
                if d == axis:
                    out[d] = DYNAMIC if a < 0 or b < 0 else a + b
                elif a >= 0 and b >= 0 and a != b:
                    raise VerifyException(f"input #{i} has size {b} in dimension {d}, expected {a}")
                elif a < 0:
                    out[d] = b
        return [tuple(out)]

    def verify_element_types(self) -> None:
        result = element_of(self.output)
        for i, value in enumerate(self.inputs):
            element = element_of(value)
            if isinstance(result, UniformQuantizedType):
                if not (
                    isinstance(element, UniformQuantizedType)
                    and element.storage_type == result.storage_type
                ):
                    raise VerifyException(
                        f"input #{i} must be quantized with storage {result.storage_type}, "
                        f"got {element}"
                    )
            elif element != result:
                raise VerifyException(
                    f"input #{i} element type {element} differs from result type {result}"
                )


@irdl_op_definition
class SplitOp(DataMovementOp):
    """Split along `axis` into pieces of the given `sizes`.

    Example:
    ```mlir
    %a, %b = nn.split %x axis = 1 sizes = [2, 6]
        : tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x6xf32>
    ```
    """

    name = "nn.split"

    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = int_prop()
    sizes = ints_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        axis = normalize_axis(get_int(props, "axis"), len(x))
        sizes = get_ints(props, "sizes")
        if not sizes:
            raise VerifyException("sizes must not be empty")
        check_non_negative(sizes, "sizes")
        if x[axis] >= 0 and sum(sizes) != x[axis]:
            raise VerifyException(
                f"sizes {list(sizes)} add up to {sum(sizes)}, but dimension {axis} has "
                f"{x[axis]} elements"
            )
        return [tuple(size if d == axis else x[d] for d in range(len(x))) for size in sizes]


@irdl_op_definition
class SliceOp(DataMovementOp):
    """Strided slice: ``out[i] = in[begin + i * stride]`` per dimension, `end` exclusive.

    Values are already resolved (no masks, no negative indices except `end = -1` with a
    negative stride, meaning "through index 0"). The result has
    ``max(0, ceil((end - begin) / stride))`` elements per dimension.

    Example:
    ```mlir
    %y = nn.slice %x begin = [0, 1] end = [2, 7] strides = [1, 2]
        : tensor<2x8xf32> -> tensor<2x3xf32>
    ```
    """

    name = "nn.slice"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    begin = ints_prop()
    end = ints_prop()
    strides = ints_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        begin, end, strides = (get_ints(props, n) for n in ("begin", "end", "strides"))
        for values, what in ((begin, "begin"), (end, "end"), (strides, "strides")):
            check_length(values, len(x), what)
        out = []
        for d, (size, b, e, s) in enumerate(zip(x, begin, end, strides)):
            if s == 0:
                raise VerifyException(f"stride of dimension {d} is zero")
            low_end = -1 if s < 0 else 0
            if b < 0 or e < low_end or (size >= 0 and (b > size or e > size)):
                raise VerifyException(
                    f"slice [{b}:{e}:{s}] of dimension {d} is out of range for size "
                    f"{'?' if size < 0 else size}"
                )
            count = max(0, -(-(e - b) // s))
            if count and size >= 0 and b >= size:
                raise VerifyException(f"begin {b} of dimension {d} is out of range for size {size}")
            out.append(count)
        return [tuple(out)]


PAD_MODES = ("constant", "reflect", "edge")


@irdl_op_definition
class PadOp(DataMovementOp):
    """Pad a tensor; `pads` holds (before, after) pairs per dimension, outermost first.

    `mode` is `constant` (with `value`; for quantized tensors the stored integer, not the real
    value), `reflect` (mirror without repeating the edge) or `edge`.

    Example:
    ```mlir
    %p = nn.pad %x pads = [0, 0, 1, 1, 1, 1, 0, 0]
        : tensor<1x4x4x2xf32> -> tensor<1x6x6x2xf32>
    ```
    """

    name = "nn.pad"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    pads = ints_prop()
    mode = str_prop("constant")
    value = float_prop(0.0)

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        pads = get_ints(props, "pads")
        mode = get_str(props, "mode")
        check_one_of(mode, PAD_MODES, "mode")
        check_length(pads, 2 * len(x), "pads")
        check_non_negative(pads, "pads")
        out = []
        for d, size in enumerate(x):
            before, after = pads[2 * d], pads[2 * d + 1]
            if mode == "reflect" and size >= 0 and max(before, after) >= size:
                raise VerifyException(
                    f"reflect padding {max(before, after)} of dimension {d} needs a size larger "
                    f"than the padding, got {size}"
                )
            if mode == "edge" and size == 0 and (before or after):
                raise VerifyException(f"edge padding of empty dimension {d}")
            out.append(DYNAMIC if size < 0 else size + before + after)
        return [tuple(out)]


RESIZE_MODES = ("nearest", "bilinear")
COORDINATE_MODES = (
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@irdl_op_definition
class ResizeOp(DataMovementOp):
    """Resize the spatial dimensions of an NHWC/NCHW tensor to `size = [height, width]`.

    `mode` is `nearest` or `bilinear`; `coordinate_mode` maps output to input coordinates as
    ONNX's `coordinate_transformation_mode` (TFLite: `align_corners`, `half_pixel` for
    bilinear half_pixel_centers, `tf_half_pixel_for_nn` for nearest half_pixel_centers,
    `asymmetric` otherwise); `nearest_mode` rounds nearest-neighbour coordinates. `scales`,
    when given, replaces ``out / in`` as the scale (ONNX Resize with `scales`).

    Example:
    ```mlir
    %y = nn.resize %x size = [16, 16] mode = "bilinear" coordinate_mode = "half_pixel"
        layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
    ```
    """

    name = "nn.resize"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    size = ints_prop()
    scales = opt_floats_prop()
    mode = str_prop("nearest")
    coordinate_mode = str_prop("half_pixel")
    nearest_mode = str_prop("round_prefer_floor")
    layout = layout_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        check_rank(x, 4, "input")
        size = get_ints(props, "size")
        check_length(size, 2, "size")
        check_positive(size, "size")
        check_one_of(get_str(props, "mode"), RESIZE_MODES, "mode")
        check_one_of(get_str(props, "coordinate_mode"), COORDINATE_MODES, "coordinate_mode")
        check_one_of(get_str(props, "nearest_mode"), NEAREST_MODES, "nearest_mode")
        layout = get_str(props, "layout")
        check_one_of(layout, LAYOUTS, "layout")
        scales = get_floats(props, "scales")
        if scales is not None:
            check_length(scales, 2, "scales")
            if any(not s > 0 for s in scales):
                raise VerifyException(f"scales must be positive, got {list(scales)}")
        if layout == "NHWC":
            return [(x[0], size[0], size[1], x[3])]
        return [(x[0], x[1], size[0], size[1])]


@irdl_op_definition
class GatherOp(DataMovementOp):
    """Gather slices of `input` along `axis` at integer `indices` (ONNX Gather, TFLite GATHER).

    ``out.shape = in.shape[:axis] + indices.shape[batch_dims:] + in.shape[axis + 1:]``;
    negative indices count from the end.

    Example:
    ```mlir
    %y = nn.gather %x, %i axis = 1 : tensor<2x5xf32>, tensor<3xi32> -> tensor<2x3xf32>
    ```
    """

    name = "nn.gather"

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = int_prop(0)
    batch_dims = int_prop(0)

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        x, indices = operand_shapes
        if not x:
            raise VerifyException("expected an input of rank >= 1, got a scalar")
        axis = normalize_axis(get_int(props, "axis"), len(x))
        batch_dims = get_int(props, "batch_dims")
        if not 0 <= batch_dims <= min(axis, len(indices)):
            raise VerifyException(
                f"batch_dims {batch_dims} must be in [0, {min(axis, len(indices))}]"
            )
        return [(*x[:axis], *indices[batch_dims:], *x[axis + 1 :])]

    def verify_element_types(self) -> None:
        super().verify_element_types()
        element = element_of(self.indices)
        if not is_integer(element):
            raise VerifyException(f"indices must be integers, got {element}")


@irdl_op_definition
class BroadcastToOp(DataMovementOp):
    """Broadcast a tensor to `shape` with numpy's rules (numpy.broadcast_to, TFLite BROADCAST_TO).

    Dimensions align from the right; each input dimension is 1 or equal to the target's, and
    missing leading dimensions are added. ONNX Expand (which broadcasts both ways) imports as
    this op with the broadcast shape. A per-axis quantized dimension moves right by the number
    of added dimensions.

    Example:
    ```mlir
    %y = nn.broadcast_to %x shape = [2, 3, 4] : tensor<3x1xf32> -> tensor<2x3x4xf32>
    ```
    """

    name = "nn.broadcast_to"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    shape = ints_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        target = get_ints(props, "shape")
        check_non_negative(target, "shape")
        offset = len(target) - len(x)
        if offset < 0 or any(
            size >= 0 and size not in (1, target[offset + d]) for d, size in enumerate(x)
        ):
            raise VerifyException(
                f"input shape {format_shape(x)} does not broadcast to shape {list(target)}"
            )
        return [tuple(target)]

    def verify_element_types(self) -> None:
        super().verify_element_types()
        source, result = quantized_element(self.input.type), quantized_element(self.output.type)
        if source is not None and (axis := source.axis) is not None:
            expected = axis + len(get_ints(self.properties, "shape")) - len(shape_of(self.input))
            if result is None or result.axis != expected:
                raise VerifyException(
                    f"the quantized dimension {axis} must move to {expected} in the result"
                )


# ---- Reductions --------------------------------------------------------------------------------

REDUCE_KINDS = ("mean", "sum", "max", "min", "prod")


@irdl_op_definition
class ReduceOp(NNOp):
    """Reduce over `axes` with `kind` = mean | sum | max | min | prod.

    `keepdims` keeps reduced dimensions with size 1. Axes may be negative; they must be unique.

    Example:
    ```mlir
    %y = nn.reduce %x kind = "mean" axes = [1, 2] keepdims = true
        : tensor<1x7x7x64xf32> -> tensor<1x1x1x64xf32>
    ```
    """

    name = "nn.reduce"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    kind = str_prop()
    axes = ints_prop()
    keepdims = bool_prop(False)

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        check_one_of(get_str(props, "kind"), REDUCE_KINDS, "kind")
        raw = get_ints(props, "axes")
        if not raw:
            raise VerifyException("axes must not be empty")
        axes = [normalize_axis(a, len(x), "axis") for a in raw]
        if len(set(axes)) != len(axes):
            raise VerifyException(f"axes {list(raw)} repeat a dimension")
        if get_bool(props, "keepdims"):
            return [tuple(1 if d in axes else size for d, size in enumerate(x))]
        return [tuple(size for d, size in enumerate(x) if d not in axes)]

    def verify_element_types(self) -> None:
        source, result = element_of(self.input), element_of(self.output)
        if is_quantized(source):
            if not (
                isinstance(result, UniformQuantizedType)
                and isinstance(source, UniformQuantizedType)
                and result.storage_type == source.storage_type
            ):
                raise VerifyException(f"result must be quantized like the input, got {result}")
            return
        if not (is_float(source) or is_integer(source)) or source != result:
            raise VerifyException(f"result element type {result} differs from input {source}")


class _SoftmaxBase(NNOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = int_prop(-1)

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        if not x:
            raise VerifyException("expected an input of rank >= 1, got a scalar")
        normalize_axis(get_int(props, "axis"), len(x))
        return [tuple(x)]


@irdl_op_definition
class SoftmaxOp(_SoftmaxBase):
    """``exp(beta * x) / sum(exp(beta * x))`` along `axis` (TFLite's `beta`, default 1).

    Example:
    ```mlir
    %y = nn.softmax %x axis = 1 : tensor<1x10xf32> -> tensor<1x10xf32>
    ```
    """

    name = "nn.softmax"

    beta = float_prop(1.0)


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxBase):
    """``log(softmax(x))`` along `axis`."""

    name = "nn.log_softmax"
