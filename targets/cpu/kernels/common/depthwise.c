/* irc CPU kernels: snippet "depthwise" (targets/cpu/csrc.py puts it in a translation unit). */
#ifndef IRC_DEPTHWISE_F32_MR
#define IRC_DEPTHWISE_F32_MR 8 /* output pixels per register tile (the ISA profile's) */
#endif
#define IRC_DW_MR IRC_DEPTHWISE_F32_MR
#define IRC_PARALLEL_DW_WORK 50000.0 /* depthwise taps x channels below which one thread */

/* -0.0 in every lane: the exact additive identity, where float sums start (the sum of
   products that are all -0.0 is -0.0, as the reference's; +0.0 + -0.0 would be +0.0). A
   compound literal `{-0.0f}` would set lane 0 only. */
#ifndef IRC_VF_NEG_ZERO
#define IRC_VF_NEG_ZERO (-(irc_vf){0.0f})
#endif

/* *s += (+0.0) * w for the taps [kw0, kw1) of the tap row w (NL channels). */
IRC_INLINE void irc_dw_pad_taps(const int NL, irc_vf *restrict s, const float *restrict w,
                                 int C, int kw0, int kw1) {
  const irc_vf zero = {0.0f};
  for (int kw = kw0; kw < kw1; ++kw) {
    const float *restrict wt = w + (long)kw * C;
    *s += zero * (NL == IRC_VL ? *(const irc_vfu *)wt : irc_vf_load_n(wt, NL));
  }
}
/* Where the sums of NL channels start when the taps outside rows [kh_lo, kh_hi) or columns
   [kw_lo, kw_hi) fall in the zero padding, which the kernels skip: -0.0 plus their products
   (+0.0) * w, as the reference's sum over the zero-padded input has them. Each is +-0.0
   (NaN for an infinite weight): a nonzero sum is the same, a zero sum gets the reference's
   sign. w: the channels' weights of tap (0, 0), in rows of KW * C. */
IRC_INLINE irc_vf irc_dw_start(const int NL, const float *restrict w, int KH, int KW, int C,
                               int kh_lo, int kh_hi, int kw_lo, int kw_hi) {
  irc_vf s = IRC_VF_NEG_ZERO;
  if (kh_lo == 0 && kh_hi == KH && kw_lo == 0 && kw_hi == KW) return s; /* nothing skipped */
  for (int kh = 0; kh < KH; ++kh) {
    const float *restrict wr = w + (long)kh * KW * C;
    if (kh < kh_lo || kh >= kh_hi) {
      irc_dw_pad_taps(NL, &s, wr, C, 0, KW);
    } else {
      irc_dw_pad_taps(NL, &s, wr, C, 0, kw_lo);
      irc_dw_pad_taps(NL, &s, wr, C, kw_hi, KW);
    }
  }
  return s;
}

/* MR_ output pixels x NL (1..IRC_VL) channels of a depthwise conv, accumulated in registers
   from `start` over nkh x nkw taps, then y = vact(acc + bias); x: input of pixel 0 at the
   first tap, w: that
   tap's weights of the IRC_VL channels; xs_*: floats between pixels / tap rows / tap columns,
   ws_h / ws_w: between the weights of tap rows / tap columns. */
IRC_INLINE void irc_dw_tile_n(const int MR_, const int NL, const float *restrict x, long xs_pix,
                              long xs_h, long xs_w, int nkh, int nkw, const float *restrict w,
                              long ws_h, long ws_w, float *restrict y, long ys_pix,
                              irc_vf start, irc_vf bias, int vact) {
  irc_vf acc[IRC_DW_MR];
  for (int m = 0; m < MR_; ++m) acc[m] = start;
  for (int kh = 0; kh < nkh; ++kh)
    for (int kw = 0; kw < nkw; ++kw) {
      const float *restrict wt = w + kh * ws_h + kw * ws_w;
      const irc_vf wv = NL == IRC_VL ? *(const irc_vfu *)wt : irc_vf_load_n(wt, NL);
      const float *restrict xt = x + kh * xs_h + kw * xs_w;
      for (int m = 0; m < MR_; ++m)
        acc[m] += (NL == IRC_VL ? *(const irc_vfu *)(xt + m * xs_pix)
                            : irc_vf_load_n(xt + m * xs_pix, NL)) * wv;
    }
  for (int m = 0; m < MR_; ++m) {
    const irc_vf r = irc_vf_act(acc[m] + bias, vact);
    if (NL == IRC_VL)
      *(irc_vfu *)(y + m * ys_pix) = r;
    else
      irc_vf_store_n(y + m * ys_pix, r, NL);
  }
}

/* irc_dw_tile_n on all IRC_VL lanes. */
IRC_INLINE void irc_dw_tile(const int MR_, const float *restrict x, long xs_pix, long xs_h,
                            long xs_w, int nkh, int nkw, const float *restrict w, long ws_h,
                            long ws_w, float *restrict y, long ys_pix, irc_vf start, irc_vf bias,
                            int vact) {
  irc_dw_tile_n(MR_, IRC_VL, x, xs_pix, xs_h, xs_w, nkh, nkw, w, ws_h, ws_w, y, ys_pix, start,
                bias, vact);
}

/* irc_dw_tile for 3 taps per row, dilation 1, stride SW_ (constant after inlining): each
   input column of a tap row is loaded once and feeds every (pixel, tap) that reads it
   (MR_ + 2 loads per row at stride 1 instead of 3 * MR_; the tile was bound on its loads,
   most of all with 8-lane vectors: stride-1 3x3 depthwise +5-10 % on AVX-512, +10-20 % on
   AVX2, Xeon @ 2.50GHz, CPU time; the same sums in the same order). Used at stride 1 only:
   at stride 2 (17 columns for 8 pixels) it measured 25-40 % slower than irc_dw_tile.
   xs_col: floats between input columns. */
IRC_INLINE void irc_dw_tile3(const int MR_, const int SW_, const float *restrict x, long xs_col,
                             long xs_h, int nkh, const float *restrict w, long ws_h,
                             long ws_w, float *restrict y, long ys_pix, irc_vf start,
                             irc_vf bias, int vact) {
  irc_vf acc[IRC_DW_MR];
  for (int m = 0; m < MR_; ++m) acc[m] = start;
  for (int kh = 0; kh < nkh; ++kh) {
    const float *restrict xt = x + kh * xs_h;
    const float *restrict wt = w + kh * ws_h;
    const irc_vf w0 = *(const irc_vfu *)wt, w1 = *(const irc_vfu *)(wt + ws_w);
    const irc_vf w2 = *(const irc_vfu *)(wt + 2 * ws_w);
    for (int j = 0; j < SW_ * (MR_ - 1) + 3; ++j) {
      const irc_vf xv = *(const irc_vfu *)(xt + j * xs_col);
      if (j % SW_ == 0 && j / SW_ < MR_) acc[j / SW_] += xv * w0;
      if (j >= 1 && (j - 1) % SW_ == 0 && (j - 1) / SW_ < MR_) acc[(j - 1) / SW_] += xv * w1;
      if (j >= 2 && (j - 2) % SW_ == 0 && (j - 2) / SW_ < MR_) acc[(j - 2) / SW_] += xv * w2;
    }
  }
  for (int m = 0; m < MR_; ++m) *(irc_vfu *)(y + m * ys_pix) = irc_vf_act(acc[m] + bias, vact);
}

/* One output pixel x 4 * IRC_VL channels (four vectors: four independent accumulator
   chains where one block alone would wait on each FMA's latency), arguments as for
   irc_dw_tile; start: where the sums start (irc_dw_start of the first of the 4 * IRC_VL
   channels' taps w0, rows of KW * C); bias: those channels' bias or NULL. */
IRC_INLINE void irc_dw_pixel64(const float *restrict x, long xs_h, long xs_w, int nkh, int nkw,
                               const float *restrict w, long ws_h, long ws_w,
                               float *restrict y, const float *restrict bias, int vact,
                               const float *restrict w0, int KH, int KW, int C, int kh_lo,
                               int kh_hi, int kw_lo, int kw_hi) {
  irc_vf acc[4];
  for (int j = 0; j < 4; ++j)
    acc[j] = irc_dw_start(IRC_VL, w0 + IRC_VL * j, KH, KW, C, kh_lo, kh_hi, kw_lo, kw_hi);
  for (int kh = 0; kh < nkh; ++kh)
    for (int kw = 0; kw < nkw; ++kw) {
      const float *restrict xt = x + kh * xs_h + kw * xs_w;
      const float *restrict wt = w + kh * ws_h + kw * ws_w;
      for (int j = 0; j < 4; ++j)
        acc[j] += *(const irc_vfu *)(xt + IRC_VL * j) * *(const irc_vfu *)(wt + IRC_VL * j);
    }
  for (int j = 0; j < 4; ++j) {
    const irc_vf bv = bias ? *(const irc_vfu *)(bias + IRC_VL * j) : IRC_VF_NEG_ZERO;
    *(irc_vfu *)(y + IRC_VL * j) = irc_vf_act(acc[j] + bv, vact);
  }
}

/* The arguments of irc_depthwise and its split into tasks (a part: a range of tasks). */
typedef struct {
  const float *x, *w, *bias;
  float *y;
  int H, W, C, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, act, ow_lo, ow_hi;
  long nsplit, nblk, tasks, parts;
} irc_dw_args;

/* Output row r (of N * OH), channels [c0, c1) (c0 a multiple of IRC_DW_GROUP; c1 one too,
   or C): which code computes a channel (a border pixel's 4-vector block, its 1-vector tail)
   depends on the channel only, never on the range. */
IRC_INLINE void irc_dw_row(const irc_dw_args *restrict a, long r, int c0, int c1) {
  const float *restrict x = a->x, *restrict w = a->w, *restrict bias = a->bias;
  const int H = a->H, W = a->W, C = a->C, OH = a->OH, OW = a->OW, KH = a->KH, KW = a->KW;
  const int SH = a->SH, SW = a->SW, DH = a->DH, DW = a->DW, PT = a->PT, PL = a->PL;
  const int act = a->act, ow_lo = a->ow_lo, ow_hi = a->ow_hi;
  const int vact = act == IRC_ACT_TANH ? IRC_ACT_NONE : act;
  const int n = (int)(r / OH), oh = (int)(r % OH);
  const int ih0 = oh * SH - PT;
  int kh_lo = 0, kh_hi = KH;
  while (kh_lo < KH && ih0 + kh_lo * DH < 0) ++kh_lo;
  while (kh_hi > kh_lo && ih0 + (kh_hi - 1) * DH >= H) --kh_hi;
  const int nkh = kh_hi - kh_lo;
  const long xs_h = (long)DH * W * C, xs_pix = (long)SW * C, xs_w = (long)DW * C;
  /* Input row of the first valid tap, column 0; weights of that tap row. */
  const float *restrict xr = x + ((long)n * H + ih0 + kh_lo * DH) * W * C;
  const float *restrict wr = w + (long)kh_lo * KW * C;
  float *restrict yrow = a->y + r * OW * C;
  if (C < IRC_VL) { /* one partial vector: masked loads and stores */
    const irc_vf bv = bias ? irc_vf_load_n(bias, C) : IRC_VF_NEG_ZERO;
    const irc_vf row_start = irc_dw_start(C, w, KH, KW, C, kh_lo, kh_hi, 0, KW);
    int ow = 0;
    while (ow < OW) {
      const int iw0 = ow * SW - PL;
      if (ow >= ow_lo && ow + IRC_DW_MR <= ow_hi) {
        irc_dw_tile_n(IRC_DW_MR, C, xr + (long)iw0 * C, xs_pix, xs_h, xs_w, nkh, KW, wr,
                      (long)KW * C, C, yrow + (long)ow * C, C, row_start, bv, vact);
        ow += IRC_DW_MR;
        continue;
      }
      int kw_lo = 0, kw_hi = KW;
      while (kw_lo < KW && iw0 + kw_lo * DW < 0) ++kw_lo;
      while (kw_hi > kw_lo && iw0 + (kw_hi - 1) * DW >= W) --kw_hi;
      irc_dw_tile_n(1, C, xr + (long)(iw0 + kw_lo * DW) * C, xs_pix, xs_h, xs_w, nkh,
                    kw_hi - kw_lo, wr + (long)kw_lo * C, (long)KW * C, C, yrow + (long)ow * C,
                    C, irc_dw_start(C, w, KH, KW, C, kh_lo, kh_hi, kw_lo, kw_hi), bv, vact);
      ++ow;
    }
  } else {
    /* Pixel tiles outermost, channel blocks inside: a tile's input windows (all channels)
       stay in L1 across the blocks. */
    int ow = 0;
    while (ow < OW) {
      const int iw0 = ow * SW - PL;
      if (ow >= ow_lo && ow + IRC_DW_MR <= ow_hi) {
        for (int cb = c0; cb < c1; cb += IRC_VL) {
          const int c = cb + IRC_VL <= C ? cb : C - IRC_VL;
          const irc_vf bv = bias ? *(const irc_vfu *)(bias + c) : IRC_VF_NEG_ZERO;
          const irc_vf start = nkh == KH ? IRC_VF_NEG_ZERO
                                         : irc_dw_start(IRC_VL, w + c, KH, KW, C, kh_lo, kh_hi,
                                                        0, KW);
          if (KW == 3 && DW == 1 && SW == 1)
            irc_dw_tile3(IRC_DW_MR, 1, xr + (long)iw0 * C + c, C, xs_h, nkh, wr + c,
                         (long)KW * C, C, yrow + (long)ow * C + c, C, start, bv, vact);
          else
            irc_dw_tile(IRC_DW_MR, xr + (long)iw0 * C + c, xs_pix, xs_h, xs_w, nkh, KW, wr + c,
                        (long)KW * C, C, yrow + (long)ow * C + c, C, start, bv, vact);
        }
        ow += IRC_DW_MR;
        continue;
      }
      /* One pixel, its taps clipped to the input columns [0, W). */
      int kw_lo = 0, kw_hi = KW;
      while (kw_lo < KW && iw0 + kw_lo * DW < 0) ++kw_lo;
      while (kw_hi > kw_lo && iw0 + (kw_hi - 1) * DW >= W) --kw_hi;
      const float *restrict xp = xr + (long)(iw0 + kw_lo * DW) * C;
      const float *restrict wp = wr + (long)kw_lo * C;
      float *restrict yp = yrow + (long)ow * C;
      int cb = c0;
      for (; cb + 4 * IRC_VL <= c1; cb += 4 * IRC_VL)
        irc_dw_pixel64(xp + cb, xs_h, xs_w, nkh, kw_hi - kw_lo, wp + cb, (long)KW * C, C,
                       yp + cb, bias ? bias + cb : NULL, vact, w + cb, KH, KW, C, kh_lo, kh_hi,
                       kw_lo, kw_hi);
      for (; cb < c1; cb += IRC_VL) {
        const int c = cb + IRC_VL <= C ? cb : C - IRC_VL;
        const irc_vf bv = bias ? *(const irc_vfu *)(bias + c) : IRC_VF_NEG_ZERO;
        irc_dw_tile(1, xp + c, xs_pix, xs_h, xs_w, nkh, kw_hi - kw_lo, wp + c, (long)KW * C, C,
                    yp + c, C, irc_dw_start(IRC_VL, w + c, KH, KW, C, kh_lo, kh_hi, kw_lo, kw_hi),
                    bv, vact);
      }
      ++ow;
    }
  }
  if (act == IRC_ACT_TANH)
    for (int ow = 0; ow < OW; ++ow) irc_epilogue(yrow + (long)ow * C + c0, c1 - c0, NULL, act);
}

/* Channels per block of a depthwise conv's channel split: the 4 vectors that a border
   pixel computes together (irc_dw_pixel64). A range boundary inside such a block would move
   that block's channels to the 1-vector tail code, whose sums a compiler may round
   differently: gcc does not contract the multiply-adds of a loop-carried chain into FMAs
   where the -march=native tuning asks it to avoid FMA chains (Sapphire Rapids, Zen), and
   it decides per loop. Whole groups keep every channel on the same instructions for any
   thread count. */
#define IRC_DW_GROUP (4 * IRC_VL)

/* Part `part` of irc_depthwise: task t is row t / nsplit, channel range t % nsplit (ranges
   of nblk channel groups). */
static void irc_dw_part(const void *ctx, long part) {
  const irc_dw_args *restrict a = (const irc_dw_args *)ctx;
  long t0, t1;
  irc_pool_range(part, a->parts, a->tasks, &t0, &t1);
  for (long t = t0; t < t1; ++t) {
    const long s = t % a->nsplit;
    const int c0 = (int)(s * a->nblk / a->nsplit) * IRC_DW_GROUP;
    const int c1 =
        s + 1 == a->nsplit ? a->C : (int)((s + 1) * a->nblk / a->nsplit) * IRC_DW_GROUP;
    irc_dw_row(a, t / a->nsplit, c0, c1);
  }
}

/* Multiply-adds per part of a split depthwise conv. */
#define IRC_DW_PART_WORK 100000.0

/* Depthwise conv (groups = C = OC): y[N][OH][OW][C] from x[N][H][W][C] and w[KH][KW][C], with
   implicit zero padding (PT rows, PL columns): taps above/below the input are skipped per
   row, taps left/right of it per pixel. C >= IRC_VL: IRC_VL-channel blocks, the last one
   overlapping its neighbour when C % IRC_VL != 0 (the shared channels are computed twice,
   identically), in IRC_DW_MR-pixel register tiles where a window lies inside the row and
   1-pixel tiles at the borders, with the bias/activation epilogue in registers (tanh after
   the row). C < IRC_VL: a per-pixel loop and the scalar epilogue. Big ops split over the
   threads (irc_parallel) by output rows, and by ranges of IRC_DW_GROUP-channel groups as
   well when the rows are too few to balance (C a multiple of IRC_VL: ranges never overlap;
   any split computes every output with the same instructions, so the same bits). */
static void irc_depthwise(const float *restrict x, int N, int H, int W, int C,
                          const float *restrict w, const float *restrict bias, float *restrict y,
                          int OH, int OW, int KH, int KW, int SH, int SW, int DH, int DW, int PT,
                          int PL, int act) {
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * KH * KW * C;
  /* Output columns whose taps all fall inside the input: [ow_lo, ow_hi). */
  const int ow_lo = (PL + SW - 1) / SW;
  const int last = W - 1 - (KW - 1) * DW + PL;
  int ow_hi = last < 0 ? 0 : last / SW + 1;
  if (ow_hi > OW) ow_hi = OW;
  const int threads = rows > 1 && work > IRC_PARALLEL_DW_WORK ? irc_nthreads() : 1;
  const long nblk = C >= IRC_VL && C % IRC_VL == 0 ? (C + IRC_DW_GROUP - 1) / IRC_DW_GROUP : 1;
  const long want = irc_pool_parts(rows * nblk, work, IRC_DW_PART_WORK, threads);
  long nsplit = 1;
  if (rows < want) nsplit = (want + rows - 1) / rows < nblk ? (want + rows - 1) / rows : nblk;
  irc_dw_args a = {x,  w,  bias, y,  H,  W,  C,     OH,    OW,     KH,   KW,
                   SH, SW, DH,   DW, PT, PL, act,   ow_lo, ow_hi,  nsplit,
                   nblk, rows * nsplit, 1};
  a.parts = irc_pool_parts(a.tasks, work, IRC_DW_PART_WORK, threads);
  irc_parallel(irc_dw_part, &a, a.parts, threads);
}
