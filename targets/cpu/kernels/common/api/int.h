/* irc CPU kernels: the kernel library's entry points: integer kernels of the lower-quantized
   form, quantized resize and multiply (targets/cpu/library.py). */
IRC_KERNEL(void, conv2d_i32, (const int32_t *x, int N, int Hp, int Wp, int C, const int32_t *w,
                              const int32_t *bias, int32_t *y, int OH, int OW, int OC, int KH,
                              int KW, int SH, int SW, int DH, int DW, int G, int Cg, int OCg))
IRC_KERNEL(void, depthwise_i32, (const int32_t *x, int N, int Hp, int Wp, int C, const int32_t *w,
                                 const int32_t *bias, int32_t *y, int OH, int OW, int KH, int KW,
                                 int SH, int SW, int DH, int DW))
#define IRC_POOL_INT_KERNEL(T)                                                                  \
  IRC_KERNEL(void, pool2d_##T, (int is_max, const T *x, int N, int H, int W, int C, T *y, int OH, \
                                int OW, int KH, int KW, int SH, int SW, int DH, int DW, int PT,   \
                                int PL, int include_pad, int64_t lowest))
IRC_POOL_INT_KERNEL(int8_t)
IRC_POOL_INT_KERNEL(uint8_t)
IRC_POOL_INT_KERNEL(int16_t)
IRC_POOL_INT_KERNEL(int32_t)
#undef IRC_POOL_INT_KERNEL
IRC_KERNEL(void, resize_nearest_q, (const uint8_t *x, long N, long H, long W, long B, uint8_t *y,
                                    long OH, long OW, const int32_t *hi, const int32_t *wi))
IRC_KERNEL(void, resize_bilinear_s8, (const int8_t *x, long N, long H, long W, long C, int8_t *y,
                                      long OH, long OW, const int32_t *hl, const int32_t *hh,
                                      const int32_t *hw, const int32_t *wl, const int32_t *wh,
                                      const int32_t *ww))
IRC_KERNEL(void, resize_bilinear_u8, (const uint8_t *x, long N, long H, long W, long C,
                                      uint8_t *y, long OH, long OW, const int32_t *hl,
                                      const int32_t *hh, const float *hw, const int32_t *wl,
                                      const int32_t *wh, const float *ww))
#define IRC_QMUL_KERNEL(NAME, T)                                                               \
  IRC_KERNEL(void, NAME, (const T *a, const T *b, long rows, long nb, int32_t za, int32_t zb,     \
                          const int64_t *q, int mode, int64_t zp, int64_t lo, int64_t hi,         \
                          uint8_t *y))
IRC_QMUL_KERNEL(qmul_s8, int8_t)
IRC_QMUL_KERNEL(qmul_u8, uint8_t)
#undef IRC_QMUL_KERNEL
