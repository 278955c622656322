"""Reference kernels of the `quant` dialect: qcast, dcast, scast and rescale.

`rescale` is the single definition of TFLite's fixed-point requantization
(`MultiplyByQuantizedMultiplier`): every target that runs int8 natively is tested against it.
The arithmetic runs vectorised in int64, which holds every intermediate exactly.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType

from irc.dialects import quant
from irc.dialects.quant import UniformQuantizedType, quantized_element
from irc.targets.reference.registry import Kernel, kernel, numpy_dtype

IntValues = np.ndarray | np.integer | int
"""An int64 array, or a scalar that broadcasts with one (a fixed-point constant)."""

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


# ---- Fixed-point arithmetic (TFLite's gemmlowp-derived helpers) --------------------------------


def _c_div_pow2(value: np.ndarray, bits: int) -> np.ndarray:
    """C integer division by 2^bits (truncation toward zero) on int64."""
    return np.where(value >= 0, value >> bits, -((-value) >> bits))


def saturating_rounding_doubling_high_mul(a: IntValues, b: IntValues) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int32 values held in int64."""
    product = a * b
    nudge = np.where(product >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    high = _c_div_pow2(product + nudge, 31)
    overflow = (a == _INT32_MIN) & (b == _INT32_MIN)
    return np.where(overflow, np.int64(_INT32_MAX), high)


def rounding_divide_by_pot(x: np.ndarray, exponent: IntValues) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: x / 2^exponent, rounding half away from zero."""
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(
    x: np.ndarray, multiplier: IntValues, shift: IntValues, rounding: str = "double_round"
) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier: x * multiplier * 2^(shift - 31), rounded.

    `x`, `multiplier` and `shift` broadcast together (per-channel parameters); int64 in/out.
    """
    x = x.astype(np.int64, copy=False)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    if rounding == "single_round":
        total_shift = 31 - shift
        rounder = np.int64(1) << (total_shift - 1)
        return (x * multiplier + rounder) >> total_shift
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    # TFLite shifts in int32; the values of real models never overflow there.
    shifted = np.clip(x << left, _INT32_MIN, _INT32_MAX)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier), right)


def _zero_point(type_: TensorType) -> int:
    qtype = quantized_element(type_)
    return 0 if qtype is None else qtype.zero_point_values[0]


def _storage_range(type_: TensorType) -> tuple[int, int]:
    qtype = quantized_element(type_)
    if qtype is not None:
        return qtype.storage_range
    info = np.iinfo(numpy_dtype(type_))
    return int(info.min), int(info.max)


def _per_axis(values: np.ndarray, axis: int | None, rank: int) -> np.ndarray:
    """Reshape per-channel parameters to broadcast along `axis` of a rank-`rank` tensor."""
    if axis is None or values.size == 1:
        return values.reshape(())
    shape = [1] * rank
    shape[axis] = values.size
    return values.reshape(shape)


# ---- Kernels -----------------------------------------------------------------------------------


@kernel(quant.RescaleOp, quantized=True)
def rescale(op: quant.RescaleOp) -> Kernel:
    """``clamp(zp_out + MultiplyByQuantizedMultiplier(x - zp_in, m, s))`` per tensor/channel."""
    source, result = op.input.type, op.output.type
    assert isinstance(source, TensorType)
    assert isinstance(result, TensorType)
    rank = source.get_num_dims()
    axis = None if op.axis is None else op.axis.value.data
    multiplier = _per_axis(np.array(op.multiplier_values, np.int64), axis, rank)
    shift = _per_axis(np.array(op.shift_values, np.int64), axis, rank)
    zp_in, zp_out = _zero_point(source), _zero_point(result)
    low, high = _storage_range(result)
    dtype = numpy_dtype(result)
    rounding = op.rounding.data

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        scaled = multiply_by_quantized_multiplier(
            x.astype(np.int64) - zp_in, multiplier, shift, rounding
        )
        return (np.clip(scaled + zp_out, low, high).astype(dtype),)

    return run


def _scales_and_zero_points(
    qtype: UniformQuantizedType, rank: int
) -> tuple[np.ndarray, np.ndarray]:
    scales = _per_axis(np.array(qtype.scale_values, np.float64), qtype.axis, rank)
    zero_points = _per_axis(np.array(qtype.zero_point_values, np.int64), qtype.axis, rank)
    return scales, zero_points


def round_half_away_from_zero(values: np.ndarray) -> np.ndarray:
    """Exact std::round on float arrays (no `x + 0.5` double rounding)."""
    magnitude = np.abs(values.astype(np.float64))
    whole = np.floor(magnitude)
    whole += (magnitude - whole) >= 0.5
    return np.copysign(whole, values)


@kernel(quant.QCastOp, quantized=True)
def qcast(op: quant.QCastOp) -> Kernel:
    """``clamp(round(x / scale) + zero_point)``; the division in the input's float type (TFLite
    AffineQuantize), rounding half away from zero or half to even (ONNX QuantizeLinear)."""
    result = op.output.type
    assert isinstance(result, TensorType)
    qtype = quantized_element(result)
    assert qtype is not None
    scales, zero_points = _scales_and_zero_points(qtype, result.get_num_dims())
    low, high = qtype.storage_range
    dtype = numpy_dtype(result)
    to_even = op.rounding.data == "half_to_even"

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):
            scaled = x / scales.astype(x.dtype)
            rounded = np.rint(scaled) if to_even else round_half_away_from_zero(scaled)
        # saturate in float first (±inf and huge values to the storage limits; an int64 cast
        # of them is undefined), NaN to the zero point (real 0, as `nn.cast` of NaN)
        bounded = np.clip(np.nan_to_num(rounded, nan=0.0), -(2.0**40), 2.0**40)
        return (np.clip(bounded.astype(np.int64) + zero_points, low, high).astype(dtype),)

    return run


@kernel(quant.DCastOp, quantized=True)
def dcast(op: quant.DCastOp) -> Kernel:
    """``scale * (stored - zero_point)`` computed in double, cast to the expressed type
    (TFLite Dequantize)."""
    source = op.input.type
    assert isinstance(source, TensorType)
    qtype = quantized_element(source)
    assert qtype is not None
    scales, zero_points = _scales_and_zero_points(qtype, source.get_num_dims())
    dtype = numpy_dtype(op.output.type)

    def run(q: np.ndarray) -> tuple[np.ndarray, ...]:
        return ((scales * (q.astype(np.int64) - zero_points)).astype(dtype),)

    return run


@kernel(quant.SCastOp, quantized=True)
def scast(op: quant.SCastOp) -> Kernel:
    """Reinterpret stored integers; no value changes (a view when the dtype differs)."""
    dtype = numpy_dtype(op.output.type)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (x if x.dtype == dtype else x.view(dtype),)

    return run
