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
   on AVX-512 lanes instead of scalar 64-bit code), bit-exact with the scalar form:
   double rounding with per-lane left = max(s, 0), right = max(-s, 0); comparisons give
   -1 / 0 per lane, so "+ (x < 0)" becomes "- (x < 0)". Below AVX-512 there is no int64
   lane multiply nor arithmetic shift by lane (AVX2 has neither, SSE2 / NEON no 64-byte
   vector): gcc emulated them on split vectors, costing more to compile (a rescale-heavy
   int8 family: 16.5 s -> 13.0 s generic, 9.8 s -> 7.7 s AVX2) than the scalar lanes cost
   to run, so there each lane is irc_mbqm (s = left - right: one of them is 0). */
typedef int64_t irc_q8 __attribute__((vector_size(64)));

IRC_INLINE irc_q8 irc_q8_sel(irc_q8 mask, irc_q8 a, irc_q8 b) { return (mask & a) | (~mask & b); }

IRC_INLINE irc_q8 irc_q8_clamp(irc_q8 v, int64_t lo, int64_t hi) {
  const irc_q8 vlo = (irc_q8){0} + lo, vhi = (irc_q8){0} + hi;
  return irc_q8_sel(v < vlo, vlo, irc_q8_sel(v > vhi, vhi, v));
}

#if defined(__AVX512F__) && !defined(IRC_PORTABLE)
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
#else
IRC_INLINE irc_q8 irc_mbqm_q8(irc_q8 x, irc_q8 m, irc_q8 left, irc_q8 right) {
  irc_q8 r;
  for (int i = 0; i < 8; ++i) r[i] = irc_mbqm(x[i], m[i], (int)(left[i] - right[i]), 0);
  return r;
}
#endif

/* The single-rounding form on 8 lanes: (x * m + rounder) >> total, total = 31 - s (lane by
   lane below AVX-512, as irc_mbqm_q8). */
IRC_INLINE irc_q8 irc_mbqm1_q8(irc_q8 x, irc_q8 m, irc_q8 rounder, irc_q8 total) {
#if defined(__AVX512F__) && !defined(IRC_PORTABLE)
  return (x * m + rounder) >> total;
#else
  irc_q8 r;
  for (int i = 0; i < 8; ++i) r[i] = (x[i] * m[i] + rounder[i]) >> total[i];
  return r;
#endif
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

/* y[i] = t[x[i]] for n bytes: a 256-entry byte table (the 8-bit table ops and the "qtable"
   chains). Without AVX-512 VBMI (vpermb) there is no 64-way byte permute: the table is held
   as 16 rows of 16 bytes, each broadcast to every 128-bit lane; vpshufb looks up the low
   nibble of every byte in all 16 rows, and a tree of byte blends on bits 4, 5, 6 and 7
   (15 blends) picks the row of the high nibble. 64 bytes per step on AVX-512BW (Xeon
   @ 2.50GHz: ~0.19 ns per byte against ~1.5 for gcc's scalar/gather loop), 32 on AVX2
   (blendv on the bit moved to each byte's sign), scalar elsewhere. Exact for every table. */
#if defined(__AVX512BW__) && !defined(IRC_PORTABLE)
#define IRC_LUT8_STEP 64
IRC_INLINE __m512i irc_lut8_v(__m512i x, const __m512i *restrict rows) {
  const __m512i low = _mm512_and_si512(x, _mm512_set1_epi8(0x0f));
  __m512i r[16];
  for (int k = 0; k < 16; ++k) r[k] = _mm512_shuffle_epi8(rows[k], low);
  for (int bit = 0, width = 16; bit < 4; ++bit, width >>= 1) {
    const __mmask64 high = _mm512_test_epi8_mask(x, _mm512_set1_epi8((char)(0x10 << bit)));
    for (int k = 0; k < width / 2; ++k) r[k] = _mm512_mask_blend_epi8(high, r[2 * k], r[2 * k + 1]);
  }
  return r[0];
}
static void irc_lut8_span(const uint8_t *restrict x, uint8_t *restrict y, long n,
                          const uint8_t *restrict t) {
  __m512i rows[16];
  for (int k = 0; k < 16; ++k)
    rows[k] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(t + 16 * k)));
  long i = 0;
  for (; i + 64 <= n; i += 64)
    _mm512_storeu_si512((void *)(y + i), irc_lut8_v(_mm512_loadu_si512((const void *)(x + i)), rows));
  if (i < n) {
    const __mmask64 m = (__mmask64)(~0ULL >> (64 - (n - i)));
    _mm512_mask_storeu_epi8(y + i, m, irc_lut8_v(_mm512_maskz_loadu_epi8(m, x + i), rows));
  }
}
#elif defined(__AVX2__) && !defined(IRC_PORTABLE)
#define IRC_LUT8_STEP 32
IRC_INLINE __m256i irc_lut8_v(__m256i x, const __m256i *restrict rows) {
  const __m256i low = _mm256_and_si256(x, _mm256_set1_epi8(0x0f));
  __m256i r[16];
  for (int k = 0; k < 16; ++k) r[k] = _mm256_shuffle_epi8(rows[k], low);
  for (int bit = 0, width = 16; bit < 4; ++bit, width >>= 1) {
    const __m256i high = _mm256_slli_epi16(x, 3 - bit); /* bit 4 + bit -> each byte's sign */
    for (int k = 0; k < width / 2; ++k) r[k] = _mm256_blendv_epi8(r[2 * k], r[2 * k + 1], high);
  }
  return r[0];
}
static void irc_lut8_span(const uint8_t *restrict x, uint8_t *restrict y, long n,
                          const uint8_t *restrict t) {
  __m256i rows[16];
  for (int k = 0; k < 16; ++k)
    rows[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(t + 16 * k)));
  long i = 0;
  for (; i + 32 <= n; i += 32)
    _mm256_storeu_si256((__m256i *)(y + i),
                        irc_lut8_v(_mm256_loadu_si256((const __m256i *)(x + i)), rows));
  for (; i < n; ++i) y[i] = t[x[i]];
}
#else
#define IRC_LUT8_STEP 16
static void irc_lut8_span(const uint8_t *restrict x, uint8_t *restrict y, long n,
                          const uint8_t *restrict t) {
  for (long i = 0; i < n; ++i) y[i] = t[x[i]];
}
#endif

#define IRC_LUT8_PART 32768 /* bytes per task of a lookup split over the threads */
typedef struct {
  const uint8_t *x;
  uint8_t *y;
  const uint8_t *t;
  long n, parts;
} irc_lut8_args;

static void irc_lut8_part(const void *ctx, long part) {
  const irc_lut8_args *a = (const irc_lut8_args *)ctx;
  const long steps = (a->n + IRC_LUT8_STEP - 1) / IRC_LUT8_STEP;
  const long lo = part * steps / a->parts * IRC_LUT8_STEP;
  long hi = (part + 1) * steps / a->parts * IRC_LUT8_STEP;
  hi = hi < a->n ? hi : a->n;
  if (hi > lo) irc_lut8_span(a->x + lo, a->y + lo, hi - lo, a->t);
}

/* The lookup of n bytes (x and y apart), split over the library's threads from two parts'
   worth of bytes on. */
static void irc_lut8(const uint8_t *x, uint8_t *y, long n, const uint8_t *t) {
  const int threads = irc_nthreads();
  long parts = n / IRC_LUT8_PART;
  if (threads <= 1 || parts < 2) {
    irc_lut8_span(x, y, n, t);
    return;
  }
  parts = parts < 4L * threads ? parts : 4L * threads;
  const irc_lut8_args a = {x, y, t, n, parts};
  irc_parallel(irc_lut8_part, &a, parts, threads);
}

/* y[o][i] = sum over k < count of (x[o][k][i] - zp) for 8-bit x of type T ("qsum",
   targets/cpu/qsum.py): the int32 sub and sum of lower-quantized's mean / global average
   pool in one pass over the bytes, in 32-bit two's complement arithmetic as those int32
   kernels compute. */
#define IRC_QSUM(NAME, T)                                                                     \
  static void NAME(const T *restrict x, long outer, long count, long inner, int32_t zp,      \
                   int32_t *restrict y) {                                                    \
    const uint32_t off = (uint32_t)count * (uint32_t)zp;                                     \
    for (long o = 0; o < outer; ++o) {                                                       \
      const T *restrict xo = x + o * count * inner;                                          \
      if (inner == 1) {                                                                      \
        uint32_t s = 0;                                                                      \
        for (long k = 0; k < count; ++k) s += (uint32_t)(int32_t)xo[k];                      \
        y[o] = (int32_t)(s - off);                                                           \
        continue;                                                                            \
      }                                                                                      \
      uint32_t *restrict acc = (uint32_t *)(y + o * inner);                                  \
      for (long i = 0; i < inner; ++i) acc[i] = 0;                                           \
      for (long k = 0; k < count; ++k)                                                       \
        for (long i = 0; i < inner; ++i) acc[i] += (uint32_t)(int32_t)xo[k * inner + i];     \
      for (long i = 0; i < inner; ++i) acc[i] -= off;                                        \
    }                                                                                        \
  }
IRC_QSUM(irc_qsum_s8, int8_t)
IRC_QSUM(irc_qsum_u8, uint8_t)
