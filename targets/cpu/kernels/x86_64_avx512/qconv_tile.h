/* irc CPU kernels, AVX-512: the fused int8 conv keeps its tile in zmm registers (vpdpbusd
   with VNNI, the portable dot product otherwise); no separate tile function. */
#define IRC_QCONV_AVX2 0
IRC_INLINE void irc_qconv_tile_avx2(const int MR, const int NV, int32_t *restrict out,
                                    const int32_t *restrict bias, const uint32_t *restrict xb,
                                    const int8_t *restrict wb, long K) {
  (void)MR, (void)NV, (void)out, (void)bias, (void)xb, (void)wb, (void)K;
}
