/* irc CPU kernels: the kernel library's entry points: float convolution, padding, filter packing
   (targets/cpu/library.py). */
IRC_KERNEL(void, pad, (void *dst, const void *src, int esize, const long *d, const long *lo,
                       const long *hi, const void *fill))
IRC_KERNEL(void, pad_nhwc, (float *dst, const float *src, int N, int H, int W, int C, int PT,
                            int PL, int PB, int PR))
IRC_KERNEL(void, pack_filter, (float *dst, const float *src, int G, int OCg, int KH, int KW,
                               int Cg, int NB))
IRC_KERNEL(void, conv2d, (int NV, const float *x, int N, int Hp, int Wp, int C, const float *w,
                          const float *bias, float *y, int OH, int OW, int OC, int KH, int KW,
                          int SH, int SW, int DH, int DW, int G, int Cg, int OCg, int act,
                          const float *res, int act2))
IRC_KERNEL(void, conv2d_pad, (int NV, const float *x, int N, int H, int W, int C, int PT,
                              int PL, int PB, int PR, const float *w, const float *bias,
                              float *y, int OH, int OW, int OC, int KH, int KW, int SH, int SW,
                              int DH, int DW, int G, int Cg, int OCg, int act,
                              const float *res, int act2))
