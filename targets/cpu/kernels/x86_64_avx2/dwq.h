/* irc CPU kernels, AVX2 without VNNI: the column quads and dot products of the fused int8
   depthwise kernel (IRC_QDWV), exactly. A dot product of 16 channels x 4 rows widens both
   sides to int16 and sums pairs with vpmaddwd into int32 pair sums, kept per quarter of 4
   channels (4 ymm) over the taps of a pixel and added horizontally once (irc_dwq_finish). */
typedef struct {
  __m256i q[4];
} irc_dwq_acc;

IRC_INLINE irc_dwq_acc irc_dwq_init(irc_vi32 bias) {
  (void)bias; /* added by irc_dwq_finish */
  irc_dwq_acc a;
  for (int i = 0; i < 4; ++i) a.q[i] = _mm256_setzero_si256();
  return a;
}

IRC_INLINE irc_dwq_acc irc_dwq_dot(irc_dwq_acc acc, const uint8_t *restrict col, irc_vi32 w) {
  const int8_t *wb = (const int8_t *)&w;
  for (int i = 0; i < 4; ++i) {
    const __m256i c16 = _mm256_cvtepu8_epi16(_mm_load_si128((const __m128i *)(col + 16 * i)));
    const __m256i w16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wb + 16 * i)));
    acc.q[i] = _mm256_add_epi32(acc.q[i], _mm256_madd_epi16(c16, w16));
  }
  return acc;
}

IRC_INLINE irc_vi32 irc_dwq_finish(irc_dwq_acc acc, irc_vi32 bias) {
  const __m256i lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc.q[0], acc.q[1]), 0xD8);
  const __m256i hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc.q[2], acc.q[3]), 0xD8);
  irc_vi32 out;
  memcpy(&out, &lo, 32);
  memcpy((char *)&out + 32, &hi, 32);
  return out + bias;
}

/* Columns iw0 .. iw0 + count - 1 of 4 rows as quads of 16 channels (as the AVX-512
   irc_dwq_columns): byte 4c + t = channel c of row t, XORed with `flip`; columns outside
   the input and channels beyond `cnt` read `fill`. Every row pointer reads 16 bytes (rows
   past `nr` are the 16-byte zero-point row, stride 0). */
IRC_INLINE void irc_dwq_columns(uint8_t *restrict dst, const uint8_t *const rp[4],
                                const long rs[4], long iw0, long count, long W, int cnt,
                                int nr, int fill, uint32_t flip) {
  (void)nr;
  const __m128i vflip = _mm_set1_epi32((int)flip);
  const __m128i outside = _mm_xor_si128(_mm_set1_epi8((char)fill), vflip);
  for (long j = 0; j < count; ++j) {
    const long iw = iw0 + j;
    __m128i *d = (__m128i *)(dst + j * 64);
    if (iw < 0 || iw >= W) {
      for (int i = 0; i < 4; ++i) _mm_store_si128(d + i, outside);
      continue;
    }
    __m128i r[4];
    for (int t = 0; t < 4; ++t) {
      if (cnt == 16) {
        r[t] = _mm_loadu_si128((const __m128i *)(rp[t] + iw * rs[t]));
      } else {
        uint8_t tmp[16];
        memset(tmp, fill, sizeof tmp);
        memcpy(tmp, rp[t] + iw * rs[t], (size_t)cnt);
        r[t] = _mm_loadu_si128((const __m128i *)tmp);
      }
    }
    const __m128i a = _mm_unpacklo_epi8(r[0], r[1]), b = _mm_unpacklo_epi8(r[2], r[3]);
    const __m128i c = _mm_unpackhi_epi8(r[0], r[1]), e = _mm_unpackhi_epi8(r[2], r[3]);
    _mm_store_si128(d + 0, _mm_xor_si128(_mm_unpacklo_epi16(a, b), vflip));
    _mm_store_si128(d + 1, _mm_xor_si128(_mm_unpackhi_epi16(a, b), vflip));
    _mm_store_si128(d + 2, _mm_xor_si128(_mm_unpacklo_epi16(c, e), vflip));
    _mm_store_si128(d + 3, _mm_xor_si128(_mm_unpackhi_epi16(c, e), vflip));
  }
}
