/* irc CPU kernels: the kernel library's entry points: the fused int8 convolutions
   (csrc.fused_conv_kernel's instances) (targets/cpu/library.py). */
#define IRC_QCONV_KERNEL(NAME)                                                                 \
  IRC_KERNEL(void, NAME, (const uint8_t *x, long N, long Hp, long Wp, long Cs, uint32_t flip,     \
                          const int8_t *w, const int32_t *bias, const int64_t *q, int mode,       \
                          int64_t zp, int64_t lo, int64_t hi, uint8_t *y, long OH, long OW,       \
                          long OC, int KH, int KW, int SH, int SW, int DH, int DW, long C4))
IRC_QCONV_KERNEL(qconv_m8n2)
IRC_QCONV_KERNEL(qconv_m8n2_m0)
IRC_QCONV_KERNEL(qconv_m8n1)
IRC_QCONV_KERNEL(qconv_m8n1_m0)
IRC_QCONV_KERNEL(qconv_m1n2)
IRC_QCONV_KERNEL(qconv_m1n2_m0)
#undef IRC_QCONV_KERNEL
