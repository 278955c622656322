/* irc CPU kernels: snippet "softmax" (targets/cpu/csrc.py puts it in a translation unit). */
/* Softmax (or log-softmax) of x viewed as [outer][n][inner] along the middle axis:
   z = beta * x, e = exp(z - max z), y = e / sum e (log: z - max z - log(sum e)). */
static void irc_softmax(const float *restrict x, float *restrict y, long outer, long n,
                        long inner, float beta, int scaled, int is_log) {
  for (long o = 0; o < outer; ++o)
    for (long i = 0; i < inner; ++i) {
      const float *restrict xs = x + o * n * inner + i;
      float *restrict ys = y + o * n * inner + i;
      float mx = -INFINITY, sum = 0.0f;
      for (long k = 0; k < n; ++k) {
        const float z = scaled ? xs[k * inner] * beta : xs[k * inner];
        mx = irc_maxf(mx, z);
      }
      for (long k = 0; k < n; ++k) {
        const float s = scaled ? xs[k * inner] * beta : xs[k * inner];
        /* exactly 0 at a finite maximum: with -ffp-contract=fast, s - mx may become
           fma(x, beta, -mx), whose unrounded product left ~1e31 for exp (FLT_MAX rows) */
        const float z = (s == mx && isfinite(mx)) ? 0.0f : s - mx;
        const float e = expf(z);
        sum += e;
        ys[k * inner] = is_log ? z : e;
      }
      if (is_log) {
        const float l = logf(sum);
        for (long k = 0; k < n; ++k) ys[k * inner] = ys[k * inner] - l;
      } else {
        for (long k = 0; k < n; ++k) ys[k * inner] = ys[k * inner] / sum;
      }
    }
}
