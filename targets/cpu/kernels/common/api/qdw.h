/* irc CPU kernels: the kernel library's entry points: the fused int8 depthwise convolutions
   (csrc.fused_depthwise_kernel's instances) (targets/cpu/library.py). */
#define IRC_QDW_KERNEL(NAME, T)                                                                \
  IRC_KERNEL(void, NAME, (const T *x, long N, long H, long W, long C, long Cp, int zp_in,         \
                          int pairs, const int16_t *w, const int32_t *bias, const int64_t *q,     \
                          int mode, int64_t zp, int64_t lo, int64_t hi, uint8_t *y, long OH,      \
                          long OW, int KH_, int KW_, int SH, int SW, int DH, int DW, int PT,      \
                          int PL))
IRC_QDW_KERNEL(qdepthwise3x3_s8, int8_t)
IRC_QDW_KERNEL(qdepthwise3x3_s8_m0, int8_t)
IRC_QDW_KERNEL(qdepthwise_s8, int8_t)
IRC_QDW_KERNEL(qdepthwise_s8_m0, int8_t)
IRC_QDW_KERNEL(qdepthwise3x3_u8, uint8_t)
IRC_QDW_KERNEL(qdepthwise3x3_u8_m0, uint8_t)
IRC_QDW_KERNEL(qdepthwise_u8, uint8_t)
IRC_QDW_KERNEL(qdepthwise_u8_m0, uint8_t)
#undef IRC_QDW_KERNEL
