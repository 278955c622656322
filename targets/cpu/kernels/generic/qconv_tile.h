/* irc CPU kernels, portable C and AVX-512 (x86_64_avx512/ has no file of its own): the fused
   int8 conv runs its dot product in the kernel itself (the portable one, or zmm registers with
   vpdpbusd on VNNI); no separate tile function, the input words of a tile k-major. */
#define IRC_QCONV_AVX2 0
#define IRC_QCONV_WIDE_X 0

/* The input words of a pixel tile XORed with `flip` once for every channel block of the tile:
   xb [K][MR] (K = KH * KW * C4 words per pixel, tap-major as the weights are packed; the
   kernel broadcasts xb[k * MR + p]), pixel p's taps at xp[p] + kh * rstep + kw * cstep. */
IRC_INLINE void irc_qconv_fill(uint32_t *restrict xb, const uint8_t *const *xp, const int MR,
                               int KH, int KW, long C4, long rstep, long cstep, uint32_t flip,
                               long room) {
  (void)room;
  const long ps = MR > 1 ? xp[1] - xp[0] : 0;
  if (C4 == 1 && xp[MR - 1] == xp[0] + (MR - 1) * ps) { /* e.g. an RGB image's first conv */
    for (int tap = 0; tap < KH * KW; ++tap) { /* the pixels at a fixed stride */
      const uint8_t *restrict src = xp[0] + (long)(tap / KW) * rstep + (long)(tap % KW) * cstep;
      for (int p = 0; p < MR; ++p) {
        uint32_t a;
        __builtin_memcpy(&a, src + p * ps, 4);
        xb[tap * MR + p] = a ^ flip;
      }
    }
    return;
  }
  for (int tap = 0; tap < KH * KW; ++tap) {
    const long off = (long)(tap / KW) * rstep + (long)(tap % KW) * cstep;
    for (long c4 = 0; c4 < C4; ++c4)
      for (int p = 0; p < MR; ++p) {
        uint32_t a;
        __builtin_memcpy(&a, xp[p] + off + c4 * 4, 4);
        xb[(tap * C4 + c4) * MR + p] = a ^ flip;
      }
  }
}
IRC_INLINE int irc_qconv_tile_avx2(const int MR, const int NV, int32_t *restrict out,
                                   const int32_t *restrict bias, const uint32_t *restrict xw,
                                   const int8_t *restrict wb, long K, int mode0,
                                   const int64_t *restrict q, int64_t zp, int64_t lo,
                                   int64_t hi, uint8_t *restrict y, long pixels, long OC,
                                   long oc0) {
  (void)MR, (void)NV, (void)out, (void)bias, (void)xw, (void)wb, (void)K, (void)mode0;
  (void)q, (void)zp, (void)lo, (void)hi, (void)y, (void)pixels, (void)OC, (void)oc0;
  return 0;
}
