/* irc CPU kernels: the kernel library's entry points: float pooling, batched matrix multiply,
   softmax, resize (targets/cpu/library.py). */
IRC_KERNEL(void, pool2d, (int is_max, const float *x, int N, int H, int W, int C, float *y,
                          int OH, int OW, int KH, int KW, int SH, int SW, int DH, int DW, int PT,
                          int PL, int count_include_pad, int act))
IRC_KERNEL(void, batch_matmul, (const float *x, const float *y, float *z, long B, long M, long K,
                                long N, const long *xo, const long *yo, long xsm, long xsk,
                                long ysk, long ysn))
IRC_KERNEL(void, softmax, (const float *x, float *y, long outer, long n, long inner, float beta,
                           int scaled, int is_log))
IRC_KERNEL(void, resize_nearest, (const float *x, int N, int H, int W, int C, float *y, int OH,
                                  int OW, const int *hi, const int *wi))
IRC_KERNEL(void, resize_bilinear, (const float *x, int N, int H, int W, int C, float *y, int OH,
                                   int OW, const int *hl, const int *hh, const float *hw,
                                   const int *wl, const int *wh, const float *ww))
