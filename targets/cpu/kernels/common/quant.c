/* irc CPU kernels: snippet "quant" (targets/cpu/csrc.py puts it in a translation unit). */
#include <stdint.h>

/* TFLite's MultiplyByQuantizedMultiplier, exactly as targets/reference/quant.py defines it:
   x * m * 2^(s - 31) with gemmlowp's SaturatingRoundingDoublingHighMul and
   RoundingDivideByPOT (single = 0), or one rounding of the 64-bit product (single = 1).
   Every intermediate is held in 64 bits, as the reference's int64 arithmetic. */
IRC_INLINE int64_t irc_srdhm(int64_t a, int64_t b) {
  const int64_t product = a * b; /* |a * b| <= 2^62: exact in 64 bits */
  const int64_t nudge = product >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
  const int64_t high = (product + nudge) / ((int64_t)1 << 31); /* truncates toward zero */
  return (a == INT32_MIN && b == INT32_MIN) ? INT32_MAX : high; /* select: vectorisable */
}

IRC_INLINE int64_t irc_rdbpot(int64_t x, int exponent) {
  const int64_t mask = ((int64_t)1 << exponent) - 1;
  const int64_t remainder = x & mask;
  const int64_t threshold = (mask >> 1) + (x < 0);
  return (x >> exponent) + (remainder > threshold);
}

IRC_INLINE int64_t irc_mbqm(int64_t x, int64_t m, int s, int single) {
  if (single) {
    const int total = 31 - s;
    const int64_t rounder = total > 0 ? ((int64_t)1 << (total - 1)) : 0;
    return (x * m + rounder) >> total;
  }
  const int left = s > 0 ? s : 0, right = s > 0 ? 0 : -s;
  int64_t shifted = x << left;
  shifted = shifted < INT32_MIN ? INT32_MIN : (shifted > INT32_MAX ? INT32_MAX : shifted);
  return irc_rdbpot(irc_srdhm(shifted, m), right);
}

/* irc_mbqm on 8 int64 lanes (gcc/clang vector extensions, so the generated rescale loops run
   on AVX-512 / AVX2 lanes instead of scalar 64-bit code), bit-exact with the scalar form:
   double rounding with per-lane left = max(s, 0), right = max(-s, 0); comparisons give
   -1 / 0 per lane, so "+ (x < 0)" becomes "- (x < 0)". */
typedef int64_t irc_q8 __attribute__((vector_size(64)));

IRC_INLINE irc_q8 irc_q8_sel(irc_q8 mask, irc_q8 a, irc_q8 b) { return (mask & a) | (~mask & b); }

IRC_INLINE irc_q8 irc_q8_clamp(irc_q8 v, int64_t lo, int64_t hi) {
  const irc_q8 vlo = (irc_q8){0} + lo, vhi = (irc_q8){0} + hi;
  return irc_q8_sel(v < vlo, vlo, irc_q8_sel(v > vhi, vhi, v));
}

IRC_INLINE irc_q8 irc_mbqm_q8(irc_q8 x, irc_q8 m, irc_q8 left, irc_q8 right) {
  const irc_q8 zero = {0}, lo32 = zero + INT32_MIN, hi32 = zero + INT32_MAX;
  const irc_q8 shifted = irc_q8_clamp(x << left, INT32_MIN, INT32_MAX);
  const irc_q8 product = shifted * m; /* |product| <= 2^62 */
  const irc_q8 sum = product + irc_q8_sel(product >= zero, zero + ((int64_t)1 << 30),
                                          zero + (1 - ((int64_t)1 << 30)));
  irc_q8 high = (sum + ((sum < zero) & (((int64_t)1 << 31) - 1))) >> 31; /* sum / 2^31 */
  high = irc_q8_sel((shifted == lo32) & (m == lo32), hi32, high);
  const irc_q8 mask = ((zero + 1) << right) - 1;
  const irc_q8 threshold = (mask >> 1) - (high < zero);
  return (high >> right) - ((high & mask) > threshold);
}

/* The single-rounding form on 8 lanes: (x * m + rounder) >> total, total = 31 - s. */
IRC_INLINE irc_q8 irc_mbqm1_q8(irc_q8 x, irc_q8 m, irc_q8 rounder, irc_q8 total) {
  return (x * m + rounder) >> total;
}

/* y = clamp(zp_out + mbqm(x - zp_in, m[c], s[c]), lo, hi) over [outer][C][inner] elements,
   C = 1 for per-tensor parameters: IRC_RESCALE(name, input type, output type) defines it
   (the generated code calls `irc_rescale` as the functions it instantiates do). */
#define IRC_RESCALE(NAME, TIN, TOUT)                                                        \
  static void NAME(const TIN *restrict x, TOUT *restrict y, long outer, long C, long inner, \
                   const int32_t *restrict m, const int32_t *restrict s, int64_t zp_in,     \
                   int64_t zp_out, int64_t lo, int64_t hi, int single) {                    \
    for (long o = 0; o < outer; ++o)                                                        \
      for (long c = 0; c < C; ++c) {                                                        \
        const int64_t mc = m[c];                                                            \
        const int sc = s[c];                                                                \
        const long base = (o * C + c) * inner;                                              \
        for (long i = 0; i < inner; ++i) {                                                  \
          int64_t v = zp_out + irc_mbqm((int64_t)x[base + i] - zp_in, mc, sc, single);      \
          y[base + i] = (TOUT)(v < lo ? lo : (v > hi ? hi : v));                            \
        }                                                                                   \
      }                                                                                     \
  }
