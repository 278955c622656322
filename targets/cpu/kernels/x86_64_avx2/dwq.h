/* irc CPU kernels, AVX2 without VNNI: the columns, weights and dot products of the fused
   int8 depthwise kernel (IRC_QDWV), exactly. A column (IRC_DWQ_COL = 128 bytes) holds its 16
   channels of 4 kernel rows as int16 pairs, zero-extended from the XORed bytes: bytes
   0-31 channels 0-7 (row 0, row 1), 32-63 channels 8-15 (row 0, row 1), 64-95 channels 0-7
   (row 2, row 3), 96-127 channels 8-15 (row 2, row 3). The weights of a tap are prepared
   once per task in the same layout (irc_dwq_wprep, sign-extended, in registers), so one
   vpmaddwd gives two rows of a tap for 8 channels in their own int32 lanes: a tap is 4
   vpmaddwd + 4 vpaddd on two accumulators started at the bias, no horizontal sums. */
#define IRC_DWQ_COL 128

typedef struct {
  __m256i v[4];
} irc_dwq_w;

/* The weights of a tap (byte 4c + t = row t of channel c, int8) as int16 pairs: each 4
   channels' bytes sign-extended (vpmovsxbw: channel c's rows 0-3 in one qword), the (row 0,
   row 1) and (row 2, row 3) dwords of 8 channels picked by vshufps and put in channel order
   by vpermq; 12 instructions per tap, no store and reload. */
IRC_INLINE __m256i irc_dwq_pick(__m256i a, __m256i b, int rows23) {
  const __m256 fa = _mm256_castsi256_ps(a), fb = _mm256_castsi256_ps(b);
  const __m256 s = rows23 ? _mm256_shuffle_ps(fa, fb, 0xDD) : _mm256_shuffle_ps(fa, fb, 0x88);
  return _mm256_permute4x64_epi64(_mm256_castps_si256(s), 0xD8);
}

IRC_INLINE irc_dwq_w irc_dwq_wprep(irc_vi32 w) {
  __m128i b[4];
  memcpy(b, &w, 64);
  __m256i e[4];
  for (int i = 0; i < 4; ++i) e[i] = _mm256_cvtepi8_epi16(b[i]); /* channels 4i .. 4i + 3 */
  irc_dwq_w out;
  out.v[0] = irc_dwq_pick(e[0], e[1], 0);
  out.v[1] = irc_dwq_pick(e[2], e[3], 0);
  out.v[2] = irc_dwq_pick(e[0], e[1], 1);
  out.v[3] = irc_dwq_pick(e[2], e[3], 1);
  return out;
}

typedef struct {
  __m256i q[2];
} irc_dwq_acc;

IRC_INLINE irc_dwq_acc irc_dwq_init(irc_vi32 bias) {
  irc_dwq_acc a;
  memcpy(&a.q[0], &bias, 32);
  memcpy(&a.q[1], (const char *)&bias + 32, 32);
  return a;
}

IRC_INLINE irc_dwq_acc irc_dwq_dot(irc_dwq_acc acc, const uint8_t *restrict col, irc_dwq_w w) {
  const __m256i *c = (const __m256i *)col;
  acc.q[0] = _mm256_add_epi32(acc.q[0], _mm256_madd_epi16(_mm256_load_si256(c), w.v[0]));
  acc.q[1] = _mm256_add_epi32(acc.q[1], _mm256_madd_epi16(_mm256_load_si256(c + 1), w.v[1]));
  acc.q[0] = _mm256_add_epi32(acc.q[0], _mm256_madd_epi16(_mm256_load_si256(c + 2), w.v[2]));
  acc.q[1] = _mm256_add_epi32(acc.q[1], _mm256_madd_epi16(_mm256_load_si256(c + 3), w.v[3]));
  return acc;
}

/* Requantize and store the accumulators: IRC_RQ_STORE's AVX2 path on the two halves (an
   AVX-512 CPU without VNNI also runs these dot products, with its own requantization). */
#if defined(__AVX512F__)
IRC_INLINE irc_vi32 irc_dwq_joined(irc_dwq_acc acc) {
  irc_vi32 out;
  memcpy(&out, &acc.q[0], 32);
  memcpy((char *)&out + 32, &acc.q[1], 32);
  return out;
}
#define IRC_DWQ_STORE(ACC, RQ, MODE, ZP, LO, HI, DST, CNT) \
  IRC_RQ_STORE(irc_dwq_joined(ACC), RQ, q, MODE, ZP, LO, HI, DST, CNT)
#else
#define IRC_DWQ_STORE(ACC, RQ, MODE, ZP, LO, HI, DST, CNT) \
  irc_rq_store2_halves_avx2((ACC).q[0], (ACC).q[1], &(RQ), MODE, ZP, LO, HI, DST, CNT)
/* Four pixels (pixel stride C; NP of them stored): with every shift >= 32 (mode 0), the conv
   tile's epilogue (irc_qsub_store_avx2: packed pairs of pixels). */
#define IRC_DWQ_STORE4(ACC, NP, RQ, QB, MODE, ZP, LO, HI, Y, C, C0, CNT)                     \
  do {                                                                                       \
    if ((RQ).narrow) {                                                                       \
      __m256i a4_[4][2];                                                                     \
      for (int i_ = 0; i_ < 4; ++i_) a4_[i_][0] = (ACC)[i_].q[0], a4_[i_][1] = (ACC)[i_].q[1]; \
      irc_qsub_store_avx2(4, a4_, QB, ZP, LO, HI, (Y) + (C0), NP, C, CNT, (LO) - (ZP) >= 0); \
    } else                                                                                   \
      for (int i_ = 0; i_ < (NP); ++i_)                                                      \
        IRC_DWQ_STORE((ACC)[i_], RQ, MODE, ZP, LO, HI, (Y) + i_ * (C) + (C0), CNT);          \
  } while (0)
#endif

/* Columns iw0 .. iw0 + count - 1 of 4 rows (row t at rp[t] + iw * rs[t]; rs 0 for a row of
   zero points, which reads 16 bytes) in the layout above, XORed with `flip`; columns outside
   the input and channels beyond `cnt` read `fill`. */
IRC_INLINE void irc_dwq_columns(uint8_t *restrict dst, const uint8_t *const rp[4],
                                const long rs[4], long iw0, long count, long W, int cnt,
                                int nr, int fill, uint32_t flip) {
  (void)nr;
  const __m128i vflip = _mm_set1_epi32((int)flip);
  const __m256i outside = _mm256_set1_epi16((short)((fill ^ (int)flip) & 255));
  for (long j = 0; j < count; ++j) {
    const long iw = iw0 + j;
    __m256i *d = (__m256i *)(dst + j * IRC_DWQ_COL);
    if (iw < 0 || iw >= W) {
      for (int i = 0; i < 4; ++i) _mm256_store_si256(d + i, outside);
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
      r[t] = _mm_xor_si128(r[t], vflip);
    }
    _mm256_store_si256(d + 0, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r[0], r[1])));
    _mm256_store_si256(d + 1, _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r[0], r[1])));
    _mm256_store_si256(d + 2, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r[2], r[3])));
    _mm256_store_si256(d + 3, _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r[2], r[3])));
  }
}
