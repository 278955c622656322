/* irc CPU kernels: snippet "conv2d" (targets/cpu/csrc.py puts it in a translation unit). */
/* The register tile of the ISA profile (targets/cpu/isa.py): IRC_MR output pixels x
   IRC_CONV_F32_NR output channels, in vectors of IRC_VL lanes (AVX-512: 8 x 32 = 16 of the
   32 zmm; AVX2: 6 x 16 = 12 of the 16 ymm, XNNPACK's tile). A packed block of 16 * NV
   channels wider than the tile is walked in tile-wide slices. */
#ifndef IRC_CONV_F32_MR
#define IRC_CONV_F32_MR 8
#endif
#ifndef IRC_CONV_F32_NR
#define IRC_CONV_F32_NR (2 * IRC_VL) /* IRC_VL or 2 * IRC_VL */
#endif
#define IRC_MR IRC_CONV_F32_MR
#ifndef IRC_CONV_PREFETCH
#define IRC_CONV_PREFETCH 8 /* weight rows ahead (irc_conv_tile) */
#endif

/* -0.0 in every lane: the exact additive identity (a compound literal `{-0.0f}` would set
   lane 0 only). */
#ifndef IRC_VF_NEG_ZERO
#define IRC_VF_NEG_ZERO (-(irc_vf){0.0f})
#endif

/* Where the sums of a conv start, as the reference's: a depthwise-form conv (groups G > 1
   equal to the input channels C, any channel multiplier) sums its taps' products from the
   first, so a sum of products that are all -0.0 is -0.0: start at -0.0, the exact additive
   identity. Every other conv and fully connected layer is a matrix product there (BLAS,
   from +0.0): never -0.0, whatever the bias; start at +0.0. The same vector stands for an
   absent bias (adding it leaves every sum as it is). */
IRC_INLINE irc_vf irc_conv_start(int G, int C) {
  return G > 1 && G == C ? IRC_VF_NEG_ZERO : (irc_vf){0.0f};
}

/* irc_vf_act(., act) on vector v of the tile's MR_ rows, one loop per activation. */
IRC_INLINE void irc_tile_act(const int MR_, const int v, irc_vf acc[][2], int act) {
  switch (act) {
    case IRC_ACT_RELU:
      for (int m = 0; m < MR_; ++m) acc[m][v] = irc_vf_act(acc[m][v], IRC_ACT_RELU);
      break;
    case IRC_ACT_RELU6:
      for (int m = 0; m < MR_; ++m) acc[m][v] = irc_vf_act(acc[m][v], IRC_ACT_RELU6);
      break;
    case IRC_ACT_RELU_N1_TO_1:
      for (int m = 0; m < MR_; ++m) acc[m][v] = irc_vf_act(acc[m][v], IRC_ACT_RELU_N1_TO_1);
      break;
    default: break;
  }
}

/* The epilogue of vector v of a tile's MR_ rows of sums, in registers: v = act(acc + bias),
   then v = act2(v + res) with a residual, stored to y (rows ys_pix floats apart, the vector's
   valid lanes of nvalid). tanh (act or act2 = -1 here) is left to the caller's scalar
   epilogue. Each step is one branch-free loop over the rows (the activation chosen once per
   vector, not per row), so the rows unroll. False when the vector has no valid lane. */
IRC_INLINE int irc_tile_epilogue(const int MR_, const int v, irc_vf acc[][2], float *restrict y,
                                 long ys_pix, int nvalid, const float *restrict bias, int act,
                                 const float *restrict res, int act2, irc_vf start) {
  const int n = nvalid - IRC_VL * v < IRC_VL ? nvalid - IRC_VL * v : IRC_VL;
  if (n <= 0) return 0;
  if (act >= 0) {
    irc_vf bv = start;
    if (bias) {
      const float *bp = bias + IRC_VL * v;
      bv = n == IRC_VL ? *(const irc_vfu *)bp : irc_vf_load_n(bp, n);
    }
    for (int m = 0; m < MR_; ++m) acc[m][v] += bv;
    irc_tile_act(MR_, v, acc, act);
    if (res && act2 >= 0) {
      const float *rp = res + IRC_VL * v;
      if (n == IRC_VL)
        for (int m = 0; m < MR_; ++m) acc[m][v] += *(const irc_vfu *)(rp + m * ys_pix);
      else
        for (int m = 0; m < MR_; ++m) acc[m][v] += irc_vf_load_n(rp + m * ys_pix, n);
      irc_tile_act(MR_, v, acc, act2);
    }
  }
  float *o = y + IRC_VL * v;
  if (n == IRC_VL)
    for (int m = 0; m < MR_; ++m) *(irc_vfu *)(o + m * ys_pix) = acc[m][v];
  else
    for (int m = 0; m < MR_; ++m) irc_vf_store_n(o + m * ys_pix, acc[m][v], n);
  return 1;
}

/* MR_ output pixels x TV vectors of output channels (both constant after inlining),
   accumulated in registers over the KH x KW x Cg reduction. x: input of pixel 0 at tap
   (0, 0); xs_pix: floats between the inputs of consecutive output pixels; xs_h/xs_w:
   between taps; w: the slice's first weights, in rows of NB floats per input channel;
   start: where the sums start (irc_conv_start), also the bias when there is none. */
IRC_INLINE void irc_conv_tile(const int MR_, const int TV, const int NB, const float *restrict x,
                              long xs_pix, long xs_h, long xs_w, int KH, int KW, int Cg,
                              const float *restrict w, float *restrict y, long ys_pix,
                              int nvalid, const float *restrict bias, int act,
                              const float *restrict res, int act2, irc_vf start) {
  irc_vf acc[IRC_MR][2];
  for (int m = 0; m < MR_; ++m)
    for (int v = 0; v < TV; ++v) acc[m][v] = start;
  if (xs_w == Cg) {
    /* Taps one input pixel apart and all input channels in the group (no dilation, one
       group): a row's KW taps x Cg channels are one run of the input and of the weights,
       one loop of KW * Cg (the same products in the same order: the first conv's 3 taps x
       3 channels are one loop of 9, not 3 of 3). */
    Cg *= KW;
    KW = 1;
  }
  for (int kh = 0; kh < KH; ++kh)
    for (int kw = 0; kw < KW; ++kw) {
      const float *restrict xt = x + kh * xs_h + kw * xs_w;
      const float *restrict wt = w + (long)(kh * KW + kw) * Cg * NB;
      for (int c = 0; c < Cg; ++c) {
        /* The weights IRC_CONV_PREFETCH rows ahead, into L1: a K x 32 panel larger than L1
           comes from L2 for every tile, and the hardware's prefetchers fetch it too late
           (MobileNetV2's 1x1 convs with K = 320-960: 1.2-1.3x the rate without). Only the
           lines of the slice (TV vectors); a prefetch past the panel does not fault. */
        for (int l = 0; l < TV * IRC_VL; l += 16)
          __builtin_prefetch(wt + (long)(c + IRC_CONV_PREFETCH) * NB + l);
        const irc_vf b0 = *(const irc_vfu *)(wt + c * NB);
        const irc_vf b1 = TV > 1 ? *(const irc_vfu *)(wt + c * NB + IRC_VL) : b0;
        for (int m = 0; m < MR_; ++m) {
          const float a = xt[m * xs_pix + c];
          acc[m][0] += a * b0;
          if (TV > 1) acc[m][1] += a * b1;
        }
      }
    }
  /* The epilogue, vector by vector (v a constant in each: the sums stay in registers). */
  if (irc_tile_epilogue(MR_, 0, acc, y, ys_pix, nvalid, bias, act, res, act2, start) && TV > 1)
    irc_tile_epilogue(MR_, 1, acc, y, ys_pix, nvalid, bias, act, res, act2, start);
}

/* MR_ pixels of a slice from ow (irc_conv_tile, then the scalar epilogues it leaves). */
IRC_INLINE void irc_conv2d_pixels(const int MR_, const int TV, int NB, int ow,
                                  const float *restrict xrow, const float *restrict wb,
                                  float *restrict y, float *restrict yrow, int oc0, int nvalid,
                                  const float *restrict bb, int C, int Wp, int OC, int KH,
                                  int KW, int SW, int DH, int DW, int Cg, int act, int vact,
                                  const float *restrict res, int act2, int vact2,
                                  irc_vf start) {
  float *restrict o = yrow + (long)ow * OC + oc0;
  const float *restrict ro = res ? res + (o - y) : NULL;
  irc_conv_tile(MR_, TV, NB, xrow + (long)ow * SW * C, (long)SW * C, (long)DH * Wp * C,
                (long)DW * C, KH, KW, Cg, wb, o, OC, nvalid, bb, vact, ro, vact2, start);
  if (vact < 0 || (res && vact2 < 0))
    for (int m = 0; m < MR_; ++m) {
      if (vact < 0) irc_epilogue(o + (long)m * OC, nvalid, bb, act);
      if (res) irc_residual(o + (long)m * OC, nvalid, ro + (long)m * OC, act2);
    }
}

/* One slice of a channel block: pixels [ow0, ow1) of an output row, TV vectors, in tiles of
   IRC_MR pixels, then one of IRC_MR / 2 and single pixels. */
IRC_INLINE void irc_conv2d_slice(const int TV, int NB, int ow0, int ow1, const float *restrict xrow,
                                 const float *restrict wb, float *restrict y,
                                 float *restrict yrow, int oc0, int nvalid,
                                 const float *restrict bb, int C, int Wp, int OC, int KH, int KW,
                                 int SW, int DH, int DW, int Cg, int act, int vact,
                                 const float *restrict res, int act2, int vact2, irc_vf start) {
  int ow = ow0;
  for (; ow + IRC_MR <= ow1; ow += IRC_MR)
    irc_conv2d_pixels(IRC_MR, TV, NB, ow, xrow, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC, KH, KW,
                      SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
  if (IRC_MR >= 4 && ow + IRC_MR / 2 <= ow1) {
    irc_conv2d_pixels(IRC_MR / 2, TV, NB, ow, xrow, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC, KH,
                      KW, SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
    ow += IRC_MR / 2;
  }
  for (; ow < ow1; ++ow)
    irc_conv2d_pixels(1, TV, NB, ow, xrow, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC, KH, KW, SW,
                      DH, DW, Cg, act, vact, res, act2, vact2, start);
}

/* One task of irc_conv2d: output pixels [ow0, ow1) of output row `row`, output-channel blocks
   [blk0, blk1) of the G * ceil(OCg / NB) blocks (group-major), each in slices of the tile's
   channels (at most IRC_CONV_F32_NR). */
IRC_INLINE void irc_conv2d_task(const int NV, long row, int ow0, int ow1, long blk0, long blk1,
                                const float *restrict x, int Hp, int Wp, int C,
                                const float *restrict w, const float *restrict bias,
                                float *restrict y, int OH, int OW, int OC, int KH, int KW,
                                int SH, int SW, int DH, int DW, int Cg, int OCg,
                                int act, const float *restrict res, int act2) {
  const int NB = 16 * NV;
  const int SL = NB < IRC_CONV_F32_NR ? NB : IRC_CONV_F32_NR; /* channels per slice */
  const int nblk = (OCg + NB - 1) / NB;
  const long wblk = (long)KH * KW * Cg * NB;
  const int oh = (int)(row % OH), n = (int)(row / OH);
  const float *restrict xrow = x + ((long)n * Hp + (long)oh * SH) * Wp * C;
  float *restrict yrow = y + row * OW * OC;
  /* Activations the tile applies in registers; -1: tanh, then the scalar epilogue runs the
     bias/activation (vact) or the residual add (vact2) and everything after it. */
  const int vact = act == IRC_ACT_TANH ? -1 : act;
  const int vact2 = vact < 0 || act2 == IRC_ACT_TANH ? -1 : act2;
  const irc_vf start = irc_conv_start(C / Cg, C);
  for (long gb = blk0; gb < blk1; ++gb) {
    const int g = (int)(gb / nblk), b = (int)(gb % nblk);
    for (int s = 0; s < NB; s += SL) {
      const int left = OCg - b * NB - s;
      if (left <= 0) break;
      const int nvalid = left < SL ? left : SL;
      const int oc0 = g * OCg + b * NB + s;
      const float *restrict wb = w + gb * wblk + s;
      const float *restrict bb = bias ? bias + oc0 : NULL;
      const float *restrict xg = xrow + g * Cg;
      if (SL == 2 * IRC_VL)
        irc_conv2d_slice(2, NB, ow0, ow1, xg, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC, KH, KW,
                         SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
      else
        irc_conv2d_slice(1, NB, ow0, ow1, xg, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC, KH, KW,
                         SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
    }
  }
}

/* The arguments of irc_conv2d and its split into tasks (a part: a range of tasks). */
typedef struct {
  const float *x, *w, *bias, *res;
  float *y;
  int Hp, Wp, C, OH, OW, OC, KH, KW, SH, SW, DH, DW, Cg, OCg, act, act2, nchunk, chunk;
  long ptasks, blocks, nsplit, tasks, parts;
} irc_conv2d_args;

/* Part `part` of irc_conv2d: task t is block range t / ptasks, pixel chunk t % ptasks. */
IRC_INLINE void irc_conv2d_part(const int NV, const irc_conv2d_args *restrict a, long part) {
  long t0, t1;
  irc_pool_range(part, a->parts, a->tasks, &t0, &t1);
  for (long t = t0; t < t1; ++t) {
    const long s = t / a->ptasks, p = t % a->ptasks;
    const long row = p / a->nchunk;
    const int ow0 = (int)(p % a->nchunk) * a->chunk;
    const int ow1 = ow0 + a->chunk < a->OW ? ow0 + a->chunk : a->OW;
    const long blk0 = s * a->blocks / a->nsplit, blk1 = (s + 1) * a->blocks / a->nsplit;
    irc_conv2d_task(NV, row, ow0, ow1, blk0, blk1, a->x, a->Hp, a->Wp, a->C, a->w, a->bias,
                    a->y, a->OH, a->OW, a->OC, a->KH, a->KW, a->SH, a->SW, a->DH, a->DW, a->Cg,
                    a->OCg, a->act, a->res, a->act2);
  }
}
/* The parts as irc_parallel tasks, NV a literal constant inside each. */
static void irc_conv2d_part1(const void *a, long part) { irc_conv2d_part(1, a, part); }
static void irc_conv2d_part2(const void *a, long part) { irc_conv2d_part(2, a, part); }

/* Multiply-adds per part of a split conv (~2-4 us of one core: a claim is one atomic). */
#define IRC_CONV_PART_WORK 250000.0

/* y[N][OH][OW][OC] = act(conv(x[N][Hp][Wp][C] (already padded), w packed by
   irc_pack_filter with NB = 16 * NV) + bias), groups G (Cg = C / G, OCg = OC / G); with a
   residual `res` (same shape as y, or NULL) then y = act2(y + res), tile by tile. Tasks are
   chunks of up to 64 pixels of one output row (chunks of a row equal, multiples of IRC_MR;
   an unpadded pointwise conv is one row of all its pixels)
   times, when the pixel chunks alone are too few for the threads to balance (small images:
   1x1 convs at 7x7 or 14x14, fully connected layers), ranges of output-channel blocks
   (range-major: the threads share one range's weights at a time). Contiguous tasks form
   parts that the threads claim one at a time (irc_parallel, pool.h). */
static void irc_conv2d(int NV, const float *restrict x, int N, int Hp, int Wp, int C,
                       const float *restrict w, const float *restrict bias, float *restrict y,
                       int OH, int OW, int OC, int KH, int KW, int SH, int SW, int DH, int DW,
                       int G, int Cg, int OCg, int act, const float *restrict res, int act2) {
  if (KH == 1 && KW == 1 && SH == 1 && SW == 1 && Hp == OH && Wp == OW) {
    /* A pointwise conv without padding: its pixels are one row of N * OH * OW (tiles then
       run across the rows: a 7x7 image is 6 full tiles and one pixel, not 7 x 7 pixels). */
    OW = N * OH * OW, Wp = OW, N = 1, OH = 1, Hp = 1;
  }
  const int NB = 16 * NV;
  const long blocks = (long)G * ((OCg + NB - 1) / NB);
  const int nchunk = (OW + 8 * IRC_MR - 1) / (8 * IRC_MR);
  const int per = (OW + nchunk - 1) / nchunk;
  const int chunk = (per + IRC_MR - 1) / IRC_MR * IRC_MR;
  const long ptasks = (long)N * OH * nchunk;
  const double work = (double)N * OH * OW * KH * KW * Cg * OC;
  const int threads = work > IRC_PARALLEL_CONV_WORK ? irc_nthreads() : 1;
  /* Block ranges where the pixel chunks are fewer than the parts wanted. */
  const long want = irc_pool_parts(ptasks * blocks, work, IRC_CONV_PART_WORK, threads);
  long nsplit = 1;
  if (ptasks < want) nsplit = (want + ptasks - 1) / ptasks < blocks ? (want + ptasks - 1) / ptasks
                                                                    : blocks;
  const long tasks = ptasks * nsplit;
  const irc_conv2d_args a = {x,   w,  bias, res, y,     Hp,     Wp,   C,    OH,     OW,
                             OC,  KH, KW,   SH,  SW,    DH,     DW,   Cg,   OCg,    act,
                             act2, nchunk, chunk, ptasks, blocks, nsplit, tasks,
                             irc_pool_parts(tasks, work, IRC_CONV_PART_WORK, threads)};
  irc_parallel(NV == 2 ? irc_conv2d_part2 : irc_conv2d_part1, &a, a.parts, threads);
}
