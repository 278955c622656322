/* irc CPU kernels: snippet "conv_int" (targets/cpu/csrc.py puts it in a translation unit). */
/* The arguments of irc_conv2d_i32 and irc_depthwise_i32, and their split into parts (ranges
   of output rows). */
typedef struct {
  const int32_t *x, *w, *bias;
  int32_t *y;
  int N, Hp, Wp, C, OH, OW, OC, KH, KW, SH, SW, DH, DW, G, Cg, OCg;
  long parts;
} irc_conv_i32_args;

/* Rows of part `part` of irc_conv2d_i32 (and of irc_depthwise_i32: its fields G, Cg, OCg
   unused). */
IRC_INLINE void irc_conv_i32_rows(const irc_conv_i32_args *a, long part, long *r0, long *r1) {
  irc_pool_range(part, a->parts, (long)a->N * a->OH, r0, r1);
}

static void irc_conv2d_i32_part(const void *ctx, long part) {
  const irc_conv_i32_args *a = (const irc_conv_i32_args *)ctx;
  const int32_t *restrict x = a->x, *restrict w = a->w, *restrict bias = a->bias;
  int32_t *restrict y = a->y;
  const int Hp = a->Hp, Wp = a->Wp, C = a->C, OH = a->OH, OW = a->OW, OC = a->OC;
  const int KH = a->KH, KW = a->KW, SH = a->SH, SW = a->SW, DH = a->DH, DW = a->DW;
  const int G = a->G, Cg = a->Cg, OCg = a->OCg;
  const int nblk = (OCg + 15) / 16;
  long r0, r1;
  irc_conv_i32_rows(a, part, &r0, &r1);
  for (long r = r0; r < r1; ++r) {
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

/* Parts of an integer conv of `rows` output rows: one per IRC_LOOP_PART_WORK
   multiply-adds, at least 4 per thread (the pool's rule), over the threads from
   IRC_PARALLEL_WORK multiply-adds. */
static void irc_conv_i32_run(irc_task_fn fn, irc_conv_i32_args *a, double work) {
  const long rows = (long)a->N * a->OH;
  const int threads = work > IRC_PARALLEL_WORK ? irc_nthreads() : 1;
  a->parts = irc_pool_parts(rows, work, IRC_LOOP_PART_WORK * 16, threads);
  irc_parallel(fn, a, a->parts, threads);
}

/* Integer NHWC convolution accumulating exactly in int32 (the lower-quantized form: zero
   points already subtracted, so padding is 0): x [N][Hp][Wp][C] padded int32, w packed
   [G][ceil(OCg/16)][KH][KW][Cg][16] int32, bias int32 or NULL, y [N][OH][OW][OC] int32;
   output rows split over the library's pool. */
static void irc_conv2d_i32(const int32_t *restrict x, int N, int Hp, int Wp, int C,
                           const int32_t *restrict w, const int32_t *restrict bias,
                           int32_t *restrict y, int OH, int OW, int OC, int KH, int KW, int SH,
                           int SW, int DH, int DW, int G, int Cg, int OCg) {
  irc_conv_i32_args a = {x,  w,  bias, y,  N,  Hp, Wp, C, OH,  OW,  OC,
                         KH, KW, SH,   SW, DH, DW, G,  Cg, OCg, 0};
  irc_conv_i32_run(irc_conv2d_i32_part, &a, (double)N * OH * OW * OC * KH * KW * Cg);
}

static void irc_depthwise_i32_part(const void *ctx, long part) {
  const irc_conv_i32_args *a = (const irc_conv_i32_args *)ctx;
  const int32_t *restrict x = a->x, *restrict w = a->w, *restrict bias = a->bias;
  int32_t *restrict y = a->y;
  const int Hp = a->Hp, Wp = a->Wp, C = a->C, OH = a->OH, OW = a->OW;
  const int KH = a->KH, KW = a->KW, SH = a->SH, SW = a->SW, DH = a->DH, DW = a->DW;
  long r0, r1;
  irc_conv_i32_rows(a, part, &r0, &r1);
  for (long r = r0; r < r1; ++r) {
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

/* Integer depthwise convolution (one filter per channel): x padded int32
   [N][Hp][Wp][C], w [KH][KW][C] int32, bias int32 or NULL, y [N][OH][OW][C] int32; output
   rows split over the library's pool. */
static void irc_depthwise_i32(const int32_t *restrict x, int N, int Hp, int Wp, int C,
                              const int32_t *restrict w, const int32_t *restrict bias,
                              int32_t *restrict y, int OH, int OW, int KH, int KW, int SH,
                              int SW, int DH, int DW) {
  irc_conv_i32_args a = {x,  w,  bias, y,  N,  Hp, Wp, C, OH, OW, C,
                         KH, KW, SH,   SW, DH, DW, 1,  C, C,  0};
  irc_conv_i32_run(irc_depthwise_i32_part, &a, (double)N * OH * OW * C * KH * KW);
}
