/* irc CPU kernels: snippet "batch_matmul" (targets/cpu/csrc.py puts it in a translation unit). */
/* z[b] = x[b] @ y[b] for B batches of [M][K] @ [K][N] -> [M][N] (z contiguous), x[b] and
   y[b] at element offsets xo[b], yo[b] (broadcast batches repeat an offset) with element
   strides (xsm, xsk) and (ysk, ysn): adj_x / adj_y transpose through the strides. With
   ysn == 1 the inner loop runs along contiguous rows of y and z (axpy, vectorised); else
   each z element is a dot product along k. The (batch, row) tasks split across threads in
   contiguous parts (irc_parallel). */
typedef struct {
  const float *x, *y;
  float *z;
  long M, K, N;
  const long *xo, *yo;
  long xsm, xsk, ysk, ysn, tasks, parts;
} irc_batch_matmul_args;

static void irc_batch_matmul_part(const void *ctx, long part) {
  const irc_batch_matmul_args *restrict args = (const irc_batch_matmul_args *)ctx;
  const float *restrict x = args->x, *restrict y = args->y;
  float *restrict z = args->z;
  const long M = args->M, K = args->K, N = args->N, xsm = args->xsm, xsk = args->xsk;
  const long ysk = args->ysk, ysn = args->ysn;
  long t0, t1;
  irc_pool_range(part, args->parts, args->tasks, &t0, &t1);
  for (long t = t0; t < t1; ++t) {
    const long b = t / M, m = t % M;
    const float *restrict xr = x + args->xo[b] + m * xsm;
    const float *restrict yb = y + args->yo[b];
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

#define IRC_MATMUL_PART_WORK 250000.0 /* multiply-adds per part of a split batch_matmul */
static void irc_batch_matmul(const float *restrict x, const float *restrict y,
                             float *restrict z, long B, long M, long K, long N,
                             const long *restrict xo, const long *restrict yo, long xsm,
                             long xsk, long ysk, long ysn) {
  const double work = (double)B * M * K * N;
  const int threads = work > IRC_PARALLEL_WORK ? irc_nthreads() : 1;
  const irc_batch_matmul_args args = {
      x,   y,   z,   M,     K, N, xo, yo, xsm, xsk, ysk, ysn, B * M,
      irc_pool_parts(B * M, work, IRC_MATMUL_PART_WORK, threads)};
  irc_parallel(irc_batch_matmul_part, &args, args.parts, threads);
}
