/* irc CPU kernels, AVX2 without VNNI: the fused int8 conv's register tile and its mode-0
   epilogue, exactly.
   out[p][j] = bias[j] + sum_k sum_i a[k][p].u8[i] * w[k][j].s8[i] for MR pixels p and NB
   channels j (NB = 16 * NV), the weights packed [K][NB][4] int8 (the VNNI layout). AVX2 has
   no u8 x s8 dot product that is exact (vpmaddubsw saturates: 255 * 127 * 2 > 32767), so both
   sides are int16 and vpmaddwd sums pairs into int32: the input words are widened once per
   pixel tile into two dwords per (pixel, k), A = bytes 0 and 2 and B = bytes 1 and 3 as
   int16 pairs (IRC_QCONV_WIDE_X: the tile buffer holds [MR][K][2] dwords, irc_qconv_fill,
   each pixel's words widened as they lie in memory, 8 at a time), and a weight
   vector of 8 channels x 4 bytes gives the matching int16 pairs by two shifts, wA = bytes 0
   and 2 sign-extended (vpsllw 8, vpsraw 8) and wB = bytes 1 and 3 (vpsraw 8): then
   madd(wA, bcast A) + madd(wB, bcast B) is each channel's 4-byte dot product in its own
   int32 lane, no horizontal sums. Sub-tile: 4 pixels x 16 channels, 8 ymm accumulators,
   4 weight vectors and 2 broadcasts within the 16 registers (the weight shifts are paid once
   per 4 pixels). Mode 0 requantizes and stores from the registers (irc_qsub_store_avx2);
   other modes leave the int32 tile in `out` for the generic epilogue. */
#define IRC_QCONV_AVX2 1
#define IRC_QCONV_WIDE_X 1

/* Words src[i .. i + 7] XORed with `vflip` as their int16-pair dwords (bytes 0 and 2, bytes
   1 and 3) in dst[2i .. 2i + 15]. */
IRC_INLINE void irc_qwiden8(const uint8_t *restrict src, long i, __m256i vflip,
                            uint32_t *restrict dst) {
  const __m256i x = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + 4 * i)), vflip);
  const __m256i a = _mm256_and_si256(x, _mm256_set1_epi16(0xff)), b = _mm256_srli_epi16(x, 8);
  const __m256i lo = _mm256_unpacklo_epi32(a, b), hi = _mm256_unpackhi_epi32(a, b);
  _mm256_storeu_si256((__m256i *)(dst + 2 * i), _mm256_permute2x128_si256(lo, hi, 0x20));
  _mm256_storeu_si256((__m256i *)(dst + 2 * i + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
}

/* The same for words i .. i + 3. */
IRC_INLINE void irc_qwiden4(const uint8_t *restrict src, long i, __m256i vflip,
                            uint32_t *restrict dst) {
  const __m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(src + 4 * i)),
                                  _mm256_castsi256_si128(vflip));
  const __m128i a = _mm_and_si128(x, _mm_set1_epi16(0xff)), b = _mm_srli_epi16(x, 8);
  _mm_storeu_si128((__m128i *)(dst + 2 * i), _mm_unpacklo_epi32(a, b));
  _mm_storeu_si128((__m128i *)(dst + 2 * i + 4), _mm_unpackhi_epi32(a, b));
}

/* Words src[0 .. n - 1] (4 unsigned bytes each) XORed with `flip`, each as its two int16-pair
   dwords in dst[0 .. 2n - 1]: 8 words per vpand / vpsrlw and two unpacks (4 when n < 8), a
   tail as the last 8 (4) words again (the same values stored twice); n < 4 one by one. No
   byte beyond the n words is read or written. */
IRC_INLINE void irc_qwiden_words(const uint8_t *restrict src, long n, uint32_t flip,
                                 uint32_t *restrict dst) {
  const __m256i vflip = _mm256_set1_epi32((int)flip);
  if (n >= 8) {
    long i = 0;
    for (; i + 8 <= n; i += 8) irc_qwiden8(src, i, vflip, dst);
    if (i < n) irc_qwiden8(src, n - 8, vflip, dst);
  } else if (n >= 4) {
    irc_qwiden4(src, 0, vflip, dst);
    if (n > 4) irc_qwiden4(src, n - 4, vflip, dst);
  } else
    for (long i = 0; i < n; ++i) {
      uint32_t a;
      __builtin_memcpy(&a, src + 4 * i, 4);
      a ^= flip;
      dst[2 * i] = a & 0x00ff00ffu;
      dst[2 * i + 1] = (a >> 8) & 0x00ff00ffu;
    }
}

/* The input words of a pixel tile, XORed and widened once for every channel block of the
   tile: xb [MR][K][2] dwords (pixel-major, K = KH * KW * C4 words per pixel, tap-major as
   the weights are packed), pixel p's taps at xp[p] + kh * rstep + kw * cstep (the C4 words
   of a tap contiguous; a kernel row's taps too when cstep is 4 * C4); `room`: the buffer's
   size in words. */
IRC_INLINE void irc_qconv_fill(uint32_t *restrict xb, const uint8_t *const *xp, const int MR,
                               int KH, int KW, long C4, long rstep, long cstep, uint32_t flip,
                               long room) {
  const long K = (long)KH * KW * C4;
  if (C4 == 1 && cstep == 4 && KW < 4 && MR * K + 4 <= room) {
    /* e.g. an RGB image's first conv: a kernel row's KW words by one masked load (the
       words beyond are not read), widened in xmm and stored 4 pairs at a time (the pairs
       beyond the row are overwritten by the next row's, or lie in the buffer's room) */
    const __m128i in = _mm_cmpgt_epi32(_mm_set1_epi32(KW), _mm_setr_epi32(0, 1, 2, 3));
    const __m128i vflip = _mm_set1_epi32((int)flip), low = _mm_set1_epi16(0xff);
    for (int p = 0; p < MR; ++p)
      for (int kh = 0; kh < KH; ++kh) {
        const __m128i x = _mm_xor_si128(_mm_maskload_epi32((const int *)(xp[p] + kh * rstep), in),
                                        vflip);
        const __m128i a = _mm_and_si128(x, low), b = _mm_srli_epi16(x, 8);
        uint32_t *restrict d = xb + (p * K + (long)kh * KW) * 2;
        _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi32(a, b));
        _mm_storeu_si128((__m128i *)(d + 4), _mm_unpackhi_epi32(a, b));
      }
    return;
  }
  for (int p = 0; p < MR; ++p)
    for (int kh = 0; kh < KH; ++kh) {
      const uint8_t *row = xp[p] + kh * rstep;
      uint32_t *restrict d = xb + (p * K + (long)kh * KW * C4) * 2;
      if (cstep == 4 * C4)
        irc_qwiden_words(row, KW * C4, flip, d);
      else
        for (int kw = 0; kw < KW; ++kw) irc_qwiden_words(row + kw * cstep, C4, flip, d + kw * C4 * 2);
    }
}

/* Two pixels of 16 int16 -> bytes, clamped: clamp(r + zp, lo, hi) ==
   clamp(sat8(sat16(sat16(r) + zp)), lo, hi) when [lo, hi] lies in the byte's range (signed
   packs for hi <= 127, unsigned ones otherwise, then 0 <= lo). */
IRC_INLINE void irc_rq_store2_avx2(__m256i p0, __m256i p1, __m256i lo8, __m256i hi8, int us,
                                   uint8_t *restrict d0, uint8_t *restrict d1, int two,
                                   long cnt) {
  __m256i v;
  if (us)
    v = _mm256_min_epu8(_mm256_max_epu8(_mm256_packus_epi16(p0, p1), lo8), hi8);
  else
    v = _mm256_min_epi8(_mm256_max_epi8(_mm256_packs_epi16(p0, p1), lo8), hi8);
  v = _mm256_permute4x64_epi64(v, 0xD8);
  const __m128i b0 = _mm256_castsi256_si128(v), b1 = _mm256_extracti128_si256(v, 1);
  if (cnt >= 16) {
    _mm_storeu_si128((__m128i *)d0, b0);
    if (two) _mm_storeu_si128((__m128i *)d1, b1);
  } else {
    uint8_t tmp[32];
    _mm256_storeu_si256((__m256i *)tmp, v);
    memcpy(d0, tmp, (size_t)cnt);
    if (two) memcpy(d1, tmp + 16, (size_t)cnt);
  }
}

/* PG (<= 4) pixels x 16 channels (block v of NV) over K: the int32 sums in acc[p][0..1]. */
IRC_INLINE void irc_qsub_avx2(const int PG, const int NV, __m256i acc[4][2],
                              const int32_t *restrict bias, const uint32_t *restrict xw,
                              const int8_t *restrict wb, long K, int v, int p0) {
  const int NB = 16 * NV;
  const __m256i b0 = _mm256_loadu_si256((const __m256i *)(bias + v * 16));
  const __m256i b1 = _mm256_loadu_si256((const __m256i *)(bias + v * 16 + 8));
  for (int p = 0; p < PG; ++p) acc[p][0] = b0, acc[p][1] = b1;
  const uint32_t *restrict xp = xw + (long)p0 * K * 2; /* pixel p0's words */
  for (long k = 0; k < K; ++k) {
    const int8_t *restrict wk = wb + (k * NB + v * 16) * 4;
    const __m256i w0 = _mm256_loadu_si256((const __m256i *)wk);
    const __m256i w1 = _mm256_loadu_si256((const __m256i *)(wk + 32));
    const __m256i a0 = _mm256_srai_epi16(_mm256_slli_epi16(w0, 8), 8);
    const __m256i a1 = _mm256_srai_epi16(_mm256_slli_epi16(w1, 8), 8);
    const __m256i c0 = _mm256_srai_epi16(w0, 8), c1 = _mm256_srai_epi16(w1, 8);
    for (int p = 0; p < PG; ++p) {
      const __m256i xa = _mm256_set1_epi32((int)xp[(p * K + k) * 2]);
      const __m256i xb = _mm256_set1_epi32((int)xp[(p * K + k) * 2 + 1]);
      acc[p][0] = _mm256_add_epi32(acc[p][0], _mm256_madd_epi16(a0, xa));
      acc[p][1] = _mm256_add_epi32(acc[p][1], _mm256_madd_epi16(a1, xa));
      acc[p][0] = _mm256_add_epi32(acc[p][0], _mm256_madd_epi16(c0, xb));
      acc[p][1] = _mm256_add_epi32(acc[p][1], _mm256_madd_epi16(c1, xb));
    }
  }
}

/* Requantize (mode 0, every S >= 32) and store PG pixels x 16 channels of a sub-tile:
   y points at the sub-tile's first pixel and channel, `pixels` of them are stored. */
IRC_INLINE void irc_qsub_store_avx2(const int PG, __m256i acc[4][2], const int64_t *restrict q,
                                    int64_t zp, int64_t lo, int64_t hi, uint8_t *restrict y,
                                    long pixels, long OC, long cnt, int nonneg) {
  const __m256i sd0 = irc_rq0_shift32_avx2(q, 0), sd1 = irc_rq0_shift32_avx2(q, 1);
  const __m256i zp16 = _mm256_set1_epi16((short)zp);
  const __m256i lo8 = _mm256_set1_epi8((char)lo), hi8 = _mm256_set1_epi8((char)hi);
  const int us = hi > 127;
  __m256i r[4];
  for (int p = 0; p < PG; ++p)
    r[p] = irc_rq_pack16_avx2(irc_rq0_v8_avx2(acc[p][0], q, 0, sd0, nonneg),
                              irc_rq0_v8_avx2(acc[p][1], q, 1, sd1, nonneg), zp16);
  for (int p = 0; p < PG && p < pixels; p += 2) {
    const int two = p + 1 < PG && p + 1 < pixels;
    irc_rq_store2_avx2(r[p], p + 1 < PG ? r[p + 1] : r[p], lo8, hi8, us, y + p * OC,
                       y + (p + 1) * OC, two, cnt);
  }
}

/* The int32 sums of a sub-tile into out [MR][NV][16]. */
IRC_INLINE void irc_qsub_out_avx2(const int PG, const int NV, __m256i acc[4][2],
                                  int32_t *restrict out, int v, int p0) {
  for (int p = 0; p < PG; ++p) {
    int32_t *restrict o = out + ((long)(p0 + p) * NV + v) * 16;
    _mm256_storeu_si256((__m256i *)o, acc[p][0]);
    _mm256_storeu_si256((__m256i *)(o + 8), acc[p][1]);
  }
}

/* PG pixels from p0 of block v: the sums, then the stored bytes (fast) or the int32 tile. */
IRC_INLINE void irc_qsub_run_avx2(const int PG, const int NV, int32_t *restrict out,
                                  const int32_t *restrict bias, const uint32_t *restrict xw,
                                  const int8_t *restrict wb, long K, int v, int p0, int fast,
                                  const int64_t *restrict qv, int64_t zp, int64_t lo,
                                  int64_t hi, uint8_t *restrict y, long pixels, long OC,
                                  long c0, long cnt, int nonneg) {
  __m256i acc[4][2];
  irc_qsub_avx2(PG, NV, acc, bias, xw, wb, K, v, p0);
  if (fast)
    irc_qsub_store_avx2(PG, acc, qv, zp, lo, hi, y + p0 * OC + c0, pixels - p0, OC, cnt, nonneg);
  else
    irc_qsub_out_avx2(PG, NV, acc, out, v, p0);
}

/* The tile of the fused conv (IRC_QCONV): MR pixels x NB channels from the widened input
   words xw [MR][K][2] (irc_qconv_fill) and the packed weights wb. Returns 1 when it stored
   the requantized bytes itself (mode 0 with every S >= 32: `q` the tile's first parameter
   block, y the tile's first output, `pixels` valid pixels, channels oc0 .. of OC), 0 when it
   left the int32 tile in out [MR][NV][16] for the caller's epilogue. Only the valid pixels
   are computed (a tail tile of 1 or 2 pixels in sub-tiles of its size): the caller reads
   no other. */
IRC_INLINE int irc_qconv_tile_avx2(const int MR, const int NV, int32_t *restrict out,
                                   const int32_t *restrict bias, const uint32_t *restrict xw,
                                   const int8_t *restrict wb, long K, int mode0,
                                   const int64_t *restrict q, int64_t zp, int64_t lo,
                                   int64_t hi, uint8_t *restrict y, long pixels, long OC,
                                   long oc0) {
  int fast = mode0;
  for (int v = 0; v < NV && fast; ++v)
    if (oc0 + 16 * v < OC) fast = irc_rq0_narrow(q + v * IRC_RQ_BLOCK);
  const int nonneg = lo - zp >= 0;
  const int valid = pixels < MR ? (int)pixels : MR;
  for (int v = 0; v < NV; ++v) {
    const long c0 = oc0 + 16 * v;
    if (fast && c0 >= OC) break;
    const long cnt = OC - c0 < 16 ? OC - c0 : 16;
    const int64_t *restrict qv = q + v * IRC_RQ_BLOCK;
    int p0 = 0;
    for (; p0 + 2 < valid; p0 += 4)
      irc_qsub_run_avx2(4, NV, out, bias, xw, wb, K, v, p0, fast, qv, zp, lo, hi, y, pixels,
                        OC, c0, cnt, nonneg);
    if (p0 + 1 < valid)
      irc_qsub_run_avx2(2, NV, out, bias, xw, wb, K, v, p0, fast, qv, zp, lo, hi, y, pixels,
                        OC, c0, cnt, nonneg);
    else if (p0 < valid)
      irc_qsub_run_avx2(1, NV, out, bias, xw, wb, K, v, p0, fast, qv, zp, lo, hi, y, pixels,
                        OC, c0, cnt, nonneg);
  }
  return fast;
}
