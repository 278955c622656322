/* irc CPU kernels: snippet "resize" (targets/cpu/csrc.py puts it in a translation unit). */
/* Output bytes per part of a split resize, and from which a resize splits its output rows
   over the threads (~5 us of one core: a resize writes its output once). */
#define IRC_RESIZE_PART_BYTES 32768.0
#define IRC_RESIZE_PARALLEL_BYTES 65536.0

/* The arguments of both resizes: output row r (of N * OH) reads input rows lo[r % OH] and
   hi[r % OH] (nearest: lo only) of image r / OH. */
typedef struct {
  const float *x;
  float *y;
  int H, W, C, OH, OW;
  const int *hl, *hh, *wl, *wh;
  const float *hw, *ww;
  long rows, parts;
} irc_resize_args;

/* The parts of `rows` output rows of `row_bytes` each for irc_parallel. */
IRC_INLINE void irc_resize_split(irc_resize_args *a, long row_bytes, int *threads) {
  const double bytes = (double)a->rows * row_bytes;
  *threads = a->rows > 1 && bytes > IRC_RESIZE_PARALLEL_BYTES ? irc_nthreads() : 1;
  a->parts = irc_pool_parts(a->rows, bytes, IRC_RESIZE_PART_BYTES, *threads);
}

static void irc_resize_nearest_part(const void *ctx, long part) {
  const irc_resize_args *a = (const irc_resize_args *)ctx;
  const int H = a->H, W = a->W, C = a->C, OH = a->OH, OW = a->OW;
  long r0, r1;
  irc_pool_range(part, a->parts, a->rows, &r0, &r1);
  for (long r = r0; r < r1; ++r) {
    const float *xr = a->x + ((r / OH) * H + a->hl[r % OH]) * (long)W * C;
    float *yr = a->y + r * OW * (long)C;
    for (int ow = 0; ow < OW; ++ow)
      memcpy(yr + (long)ow * C, xr + (long)a->wl[ow] * C, sizeof(float) * (size_t)C);
  }
}

/* Nearest-neighbour resize, NHWC: output (oh, ow) copies input (hi[oh], wi[ow]); output
   rows split over the threads when the output is big enough. */
static void irc_resize_nearest(const float *restrict x, int N, int H, int W, int C,
                               float *restrict y, int OH, int OW, const int *restrict hi,
                               const int *restrict wi) {
  irc_resize_args a = {x, y, H, W, C, OH, OW, hi, NULL, wi, NULL, NULL, NULL, (long)N * OH, 1};
  int threads;
  irc_resize_split(&a, (long)OW * C * (long)sizeof(float), &threads);
  irc_parallel(irc_resize_nearest_part, &a, a.parts, threads);
}

static void irc_resize_bilinear_part(const void *ctx, long part) {
  const irc_resize_args *a = (const irc_resize_args *)ctx;
  const int H = a->H, W = a->W, C = a->C, OH = a->OH, OW = a->OW;
  long r0, r1;
  irc_pool_range(part, a->parts, a->rows, &r0, &r1);
  for (long r = r0; r < r1; ++r) {
    const long n = r / OH, oh = r % OH;
    const float *restrict r0p = a->x + (n * H + a->hl[oh]) * (long)W * C;
    const float *restrict r1p = a->x + (n * H + a->hh[oh]) * (long)W * C;
    const float fh = a->hw[oh];
    for (int ow = 0; ow < OW; ++ow) {
      const float fw = a->ww[ow];
      const long l = (long)a->wl[ow] * C, h = (long)a->wh[ow] * C;
      const float *restrict a0 = r0p + l, *restrict b0 = r1p + l;
      const float *restrict a1 = r0p + h, *restrict b1 = r1p + h;
      float *restrict o = a->y + (r * OW + ow) * C;
      for (int c = 0; c < C; ++c) {
        const float lo = a0[c] + (b0[c] - a0[c]) * fh;
        const float hi = a1[c] + (b1[c] - a1[c]) * fh;
        o[c] = lo + (hi - lo) * fw;
      }
    }
  }
}

/* Bilinear resize, NHWC, interpolating along H first and then along W (the reference's
   order): a + (b - a) * weight with low/high input indices per output row and column;
   output rows split over the threads when the output is big enough. */
static void irc_resize_bilinear(const float *restrict x, int N, int H, int W, int C,
                                float *restrict y, int OH, int OW, const int *restrict hl,
                                const int *restrict hh, const float *restrict hw,
                                const int *restrict wl, const int *restrict wh,
                                const float *restrict ww) {
  irc_resize_args a = {x, y, H, W, C, OH, OW, hl, hh, wl, wh, hw, ww, (long)N * OH, 1};
  int threads;
  irc_resize_split(&a, (long)OW * C * (long)sizeof(float), &threads);
  irc_parallel(irc_resize_bilinear_part, &a, a.parts, threads);
}
