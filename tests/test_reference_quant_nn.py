"""Quantized kernels of `irc.targets.reference.quant_nn` against TFLite's reference kernels.

Every case builds a one-operator int8/uint8 `.tflite` model (tests/tflite_builder.py), runs it
with the BUILTIN_REF op resolver and compares stored integers with the irc kernel. Fixed-point
algorithms must match bit for bit; table ops built from float32 libm calls may differ by one
quantization step where glibc's float functions round differently (none seen so far).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from tflite_builder import T, run_op
from xdsl.dialects.builtin import TensorType, f32, i8
from xdsl.ir import Block

from irc.dialects import nn
from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import element_type
from irc.targets.reference import UnsupportedOpError, kernel_for, registered_ops
from irc.targets.reference.quant_nn import (
    calculate_input_radius,
    exp_on_negative_values,
    get_reciprocal,
    inv_sqrt_quantized_multiplier_exp,
    log_x_for_x_greater_than_or_equal_to_1,
    one_over_one_plus_x_for_x_in_0_1,
    resize_bilinear,
)

# ---- Helpers -----------------------------------------------------------------------------------


def qtype(dtype: str, scale: float, zero_point: int) -> UniformQuantizedType:
    return UniformQuantizedType.per_tensor(element_type(dtype), f32, scale, zero_point)


def make_op(op_class, x: np.ndarray, source, result, **props):
    block = Block(arg_types=[TensorType(source, list(x.shape))])
    return op_class.make(block.args[0], result_elements=result, **props)


def run_irc(op_class, x: np.ndarray, source, result, **props) -> np.ndarray:
    (y,) = kernel_for(make_op(op_class, x, source, result, **props))(x)
    return y


def run_tflite(opcode: str, x: np.ndarray, source, result, options=None, out_dtype=None):
    """One TFLite op on `x`; `source`/`result` are (scale, zero point) pairs."""
    dtype = x.dtype.name
    (y,) = run_op(
        opcode,
        [T(list(x.shape), dtype, *source)],
        [T(list(x.shape), out_dtype or dtype, *result)],
        options,
        feed=[x],
    )
    return y


def assert_matches(got: np.ndarray, ref: np.ndarray, *, exact: bool = True) -> None:
    """Bit-exact, or (float table ops) at most one step off on at most 1% of the elements."""
    assert got.dtype == ref.dtype
    assert got.shape == ref.shape
    diff = np.abs(got.astype(np.int64) - ref.astype(np.int64))
    off = int(np.count_nonzero(diff))
    if exact:
        assert off == 0, f"{off} of {diff.size} elements differ (max {diff.max()})"
    else:
        assert diff.max() <= 1, f"max difference {diff.max()} steps"
        assert off <= diff.size // 100, f"{off} of {diff.size} elements differ by one step"


def all_values(dtype: str, shape=(2, 8, 16)) -> np.ndarray:
    """Every stored value of an 8-bit type, shuffled into `shape`."""
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1).astype(dtype)
    return np.random.default_rng(0).permutation(values).reshape(shape)


def random_values(dtype: str, shape, seed: int = 0) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, shape).astype(dtype)


# (input scale, input zero point, result scale, result zero point); zero points of uint8 are
# shifted by 128.
QUANT_PARAMS = [
    (0.05, 3, 0.03, -20),
    (0.1, -10, 0.0078125, 0),
    (0.0123, 0, 0.07, 11),
    (0.3, 60, 0.002, -120),
]


def shifted(dtype: str, zero_point: int) -> int:
    return zero_point + 128 if dtype == "uint8" else zero_point


# ---- Table ops: logistic, tanh, gelu, exp, log -------------------------------------------------

TABLE_OPS = [
    # (id, op class, TFLite op, TFLite options, irc properties, storage types, 1/256 result)
    ("sigmoid", nn.SigmoidOp, "LOGISTIC", None, {}, ("int8", "uint8"), True),
    ("tanh", nn.TanhOp, "TANH", None, {}, ("int8", "uint8"), False),
    ("gelu", nn.GeluOp, "GELU", None, {}, ("int8", "uint8"), False),
    (
        "gelu_tanh",
        nn.GeluOp,
        "GELU",
        ("GeluOptions", {"approximate": True}),
        {"approximate": "tanh"},
        ("int8", "uint8"),
        False,
    ),
    ("exp", nn.ExpOp, "EXP", None, {}, ("int8",), False),
    ("log", nn.LogOp, "LOG", None, {}, ("int8",), False),
]


TABLE_CASES = [
    pytest.param(*case[1:-2], dtype, params, case[-1], id=f"{case[0]}-{dtype}-{i}")
    for case in TABLE_OPS
    for dtype in case[-2]
    for i, params in enumerate(QUANT_PARAMS)
]


def random_params(dtype: str, seed: int) -> tuple[float, int, float, int]:
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    in_scale, out_scale = (float(np.float32(10 ** rng.uniform(-3, 0))) for _ in range(2))
    in_zp, out_zp = (int(rng.integers(info.min, info.max + 1)) for _ in range(2))
    return in_scale, in_zp - shifted(dtype, 0), out_scale, out_zp - shifted(dtype, 0)


RANDOM_TABLE_CASES = [
    pytest.param(*case[1:-2], dtype, random_params(dtype, seed), case[-1], id=f"{case[0]}-{seed}")
    for case in TABLE_OPS
    for seed in range(8)
    for dtype in [case[-2][seed % len(case[-2])]]
]


@pytest.mark.parametrize(
    ("op_class", "opcode", "options", "props", "dtype", "params", "fixed_result"),
    TABLE_CASES + RANDOM_TABLE_CASES,
)
def test_table_ops_match_tflite(op_class, opcode, options, props, dtype, params, fixed_result):
    in_scale, in_zp, out_scale, out_zp = params
    if fixed_result:  # LOGISTIC: TFLite requires a result scale of 1/256
        out_scale = 1 / 256
    x = all_values(dtype)
    source = (in_scale, shifted(dtype, in_zp))
    result = (out_scale, shifted(dtype, out_zp))
    ref = run_tflite(opcode, x, source, result, options)
    got = run_irc(op_class, x, qtype(dtype, *source), qtype(dtype, *result), **props)
    assert_matches(got, ref, exact=False)


@pytest.mark.parametrize("in_scale", [0.5, 1.0, 2.0])
def test_exp_overflow_saturates_like_tflite(in_scale):
    x = all_values("int8")
    ref = run_tflite("EXP", x, (in_scale, 0), (1e-3, -100))
    got = run_irc(nn.ExpOp, x, qtype("int8", in_scale, 0), qtype("int8", 1e-3, -100))
    assert_matches(got, ref, exact=False)
    assert got.max() == 127


def test_log_of_non_positive_inputs_is_the_lowest_result():
    x = all_values("int8")
    ref = run_tflite("LOG", x, (0.05, 10), (0.04, 30))
    got = run_irc(nn.LogOp, x, qtype("int8", 0.05, 10), qtype("int8", 0.04, 30))
    assert_matches(got, ref, exact=False)
    assert np.all(got[x <= 10] == -128)


# ---- Hard swish, sqrt, rsqrt -------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [*QUANT_PARAMS[:3], (0.02, -128, 0.02, -128), (0.5, 5, 0.05, -3), (0.004, 0, 0.004, 0)],
)
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_hard_swish_matches_tflite(dtype, params):
    in_scale, in_zp, out_scale, out_zp = params
    source = (in_scale, shifted(dtype, in_zp))
    result = (out_scale, shifted(dtype, out_zp))
    x = all_values(dtype)
    ref = run_tflite("HARD_SWISH", x, source, result)
    got = run_irc(nn.HardSwishOp, x, qtype(dtype, *source), qtype(dtype, *result))
    assert_matches(got, ref)


@pytest.mark.parametrize("params", [*QUANT_PARAMS, (0.02, -128, 0.01, -128), (1.5, 0, 0.1, -50)])
@pytest.mark.parametrize(("op_class", "opcode"), [(nn.SqrtOp, "SQRT"), (nn.RsqrtOp, "RSQRT")])
def test_square_roots_match_tflite(op_class, opcode, params):
    in_scale, in_zp, out_scale, out_zp = params
    x = np.arange(in_zp, 128, dtype=np.int8).reshape(1, -1)  # TFLite refuses x < zero point
    ref = run_tflite(opcode, x, (in_scale, in_zp), (out_scale, out_zp))
    got = run_irc(op_class, x, qtype("int8", in_scale, in_zp), qtype("int8", out_scale, out_zp))
    assert_matches(got, ref)


@pytest.mark.parametrize(("op_class", "opcode"), [(nn.SqrtOp, "SQRT"), (nn.RsqrtOp, "RSQRT")])
def test_square_roots_refuse_negative_inputs_like_tflite(op_class, opcode):
    x = np.array([[5, 4, 3]], dtype=np.int8)
    with pytest.raises(RuntimeError, match="only defined for"):
        run_tflite(opcode, x, (0.1, 4), (0.1, 0))
    with pytest.raises(ValueError, match="only defined for"):
        run_irc(op_class, x, qtype("int8", 0.1, 4), qtype("int8", 0.1, 0))


# ---- Softmax and log-softmax -------------------------------------------------------------------

SOFTMAX_CASES = [
    # (input scale, beta, shape)
    (0.1, 1.0, (1, 10)),
    (0.05, 1.0, (3, 257)),
    (0.5, 0.5, (2, 3, 17)),
    (1 / 16, 2.0, (4, 33)),
    (0.002, 1.0, (2, 64)),
    (3.0, 1.0, (5, 9)),
]


@pytest.mark.parametrize(("in_scale", "beta", "shape"), SOFTMAX_CASES)
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_softmax_matches_tflite(dtype, in_scale, beta, shape):
    x = random_values(dtype, shape, seed=len(shape) + int(in_scale * 100))
    source = (in_scale, shifted(dtype, -7))
    result = (1 / 256, np.iinfo(dtype).min)
    options = ("SoftmaxOptions", {"beta": beta})
    ref = run_tflite("SOFTMAX", x, source, result, options)
    got = run_irc(nn.SoftmaxOp, x, qtype(dtype, *source), qtype(dtype, *result), beta=beta)
    assert_matches(got, ref)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_softmax_to_int16_matches_tflite(dtype):
    # TFLite's 8-bit -> int16 softmax; the op is built without verification (the nn verifier
    # asks for one storage type on both sides).
    x = random_values(dtype, (3, 40), seed=5)
    ref = run_tflite(
        "SOFTMAX", x, (0.07, 0), (1 / 65536, -32768), ("SoftmaxOptions", {"beta": 1.0}), "int16"
    )
    got = run_irc(nn.SoftmaxOp, x, qtype(dtype, 0.07, 0), qtype("int16", 1 / 65536, -32768))
    assert_matches(got, ref)


def test_softmax_along_an_inner_axis_is_tflite_on_the_moved_axis():
    x = random_values("int8", (2, 9, 4), seed=3)
    moved = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    ref = run_tflite("SOFTMAX", moved, (0.1, 0), (1 / 256, -128), ("SoftmaxOptions", {"beta": 1.0}))
    got = run_irc(nn.SoftmaxOp, x, qtype("int8", 0.1, 0), qtype("int8", 1 / 256, -128), axis=1)
    assert_matches(np.moveaxis(got, 1, -1), ref)


@pytest.mark.parametrize(("in_scale", "shape"), [(s, shape) for s, _, shape in SOFTMAX_CASES])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_log_softmax_matches_tflite(dtype, in_scale, shape):
    x = random_values(dtype, shape, seed=7 + len(shape))
    source = (in_scale, shifted(dtype, 12))
    result = (16 / 256, np.iinfo(dtype).max)
    ref = run_tflite("LOG_SOFTMAX", x, source, result)
    got = run_irc(nn.LogSoftmaxOp, x, qtype(dtype, *source), qtype(dtype, *result))
    assert_matches(got, ref)


def test_softmax_of_a_constant_row_is_uniform():
    x = np.full((1, 4), 17, dtype=np.int8)
    got = run_irc(nn.SoftmaxOp, x, qtype("int8", 0.1, 0), qtype("int8", 1 / 256, -128))
    np.testing.assert_array_equal(got, np.full((1, 4), -64, dtype=np.int8))  # 0.25 * 256 - 128


# ---- Resize bilinear ---------------------------------------------------------------------------

RESIZE_SHAPES = [((4, 5), (8, 10)), ((5, 7), (3, 4)), ((3, 3), (7, 11)), ((1, 4), (1, 9))]
TFLITE_FLAGS = {
    "asymmetric": (False, False),
    "align_corners": (True, False),
    "half_pixel": (False, True),
}


def run_resize(x: np.ndarray, size, mode: str, layout: str = "NHWC") -> np.ndarray:
    q = qtype(x.dtype.name, 0.1, 5)
    block = Block(arg_types=[TensorType(q, list(x.shape))])
    op = nn.ResizeOp.make(
        block.args[0], size=list(size), mode="bilinear", coordinate_mode=mode, layout=layout
    )
    (y,) = kernel_for(op)(x)
    return y


@pytest.mark.parametrize("mode", list(TFLITE_FLAGS))
@pytest.mark.parametrize(("in_hw", "out_hw"), RESIZE_SHAPES)
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_resize_bilinear_matches_tflite(dtype, in_hw, out_hw, mode):
    x = random_values(dtype, (2, *in_hw, 3), seed=in_hw[0])
    align_corners, half_pixel_centers = TFLITE_FLAGS[mode]
    (ref,) = run_op(
        "RESIZE_BILINEAR",
        [T(list(x.shape), dtype, 0.1, 5), T([2], "int32", data=list(out_hw))],
        [T([2, *out_hw, 3], dtype, 0.1, 5)],
        (
            "ResizeBilinearOptions",
            {"align_corners": align_corners, "half_pixel_centers": half_pixel_centers},
        ),
        feed=[x],
    )
    assert_matches(run_resize(x, out_hw, mode), ref)
    nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    assert_matches(run_resize(nchw, out_hw, mode, "NCHW").transpose(0, 2, 3, 1), ref)


def test_resize_bilinear_refuses_modes_tflite_lacks():
    x = np.zeros((1, 2, 2, 1), dtype=np.int8)
    block = Block(arg_types=[TensorType(qtype("int8", 0.1, 0), list(x.shape))])
    op = nn.ResizeOp.make(
        block.args[0],
        size=[4, 4],
        mode="bilinear",
        coordinate_mode="pytorch_half_pixel",
        layout="NHWC",
    )
    with pytest.raises(UnsupportedOpError, match="coordinate mode 'pytorch_half_pixel'"):
        resize_bilinear(op)


# ---- Registration and unsupported forms --------------------------------------------------------


def test_quantized_kernels_are_registered():
    quantized = registered_ops(quantized=True)
    for op_class in (
        nn.SoftmaxOp,
        nn.LogSoftmaxOp,
        nn.SigmoidOp,
        nn.TanhOp,
        nn.HardSwishOp,
        nn.GeluOp,
        nn.ExpOp,
        nn.LogOp,
        nn.SqrtOp,
        nn.RsqrtOp,
    ):
        assert op_class in quantized, op_class.name


@pytest.mark.parametrize(
    ("op_class", "dtype", "source", "result", "message"),
    [
        (nn.ExpOp, "uint8", (0.1, 128), (0.1, 128), "defined for int8 storage"),
        (nn.TanhOp, "int16", (0.1, 0), (0.1, 0), "int8/uint8 storage"),
        (nn.SoftmaxOp, "int8", (0.1, 0), (0.1, -128), "scale 1/256 and zero point -128"),
        (nn.SoftmaxOp, "int8", (0.1, 0), (1 / 256, 0), "scale 1/256 and zero point -128"),
        (nn.LogSoftmaxOp, "int8", (0.1, 0), (1 / 16, 0), "scale 0.0625 and zero point 127"),
    ],
)
def test_unsupported_quantizations_are_reported(op_class, dtype, source, result, message):
    x = np.zeros((1, 4), dtype=dtype)
    op = make_op(op_class, x, qtype(dtype, *source), qtype(dtype, *result))
    with pytest.raises(UnsupportedOpError, match=message):
        kernel_for(op)


def test_per_axis_inputs_are_unsupported():
    per_axis = UniformQuantizedType.per_axis(i8, f32, 1, [0.1, 0.2], [0, 0])
    x = np.zeros((1, 2), dtype=np.int8)
    op = make_op(nn.TanhOp, x, per_axis, qtype("int8", 0.1, 0))
    with pytest.raises(UnsupportedOpError, match="per-tensor"):
        kernel_for(op)


# ---- Fixed-point helpers against the functions they approximate --------------------------------

Q0 = 2.0**31


def test_exp_on_negative_values_approximates_exp():
    x = np.linspace(-31.9, 0, 1001)
    raw = np.round(x * 2.0**26).astype(np.int64)  # Q5.26
    got = exp_on_negative_values(raw, 5) / Q0
    np.testing.assert_allclose(got, np.exp(raw / 2.0**26), atol=3e-9 * 32)
    assert exp_on_negative_values(np.array([0]), 5)[0] == 2**31 - 1


def test_one_over_one_plus_x_approximates_reciprocal():
    raw = np.linspace(0, 2**31 - 1, 1001).astype(np.int64)
    got = one_over_one_plus_x_for_x_in_0_1(raw) / Q0
    np.testing.assert_allclose(got, 1 / (1 + raw / Q0), atol=4 / Q0)


def test_get_reciprocal_normalises_the_sum():
    sums = np.array([1, 1 << 19, 3 << 19, (1 << 31) - 1], dtype=np.int64)  # Q12.19
    scale, bits_over_unit = get_reciprocal(sums, 12)
    real = sums / 2.0**19
    np.testing.assert_allclose(scale / Q0 / 2.0**bits_over_unit, 1 / real, rtol=1e-8)


def test_log_x_approximates_log():
    x = np.linspace(1, 4095, 997)
    raw = np.round(x * 2.0**19).astype(np.int64)  # Q12.19
    got = log_x_for_x_greater_than_or_equal_to_1(raw, 12, 5) / 2.0**26
    np.testing.assert_allclose(got, np.log(raw / 2.0**19), atol=2e-7)


@pytest.mark.parametrize("value", [2, 3, 17, 255, 4096, (1 << 29) + 5, 2**31 - 1])
def test_inv_sqrt_multiplier_approximates_inverse_square_root(value):
    multiplier, shift = inv_sqrt_quantized_multiplier_exp(value, -1)
    assert 0 < multiplier < 2**31
    np.testing.assert_allclose(multiplier * 2.0 ** (shift - 31), 1 / math.sqrt(value), rtol=1e-5)


def test_calculate_input_radius_matches_its_definition():
    assert calculate_input_radius(5, 0) == 31 * 2**26
    assert calculate_input_radius(5, 20) == math.floor(31 * 2**26 / 2**20)


# TFLite RESIZE_NEAREST_NEIGHBOR flags -> (coordinate_mode, nearest_mode) of nn.resize:
# neither flag floors `out * in / out`; half_pixel_centers floors `(out + 0.5) * in / out`;
# align_corners rounds (half away from zero) `out * (in - 1) / (out - 1)`.
TFLITE_NEAREST_FLAGS = {
    (False, False): ("asymmetric", "floor"),
    (False, True): ("tf_half_pixel_for_nn", "floor"),
    (True, False): ("align_corners", "round_prefer_ceil"),
}


@pytest.mark.parametrize("flags", list(TFLITE_NEAREST_FLAGS))
@pytest.mark.parametrize(("in_hw", "out_hw"), RESIZE_SHAPES)
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_resize_nearest_matches_tflite(dtype, in_hw, out_hw, flags):
    """Nearest resize moves stored integers: the data-movement kernel serves int8 as is."""
    x = random_values(dtype, (2, *in_hw, 3), seed=in_hw[1])
    align_corners, half_pixel_centers = flags
    (ref,) = run_op(
        "RESIZE_NEAREST_NEIGHBOR",
        [T(list(x.shape), dtype, 0.1, 5), T([2], "int32", data=list(out_hw))],
        [T([2, *out_hw, 3], dtype, 0.1, 5)],
        (
            "ResizeNearestNeighborOptions",
            {"align_corners": align_corners, "half_pixel_centers": half_pixel_centers},
        ),
        feed=[x],
    )
    coordinate_mode, nearest_mode = TFLITE_NEAREST_FLAGS[flags]
    q = qtype(x.dtype.name, 0.1, 5)
    block = Block(arg_types=[TensorType(q, list(x.shape))])
    op = nn.ResizeOp.make(
        block.args[0],
        size=list(out_hw),
        mode="nearest",
        coordinate_mode=coordinate_mode,
        nearest_mode=nearest_mode,
        layout="NHWC",
    )
    (got,) = kernel_for(op)(x)
    assert_matches(got, ref)
