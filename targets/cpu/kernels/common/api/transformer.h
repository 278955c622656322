/* irc CPU kernels: the kernel library's entry points: transformer kernels
   (targets/cpu/library.py). */
IRC_KERNEL(void, gelu, (const float *x, float *y, long n, int tanh_form))
IRC_KERNEL(void, layer_norm, (const float *x, const float *g, const float *b, float *y, long rows,
                              long n, float eps))
IRC_KERNEL(void, silu, (const float *x, float *y, long n))
IRC_KERNEL(void, attention, (const float *q, const float *k, const float *v, const float *mask,
                             float *o, long B, long M, long N, long D, long E, float scale,
                             const long *mo, long msm, long msn, const irc_att_layout *lay))
