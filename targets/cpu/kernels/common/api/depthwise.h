/* irc CPU kernels: the kernel library's entry points: float depthwise convolution
   (targets/cpu/library.py). */
IRC_KERNEL(void, depthwise, (const float *x, int N, int H, int W, int C, const float *w,
                             const float *bias, float *y, int OH, int OW, int KH, int KW, int SH,
                             int SW, int DH, int DW, int PT, int PL, int act))
