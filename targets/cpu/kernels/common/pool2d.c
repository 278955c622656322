/* irc CPU kernels: snippet "pool2d" (targets/cpu/csrc.py puts it in a translation unit). */
#define IRC_POOL_PART_WORK 32768.0 /* window taps x channels per part of a split pooling */
/* Window taps x channels from which a pooling splits over the threads (~5 us of one core). */
#define IRC_POOL_PARALLEL_WORK 32768.0
/* Max (is_max) or average pooling, NHWC; windows clipped to the input (padding never wins
   the max; averages divide by the taps inside unless count_include_pad). Rows of output
   pixels split over the threads from IRC_POOL_PARALLEL_WORK (a pool reads its input once:
   it is worth splitting far sooner than a convolution). */
typedef struct {
  const float *x;
  float *y;
  int is_max, H, W, C, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, count_include_pad, act;
  long rows, parts;
} irc_pool2d_args;

/* One output pixel's channels [c0, c0 + n) (n <= IRC_VL) over its window, in a register:
   the same operations per lane, tap by tap, as the scalar definition (irc_maxf: a NaN
   operand wins; a sum from -0.0, +0.0 added when the window leaves the input, then divided). */
IRC_INLINE void irc_pool2d_vec(const irc_pool2d_args *restrict a, const float *restrict xn,
                               int oh, int ow, int c0, int n, float *restrict o) {
  const int H = a->H, W = a->W, C = a->C, KH = a->KH, KW = a->KW;
  /* -0.0 in every lane (the exact additive identity: +0.0 + -0.0 would be +0.0) */
  irc_vf acc = -(irc_vf){0.0f} - (a->is_max ? INFINITY : 0.0f);
  int count = 0;
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = oh * a->SH - a->PT + kh * a->DH;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = ow * a->SW - a->PL + kw * a->DW;
      if (iw < 0 || iw >= W) continue;
      const float *xi = xn + ((long)ih * W + iw) * C + c0;
      const irc_vf v = n == IRC_VL ? *(const irc_vfu *)xi : irc_vf_load_n(xi, n);
      ++count;
      if (a->is_max)
        acc = irc_vf_select((irc_vfi)(acc != acc) | (irc_vfi)(acc > v), acc, v);
      else
        acc += v;
    }
  }
  if (!a->is_max) {
    if (count < KH * KW) acc += 0.0f;
    acc = acc / (float)(a->count_include_pad ? KH * KW : count);
  }
  if (a->act != IRC_ACT_TANH) acc = irc_vf_act(acc, a->act);
  if (n == IRC_VL)
    *(irc_vfu *)o = acc;
  else
    irc_vf_store_n(o, acc, n);
  if (a->act == IRC_ACT_TANH)
    for (int j = 0; j < n; ++j) o[j] = tanhf(o[j]);
}

/* Output rows [r0, r1) (of N * OH) of irc_pool2d: every pixel in channel vectors. */
static void irc_pool2d_rows(const irc_pool2d_args *restrict a, long r0, long r1) {
  const int C = a->C, OH = a->OH, OW = a->OW;
  for (long r = r0; r < r1; ++r) {
    const int n = (int)(r / OH), oh = (int)(r % OH);
    const float *xn = a->x + (long)n * a->H * a->W * C;
    for (int ow = 0; ow < OW; ++ow) {
      float *o = a->y + (r * OW + ow) * C;
      int c0 = 0;
      for (; c0 + IRC_VL <= C; c0 += IRC_VL) irc_pool2d_vec(a, xn, oh, ow, c0, IRC_VL, o + c0);
      if (c0 < C) irc_pool2d_vec(a, xn, oh, ow, c0, C - c0, o + c0);
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
  const int threads = rows > 1 && work > IRC_POOL_PARALLEL_WORK ? irc_nthreads() : 1;
  const irc_pool2d_args a = {x,  y,  is_max, H,  W,  C,  OH, OW, KH, KW, SH, SW, DH, DW, PT, PL,
                             count_include_pad, act, rows,
                             irc_pool_parts(rows, work, IRC_POOL_PART_WORK, threads)};
  irc_parallel(irc_pool2d_part, &a, a.parts, threads);
}
