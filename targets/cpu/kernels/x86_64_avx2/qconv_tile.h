/* irc CPU kernels, AVX2 without VNNI: the fused int8 conv's register tile, exactly.
   out[MR][NV][16] int32 = bias + sum_k sum_i a[k][p].u8[i] * w[k][lane].s8[i], where the
   input words are xb[k * MR + p] (4 unsigned bytes, XORed already) and the weights are
   packed [K][NB][4] int8 (NB = 16 * NV). vpmaddubsw would saturate (255 * 127 * 2 > 32767),
   so both sides widen to int16 and vpmaddwd sums pairs into int32 (exact): for 4 lanes of
   4 bytes, [l0:k01, l0:k23, l1:k01, ..., l3:k23]; those pair sums accumulate over k and
   are added horizontally once, after the reduction. Tile: 2 pixels x 16 channels = 8 ymm
   accumulators, 4 widened weight vectors and a broadcast input within the 16 registers. */
#define IRC_QCONV_AVX2 1

IRC_INLINE __m256i irc_qwiden_input(uint32_t a) {
  return _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)a)));
}

/* Lanes 0..7 of the pair sums of two quarters (lanes 0-3 and 4-7 of 16). */
IRC_INLINE __m256i irc_qpairs_finish(__m256i q0, __m256i q1) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(q0, q1), 0xD8);
}

IRC_INLINE void irc_qconv_tile_avx2(const int MR, const int NV, int32_t *restrict out,
                                    const int32_t *restrict bias, const uint32_t *restrict xb,
                                    const int8_t *restrict wb, long K) {
  const int NB = 16 * NV;
  for (int v = 0; v < NV; ++v)
    for (int p0 = 0; p0 < MR; p0 += 2) {
      const int PG = MR - p0 < 2 ? MR - p0 : 2;
      __m256i acc[2][4];
      for (int p = 0; p < PG; ++p)
        for (int q = 0; q < 4; ++q) acc[p][q] = _mm256_setzero_si256();
      for (long k = 0; k < K; ++k) {
        const int8_t *restrict wk = wb + (k * NB + v * 16) * 4;
        __m256i w16[4];
        for (int q = 0; q < 4; ++q)
          w16[q] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wk + 16 * q)));
        for (int p = 0; p < PG; ++p) {
          const __m256i a = irc_qwiden_input(xb[k * MR + p0 + p]);
          for (int q = 0; q < 4; ++q)
            acc[p][q] = _mm256_add_epi32(acc[p][q], _mm256_madd_epi16(w16[q], a));
        }
      }
      const __m256i b0 = _mm256_loadu_si256((const __m256i *)(bias + v * 16));
      const __m256i b1 = _mm256_loadu_si256((const __m256i *)(bias + v * 16 + 8));
      for (int p = 0; p < PG; ++p) {
        int32_t *restrict o = out + ((long)(p0 + p) * NV + v) * 16;
        _mm256_storeu_si256((__m256i *)o,
                            _mm256_add_epi32(b0, irc_qpairs_finish(acc[p][0], acc[p][1])));
        _mm256_storeu_si256((__m256i *)(o + 8),
                            _mm256_add_epi32(b1, irc_qpairs_finish(acc[p][2], acc[p][3])));
      }
    }
}
