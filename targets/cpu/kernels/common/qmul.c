/* irc CPU kernels: snippet "qmul" (defined by targets/cpu/qmul.py; needs "qfused"). */
/* The int8 mul of a "qmul" fusion (squeeze-excitation's y * sigmoid(s)): for r < rows and
   j < nb, y[r][j] = clamp(zp + rq((a[r][j] - za) * (b[j] - zb)), lo, hi). The product is
   exact in int32 (|.| <= 255^2); rq is the rescale's requantization block `q` (64 int64,
   qfusion.requant_blocks, per tensor: every lane alike) in mode `mode`, IRC_RQ_STORE's
   exact irc_mbqm on 16 int32 lanes (AVX-512: vpmuldq halves; AVX2: mode 0 vectorised;
   else lane by lane). The rows split over the pool from IRC_QMUL_PARALLEL elements. */
#define IRC_QMUL_PARALLEL 65536
typedef struct {
  const void *a, *b;
  uint8_t *y;
  long rows, nb, parts;
  int32_t za, zb;
  const int64_t *q;
  int mode;
  int64_t zp, lo, hi;
} irc_qmul_args;

/* 16 bytes of T at p widened to int32 lanes: vpmovsxbd / vpmovzxbd (gcc 12 widens a vector
   of 16 bytes element by element through general registers). */
#if defined(__AVX512F__) && !defined(IRC_PORTABLE)
#define IRC_QMUL_WIDEN(T, TV, P)                                                              \
  ((irc_vi32)((T)-1 < 0 ? _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(P)))     \
                        : _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(P)))))
#elif defined(__AVX2__) && !defined(IRC_PORTABLE)
IRC_INLINE irc_vi32 irc_qmul_widen_avx2(const void *p, int sgn) {
  const __m128i lo = _mm_loadl_epi64((const __m128i *)p);
  const __m128i hi = _mm_loadl_epi64((const __m128i *)((const uint8_t *)p + 8));
  const __m256i v[2] = {sgn ? _mm256_cvtepi8_epi32(lo) : _mm256_cvtepu8_epi32(lo),
                        sgn ? _mm256_cvtepi8_epi32(hi) : _mm256_cvtepu8_epi32(hi)};
  irc_vi32 out;
  __builtin_memcpy(&out, v, sizeof out);
  return out;
}
#define IRC_QMUL_WIDEN(T, TV, P) irc_qmul_widen_avx2(P, (T)-1 < 0)
#else
#define IRC_QMUL_WIDEN(T, TV, P)                                                            \
  ({                                                                                        \
    TV raw_;                                                                                \
    __builtin_memcpy(&raw_, (P), sizeof raw_);                                              \
    __builtin_convertvector(raw_, irc_vi32);                                                \
  })
#endif

/* The products of 16 (cnt <= 16) elements as int32 lanes (lanes past cnt are 0). */
#define IRC_QMUL_LANES(T, TV, X, AR, BR, CNT, ZA, ZB)                                      \
  do {                                                                                      \
    if ((CNT) == 16) {                                                                      \
      X = (IRC_QMUL_WIDEN(T, TV, AR) - (ZA)) * (IRC_QMUL_WIDEN(T, TV, BR) - (ZB));          \
    } else {                                                                                \
      X = (irc_vi32){0};                                                                    \
      for (int k = 0; k < (CNT); ++k)                                                       \
        X[k] = ((int32_t)(AR)[k] - (ZA)) * ((int32_t)(BR)[k] - (ZB));                       \
    }                                                                                       \
  } while (0)

#define IRC_QMUL_ROWS(T, TV, MODE)                                                          \
  for (long r = r0; r < r1; ++r)                                                            \
    for (long j = 0; j < nb; j += 16) {                                                     \
      const int cnt = nb - j < 16 ? (int)(nb - j) : 16;                                     \
      irc_vi32 x;                                                                           \
      IRC_QMUL_LANES(T, TV, x, a + r * nb + j, b + j, cnt, za, zb);                         \
      IRC_RQ_STORE(x, rq, q, MODE, zp, lo, hi, y + r * nb + j, cnt);                        \
    }

#define IRC_QMUL(NAME, T, TV)                                                               \
  static void NAME##_part(const void *ctx, long part) {                                     \
    const irc_qmul_args *A = (const irc_qmul_args *)ctx;                                    \
    const T *restrict a = (const T *)A->a, *restrict b = (const T *)A->b;                   \
    uint8_t *restrict y = A->y;                                                             \
    const long nb = A->nb, r0 = part * A->rows / A->parts;                                  \
    const long r1 = (part + 1) * A->rows / A->parts;                                        \
    const int32_t za = A->za, zb = A->zb;                                                   \
    const int64_t *restrict q = A->q;                                                       \
    const int64_t zp = A->zp, lo = A->lo, hi = A->hi;                                       \
    const int md = A->mode;                                                                 \
    IRC_RQ_PARAMS(rq, q, md);                                                               \
    if (md == 0) { /* the common mode as a constant: its vector path, inlined */            \
      IRC_QMUL_ROWS(T, TV, 0)                                                               \
    } else {                                                                                \
      IRC_QMUL_ROWS(T, TV, md)                                                              \
    }                                                                                       \
  }                                                                                         \
  static void NAME(const T *a, const T *b, long rows, long nb, int32_t za, int32_t zb,      \
                   const int64_t *q, int mode, int64_t zp, int64_t lo, int64_t hi,          \
                   uint8_t *y) {                                                            \
    const int threads = rows * nb >= IRC_QMUL_PARALLEL ? irc_nthreads() : 1;                \
    long parts = threads > 1 ? 4L * threads : 1;                                            \
    parts = parts < rows ? parts : rows;                                                    \
    const irc_qmul_args args = {a, b, y, rows, nb, parts, za, zb, q, mode, zp, lo, hi};     \
    if (parts <= 1)                                                                         \
      NAME##_part(&args, 0);                                                                \
    else                                                                                    \
      irc_parallel(NAME##_part, &args, parts, threads);                                     \
  }
typedef int8_t irc_s8x16 __attribute__((vector_size(16)));
typedef uint8_t irc_u8x16 __attribute__((vector_size(16)));
IRC_QMUL(irc_qmul_s8, int8_t, irc_s8x16)
IRC_QMUL(irc_qmul_u8, uint8_t, irc_u8x16)
