/* irc CPU kernels: the kernel library's entry points: the dynamically quantized int8 GEMM of
   float models (targets/cpu/library.py). */
IRC_KERNEL(void, qgemm_dynamic, (const float *x, long M, long K, long N, const int8_t *w,
                                 const int32_t *colsum, const float *w_scale, int per_column,
                                 const float *bias, float *y, void *scratch))
