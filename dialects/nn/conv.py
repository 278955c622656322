"""`nn` convolution, matrix product, pooling and normalisation ops.

Layout rules (docs/design.md §2): data is `NHWC` or `NCHW` (the `layout` property, always
printed); conv2d filters follow it, `OHWI` for NHWC and `OIHW` for NCHW, with
``I = C_in / groups`` (depthwise is `groups = C_in`). conv2d_transpose filters are `OHWI` for
NHWC (TFLite TRANSPOSE_CONV) and `IOHW` for NCHW (ONNX ConvTranspose). `pads` is
``[top, left, bottom, right]``.

Quantized forms follow TFLite: int8/uint8/int16 activations, filters quantized per tensor or
per output channel (the filter's output-channel dimension), an i32 (i64 for int16
activations) bias, a quantized result with its own scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import FloatAttr, IntegerType, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from irc.dialects.nn.base import (
    DYNAMIC,
    NNOp,
    Shape,
    activation_prop,
    bool_prop,
    broadcast_shapes,
    check_layout_and_activation,
    check_length,
    check_non_negative,
    check_positive,
    check_rank,
    check_same_float_or_quantized,
    element_of,
    float_prop,
    format_shape,
    get_bool,
    get_int,
    get_ints,
    get_str,
    int_prop,
    ints_prop,
    is_float,
    is_integer,
    is_quantized,
    layout_prop,
    tensor_type,
)
from irc.dialects.quant import UniformQuantizedType, quantized_element

# ---- Shape helpers -----------------------------------------------------------------------------


def spatial_dims(shape: Shape, layout: str) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a rank-4 activation in `layout`."""
    if layout == "NHWC":
        n, h, w, c = shape
    else:
        n, c, h, w = shape
    return n, c, h, w


def make_activation_shape(n: int, c: int, h: int, w: int, layout: str) -> Shape:
    return (n, h, w, c) if layout == "NHWC" else (n, c, h, w)


def window_output_size(size: int, kernel: int, stride: int, dilation: int, pad: int) -> int:
    """Output length of a sliding window (`pad` is the sum of both sides); -1 if dynamic."""
    if size < 0 or kernel < 0:
        return DYNAMIC
    effective = dilation * (kernel - 1) + 1
    if size + pad < effective:
        raise VerifyException(
            f"window of size {effective} (kernel {kernel}, dilation {dilation}) does not fit "
            f"in an input of size {size} padded by {pad}"
        )
    return (size + pad - effective) // stride + 1


def _check_window_props(props: Mapping[str, Attribute]) -> tuple[Sequence[int], ...]:
    strides, dilations, pads = (get_ints(props, n) for n in ("strides", "dilations", "pads"))
    check_length(strides, 2, "strides")
    check_length(dilations, 2, "dilations")
    check_length(pads, 4, "pads")
    check_positive(strides, "strides")
    check_positive(dilations, "dilations")
    check_non_negative(pads, "pads")
    check_layout_and_activation(props)
    return strides, dilations, pads


def _verify_quantized_weights(
    input: Attribute,
    weights: TensorType,
    bias: TensorType | None,
    result: Attribute,
    channel_axis: int,
    weights_name: str,
) -> None:
    """TFLite's quantized conv/FC typing: quantized data, weights per tensor or per channel."""
    wq = quantized_element(weights)
    if wq is None:
        raise VerifyException(
            f"{weights_name} must be quantized when the input is, got {weights.element_type}"
        )
    if not isinstance(result, UniformQuantizedType):
        raise VerifyException(f"result must be quantized when the input is, got {result}")
    assert isinstance(input, UniformQuantizedType)
    if input.storage_type != result.storage_type:
        raise VerifyException(
            f"result stores {result.storage_type} but the input stores {input.storage_type}"
        )
    if (axis := wq.axis) is not None and axis != channel_axis:
        raise VerifyException(
            f"{weights_name} must be quantized per tensor or along the output-channel dimension "
            f"{channel_axis}, got dimension {axis}"
        )
    if bias is None:
        return
    element = bias.element_type
    storage = element.storage_type if isinstance(element, UniformQuantizedType) else element
    if not isinstance(storage, IntegerType) or storage.width.data not in (32, 64):
        raise VerifyException(f"bias of a quantized op must be i32 or i64, got {element}")


def _verify_integer_product(
    named: Sequence[tuple[str, Attribute]], result: Attribute, bias: Attribute | None
) -> None:
    """Integer semantics (the form `lower-quantized` produces): exact accumulation.

    Integer operands of any width accumulate exactly into an i32 or i64 result; a bias has
    the result's type.
    """
    for name, element in named:
        if not is_integer(element):
            raise VerifyException(f"{name} must be an integer tensor like the input, got {element}")
    if not (is_integer(result) and result.width.data in (32, 64)):
        raise VerifyException(f"an integer product accumulates into i32 or i64, got {result}")
    if bias is not None and bias != result:
        raise VerifyException(f"bias element type {bias} differs from the accumulator {result}")


def _verify_conv_like_elements(op: NNOp, channel_axis: int, weights_name: str) -> None:
    input_el = element_of(op.operands[0])
    weights = op.operands[1].type
    assert isinstance(weights, TensorType)
    bias = tensor_type(op.operands[2], "bias") if len(op.operands) > 2 else None
    result_el = element_of(op.results[0])
    if is_quantized(input_el):
        _verify_quantized_weights(input_el, weights, bias, result_el, channel_axis, weights_name)
        return
    if is_integer(input_el):
        _verify_integer_product(
            [(weights_name, weights.element_type)],
            result_el,
            None if bias is None else bias.element_type,
        )
        return
    if not is_float(input_el):
        raise VerifyException(f"input must be a float, integer or quantized tensor, got {input_el}")
    named = [("input", input_el), (weights_name, weights.element_type), ("result", result_el)]
    if bias is not None:
        named.append(("bias", bias.element_type))
    check_same_float_or_quantized(named, allow_quantized=False)


def _check_bias(bias_shape: Shape | None, channels: int) -> None:
    if bias_shape is None:
        return
    if len(bias_shape) != 1 or not (bias_shape[0] < 0 or channels < 0 or bias_shape[0] == channels):
        raise VerifyException(
            f"expected a bias of shape {format_shape((channels,))}, got {format_shape(bias_shape)}"
        )


# ---- Convolution -------------------------------------------------------------------------------


@irdl_op_definition
class Conv2DOp(NNOp):
    """2-D convolution; `groups` > 1 is a grouped conv, `groups = C_in` a depthwise one.

    Filter `OHWI` (NHWC) or `OIHW` (NCHW) with ``I = C_in / groups``; optional bias `[O]`;
    `activation` is fused after the bias.

    Example:
    ```mlir
    %y = nn.conv2d %x, %w, %b strides = [2, 2] pads = [0, 0, 1, 1] layout = "NHWC"
        activation = "relu6"
        : tensor<1x8x8x3xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<1x4x4x16xf32>
    ```
    """

    name = "nn.conv2d"

    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)

    strides = ints_prop([1, 1])
    pads = ints_prop([0, 0, 0, 0])
    dilations = ints_prop([1, 1])
    groups = int_prop(1)
    layout = layout_prop()
    activation = activation_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        x, w, *rest = operand_shapes
        strides, dilations, pads = _check_window_props(props)
        layout = get_str(props, "layout")
        groups = get_int(props, "groups")
        check_rank(x, 4, "input")
        if len(w) != 4:
            raise VerifyException(f"expected a 4-D filter, got rank {len(w)}")
        if groups < 1:
            raise VerifyException(f"groups must be positive, got {groups}")
        n, c, h, wd = spatial_dims(x, layout)
        if layout == "NHWC":
            out_c, kh, kw, in_c = w
        else:
            out_c, in_c, kh, kw = w
        if c >= 0 and c % groups:
            raise VerifyException(f"input channels {c} are not divisible by groups {groups}")
        if out_c >= 0 and out_c % groups:
            raise VerifyException(f"output channels {out_c} are not divisible by groups {groups}")
        if c >= 0 and in_c >= 0 and in_c * groups != c:
            raise VerifyException(
                f"filter expects {in_c * groups} input channels ({in_c} per group x {groups} "
                f"group{'s' if groups != 1 else ''}), input has {c}"
            )
        _check_bias(rest[0] if rest else None, out_c)
        oh = window_output_size(h, kh, strides[0], dilations[0], pads[0] + pads[2])
        ow = window_output_size(wd, kw, strides[1], dilations[1], pads[1] + pads[3])
        return [make_activation_shape(n, out_c, oh, ow, layout)]

    def verify_element_types(self) -> None:
        _verify_conv_like_elements(self, channel_axis=0, weights_name="filter")


@irdl_op_definition
class Conv2DTransposeOp(NNOp):
    """2-D transposed convolution (the gradient of conv2d with respect to its input).

    Filter `OHWI` for NHWC (TFLite TRANSPOSE_CONV) or `IOHW` for NCHW (ONNX ConvTranspose),
    here with ``O = C_out / groups`` for IOHW and ``I = C_in / groups`` for OHWI. Output size
    per spatial dim: ``(in - 1) * stride - pad_begin - pad_end + dilation * (k - 1) + 1 +
    output_padding``.

    Example:
    ```mlir
    %y = nn.conv2d_transpose %x, %w strides = [2, 2] layout = "NHWC"
        : tensor<1x4x4x8xf32>, tensor<4x2x2x8xf32> -> tensor<1x8x8x4xf32>
    ```
    """

    name = "nn.conv2d_transpose"

    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)

    strides = ints_prop([1, 1])
    pads = ints_prop([0, 0, 0, 0])
    dilations = ints_prop([1, 1])
    output_padding = ints_prop([0, 0])
    groups = int_prop(1)
    layout = layout_prop()
    activation = activation_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        x, w, *rest = operand_shapes
        strides, dilations, pads = _check_window_props(props)
        output_padding = get_ints(props, "output_padding")
        check_length(output_padding, 2, "output_padding")
        check_non_negative(output_padding, "output_padding")
        layout = get_str(props, "layout")
        groups = get_int(props, "groups")
        check_rank(x, 4, "input")
        if len(w) != 4:
            raise VerifyException(f"expected a 4-D filter, got rank {len(w)}")
        if groups < 1:
            raise VerifyException(f"groups must be positive, got {groups}")
        n, c, h, wd = spatial_dims(x, layout)
        if layout == "NHWC":
            out_c, kh, kw, in_per_group = w
            filter_in = in_per_group * groups if in_per_group >= 0 else DYNAMIC
        else:
            filter_in, out_per_group, kh, kw = w
            out_c = out_per_group * groups if out_per_group >= 0 else DYNAMIC
        if c >= 0 and filter_in >= 0 and c != filter_in:
            raise VerifyException(f"filter expects {filter_in} input channels, input has {c}")
        _check_bias(rest[0] if rest else None, out_c)
        sizes = []
        for i, size in enumerate((h, wd)):
            k = (kh, kw)[i]
            if size < 0 or k < 0:
                sizes.append(DYNAMIC)
                continue
            out = (
                (size - 1) * strides[i]
                - pads[i]
                - pads[i + 2]
                + dilations[i] * (k - 1)
                + 1
                + output_padding[i]
            )
            if out <= 0:
                raise VerifyException(f"output size {out} along spatial dimension {i} is empty")
            sizes.append(out)
        return [make_activation_shape(n, out_c, sizes[0], sizes[1], layout)]

    def verify_element_types(self) -> None:
        layout = self.layout.data
        _verify_conv_like_elements(
            self, channel_axis=0 if layout == "NHWC" else 1, weights_name="filter"
        )


# ---- Matrix products ---------------------------------------------------------------------------


@irdl_op_definition
class FullyConnectedOp(NNOp):
    """Fully connected layer: ``y[..., n] = sum_k x[..., k] * w[n, k] + b[n]``.

    Weights are `[N, K]` (TFLite's layout); leading input dimensions are kept (importers
    reshape a TFLite input to `[batch, K]` first when the model asks for it).

    Example:
    ```mlir
    %y = nn.fully_connected %x, %w, %b activation = "relu"
        : tensor<1x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<1x10xf32>
    ```
    """

    name = "nn.fully_connected"

    input = operand_def(TensorType)
    weights = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)

    activation = activation_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        x, w, *rest = operand_shapes
        check_layout_and_activation(props)
        if not x:
            raise VerifyException("expected an input of rank >= 1, got a scalar")
        check_rank(w, 2, "weights")
        if x[-1] >= 0 and w[1] >= 0 and x[-1] != w[1]:
            raise VerifyException(f"input has {x[-1]} features but the weights expect {w[1]}")
        _check_bias(rest[0] if rest else None, w[0])
        return [(*x[:-1], w[0])]

    def verify_element_types(self) -> None:
        _verify_conv_like_elements(self, channel_axis=0, weights_name="weights")


@irdl_op_definition
class BatchMatmulOp(NNOp):
    """Batched matrix product ``[..., M, K] x [..., K, N] -> [..., M, N]``.

    Batch dimensions broadcast like numpy; `adj_x` / `adj_y` transpose the last two dims of
    an operand first (TFLite BATCH_MATMUL).

    Example:
    ```mlir
    %z = nn.batch_matmul %x, %y adj_y = true
        : tensor<2x3x4xf32>, tensor<2x5x4xf32> -> tensor<2x3x5xf32>
    ```
    """

    name = "nn.batch_matmul"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)

    adj_x = bool_prop(False)
    adj_y = bool_prop(False)

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        a, b = operand_shapes
        if len(a) < 2 or len(b) < 2:
            raise VerifyException(
                f"expected operands of rank >= 2, got ranks {len(a)} and {len(b)}"
            )
        m, ka = (a[-1], a[-2]) if get_bool(props, "adj_x") else (a[-2], a[-1])
        kb, n = (b[-1], b[-2]) if get_bool(props, "adj_y") else (b[-2], b[-1])
        if ka >= 0 and kb >= 0 and ka != kb:
            raise VerifyException(f"contraction sizes differ: {ka} and {kb}")
        batch = broadcast_shapes(a[:-2], b[:-2])
        return [(*batch, m, n)]

    def verify_element_types(self) -> None:
        lhs, rhs, out = (element_of(v) for v in (*self.operands, self.output))
        if is_quantized(lhs):
            for name, element in (("rhs", rhs), ("result", out)):
                if not is_quantized(element):
                    raise VerifyException(f"{name} must be quantized when lhs is, got {element}")
            return
        if is_integer(lhs):
            _verify_integer_product([("rhs", rhs)], out, None)
            return
        check_same_float_or_quantized(
            [("lhs", lhs), ("rhs", rhs), ("result", out)], allow_quantized=False
        )


# ---- Pooling -----------------------------------------------------------------------------------


class _Pool2DOp(NNOp):
    ACCEPTS_INTEGER: ClassVar[bool] = True
    input = operand_def(TensorType)
    output = result_def(TensorType)

    kernel = ints_prop()
    strides = ints_prop([1, 1])
    pads = ints_prop([0, 0, 0, 0])
    dilations = ints_prop([1, 1])
    layout = layout_prop()
    activation = activation_prop()

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        strides, dilations, pads = _check_window_props(props)
        kernel = get_ints(props, "kernel")
        check_length(kernel, 2, "kernel")
        check_positive(kernel, "kernel")
        check_rank(x, 4, "input")
        for i in range(2):
            if pads[i] >= kernel[i] or pads[i + 2] >= kernel[i]:
                raise VerifyException(
                    f"pads {list(pads)} must be smaller than kernel {list(kernel)}"
                )
        layout = get_str(props, "layout")
        n, c, h, w = spatial_dims(x, layout)
        oh = window_output_size(h, kernel[0], strides[0], dilations[0], pads[0] + pads[2])
        ow = window_output_size(w, kernel[1], strides[1], dilations[1], pads[1] + pads[3])
        return [make_activation_shape(n, c, oh, ow, layout)]


@irdl_op_definition
class MaxPool2DOp(_Pool2DOp):
    """2-D max pooling over `kernel` windows; padding never wins the max.

    Example:
    ```mlir
    %y = nn.max_pool2d %x kernel = [2, 2] strides = [2, 2] layout = "NHWC"
        : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
    ```
    """

    name = "nn.max_pool2d"


@irdl_op_definition
class AvgPool2DOp(_Pool2DOp):
    """2-D average pooling; padded cells are excluded from the count (TFLite) unless
    `count_include_pad = true` (ONNX's option).

    Example:
    ```mlir
    %y = nn.avg_pool2d %x kernel = [3, 3] pads = [1, 1, 1, 1] layout = "NCHW"
        : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
    ```
    """

    name = "nn.avg_pool2d"

    count_include_pad = bool_prop(False)


# ---- Normalisation -----------------------------------------------------------------------------


@irdl_op_definition
class BatchNormOp(NNOp):
    """Inference-form batch normalisation along the channel dimension of `layout`.

    ``y = (x - mean) / sqrt(variance + epsilon) * scale + offset``; the four parameter
    tensors are `[C]`. Any rank >= 2: the channel dimension is 1 for NCHW, the last for NHWC.
    `canonicalize` folds it into a preceding conv2d when the parameters are constant.

    Example:
    ```mlir
    %y = nn.batch_norm %x, %s, %o, %m, %v epsilon = 0.001 layout = "NCHW"
        : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
        -> tensor<1x4x8x8xf32>
    ```
    """

    name = "nn.batch_norm"

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    offset = operand_def(TensorType)
    mean = operand_def(TensorType)
    variance = operand_def(TensorType)
    output = result_def(TensorType)

    epsilon = float_prop(1e-5)
    layout = layout_prop()

    traits = traits_def(Pure())
    ACCEPTS_QUANTIZED: ClassVar[bool] = False

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        x, *params = operand_shapes
        check_layout_and_activation(props)
        if len(x) < 2:
            raise VerifyException(f"expected an input of rank >= 2, got rank {len(x)}")
        epsilon_attr = props["epsilon"]
        assert isinstance(epsilon_attr, FloatAttr)  # the property's declared kind
        epsilon = epsilon_attr.value.data
        if not epsilon >= 0:
            raise VerifyException(f"epsilon must be non-negative, got {epsilon}")
        channels = x[1] if get_str(props, "layout") == "NCHW" else x[-1]
        for name, p in zip(("scale", "offset", "mean", "variance"), params):
            if len(p) != 1 or not (p[0] < 0 or channels < 0 or p[0] == channels):
                raise VerifyException(
                    f"expected {name} of shape {format_shape((channels,))}, got {format_shape(p)}"
                )
        return [x]
