/* irc CPU kernels: the kernel library's entry points: fused int8 padding and add
   (targets/cpu/library.py). */
IRC_KERNEL(void, qpad, (uint8_t *dst, const uint8_t *src, long N, long H, long W, long C, long Cp,
                        long PT, long PL, long PB, long PR, int fill))
#define IRC_QADD_KERNEL(NAME, T)                                                               \
  IRC_KERNEL(void, NAME, (const T *a, const T *b, long n, int za, int zb, int ka, int kb,         \
                          const int64_t *qa, const int64_t *qb, const int64_t *qo, int64_t zp,    \
                          int64_t lo, int64_t hi, uint8_t *y))
IRC_QADD_KERNEL(qadd_s8, int8_t)
IRC_QADD_KERNEL(qadd_u8, uint8_t)
#undef IRC_QADD_KERNEL
