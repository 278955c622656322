/* irc CPU kernels: snippet "pool2d" (targets/cpu/csrc.py puts it in a translation unit). */
#define IRC_POOL_PART_WORK 250000.0 /* window taps x channels per part of a split pooling */
/* Max (is_max) or average pooling, NHWC; windows clipped to the input (padding never wins
   the max; averages divide by the taps inside unless count_include_pad). */
typedef struct {
  const float *x;
  float *y;
  int is_max, H, W, C, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, count_include_pad, act;
  long rows, parts;
} irc_pool2d_args;

/* Output rows [r0, r1) (of N * OH) of irc_pool2d. */
static void irc_pool2d_rows(const irc_pool2d_args *restrict a, long r0, long r1) {
  const float *restrict x = a->x;
  float *restrict y = a->y;
  const int is_max = a->is_max, H = a->H, W = a->W, C = a->C, OH = a->OH, OW = a->OW;
  const int KH = a->KH, KW = a->KW, SH = a->SH, SW = a->SW, DH = a->DH, DW = a->DW;
  const int PT = a->PT, PL = a->PL, count_include_pad = a->count_include_pad, act = a->act;
  for (long r = r0; r < r1; ++r) {
    const int n = (int)(r / OH), oh = (int)(r % OH);
    for (int ow = 0; ow < OW; ++ow) {
      float *restrict o = y + (r * OW + ow) * C;
      /* A sum starts at -0.0, the exact additive identity (+0.0 would turn a window of -0.0
         into +0.0); taps in the padding add +0.0 as the reference's padded sum does. */
      const float init = is_max ? -INFINITY : -0.0f;
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
        if (count < KH * KW)
          for (int c = 0; c < C; ++c) o[c] += 0.0f;
        const float d = (float)(count_include_pad ? KH * KW : count);
        for (int c = 0; c < C; ++c) o[c] = o[c] / d;
      }
      irc_epilogue(o, C, NULL, act);
    }
  }
}

static void irc_pool2d_part(const void *ctx, long part) {
  const irc_pool2d_args *a = (const irc_pool2d_args *)ctx;
  long r0, r1;
  irc_pool_range(part, a->parts, a->rows, &r0, &r1);
  irc_pool2d_rows(a, r0, r1);
}

static void irc_pool2d(int is_max, const float *restrict x, int N, int H, int W, int C,
                       float *restrict y, int OH, int OW, int KH, int KW, int SH, int SW, int DH,
                       int DW, int PT, int PL, int count_include_pad, int act) {
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * KH * KW * C;
  const int threads = rows > 1 && work > IRC_PARALLEL_WORK ? irc_nthreads() : 1;
  const irc_pool2d_args a = {x,  y,  is_max, H,  W,  C,  OH, OW, KH, KW, SH, SW, DH, DW, PT, PL,
                             count_include_pad, act, rows,
                             irc_pool_parts(rows, work, IRC_POOL_PART_WORK, threads)};
  irc_parallel(irc_pool2d_part, &a, a.parts, threads);
}
