/* irc CPU kernels: snippet "batch_matmul" (targets/cpu/csrc.py puts it in a translation unit). */
/* z[b] = x[b] @ y[b] for B batches of [M][K] @ [K][N] -> [M][N] (z contiguous), x[b] and
   y[b] at element offsets xo[b], yo[b] (broadcast batches repeat an offset) with element
   strides (xsm, xsk) and (ysk, ysn): adj_x / adj_y transpose through the strides. With
   ysn == 1 the inner loop runs along contiguous rows of y and z (axpy, vectorised); else
   each z element is a dot product along k. Batches, then rows, split across threads. */
static void irc_batch_matmul(const float *restrict x, const float *restrict y,
                             float *restrict z, long B, long M, long K, long N,
                             const long *restrict xo, const long *restrict yo, long xsm,
                             long xsk, long ysk, long ysn) {
  const double work = (double)B * M * K * N;
  IRC_PARFOR(collapse(2) schedule(static) if (work > IRC_PARALLEL_WORK))
  for (long b = 0; b < B; ++b)
    for (long m = 0; m < M; ++m) {
      const float *restrict xr = x + xo[b] + m * xsm;
      const float *restrict yb = y + yo[b];
      float *restrict zr = z + (b * M + m) * N;
      if (ysn == 1) {
        for (long n = 0; n < N; ++n) zr[n] = 0.0f;
        for (long k = 0; k < K; ++k) {
          const float a = xr[k * xsk];
          const float *restrict yr = yb + k * ysk;
          for (long n = 0; n < N; ++n) zr[n] += a * yr[n];
        }
      } else {
        for (long n = 0; n < N; ++n) {
          const float *restrict yc = yb + n * ysn;
          float acc = 0.0f;
          for (long k = 0; k < K; ++k) acc += xr[k * xsk] * yc[k * ysk];
          zr[n] = acc;
        }
      }
    }
}
