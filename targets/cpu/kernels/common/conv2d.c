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
/* Weight rows ahead in a slice of one pixel: a fully connected layer's matrix-vector product
   streams its weights from L3 or memory with two FMAs per row, so only a prefetch far
   enough ahead keeps enough lines in flight (MobileNetV2's 1280 -> 1000, weights from L3,
   1 thread: 16 GB/s at 8 rows ahead, 23 at 64; Xeon @ 2.50GHz). */
#ifndef IRC_CONV_PREFETCH_PIXEL
#define IRC_CONV_PREFETCH_PIXEL 64
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

/* acc[m][v] += x[m][c] * w[c][v] for the reduction steps c of one tap run: Cg_ of them
   (a literal where the caller specialises the run's length, else Cg). */
IRC_INLINE void irc_conv_steps(const int MR_, const int TV, const int NB, long W1, const int PF,
                               const int Cg_,
                               irc_vf acc[][2], const float *restrict xt, long xs_pix,
                               const float *restrict wt, int Cg) {
  const int n = Cg_ > 0 ? Cg_ : Cg;
  for (int c = 0; c < n; ++c) {
    /* The weights IRC_CONV_PREFETCH rows ahead, into L1: a K x 32 panel larger than L1
       comes from L2 for every tile, and the hardware's prefetchers fetch it too late
       (MobileNetV2's 1x1 convs with K = 320-960: 1.2-1.3x the rate without). Only the
       lines of the slice (TV vectors); a prefetch past the panel does not fault. A run of
       literal length is short (its panel stays in L1): no prefetch. */
    if (Cg_ == 0) {
      __builtin_prefetch(wt + (long)(c + PF) * NB);
      if (TV > 1 && IRC_VL >= 16) __builtin_prefetch(wt + (long)(c + PF) * NB + W1);
    }
    const irc_vf b0 = *(const irc_vfu *)(wt + c * NB);
    const irc_vf b1 = TV > 1 ? *(const irc_vfu *)(wt + c * NB + W1) : b0;
    for (int m = 0; m < MR_; ++m) {
      const float a = xt[m * xs_pix + c];
      acc[m][0] += a * b0;
      if (TV > 1) acc[m][1] += a * b1;
    }
  }
}

/* MR_ output pixels x TV vectors of output channels (both constant after inlining),
   accumulated in registers over the KH x KW x Cg reduction. x: input of pixel 0 at tap
   (0, 0); xs_pix: floats between the inputs of consecutive output pixels; xs_h/xs_w:
   between taps; w: the slice's first weights, in rows of NB floats per input channel, its
   second vector W1 floats after its first (IRC_VL in a block of 2 vectors; a pair of
   one-vector blocks: the second block's panel, irc_conv2d_blocks);
   start: where the sums start (irc_conv_start), also the bias when there is none. */
IRC_INLINE void irc_conv_tile(const int MR_, const int TV, const int NB, long W1, const int PF,
                              const float *restrict x,
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
  if (KW == 1 && Cg == 9) {
    /* An RGB image's 3x3 conv: a run of 9 (3 taps x 3 channels) per kernel row, of literal
       length, fully unrolled (the loops' own instructions were a fifth of the tile's; Xeon
       @ 2.50GHz, 1 thread: MobileNetV2's first conv AVX2 43 -> 53 GFLOP/s, AVX-512 79 ->
       90). */
    for (int kh = 0; kh < KH; ++kh)
      irc_conv_steps(MR_, TV, NB, W1, PF, 9, acc, x + kh * xs_h, xs_pix, w + (long)kh * 9 * NB, 9);
  } else {
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw) {
        const float *restrict xt = x + kh * xs_h + kw * xs_w;
        const float *restrict wt = w + (long)(kh * KW + kw) * Cg * NB;
        irc_conv_steps(MR_, TV, NB, W1, PF, 0, acc, xt, xs_pix, wt, Cg);
      }
  }
  /* The epilogue, vector by vector (v a constant in each: the sums stay in registers). */
  if (irc_tile_epilogue(MR_, 0, acc, y, ys_pix, nvalid, bias, act, res, act2, start) && TV > 1)
    irc_tile_epilogue(MR_, 1, acc, y, ys_pix, nvalid, bias, act, res, act2, start);
}

/* MR_ pixels of a slice from ow (irc_conv_tile, then the scalar epilogues it leaves). */
IRC_INLINE void irc_conv2d_pixels(const int MR_, const int TV, int NB, long W1, const int PF,
                                  int ow,
                                  const float *restrict xrow, const float *restrict wb,
                                  float *restrict y, float *restrict yrow, int oc0, int nvalid,
                                  const float *restrict bb, int C, int Wp, int OC, int KH,
                                  int KW, int SW, int DH, int DW, int Cg, int act, int vact,
                                  const float *restrict res, int act2, int vact2,
                                  irc_vf start) {
  float *restrict o = yrow + (long)ow * OC + oc0;
  const float *restrict ro = res ? res + (o - y) : NULL;
  irc_conv_tile(MR_, TV, NB, W1, PF, xrow + (long)ow * SW * C, (long)SW * C, (long)DH * Wp * C,
                (long)DW * C, KH, KW, Cg, wb, o, OC, nvalid, bb, vact, ro, vact2, start);
  if (vact < 0 || (res && vact2 < 0))
    for (int m = 0; m < MR_; ++m) {
      if (vact < 0) irc_epilogue(o + (long)m * OC, nvalid, bb, act);
      if (res) irc_residual(o + (long)m * OC, nvalid, ro + (long)m * OC, act2);
    }
}

/* One slice of a channel block: pixels [ow0, ow1) of an output row, TV vectors, in tiles of
   IRC_MR pixels, then one of IRC_MR / 2 and single pixels. */
IRC_INLINE void irc_conv2d_slice(const int TV, int NB, long W1, int ow0, int ow1,
                                 const float *restrict xrow,
                                 const float *restrict wb, float *restrict y,
                                 float *restrict yrow, int oc0, int nvalid,
                                 const float *restrict bb, int C, int Wp, int OC, int KH, int KW,
                                 int SW, int DH, int DW, int Cg, int act, int vact,
                                 const float *restrict res, int act2, int vact2, irc_vf start) {
  const int PF = IRC_CONV_PREFETCH;
  int ow = ow0;
  for (; ow + IRC_MR <= ow1; ow += IRC_MR)
    irc_conv2d_pixels(IRC_MR, TV, NB, W1, PF, ow, xrow, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC,
                      KH, KW, SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
  if (IRC_MR >= 4 && ow + IRC_MR / 2 <= ow1) {
    irc_conv2d_pixels(IRC_MR / 2, TV, NB, W1, PF, ow, xrow, wb, y, yrow, oc0, nvalid, bb, C, Wp,
                      OC, KH, KW, SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
    ow += IRC_MR / 2;
  }
  if (ow0 + 1 == ow1) /* one pixel: a matrix-vector product, its weights streamed */
    irc_conv2d_pixels(1, TV, NB, W1, IRC_CONV_PREFETCH_PIXEL, ow, xrow, wb, y, yrow, oc0, nvalid,
                      bb, C, Wp, OC, KH, KW, SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
  else
    for (; ow < ow1; ++ow)
      irc_conv2d_pixels(1, TV, NB, W1, PF, ow, xrow, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC, KH,
                        KW, SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
}

/* Whether a tile spans two one-vector blocks (NB = 16 = IRC_VL, a tile of 2 * IRC_VL
   channels: AVX-512): the blocks of a group then run in pairs, (0, 1), (2, 3) ... (a last
   odd one alone), each pair one slice of two vectors whose second vector's weights are the
   next block's panel. */
#define IRC_CONV_PAIRS(NB) ((NB) == IRC_VL && IRC_CONV_F32_NR == 2 * IRC_VL)

/* Output pixels [0, npix) of one output row, output-channel units [u0, u1) of the G *
   units-per-group (group-major; a unit is one block of NB = 16 * NV channels, or two with
   IRC_CONV_PAIRS), each in slices of the tile's channels (at most IRC_CONV_F32_NR). xrow:
   the input of pixel 0 at tap (0, 0), in rows of Wp pixels of C floats; yrow: pixel 0's
   outputs. A slice of one vector's channels or fewer runs a one-vector tile (a block's
   last channels: AVX2's 24 of 32, AVX-512's 144 = 4.5 blocks of 32, without the empty
   vector's multiply-adds). Every output channel's sum is the same chain of multiply-adds
   whichever tile and slice computes it. */
IRC_INLINE void irc_conv2d_blocks(const int NV, const float *restrict xrow, float *restrict yrow,
                                  int npix, long u0, long u1, int Wp, int C,
                                  const float *restrict w, const float *restrict bias,
                                  float *restrict y, int OC, int KH, int KW, int SW, int DH,
                                  int DW, int Cg, int OCg, int act, const float *restrict res,
                                  int act2) {
  const int NB = 16 * NV;
  const int pairs = IRC_CONV_PAIRS(NB);
  const int SL = pairs ? 2 * NB : NB < IRC_CONV_F32_NR ? NB : IRC_CONV_F32_NR; /* per slice */
  const int nblk = (OCg + NB - 1) / NB;
  const int upg = pairs ? (nblk + 1) / 2 : nblk; /* units per group */
  const long wblk = (long)KH * KW * Cg * NB;
  /* Activations the tile applies in registers; -1: tanh, then the scalar epilogue runs the
     bias/activation (vact) or the residual add (vact2) and everything after it. */
  const int vact = act == IRC_ACT_TANH ? -1 : act;
  const int vact2 = vact < 0 || act2 == IRC_ACT_TANH ? -1 : act2;
  const irc_vf start = irc_conv_start(C / Cg, C);
  for (long u = u0; u < u1; ++u) {
    const int g = (int)(u / upg), b = (int)(u % upg) * (pairs ? 2 : 1);
    const float *restrict xg = xrow + g * Cg;
    for (int s = 0; s < (pairs ? SL : NB); s += SL) {
      const int left = OCg - b * NB - s;
      if (left <= 0) break;
      const int nvalid = left < SL ? left : SL;
      const int oc0 = g * OCg + b * NB + s;
      const float *restrict wb = w + ((long)g * nblk + b) * wblk + s;
      const float *restrict bb = bias ? bias + oc0 : NULL;
      if (pairs && nvalid > NB)
        irc_conv2d_slice(2, NB, wblk, 0, npix, xg, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC, KH,
                         KW, SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
      else if (!pairs && SL == 2 * IRC_VL && nvalid > IRC_VL)
        irc_conv2d_slice(2, NB, IRC_VL, 0, npix, xg, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC,
                         KH, KW, SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
      else
        irc_conv2d_slice(1, NB, IRC_VL, 0, npix, xg, wb, y, yrow, oc0, nvalid, bb, C, Wp, OC,
                         KH, KW, SW, DH, DW, Cg, act, vact, res, act2, vact2, start);
    }
  }
}

/* The arguments of irc_conv2d and its split into tasks (a part: a range of tasks). With
   `window` (irc_conv2d_pad), x is the unpadded input of H x W pixels and PT / PL the rows /
   columns of zeros before it. */
typedef struct {
  const float *x, *w, *bias, *res;
  float *y;
  int Hp, Wp, C, OH, OW, OC, KH, KW, SH, SW, DH, DW, Cg, OCg, act, act2, nchunk, chunk;
  int window, H, W, PT, PL;
  long ptasks, blocks, nsplit, tasks, parts;
} irc_conv2d_args;

/* Floats of the zero-padded input window a task of irc_conv2d_pad copies (on the stack). */
#define IRC_CONV_WINDOW_FLOATS 2048

/* One task of irc_conv2d: output pixels [ow0, ow1) (ow0 a multiple of the chunk, itself one
   of IRC_MR: the tiles are those of the whole row) of output row `row`, output-channel
   units [blk0, blk1) (irc_conv2d_blocks). With a->window, the task's input window (the KH
   input rows of the pixels' taps, one after the other) is first copied with its zero
   padding from the unpadded input into a buffer of its own: the same values at the same
   offsets as in a padded copy of the whole input (the same sums, bit for bit), without that
   copy's pass over memory. */
IRC_INLINE void irc_conv2d_task(const int NV, const irc_conv2d_args *restrict a, long row,
                                int ow0, int ow1, long blk0, long blk1) {
  const int C = a->C, OH = a->OH, SH = a->SH, SW = a->SW;
  const int oh = (int)(row % OH), n = (int)(row / OH);
  float *restrict yrow = a->y + (row * a->OW + ow0) * a->OC;
  /* One call of irc_conv2d_blocks for both cases (its tiles are inlined at each call: two
     calls built every tile twice, doubling the part's compile time). */
  float win[IRC_CONV_WINDOW_FLOATS];
  const float *xrow;
  int wp, dh;
  if (!a->window) {
    xrow = a->x + (((long)n * a->Hp + (long)oh * SH) * a->Wp + (long)ow0 * SW) * C;
    wp = a->Wp;
    dh = a->DH;
  } else {
    const int ww = (ow1 - ow0 - 1) * SW + (a->KW - 1) * a->DW + 1; /* window columns */
    const int iw0 = ow0 * SW - a->PL;
    int lo = -iw0, hi = a->W - iw0; /* window columns [lo, hi) lie inside the input */
    if (lo < 0) lo = 0;
    if (hi > ww) hi = ww;
    for (int kh = 0; kh < a->KH; ++kh) {
      float *restrict d = win + (long)kh * ww * C;
      const int ih = oh * SH - a->PT + kh * a->DH;
      if (ih < 0 || ih >= a->H || hi <= lo) {
        memset(d, 0, sizeof(float) * (size_t)ww * C);
        continue;
      }
      const float *restrict s = a->x + (((long)n * a->H + ih) * a->W + iw0 + lo) * C;
      memset(d, 0, sizeof(float) * (size_t)lo * C);
      memcpy(d + (long)lo * C, s, sizeof(float) * (size_t)(hi - lo) * C);
      memset(d + (long)hi * C, 0, sizeof(float) * (size_t)(ww - hi) * C);
    }
    xrow = win; /* the window's rows are its KH tap rows, one after the other */
    wp = ww;
    dh = 1;
  }
  irc_conv2d_blocks(NV, xrow, yrow, ow1 - ow0, blk0, blk1, wp, C, a->w, a->bias, a->y, a->OC,
                    a->KH, a->KW, SW, dh, a->DW, a->Cg, a->OCg, a->act, a->res, a->act2);
}

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
    irc_conv2d_task(NV, a, row, ow0, ow1, blk0, blk1);
  }
}
/* The parts as irc_parallel tasks, NV a literal constant inside each. */
static void irc_conv2d_part1(const void *a, long part) { irc_conv2d_part(1, a, part); }
static void irc_conv2d_part2(const void *a, long part) { irc_conv2d_part(2, a, part); }

/* Multiply-adds per part of a split conv (~2-4 us of one core: a claim is one atomic). */
#define IRC_CONV_PART_WORK 250000.0

/* irc_conv2d's split of a conv into tasks and parts, then its run on the pool. a: the
   geometry, with the chunk of pixels per task up to 8 * IRC_MR (fewer where a->window's
   input window would not fit IRC_CONV_WINDOW_FLOATS; the caller made sure that one pixel's
   does); the split fields are set here. */
static void irc_conv2d_run(int NV, irc_conv2d_args *restrict a, int N, int G) {
  const int OW = a->OW, MR = IRC_MR;
  const int NB = 16 * NV, nblk = (a->OCg + NB - 1) / NB;
  const long blocks = (long)G * (IRC_CONV_PAIRS(NB) ? (nblk + 1) / 2 : nblk); /* units */
  int nchunk = (OW + 8 * MR - 1) / (8 * MR);
  int per = (OW + nchunk - 1) / nchunk;
  int chunk = (per + MR - 1) / MR * MR;
  if (a->window) {
    /* Whole tiles per chunk while the window fits, else single pixels. */
    int floats = a->KH * ((chunk - 1) * a->SW + (a->KW - 1) * a->DW + 1) * a->C;
    while (chunk > MR && floats > IRC_CONV_WINDOW_FLOATS) {
      chunk -= MR;
      floats = a->KH * ((chunk - 1) * a->SW + (a->KW - 1) * a->DW + 1) * a->C;
    }
    if (floats > IRC_CONV_WINDOW_FLOATS) chunk = 1;
    nchunk = (OW + chunk - 1) / chunk;
  }
  const long ptasks = (long)N * a->OH * nchunk;
  const double work = (double)N * a->OH * OW * a->KH * a->KW * a->Cg * a->OC;
  const int threads = work > IRC_PARALLEL_CONV_WORK ? irc_nthreads() : 1;
  /* Block ranges where the pixel chunks are fewer than the parts wanted. */
  const long want = irc_pool_parts(ptasks * blocks, work, IRC_CONV_PART_WORK, threads);
  long nsplit = 1;
  if (ptasks < want) nsplit = (want + ptasks - 1) / ptasks < blocks ? (want + ptasks - 1) / ptasks
                                                                    : blocks;
  a->nchunk = nchunk, a->chunk = chunk, a->ptasks = ptasks, a->blocks = blocks;
  a->nsplit = nsplit, a->tasks = ptasks * nsplit;
  a->parts = irc_pool_parts(a->tasks, work, IRC_CONV_PART_WORK, threads);
  irc_parallel(NV == 2 ? irc_conv2d_part2 : irc_conv2d_part1, a, a->parts, threads);
}

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
  irc_conv2d_args a = {.x = x, .w = w, .bias = bias, .res = res, .y = y, .Hp = Hp, .Wp = Wp,
                       .C = C, .OH = OH, .OW = OW, .OC = OC, .KH = KH, .KW = KW, .SH = SH,
                       .SW = SW, .DH = DH, .DW = DW, .Cg = Cg, .OCg = OCg, .act = act,
                       .act2 = act2};
  irc_conv2d_run(NV, &a, N, G);
}

/* irc_conv2d on the unpadded input x[N][H][W][C] with PT / PL / PB / PR rows and columns of
   zeros around it, without a padded copy of x: each task copies its own input window with
   its padding (irc_conv2d_task), the same sums bit for bit. For a conv whose window of one
   pixel's taps fits IRC_CONV_WINDOW_FLOATS (targets/cpu/lowerings/conv.py:
   convs of few input channels such as an image's RGB, whose padded copy would be a pass
   over the image as long as the conv's own). */
static void irc_conv2d_pad(int NV, const float *restrict x, int N, int H, int W, int C, int PT,
                           int PL, int PB, int PR, const float *restrict w,
                           const float *restrict bias, float *restrict y, int OH, int OW,
                           int OC, int KH, int KW, int SH, int SW, int DH, int DW, int G,
                           int Cg, int OCg, int act, const float *restrict res, int act2) {
  irc_conv2d_args a = {.x = x, .w = w, .bias = bias, .res = res, .y = y, .Hp = H + PT + PB,
                       .Wp = W + PL + PR, .C = C, .OH = OH, .OW = OW, .OC = OC, .KH = KH,
                       .KW = KW, .SH = SH, .SW = SW, .DH = DH, .DW = DW, .Cg = Cg, .OCg = OCg,
                       .act = act, .act2 = act2, .window = 1, .H = H, .W = W, .PT = PT,
                       .PL = PL};
  irc_conv2d_run(NV, &a, N, G);
}
