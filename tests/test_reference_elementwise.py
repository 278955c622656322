"""Reference kernels of the `nn` elementwise ops against onnxruntime and numpy formulas.

Each ONNX comparison runs a single-node model built with `onnx.helper`; TFLite-only semantics
(relu6, squared_difference, fused activations) and the reference's own choices (float16
compute, integer division, cast saturation) are checked against plain numpy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper
from onnx_support import run_onnx
from scipy import special
from xdsl.dialects.builtin import IntegerType, TensorType, i1
from xdsl.ir import Block, SSAValue

from irc.dialects import nn
from irc.dtypes import element_type
from irc.targets.reference import kernel_for

RTOL, ATOL = 1e-4, 1e-5


def args(*arrays: np.ndarray) -> tuple[SSAValue, ...]:
    """Block arguments typed like the arrays, to build ops on."""
    block = Block(arg_types=[TensorType(element_type(a.dtype), a.shape) for a in arrays])
    return tuple(block.args)


def run(op: nn.NNOp, *arrays: np.ndarray) -> np.ndarray:
    (result,) = kernel_for(op)(*arrays)
    assert isinstance(result, np.ndarray)
    assert result.shape == tuple(op.results[0].type.get_shape())
    return result


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def uniform(shape: tuple[int, ...], low: float = -3, high: float = 3, seed: int = 0) -> np.ndarray:
    return np.asarray(rng(seed).uniform(low, high, shape), np.float32)


# ---- Binary ------------------------------------------------------------------------------------

BINARY = [
    (nn.AddOp, "Add"),
    (nn.SubOp, "Sub"),
    (nn.MulOp, "Mul"),
    (nn.DivOp, "Div"),
    (nn.MaximumOp, "Max"),
    (nn.MinimumOp, "Min"),
    (nn.PowOp, "Pow"),
]
BROADCAST_SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 3, 4), (4,)),
    ((1, 3, 1), (2, 1, 5)),
    ((4,), (3, 1)),
    ((), (3,)),
    ((2, 1, 4, 3), (1,)),
]


def binary_operands(op_class: type, a_shape, b_shape, seed=0):
    a, b = uniform(a_shape, seed=seed), uniform(b_shape, seed=seed + 1)
    if op_class is nn.PowOp:
        a = np.abs(a) + 0.1  # real results only
    if op_class is nn.DivOp:
        b = np.where(np.abs(b) < 0.1, 0.5, b)
    return np.asarray(a, np.float32), np.asarray(b, np.float32)


@pytest.mark.parametrize(("op_class", "onnx_op"), BINARY)
@pytest.mark.parametrize(("a_shape", "b_shape"), BROADCAST_SHAPES)
def test_binary_matches_onnx(op_class, onnx_op, a_shape, b_shape):
    a, b = binary_operands(op_class, a_shape, b_shape)
    (expected,) = run_onnx(helper.make_node(onnx_op, ["A", "B"], ["Y"]), {"A": a, "B": b})
    got = run(op_class.make(*args(a, b)), a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    ("op_class", "onnx_op"), [b for b in BINARY if b[0] is not nn.PowOp], ids=lambda v: str(v)
)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_binary_matches_onnx(op_class, onnx_op, dtype):
    """Integer division truncates toward zero (C, TFLite, ONNX), not toward -inf."""
    a = rng(1).integers(-50, 50, (3, 4)).astype(dtype)
    b = rng(2).integers(1, 9, (4,)).astype(dtype) * np.array([1, -1, 1, -1], dtype)
    (expected,) = run_onnx(helper.make_node(onnx_op, ["A", "B"], ["Y"]), {"A": a, "B": b})
    got = run(op_class.make(*args(a, b)), a, b)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)


def test_integer_division_edge_cases():
    a = np.array([7, -7, 7, -7, 0, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0], np.int32)
    got = run(nn.DivOp.make(*args(a, b)), a, b)
    np.testing.assert_array_equal(got, [3, -3, -3, 3, 0, 0])  # x / 0 is 0 for integers


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "relu_n1_to_1": lambda x: np.clip(x, -1, 1),
    "tanh": np.tanh,
}


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize(
    ("op_class", "fn"),
    [(nn.AddOp, np.add), (nn.SubOp, np.subtract), (nn.MulOp, np.multiply), (nn.DivOp, np.divide)],
)
def test_fused_activation(op_class, fn, activation):
    a, b = binary_operands(op_class, (2, 3, 4), (4,), seed=3)
    a = a * 3
    got = run(op_class.make(*args(a, b), activation=activation), a, b)
    np.testing.assert_allclose(got, ACTIVATIONS[activation](fn(a, b)), rtol=RTOL, atol=ATOL)


def test_fused_activation_on_integers():
    a = np.array([[-9, 3], [4, 10]], np.int32)
    b = np.array([1, 2], np.int32)
    got = run(nn.AddOp.make(*args(a, b), activation="relu6"), a, b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [[0, 5], [5, 6]])


@pytest.mark.parametrize(("a_shape", "b_shape"), BROADCAST_SHAPES)
def test_squared_difference(a_shape, b_shape):
    a, b = uniform(a_shape, seed=4), uniform(b_shape, seed=5)
    got = run(nn.SquaredDifferenceOp.make(*args(a, b)), a, b)
    np.testing.assert_allclose(got, (a - b) ** 2, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    ("x_shape", "slope_shape"),
    [((2, 5), (5,)), ((1, 4, 4, 3), (3,)), ((1, 3, 4, 4), (3, 1, 1)), ((2, 6), (1,)), ((3,), ())],
)
def test_prelu_matches_onnx(x_shape, slope_shape):
    x, slope = uniform(x_shape, seed=6), uniform(slope_shape, 0, 1, seed=7)
    (expected,) = run_onnx(helper.make_node("PRelu", ["X", "S"], ["Y"]), {"X": x, "S": slope})
    got = run(nn.PReluOp.make(*args(x, slope)), x, slope)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


# ---- Unary -------------------------------------------------------------------------------------

UNARY_SHAPES = [(7,), (2, 3, 4), (1, 4, 4, 3), ()]

UNARY = [
    (nn.ReluOp, "Relu", {}, (-3, 3)),
    (nn.SigmoidOp, "Sigmoid", {}, (-20, 20)),
    (nn.TanhOp, "Tanh", {}, (-5, 5)),
    (nn.HardSwishOp, "HardSwish", {}, (-5, 5)),
    (nn.ErfOp, "Erf", {}, (-3, 3)),
    (nn.ExpOp, "Exp", {}, (-5, 5)),
    (nn.LogOp, "Log", {}, (0.01, 10)),
    (nn.SqrtOp, "Sqrt", {}, (0, 10)),
    (nn.AbsOp, "Abs", {}, (-3, 3)),
    (nn.NegOp, "Neg", {}, (-3, 3)),
]


@pytest.mark.parametrize(
    ("op_class", "onnx_op", "attrs", "domain"), UNARY, ids=[u[1] for u in UNARY]
)
@pytest.mark.parametrize("shape", UNARY_SHAPES)
def test_unary_matches_onnx(op_class, onnx_op, attrs, domain, shape):
    x = uniform(shape, *domain, seed=8)
    (expected,) = run_onnx(helper.make_node(onnx_op, ["X"], ["Y"], **attrs), {"X": x})
    got = run(op_class.make(*args(x), **attrs), x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("alpha", [0.01, 0.2, 1.5])
@pytest.mark.parametrize("shape", UNARY_SHAPES[:3])
def test_leaky_relu_matches_onnx(alpha, shape):
    x = uniform(shape, seed=9)
    (expected,) = run_onnx(helper.make_node("LeakyRelu", ["X"], ["Y"], alpha=alpha), {"X": x})
    got = run(nn.LeakyReluOp.make(*args(x), alpha=alpha), x)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(("alpha", "beta"), [(0.2, 0.5), (1 / 6, 0.5), (0.5, 0.1)])
@pytest.mark.parametrize("shape", UNARY_SHAPES[:3])
def test_hard_sigmoid_matches_onnx(alpha, beta, shape):
    x = uniform(shape, -6, 6, seed=10)
    node = helper.make_node("HardSigmoid", ["X"], ["Y"], alpha=alpha, beta=beta)
    (expected,) = run_onnx(node, {"X": x})
    got = run(nn.HardSigmoidOp.make(*args(x), alpha=alpha, beta=beta), x)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", UNARY_SHAPES)
def test_gelu_matches_onnx(approximate, shape):
    x = uniform(shape, -5, 5, seed=11)
    node = helper.make_node("Gelu", ["X"], ["Y"], approximate=approximate)
    (expected,) = run_onnx(node, {"X": x}, opset=20)
    got = run(nn.GeluOp.make(*args(x), approximate=approximate), x)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(("low", "high"), [(0.0, 6.0), (-1.0, None), (None, 0.5), (None, None)])
@pytest.mark.parametrize("shape", UNARY_SHAPES)
def test_clip_matches_onnx(low, high, shape):
    x = uniform(shape, -8, 8, seed=12)
    names = ["X", "" if low is None else "L", "" if high is None else "H"]
    bounds = {n: np.array(v, np.float32) for n, v in (("L", low), ("H", high)) if v is not None}
    while names[-1] == "":
        names.pop()
    (expected,) = run_onnx(helper.make_node("Clip", names, ["Y"]), {"X": x}, constants=bounds)
    got = run(nn.ClipOp.make(*args(x), min=low, max=high), x)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", UNARY_SHAPES)
def test_rsqrt_matches_onnx_reciprocal_of_sqrt(shape):
    x = uniform(shape, 0.01, 10, seed=13)
    nodes = [helper.make_node("Sqrt", ["X"], ["S"]), helper.make_node("Reciprocal", ["S"], ["Y"])]
    (expected,) = run_onnx(nodes, {"X": x})
    got = run(nn.RsqrtOp.make(*args(x)), x)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", UNARY_SHAPES)
def test_relu6(shape):
    x = uniform(shape, -10, 10, seed=14)
    np.testing.assert_array_equal(run(nn.Relu6Op.make(*args(x)), x), np.clip(x, 0, 6))


def test_domain_errors_follow_ieee_without_warnings():
    x = np.array([0.0, -1.0, 4.0], np.float32)
    np.testing.assert_array_equal(run(nn.LogOp.make(*args(x)), x)[:1], [-np.inf])
    assert np.isnan(run(nn.SqrtOp.make(*args(x)), x)[1])
    np.testing.assert_array_equal(run(nn.RsqrtOp.make(*args(x)), x)[[0, 2]], [np.inf, 0.5])


# ---- float16 -----------------------------------------------------------------------------------

FLOAT16_CASES = [
    (nn.AddOp, 2),
    (nn.DivOp, 2),
    (nn.PowOp, 2),
    (nn.SigmoidOp, 1),
    (nn.GeluOp, 1),
    (nn.ErfOp, 1),
    (nn.ExpOp, 1),
    (nn.HardSwishOp, 1),
    (nn.LeakyReluOp, 1),
    (nn.RsqrtOp, 1),
]


@pytest.mark.parametrize(("op_class", "arity"), FLOAT16_CASES, ids=lambda v: str(v))
def test_float16_computes_in_float32(op_class, arity):
    """float16 tensors: computed in float32, rounded once to float16."""
    wide = [uniform((3, 5), 0.5, 3, seed=15 + i) for i in range(arity)]
    half = [w.astype(np.float16) for w in wide]
    got = run(op_class.make(*args(*half)), *half)
    assert got.dtype == np.float16
    exact = run(op_class.make(*args(*half_as_float32(half))), *half_as_float32(half))
    np.testing.assert_array_equal(got, exact.astype(np.float16))


def half_as_float32(arrays: list[np.ndarray]) -> list[np.ndarray]:
    return [a.astype(np.float32) for a in arrays]


# ---- Cast --------------------------------------------------------------------------------------

CASTS = [
    (np.float32, np.int32),
    (np.float32, np.int64),
    (np.float32, np.int8),
    (np.float32, np.uint8),
    (np.float32, np.bool_),
    (np.float32, np.float16),
    (np.float32, np.float64),
    (np.float16, np.float32),
    (np.int32, np.float32),
    (np.int64, np.int32),
    (np.int32, np.bool_),
    (np.bool_, np.float32),
    (np.bool_, np.int32),
    (np.uint8, np.float32),
]


@pytest.mark.parametrize(("source", "target"), CASTS, ids=lambda v: np.dtype(v).name)
@pytest.mark.parametrize("shape", [(9,), (2, 3, 4)])
def test_cast_matches_onnx(source, target, shape):
    r = rng(16)
    if np.dtype(source) == np.bool_:
        x = r.integers(0, 2, shape).astype(np.bool_)
    elif np.dtype(source).kind == "f":
        low = 0 if np.dtype(target) == np.uint8 else -100
        x = r.uniform(low, 100, shape).astype(source)
        x.flat[:3] = [0.0, 2.9, 100.0 if low == 0 else -2.9][:3]
    else:
        low = 0 if np.dtype(source).kind == "u" else -100
        x = r.integers(low, 100, shape).astype(source)
        x.flat[0] = 0
    to = helper.np_dtype_to_tensor_dtype(np.dtype(target))
    (expected,) = run_onnx(helper.make_node("Cast", ["X"], ["Y"], to=to), {"X": x})
    got = run(nn.CastOp.make(*args(x), result_elements=element_type(target)), x)
    assert got.dtype == np.dtype(target)
    np.testing.assert_array_equal(got, expected)


def test_cast_float_to_int_truncates_and_saturates():
    """Out-of-range values (undefined behaviour in C) saturate; NaN becomes 0."""
    x = np.array([-1.7, 1.7, -0.5, 300.0, -300.0, np.nan, np.inf, -np.inf], np.float32)
    got = run(nn.CastOp.make(*args(x), result_elements=IntegerType(8)), x)
    np.testing.assert_array_equal(got, [-1, 1, 0, 127, -128, 0, 127, -128])
    big = np.array([3e38, -3e38, 9.3e18], np.float32)
    got = run(nn.CastOp.make(*args(big), result_elements=IntegerType(64)), big)
    assert got.tolist() == [2**63 - 1024, -(2**63), 2**63 - 1024]


def test_cast_nan_to_bool_is_true():
    x = np.array([np.nan, 0.0, -0.0, 1e-30], np.float32)
    got = run(nn.CastOp.make(*args(x), result_elements=i1), x)
    np.testing.assert_array_equal(got, [True, False, False, True])


def test_scalar_results_are_arrays():
    x = np.array(2.0, np.float32)
    (y,) = kernel_for(nn.AddOp.make(*args(x, x)))(x, x)
    assert isinstance(y, np.ndarray)
    assert y.shape == ()
    assert float(y) == 4.0
    (z,) = kernel_for(nn.SqrtOp.make(*args(x)))(x)
    assert isinstance(z, np.ndarray)
    assert math.isclose(float(z), math.sqrt(2), rel_tol=1e-6)


def test_erf_matches_scipy_in_float64():
    x = np.linspace(-4, 4, 33)
    np.testing.assert_allclose(run(nn.ErfOp.make(*args(x)), x), special.erf(x), rtol=1e-12)


# ---- Comparison, logic, select and broadcast_to ------------------------------------------------

COMPARISONS = [
    ("eq", "Equal"),
    ("lt", "Less"),
    ("le", "LessOrEqual"),
    ("gt", "Greater"),
    ("ge", "GreaterOrEqual"),
]


def with_ties(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Round to halves so that equal elements occur (equality is the interesting edge)."""
    return np.asarray(np.round(a * 2) / 2), np.asarray(np.round(b * 2) / 2)


@pytest.mark.parametrize(("kind", "onnx_op"), COMPARISONS)
@pytest.mark.parametrize(("a_shape", "b_shape"), BROADCAST_SHAPES)
def test_compare_matches_onnx(kind, onnx_op, a_shape, b_shape):
    a, b = with_ties(uniform(a_shape, seed=30), uniform(b_shape, seed=31))
    (expected,) = run_onnx(helper.make_node(onnx_op, ["A", "B"], ["Y"]), {"A": a, "B": b})
    got = run(nn.CompareOp.make(*args(a, b), kind=kind, result_elements=i1), a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("kind", "onnx_op"), COMPARISONS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float16])
def test_compare_other_types_match_onnx(kind, onnx_op, dtype):
    a = rng(32).integers(-3, 4, (3, 4)).astype(dtype)
    b = rng(33).integers(-3, 4, (4,)).astype(dtype)
    (expected,) = run_onnx(helper.make_node(onnx_op, ["A", "B"], ["Y"]), {"A": a, "B": b})
    got = run(nn.CompareOp.make(*args(a, b), kind=kind, result_elements=i1), a, b)
    np.testing.assert_array_equal(got, expected)


def test_compare_not_equal_matches_onnx_not_of_equal():
    a, b = with_ties(uniform((2, 3), seed=34), uniform((3,), seed=35))
    nodes = [
        helper.make_node("Equal", ["A", "B"], ["E"]),
        helper.make_node("Not", ["E"], ["Y"]),
    ]
    (expected,) = run_onnx(nodes, {"A": a, "B": b})
    got = run(nn.CompareOp.make(*args(a, b), kind="ne", result_elements=i1), a, b)
    np.testing.assert_array_equal(got, expected)


def test_compare_nan_is_unordered():
    a = np.array([np.nan, np.nan, 1.0], np.float32)
    b = np.array([np.nan, 1.0, np.nan], np.float32)
    expected = {
        "eq": [False] * 3,
        "ne": [True] * 3,
        **{kind: [False] * 3 for kind in ("lt", "le", "gt", "ge")},
    }
    for kind, values in expected.items():
        got = run(nn.CompareOp.make(*args(a, b), kind=kind, result_elements=i1), a, b)
        assert got.tolist() == values, kind


def test_compare_booleans():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    (expected,) = run_onnx(helper.make_node("Equal", ["A", "B"], ["Y"]), {"A": a, "B": b})
    got = run(nn.CompareOp.make(*args(a, b), kind="eq", result_elements=i1), a, b)
    np.testing.assert_array_equal(got, expected)


def booleans(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.asarray(rng(seed).integers(0, 2, shape), np.bool_)


@pytest.mark.parametrize(
    ("op_class", "onnx_op"),
    [(nn.LogicalAndOp, "And"), (nn.LogicalOrOp, "Or"), (nn.LogicalXorOp, "Xor")],
)
@pytest.mark.parametrize(("a_shape", "b_shape"), BROADCAST_SHAPES)
def test_logical_binary_matches_onnx(op_class, onnx_op, a_shape, b_shape):
    a, b = booleans(a_shape, 36), booleans(b_shape, 37)
    (expected,) = run_onnx(helper.make_node(onnx_op, ["A", "B"], ["Y"]), {"A": a, "B": b})
    got = run(op_class.make(*args(a, b)), a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_logical_not_matches_onnx(shape):
    x = booleans(shape, 38)
    (expected,) = run_onnx(helper.make_node("Not", ["X"], ["Y"]), {"X": x})
    got = run(nn.LogicalNotOp.make(*args(x)), x)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, expected)


SELECT_SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 1), (3,), ()),
    ((4,), (3, 1), (1, 4)),
    ((), (2, 3), (3,)),
    ((1, 3, 1), (2, 1, 5), (5,)),
]


@pytest.mark.parametrize(("c_shape", "a_shape", "b_shape"), SELECT_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_select_matches_onnx_where(c_shape, a_shape, b_shape, dtype):
    c = booleans(c_shape, 39)
    a = np.asarray(uniform(a_shape, seed=40) * 10, dtype)
    b = np.asarray(uniform(b_shape, seed=41) * 10, dtype)
    (expected,) = run_onnx(
        helper.make_node("Where", ["C", "A", "B"], ["Y"]), {"C": c, "A": a, "B": b}
    )
    op = nn.SelectOp.make(*args(c, a, b), result_elements=element_type(dtype))
    got = run(op, c, a, b)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)


def test_select_quantized_picks_stored_integers():
    from irc.dialects.quant import UniformQuantizedType

    qtype = UniformQuantizedType.per_tensor(IntegerType(8), element_type(np.float32), 0.5, -3)
    block = Block(
        arg_types=[TensorType(i1, (4,)), TensorType(qtype, (4,)), TensorType(qtype, (1,))]
    )
    op = nn.SelectOp.make(*block.args, result_elements=qtype)
    c = np.array([True, False, True, False])
    a = np.array([1, 2, 3, 4], np.int8)
    b = np.array([-7], np.int8)
    got = run(op, c, a, b)
    assert got.dtype == np.int8
    assert got.tolist() == [1, -7, 3, -7]


@pytest.mark.parametrize(
    ("x_shape", "shape"),
    [((3, 1), (2, 3, 4)), ((1,), (5,)), ((), (2, 2)), ((2, 3), (2, 3)), ((1, 4), (0, 4)), ((), ())],
)
def test_broadcast_to_matches_onnx_expand(x_shape, shape):
    x = uniform(x_shape, seed=42)
    (expected,) = run_onnx(
        helper.make_node("Expand", ["X", "S"], ["Y"]),
        {"X": x},
        constants={"S": np.array(shape, np.int64)},
    )
    got = run(nn.BroadcastToOp.make(*args(x), shape=list(shape)), x)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)
