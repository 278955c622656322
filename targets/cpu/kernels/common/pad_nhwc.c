/* irc CPU kernels: snippet "pad_nhwc" (targets/cpu/csrc.py puts it in a translation unit). */
/* dst = src [N][H][W][C] with PT/PL/PB/PR zero rows and columns around each image. */
static void irc_pad_nhwc(float *restrict dst, const float *restrict src, int N, int H, int W,
                         int C, int PT, int PL, int PB, int PR) {
  const int Hp = H + PT + PB, Wp = W + PL + PR;
  memset(dst, 0, sizeof(float) * (size_t)N * Hp * Wp * C);
  for (int n = 0; n < N; ++n)
    for (int h = 0; h < H; ++h)
      memcpy(dst + (((size_t)n * Hp + h + PT) * Wp + PL) * C,
             src + ((size_t)n * H + h) * W * C, sizeof(float) * (size_t)W * C);
}
