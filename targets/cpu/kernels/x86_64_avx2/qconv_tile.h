/* irc CPU kernels, AVX2 without VNNI: the fused int8 conv's register tile and its mode-0
   epilogue, exactly.
   out[p][j] = bias[j] + sum_k sum_i a[k][p].u8[i] * w[k][j].s8[i] for MR pixels p and NB
   channels j (NB = 16 * NV), the weights packed [K][NB][4] int8 (the VNNI layout). AVX2 has
   no u8 x s8 dot product that is exact (vpmaddubsw saturates: 255 * 127 * 2 > 32767), so both
   sides are int16 and vpmaddwd sums pairs into int32: the input words are widened once per
   pixel tile into two dwords per (k, pixel), A = bytes 0 and 2 and B = bytes 1 and 3 as
   int16 pairs (IRC_QCONV_WIDE_X: the tile buffer holds [K][MR][2] dwords), and a weight
   vector of 8 channels x 4 bytes gives the matching int16 pairs by two shifts, wA = bytes 0
   and 2 sign-extended (vpsllw 8, vpsraw 8) and wB = bytes 1 and 3 (vpsraw 8): then
   madd(wA, bcast A) + madd(wB, bcast B) is each channel's 4-byte dot product in its own
   int32 lane, no horizontal sums. Sub-tile: 4 pixels x 16 channels, 8 ymm accumulators,
   4 weight vectors and 2 broadcasts within the 16 registers (the weight shifts are paid once
   per 4 pixels). Mode 0 requantizes and stores from the registers (irc_qconv_store_avx2);
   other modes leave the int32 tile in `out` for the generic epilogue. */
#define IRC_QCONV_AVX2 1
#define IRC_QCONV_WIDE_X 1

/* The two int16-pair dwords of an input word (4 unsigned bytes). */
IRC_INLINE void irc_qwiden_word(uint32_t a, uint32_t *restrict dst) {
  dst[0] = a & 0x00ff00ffu;
  dst[1] = (a >> 8) & 0x00ff00ffu;
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
IRC_INLINE void irc_qsub_avx2(const int PG, const int MR, const int NV, __m256i acc[4][2],
                              const int32_t *restrict bias, const uint32_t *restrict xw,
                              const int8_t *restrict wb, long K, int v, int p0) {
  const int NB = 16 * NV;
  const __m256i b0 = _mm256_loadu_si256((const __m256i *)(bias + v * 16));
  const __m256i b1 = _mm256_loadu_si256((const __m256i *)(bias + v * 16 + 8));
  for (int p = 0; p < PG; ++p) acc[p][0] = b0, acc[p][1] = b1;
  for (long k = 0; k < K; ++k) {
    const int8_t *restrict wk = wb + (k * NB + v * 16) * 4;
    const __m256i w0 = _mm256_loadu_si256((const __m256i *)wk);
    const __m256i w1 = _mm256_loadu_si256((const __m256i *)(wk + 32));
    const __m256i a0 = _mm256_srai_epi16(_mm256_slli_epi16(w0, 8), 8);
    const __m256i a1 = _mm256_srai_epi16(_mm256_slli_epi16(w1, 8), 8);
    const __m256i c0 = _mm256_srai_epi16(w0, 8), c1 = _mm256_srai_epi16(w1, 8);
    const uint32_t *restrict xk = xw + (k * MR + p0) * 2;
    for (int p = 0; p < PG; ++p) {
      const __m256i xa = _mm256_set1_epi32((int)xk[2 * p]);
      const __m256i xb = _mm256_set1_epi32((int)xk[2 * p + 1]);
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

/* The tile of the fused conv (IRC_QCONV): MR pixels x NB channels from the widened input
   words xw [K][MR][2] and the packed weights wb. Returns 1 when it stored the requantized
   bytes itself (mode 0 with every S >= 32: `q` the tile's first parameter block, y the tile's
   first output, `pixels` valid pixels, channels oc0 .. of OC), 0 when it left the int32 tile
   in out [MR][NV][16] for the caller's epilogue. */
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
  for (int v = 0; v < NV; ++v) {
    const long c0 = oc0 + 16 * v;
    if (fast && c0 >= OC) break;
    const long cnt = OC - c0 < 16 ? OC - c0 : 16;
    const int64_t *restrict qv = q + v * IRC_RQ_BLOCK;
    int p0 = 0;
    for (; p0 + 4 <= MR; p0 += 4) {
      __m256i acc[4][2];
      irc_qsub_avx2(4, MR, NV, acc, bias, xw, wb, K, v, p0);
      if (fast) {
        if (p0 < pixels)
          irc_qsub_store_avx2(4, acc, qv, zp, lo, hi, y + p0 * OC + c0, pixels - p0, OC, cnt,
                              nonneg);
      } else
        irc_qsub_out_avx2(4, NV, acc, out, v, p0);
    }
    for (; p0 < MR; ++p0) {
      __m256i acc[4][2];
      irc_qsub_avx2(1, MR, NV, acc, bias, xw, wb, K, v, p0);
      if (fast) {
        if (p0 < pixels)
          irc_qsub_store_avx2(1, acc, qv, zp, lo, hi, y + p0 * OC + c0, pixels - p0, OC, cnt,
                              nonneg);
      } else
        irc_qsub_out_avx2(1, NV, acc, out, v, p0);
    }
  }
  return fast;
}
