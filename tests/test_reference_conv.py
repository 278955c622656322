"""Reference kernels of conv2d, conv2d_transpose, matrix products, pooling and batch_norm.

Float kernels are compared with onnxruntime running the equivalent single-op ONNX model
(NCHW, ONNX's layout); NHWC kernels are compared with the NCHW kernels on transposed inputs
and filters. Integer kernels (the arithmetic `lower-quantized` produces) are compared with
exact int64 computations written independently: einsum over sliding windows for
convolutions and products, plain Python loops for transposed convolution and pooling.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from onnx import helper
from onnx_support import run_onnx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block

from irc.dialects import nn
from irc.dtypes import element_type
from irc.targets.reference import kernel_for

RTOL, ATOL = 1e-4, 1e-5
OPSET = 19
"""AveragePool takes dilations from opset 19."""


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


# ---- Helpers -----------------------------------------------------------------------------------


def build(
    op_type: type[nn.NNOp],
    arrays: Sequence[np.ndarray | None],
    result: str | None = None,
    **props: object,
) -> nn.NNOp:
    """`op_type` on block arguments typed like `arrays` (None: an absent optional operand)."""
    present = [a for a in arrays if a is not None]
    block = Block(arg_types=[TensorType(element_type(a.dtype), a.shape) for a in present])
    args = iter(block.args)
    operands = [None if a is None else next(args) for a in arrays]
    elements = element_type(result) if result is not None else None
    return op_type.make(*operands, result_elements=elements, **props)


def run(op: nn.NNOp, *arrays: np.ndarray | None) -> np.ndarray:
    (out,) = kernel_for(op)(*(a for a in arrays if a is not None))
    assert out.shape == tuple(op.results[0].type.get_shape())  # type: ignore[attr-defined]
    return out


def onnxruntime_run(op_type: str, inputs: Sequence[np.ndarray | None], **attrs: object):
    """Run one ONNX node on `inputs` (None: an omitted optional input) with onnxruntime."""
    names = [f"in{i}" if a is not None else "" for i, a in enumerate(inputs)]
    node = helper.make_node(op_type, names, ["out"], **attrs)
    feeds = {name: a for name, a in zip(names, inputs) if a is not None}
    (out,) = run_onnx(node, feeds, opset=OPSET)
    return out


def normal(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def nchw_to_nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def check_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)


# ---- conv2d ------------------------------------------------------------------------------------

# (input NCHW, out channels, kernel, strides, dilations, pads, groups, bias)
CONV_CASES = {
    "3x3": ((1, 3, 9, 9), 8, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, True),
    "3x2_stride_2x1_asymmetric_pads": (
        (2, 4, 10, 7),
        6,
        (3, 2),
        (2, 1),
        (1, 1),
        (1, 0, 2, 1),
        1,
        True,
    ),
    "dilated_grouped": ((1, 8, 12, 12), 8, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 2, False),
    "5x5_groups_3": ((1, 6, 11, 13), 9, (5, 5), (1, 2), (2, 1), (3, 0, 1, 2), 3, True),
    "depthwise_stride_2": ((1, 16, 14, 14), 16, (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), 16, True),
    "depthwise_multiplier_2": ((2, 4, 9, 9), 8, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, False),
    "depthwise_dilated": ((1, 5, 13, 11), 5, (3, 3), (2, 2), (2, 2), (2, 2, 2, 2), 5, True),
    "pointwise": ((1, 32, 7, 7), 16, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, True),
    "pointwise_stride_2_grouped": ((2, 12, 8, 8), 6, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 3, True),
    "kernel_covers_input": ((1, 3, 4, 4), 2, (4, 4), (1, 1), (1, 1), (0, 0, 0, 0), 1, True),
}


@pytest.mark.parametrize("case", CONV_CASES.values(), ids=CONV_CASES.keys())
def test_conv2d_matches_onnxruntime(case: tuple, rng: np.random.Generator) -> None:
    shape, oc, kernel, strides, dilations, pads, groups, has_bias = case
    x = normal(rng, *shape)
    w = normal(rng, oc, shape[1] // groups, *kernel)
    b = normal(rng, oc) if has_bias else None
    expected = onnxruntime_run(
        "Conv",
        [x, w, b],
        strides=strides,
        dilations=dilations,
        pads=pads,
        group=groups,
        kernel_shape=kernel,
    )
    props = dict(strides=strides, dilations=dilations, pads=pads, groups=groups)
    nchw = run(build(nn.Conv2DOp, [x, w, b], layout="NCHW", **props), x, w, b)
    check_close(nchw, expected)

    x_nhwc, w_ohwi = nchw_to_nhwc(x), nchw_to_nhwc(w)
    nhwc = run(build(nn.Conv2DOp, [x_nhwc, w_ohwi, b], layout="NHWC", **props), x_nhwc, w_ohwi, b)
    check_close(nhwc, nchw_to_nhwc(nchw))


@pytest.mark.parametrize(
    ("activation", "low", "high"), [("relu", 0, np.inf), ("relu6", 0, 6), ("relu_n1_to_1", -1, 1)]
)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d_fused_activation(
    activation: str, low: float, high: float, layout: str, rng: np.random.Generator
) -> None:
    x, w, b = 3 * normal(rng, 1, 4, 6, 6), normal(rng, 4, 1, 3, 3), normal(rng, 4)
    expected = onnxruntime_run("Conv", [x, w, b], pads=[1, 1, 1, 1], group=4)
    if layout == "NHWC":
        x, w, expected = nchw_to_nhwc(x), nchw_to_nhwc(w), nchw_to_nhwc(expected)
    op = build(
        nn.Conv2DOp, [x, w, b], pads=[1, 1, 1, 1], groups=4, layout=layout, activation=activation
    )
    check_close(run(op, x, w, b), np.clip(expected, low, high))


def test_tanh_activation_on_fully_connected(rng: np.random.Generator) -> None:
    x, w = normal(rng, 3, 8), normal(rng, 5, 8)
    op = build(nn.FullyConnectedOp, [x, w, None], activation="tanh")
    check_close(run(op, x, w), np.tanh(onnxruntime_run("Gemm", [x, w], transB=1)))


# ---- conv2d_transpose --------------------------------------------------------------------------

# (input NCHW, out channels, kernel, strides, dilations, pads, output_padding, groups, bias)
TRANSPOSE_CASES = {
    "3x3_stride_2": ((1, 4, 5, 5), 6, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), (1, 1), 1, True),
    "2x3_stride_2x1_no_pads": (
        (2, 3, 4, 6),
        2,
        (2, 3),
        (2, 1),
        (1, 1),
        (0, 0, 0, 0),
        (0, 0),
        1,
        False,
    ),
    "dilated_grouped": ((1, 4, 5, 5), 4, (3, 3), (2, 2), (2, 2), (0, 1, 2, 0), (1, 0), 2, True),
    "depthwise_multiplier_2": (
        (1, 4, 6, 6),
        8,
        (4, 4),
        (2, 2),
        (1, 1),
        (1, 1, 1, 1),
        (0, 0),
        4,
        True,
    ),
    "output_padding_beyond_pads": (
        (1, 2, 3, 4),
        3,
        (2, 2),
        (3, 3),
        (1, 1),
        (0, 0, 0, 0),
        (2, 1),
        1,
        True,
    ),
    "stride_1_as_full_conv": (
        (1, 3, 5, 5),
        2,
        (3, 3),
        (1, 1),
        (1, 1),
        (0, 0, 0, 0),
        (0, 0),
        1,
        True,
    ),
}


def iohw_to_ohwi(w: np.ndarray, groups: int) -> np.ndarray:
    """ONNX's `[C_in, C_out/g, kh, kw]` filter as TFLite's `[C_out, kh, kw, C_in/g]`."""
    cin, ocg, kh, kw = w.shape
    grouped = w.reshape(groups, cin // groups, ocg, kh, kw).transpose(0, 2, 3, 4, 1)
    return np.ascontiguousarray(grouped.reshape(groups * ocg, kh, kw, cin // groups))


@pytest.mark.parametrize("case", TRANSPOSE_CASES.values(), ids=TRANSPOSE_CASES.keys())
def test_conv2d_transpose_matches_onnxruntime(case: tuple, rng: np.random.Generator) -> None:
    shape, oc, kernel, strides, dilations, pads, output_padding, groups, has_bias = case
    x = normal(rng, *shape)
    w = normal(rng, shape[1], oc // groups, *kernel)
    b = normal(rng, oc) if has_bias else None
    expected = onnxruntime_run(
        "ConvTranspose",
        [x, w, b],
        strides=strides,
        dilations=dilations,
        pads=pads,
        output_padding=output_padding,
        group=groups,
        kernel_shape=kernel,
    )
    props = dict(
        strides=strides,
        dilations=dilations,
        pads=pads,
        output_padding=output_padding,
        groups=groups,
    )
    nchw = run(build(nn.Conv2DTransposeOp, [x, w, b], layout="NCHW", **props), x, w, b)
    check_close(nchw, expected)

    x_nhwc, w_ohwi = nchw_to_nhwc(x), iohw_to_ohwi(w, groups)
    op = build(nn.Conv2DTransposeOp, [x_nhwc, w_ohwi, b], layout="NHWC", **props)
    check_close(run(op, x_nhwc, w_ohwi, b), nchw_to_nhwc(nchw))


# ---- Matrix products ---------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "k", "n"), [(1, 64, 10), (7, 33, 5), (16, 256, 128)])
@pytest.mark.parametrize("has_bias", [True, False])
def test_fully_connected_matches_gemm(
    m: int, k: int, n: int, has_bias: bool, rng: np.random.Generator
) -> None:
    x, w = normal(rng, m, k), normal(rng, n, k)
    b = normal(rng, n) if has_bias else None
    expected = onnxruntime_run("Gemm", [x, w, b], transB=1)
    check_close(run(build(nn.FullyConnectedOp, [x, w, b]), x, w, b), expected)


def test_fully_connected_keeps_leading_dims(rng: np.random.Generator) -> None:
    x, w, b = normal(rng, 2, 3, 4, 12), normal(rng, 5, 12), normal(rng, 5)
    expected = onnxruntime_run("Gemm", [x.reshape(-1, 12), w, b], transB=1).reshape(2, 3, 4, 5)
    check_close(run(build(nn.FullyConnectedOp, [x, w, b]), x, w, b), expected)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (2, 4, 5)),
        ((2, 1, 3, 4), (5, 4, 6)),
        ((1, 3, 4), (4, 2, 4, 1)),
        ((6, 8, 16), (16, 8)),
    ],
)
@pytest.mark.parametrize(
    ("adj_x", "adj_y"), [(False, False), (True, False), (False, True), (True, True)]
)
def test_batch_matmul_matches_onnxruntime(
    a_shape: tuple[int, ...],
    b_shape: tuple[int, ...],
    adj_x: bool,
    adj_y: bool,
    rng: np.random.Generator,
) -> None:
    a, b = normal(rng, *a_shape), normal(rng, *b_shape)
    expected = onnxruntime_run("MatMul", [a, b])
    # The op reads adjoint operands: hand it the transposed arrays.
    a_in = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if adj_x else a
    b_in = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if adj_y else b
    op = build(nn.BatchMatmulOp, [a_in, b_in], adj_x=adj_x, adj_y=adj_y)
    check_close(run(op, a_in, b_in), expected)


# ---- Pooling -----------------------------------------------------------------------------------

# (input NCHW, kernel, strides, dilations, pads)
POOL_CASES = {
    "2x2_stride_2": ((1, 3, 8, 8), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0)),
    "3x3_stride_2_padded": ((2, 4, 11, 9), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    "3x2_asymmetric_pads": ((1, 2, 7, 10), (3, 2), (1, 3), (1, 1), (0, 1, 2, 0)),
    "dilated": ((1, 3, 12, 12), (3, 3), (1, 2), (2, 2), (2, 1, 1, 2)),
    "global": ((1, 5, 7, 7), (7, 7), (1, 1), (1, 1), (0, 0, 0, 0)),
    "window_larger_than_output": ((2, 2, 6, 6), (5, 5), (1, 1), (1, 1), (1, 2, 2, 1)),
}


@pytest.mark.parametrize("case", POOL_CASES.values(), ids=POOL_CASES.keys())
def test_max_pool2d_matches_onnxruntime(case: tuple, rng: np.random.Generator) -> None:
    shape, kernel, strides, dilations, pads = case
    x = normal(rng, *shape)
    expected = onnxruntime_run(
        "MaxPool", [x], kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads
    )
    props = dict(kernel=kernel, strides=strides, dilations=dilations, pads=pads)
    nchw = run(build(nn.MaxPool2DOp, [x], layout="NCHW", **props), x)
    check_close(nchw, expected)
    x_nhwc = nchw_to_nhwc(x)
    check_close(
        run(build(nn.MaxPool2DOp, [x_nhwc], layout="NHWC", **props), x_nhwc), nchw_to_nhwc(nchw)
    )


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("case", POOL_CASES.values(), ids=POOL_CASES.keys())
def test_avg_pool2d_matches_onnxruntime(
    case: tuple, count_include_pad: bool, rng: np.random.Generator
) -> None:
    shape, kernel, strides, dilations, pads = case
    x = normal(rng, *shape)
    expected = onnxruntime_run(
        "AveragePool",
        [x],
        kernel_shape=kernel,
        strides=strides,
        dilations=dilations,
        pads=pads,
        count_include_pad=int(count_include_pad),
    )
    props = dict(
        kernel=kernel,
        strides=strides,
        dilations=dilations,
        pads=pads,
        count_include_pad=count_include_pad,
    )
    nchw = run(build(nn.AvgPool2DOp, [x], layout="NCHW", **props), x)
    check_close(nchw, expected)
    x_nhwc = nchw_to_nhwc(x)
    check_close(
        run(build(nn.AvgPool2DOp, [x_nhwc], layout="NHWC", **props), x_nhwc), nchw_to_nhwc(nchw)
    )


def test_pool_fused_activation(rng: np.random.Generator) -> None:
    x = 4 * normal(rng, 1, 8, 8, 3)
    op = build(
        nn.MaxPool2DOp, [x], kernel=[2, 2], strides=[2, 2], layout="NHWC", activation="relu6"
    )
    expected = np.clip(x.reshape(1, 4, 2, 4, 2, 3).max(axis=(2, 4)), 0, 6)
    check_close(run(op, x), expected)


# ---- batch_norm --------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 6), (2, 5, 7), (2, 3, 6, 5), (1, 2, 3, 4, 5)])
def test_batch_norm_matches_onnxruntime(shape: tuple[int, ...], rng: np.random.Generator) -> None:
    c = shape[1]
    x = normal(rng, *shape)
    scale, offset, mean = normal(rng, c), normal(rng, c), normal(rng, c)
    var = rng.uniform(0.1, 2.0, c).astype(np.float32)
    params = [scale, offset, mean, var]
    expected = onnxruntime_run("BatchNormalization", [x, *params], epsilon=1e-3)
    op = build(nn.BatchNormOp, [x, *params], epsilon=1e-3, layout="NCHW")
    nchw = run(op, x, *params)
    check_close(nchw, expected)
    # NHWC: the channel dimension is the last one, at any rank.
    x_last = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    op = build(nn.BatchNormOp, [x_last, *params], epsilon=1e-3, layout="NHWC")
    check_close(run(op, x_last, *params), np.moveaxis(nchw, 1, -1))


# ---- Integer semantics -------------------------------------------------------------------------


def int_array(rng: np.random.Generator, dtype: str, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def exact_conv_nchw(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    groups: int,
) -> np.ndarray:
    """int64 grouped conv: einsum over sliding windows of the zero-padded input."""
    x = np.pad(x.astype(np.int64), [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    oc, cg, kh, kw = w.shape
    extent = (dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1)
    windows = sliding_window_view(x, extent, axis=(2, 3))
    windows = windows[:, :, :: strides[0], :: strides[1], :: dilations[0], :: dilations[1]]
    n, _, oh, ow = windows.shape[:4]
    windows = windows.reshape(n, groups, cg, oh, ow, kh, kw)
    wg = w.astype(np.int64).reshape(groups, oc // groups, cg, kh, kw)
    return np.einsum("ngcyxij,gocij->ngoyx", windows, wg).reshape(n, oc, oh, ow)


INT_CONV_CASES = {
    "3x3_padded": ((2, 6, 7, 7), 5, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    "stride_2_grouped": ((1, 6, 9, 8), 4, (3, 2), (2, 2), (1, 1), (0, 1, 2, 0), 2),
    "depthwise_dilated": ((1, 8, 10, 10), 8, (3, 3), (2, 1), (2, 2), (2, 2, 2, 2), 8),
    "pointwise": ((1, 16, 5, 5), 8, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),
}


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", INT_CONV_CASES.values(), ids=INT_CONV_CASES.keys())
def test_int8_conv2d_is_exact(case: tuple, layout: str, rng: np.random.Generator) -> None:
    shape, oc, kernel, strides, dilations, pads, groups = case
    x = int_array(rng, "int8", *shape)
    w = int_array(rng, "int8", oc, shape[1] // groups, *kernel)
    b = rng.integers(-(2**20), 2**20, oc).astype(np.int32)
    expected = exact_conv_nchw(x, w, strides, dilations, pads, groups) + b[:, None, None]
    if layout == "NHWC":
        x, w, expected = nchw_to_nhwc(x), nchw_to_nhwc(w), nchw_to_nhwc(expected)
    props = dict(strides=strides, dilations=dilations, pads=pads, groups=groups, layout=layout)
    out = run(build(nn.Conv2DOp, [x, w, b], result="int32", **props), x, w, b)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)


def test_int16_conv2d_beyond_float32_precision_is_exact(rng: np.random.Generator) -> None:
    """Sums of int16 products need 40+ bits: float32 accumulation would lose them."""
    x = int_array(rng, "int16", 1, 64, 6, 6)
    w = int_array(rng, "int16", 4, 64, 3, 3)
    expected = exact_conv_nchw(x, w, (1, 1), (1, 1), (0, 0, 0, 0), 1)
    assert np.abs(expected).max() > 2**31
    out = run(build(nn.Conv2DOp, [x, w, None], result="int64", layout="NCHW"), x, w)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, expected)


def exact_conv_transpose_nchw(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int],
    pads: Sequence[int],
    output_padding: Sequence[int],
    groups: int,
) -> np.ndarray:
    """int64 transposed conv (IOHW filter, no dilation) by scattering every input pixel."""
    n, c, h, wd = x.shape
    _, ocg, kh, kw = w.shape
    cg = c // groups
    full_h, full_w = (h - 1) * strides[0] + kh, (wd - 1) * strides[1] + kw
    out = np.zeros(
        (n, groups * ocg, full_h + output_padding[0], full_w + output_padding[1]), np.int64
    )
    for g in range(groups):
        wg = w[g * cg : (g + 1) * cg].astype(np.int64)
        for y in range(h):
            for xx in range(wd):
                pixel = x[:, g * cg : (g + 1) * cg, y, xx].astype(np.int64)  # [N, Cg]
                patch = np.einsum("nc,cokl->nokl", pixel, wg)
                ys, xs = y * strides[0], xx * strides[1]
                out[:, g * ocg : (g + 1) * ocg, ys : ys + kh, xs : xs + kw] += patch
    oh = full_h - pads[0] - pads[2] + output_padding[0]
    ow = full_w - pads[1] - pads[3] + output_padding[1]
    return out[:, :, pads[0] : pads[0] + oh, pads[1] : pads[1] + ow]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize(
    ("shape", "oc", "strides", "pads", "output_padding", "groups"),
    [
        ((1, 4, 4, 5), 6, (2, 2), (1, 1, 1, 1), (1, 0), 1),
        ((2, 4, 3, 3), 4, (3, 2), (0, 1, 1, 0), (2, 1), 2),
    ],
)
def test_int8_conv2d_transpose_is_exact(
    shape: tuple[int, ...],
    oc: int,
    strides: tuple[int, int],
    pads: tuple[int, ...],
    output_padding: tuple[int, int],
    groups: int,
    layout: str,
    rng: np.random.Generator,
) -> None:
    x = int_array(rng, "int8", *shape)
    w = int_array(rng, "int8", shape[1], oc // groups, 3, 3)
    b = rng.integers(-1000, 1000, oc).astype(np.int32)
    expected = exact_conv_transpose_nchw(x, w, strides, pads, output_padding, groups)
    expected = expected + b[:, None, None]
    if layout == "NHWC":
        x, w, expected = nchw_to_nhwc(x), iohw_to_ohwi(w, groups), nchw_to_nhwc(expected)
    props = dict(strides=strides, pads=pads, output_padding=output_padding, groups=groups)
    op = build(nn.Conv2DTransposeOp, [x, w, b], result="int32", layout=layout, **props)
    out = run(op, x, w, b)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    ("dtype", "result"), [("int8", "int32"), ("uint8", "int32"), ("int16", "int64")]
)
def test_integer_fully_connected_is_exact(
    dtype: str, result: str, rng: np.random.Generator
) -> None:
    x, w = int_array(rng, dtype, 2, 3, 300), int_array(rng, dtype, 7, 300)
    b = rng.integers(-(2**20), 2**20, 7).astype(result)
    expected = np.einsum("abk,nk->abn", x.astype(np.int64), w.astype(np.int64)) + b
    out = run(build(nn.FullyConnectedOp, [x, w, b], result=result), x, w, b)
    assert out.dtype == np.dtype(result)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(("adj_x", "adj_y"), [(False, False), (True, True)])
def test_int8_batch_matmul_is_exact(adj_x: bool, adj_y: bool, rng: np.random.Generator) -> None:
    a, b = int_array(rng, "int8", 3, 1, 5, 40), int_array(rng, "int8", 4, 40, 6)
    expected = np.einsum("...mk,...kn->...mn", a.astype(np.int64), b.astype(np.int64))
    a_in = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if adj_x else a
    b_in = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if adj_y else b
    out = run(
        build(nn.BatchMatmulOp, [a_in, b_in], result="int32", adj_x=adj_x, adj_y=adj_y), a_in, b_in
    )
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)


def test_integer_results_wrap_like_int32_accumulators() -> None:
    x = np.full((1, 3), 2**15 - 1, np.int16)
    w = np.full((1, 3), 2**15 - 1, np.int16)
    out = run(build(nn.FullyConnectedOp, [x, w, None], result="int32"), x, w)
    assert out[0, 0] == 3 * (2**15 - 1) ** 2 - 2**32


def avg_pool_loop_nhwc(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    include_pad: bool,
) -> np.ndarray:
    """TFLite's reference int8 average pool, one window at a time."""
    n, h, w, c = x.shape
    oh = (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c), x.dtype)
    for b in range(n):
        for y in range(oh):
            for xx in range(ow):
                for ch in range(c):
                    total = count = 0
                    for i in range(kernel[0]):
                        for j in range(kernel[1]):
                            r, s = y * strides[0] - pads[0] + i, xx * strides[1] - pads[1] + j
                            if 0 <= r < h and 0 <= s < w:
                                total += int(x[b, r, s, ch])
                                count += 1
                    if include_pad:
                        count = kernel[0] * kernel[1]
                    rounded = total + count // 2 if total > 0 else total - count // 2
                    out[b, y, xx, ch] = int(rounded / count)  # C division truncates toward zero
    return out


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize(
    ("kernel", "strides", "pads"),
    [
        ((2, 2), (2, 2), (0, 0, 0, 0)),
        ((3, 3), (1, 1), (1, 1, 1, 1)),
        ((3, 2), (2, 1), (1, 0, 2, 1)),
        ((6, 7), (1, 1), (0, 0, 0, 0)),
    ],
)
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_integer_avg_pool2d_rounds_half_away_from_zero(
    kernel: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, ...],
    count_include_pad: bool,
    dtype: str,
    rng: np.random.Generator,
) -> None:
    x = int_array(rng, dtype, 2, 6, 7, 3)
    expected = avg_pool_loop_nhwc(x, kernel, strides, pads, count_include_pad)
    props = dict(kernel=kernel, strides=strides, pads=pads, count_include_pad=count_include_pad)
    op = build(nn.AvgPool2DOp, [x], layout="NHWC", **props)
    out = run(op, x)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, expected)
    x_nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    out_nchw = run(build(nn.AvgPool2DOp, [x_nchw], layout="NCHW", **props), x_nchw)
    np.testing.assert_array_equal(out_nchw, expected.transpose(0, 3, 1, 2))


def test_integer_avg_pool2d_ties() -> None:
    """Windows of 4 summing to +-2 and +-6: exact halves round away from zero."""
    x = np.array([1, 1, 0, 0, -1, -1, 0, 0, 2, 2, 1, 1, -2, -2, -1, -1], np.int8).reshape(
        1, 4, 4, 1
    )
    x = x.reshape(1, 2, 2, 2, 2, 1).transpose(0, 1, 3, 2, 4, 5).reshape(1, 4, 4, 1)
    op = build(nn.AvgPool2DOp, [x], kernel=[2, 2], strides=[2, 2], layout="NHWC")
    np.testing.assert_array_equal(run(op, x).ravel(), [1, -1, 2, -2])


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_integer_max_pool2d_matches_onnxruntime(dtype: str, rng: np.random.Generator) -> None:
    x = int_array(rng, dtype, 1, 3, 9, 9)
    props = dict(kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    expected = onnxruntime_run(
        "MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
    )
    out = run(build(nn.MaxPool2DOp, [x], layout="NCHW", **props), x)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, expected)
