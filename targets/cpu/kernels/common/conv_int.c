/* irc CPU kernels: snippet "conv_int" (targets/cpu/csrc.py puts it in a translation unit). */
/* Integer NHWC convolution accumulating exactly in int32 (the lower-quantized form: zero
   points already subtracted, so padding is 0): x [N][Hp][Wp][C] padded int32, w packed
   [G][ceil(OCg/16)][KH][KW][Cg][16] int32, bias int32 or NULL, y [N][OH][OW][OC] int32. */
static void irc_conv2d_i32(const int32_t *restrict x, int N, int Hp, int Wp, int C,
                           const int32_t *restrict w, const int32_t *restrict bias,
                           int32_t *restrict y, int OH, int OW, int OC, int KH, int KW, int SH,
                           int SW, int DH, int DW, int G, int Cg, int OCg) {
  const int nblk = (OCg + 15) / 16;
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * OC * KH * KW * Cg;
  IRC_PARFOR(schedule(static) if (work > IRC_PARALLEL_WORK))
  for (long r = 0; r < rows; ++r) {
    const long n = r / OH, oh = r % OH;
    /* 4 output pixels x 16 channels per register tile; a tail tile repeats its last
       pixel (computed again, written once). */
    for (int ow0 = 0; ow0 < OW; ow0 += 4) {
      long px[4];
      for (int p = 0; p < 4; ++p) px[p] = ow0 + p < OW ? ow0 + p : OW - 1;
      for (int g = 0; g < G; ++g)
        for (int b = 0; b < nblk; ++b) {
          int32_t acc[4][16] = {{0}};
          const int32_t *restrict wb = w + ((long)g * nblk + b) * KH * KW * Cg * 16;
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              const long row = (n * Hp + oh * SH + kh * DH) * Wp + kw * DW;
              const int32_t *restrict x0 = x + (row + px[0] * SW) * C + g * Cg;
              const int32_t *restrict x1 = x + (row + px[1] * SW) * C + g * Cg;
              const int32_t *restrict x2 = x + (row + px[2] * SW) * C + g * Cg;
              const int32_t *restrict x3 = x + (row + px[3] * SW) * C + g * Cg;
              const int32_t *restrict wp = wb + ((long)kh * KW + kw) * Cg * 16;
              for (int c = 0; c < Cg; ++c) {
                const int32_t a0 = x0[c], a1 = x1[c], a2 = x2[c], a3 = x3[c];
                const int32_t *restrict wc = wp + c * 16;
                for (int j = 0; j < 16; ++j) {
                  acc[0][j] += a0 * wc[j];
                  acc[1][j] += a1 * wc[j];
                  acc[2][j] += a2 * wc[j];
                  acc[3][j] += a3 * wc[j];
                }
              }
            }
          const int oc0 = g * OCg + b * 16;
          const int cnt = OCg - b * 16 < 16 ? OCg - b * 16 : 16;
          for (int p = 0; p < 4 && ow0 + p < OW; ++p) {
            int32_t *restrict yo = y + (r * OW + ow0 + p) * OC + oc0;
            for (int j = 0; j < cnt; ++j) yo[j] = acc[p][j] + (bias ? bias[oc0 + j] : 0);
          }
        }
    }
  }
}

/* Integer depthwise convolution (one filter per channel): x padded int32
   [N][Hp][Wp][C], w [KH][KW][C] int32, bias int32 or NULL, y [N][OH][OW][C] int32. */
static void irc_depthwise_i32(const int32_t *restrict x, int N, int Hp, int Wp, int C,
                              const int32_t *restrict w, const int32_t *restrict bias,
                              int32_t *restrict y, int OH, int OW, int KH, int KW, int SH,
                              int SW, int DH, int DW) {
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * C * KH * KW;
  IRC_PARFOR(schedule(static) if (work > IRC_PARALLEL_WORK))
  for (long r = 0; r < rows; ++r) {
    const long n = r / OH, oh = r % OH;
    for (int ow = 0; ow < OW; ++ow) {
      int32_t *restrict yo = y + (r * OW + ow) * C;
      for (int c = 0; c < C; ++c) yo[c] = bias ? bias[c] : 0;
      for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw) {
          const int32_t *restrict xp =
              x + ((n * Hp + oh * SH + kh * DH) * Wp + (long)ow * SW + kw * DW) * C;
          const int32_t *restrict wp = w + ((long)kh * KW + kw) * C;
          for (int c = 0; c < C; ++c) yo[c] += xp[c] * wp[c];
        }
    }
  }
}
