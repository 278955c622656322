/* irc CPU kernels: the kernel library's entry points: the fused int8 depthwise convolutions on
   column quads (csrc.fused_depthwise_quads_kernel's instances) (targets/cpu/library.py). */
#define IRC_QDWV_KERNEL(NAME)                                                                  \
  IRC_KERNEL(void, NAME, (const uint8_t *x, long N, long H, long W, long C, long Cp, int zp_in,   \
                          uint32_t flip, const int8_t *w, const int32_t *bias, const int64_t *q,  \
                          int mode, int64_t zp, int64_t lo, int64_t hi, uint8_t *y, long OH,      \
                          long OW, int KH_, int KW_, int SH, int SW, int DH, int DW, int PT,      \
                          int PL))
IRC_QDWV_KERNEL(qdepthwise_quads)
IRC_QDWV_KERNEL(qdepthwise_quads_m0)
IRC_QDWV_KERNEL(qdepthwise_quads3x3)
IRC_QDWV_KERNEL(qdepthwise_quads3x3_m0)
#undef IRC_QDWV_KERNEL
