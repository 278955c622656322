/* irc CPU kernels, AVX-512: requantization of 16 int32 lanes (irc_rq_store; the block
   layout and the modes are described in the qfused snippet, targets/cpu/csrc.py). */
#include <immintrin.h>
typedef struct {
  __m512i m[2], a[2], b[2], half[2], adj[2];
} irc_rqp;

IRC_INLINE irc_rqp irc_rq_load(const int64_t *restrict q, int mode) {
  irc_rqp p;
  const __m512i one = _mm512_set1_epi64(1), zero = _mm512_setzero_si512();
  if (mode == 0) {
    for (int k = 0; k < 2; ++k) {
      p.m[k] = _mm512_loadu_si512((const void *)(q + 8 * k));
      p.half[k] = _mm512_loadu_si512((const void *)(q + 16 + 8 * k));
      p.adj[k] = _mm512_loadu_si512((const void *)(q + 32 + 8 * k));
      p.b[k] = _mm512_loadu_si512((const void *)(q + 48 + 8 * k));
      p.a[k] = zero;
    }
    return p;
  }
  for (int k = 0; k < 2; ++k) {
    p.m[k] = _mm512_loadu_si512((const void *)(q + 8 * k));
    p.a[k] = _mm512_loadu_si512((const void *)(q + 16 + 8 * k));
    p.b[k] = _mm512_loadu_si512((const void *)(q + 32 + 8 * k));
    p.half[k] = _mm512_srli_epi64(_mm512_sllv_epi64(one, p.b[k]), 1);
    p.adj[k] = _mm512_mask_sub_epi64(p.half[k], _mm512_cmpgt_epi64_mask(p.b[k], zero),
                                     p.half[k], one);
  }
  return p;
}

IRC_INLINE void irc_rq_store_bytes(__m128i bytes, uint8_t *restrict dst, int cnt) {
  if (cnt == 16)
    _mm_storeu_si128((__m128i *)dst, bytes);
  else {
    uint8_t tmp[16];
    _mm_storeu_si128((__m128i *)tmp, bytes);
    memcpy(dst, tmp, (size_t)cnt);
  }
}

/* Mode 0 on 16 int32 lanes: the requantized values (before zero point and clamp), int32. */
IRC_INLINE __m512i irc_rq0_lanes(__m512i acc, const irc_rqp *p) {
  const __m512i lim = _mm512_set1_epi64(-((int64_t)1 << 30));
  const __m512i xs[2] = {acc, _mm512_srli_epi64(acc, 32)}; /* vpmuldq: low dwords */
  __m512i r[2];
  for (int k = 0; k < 2; ++k) {
    const __m512i prod = _mm512_mul_epi32(xs[k], p->m[k]);
    const __mmask8 neg = _mm512_cmplt_epi64_mask(prod, lim);
    r[k] = _mm512_srav_epi64(
        _mm512_add_epi64(prod, _mm512_mask_mov_epi64(p->half[k], neg, p->adj[k])), p->b[k]);
  }
  return _mm512_or_si512(_mm512_and_si512(r[0], _mm512_set1_epi64(0xffffffffLL)),
                         _mm512_slli_epi64(r[1], 32));
}

IRC_INLINE void irc_rq_store(__m512i acc, const irc_rqp *p, int mode, int64_t zp, int64_t lo,
                             int64_t hi, uint8_t *restrict dst, int cnt) {
  if (mode == 0) {
    __m512i v = irc_rq0_lanes(acc, p);
    v = _mm512_max_epi32(_mm512_min_epi32(v, _mm512_set1_epi32((int)(hi - zp))),
                         _mm512_set1_epi32((int)(lo - zp)));
    v = _mm512_add_epi32(v, _mm512_set1_epi32((int)zp));
    irc_rq_store_bytes(_mm512_cvtepi32_epi8(v), dst, cnt);
    return;
  }
  const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);
  const __m512i vlo = _mm512_set1_epi64(lo - zp), vhi = _mm512_set1_epi64(hi - zp);
  __m512i x[2] = {_mm512_srai_epi64(_mm512_slli_epi64(acc, 32), 32), _mm512_srai_epi64(acc, 32)};
  __m512i r[2];
  for (int k = 0; k < 2; ++k) {
    if (mode & 1) {
      const __m512i rounder = _mm512_sllv_epi64(one, _mm512_sub_epi64(p->b[k], one));
      r[k] = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(x[k], p->m[k]), rounder),
                               p->b[k]);
    } else {
      __m512i s = x[k];
      if (mode & 2) {
        s = _mm512_sllv_epi64(s, p->a[k]);
        s = _mm512_max_epi64(_mm512_min_epi64(s, _mm512_set1_epi64(INT32_MAX)),
                             _mm512_set1_epi64(INT32_MIN));
      }
      __m512i h = _mm512_srai_epi64(
          _mm512_add_epi64(_mm512_mul_epi32(s, p->m[k]), _mm512_set1_epi64((int64_t)1 << 30)),
          31);
      if (mode & 4) {
        const __m512i min32 = _mm512_set1_epi64(INT32_MIN);
        const __mmask8 sat =
            _mm512_cmpeq_epi64_mask(s, min32) & _mm512_cmpeq_epi64_mask(p->m[k], min32);
        h = _mm512_mask_mov_epi64(h, sat, _mm512_set1_epi64(INT32_MAX));
      }
      const __mmask8 neg = _mm512_cmplt_epi64_mask(h, zero);
      r[k] = _mm512_srav_epi64(_mm512_add_epi64(h, _mm512_mask_mov_epi64(p->half[k], neg,
                                                                            p->adj[k])),
                               p->b[k]);
    }
    r[k] = _mm512_max_epi64(_mm512_min_epi64(r[k], vhi), vlo);
  }
  const __m512i v = _mm512_add_epi32(
      _mm512_or_si512(_mm512_and_si512(r[0], _mm512_set1_epi64(0xffffffffLL)),
                      _mm512_slli_epi64(r[1], 32)),
      _mm512_set1_epi32((int)zp));
  irc_rq_store_bytes(_mm512_cvtepi32_epi8(v), dst, cnt);
}
#define IRC_RQ_PARAMS(NAME, Q, MODE) const irc_rqp NAME = irc_rq_load(Q, MODE)
#define IRC_RQ_STORE(ACC, P, Q, MODE, ZP, LO, HI, DST, CNT) \
  irc_rq_store((__m512i)(ACC), &(P), MODE, ZP, LO, HI, DST, CNT)
