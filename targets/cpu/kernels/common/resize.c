/* irc CPU kernels: snippet "resize" (targets/cpu/csrc.py puts it in a translation unit). */
/* Nearest-neighbour resize, NHWC: output (oh, ow) copies input (hi[oh], wi[ow]). */
static void irc_resize_nearest(const float *restrict x, int N, int H, int W, int C,
                               float *restrict y, int OH, int OW, const int *restrict hi,
                               const int *restrict wi) {
  for (int n = 0; n < N; ++n)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow)
        memcpy(y + (((long)n * OH + oh) * OW + ow) * C,
               x + (((long)n * H + hi[oh]) * W + wi[ow]) * C, sizeof(float) * (size_t)C);
}

/* Bilinear resize, NHWC, interpolating along H first and then along W (the reference's
   order): a + (b - a) * weight with low/high input indices per output row and column. */
static void irc_resize_bilinear(const float *restrict x, int N, int H, int W, int C,
                                float *restrict y, int OH, int OW, const int *restrict hl,
                                const int *restrict hh, const float *restrict hw,
                                const int *restrict wl, const int *restrict wh,
                                const float *restrict ww) {
  for (int n = 0; n < N; ++n)
    for (int oh = 0; oh < OH; ++oh) {
      const float *restrict r0 = x + ((long)n * H + hl[oh]) * W * C;
      const float *restrict r1 = x + ((long)n * H + hh[oh]) * W * C;
      const float fh = hw[oh];
      for (int ow = 0; ow < OW; ++ow) {
        const float fw = ww[ow];
        const float *restrict a0 = r0 + (long)wl[ow] * C, *restrict b0 = r1 + (long)wl[ow] * C;
        const float *restrict a1 = r0 + (long)wh[ow] * C, *restrict b1 = r1 + (long)wh[ow] * C;
        float *restrict o = y + (((long)n * OH + oh) * OW + ow) * C;
        for (int c = 0; c < C; ++c) {
          const float lo = a0[c] + (b0[c] - a0[c]) * fh;
          const float hi = a1[c] + (b1[c] - a1[c]) * fh;
          o[c] = lo + (hi - lo) * fw;
        }
      }
    }
}
