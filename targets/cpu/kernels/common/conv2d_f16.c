/* irc CPU kernels: snippet "conv2d_f16" (targets/cpu/lowerings/binary16.py): float16 convolutions.
   Tensors are float16 (IEEE binary16 bits, uint16_t), NHWC; filters float16, packed at compile
   time; the bias float32 (the model's float16 bias, widened exactly). Arithmetic is float32:
   inputs and weights are widened on load (f16.c: vcvtph2ps of whole vectors where the ISA
   profile has F16C), products summed in float32 registers, and each result rounded once to
   float16 on store (vcvtps2ph, nearest even, as numpy's astype(float16)) after the bias and
   the fused activation: docs/semantics.md's float16 rule, the reference's sums (+0.0 start for
   a convolution, -0.0 for a depthwise one, taps in order, zero padding summed as +0.0).

   irc_conv2d_f16 is the implicit GEMM of conv2d.c with float16 storage: the register tile of
   the ISA profile (IRC_CONV_F32_MR pixels x IRC_CONV_F32_NR channels) reads a float32 copy of
   its task's input window (the task's pixels x taps x channels, widened once per task for all
   its channel blocks, zero padding written there: no padded copy of the input) and, where a task has
   enough pixels to reuse them, a float32 copy of the slice's weight panel (converted once per
   task); with few pixels (fully connected layers at batch 1) each weight vector is widened in
   the loop, so the weights are read from memory once, at half the bytes of float32.
   irc_depthwise_f16 widens the input rows a band of output rows reads (zero padding included)
   and its channels' taps once per task, then sums register tiles of IRC_DWH_MR pixels. */
#ifndef IRC_CONV_F32_MR
#define IRC_CONV_F32_MR 8
#endif
#ifndef IRC_CONV_F32_NR
#define IRC_CONV_F32_NR (2 * IRC_VL)
#endif
#define IRC_CH_MR IRC_CONV_F32_MR
#define IRC_CH_NR IRC_CONV_F32_NR
#define IRC_CH_PART_WORK 250000.0   /* multiply-adds per part of a split conv */
#define IRC_CH_PANEL_FLOATS 65536   /* the largest weight panel copied to float32 (256 KiB) */
#define IRC_CH_WINDOW_FLOATS 262144 /* the largest widened input window of a task (1 MiB) */
#define IRC_DWH_MR 8                /* depthwise output pixels per register tile */
#define IRC_DWH_BAND_BYTES 98304    /* widened input rows of a depthwise task (96 KiB) */
#define IRC_DWH_PARALLEL_WORK 50000.0

/* out[0 .. n) = in[0 .. n) widened, a whole vector (irc_vf_load_h: 16 values per vcvtph2ps
   on AVX-512) at a time. */
IRC_INLINE void irc_ch_widen(const uint16_t *restrict in, float *restrict out, long n) {
  long i = 0;
  for (; i + IRC_VL <= n; i += IRC_VL) *(irc_vfu *)(out + i) = irc_vf_load_h(in + i);
  if (i < n) irc_vf_store_n(out + i, irc_vf_load_hn(in + i, (int)(n - i)), (int)(n - i));
}

/* y = act(acc + bias) for vector v of MR_ rows of sums, rounded to float16 and stored to y
   (rows ys_pix apart, nvalid valid lanes from the tile's first channel); tanh is applied
   lane by lane. */
IRC_INLINE void irc_ch_epilogue(const int MR_, const int v, irc_vf acc[][2], uint16_t *restrict y,
                                long ys_pix, int nvalid, const float *restrict bias, int act) {
  const int n = nvalid - IRC_VL * v < IRC_VL ? nvalid - IRC_VL * v : IRC_VL;
  if (n <= 0) return;
  if (bias) {
    const float *bp = bias + IRC_VL * v;
    const irc_vf bv = n == IRC_VL ? *(const irc_vfu *)bp : irc_vf_load_n(bp, n);
    for (int m = 0; m < MR_; ++m) acc[m][v] += bv;
  }
  if (act == IRC_ACT_TANH) {
    for (int m = 0; m < MR_; ++m)
      for (int j = 0; j < IRC_VL; ++j) acc[m][v][j] = tanhf(acc[m][v][j]);
  } else if (act != IRC_ACT_NONE) {
    for (int m = 0; m < MR_; ++m) acc[m][v] = irc_vf_act(acc[m][v], act);
  }
  uint16_t *o = y + IRC_VL * v;
  if (n == IRC_VL)
    for (int m = 0; m < MR_; ++m) irc_vf_store_h(o + m * ys_pix, acc[m][v]);
  else
    for (int m = 0; m < MR_; ++m) irc_vf_store_hn(o + m * ys_pix, acc[m][v], n);
}

/* MR_ output pixels x TV vectors of channels, summed over KH x KW x Cg from +0.0. xw: the
   float32 window (pixel m, tap (kh, kw), channel c at m * xs_pix + kh * xs_h + kw * xs_w + c);
   HALF_W: the weights are float16 rows `wh` (widened here), else float32 rows `wf`; rows are
   ws floats / halves apart, one per (tap, input channel). */
IRC_INLINE void irc_ch_tile(const int MR_, const int TV, const int HALF_W, const float *restrict xw,
                            long xs_pix, long xs_h, long xs_w, int KH, int KW, int Cg,
                            const uint16_t *restrict wh, const float *restrict wf, long ws,
                            uint16_t *restrict y, long ys_pix, int nvalid,
                            const float *restrict bias, int act) {
  irc_vf acc[IRC_CH_MR][2];
  for (int m = 0; m < MR_; ++m)
    for (int v = 0; v < TV; ++v) acc[m][v] = (irc_vf){0.0f};
  if (xs_w == Cg) { /* a row's taps are one run of the window and of the weights */
    Cg *= KW;
    KW = 1;
  }
  for (int kh = 0; kh < KH; ++kh)
    for (int kw = 0; kw < KW; ++kw) {
      const float *restrict xt = xw + kh * xs_h + kw * xs_w;
      const long r0 = (long)(kh * KW + kw) * Cg;
      for (int c = 0; c < Cg; ++c) {
        irc_vf b0, b1;
        if (HALF_W) {
          const uint16_t *restrict wr = wh + (r0 + c) * ws;
          b0 = irc_vf_load_h(wr);
          b1 = TV > 1 ? irc_vf_load_h(wr + IRC_VL) : b0;
        } else {
          const float *restrict wr = wf + (r0 + c) * ws;
          b0 = *(const irc_vfu *)wr;
          b1 = TV > 1 ? *(const irc_vfu *)(wr + IRC_VL) : b0;
        }
        for (int m = 0; m < MR_; ++m) {
          const float a = xt[m * xs_pix + c];
          acc[m][0] += a * b0;
          if (TV > 1) acc[m][1] += a * b1;
        }
      }
    }
  irc_ch_epilogue(MR_, 0, acc, y, ys_pix, nvalid, bias, act);
  if (TV > 1) irc_ch_epilogue(MR_, 1, acc, y, ys_pix, nvalid, bias, act);
}

/* The arguments of irc_conv2d_f16 and its split into tasks. */
typedef struct {
  const uint16_t *x, *w;
  const float *bias;
  uint16_t *y;
  int H, W, C, OH, OW, OC, KH, KW, SH, SW, DH, DW, PT, PL, Cg, OCg, act, nchunk, chunk, NV;
  long ptasks, blocks, nsplit, tasks, parts;
} irc_conv2d_f16_args;

/* The float32 window of output pixels [ow, ow + np) of row (n, oh): KH rows of `span` input
   columns x C channels (every group's), zero outside the input. */
IRC_INLINE void irc_ch_window(const irc_conv2d_f16_args *restrict a, float *restrict xw, int n,
                              int oh, int ow, int span) {
  const int C = a->C;
  for (int kh = 0; kh < a->KH; ++kh) {
    float *restrict row = xw + (long)kh * span * C;
    const int ih = oh * a->SH - a->PT + kh * a->DH;
    const int iw0 = ow * a->SW - a->PL;
    if (ih < 0 || ih >= a->H) {
      memset(row, 0, sizeof(float) * (size_t)span * C);
      continue;
    }
    const uint16_t *restrict src = a->x + ((long)n * a->H + ih) * a->W * C;
    const int j0 = iw0 < 0 ? -iw0 : 0, j1 = a->W - iw0 < span ? a->W - iw0 : span;
    if (j0 > 0) memset(row, 0, sizeof(float) * (size_t)j0 * C);
    if (j1 > j0) irc_ch_widen(src + (long)(iw0 + j0) * C, row + (long)j0 * C, (long)(j1 - j0) * C);
    if (j1 < span) {
      const int k = j1 > j0 ? j1 : j0;
      memset(row + (long)k * C, 0, sizeof(float) * (size_t)(span - k) * C);
    }
  }
}

/* Pixels [ow0, ow1) of output row `row`, channel blocks [blk0, blk1): the pixels' input
   window widened once, then per channel slice its weight panel (when the pixels are enough
   to reuse it) and the register tiles. */
static void irc_ch_task(const irc_conv2d_f16_args *restrict a, long row, int ow0, int ow1,
                        long blk0, long blk1) {
  const int NB = 16 * a->NV;
  const int SL = NB < IRC_CH_NR ? NB : IRC_CH_NR;
  const int KH = a->KH, KW = a->KW, C = a->C, Cg = a->Cg, OCg = a->OCg, OC = a->OC;
  const int nblk = (OCg + NB - 1) / NB;
  const long rows = (long)KH * KW * Cg, wblk = rows * NB;
  const int oh = (int)(row % a->OH), n = (int)(row / a->OH);
  const int span = (ow1 - ow0 - 1) * a->SW + (KW - 1) * a->DW + 1;
  const long xs_pix = (long)a->SW * C, xs_w = (long)a->DW * C, xs_h = (long)span * C;
  float xw[(long)KH * span * C];
  const int panel = ow1 - ow0 >= 2 * IRC_CH_MR && rows * SL <= IRC_CH_PANEL_FLOATS;
  float wf[panel ? rows * SL : 1];
  uint16_t *restrict yrow = a->y + row * a->OW * OC;
  irc_ch_window(a, xw, n, oh, ow0, span);
  for (long gb = blk0; gb < blk1; ++gb) {
    const int g = (int)(gb / nblk), b = (int)(gb % nblk);
    for (int s = 0; s < NB; s += SL) {
      const int left = OCg - b * NB - s;
      if (left <= 0) break;
      const int nvalid = left < SL ? left : SL;
      const int oc0 = g * OCg + b * NB + s;
      const uint16_t *restrict wh = a->w + gb * wblk + s;
      const float *restrict bb = a->bias ? a->bias + oc0 : NULL;
      if (panel)
        for (long r = 0; r < rows; ++r)
          for (int v = 0; v < SL; v += IRC_VL)
            *(irc_vfu *)(wf + r * SL + v) = irc_vf_load_h(wh + r * NB + v);
      int ow = ow0;
      while (ow < ow1) {
        const int mr = ow1 - ow >= IRC_CH_MR ? IRC_CH_MR : ow1 - ow >= IRC_CH_MR / 2 ? IRC_CH_MR / 2 : 1;
        const float *restrict xt = xw + (long)(ow - ow0) * xs_pix + (long)g * Cg;
        uint16_t *restrict o = yrow + (long)ow * OC + oc0;
#define IRC_CH_CALL(MR_, TV, HW)                                                             \
  irc_ch_tile(MR_, TV, HW, xt, xs_pix, xs_h, xs_w, KH, KW, Cg, wh, wf, HW ? NB : SL, o, OC, \
              nvalid, bb, a->act)
#define IRC_CH_TV(MR_)                                                \
  do {                                                                \
    if (SL == 2 * IRC_VL) {                                           \
      if (panel) IRC_CH_CALL(MR_, 2, 0); else IRC_CH_CALL(MR_, 2, 1); \
    } else {                                                          \
      if (panel) IRC_CH_CALL(MR_, 1, 0); else IRC_CH_CALL(MR_, 1, 1); \
    }                                                                 \
  } while (0)
        if (mr == IRC_CH_MR)
          IRC_CH_TV(IRC_CH_MR);
        else if (mr == IRC_CH_MR / 2)
          IRC_CH_TV(IRC_CH_MR / 2);
        else
          IRC_CH_TV(1);
#undef IRC_CH_TV
#undef IRC_CH_CALL
        ow += mr;
      }
    }
  }
}

static void irc_conv2d_f16_part(const void *args, long part) {
  const irc_conv2d_f16_args *restrict a = args;
  long t0, t1;
  irc_pool_range(part, a->parts, a->tasks, &t0, &t1);
  for (long t = t0; t < t1; ++t) {
    const long s = t / a->ptasks, p = t % a->ptasks;
    const long row = p / a->nchunk;
    const int ow0 = (int)(p % a->nchunk) * a->chunk;
    const int ow1 = ow0 + a->chunk < a->OW ? ow0 + a->chunk : a->OW;
    if (ow0 >= ow1) continue;
    irc_ch_task(a, row, ow0, ow1, s * a->blocks / a->nsplit, (s + 1) * a->blocks / a->nsplit);
  }
}

/* y[N][OH][OW][OC] = f16(act(conv(x[N][H][W][C], zero padding PT/PL/...) + bias)), groups G
   (Cg = C / G, OCg = OC / G); w packed [G][OCg/NB][KH][KW][Cg][NB] (NB = 16 * NV) as float16,
   bias float32 or NULL. Tasks: chunks of up to 64 pixels of an output row (an unpadded
   pointwise conv: one row of all its pixels) times, where they are too few for the threads,
   ranges of channel blocks (irc_conv2d's split). */
static void irc_conv2d_f16(int NV, const uint16_t *restrict x, int N, int H, int W, int C,
                           const uint16_t *restrict w, const float *restrict bias,
                           uint16_t *restrict y, int OH, int OW, int OC, int KH, int KW, int SH,
                           int SW, int DH, int DW, int PT, int PL, int G, int Cg, int OCg,
                           int act) {
  if (KH == 1 && KW == 1 && SH == 1 && SW == 1 && PT == 0 && PL == 0 && H == OH && W == OW) {
    OW = N * OH * OW, W = OW, N = 1, OH = 1, H = 1;
  }
  const int NB = 16 * NV;
  const long blocks = (long)G * ((OCg + NB - 1) / NB);
  /* chunks of at most 8 tiles whose widened window stays within IRC_CH_WINDOW_FLOATS */
  long fit = ((long)IRC_CH_WINDOW_FLOATS / ((long)KH * C) - (long)(KW - 1) * DW - 1) / SW + 1;
  fit = fit < IRC_CH_MR ? (fit < 1 ? 1 : fit) : fit / IRC_CH_MR * IRC_CH_MR;
  const int most = 8 * IRC_CH_MR < fit ? 8 * IRC_CH_MR : (int)fit;
  const int nchunk = (OW + most - 1) / most;
  const int per = (OW + nchunk - 1) / nchunk;
  const int chunk = most < IRC_CH_MR ? most : (per + IRC_CH_MR - 1) / IRC_CH_MR * IRC_CH_MR;
  const long ptasks = (long)N * OH * nchunk;
  const double work = (double)N * OH * OW * KH * KW * Cg * OC;
  const int threads = work > IRC_PARALLEL_CONV_WORK ? irc_nthreads() : 1;
  const long want = irc_pool_parts(ptasks * blocks, work, IRC_CH_PART_WORK, threads);
  long nsplit = 1;
  if (ptasks < want)
    nsplit = (want + ptasks - 1) / ptasks < blocks ? (want + ptasks - 1) / ptasks : blocks;
  const long tasks = ptasks * nsplit;
  const irc_conv2d_f16_args a = {x,  w,  bias, y,  H,  W,  C,    OH,     OW,     OC,
                                 KH, KW, SH,   SW, DH, DW, PT,   PL,     Cg,     OCg,
                                 act, nchunk, chunk, NV, ptasks, blocks, nsplit, tasks,
                                 irc_pool_parts(tasks, work, IRC_CH_PART_WORK, threads)};
  irc_parallel(irc_conv2d_f16_part, &a, a.parts, threads);
}

/* ---- Depthwise --------------------------------------------------------------------------- */

typedef struct {
  const uint16_t *x, *w;
  const float *bias;
  uint16_t *y;
  int H, W, C, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, act, cblocks, band, nbands;
  long tasks, parts;
} irc_depthwise_f16_args;

/* Output rows [oh0, oh1) of image n, channels [IRC_VL * cb, +IRC_VL): the input rows they
   read widened once (zero padding included, IRC_VL floats per column), the taps widened once,
   then tiles of IRC_DWH_MR pixels summed from -0.0 over the taps in order. */
static void irc_dwh_task(const irc_depthwise_f16_args *restrict a, int n, int oh0, int oh1,
                         int cb) {
  const int KH = a->KH, KW = a->KW, C = a->C, OW = a->OW, SW = a->SW, DW = a->DW;
  const int SH = a->SH, DH = a->DH;
  const int c0 = IRC_VL * cb, nl = C - c0 < IRC_VL ? C - c0 : IRC_VL;
  const int wb = (OW - 1) * SW + (KW - 1) * DW + 1; /* input columns a row reads */
  const int nr = (oh1 - oh0 - 1) * SH + (KH - 1) * DH + 1; /* input rows the band reads */
  const int ih0 = oh0 * SH - a->PT;
  irc_vf wv[KH * KW], xr[(long)nr * wb];
  for (int t = 0; t < KH * KW; ++t)
    wv[t] = nl == IRC_VL ? irc_vf_load_h(a->w + (long)t * C + c0)
                         : irc_vf_load_hn(a->w + (long)t * C + c0, nl);
  const irc_vf zero = {0.0f};
  for (int r = 0; r < nr; ++r) {
    const int ih = ih0 + r;
    irc_vf *restrict dst = xr + (long)r * wb;
    if (ih < 0 || ih >= a->H) {
      for (int j = 0; j < wb; ++j) dst[j] = zero;
      continue;
    }
    const uint16_t *restrict src = a->x + (((long)n * a->H + ih) * a->W) * C + c0;
    for (int j = 0; j < wb; ++j) {
      const int iw = j - a->PL;
      if (iw < 0 || iw >= a->W)
        dst[j] = zero;
      else
        dst[j] = nl == IRC_VL ? irc_vf_load_h(src + (long)iw * C)
                              : irc_vf_load_hn(src + (long)iw * C, nl);
    }
  }
  irc_vf bv = -(irc_vf){0.0f};
  if (a->bias) bv = nl == IRC_VL ? *(const irc_vfu *)(a->bias + c0) : irc_vf_load_n(a->bias + c0, nl);
  for (int oh = oh0; oh < oh1; ++oh) {
    const irc_vf *restrict xrow = xr + (long)(oh - oh0) * SH * wb;
    uint16_t *restrict yrow = a->y + (((long)n * a->OH + oh) * OW) * C + c0;
    for (int ow = 0; ow < OW; ow += IRC_DWH_MR) {
      const int mr = OW - ow < IRC_DWH_MR ? OW - ow : IRC_DWH_MR;
      irc_vf acc[IRC_DWH_MR];
      for (int m = 0; m < IRC_DWH_MR; ++m) acc[m] = -(irc_vf){0.0f};
      if (KW == 3 && DW == 1 && SW == 1 && mr == IRC_DWH_MR) {
        /* 3 taps a row at stride 1: each widened column is loaded once for the (up to) three
           pixels that read it (the same sums in the same order) */
        for (int kh = 0; kh < KH; ++kh) {
          const irc_vf *restrict xt = xrow + (long)kh * DH * wb + ow;
          const irc_vf w0 = wv[kh * 3], w1 = wv[kh * 3 + 1], w2 = wv[kh * 3 + 2];
          for (int j = 0; j < IRC_DWH_MR + 2; ++j) {
            const irc_vf xv = xt[j];
            if (j < IRC_DWH_MR) acc[j] += xv * w0;
            if (j >= 1 && j - 1 < IRC_DWH_MR) acc[j - 1] += xv * w1;
            if (j >= 2) acc[j - 2] += xv * w2;
          }
        }
      } else
      for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw) {
          const irc_vf w = wv[kh * KW + kw];
          const irc_vf *restrict xt = xrow + (long)kh * DH * wb + kw * DW + (long)ow * SW;
          if (mr == IRC_DWH_MR)
            for (int m = 0; m < IRC_DWH_MR; ++m) acc[m] += xt[m * SW] * w;
          else
            for (int m = 0; m < mr; ++m) acc[m] += xt[m * SW] * w;
        }
      for (int m = 0; m < mr; ++m) {
        irc_vf r = acc[m] + bv;
        if (a->act == IRC_ACT_TANH)
          for (int j = 0; j < IRC_VL; ++j) r[j] = tanhf(r[j]);
        else if (a->act != IRC_ACT_NONE)
          r = irc_vf_act(r, a->act);
        uint16_t *o = yrow + (long)(ow + m) * C;
        if (nl == IRC_VL)
          irc_vf_store_h(o, r);
        else
          irc_vf_store_hn(o, r, nl);
      }
    }
  }
}

/* Task t: channel block t % cblocks of band (t / cblocks) % nbands of image t / (cblocks *
   nbands). */
static void irc_depthwise_f16_part(const void *args, long part) {
  const irc_depthwise_f16_args *restrict a = args;
  long t0, t1;
  irc_pool_range(part, a->parts, a->tasks, &t0, &t1);
  for (long t = t0; t < t1; ++t) {
    const int cb = (int)(t % a->cblocks);
    const long nb = t / a->cblocks;
    const int band = (int)(nb % a->nbands), n = (int)(nb / a->nbands);
    const int oh0 = band * a->band, oh1 = oh0 + a->band < a->OH ? oh0 + a->band : a->OH;
    if (oh0 < oh1) irc_dwh_task(a, n, oh0, oh1, cb);
  }
}

/* y[N][OH][OW][C] = f16(act(depthwise(x[N][H][W][C], zero padding) + bias)); w packed
   [KH][KW][C] as float16, bias float32 or NULL. Tasks: (image, band of output rows whose
   widened input rows fit IRC_DWH_BAND_BYTES, IRC_VL channels). */
static void irc_depthwise_f16(const uint16_t *restrict x, int N, int H, int W, int C,
                              const uint16_t *restrict w, const float *restrict bias,
                              uint16_t *restrict y, int OH, int OW, int KH, int KW, int SH,
                              int SW, int DH, int DW, int PT, int PL, int act) {
  const int cblocks = (C + IRC_VL - 1) / IRC_VL;
  const long row_bytes = (long)((OW - 1) * SW + (KW - 1) * DW + 1) * IRC_VL * 4;
  long band = ((long)IRC_DWH_BAND_BYTES / row_bytes - (long)(KH - 1) * DH - 1) / SH + 1;
  band = band < 1 ? 1 : band > OH ? OH : band;
  const double work = (double)N * OH * OW * C * KH * KW;
  const int threads = work > IRC_DWH_PARALLEL_WORK ? irc_nthreads() : 1;
  /* enough tasks for the threads: at least 4 per thread where the image allows */
  while (band > 1 && (long)N * ((OH + band - 1) / band) * cblocks < 4L * threads) band = (band + 1) / 2;
  const int nbands = (int)((OH + band - 1) / band);
  const long tasks = (long)N * nbands * cblocks;
  const irc_depthwise_f16_args a = {x,  w,  bias, y,  H,  W,  C,   OH,      OW,       KH,
                                    KW, SH, SW,   DH, DW, PT, PL,  act,     cblocks, (int)band,
                                    nbands, tasks,
                                    irc_pool_parts(tasks, work, IRC_CH_PART_WORK, threads)};
  irc_parallel(irc_depthwise_f16_part, &a, a.parts, threads);
}
