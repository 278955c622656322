"""Reference kernels of `nn` constants, data movement, reductions and softmax.

Numerics are compared with onnxruntime on single-node ONNX models; TFLite-only semantics
(softmax `beta`, fused activations on concat, gather `batch_dims`) with numpy formulas.
Resize is checked for every mode x coordinate mode x nearest mode that ONNX defines, up- and
downsampling, with sizes and with scales, in both layouts.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import helper
from onnx_support import run_onnx
from xdsl.dialects.builtin import IntegerType, TensorType, f32
from xdsl.ir import Attribute, Block, SSAValue

from irc.dialects import nn
from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import element_type
from irc.targets.reference import UnsupportedOpError, kernel_for, registered_ops, registry
from irc.targets.reference import shape as reference_shape

RTOL, ATOL = 1e-4, 1e-5

I8 = IntegerType(8)


def args(*arrays: np.ndarray, elements: list[Attribute] | None = None) -> tuple[SSAValue, ...]:
    """Block arguments typed like the arrays (or with the given element types)."""
    if elements is None:
        elements = [element_type(a.dtype) for a in arrays]
    block = Block(arg_types=[TensorType(e, a.shape) for e, a in zip(elements, arrays)])
    return tuple(block.args)


def run(op: nn.NNOp, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    results = kernel_for(op)(*arrays)
    assert len(results) == len(op.results)
    for array, value in zip(results, op.results):
        assert isinstance(array, np.ndarray)
        assert array.shape == tuple(value.type.get_shape())
    return results


def run1(op: nn.NNOp, *arrays: np.ndarray) -> np.ndarray:
    (result,) = run(op, *arrays)
    return result


def uniform(shape: tuple[int, ...], low: float = -3, high: float = 3, seed: int = 0) -> np.ndarray:
    return np.asarray(np.random.default_rng(seed).uniform(low, high, shape), np.float32)


def i64(values) -> np.ndarray:
    return np.asarray(values, np.int64)


def quantized(scale: float = 0.5, zero_point: int = -3) -> UniformQuantizedType:
    return UniformQuantizedType.per_tensor(I8, f32, scale, zero_point)


# ---- Constant ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.array([1, -2, 3], np.int8),
        np.array([True, False]),
        np.array(2.5, np.float16),
    ],
    ids=lambda v: v.dtype.name,
)
def test_constant_returns_its_value(value):
    op = nn.ConstantOp.from_array(value)
    (got,) = run(op)
    np.testing.assert_array_equal(got, value)
    assert got.dtype == value.dtype
    assert not got.flags.writeable  # shared with the attribute: never written into


def test_quantized_constant_returns_storage():
    storage = np.array([1, -2, 127], np.int8)
    op = nn.ConstantOp.from_array(storage, TensorType(quantized(), [3]))
    np.testing.assert_array_equal(run1(op), storage)


# ---- Reshape, transpose ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target"),
    [
        ((2, 3, 4), (6, 4)),
        ((2, 3, 4), (-1,)),
        ((1, 7, 7, 8), (1, -1)),
        ((6,), (1, 2, 3)),
        ((), (1,)),
    ],
)
def test_reshape_matches_onnx(shape, target):
    x = uniform(shape)
    node = helper.make_node("Reshape", ["X", "S"], ["Y"])
    (expected,) = run_onnx(node, {"X": x}, constants={"S": i64(target)})
    np.testing.assert_array_equal(run1(nn.ReshapeOp.make(*args(x), shape=target), x), expected)


def test_reshape_of_empty_tensor_resolves_minus_one_from_the_type():
    x = np.zeros((0, 4), np.float32)
    got = run1(nn.ReshapeOp.make(*args(x), shape=[-1, 2]), x)
    assert got.shape == (0, 2)


@pytest.mark.parametrize(
    ("shape", "perm"),
    [
        ((2, 3), (1, 0)),
        ((1, 4, 5, 3), (0, 3, 1, 2)),
        ((1, 3, 4, 5), (0, 2, 3, 1)),
        ((2, 3, 4), (2, 0, 1)),
    ],
)
def test_transpose_matches_onnx(shape, perm):
    x = uniform(shape)
    (expected,) = run_onnx(helper.make_node("Transpose", ["X"], ["Y"], perm=perm), {"X": x})
    got = run1(nn.TransposeOp.make(*args(x), perm=perm), x)
    np.testing.assert_array_equal(got, expected)
    assert got.flags.c_contiguous


# ---- Concat, split -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [
        ([(2, 3), (2, 5)], 1),
        ([(1, 4, 4, 2), (1, 4, 4, 3), (1, 4, 4, 1)], 3),
        ([(1, 2, 4), (3, 2, 4)], 0),
        ([(2, 3, 1), (2, 3, 2)], -1),
        ([(4,)], 0),
    ],
)
def test_concat_matches_onnx(shapes, axis):
    xs = [uniform(s, seed=i) for i, s in enumerate(shapes)]
    names = [f"X{i}" for i in range(len(xs))]
    node = helper.make_node("Concat", names, ["Y"], axis=axis)
    (expected,) = run_onnx(node, dict(zip(names, xs)))
    np.testing.assert_array_equal(run1(nn.ConcatOp.make(list(args(*xs)), axis=axis), *xs), expected)


@pytest.mark.parametrize(
    ("activation", "fn"),
    [
        ("relu", lambda x: np.maximum(x, 0)),
        ("relu6", lambda x: np.clip(x, 0, 6)),
        ("relu_n1_to_1", lambda x: np.clip(x, -1, 1)),
        ("tanh", np.tanh),
    ],
)
def test_concat_fused_activation(activation, fn):
    a, b = uniform((2, 3), -9, 9, seed=1), uniform((2, 2), -9, 9, seed=2)
    got = run1(nn.ConcatOp.make([*args(a, b)], axis=1, activation=activation), a, b)
    np.testing.assert_allclose(got, fn(np.concatenate([a, b], 1)), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    ("shape", "axis", "sizes"),
    [
        ((2, 8), 1, (2, 6)),
        ((6, 3), 0, (1, 2, 3)),
        ((1, 4, 4, 6), -1, (3, 3)),
        ((5,), 0, (5,)),
        ((2, 4), 1, (0, 4)),
    ],
)
def test_split_matches_onnx(shape, axis, sizes):
    x = uniform(shape)
    outputs = [f"Y{i}" for i in range(len(sizes))]
    node = helper.make_node("Split", ["X", "S"], outputs, axis=axis)
    expected = run_onnx(node, {"X": x}, constants={"S": i64(sizes)})
    got = run(nn.SplitOp.make(*args(x), axis=axis, sizes=sizes), x)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
        assert g.flags.c_contiguous


# ---- Slice -------------------------------------------------------------------------------------


def resolved_slice(shape, starts, ends, steps) -> tuple[list[int], list[int], list[int]]:
    """ONNX starts/ends/steps (all axes) resolved the way nn.slice wants them."""
    begin, end, strides = [], [], []
    for size, s, e, st in zip(shape, starts, ends, steps):
        b, en, step = slice(s, e, st).indices(size)
        begin.append(b)
        end.append(en)
        strides.append(step)
    return begin, end, strides


@pytest.mark.parametrize(
    ("shape", "starts", "ends", "steps"),
    [
        ((2, 8), (0, 1), (2, 7), (1, 2)),
        ((5, 6), (4, 5), (-100, -100), (-1, -2)),  # reversed through index 0
        ((5, 6), (-1, 4), (0, 1), (-2, -1)),  # reversed, stopping before 0
        ((1, 6, 6, 3), (0, 1, 0, 0), (1, 6, 5, 3), (1, 2, 2, 1)),
        ((7,), (2,), (2,), (1,)),  # empty
        ((7,), (6,), (-100,), (-3,)),
        ((4, 3), (1, 0), (100, 100), (1, 1)),  # ends past the size
    ],
)
def test_slice_matches_onnx(shape, starts, ends, steps):
    x = uniform(shape)
    node = helper.make_node("Slice", ["X", "B", "E", "A", "S"], ["Y"])
    consts = {"B": i64(starts), "E": i64(ends), "A": i64(range(len(shape))), "S": i64(steps)}
    (expected,) = run_onnx(node, {"X": x}, constants=consts)
    begin, end, strides = resolved_slice(shape, starts, ends, steps)
    op = nn.SliceOp.make(*args(x), begin=begin, end=end, strides=strides)
    got = run1(op, x)
    np.testing.assert_array_equal(got, expected)
    assert got.flags.c_contiguous


# ---- Pad ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize(
    ("shape", "pads"),
    [
        ((3, 4), ((1, 2), (0, 3))),
        ((1, 4, 4, 2), ((0, 0), (1, 1), (2, 1), (0, 0))),
        ((5,), ((3, 2),)),
    ],
)
def test_pad_matches_onnx(mode, shape, pads):
    x = uniform(shape)
    value = 1.5 if mode == "constant" else 0.0
    onnx_pads = [p[0] for p in pads] + [p[1] for p in pads]
    node = helper.make_node("Pad", ["X", "P", "V"], ["Y"], mode=mode)
    consts = {"P": i64(onnx_pads), "V": np.array(value, np.float32)}
    (expected,) = run_onnx(node, {"X": x}, constants=consts)
    flat = [v for pair in pads for v in pair]
    got = run1(nn.PadOp.make(*args(x), pads=flat, mode=mode, value=value), x)
    np.testing.assert_array_equal(got, expected)


def test_quantized_pad_uses_the_stored_value():
    x = np.array([[1, 2], [3, 4]], np.int8)
    qtype = quantized(zero_point=-3)
    op = nn.PadOp.make(*args(x, elements=[qtype]), pads=[0, 0, 1, 1], value=-3.0)
    np.testing.assert_array_equal(run1(op, x), [[-3, 1, 2, -3], [-3, 3, 4, -3]])


# ---- Resize ------------------------------------------------------------------------------------

COORDINATE_MODES = [
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
RESIZE_INPUTS = [
    ((1, 2, 4, 5), (8, 10)),  # upsample x2
    ((2, 1, 3, 4), (7, 5)),  # uneven upsample
    ((1, 2, 9, 8), (3, 4)),  # downsample
    ((1, 3, 6, 5), (4, 1)),  # to a single column
    ((1, 2, 1, 1), (3, 2)),  # from a single pixel
    ((1, 1, 5, 4), (5, 4)),  # identity
    ((1, 1, 7, 6), (1, 1)),  # to a single pixel
]
RESIZE_SCALES = [
    ((1, 2, 4, 5), (2.0, 1.5)),
    ((1, 1, 3, 7), (1.7, 0.6)),
    ((1, 2, 9, 8), (0.5, 0.34)),
    ((1, 1, 4, 6), (1 / 3, 1.0)),  # width keeps its size; height: floor(4 / 3) = 1
]

RESIZE_CONFIGS = [("nearest", c, n) for c, n in itertools.product(COORDINATE_MODES, NEAREST_MODES)]
RESIZE_CONFIGS += [("bilinear", c, "round_prefer_floor") for c in COORDINATE_MODES]


def onnx_resize(x: np.ndarray, mode: str, coordinate_mode: str, nearest_mode: str, **target):
    """onnxruntime's Resize on an NCHW tensor, with `sizes=[h, w]` or `scales=[h, w]`."""
    attrs = {
        "mode": "linear" if mode == "bilinear" else "nearest",
        "coordinate_transformation_mode": coordinate_mode,
        "nearest_mode": nearest_mode,
    }
    if "sizes" in target:
        node = helper.make_node("Resize", ["X", "", "", "Z"], ["Y"], **attrs)
        constants = {"Z": i64([*x.shape[:2], *target["sizes"]])}
    else:
        node = helper.make_node("Resize", ["X", "", "Z"], ["Y"], **attrs)
        constants = {"Z": np.array([1, 1, *target["scales"]], np.float32)}
    (y,) = run_onnx(node, {"X": x}, constants=constants)
    return y


def nn_resize(x: np.ndarray, layout: str, size, **props) -> np.ndarray:
    """nn.resize on an NCHW array, run in `layout` (NHWC transposes around the kernel)."""
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    y = run1(nn.ResizeOp.make(*args(x), size=size, layout=layout, **props), x)
    return y.transpose(0, 3, 1, 2) if layout == "NHWC" else y


@pytest.mark.parametrize(("mode", "coordinate_mode", "nearest_mode"), RESIZE_CONFIGS)
@pytest.mark.parametrize(("shape", "size"), RESIZE_INPUTS)
def test_resize_sizes_match_onnx(mode, coordinate_mode, nearest_mode, shape, size):
    x = uniform(shape, seed=sum(shape))
    expected = onnx_resize(x, mode, coordinate_mode, nearest_mode, sizes=size)
    modes = {"mode": mode, "coordinate_mode": coordinate_mode, "nearest_mode": nearest_mode}
    for layout in ("NCHW", "NHWC"):
        got = nn_resize(x, layout, size, **modes)
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL, err_msg=layout)


@pytest.mark.parametrize(("mode", "coordinate_mode", "nearest_mode"), RESIZE_CONFIGS)
@pytest.mark.parametrize(("shape", "scales"), RESIZE_SCALES)
def test_resize_scales_match_onnx(mode, coordinate_mode, nearest_mode, shape, scales):
    x = uniform(shape, seed=sum(shape))
    expected = onnx_resize(x, mode, coordinate_mode, nearest_mode, scales=scales)
    size = expected.shape[2:]  # floor(in * scale), as onnxruntime computes it
    modes = {"mode": mode, "coordinate_mode": coordinate_mode, "nearest_mode": nearest_mode}
    for layout in ("NCHW", "NHWC"):
        got = nn_resize(x, layout, size, scales=scales, **modes)
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL, err_msg=layout)


@pytest.mark.parametrize(
    ("in_len", "out_len"),
    [(7, 1), (7, 2), (13, 7), (15, 9), (11, 13), (14, 19), (20, 6), (28, 8), (55, 18), (1001, 10)],
)
def test_resize_nearest_ties_match_onnx(in_len, out_len):
    """Coordinates that are mathematically k + 0.5 but a few float32 ulps off.

    Within 1e-6 of a half they are ties for the round_prefer_* modes (7 -> 1: 3.4999998 is
    3.5); one ulp at 24.5 (1.9e-6) or beyond is not (28 -> 8, 1001 -> 10).
    """
    x = np.arange(in_len, dtype=np.float32).reshape(1, 1, in_len, 1)
    for coordinate_mode, nearest_mode in itertools.product(COORDINATE_MODES, NEAREST_MODES):
        expected = onnx_resize(x, "nearest", coordinate_mode, nearest_mode, sizes=(out_len, 1))
        modes = {"coordinate_mode": coordinate_mode, "nearest_mode": nearest_mode}
        got = nn_resize(x, "NCHW", (out_len, 1), **modes)
        np.testing.assert_array_equal(got, expected, err_msg=str(modes))


@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
@pytest.mark.parametrize("size", [(7, 3), (9, 11), (3, 4)])
def test_resize_bilinear_on_uint8_rounds_to_nearest(coordinate_mode, size):
    """Integer bilinear rounds to nearest (half to even) and saturates, as `onnx.reference`.

    Exact ties (``k + 0.5``) are common on integer grids and land on either side depending on
    float error (onnx.reference computes them as 69.49999999999997); onnxruntime truncates in
    NCHW and uses fixed point in NHWC. So: nearest away from ties, within one step at them.
    """
    x = np.random.default_rng(5).integers(0, 256, (1, 2, 5, 6)).astype(np.uint8)
    exact = onnx_resize(x.astype(np.float32), "bilinear", coordinate_mode, "floor", sizes=size)
    got = nn_resize(x, "NCHW", size, mode="bilinear", coordinate_mode=coordinate_mode)
    assert got.dtype == np.uint8
    tie = np.abs(exact - np.floor(exact) - 0.5) < 1e-3
    np.testing.assert_array_equal(got[~tie], np.round(exact[~tie]))
    assert np.all(np.abs(got[tie] - exact[tie]) <= 0.5 + 1e-3)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_resize_of_dynamic_input_plans_per_call(mode):
    """With `?` spatial dimensions the coordinates come from the runtime shape."""
    block = Block(arg_types=[TensorType(f32, [1, nn.DYNAMIC, nn.DYNAMIC, 2])])
    op = nn.ResizeOp.make(block.args[0], size=[6, 4], mode=mode, layout="NHWC")
    run_kernel = kernel_for(op)
    for shape in ((1, 3, 2, 2), (1, 5, 7, 2)):
        x = uniform(shape)
        (got,) = run_kernel(x)
        static = nn.ResizeOp.make(*args(x), size=[6, 4], mode=mode, layout="NHWC")
        np.testing.assert_array_equal(got, run1(static, x))


def test_quantized_nearest_resize_moves_storage():
    x = np.arange(8, dtype=np.int8).reshape(1, 2, 2, 2)
    op = nn.ResizeOp.make(*args(x, elements=[quantized()]), size=[4, 4], layout="NHWC")
    np.testing.assert_array_equal(run1(op, x), x.repeat(2, axis=1).repeat(2, axis=2))


# ---- Gather ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "indices", "axis"),
    [
        ((5, 3), [0, 4, -1, 2], 0),
        ((2, 5), [[1, -2], [0, 4]], 1),
        ((2, 3, 4), [-4, 3], -1),
        ((4, 3), 2, 0),  # scalar index drops the axis
        ((3, 4, 2), [[0], [-3]], 1),
    ],
)
def test_gather_matches_onnx(shape, indices, axis):
    x = uniform(shape)
    idx = i64(indices)
    node = helper.make_node("Gather", ["X", "I"], ["Y"], axis=axis)
    (expected,) = run_onnx(node, {"X": x, "I": idx})
    got = run1(nn.GatherOp.make(*args(x, idx), axis=axis), x, idx)
    np.testing.assert_array_equal(got, expected)
    idx32 = idx.astype(np.int32)
    got32 = run1(nn.GatherOp.make(*args(x, idx32), axis=axis), x, idx32)
    np.testing.assert_array_equal(got32, expected)


@pytest.mark.parametrize(
    ("shape", "index_shape", "axis", "batch_dims"),
    [((2, 5, 3), (2, 4), 1, 1), ((2, 3, 6, 2), (2, 3, 2), 2, 2), ((2, 3, 6), (2, 4), 2, 1)],
)
def test_gather_batch_dims(shape, index_shape, axis, batch_dims):
    """TFLite GATHER's batch_dims: one gather per batch element."""
    x = uniform(shape)
    idx = np.random.default_rng(3).integers(-shape[axis], shape[axis], index_shape)
    got = run1(nn.GatherOp.make(*args(x, idx), axis=axis, batch_dims=batch_dims), x, idx)
    batch = shape[:batch_dims]
    for b in np.ndindex(*batch):
        expected = np.take(x[b], idx[b] % shape[axis], axis=axis - batch_dims)
        np.testing.assert_array_equal(got[b], expected)


def test_gather_rejects_out_of_range_indices():
    x, idx = uniform((3,)), i64([3])
    with pytest.raises(IndexError, match="out of range"):
        run(nn.GatherOp.make(*args(x, idx)), x, idx)


def test_quantized_gather_moves_storage():
    x, idx = np.array([5, -6, 7], np.int8), np.array([2, -3], np.int32)
    op = nn.GatherOp.make(*args(x, idx, elements=[quantized(), IntegerType(32)]))
    np.testing.assert_array_equal(run1(op, x, idx), [7, 5])


# ---- Reductions --------------------------------------------------------------------------------

REDUCE_KINDS = [
    ("mean", "ReduceMean"),
    ("sum", "ReduceSum"),
    ("max", "ReduceMax"),
    ("min", "ReduceMin"),
    ("prod", "ReduceProd"),
]
REDUCE_CASES = [
    ((2, 3, 4), (1,)),
    ((1, 5, 5, 3), (1, 2)),
    ((3, 4), (-1,)),
    ((2, 3, 4), (0, 1, 2)),
    ((6,), (0,)),
]


@pytest.mark.parametrize(("kind", "onnx_op"), REDUCE_KINDS)
@pytest.mark.parametrize(("shape", "axes"), REDUCE_CASES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_matches_onnx(kind, onnx_op, shape, axes, keepdims):
    x = uniform(shape, 0.5, 1.5 if kind == "prod" else 3)
    node = helper.make_node(onnx_op, ["X", "A"], ["Y"], keepdims=int(keepdims))
    (expected,) = run_onnx(node, {"X": x}, constants={"A": i64(axes)})
    got = run1(nn.ReduceOp.make(*args(x), kind=kind, axes=axes, keepdims=keepdims), x)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(("kind", "onnx_op"), REDUCE_KINDS)
def test_integer_reduce_matches_onnx(kind, onnx_op):
    x = np.random.default_rng(4).integers(-9, 9, (3, 4)).astype(np.int32)
    node = helper.make_node(onnx_op, ["X", "A"], ["Y"], keepdims=0)
    (expected,) = run_onnx(node, {"X": x}, constants={"A": i64([1])})
    got = run1(nn.ReduceOp.make(*args(x), kind=kind, axes=[1]), x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


def test_reduce_float16_accumulates_in_float32():
    x = np.full((4096,), 1.0, np.float16)
    got = run1(nn.ReduceOp.make(*args(x), kind="sum", axes=[0]), x)
    assert got.dtype == np.float16
    assert float(got) == 4096.0  # a float16 accumulator stops at 2048


# ---- Softmax -----------------------------------------------------------------------------------

SOFTMAX_CASES = [((2, 5), -1), ((2, 5), 0), ((1, 3, 4, 6), 1), ((3, 4, 2), 2), ((7,), 0)]


@pytest.mark.parametrize(
    ("op_class", "onnx_op"), [(nn.SoftmaxOp, "Softmax"), (nn.LogSoftmaxOp, "LogSoftmax")]
)
@pytest.mark.parametrize(("shape", "axis"), SOFTMAX_CASES)
def test_softmax_matches_onnx(op_class, onnx_op, shape, axis):
    x = uniform(shape, -10, 10)
    (expected,) = run_onnx(helper.make_node(onnx_op, ["X"], ["Y"], axis=axis), {"X": x})
    got = run1(op_class.make(*args(x), axis=axis), x)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("beta", [1.0, 0.5, 2.0, -1.0])
def test_softmax_beta(beta):
    x = uniform((3, 6), -5, 5).astype(np.float64)
    e = np.exp(beta * x)
    got = run1(nn.SoftmaxOp.make(*args(x.astype(np.float32)), beta=beta), x.astype(np.float32))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=RTOL, atol=ATOL)


def test_softmax_is_stable_for_large_inputs():
    x = np.array([[1000.0, 1000.0, -1000.0]], np.float32)
    np.testing.assert_allclose(run1(nn.SoftmaxOp.make(*args(x)), x), [[0.5, 0.5, 0.0]])
    log = run1(nn.LogSoftmaxOp.make(*args(x)), x)
    np.testing.assert_allclose(log[0, :2], [-np.log(2)] * 2, rtol=RTOL)


def test_softmax_float16():
    x = uniform((2, 8), -4, 4).astype(np.float16)
    got = run1(nn.SoftmaxOp.make(*args(x)), x)
    assert got.dtype == np.float16
    wide = run1(nn.SoftmaxOp.make(*args(x.astype(np.float32))), x.astype(np.float32))
    np.testing.assert_array_equal(got, wide.astype(np.float16))


# ---- Quantized registration --------------------------------------------------------------------


def test_data_movement_runs_on_quantized_storage():
    x = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    (value,) = args(x, elements=[quantized()])
    cases = [
        (nn.ReshapeOp.make(value, shape=[4, 3]), x.reshape(4, 3)),
        (nn.TransposeOp.make(value, perm=[1, 0]), x.T),
        (nn.SliceOp.make(value, begin=[2, 3], end=[-1, 0], strides=[-1, -2]), x[2::-1, 3:0:-2]),
        (nn.ConcatOp.make([value, value], axis=0), np.concatenate([x, x])),
    ]
    for op, expected in cases:
        got = run1(op, *([x] * len(op.operands)))
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, expected)
    a, b = run(nn.SplitOp.make(value, axis=1, sizes=[1, 3]), x)
    np.testing.assert_array_equal(a, x[:, :1])
    np.testing.assert_array_equal(b, x[:, 1:])


def test_quantized_concat_with_different_scales_is_unsupported():
    a = b = np.zeros((1, 2), np.int8)
    va, vb = args(a, b, elements=[quantized(0.5), quantized(0.25)])
    op = nn.ConcatOp.make([va, vb], axis=1, result_elements=quantized(0.5))
    with pytest.raises(UnsupportedOpError, match="quantized differently"):
        kernel_for(op)


def test_quantized_kernels_of_this_module_are_data_movement_only():
    """Reduce, softmax and bilinear resize have integer algorithms of their own."""
    registered_ops(quantized=True)  # imports every kernel module
    mine = {
        op
        for op, factory in registry._QUANTIZED_FACTORIES.items()
        if factory.__module__ == reference_shape.__name__
    }
    assert mine == {
        nn.ConstantOp,
        nn.ReshapeOp,
        nn.TransposeOp,
        nn.ConcatOp,
        nn.SplitOp,
        nn.SliceOp,
        nn.PadOp,
        nn.ResizeOp,
        nn.GatherOp,
        nn.BroadcastToOp,
    }


def test_quantized_bilinear_resize_uses_tflite_integer_kernel():
    (value,) = args(np.zeros((1, 2, 2, 1), np.int8), elements=[quantized()])
    op = nn.ResizeOp.make(value, size=[4, 4], mode="bilinear", layout="NHWC")
    (y,) = kernel_for(op)(np.full((1, 2, 2, 1), 7, np.int8))
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, np.full((1, 4, 4, 1), 7, np.int8))
