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

/* The low byte of each of 8 int32 lanes, in order, as 8 bytes. */
IRC_INLINE uint64_t irc_low_bytes8(__m256i v) {
  const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                        -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                        -1, -1);
  const __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, pick),
                                                _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
  return (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(b));
}

IRC_INLINE void irc_rq_store_avx2(irc_vi32 acc, const int64_t *restrict q, int mode, int64_t zp,
                                  int64_t lo, int64_t hi, uint8_t *restrict dst, int cnt) {
  if (mode != 0) {
    irc_rq_store_scalar(acc, q, mode, zp, lo, hi, dst, cnt);
    return;
  }
  const __m256i vlo = _mm256_set1_epi32((int)(lo - zp)), vhi = _mm256_set1_epi32((int)(hi - zp));
  const __m256i vzp = _mm256_set1_epi32((int)zp);
  uint64_t bytes[2];
  for (int h = 0; h < 2; ++h) {
    __m256i x;
    memcpy(&x, (const char *)&acc + 32 * h, 32);
    const __m256i r = _mm256_min_epi32(_mm256_max_epi32(irc_rq0_half_avx2(x, q, h), vlo), vhi);
    bytes[h] = irc_low_bytes8(_mm256_add_epi32(r, vzp));
  }
  memcpy(dst, bytes, (size_t)cnt);
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
