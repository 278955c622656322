/* irc CPU kernels: a dynamically quantized fully connected layer as one kernel.

   ONNX's dynamic quantization (onnxruntime's quantize_dynamic) writes
   DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by (x_scale * w_scale) [-> Add bias];
   irc_qgemm_dynamic runs that whole chain with the reference's arithmetic, bit for bit:

   1. x_scale = (max(max(x), 0) - min(min(x), 0)) / 255 in float32, NaN propagating;
      x_zp = saturate_u8(rint(-min(min(x), 0) / x_scale)), NaN to 0;
   2. q = saturate_u8(rint(x / x_scale) + x_zp) (rint: half to even, NaN to 0), one row of
      KP = 4 * K4 bytes per row of x, zero padded;
   3. acc[m][n] = sum_k q[m][k] * w[k][n] - x_zp * colsum[n] in int32, `w` the constant
      weights with their zero point already subtracted (int8 values), packed at compile
      time as [NB][K4][16][4] (16 output columns by 4 k; zero padded);
   4. y[m][n] = (float)acc * (x_scale * w_scale[n]) [+ bias[n]], the product and the sum
      rounded separately (IRC_DQ_FENCE keeps -ffp-contract=fast from fusing them).

   The dot products run u8 x s8 with vpdpbusd on AVX512-VNNI (an 8 row x 32 column tile of
   zmm accumulators), int16 pair sums (vpmaddwd) on AVX2 and AVX-512 without VNNI (2 rows x
   16 columns of ymm), plain C otherwise; all exact in int32. Tiles are split over the
   library's pool (irc_parallel, pool.h) when the product is big enough to pay for it. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define IRC_DQ_FENCE(v) __asm__("" : "+x"(v))
#elif defined(__aarch64__)
#define IRC_DQ_FENCE(v) __asm__("" : "+w"(v))
#else
#define IRC_DQ_FENCE(v) __asm__("" : "+m"(v))
#endif
#include <float.h>
#include <stdint.h>

#if defined(__AVX512F__) && defined(__AVX512VNNI__) && !defined(IRC_PORTABLE)
#define IRC_DQ_VNNI 1
#elif defined(__AVX2__) && !defined(IRC_PORTABLE)
#define IRC_DQ_AVX2 1
#endif

#define IRC_DQ_PARALLEL_WORK 4000000.0 /* multiply-adds below which the GEMM stays on one thread */
#define IRC_DQ_PART_WORK 250000.0    /* multiply-adds per part of a split GEMM (~2-3 us) */

/* min and max of n floats, NaN if any is NaN (numpy's reductions). */
static void irc_dq_minmax(const float *restrict x, long n, float *lo, float *hi) {
  float mn = INFINITY, mx = -INFINITY;
  int nan = 0;
  long i = 0;
#if defined(__AVX512F__) && !defined(IRC_PORTABLE)
  __m512 vmn = _mm512_set1_ps(INFINITY), vmx = _mm512_set1_ps(-INFINITY);
  __mmask16 vnan = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    vmn = _mm512_min_ps(vmn, v);
    vmx = _mm512_max_ps(vmx, v);
    vnan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  }
  mn = _mm512_reduce_min_ps(vmn);
  mx = _mm512_reduce_max_ps(vmx);
  nan = vnan != 0;
#elif defined(__AVX2__) && !defined(IRC_PORTABLE)
  __m256 vmn = _mm256_set1_ps(INFINITY), vmx = _mm256_set1_ps(-INFINITY);
  __m256 vnan = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    vmn = _mm256_min_ps(vmn, v);
    vmx = _mm256_max_ps(vmx, v);
    vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  float lanes_mn[8], lanes_mx[8];
  _mm256_storeu_ps(lanes_mn, vmn);
  _mm256_storeu_ps(lanes_mx, vmx);
  for (int l = 0; l < 8; ++l) {
    mn = lanes_mn[l] < mn ? lanes_mn[l] : mn;
    mx = lanes_mx[l] > mx ? lanes_mx[l] : mx;
  }
  nan = _mm256_movemask_ps(vnan) != 0;
#endif
  for (; i < n; ++i) {
    const float v = x[i];
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    nan |= v != v;
  }
  *lo = nan ? NAN : mn;
  *hi = nan ? NAN : mx;
}

/* One element of step 2, exactly as the reference: int32 clamp, wrapping add, saturation. */
IRC_INLINE uint8_t irc_dq_quantize_exact(float v, float scale, int32_t zp) {
  double r = (double)rintf(v / scale);
  r = r == r ? r : 0.0;
  r = r < -2147483648.0 ? -2147483648.0 : (r > 2147483647.0 ? 2147483647.0 : r);
  const int32_t w = (int32_t)((uint32_t)(int32_t)(int64_t)r + (uint32_t)zp);
  return (uint8_t)(w < 0 ? 0 : (w > 255 ? 255 : w));
}

/* Steps 1 and 2: the scale and zero point of x [M][K], and q [M][KP] (u8; AVX2: int16). */
static float irc_dq_quantize(const float *restrict x, long M, long K, long KP, void *restrict qv,
                             int32_t *zp_out) {
  float mn, mx;
  irc_dq_minmax(x, M * K, &mn, &mx);
  const float lo = mn != mn ? mn : (mn < 0.0f ? mn : 0.0f);
  const float hi = mx != mx ? mx : (mx > 0.0f ? mx : 0.0f);
  const float scale = (hi - lo) / 255.0f;
  const float zr = rintf(-lo / scale);
  const int32_t zp = zr != zr ? 0 : (zr < 0.0f ? 0 : (zr > 255.0f ? 255 : (int32_t)zr));
  *zp_out = zp;
  /* With a normal, finite scale |x / scale| <= 256, so clamping the rounded value to
     [-zp, 255 - zp] in float is the reference's int32 clamp and saturation. */
  const int fast = scale >= FLT_MIN && scale <= FLT_MAX;
  (void)fast; /* the generic profile has no vector path */
  for (long m = 0; m < M; ++m) {
    const float *restrict xr = x + m * K;
    long k = 0;
#if defined(IRC_DQ_AVX2)
    int16_t *restrict qr = (int16_t *)qv + m * KP;
    if (fast) {
      const __m256 vs = _mm256_set1_ps(scale), vlo = _mm256_set1_ps((float)-zp);
      const __m256 vhi = _mm256_set1_ps((float)(255 - zp));
      const __m256i vz = _mm256_set1_epi32(zp);
      for (; k + 8 <= K; k += 8) {
        __m256 v = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(xr + k), vs),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        v = _mm256_andnot_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), v);
        v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
        const __m256i iv = _mm256_add_epi32(_mm256_cvtps_epi32(v), vz);
        const __m128i packed = _mm_packs_epi32(_mm256_castsi256_si128(iv),
                                               _mm256_extracti128_si256(iv, 1));
        _mm_storeu_si128((__m128i *)(qr + k), packed);
      }
    }
    for (; k < K; ++k) qr[k] = irc_dq_quantize_exact(xr[k], scale, zp);
    for (; k < KP; ++k) qr[k] = 0;
#else
    uint8_t *restrict qr = (uint8_t *)qv + m * KP;
#if defined(__AVX512F__) && !defined(IRC_PORTABLE)
    if (fast) {
      const __m512 vs = _mm512_set1_ps(scale), vlo = _mm512_set1_ps((float)-zp);
      const __m512 vhi = _mm512_set1_ps((float)(255 - zp));
      const __m512i vz = _mm512_set1_epi32(zp);
      for (; k + 16 <= K; k += 16) {
        __m512 v = _mm512_roundscale_ps(_mm512_div_ps(_mm512_loadu_ps(xr + k), vs),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
        v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);
        const __m512i iv = _mm512_add_epi32(_mm512_cvtps_epi32(v), vz);
        _mm_storeu_si128((__m128i *)(qr + k), _mm512_cvtepi32_epi8(iv));
      }
    }
#endif
    for (; k < K; ++k) qr[k] = irc_dq_quantize_exact(xr[k], scale, zp);
    for (; k < KP; ++k) qr[k] = 0;
#endif
  }
  return scale;
}

#if defined(IRC_DQ_VNNI)
/* The epilogue of one row's 16 columns [n, n + 16) (masked to N). */
IRC_INLINE void irc_dq_store16(__m512i acc, const int32_t *colsum, const float *sp,
                               const float *bias, int32_t zp, float *restrict y, long N, long n) {
  const long left = N - n;
  const __mmask16 mask = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
  const __m512i corr = _mm512_mullo_epi32(_mm512_set1_epi32(zp), _mm512_loadu_si512(colsum + n));
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc, corr)),
                           _mm512_maskz_loadu_ps(mask, sp + n));
  if (bias) {
    __asm__("" : "+v"(f));
    f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(mask, bias + n));
  }
  _mm512_mask_storeu_ps(y + n, mask, f);
}

/* acc += u8 x s8 dot products of 4 (vpdpbusd). Inline assembly: gcc 12 copies the
   accumulator of _mm512_dpbusd_epi32 through another register every step (and spills). */
#define IRC_DQ_DPBUSD(acc, x, w) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w))

/* MR rows x NV blocks of 16 columns: vpdpbusd over K4 groups of 4 bytes. The accumulators
   are named variables (an array of them is spilled by gcc). */
#define IRC_DQ_ROW(r)                                                                        \
  if (MR > r) {                                                                              \
    const __m512i xb = _mm512_set1_epi32(*(const int32_t *)(q + r * KP + k4 * 4));           \
    IRC_DQ_DPBUSD(a##r##0, xb, w0);                                                          \
    if (NV > 1) IRC_DQ_DPBUSD(a##r##1, xb, w1);                                              \
  }
#define IRC_DQ_OUT(r)                                                                        \
  if (MR > r) {                                                                              \
    irc_dq_store16(a##r##0, colsum, sp, bias, zp, y + r * N, N, n0);                         \
    if (NV > 1) irc_dq_store16(a##r##1, colsum, sp, bias, zp, y + r * N, N, n0 + 16);       \
  }
IRC_INLINE void irc_dq_tile(const int MR, const int NV, const uint8_t *restrict q, long KP,
                            long K4, const int8_t *restrict w, long wblock, const int32_t *colsum,
                            const float *sp, const float *bias, int32_t zp, float *restrict y,
                            long N, long n0) {
  __m512i a00 = _mm512_setzero_si512(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00;
  __m512i a30 = a00, a31 = a00, a40 = a00, a41 = a00, a50 = a00, a51 = a00, a60 = a00;
  __m512i a61 = a00, a70 = a00, a71 = a00;
  const int8_t *w1p = w + (NV > 1 ? wblock : 0);
  for (long k4 = 0; k4 < K4; ++k4) {
    const __m512i w0 = _mm512_loadu_si512(w + k4 * 64);
    const __m512i w1 = NV > 1 ? _mm512_loadu_si512(w1p + k4 * 64) : w0;
    IRC_DQ_ROW(0) IRC_DQ_ROW(1) IRC_DQ_ROW(2) IRC_DQ_ROW(3)
    IRC_DQ_ROW(4) IRC_DQ_ROW(5) IRC_DQ_ROW(6) IRC_DQ_ROW(7)
  }
  IRC_DQ_OUT(0) IRC_DQ_OUT(1) IRC_DQ_OUT(2) IRC_DQ_OUT(3)
  IRC_DQ_OUT(4) IRC_DQ_OUT(5) IRC_DQ_OUT(6) IRC_DQ_OUT(7)
}
#define IRC_DQ_MR 8
#define IRC_DQ_NV 2
#elif defined(IRC_DQ_AVX2)
/* MR rows x 16 columns (NV = 1): int16 pairs (vpmaddwd), each int32 lane holding two of a
   column's four products per k group until the end. */
#define IRC_DQ_MADD(r)                                                                       \
  if (MR > r) {                                                                              \
    const __m256i xb = _mm256_set1_epi64x(*(const int64_t *)(q + r * KP + k4 * 4));          \
    a##r##0 = _mm256_add_epi32(a##r##0, _mm256_madd_epi16(w0, xb));                          \
    a##r##1 = _mm256_add_epi32(a##r##1, _mm256_madd_epi16(w1, xb));                          \
    a##r##2 = _mm256_add_epi32(a##r##2, _mm256_madd_epi16(w2, xb));                          \
    a##r##3 = _mm256_add_epi32(a##r##3, _mm256_madd_epi16(w3, xb));                          \
  }
IRC_INLINE void irc_dq_store16_avx2(__m256i c0, __m256i c1, __m256i c2, __m256i c3,
                                    const int32_t *colsum, const float *sp, const float *bias,
                                    int32_t zp, float *restrict y, long N, long n0) {
  int32_t sums[16];
  _mm256_storeu_si256((__m256i *)sums, _mm256_permute4x64_epi64(_mm256_hadd_epi32(c0, c1), 0xD8));
  _mm256_storeu_si256((__m256i *)(sums + 8),
                      _mm256_permute4x64_epi64(_mm256_hadd_epi32(c2, c3), 0xD8));
  const long cols = N - n0 < 16 ? N - n0 : 16;
  for (long c = 0; c < cols; ++c) {
    float f = (float)(int32_t)((uint32_t)sums[c] - (uint32_t)zp * (uint32_t)colsum[n0 + c]);
    f *= sp[n0 + c];
    IRC_DQ_FENCE(f);
    y[n0 + c] = bias ? f + bias[n0 + c] : f;
  }
}
IRC_INLINE void irc_dq_tile(const int MR, const int NV, const int16_t *restrict q, long KP,
                            long K4, const int8_t *restrict w, long wblock, const int32_t *colsum,
                            const float *sp, const float *bias, int32_t zp, float *restrict y,
                            long N, long n0) {
  (void)NV, (void)wblock;
  __m256i a00 = _mm256_setzero_si256(), a01 = a00, a02 = a00, a03 = a00;
  __m256i a10 = a00, a11 = a00, a12 = a00, a13 = a00;
  for (long k4 = 0; k4 < K4; ++k4) {
    const int8_t *wk = w + k4 * 64;
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)wk));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wk + 16)));
    const __m256i w2 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wk + 32)));
    const __m256i w3 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wk + 48)));
    IRC_DQ_MADD(0) IRC_DQ_MADD(1)
  }
  irc_dq_store16_avx2(a00, a01, a02, a03, colsum, sp, bias, zp, y, N, n0);
  if (MR > 1) irc_dq_store16_avx2(a10, a11, a12, a13, colsum, sp, bias, zp, y + N, N, n0);
}
#define IRC_DQ_MR 2
#define IRC_DQ_NV 1
#else
/* Portable C: one row x 16 columns. */
IRC_INLINE void irc_dq_tile(const int MR, const int NV, const uint8_t *restrict q, long KP,
                            long K4, const int8_t *restrict w, long wblock, const int32_t *colsum,
                            const float *sp, const float *bias, int32_t zp, float *restrict y,
                            long N, long n0) {
  (void)MR, (void)NV, (void)wblock;
  int32_t acc[16] = {0};
  for (long k4 = 0; k4 < K4; ++k4) {
    const uint8_t *xq = q + k4 * 4;
    const int8_t *wk = w + k4 * 64;
    for (int c = 0; c < 16; ++c)
      for (int t = 0; t < 4; ++t) acc[c] += (int32_t)xq[t] * (int32_t)wk[c * 4 + t];
  }
  const long cols = N - n0 < 16 ? N - n0 : 16;
  for (long c = 0; c < cols; ++c) {
    float f = (float)(int32_t)((uint32_t)acc[c] - (uint32_t)zp * (uint32_t)colsum[n0 + c]);
    f *= sp[n0 + c];
    IRC_DQ_FENCE(f);
    y[n0 + c] = bias ? f + bias[n0 + c] : f;
  }
}
#define IRC_DQ_MR 1
#define IRC_DQ_NV 1
#endif

#if defined(IRC_DQ_AVX2)
typedef int16_t irc_dq_q;
#else
typedef uint8_t irc_dq_q;
#endif

/* The rows [m0, m0 + mr) by the column blocks [nb, nb + nv): a full tile or a remainder. */
static void irc_dq_block(long mr, long nv, const irc_dq_q *q, long KP, long K4, const int8_t *w,
                         const int32_t *colsum, const float *sp, const float *bias, int32_t zp,
                         float *y, long N, long nb) {
  const long wblock = K4 * 64;
  const int8_t *wb = w + nb * wblock;
  const long n0 = nb * 16;
  if (mr == IRC_DQ_MR && nv == IRC_DQ_NV) {
    irc_dq_tile(IRC_DQ_MR, IRC_DQ_NV, q, KP, K4, wb, wblock, colsum, sp, bias, zp, y, N, n0);
    return;
  }
  for (long r = 0; r < mr; ++r)
    for (long v = 0; v < nv; ++v)
      irc_dq_tile(1, 1, q + r * KP, KP, K4, wb + v * wblock, wblock, colsum, sp, bias, zp,
                  y + r * N, N, n0 + 16 * v);
}

/* One part of the GEMM's tiles, run by the library's pool (irc_parallel, pool.h). */
typedef struct {
  const irc_dq_q *q;
  const int8_t *w;
  const int32_t *colsum;
  const float *sp, *bias;
  float *y;
  long M, N, KP, K4, NB, mt, tiles, parts;
  int32_t zp;
} irc_dq_job;

static void irc_dq_part(const void *ctx, long part) {
  const irc_dq_job *j = (const irc_dq_job *)ctx;
  long lo, hi;
  irc_pool_range(part, j->parts, j->tiles, &lo, &hi);
  for (long t = lo; t < hi; ++t) {
    /* Column blocks outermost: a block's weights stay in cache while every row tile uses
       them (the quantized rows are the smaller operand). */
    const long m0 = (t % j->mt) * IRC_DQ_MR, nb = (t / j->mt) * IRC_DQ_NV;
    const long mr = j->M - m0 < IRC_DQ_MR ? j->M - m0 : IRC_DQ_MR;
    const long nv = j->NB - nb < IRC_DQ_NV ? j->NB - nb : IRC_DQ_NV;
    irc_dq_block(mr, nv, j->q + m0 * j->KP, j->KP, j->K4, j->w, j->colsum, j->sp, j->bias, j->zp,
                 j->y + m0 * j->N, j->N, nb);
  }
}

/* y [M][N] = the dynamically quantized product of x [M][K] and the packed weights (see the
   top of this file). scratch: M * KP * 2 bytes + 16 * NB floats, 64-byte aligned. The tiles
   split over the library's pool from IRC_DQ_PARALLEL_WORK multiply-adds on; each tile is
   computed the same way on any split (bit-identical on any thread count). */
static void irc_qgemm_dynamic(const float *restrict x, long M, long K, long N,
                              const int8_t *restrict w, const int32_t *restrict colsum,
                              const float *restrict w_scale, int per_column,
                              const float *restrict bias, float *restrict y, void *scratch) {
  const long K4 = (K + 3) / 4, KP = 4 * K4, NB = (N + 15) / 16;
  irc_dq_q *q = (irc_dq_q *)scratch;
  float *sp = (float *)((char *)scratch + ((M * KP * 2 + 63) / 64) * 64);
  int32_t zp;
  const float scale = irc_dq_quantize(x, M, K, KP, q, &zp);
  for (long n = 0; n < NB * 16; ++n) sp[n] = n < N ? scale * w_scale[per_column ? n : 0] : 0.0f;
  const long mt = (M + IRC_DQ_MR - 1) / IRC_DQ_MR, nt = (NB + IRC_DQ_NV - 1) / IRC_DQ_NV;
  const double work = (double)M * N * K;
  const int threads = work >= IRC_DQ_PARALLEL_WORK ? irc_nthreads() : 1;
  irc_dq_job job = {q, w, colsum, sp, bias, y, M, N, KP, K4, NB, mt, mt * nt, 1, zp};
  job.parts = irc_pool_parts(job.tiles, work, IRC_DQ_PART_WORK, threads);
  irc_parallel(irc_dq_part, &job, job.parts, threads);
}
