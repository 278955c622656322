/* irc CPU kernels: snippet "pool2d" (targets/cpu/csrc.py puts it in a translation unit). */
/* Max (is_max) or average pooling, NHWC; windows clipped to the input (padding never wins
   the max; averages divide by the taps inside unless count_include_pad). */
static void irc_pool2d(int is_max, const float *restrict x, int N, int H, int W, int C,
                       float *restrict y, int OH, int OW, int KH, int KW, int SH, int SW, int DH,
                       int DW, int PT, int PL, int count_include_pad, int act) {
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * KH * KW * C;
  (void)work;
  IRC_PARFOR(schedule(static) if (rows > 1 && work > IRC_PARALLEL_WORK))
  for (long r = 0; r < rows; ++r) {
    const int n = (int)(r / OH), oh = (int)(r % OH);
    for (int ow = 0; ow < OW; ++ow) {
      float *restrict o = y + (r * OW + ow) * C;
      const float init = is_max ? -INFINITY : 0.0f;
      int count = 0;
      for (int c = 0; c < C; ++c) o[c] = init;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * SH - PT + kh * DH;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
          const int iw = ow * SW - PL + kw * DW;
          if (iw < 0 || iw >= W) continue;
          const float *restrict xi = x + (((long)n * H + ih) * W + iw) * C;
          ++count;
          if (is_max)
            for (int c = 0; c < C; ++c) o[c] = irc_maxf(o[c], xi[c]);
          else
            for (int c = 0; c < C; ++c) o[c] += xi[c];
        }
      }
      if (!is_max) {
        const float d = (float)(count_include_pad ? KH * KW : count);
        for (int c = 0; c < C; ++c) o[c] = o[c] / d;
      }
      irc_epilogue(o, C, NULL, act);
    }
  }
}
