"""Native C kernels of quantized ops that keep an algorithm of their own: softmax,
log_softmax and resize.

`lower-quantized` leaves quantized `nn.softmax`, `nn.log_softmax` and `nn.resize` as they
are (TFLite defines them by algorithms, not by integer arithmetic plus a rescale); the
reference target runs TFLite's reference kernels (`targets/reference/quant_nn.py`,
`shape.py`). The kernels here are bit-exact with those:

* **softmax** (int8/uint8, any axis; an int16 result, which the reference defines, is
  handled too, though the dialect's verifier wants input and result stored alike today).
  Everything per element is a
  function of ``row max - x`` in [0, 2^bits): the exp table (Q0.31) and the summand table
  (Q12.19) are computed at lowering with the reference's own helpers and become C
  constants; the C keeps only the per-row part: the maximum, the int64 sum of summands,
  TFLite's GetReciprocal (gemmlowp fixed point, ported to C on int64 exactly as the
  reference evaluates it) and the rounding of ``reciprocal * exp``. A row sums to at most
  ``n * 2^19``; rows longer than `SOFTMAX_MAX_ROW` (a sum of 2^32 or more, where the
  reference's leading-zero count goes negative) are refused.
* **log_softmax** (int8/uint8, stored alike): the same row sum, then TFLite's
  log_x_for_x_greater_than_or_equal_to_1 (ported like GetReciprocal), the row's cut-off and
  ``rdbpot(diff - log, 22)`` per element from a table of Q5.26 differences. Rows of at most
  `LOG_SOFTMAX_MAX_ROW` (a sum below 2^31, so that no shift of the logarithm is negative).
* **resize** (NHWC; NCHW runs the same kernel on ``N * C`` single-channel images).
  Nearest (any storage type) is a gather of stored values with the tables of the float
  path (`resize_tables.py`), as the reference's: input and result share one quantized type
  (the verifier's rule), so nothing is requantized.
  Bilinear int8 is ResizeBilinearInteger: 10-bit fixed-point taps from the reference's
  `_integer_taps`, exact int32 sums, rounding half away from zero. Bilinear uint8 is the
  float32 ResizeBilinear: taps from `_float_taps`, products and sums in float32 in the
  reference's order (compiled with floating-point contraction off, so no FMA changes a
  rounding), ``+ 0.5`` and truncation.

`check_native(op)` is the capability check `support.check_op` asks for these ops: it builds
the reference kernel (its refusals are the reference's) and then the lowering plan here;
the lowerings that emit the C from the plans are `lowerings/softmax.py` and
`lowerings/resize.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.dialects.quant import quantized_element
from irc.dtypes import numpy_dtype
from irc.targets.base import Support
from irc.targets.cpu import csrc

SOFTMAX_MAX_ROW = 8191
"""Longest softmax row: its sum of summands (each at most 2^19) stays below 2^32."""

LOG_SOFTMAX_MAX_ROW = 4095
"""Longest log_softmax row: its sum stays below 2^31 (the logarithm's shifts stay >= 0)."""

NATIVE_OPS: frozenset[type[Operation]] = frozenset({nn.SoftmaxOp, nn.LogSoftmaxOp, nn.ResizeOp})
"""Quantized ops with a native kernel here (`check_native` says which cases)."""

PARALLEL_ELEMENTS = 1 << 17
"""Elements from which a softmax splits its rows across OpenMP threads."""

_ONE_10 = 1 << 10
"""1.0 in the 10-bit fixed point of the int8 bilinear taps."""


class NativeKernelError(Exception):
    """The op has no native kernel here; the message says why."""


# ---- C text ------------------------------------------------------------------------------------

csrc.define_snippet(
    "softmax_q",
    r"""
/* gemmlowp fixed point of TFLite's quantized softmax, on int32 values held in int64 exactly
   as targets/reference/quant_nn.py evaluates them (no wrap-around anywhere). */
IRC_INLINE int64_t irc_srmpot(int64_t x, int exponent) { /* SaturatingRoundingMultiplyByPOT */
  if (exponent == 0) return x;
  if (exponent < 0) return irc_rdbpot(x, -exponent);
  const int64_t threshold = ((int64_t)1 << (31 - exponent)) - 1;
  return x > threshold ? INT32_MAX : (x < -threshold ? INT32_MIN : x * ((int64_t)1 << exponent));
}

IRC_INLINE int64_t irc_rounding_half_sum(int64_t a, int64_t b) {
  int64_t total = a + b;
  total += total >= 0 ? 1 : -1;
  return total >= 0 ? total >> 1 : -((-total) >> 1);
}

/* 1 / (1 + a) for Q0.31 a in [0, 1): Newton-Raphson in Q2.29, a Q0.31 result. */
static int64_t irc_one_over_one_plus_x(int64_t a) {
  const int64_t half_denominator = irc_rounding_half_sum(a, INT32_MAX);
  int64_t x = 1515870810 + irc_srdhm(half_denominator, -1010580540);
  for (int i = 0; i < 3; ++i) {
    const int64_t one_minus_half_denominator_times_x =
        ((int64_t)1 << 29) - irc_srdhm(half_denominator, x);
    x = x + irc_srmpot(irc_srdhm(x, one_minus_half_denominator_times_x), 2);
  }
  return irc_srmpot(x, 1);
}

/* TFLite's GetReciprocal of a Q12.19 sum in (0, 2^32): the Q0.31 reciprocal scaled into
   [1/2, 1] and, in *num_bits_over_unit, the bits the sum has above 1.0. */
static int64_t irc_softmax_reciprocal(int64_t sum, int *num_bits_over_unit) {
  const int headroom_plus_one = __builtin_clz((unsigned)sum);
  *num_bits_over_unit = 12 - headroom_plus_one;
  const int64_t shifted_sum_minus_one =
      (int64_t)(((uint64_t)sum << headroom_plus_one) & 0xFFFFFFFFu) - ((int64_t)1 << 31);
  return irc_one_over_one_plus_x(shifted_sum_minus_one);
}

IRC_INLINE int64_t irc_sat32(int64_t x) {
  return x < INT32_MIN ? INT32_MIN : (x > INT32_MAX ? INT32_MAX : x);
}

/* TFLite's log_x_for_x_greater_than_or_equal_to_1_impl for a Q12.19 sum x in [1, 2^31): the
   Q5.26 logarithm (log_softmax). Shift amounts are never negative for such x. */
static int64_t irc_log_sum_q12(int64_t x) {
  const int input_integer_bits = 12, accum_integer_bits = 6, output_integer_bits = 5;
  const int64_t log_2 = 1488522236, sqrt_sqrt_half = 1805811301, sqrt_half = 1518500250;
  const int64_t alpha_n = 117049297, alpha_d = 127690142, alpha_i = 1057819769,
                alpha_f = 638450708;
  const int64_t shifted_quarter = irc_srmpot(536870912, -accum_integer_bits);
  const int z_a_headroom_plus_1 = __builtin_clz((unsigned)x);
  const int64_t r_a_tmp = irc_srmpot(x, z_a_headroom_plus_1 - 1);
  const int64_t r_a_raw = irc_srmpot(irc_srdhm(r_a_tmp, sqrt_half), 1);
  const int64_t z_a_pow_2_adj = irc_sat32(
      irc_srmpot(input_integer_bits - z_a_headroom_plus_1, 31 - accum_integer_bits) +
      shifted_quarter);
  const int64_t z_b = irc_srdhm(x, sqrt_half);
  const int z_b_headroom = __builtin_clz((unsigned)z_b) - 1;
  const int64_t r_b_raw = irc_srmpot(x, z_b_headroom);
  const int64_t z_b_pow_2_adj = irc_sat32(
      irc_srmpot(input_integer_bits - z_b_headroom, 31 - accum_integer_bits) - shifted_quarter);
  const int64_t r = r_a_raw < r_b_raw ? r_a_raw : r_b_raw;
  const int64_t z_pow_2_adj = z_a_pow_2_adj > z_b_pow_2_adj ? z_a_pow_2_adj : z_b_pow_2_adj;
  const int64_t p = irc_rounding_half_sum(r, sqrt_sqrt_half);
  int64_t q = r - sqrt_sqrt_half;
  q = q + q;
  const int64_t common_sq = irc_srdhm(q, q);
  const int64_t num = irc_srdhm(q, r) + irc_srdhm(irc_srdhm(q, common_sq), alpha_n);
  const int64_t denom_minus_one_0 =
      irc_srdhm(p, alpha_i + q + irc_srdhm(alpha_d, common_sq)) + irc_srdhm(alpha_f, q);
  const int64_t recip_denom = irc_one_over_one_plus_x(denom_minus_one_0);
  const int64_t num_scaled = irc_srmpot(num, -accum_integer_bits);
  return irc_srmpot(irc_srdhm(z_pow_2_adj, log_2) + irc_srdhm(num_scaled, recip_denom),
                    accum_integer_bits - output_integer_bits);
}
""",
    ("quant",),
)

csrc.define_snippet(
    "resize_q",
    r"""
/* Quantized resize kernels, NHWC (NCHW: N * C images of one channel), bit-exact with the
   reference target's TFLite kernels. Output rows split over the library's pool
   (irc_parallel, pool.h) from IRC_PARALLEL_WORK on; a row is computed the same on any
   split. */

/* A quantized resize's arguments and the kernel of its output rows [begin, end). */
typedef struct irc_rq_args {
  const void *x;
  void *y;
  long N, H, W, C, OH, OW, parts;
  const int32_t *hl, *hh, *wl, *wh;
  const void *hw, *ww;
  void (*rows)(const struct irc_rq_args *a, long begin, long end);
} irc_rq_args;

static void irc_rq_part(const void *ctx, long part) {
  const irc_rq_args *a = (const irc_rq_args *)ctx;
  long begin, end;
  irc_pool_range(part, a->parts, a->N * a->OH, &begin, &end);
  a->rows(a, begin, end);
}

/* Every output row of `a`, on the pool when `work` is big enough. */
static void irc_rq_run(irc_rq_args *a, double work) {
  const long rows = a->N * a->OH;
  const int threads = work > IRC_PARALLEL_WORK ? irc_nthreads() : 1;
  a->parts = irc_pool_parts(rows, work, IRC_LOOP_PART_WORK * 16, threads);
  irc_parallel(irc_rq_part, a, a->parts, threads);
}

/* Nearest: output pixel (oh, ow) copies the `B` bytes of input pixel (hi[oh], wi[ow]). */
static void irc_resize_nearest_q_rows(const irc_rq_args *a, long begin, long end) {
  const uint8_t *restrict x = (const uint8_t *)a->x;
  uint8_t *restrict y = (uint8_t *)a->y;
  const long H = a->H, W = a->W, B = a->C, OH = a->OH, OW = a->OW;
  const int32_t *restrict hi = a->hl, *restrict wi = a->wl;
  for (long r = begin; r < end; ++r) {
    const long n = r / OH, oh = r % OH;
    const uint8_t *restrict src = x + (n * H + hi[oh]) * W * B;
    uint8_t *restrict dst = y + r * OW * B;
    for (long ow = 0; ow < OW; ++ow)
      for (long b = 0; b < B; ++b) dst[ow * B + b] = src[wi[ow] * B + b];
  }
}
static void irc_resize_nearest_q(const uint8_t *restrict x, long N, long H, long W, long B,
                                 uint8_t *restrict y, long OH, long OW,
                                 const int32_t *restrict hi, const int32_t *restrict wi) {
  irc_rq_args a = {x, y, N, H, W, B, OH, OW, 1, hi, NULL, wi, NULL, NULL, NULL,
                   irc_resize_nearest_q_rows};
  irc_rq_run(&a, (double)N * OH * OW * B);
}

/* ResizeBilinearInteger (int8): 10-bit weights of the high taps (hw, ww; the low taps weigh
   1024 - w), exact int32 sums (|sum| < 2^30 for the weights the lowering admits), rounded
   half away from zero by 2^20. */
static void irc_resize_bilinear_s8_rows(const irc_rq_args *a, long begin, long end) {
  const int8_t *restrict x = (const int8_t *)a->x;
  int8_t *restrict y = (int8_t *)a->y;
  const long H = a->H, W = a->W, C = a->C, OH = a->OH, OW = a->OW;
  const int32_t *restrict hl = a->hl, *restrict hh = a->hh, *restrict wl = a->wl;
  const int32_t *restrict wh = a->wh;
  const int32_t *restrict hw = (const int32_t *)a->hw, *restrict ww = (const int32_t *)a->ww;
  for (long r = begin; r < end; ++r) {
    const long n = r / OH, oh = r % OH;
    const int8_t *restrict r0 = x + (n * H + hl[oh]) * W * C;
    const int8_t *restrict r1 = x + (n * H + hh[oh]) * W * C;
    const int32_t fy1 = hw[oh], fy0 = 1024 - fy1;
    for (long ow = 0; ow < OW; ++ow) {
      const int32_t fx1 = ww[ow], fx0 = 1024 - fx1;
      const int32_t w00 = fy0 * fx0, w10 = fy1 * fx0, w01 = fy0 * fx1, w11 = fy1 * fx1;
      const int8_t *restrict a0 = r0 + wl[ow] * C, *restrict b0 = r1 + wl[ow] * C;
      const int8_t *restrict a1 = r0 + wh[ow] * C, *restrict b1 = r1 + wh[ow] * C;
      int8_t *restrict o = y + (r * OW + ow) * C;
      for (long c = 0; c < C; ++c) {
        const int32_t t = a0[c] * w00 + b0[c] * w10 + a1[c] * w01 + b1[c] * w11;
        o[c] = (int8_t)((t + (t > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20));
      }
    }
  }
}
static void irc_resize_bilinear_s8(const int8_t *restrict x, long N, long H, long W, long C,
                                   int8_t *restrict y, long OH, long OW,
                                   const int32_t *restrict hl, const int32_t *restrict hh,
                                   const int32_t *restrict hw, const int32_t *restrict wl,
                                   const int32_t *restrict wh, const int32_t *restrict ww) {
  irc_rq_args a = {x, y, N, H, W, C, OH, OW, 1, hl, hh, wl, wh, hw, ww,
                   irc_resize_bilinear_s8_rows};
  irc_rq_run(&a, (double)N * OH * OW * C * 4);
}

/* ResizeBilinear on uint8 in float32: a0 * (1 - dy) * (1 - dx) + b0 * dy * (1 - dx)
   + a1 * (1 - dy) * dx + b1 * dy * dx + 0.5, truncated, evaluated in that order with every
   product and sum rounded to float32 (contraction into FMAs would change roundings). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
static void irc_resize_bilinear_u8_rows(const irc_rq_args *a, long begin, long end) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  const uint8_t *restrict x = (const uint8_t *)a->x;
  uint8_t *restrict y = (uint8_t *)a->y;
  const long H = a->H, W = a->W, C = a->C, OH = a->OH, OW = a->OW;
  const int32_t *restrict hl = a->hl, *restrict hh = a->hh, *restrict wl = a->wl;
  const int32_t *restrict wh = a->wh;
  const float *restrict hw = (const float *)a->hw, *restrict ww = (const float *)a->ww;
  for (long r = begin; r < end; ++r) {
    const long n = r / OH, oh = r % OH;
    const uint8_t *restrict r0 = x + (n * H + hl[oh]) * W * C;
    const uint8_t *restrict r1 = x + (n * H + hh[oh]) * W * C;
    const float fy1 = hw[oh], fy0 = 1.0f - fy1;
    for (long ow = 0; ow < OW; ++ow) {
      const float fx1 = ww[ow], fx0 = 1.0f - fx1;
      const uint8_t *restrict a0 = r0 + wl[ow] * C, *restrict b0 = r1 + wl[ow] * C;
      const uint8_t *restrict a1 = r0 + wh[ow] * C, *restrict b1 = r1 + wh[ow] * C;
      uint8_t *restrict o = y + (r * OW + ow) * C;
      for (long c = 0; c < C; ++c) {
        const float t = (float)a0[c] * fy0 * fx0 + (float)b0[c] * fy1 * fx0 +
                        (float)a1[c] * fy0 * fx1 + (float)b1[c] * fy1 * fx1 + 0.5f;
        o[c] = (uint8_t)(int64_t)t;
      }
    }
  }
}
static void irc_resize_bilinear_u8(const uint8_t *restrict x, long N, long H, long W, long C,
                                   uint8_t *restrict y, long OH, long OW,
                                   const int32_t *restrict hl, const int32_t *restrict hh,
                                   const float *restrict hw, const int32_t *restrict wl,
                                   const int32_t *restrict wh, const float *restrict ww) {
  irc_rq_args a = {x, y, N, H, W, C, OH, OW, 1, hl, hh, wl, wh, hw, ww,
                   irc_resize_bilinear_u8_rows};
  irc_rq_run(&a, (double)N * OH * OW * C * 8);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
""",
    ("quant",),
)


# ---- Plans: what the reference computes at prepare time ----------------------------------------


@dataclass(frozen=True)
class SoftmaxPlan:
    """A quantized softmax as the C runs it: rows of `n` elements `inner` apart."""

    exp_table: np.ndarray
    """Q0.31 exp of the beta-scaled difference, indexed by ``row max - x`` (int32)."""
    summand_table: np.ndarray
    """The Q12.19 summands of the row sum, same index (int32)."""
    out_bits: int
    low: int
    high: int
    outer: int
    n: int
    inner: int


def _reference_kernel(op: Operation) -> None:
    """Build the reference kernel of `op`: its refusals (UnsupportedOpError) become ours."""
    from irc.targets.reference.registry import UnsupportedOpError, kernel_for

    try:
        kernel_for(op)
    except UnsupportedOpError as exc:
        raise NativeKernelError(exc.reason) from None


def softmax_plan(op: nn.SoftmaxOp) -> SoftmaxPlan:
    """The tables and row geometry of quantized softmax `op` (raises NativeKernelError)."""
    from irc.targets.reference import quant_nn as ref

    _reference_kernel(op)
    source = ref._Quant(op, op.input, "input")
    result = ref._Quant(op, op.output, "result")
    dims = tuple(op.input.type.get_shape())  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)
    axis = op.axis.value.data % len(dims)
    n = dims[axis]
    if n > SOFTMAX_MAX_ROW:
        raise NativeKernelError(
            f"quantized softmax over {n} elements (at most {SOFTMAX_MAX_ROW}: the Q12.19 sum "
            "must stay below 2^32)"
        )
    # The reference's prepare step (quant_nn.softmax), with its own helpers.
    beta = ref._float(op.beta.value.data)
    multiplier, left_shift = ref.preprocess_softmax_scaling(
        op, beta, float(source.scale), ref._SCALED_DIFF_INTEGER_BITS
    )
    diff_min = -ref.calculate_input_radius(ref._SCALED_DIFF_INTEGER_BITS, left_shift)
    diffs = -np.arange(1 << source.bits, dtype=np.int64)
    valid = diffs >= diff_min
    scaled = ref._srdhm(diffs << left_shift, multiplier)
    exp_table = np.where(
        valid, ref.exp_on_negative_values(scaled, ref._SCALED_DIFF_INTEGER_BITS), 0
    )
    summand_table = np.where(valid, ref._rescale(exp_table, 0, ref._ACCUMULATION_INTEGER_BITS), 0)
    # Invalid differences have exp 0, so `reciprocal * exp` gives the result's minimum there,
    # the value the reference writes for them.
    return SoftmaxPlan(
        exp_table.astype(np.int32),
        summand_table.astype(np.int32),
        result.bits,
        result.min,
        result.max,
        int(np.prod(dims[:axis], dtype=np.int64)),
        n,
        int(np.prod(dims[axis + 1 :], dtype=np.int64)),
    )


@dataclass(frozen=True)
class LogSoftmaxPlan:
    """A quantized log_softmax as the C runs it: rows of `n` elements `inner` apart."""

    diff_table: np.ndarray
    """Q5.26 beta-scaled differences, indexed by ``row max - x`` (int32; 0 beyond the input
    radius, where the kernel never reads it)."""
    summand_table: np.ndarray
    """The Q12.19 summands of the row sum, same index (int32)."""
    diff_min: int
    reverse_divisor: int
    reverse_right_shift: int
    low: int
    high: int
    outer: int
    n: int
    inner: int


def log_softmax_plan(op: nn.LogSoftmaxOp) -> LogSoftmaxPlan:
    """The tables and row geometry of quantized log_softmax `op` (raises NativeKernelError)."""
    from irc.targets.reference import quant_nn as ref

    _reference_kernel(op)
    source = ref._Quant(op, op.input, "input")
    result = ref._Quant(op, op.output, "result")
    dims = tuple(op.input.type.get_shape())  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)
    axis = op.axis.value.data % len(dims)
    n = dims[axis]
    if n > LOG_SOFTMAX_MAX_ROW:
        raise NativeKernelError(
            f"quantized log_softmax over {n} elements (at most {LOG_SOFTMAX_MAX_ROW}: the "
            "Q12.19 sum must stay below 2^31)"
        )
    # The reference's prepare step (quant_nn.log_softmax), with its own helpers.
    bits = ref._SCALED_DIFF_INTEGER_BITS
    multiplier, left_shift = ref.preprocess_softmax_scaling(op, 1.0, float(source.scale), bits)
    reverse_divisor, reverse_shift = ref._multiplier(
        op, (1 << (31 - left_shift)) / float(multiplier)
    )
    if reverse_shift > 0:
        raise NativeKernelError(
            "quantized log_softmax with an input scale this small (a left-shifting cut-off)"
        )
    diff_min = -ref.calculate_input_radius(bits, left_shift)
    diffs = -np.arange(1 << source.bits, dtype=np.int64)
    valid = diffs >= diff_min
    diff_table = np.where(valid, ref._srdhm(diffs << left_shift, multiplier), 0)
    summand_table = np.where(
        valid,
        ref._rescale(
            ref.exp_on_negative_values(diff_table, bits), 0, ref._ACCUMULATION_INTEGER_BITS
        ),
        0,
    )
    return LogSoftmaxPlan(
        diff_table.astype(np.int32),
        summand_table.astype(np.int32),
        diff_min,
        reverse_divisor,
        -reverse_shift,
        result.min,
        result.max,
        int(np.prod(dims[:axis], dtype=np.int64)),
        n,
        int(np.prod(dims[axis + 1 :], dtype=np.int64)),
    )


@dataclass(frozen=True)
class ResizePlan:
    """A quantized resize as the C runs it, on NHWC images (NCHW: ``N * C`` images, C = 1)."""

    kind: str
    """"nearest", "bilinear_s8" or "bilinear_u8"."""
    images: int
    h: int
    w: int
    channels: int
    oh: int
    ow: int
    rows: tuple[np.ndarray, ...]
    """Nearest: (indices,); bilinear: (low, high, high weight) per output row."""
    cols: tuple[np.ndarray, ...]
    """The same per output column."""


def _storage_dtypes(op: nn.ResizeOp) -> tuple[np.dtype, np.dtype]:
    types = []
    for value, what in ((op.input, "input"), (op.output, "result")):
        qtype = quantized_element(value.type)
        if qtype is None or qtype.is_per_axis:
            raise NativeKernelError(f"quantized '{op.name}' needs a per-tensor quantized {what}")
        types.append(numpy_dtype(value.type))
    return types[0], types[1]


def _check_taps(op: nn.ResizeOp, taps: tuple[np.ndarray, ...], in_len: int) -> None:
    """Indices inside the input, int8 weights in [-1024, 2048] (exact int32 sums)."""
    for index in taps[:2]:
        if index.size and (int(index.min()) < 0 or int(index.max()) >= in_len):
            raise NativeKernelError(
                f"quantized bilinear '{op.name}' whose taps leave the input (TFLite reads "
                "out of bounds here)"
            )
    weight = taps[2]
    if weight.dtype.kind == "i" and weight.size:
        if int(weight.min()) < -_ONE_10 or int(weight.max()) > 2 * _ONE_10:
            raise NativeKernelError(f"quantized bilinear '{op.name}' with weights out of range")


def resize_plan(op: nn.ResizeOp) -> ResizePlan:
    """The kernel and tap tables of quantized resize `op` (raises NativeKernelError)."""
    from irc.targets.cpu.resize_tables import resize_tables
    from irc.targets.reference import quant_nn as ref

    source, result = _storage_dtypes(op)
    if source != result:
        raise NativeKernelError(
            f"quantized '{op.name}' from {source} to {result} storage (stored alike only)"
        )
    _reference_kernel(op)
    x_shape = tuple(op.input.type.get_shape())  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)
    y_shape = tuple(op.output.type.get_shape())
    if op.layout.data == "NCHW":
        n, c, h, w = x_shape
        images, channels, oh, ow = n * c, 1, y_shape[2], y_shape[3]
    else:
        n, h, w, c = x_shape
        images, channels, oh, ow = n, c, y_shape[1], y_shape[2]
    if (oh, ow) != tuple(ints_of(op.size)):
        raise NativeKernelError(f"quantized '{op.name}' whose result shape is not its size")
    if op.mode.data == "nearest":
        rows, cols = resize_tables(op, h, w)
        return ResizePlan("nearest", images, h, w, channels, oh, ow, (rows,), (cols,))  # type: ignore[arg-type]  # nearest tables are (rows, cols) index arrays, not the bilinear triple
    mode = op.coordinate_mode.data
    if source == np.int8:
        kind = "bilinear_s8"
        rows_taps, cols_taps = ref._integer_taps(oh, h, mode), ref._integer_taps(ow, w, mode)
    elif source == np.uint8:
        kind = "bilinear_u8"
        rows_taps, cols_taps = ref._float_taps(oh, h, mode), ref._float_taps(ow, w, mode)
    else:  # the reference refused it already
        raise NativeKernelError(f"quantized bilinear '{op.name}' on {source} storage")
    _check_taps(op, rows_taps, h)
    _check_taps(op, cols_taps, w)
    return ResizePlan(kind, images, h, w, channels, oh, ow, rows_taps, cols_taps)


def check_native(op: Operation) -> Support:
    """Whether quantized `op` (softmax, log_softmax, resize) has a native kernel here, or
    why not."""
    try:
        if isinstance(op, nn.SoftmaxOp):
            softmax_plan(op)
        elif isinstance(op, nn.LogSoftmaxOp):
            log_softmax_plan(op)
        elif isinstance(op, nn.ResizeOp):
            resize_plan(op)
        else:
            raise NativeKernelError(f"no native quantized kernel for '{op.name}'")
    except NativeKernelError as exc:
        return Support.no("quantized", f"cpu: {exc} (the reference target runs it)")
    return Support.yes()
