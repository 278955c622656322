/* irc CPU kernels, AVX2: requantization of 16 int32 lanes to bytes in mode 0 (double
   rounding, no left shift: the block holds m, K1, K2 and S = 31 + b per channel, in
   even/odd lane order, see irc_rq_store): r = (p + (p < -2^30 ? K2 : K1)) >> S with
   p = x * m (vpmuldq), exactly irc_rq_store_scalar's mode 0. AVX2 has no arithmetic
   64-bit shift: (t ^ s) >>> S ^ s with s the sign of t. Other modes go lane by lane. */
IRC_INLINE __m256i irc_rq0_half_avx2(__m256i x, const int64_t *restrict q, int h) {
  const __m256i lim = _mm256_set1_epi64x(-((int64_t)1 << 30)), zero = _mm256_setzero_si256();
  __m256i r[2];
  for (int k = 0; k < 2; ++k) { /* k = 0: channels 8h + 0, 2, 4, 6; k = 1: the odd ones */
    const int e = 8 * k + 4 * h;
    const __m256i xs = k ? _mm256_srli_epi64(x, 32) : x;
    const __m256i prod = _mm256_mul_epi32(xs, _mm256_loadu_si256((const __m256i *)(q + e)));
    const __m256i k1 = _mm256_loadu_si256((const __m256i *)(q + 16 + e));
    const __m256i k2 = _mm256_loadu_si256((const __m256i *)(q + 32 + e));
    const __m256i t = _mm256_add_epi64(prod, _mm256_blendv_epi8(k1, k2, _mm256_cmpgt_epi64(lim, prod)));
    const __m256i s = _mm256_cmpgt_epi64(zero, t);
    r[k] = _mm256_xor_si256(
        _mm256_srlv_epi64(_mm256_xor_si256(t, s), _mm256_loadu_si256((const __m256i *)(q + 48 + e))),
        s);
  }
  return _mm256_blend_epi32(r[0], _mm256_slli_epi64(r[1], 32), 0xAA);
}

/* Mode 0 on 8 int32 lanes in channel order (channels 8h .. 8h + 7 of a parameter block,
   even/odd int64 layout, see irc_rq_store): r = floor((x m + K) / 2^S) with S >= 32 for
   every channel (`sd` = S - 32 per lane): the high dwords of the int64 sums, shifted
   arithmetically by S - 32 (exactly floor(floor(t / 2^32) / 2^(S - 32))). NONNEG: K1 for
   every lane (a product below -2^30 rounds to r <= 0 and is clamped to lo - zp >= 0 anyway). */
IRC_INLINE __m256i irc_rq0_v8_avx2(__m256i x, const int64_t *restrict q, int h, __m256i sd,
                                   int nonneg) {
  const __m256i lim = _mm256_set1_epi64x(-((int64_t)1 << 30));
  __m256i t[2];
  for (int k = 0; k < 2; ++k) { /* k = 0: channels 8h + 0, 2, 4, 6; k = 1: the odd ones */
    const int e = 8 * k + 4 * h;
    const __m256i xs = k ? _mm256_srli_epi64(x, 32) : x;
    const __m256i prod = _mm256_mul_epi32(xs, _mm256_loadu_si256((const __m256i *)(q + e)));
    __m256i kk = _mm256_loadu_si256((const __m256i *)(q + 16 + e));
    if (!nonneg)
      kk = _mm256_blendv_epi8(kk, _mm256_loadu_si256((const __m256i *)(q + 32 + e)),
                              _mm256_cmpgt_epi64(lim, prod));
    t[k] = _mm256_add_epi64(prod, kk);
  }
  const __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(t[0], 32), t[1], 0xAA);
  return _mm256_srav_epi32(high, sd);
}

/* S - 32 of channels 8h .. 8h + 7 of a parameter block, in channel order. */
IRC_INLINE __m256i irc_rq0_shift32_avx2(const int64_t *restrict q, int h) {
  const __m256i even = _mm256_loadu_si256((const __m256i *)(q + 48 + 4 * h));
  const __m256i odd = _mm256_loadu_si256((const __m256i *)(q + 56 + 4 * h));
  return _mm256_sub_epi32(_mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA),
                          _mm256_set1_epi32(32));
}

/* 1 when every channel of a parameter block has S >= 32 (a right shift >= 1; padding
   channels have S = 32, qfusion.requant_blocks). */
IRC_INLINE int irc_rq0_narrow(const int64_t *restrict q) {
  const __m256i limit = _mm256_set1_epi64x(32);
  __m256i any = _mm256_setzero_si256();
  for (int i = 0; i < 4; ++i)
    any = _mm256_or_si256(
        any, _mm256_cmpgt_epi64(limit, _mm256_loadu_si256((const __m256i *)(q + 48 + 4 * i))));
  return _mm256_testz_si256(any, any);
}

/* 16 requantized int32 (before the zero point: lo, hi of 8 channels each) -> 16 int16 in
   channel order, plus the zero point with int16 saturation. */
IRC_INLINE __m256i irc_rq_pack16_avx2(__m256i lo, __m256i hi, __m256i zp16) {
  return _mm256_adds_epi16(_mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8), zp16);
}

/* The low byte of each of 8 int32 lanes, in order, as 8 bytes. */
IRC_INLINE uint64_t irc_low_bytes8(__m256i v) {
  const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                        -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                        -1, -1);
  const __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, pick),
                                                _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
  return (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(b));
}

/* A parameter block prepared for irc_rq_store_avx2 (IRC_RQ_PARAMS): `narrow` when mode 0
   has S >= 32 in every channel, then `sd` = S - 32 of channels 0-7 and 8-15. */
typedef struct {
  const int64_t *q;
  int narrow;
  __m256i sd[2];
} irc_rqp_avx2;

IRC_INLINE irc_rqp_avx2 irc_rq_prepare_avx2(const int64_t *restrict q, int mode) {
  irc_rqp_avx2 p;
  p.q = q;
  p.narrow = mode == 0 && irc_rq0_narrow(q);
  p.sd[0] = p.narrow ? irc_rq0_shift32_avx2(q, 0) : _mm256_setzero_si256();
  p.sd[1] = p.narrow ? irc_rq0_shift32_avx2(q, 1) : _mm256_setzero_si256();
  return p;
}

/* 16 lanes (two halves of 8 channels) requantized and stored as `cnt` bytes. */
IRC_INLINE void irc_rq_store2_halves_avx2(__m256i x0, __m256i x1, const irc_rqp_avx2 *p,
                                          int mode, int64_t zp, int64_t lo, int64_t hi,
                                          uint8_t *restrict dst, int cnt) {
  if (p->narrow) {
    const int nonneg = lo - zp >= 0;
    const __m256i r = irc_rq_pack16_avx2(irc_rq0_v8_avx2(x0, p->q, 0, p->sd[0], nonneg),
                                         irc_rq0_v8_avx2(x1, p->q, 1, p->sd[1], nonneg),
                                         _mm256_set1_epi16((short)zp));
    __m128i b;
    if (hi > 127) {
      const __m256i v = _mm256_packus_epi16(r, r);
      b = _mm_min_epu8(_mm_max_epu8(_mm256_castsi256_si128(_mm256_permute4x64_epi64(v, 0xD8)),
                                    _mm_set1_epi8((char)lo)),
                       _mm_set1_epi8((char)hi));
    } else {
      const __m256i v = _mm256_packs_epi16(r, r);
      b = _mm_min_epi8(_mm_max_epi8(_mm256_castsi256_si128(_mm256_permute4x64_epi64(v, 0xD8)),
                                    _mm_set1_epi8((char)lo)),
                       _mm_set1_epi8((char)hi));
    }
    if (cnt == 16)
      _mm_storeu_si128((__m128i *)dst, b);
    else {
      uint8_t tmp[16];
      _mm_storeu_si128((__m128i *)tmp, b);
      memcpy(dst, tmp, (size_t)cnt);
    }
    return;
  }
  irc_vi32 acc;
  memcpy(&acc, &x0, 32);
  memcpy((char *)&acc + 32, &x1, 32);
  if (mode != 0) {
    irc_rq_store_scalar(acc, p->q, mode, zp, lo, hi, dst, cnt);
    return;
  }
  const __m256i vlo = _mm256_set1_epi32((int)(lo - zp)), vhi = _mm256_set1_epi32((int)(hi - zp));
  const __m256i vzp = _mm256_set1_epi32((int)zp);
  uint64_t bytes[2];
  const __m256i xs[2] = {x0, x1};
  for (int h = 0; h < 2; ++h) {
    const __m256i r =
        _mm256_min_epi32(_mm256_max_epi32(irc_rq0_half_avx2(xs[h], p->q, h), vlo), vhi);
    bytes[h] = irc_low_bytes8(_mm256_add_epi32(r, vzp));
  }
  memcpy(dst, bytes, (size_t)cnt);
}

IRC_INLINE void irc_rq_store_avx2(irc_vi32 acc, const irc_rqp_avx2 *p, int mode, int64_t zp,
                                  int64_t lo, int64_t hi, uint8_t *restrict dst, int cnt) {
  __m256i x0, x1;
  memcpy(&x0, &acc, 32);
  memcpy(&x1, (const char *)&acc + 32, 32);
  irc_rq_store2_halves_avx2(x0, x1, p, mode, zp, lo, hi, dst, cnt);
}

/* Mode 0 with one parameter set for all 8 lanes (a per-tensor block: lane 0 of q). */
IRC_INLINE __m256i irc_rq0_tensor_avx2(__m256i x, const int64_t *restrict q) {
  const __m256i lim = _mm256_set1_epi64x(-((int64_t)1 << 30)), zero = _mm256_setzero_si256();
  const __m256i m = _mm256_set1_epi64x(q[0]), k1 = _mm256_set1_epi64x(q[16]);
  const __m256i k2 = _mm256_set1_epi64x(q[32]), sh = _mm256_set1_epi64x(q[48]);
  __m256i r[2];
  for (int k = 0; k < 2; ++k) {
    const __m256i prod = _mm256_mul_epi32(k ? _mm256_srli_epi64(x, 32) : x, m);
    const __m256i t = _mm256_add_epi64(prod, _mm256_blendv_epi8(k1, k2, _mm256_cmpgt_epi64(lim, prod)));
    const __m256i s = _mm256_cmpgt_epi64(zero, t);
    r[k] = _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(t, s), sh), s);
  }
  return _mm256_blend_epi32(r[0], _mm256_slli_epi64(r[1], 32), 0xAA);
}

/* The fused int8 add on 8 elements (irc_qadd's vector step): a, b already widened to int32. */
IRC_INLINE void irc_qadd8_avx2(__m256i a, __m256i b, int za, int zb, int ka, int kb,
                               const int64_t *restrict qa, const int64_t *restrict qb,
                               const int64_t *restrict qo, int64_t zp, int64_t lo, int64_t hi,
                               uint8_t *restrict y) {
  const __m256i xa = _mm256_mullo_epi32(_mm256_sub_epi32(a, _mm256_set1_epi32(za)),
                                        _mm256_set1_epi32(ka));
  const __m256i xb = _mm256_mullo_epi32(_mm256_sub_epi32(b, _mm256_set1_epi32(zb)),
                                        _mm256_set1_epi32(kb));
  const __m256i sum = _mm256_add_epi32(irc_rq0_tensor_avx2(xa, qa), irc_rq0_tensor_avx2(xb, qb));
  __m256i r = irc_rq0_tensor_avx2(sum, qo);
  r = _mm256_min_epi32(_mm256_max_epi32(r, _mm256_set1_epi32((int)(lo - zp))),
                       _mm256_set1_epi32((int)(hi - zp)));
  const uint64_t bytes = irc_low_bytes8(_mm256_add_epi32(r, _mm256_set1_epi32((int)zp)));
  memcpy(y, &bytes, 8);
}
