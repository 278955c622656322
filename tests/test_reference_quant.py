"""The quant kernels against literal scalar ports of TFLite's fixed-point helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerType, Signedness, TensorType, f32, i8, i32
from xdsl.ir import Block

from irc.dialects import quant
from irc.dialects.quant import UniformQuantizedType
from irc.quantization import activation_range, quantize_multiplier
from irc.targets.reference import evaluate

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


# ---- Scalar ports of tensorflow/lite/kernels/internal/common.h and quantization_util.cc ----


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return c_div(ab + nudge, 1 << 31)


def rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def mbqm(x: int, multiplier: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    return rdbpot(srdhm(x * (1 << left), multiplier), right)


def mbqm_single(x: int, multiplier: int, shift: int) -> int:
    total = 31 - shift
    return (x * multiplier + (1 << (total - 1))) >> total


def std_round(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


# ---- Helpers ----


def _rescale(
    source: TensorType, result: TensorType, mult, shift, axis=None, rounding="double_round"
):
    block = Block(arg_types=[source])
    return quant.RescaleOp(block.args[0], result, mult, shift, axis, rounding)


def _qtype(scale: float, zp: int, storage: IntegerType = i8) -> UniformQuantizedType:
    return UniformQuantizedType.per_tensor(storage, f32, scale, zp)


# ---- Tests ----


@pytest.mark.parametrize(
    "real", [1e-9, 0.000123, 0.0078125, 0.3, 0.5, 0.75, 0.999999, 1.0, 3.7, 1e3]
)
def test_quantize_multiplier_matches_frexp_definition(real: float) -> None:
    multiplier, shift = quantize_multiplier(real)
    assert 2**30 <= multiplier < 2**31
    assert math.isclose(multiplier * 2.0 ** (shift - 31), real, rel_tol=1e-9)


def test_quantize_multiplier_of_zero_and_tiny() -> None:
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(1e-12) == (0, 0)  # below 2^-31: flushed, as TFLite does


@pytest.mark.parametrize("rounding", ["double_round", "single_round"])
def test_rescale_matches_scalar_tflite(rounding: str) -> None:
    rng = np.random.default_rng(0)
    acc = rng.integers(-(2**20), 2**20, size=4096).astype(np.int32)
    acc[:6] = [0, 1, -1, 2**20 - 1, -(2**20), 12345]
    real = 0.00371
    mult, shift = quantize_multiplier(real)
    out_type = TensorType(_qtype(0.1, -5), [acc.size])
    (got,) = evaluate(
        _rescale(TensorType(i32, [acc.size]), out_type, [mult], [shift], None, rounding), acc
    )
    port = mbqm if rounding == "double_round" else mbqm_single
    want = np.array([min(127, max(-128, port(int(a), mult, shift) - 5)) for a in acc])
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_rescale_per_channel_with_left_shift() -> None:
    rng = np.random.default_rng(1)
    acc = rng.integers(-3000, 3000, size=(2, 3, 4)).astype(np.int32)
    reals = [0.01, 2.5, 0.3]  # 2.5 needs a left shift
    params = [quantize_multiplier(r) for r in reals]
    source, result = TensorType(i32, [2, 3, 4]), TensorType(i32, [2, 3, 4])
    op = _rescale(source, result, [m for m, _ in params], [s for _, s in params], axis=1)
    (got,) = evaluate(op, acc)
    want = np.empty_like(acc)
    for idx in np.ndindex(acc.shape):
        m, s = params[idx[1]]
        want[idx] = mbqm(int(acc[idx]), m, s)
    np.testing.assert_array_equal(got, want)


def test_rescale_subtracts_input_zero_point_and_saturates() -> None:
    q_in = TensorType(_qtype(0.5, 10), [5])
    q_out = TensorType(_qtype(0.25, -3), [5])
    mult, shift = quantize_multiplier(0.5 / 0.25)
    (got,) = evaluate(
        _rescale(q_in, q_out, [mult], [shift]), np.array([10, 11, 127, -128, 60], np.int8)
    )
    want = [
        min(127, max(-128, mbqm(int(v) - 10, mult, shift) - 3)) for v in [10, 11, 127, -128, 60]
    ]
    np.testing.assert_array_equal(got, want)


def test_qcast_rounds_half_away_from_zero_in_float32() -> None:
    qt = _qtype(0.5, 3)
    block = Block(arg_types=[TensorType(f32, [7])])
    op = quant.QCastOp(block.args[0], TensorType(qt, [7]))
    x = np.array([0.25, -0.25, 0.75, 1000.0, -1000.0, 0.2499999, 1.25], np.float32)
    (got,) = evaluate(op, x)
    want = [min(127, max(-128, std_round(float(np.float32(v) / np.float32(0.5))) + 3)) for v in x]
    np.testing.assert_array_equal(got, want)


def test_qcast_half_to_even_for_onnx() -> None:
    qt = UniformQuantizedType.per_tensor(IntegerType(8, Signedness.UNSIGNED), f32, 0.5, 128)
    block = Block(arg_types=[TensorType(f32, [4])])
    op = quant.QCastOp(block.args[0], TensorType(qt, [4]), rounding="half_to_even")
    (got,) = evaluate(op, np.array([0.25, 0.75, -0.25, 1e6], np.float32))
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, [128, 130, 128, 255])


def test_qcast_and_dcast_per_axis() -> None:
    qt = UniformQuantizedType.per_axis(i8, f32, 1, [0.1, 0.5], [0, -2])
    block = Block(arg_types=[TensorType(f32, [3, 2])])
    q = quant.QCastOp(block.args[0], TensorType(qt, [3, 2]))
    x = np.array([[0.1, 0.5], [-0.3, 1.0], [0.0, 0.0]], np.float32)
    (stored,) = evaluate(q, x)
    np.testing.assert_array_equal(stored, [[1, -1], [-3, 0], [0, -2]])
    d = quant.DCastOp(q.output)
    (back,) = evaluate(d, stored)
    assert back.dtype == np.float32
    np.testing.assert_allclose(back, x, atol=1e-7)


def test_scast_is_a_reinterpretation() -> None:
    qt = _qtype(0.5, -1)
    block = Block(arg_types=[TensorType(qt, [3])])
    op = quant.SCastOp(block.args[0], TensorType(i8, [3]))
    data = np.array([1, -2, 3], np.int8)
    (got,) = evaluate(op, data)
    assert got is data


def test_activation_range_matches_tflite() -> None:
    assert activation_range("none", 0.1, -5, (-128, 127)) == (-128, 127)
    assert activation_range("relu", 0.1, -5, (-128, 127)) == (-5, 127)
    assert activation_range("relu6", 0.1, -5, (-128, 127)) == (-5, 55)
    assert activation_range("relu_n1_to_1", 0.1, -5, (-127, 127)) == (-15, 5)
    with pytest.raises(ValueError, match="no quantized clamp range"):
        activation_range("tanh", 0.1, 0, (-128, 127))
