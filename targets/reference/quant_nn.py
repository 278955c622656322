"""Reference kernels of quantized `nn` ops that keep their own integer algorithm in TFLite.

`lower-quantized` rewrites quantized arithmetic (conv2d, add, pools, ...) into integer ops and
`quant.rescale`; the ops here stay quantized because TFLite defines them by an algorithm of
their own. Each kernel transcribes what TFLite's BUILTIN_REF op resolver runs (the
`kReference` kernels of `tensorflow/lite/kernels`), vectorised with numpy:

* softmax: activations.cc `SoftmaxPrepare<kReference>`, reference/softmax.h; gemmlowp fixed
  point; int8/uint8 inputs, results of the same type or int16.
* log_softmax: activations.cc `LogSoftmaxPrepare<kReference>`,
  reference/integer_ops/log_softmax.h (uint8: reference/log_softmax.h); gemmlowp fixed point.
* sigmoid (LOGISTIC), tanh, gelu: activations.cc `*Prepare<kReference>` fill a 256-entry
  table with `LUTPopulate` (internal/common.h); int8, uint8.
* hard_swish: activations.cc `HardSwishPrepare`, reference/hard_swish.h; int16 fixed point.
* exp (exp.cc), log (elementwise.cc `LogLUTPrepare`): 256-entry tables; int8 only.
* sqrt: elementwise.cc `SqrtEvalQuantized`, float32 with a truncating requantization; int8.
* rsqrt: elementwise.cc `RsqrtEvalQuantizedInt8`, fixed-point inverse square root; int8.
* bilinear resize: resize_bilinear.cc, reference/resize_bilinear.h; int8 with 10-bit
  fixed-point weights (`ResizeBilinearInteger`), uint8 in float32 (`ResizeBilinear`).

Ops whose result depends on the stored input value alone are evaluated once per possible input
value when the kernel is prepared, exactly as TFLite fills its lookup tables in `Prepare`, and
applied with one `np.take`. Float steps run in float32 in the order the C++ code runs them;
libm functions (`expf`, `tanhf`, `erfcf`, `logf`) are evaluated in float64 and rounded to
float32 (correctly rounded, where glibc may be off by an ulp: that moves a table entry only when
a scaled value lands within an ulp of a rounding tie). A float converted to int32 out of range
saturates, as it does in TFLite's builds (C++ leaves it undefined).

Resize is registered by `irc.targets.reference.shape` for both float and quantized tensors;
its quantized bilinear form is `resize_bilinear` below, for that kernel to hand over to.

Other storage types (i16) and per-axis quantization are refused with an UnsupportedOpError; ops
TFLite has no 8-bit kernel for (erf, ...) have no quantized kernel, which the registry reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.dialects.quant import UniformQuantizedType, quantized_element
from irc.quantization import quantize_multiplier
from irc.targets.reference.quant import (
    IntValues,
    multiply_by_quantized_multiplier,
    round_half_away_from_zero,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from irc.targets.reference.registry import Kernel, UnsupportedOpError, kernel, numpy_dtype

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1

_srdhm = saturating_rounding_doubling_high_mul
_rdbpot = rounding_divide_by_pot


# ---- Quantization parameters -------------------------------------------------------------------


class _Quant:
    """Per-tensor parameters of one operand or result, as TFLite's `TfLiteQuantizationParams`."""

    def __init__(self, op: Operation, value: SSAValue, what: str):
        qtype = quantized_element(value.type)
        if qtype is None:
            raise UnsupportedOpError(op, f"quantized '{op.name}' needs a quantized {what}")
        if qtype.is_per_axis:
            raise UnsupportedOpError(
                op, f"quantized '{op.name}' needs a per-tensor quantized {what}, got {qtype}"
            )
        self.type: UniformQuantizedType = qtype
        self.scale = np.float32(qtype.scale_values[0])
        """The scale as TFLite holds it (a C float)."""
        self.zero_point = qtype.zero_point_values[0]
        self.dtype = numpy_dtype(qtype)
        info = np.iinfo(self.dtype)
        self.min, self.max = int(info.min), int(info.max)
        self.bits = info.bits


def _operands(op: Operation, storages: Sequence[str]) -> tuple[_Quant, _Quant]:
    """Input and output parameters; both must be stored as one of `storages` (dtype names)."""
    source, result = _Quant(op, op.operands[0], "input"), _Quant(op, op.results[0], "result")
    for q in (source, result):
        if q.dtype.name not in storages:
            raise UnsupportedOpError(
                op,
                f"quantized '{op.name}' is defined for {'/'.join(storages)} storage "
                f"(TFLite), got {q.type.storage_type}",
            )
    if source.dtype != result.dtype:
        raise UnsupportedOpError(
            op, f"quantized '{op.name}' needs the input and result stored alike"
        )
    return source, result


def _multiplier(op: Operation, real: float) -> tuple[int, int]:
    """QuantizeMultiplier, reporting a multiplier out of range as an unsupported op."""
    try:
        return quantize_multiplier(real)
    except ValueError as exc:
        raise UnsupportedOpError(op, f"quantized '{op.name}': {exc}") from None


def _float(value: float) -> float:
    """A value as TFLite stores it (a C float), widened back to double."""
    return float(np.float32(value))


# ---- gemmlowp fixed point (fixedpoint/fixedpoint.h), on int32 values held in int64 ------------
#
# `FixedPoint<int32_t, I>` values are handled as their raw int32 integers; the integer bits `I`
# are passed explicitly. Multiplication of fixed-point values is `_srdhm` on the raws.


def _saturating_rounding_multiply_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT: x * 2^exponent, saturating or rounding."""
    if exponent == 0:
        return x
    if exponent < 0:
        return _rdbpot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    shifted = x << exponent
    return np.where(x > threshold, _INT32_MAX, np.where(x < -threshold, _INT32_MIN, shifted))


def _rescale(x: np.ndarray, src_integer_bits: int, dst_integer_bits: int) -> np.ndarray:
    """gemmlowp's Rescale<dst>(FixedPoint<int32_t, src>)."""
    return _saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


def _rounding_half_sum(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """gemmlowp's RoundingHalfSum: (a + b) / 2 rounded half away from zero (C division)."""
    total = a + b
    total = total + np.where(total >= 0, 1, -1)
    return np.where(total >= 0, total >> 1, -((-total) >> 1))


def _count_leading_zeros(x: np.ndarray) -> np.ndarray:
    """CountLeadingZeros of values in [0, 2^32) as uint32."""
    _, exponent = np.frexp(x.astype(np.float64))  # exact: bit length for x > 0, 0 for x == 0
    return 32 - exponent.astype(np.int64)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """exp(a) for Q0.31 `a` in [-1/4, 0): a Taylor expansion around -1/8."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = a + (1 << 28)
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = _saturating_rounding_multiply_by_pot(x4, -2)
    polynomial = _saturating_rounding_multiply_by_pot(
        _srdhm(x4_over_4 + x3, constant_1_over_3) + x2, -1
    )
    return constant_term + _srdhm(constant_term, x + polynomial)


_EXP_BARREL_SHIFTER = (
    (-2, 1672461947),
    (-1, 1302514674),
    (0, 790015084),
    (1, 290630308),
    (2, 39332535),
    (3, 720401),
    (4, 242),
)
"""(exponent, exp(-2^exponent) in Q0.31) for gemmlowp's exp barrel shifter."""


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp's exp_on_negative_values: Q{integer_bits} input <= 0, Q0.31 result."""
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        _rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0)
    )
    remainder = a_mod_quarter_minus_one_quarter - a
    for exponent, multiplier in _EXP_BARREL_SHIFTER:
        if integer_bits > exponent:
            bit = remainder & (1 << (fractional_bits + exponent))
            result = np.where(bit != 0, _srdhm(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))  # -32.0
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, _INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp's 1 / (1 + a) for Q0.31 `a` in [0, 1): Newton-Raphson in Q2.29."""
    half_denominator = _rounding_half_sum(a, _INT32_MAX)
    constant_48_over_17 = 1515870810
    constant_neg_32_over_17 = -1010580540
    one_q2 = 1 << 29
    x = constant_48_over_17 + _srdhm(half_denominator, constant_neg_32_over_17)
    for _ in range(3):
        one_minus_half_denominator_times_x = one_q2 - _srdhm(half_denominator, x)
        x = x + _rescale(_srdhm(x, one_minus_half_denominator_times_x), 4, 2)
    return _rescale(x, 1, 0)


def get_reciprocal(x: np.ndarray, x_integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetReciprocal (common.h): Q0.31 `1 / x` scaled into [1/2, 1] and the number
    of bits `x` has above 1.0 (x > 0 in Q{x_integer_digits})."""
    headroom_plus_one = _count_leading_zeros(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_sum_minus_one = ((x << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


def _saturating_rounding_multiply_by_pot_param(x: np.ndarray, exponent: IntValues) -> np.ndarray:
    """TFLite's SaturatingRoundingMultiplyByPOTParam: a saturating left shift by a run-time,
    non-negative exponent (per element)."""
    exponent = np.asarray(exponent, dtype=np.int64)
    threshold = (np.int64(1) << (31 - exponent)) - 1
    shifted = x << exponent
    saturated = np.where(x > threshold, _INT32_MAX, np.where(x < -threshold, _INT32_MIN, shifted))
    return np.where(exponent == 0, x, saturated)


def _saturate32(x: np.ndarray) -> np.ndarray:
    return np.clip(x, _INT32_MIN, _INT32_MAX)


def log_x_for_x_greater_than_or_equal_to_1(
    x: np.ndarray, input_integer_bits: int, output_integer_bits: int
) -> np.ndarray:
    """TFLite's log_x_for_x_greater_than_or_equal_to_1_impl (common.h): Q{input} x >= 1 to a
    Q{output} logarithm."""
    accum_integer_bits = output_integer_bits + 1
    log_2 = 1488522236
    sqrt_sqrt_half = 1805811301
    sqrt_half = 1518500250
    one_quarter = 536870912
    alpha_n = 117049297
    alpha_d = 127690142
    alpha_i = 1057819769
    alpha_f = 638450708
    shifted_quarter = _rescale(np.array(one_quarter, dtype=np.int64), 0, accum_integer_bits)

    z_a = x
    z_a_headroom_plus_1 = _count_leading_zeros(z_a)
    r_a_tmp = _saturating_rounding_multiply_by_pot_param(z_a, z_a_headroom_plus_1 - 1)
    r_a_raw = _saturating_rounding_multiply_by_pot_param(_srdhm(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = _saturate32(
        _saturating_rounding_multiply_by_pot_param(
            input_integer_bits - z_a_headroom_plus_1, 31 - accum_integer_bits
        )
        + shifted_quarter
    )
    z_b = _srdhm(z_a, sqrt_half)
    z_b_headroom = _count_leading_zeros(z_b) - 1
    r_b_raw = _saturating_rounding_multiply_by_pot_param(z_a, z_b_headroom)
    z_b_pow_2_adj = _saturate32(
        _saturating_rounding_multiply_by_pot_param(
            input_integer_bits - z_b_headroom, 31 - accum_integer_bits
        )
        - shifted_quarter
    )
    r = np.minimum(r_a_raw, r_b_raw)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)

    p = _rounding_half_sum(r, sqrt_sqrt_half)
    q = r - sqrt_sqrt_half
    q = q + q
    common_sq = _srdhm(q, q)
    num = _srdhm(q, r) + _srdhm(_srdhm(q, common_sq), alpha_n)
    denom_minus_one_0 = _srdhm(p, alpha_i + q + _srdhm(alpha_d, common_sq)) + _srdhm(alpha_f, q)
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0)
    num_scaled = _rescale(num, 0, accum_integer_bits)
    return _rescale(
        _srdhm(z_pow_2_adj, log_2) + _srdhm(num_scaled, recip_denom),
        accum_integer_bits,
        output_integer_bits,
    )


# ---- Prepare-time parameters (quantization_util.cc) --------------------------------------------

_SCALED_DIFF_INTEGER_BITS = 5
_ACCUMULATION_INTEGER_BITS = 12


def preprocess_softmax_scaling(
    op: Operation, beta: float, input_scale: float, input_integer_bits: int
) -> tuple[int, int]:
    """TFLite's PreprocessSoftmaxScaling: (multiplier, left shift) of beta * scale in
    Q{input_integer_bits}."""
    real = min(beta * input_scale * (1 << (31 - input_integer_bits)), (1 << 31) - 1.0)
    if not real > 1.0:
        raise UnsupportedOpError(
            op, f"beta * input scale {beta * input_scale} is too small for a quantized softmax"
        )
    return _multiplier(op, real)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int) -> int:
    """TFLite's CalculateInputRadius (total_signed_bits = 31)."""
    max_input_rescaled = (
        1.0 * ((1 << input_integer_bits) - 1) * (1 << (31 - input_integer_bits))
    ) / (1 << input_left_shift)
    return math.floor(max_input_rescaled)


# ---- Softmax and log-softmax -------------------------------------------------------------------


def _along_last(axis: int, run_last: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    """Apply a last-axis row kernel along `axis` (TFLite reduces over the trailing dimension)."""

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        rows = np.moveaxis(x, axis, -1)
        return (np.ascontiguousarray(np.moveaxis(run_last(rows), -1, axis)),)

    return run


def _output_scale_is(q: _Quant, expected: float, *, tolerance: float = 0.0) -> bool:
    return abs(float(q.scale) - expected) <= tolerance * expected


@kernel(nn.SoftmaxOp, plain=False, quantized=True)
def softmax(op: nn.SoftmaxOp) -> Kernel:
    """reference_ops::Softmax on 8-bit inputs: exp of the (beta-scaled) difference to the row
    maximum in Q5.26 fixed point, a Q12.19 sum, its reciprocal, and the output fixed at
    scale 1/2^bits and the storage minimum as zero point (1/256, -128 for int8)."""
    source = _Quant(op, op.input, "input")
    result = _Quant(op, op.output, "result")
    if source.dtype.name not in ("int8", "uint8"):
        raise UnsupportedOpError(
            op, f"quantized softmax takes int8 or uint8 inputs (TFLite), got {source.type}"
        )
    if result.dtype.name not in (source.dtype.name, "int16"):
        raise UnsupportedOpError(
            op, f"quantized softmax of {source.dtype.name} gives {source.dtype.name} or int16"
        )
    expected_scale = 1.0 / (1 << result.bits)
    if not _output_scale_is(result, expected_scale, tolerance=1e-3) or (
        result.zero_point != result.min
    ):
        raise UnsupportedOpError(
            op,
            f"quantized softmax results have scale 1/{1 << result.bits} and zero point "
            f"{result.min} (TFLite), got {result.type}",
        )
    beta = _float(op.beta.value.data)
    multiplier, left_shift = preprocess_softmax_scaling(
        op, beta, float(source.scale), _SCALED_DIFF_INTEGER_BITS
    )
    diff_min = -calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, left_shift)

    # Everything per element depends only on `input - row max` in [-(2^bits - 1), 0]: tabulate.
    diffs = -np.arange(1 << source.bits, dtype=np.int64)
    valid = diffs >= diff_min
    scaled = _srdhm(diffs << left_shift, multiplier)  # MultiplyByQuantizedMultiplierGreaterThanOne
    exp_table = np.where(valid, exp_on_negative_values(scaled, _SCALED_DIFF_INTEGER_BITS), 0)
    summand_table = np.where(valid, _rescale(exp_table, 0, _ACCUMULATION_INTEGER_BITS), 0)
    out_dtype, low, high = result.dtype, result.min, result.max

    def run_last(x: np.ndarray) -> np.ndarray:
        wide = x.astype(np.int64)
        index = wide.max(axis=-1, keepdims=True) - wide
        sum_of_exps = summand_table[index].sum(axis=-1, keepdims=True)
        shifted_scale, num_bits_over_unit = get_reciprocal(sum_of_exps, _ACCUMULATION_INTEGER_BITS)
        exponent = num_bits_over_unit + 31 - result.bits
        unsat = _rdbpot(_srdhm(shifted_scale, exp_table[index]), exponent)
        out = np.where(valid[index], np.clip(unsat + low, low, high), low)
        return out.astype(out_dtype)

    return _along_last(op.axis.value.data, run_last)


@kernel(nn.LogSoftmaxOp, plain=False, quantized=True)
def log_softmax(op: nn.LogSoftmaxOp) -> Kernel:
    """reference_integer_ops::LogSoftmax (int8) / reference_ops::LogSoftmax (uint8): the
    difference to the row maximum in Q5.26 minus the Q5.26 log of the Q12.19 sum of exps,
    output fixed at scale 16/256 and the storage maximum as zero point."""
    source, result = _operands(op, ("int8", "uint8"))
    if float(result.scale) != 16.0 / 256 or result.zero_point != result.max:
        raise UnsupportedOpError(
            op,
            f"quantized log_softmax results have scale 0.0625 and zero point {result.max} "
            f"(TFLite), got {result.type}",
        )
    multiplier, left_shift = preprocess_softmax_scaling(
        op, 1.0, float(source.scale), _SCALED_DIFF_INTEGER_BITS
    )
    # PreprocessLogSoftmaxScalingExp: the inverse of the input scaling, for the cut-off.
    reverse_divisor, reverse_shift = _multiplier(op, (1 << (31 - left_shift)) / float(multiplier))
    diff_min = -calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, left_shift)
    output_integer_bits = 4

    diffs = -np.arange(1 << source.bits, dtype=np.int64)
    valid = diffs >= diff_min
    diff_q5_table = _srdhm(diffs << left_shift, multiplier)
    summand_table = np.where(
        valid,
        _rescale(
            exp_on_negative_values(diff_q5_table, _SCALED_DIFF_INTEGER_BITS),
            0,
            _ACCUMULATION_INTEGER_BITS,
        ),
        0,
    )
    out_dtype, low, high = result.dtype, result.min, result.max

    def run_last(x: np.ndarray) -> np.ndarray:
        wide = x.astype(np.int64)
        index = wide.max(axis=-1, keepdims=True) - wide
        sum_of_exps = summand_table[index].sum(axis=-1, keepdims=True)
        log_sum_of_exps = log_x_for_x_greater_than_or_equal_to_1(
            sum_of_exps, _ACCUMULATION_INTEGER_BITS, _SCALED_DIFF_INTEGER_BITS
        )
        cutoff = _rdbpot(_srdhm(log_sum_of_exps + _INT32_MIN, reverse_divisor), -reverse_shift)
        adjusted_diff_min = np.maximum(diff_min - 1, cutoff)
        unsat = (
            _rdbpot(
                diff_q5_table[index] - log_sum_of_exps,
                31 - _SCALED_DIFF_INTEGER_BITS - output_integer_bits,
            )
            + high
        )
        out = np.where(-index > adjusted_diff_min, np.clip(unsat, low, high), low)
        return out.astype(out_dtype)

    return _along_last(op.axis.value.data, run_last)


# ---- Lookup tables (common.h LUTPopulate) ------------------------------------------------------


def _float_to_int32(values: np.ndarray) -> np.ndarray:
    """`static_cast<int32_t>(float)` as TFLite's builds behave: truncation, saturating out of
    range (C++ leaves that undefined)."""
    wide = np.nan_to_num(values.astype(np.float64), nan=0.0)
    return np.trunc(np.clip(wide, _INT32_MIN, _INT32_MAX)).astype(np.int64)


def _libm(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """A float32 libm function: evaluated in float64, rounded to float32."""
    with np.errstate(over="ignore"):
        return fn(x.astype(np.float64)).astype(np.float32)


def _storage_values(q: _Quant) -> np.ndarray:
    return np.arange(q.min, q.max + 1, dtype=np.int64)


def lut_populate(
    source: _Quant, result: _Quant, transform: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """TFLite's LUTPopulate for 8-bit types: the result for every stored input value, in
    order from the storage minimum; `transform` maps float32 reals to float32 reals."""
    dequantized = source.scale * (_storage_values(source) - source.zero_point).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        transformed = transform(dequantized).astype(np.float32)
        inverse_scale = np.float32(1) / result.scale
        rescaled = round_half_away_from_zero(transformed * inverse_scale).astype(np.float32)
        quantized = _float_to_int32(rescaled + np.float32(result.zero_point))
    return np.clip(quantized, result.min, result.max)


def _table_kernel(table: np.ndarray, source: _Quant, result: _Quant) -> Kernel:
    """Apply a per-stored-value table (from the storage minimum) with one gather.

    As in TFLite, an int8 table is indexed by the stored bits read as uint8."""
    by_bits = np.empty(256, dtype=result.dtype)
    by_bits[_storage_values(source).astype(source.dtype).view(np.uint8)] = table
    dtype = source.dtype

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.take(by_bits, x.astype(dtype, copy=False).view(np.uint8)),)

    return run


def _lut_kernel(
    op: Operation,
    storages: Sequence[str],
    transform: Callable[[np.ndarray], np.ndarray],
) -> Kernel:
    source, result = _operands(op, storages)
    return _table_kernel(lut_populate(source, result, transform), source, result)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.float32(1) / (np.float32(1) + _libm(np.exp, -x))


@kernel(nn.SigmoidOp, plain=False, quantized=True)
def sigmoid(op: nn.SigmoidOp) -> Kernel:
    """TFLite LOGISTIC (kReference, 8-bit): a table of ``1.0f / (1.0f + expf(-x))``.

    TFLite requires a result scale of 1/256; the table is defined for any result type."""
    return _lut_kernel(op, ("int8", "uint8"), _sigmoid)


@kernel(nn.TanhOp, plain=False, quantized=True)
def tanh(op: nn.TanhOp) -> Kernel:
    """TFLite TANH (kReference, 8-bit): a table of ``tanhf(x)``."""
    return _lut_kernel(op, ("int8", "uint8"), lambda x: _libm(np.tanh, x))


_M_SQRT1_2 = 0.70710678118654752440
_SQRT_2_OVER_PI = np.float32(1.12837916709551257390 * _M_SQRT1_2)  # kSqrt2dPi


def _gelu(x: np.ndarray) -> np.ndarray:
    """reference_ops::GeluTransform: ``0.5f * x * erfcf(x * -M_SQRT1_2)``."""
    from scipy import special  # imported on first use: it costs ~0.3 s

    return (np.float32(0.5) * x) * _libm(special.erfc, x * np.float32(-_M_SQRT1_2))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    """reference_ops::GeluTransformApproximate."""
    inner = x + ((np.float32(0.044715) * x) * x) * x
    return (np.float32(0.5) * x) * (np.float32(1) + _libm(np.tanh, _SQRT_2_OVER_PI * inner))


@kernel(nn.GeluOp, plain=False, quantized=True)
def gelu(op: nn.GeluOp) -> Kernel:
    """TFLite GELU (8-bit): a table of the exact (erfc) or tanh-approximated GELU."""
    return _lut_kernel(
        op, ("int8", "uint8"), _gelu_tanh if op.approximate.data == "tanh" else _gelu
    )


@kernel(nn.ExpOp, plain=False, quantized=True)
def exp(op: nn.ExpOp) -> Kernel:
    """TFLite EXP (int8): a table of ``expf(x)``."""
    return _lut_kernel(op, ("int8",), lambda x: _libm(np.exp, x))


@kernel(nn.LogOp, plain=False, quantized=True)
def log(op: nn.LogOp) -> Kernel:
    """TFLite LOG (int8, LogLUTPrepare): a table of ``logf(x)``, with the result's lowest
    real value for ``x <= 0``."""
    result = _Quant(op, op.output, "result")
    output_min = np.float32(result.min - result.zero_point) * result.scale

    def transform(x: np.ndarray) -> np.ndarray:
        positive = x > 0
        return np.where(positive, _libm(np.log, np.where(positive, x, 1)), output_min)

    return _lut_kernel(op, ("int8",), transform)


def _domain_kernel(table: np.ndarray, lowest: int, source: _Quant, result: _Quant, message: str):
    """A table kernel that refuses stored inputs below `lowest`, as TFLite's Eval does."""
    apply = _table_kernel(table, source, result)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.size and int(x.min()) < lowest:
            raise ValueError(message)
        return apply(x)

    return run


@kernel(nn.SqrtOp, plain=False, quantized=True)
def sqrt(op: nn.SqrtOp) -> Kernel:
    """TFLite SQRT (int8, SqrtEvalQuantized): ``sqrtf`` of the dequantized float32 input,
    divided by the result scale and *truncated*; inputs below zero are an error."""
    source, result = _operands(op, ("int8",))
    real = source.scale * (_storage_values(source) - source.zero_point).astype(np.float32)
    with np.errstate(invalid="ignore"):
        root = np.sqrt(real)
        quantized = _float_to_int32(root / result.scale) + result.zero_point
    table = np.clip(quantized, result.min, result.max)
    return _domain_kernel(
        table, source.zero_point, source, result, "Sqrt is only defined for non-negative values"
    )


def _wrap32(x: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of int64 values into int32 (a C `int32_t` shift overflowing)."""
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def inv_sqrt_quantized_multiplier_exp(
    value: np.ndarray, reverse_shift: int
) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp (common.h), per element of an int32 array
    of values >= 0: a multiplier and shift with ``multiplier * 2^(shift - 31) ~ 1/sqrt(value)``
    (for `reverse_shift` -1)."""
    value = np.asarray(value, dtype=np.int64)
    small = value <= 1  # 0 and 1 give the largest multiplier
    value = np.where(small, 2, value)
    shift = np.full(value.shape, 11, dtype=np.int64)
    while np.any(large := value >= 1 << 29):
        value = np.where(large, value // 4, value)
        shift = shift + large
    left_shift_bit_pairs = (_count_leading_zeros(value) - 1) // 2 - 1
    shift = shift - left_shift_bit_pairs
    value = value << (2 * left_shift_bit_pairs)
    # Newton-Raphson for 1/sqrt in Q3.28, starting from 1.
    half_input = _saturating_rounding_multiply_by_pot(value >> 1, -1)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(value.shape, 1 << 28, dtype=np.int64)
    for _ in range(5):
        x3 = _rescale(_srdhm(_srdhm(x, x), x), 9, 3)
        x = _rescale(_srdhm(half_three, x) - _srdhm(half_input, x3), 6, 3)
    inv_sqrt = _srdhm(x, 1518500250)  # * sqrt(2) / 2
    inv_sqrt = np.where(shift < 0, _wrap32(inv_sqrt << np.maximum(-shift, 0)), inv_sqrt)
    shift = np.maximum(shift, 0)
    return np.where(small, _INT32_MAX, inv_sqrt), np.where(small, 0, shift * reverse_shift)


@kernel(nn.RsqrtOp, plain=False, quantized=True)
def rsqrt(op: nn.RsqrtOp) -> Kernel:
    """TFLite RSQRT (int8, RsqrtEvalQuantizedInt8): the fixed-point inverse square root of
    ``x - zero_point`` rescaled by ``1 / (sqrtf(input scale) * result scale)``; a stored
    zero point gives 127, inputs below it are an error."""
    source, result = _operands(op, ("int8",))
    real_multiplier = 1.0 / float(np.float32(np.sqrt(source.scale)) * result.scale)
    multiplier, shift = _multiplier(op, real_multiplier)
    k_shift = 20  # keeps the intermediate an integer
    value = _storage_values(source) - source.zero_point
    inv_sqrt, inv_shift = inv_sqrt_quantized_multiplier_exp(np.maximum(value, 0), -1)
    data = multiply_by_quantized_multiplier(np.ones_like(value), inv_sqrt, inv_shift + k_shift)
    output = multiply_by_quantized_multiplier(data, multiplier, shift - k_shift)
    table = np.clip(output + result.zero_point, result.min, result.max)
    # Below the zero point: refused at run time; at it: "the max output value".
    table = np.where(value <= 0, result.max, table)
    return _domain_kernel(
        table, source.zero_point, source, result, "Rsqrt is only defined for positive values"
    )


# ---- Hard swish (reference/hard_swish.h) -------------------------------------------------------


def _i16(value: int) -> int:
    """Wrap to int16 (a C conversion to int16_t)."""
    return ((value + (1 << 15)) & 0xFFFF) - (1 << 15)


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _srdhm16(a: int, b: int) -> int:
    """gemmlowp::SaturatingRoundingDoublingHighMul<int16_t>."""
    if a == b == -(1 << 15):
        return (1 << 15) - 1
    ab = a * b
    nudge = (1 << 14) if ab >= 0 else 1 - (1 << 14)
    return _i16(_c_div(ab + nudge, 1 << 15))


def _sdhm16(a: int, b: int) -> int:
    """reference_ops::SaturatingDoublingHighMul: like _srdhm16, truncating toward zero."""
    if a == b == -(1 << 15):
        return (1 << 15) - 1
    return _i16(_c_div(a * b, 1 << 15))


def _rdbpot16(x: int, exponent: int) -> int:
    """gemmlowp::RoundingDivideByPOT<int16_t>."""
    mask = _i16((1 << exponent) - 1)
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return _i16((x >> exponent) + (1 if (x & mask) > threshold else 0))


def _saturating_left_shift16(value: int, amount: int) -> int:
    return min(max(value * (1 << amount), -(1 << 15)), (1 << 15) - 1)


def _int16_multiplier(multiplier: int) -> int:
    """DownScaleInt32ToInt16Multiplier."""
    if multiplier >= _INT32_MAX - (1 << 15):
        return (1 << 15) - 1
    return (multiplier + (1 << 15)) >> 16


@kernel(nn.HardSwishOp, plain=False, quantized=True)
def hard_swish(op: nn.HardSwishOp) -> Kernel:
    """reference_ops::HardSwish (8-bit): int16 fixed point on a 1/128 finer input scale, a
    "relu-ish" factor in [0, 1] on the scale 3/32768, and a truncating final product."""
    source, result = _operands(op, ("int8", "uint8"))
    hires_input_scale = np.float32(1.0 / 128.0) * source.scale
    reluish_scale = np.float32(3.0 / 32768.0)
    output_multiplier, output_exponent = _multiplier(op, float(hires_input_scale / result.scale))
    if output_exponent > 0:
        raise UnsupportedOpError(
            op, "quantized hard_swish needs a result scale of at least the input scale / 128"
        )
    reluish_multiplier, reluish_exponent = _multiplier(op, float(hires_input_scale / reluish_scale))
    output_multiplier16 = _int16_multiplier(output_multiplier)
    reluish_multiplier16 = _int16_multiplier(reluish_multiplier)

    def one(stored: int) -> int:
        input_value = _i16(stored - source.zero_point)
        hires = _i16(input_value * (1 << 7))
        preshift_output = _srdhm16(hires, output_multiplier16)
        reluish = hires
        if reluish_exponent > 0:
            reluish = _saturating_left_shift16(reluish, reluish_exponent - 1)
        reluish = _srdhm16(reluish, reluish_multiplier16)
        if reluish_exponent > 0:
            reluish = _saturating_left_shift16(reluish, 1)
        if reluish_exponent < 0:
            reluish = _rdbpot16(reluish, -reluish_exponent)
        reluish = _i16((reluish + (1 << 15)) >> 1)
        output = _rdbpot16(_sdhm16(reluish, preshift_output), -output_exponent)
        output = _i16(output + result.zero_point)
        return min(max(output, result.min), result.max)

    table = np.array([one(v) for v in _storage_values(source).tolist()], dtype=np.int64)
    return _table_kernel(table, source, result)


# ---- Resize bilinear (reference/resize_bilinear.h) ---------------------------------------------


def _integer_taps(
    out_len: int, in_len: int, mode: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ComputeInterpolationValuesInteger: low/high indices and the 10-bit high weight."""
    if mode == "align_corners" and out_len > 1:
        scale_10 = ((1 << 10) * (in_len - 1) + (out_len - 1) // 2) // (out_len - 1)
    else:
        scale_10 = ((1 << 10) * in_len + out_len // 2) // out_len
    index = np.arange(out_len, dtype=np.int64)
    if mode == "half_pixel":
        scaled = index * scale_10 + scale_10 // 2 - (1 << 9)
    else:
        scaled = index * scale_10
    low = np.maximum(_c_div_array(scaled, 1 << 10), 0)
    high = np.minimum(_c_div_array(scaled + (1 << 10) - 1, 1 << 10), in_len - 1)
    return low, high, scaled - (1 << 10) * low


def _c_div_array(a: np.ndarray, b: int) -> np.ndarray:
    """C integer division of an int64 array by a positive int."""
    return np.where(a >= 0, a // b, -((-a) // b))


def _float_taps(out_len: int, in_len: int, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ComputeInterpolationValues in float32: low/high indices and the high weight."""
    scale = np.float32(in_len) / np.float32(out_len)
    if mode == "align_corners" and out_len > 1:
        scale = np.float32(in_len - 1) / np.float32(out_len - 1)
    index = np.arange(out_len).astype(np.float32)
    if mode == "half_pixel":
        scaled = (index + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        scaled = index * scale
    low = np.maximum(np.floor(scaled).astype(np.int64), 0)
    high = np.minimum(np.ceil(scaled).astype(np.int64), in_len - 1)
    return low, high, scaled - low.astype(np.float32)


def resize_bilinear(op: nn.ResizeOp) -> Kernel:
    """Quantized bilinear `nn.resize` (TFLite RESIZE_BILINEAR, kReference): int8 runs
    ResizeBilinearInteger (10-bit fixed-point weights, rounding half away from zero), uint8 the
    float32 ResizeBilinear (+0.5, truncation). Coordinates: TFLite's `align_corners`,
    `half_pixel_centers` (`half_pixel`) or neither (`asymmetric`)."""
    source, _ = _operands(op, ("int8", "uint8"))
    mode = op.coordinate_mode.data
    if mode not in ("half_pixel", "align_corners", "asymmetric"):
        raise UnsupportedOpError(
            op, f"quantized bilinear resize has no TFLite kernel for coordinate mode '{mode}'"
        )
    if op.scales is not None:
        raise UnsupportedOpError(op, "quantized bilinear resize takes sizes, not scales")
    nchw = op.layout.data == "NCHW"
    out_h, out_w = ints_of(op.size)
    dtype = source.dtype
    integer = dtype == np.int8

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        nhwc = np.moveaxis(x, 1, -1) if nchw else x
        in_h, in_w = nhwc.shape[1], nhwc.shape[2]
        if integer:
            y0, y1, wy = _integer_taps(out_h, in_h, mode)
            x0, x1, wx = _integer_taps(out_w, in_w, mode)
            one = 1 << 10
            wy, wx = wy[:, None, None], wx[None, :, None]
            rows0 = nhwc[:, y0].astype(np.int64)
            rows1 = nhwc[:, y1].astype(np.int64)
            total = (
                rows0[:, :, x0] * (one - wy) * (one - wx)
                + rows1[:, :, x0] * wy * (one - wx)
                + rows0[:, :, x1] * (one - wy) * wx
                + rows1[:, :, x1] * wy * wx
            )
            rounding = np.where(total > 0, 1 << 19, -(1 << 19))
            out = _c_div_array(total + rounding, 1 << 20).astype(dtype)
        else:
            y0, y1, dy = _float_taps(out_h, in_h, mode)
            x0, x1, dx = _float_taps(out_w, in_w, mode)
            one = np.float32(1)
            dy, dx = dy[:, None, None], dx[None, :, None]
            rows0 = nhwc[:, y0].astype(np.float32)
            rows1 = nhwc[:, y1].astype(np.float32)
            total = (
                rows0[:, :, x0] * (one - dy) * (one - dx)
                + rows1[:, :, x0] * dy * (one - dx)
                + rows0[:, :, x1] * (one - dy) * dx
                + rows1[:, :, x1] * dy * dx
                + np.float32(0.5)
            )
            out = np.trunc(total).astype(np.int64).astype(dtype)
        return (np.ascontiguousarray(np.moveaxis(out, -1, 1) if nchw else out),)

    return run
