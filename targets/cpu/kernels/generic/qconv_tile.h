/* irc CPU kernels, portable C and AVX-512 (x86_64_avx512/ has no file of its own): the fused
   int8 conv runs its dot product in the kernel itself (the portable one, or zmm registers with
   vpdpbusd on VNNI); no separate tile function. */
#define IRC_QCONV_AVX2 0
#define IRC_QCONV_WIDE_X 0
IRC_INLINE void irc_qwiden_word(uint32_t a, uint32_t *restrict dst) { dst[0] = a; }
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
