/* irc CPU kernels: snippet "fc" (targets/cpu/csrc.py puts it in a translation unit): a float
   fully connected layer y[M][N] = epilogue(x[M][K] . w[N][K]^T) as a blocked matrix product
   with its epilogue (bias, activation or GELU, residual add) applied to the register tile
   before it is stored (the "fc" fusion of cpu-fuse, lowerings/fusion.py).

   Blocking (the Goto/BLIS scheme, as XNNPACK's and oneDNN's f32 GEMMs): with K over
   IRC_FC_PACK_K, x is packed once per call into row panels of IRC_FC_MR rows,
   [ceil(M/MR)][K][MR] (the last panel as wide as its rows), so a tile's broadcasts read one
   sequential stream (in one thread's CPU time on the Xeon @ 2.50GHz, avx512vnni: BERT-base's
   128 x 3072 -> 768 1.16x irc_conv2d's GFLOP/s packed; below, the pack cost more than it
   saved: DeiT-tiny's 197 x 768 -> 192 0.83x packed, 0.98x in place); the weights are packed
   at compile time as the convolutions' [N/NB][K][NB] (packing.pack_filter, NB = 16 or 32).
   For each output-channel block, K is walked in blocks of at most IRC_FC_KC, so that the
   block's weights for one K block stay in cache while every row panel passes them; the
   partial sums of a tile go through y between K blocks (an exact float store and load: the
   sums are the same as one pass over K, summed in the same order from +0.0, so the result
   is bit for bit irc_conv2d's). Threads take tasks of one output-channel block x a group of
   row panels (irc_fc_args). */
#ifndef IRC_FC_MR
#if IRC_VL >= 16
#define IRC_FC_MR 12 /* 12 x 32 floats: 24 zmm accumulators + 2 weight vectors + 1 broadcast */
#elif IRC_VL >= 8
#define IRC_FC_MR 6 /* 6 x 16: 12 ymm accumulators of 16 (XNNPACK's AVX2 tile) */
#else
#define IRC_FC_MR 4
#endif
#endif
#ifndef IRC_FC_PACK_K
#define IRC_FC_PACK_K 1024 /* x is packed over this K; below, its rows are read in place */
#endif
#ifndef IRC_FC_ROW_GROUPS
#define IRC_FC_ROW_GROUPS 1 /* 0: tasks are output-channel blocks only */
#endif
#ifndef IRC_FC_KC
#define IRC_FC_KC 512 /* K per block: 32 x 512 x 4 bytes = 64 KiB of weights */
#endif
/* Epilogue activations beyond IRC_ACT_* (prelude.h): GELU, erf or tanh form. */
enum { IRC_FC_GELU = 16, IRC_FC_GELU_TANH = 17 };

IRC_INLINE irc_vf irc_fc_act(irc_vf v, int act) {
  return act >= IRC_FC_GELU ? irc_vf_gelu(v, act == IRC_FC_GELU_TANH) : irc_vf_act(v, act);
}

/* One MR_ x (TV vectors) tile over kc values of K. a: the panel's packed x at this K block
   ([kc][MR_]) when PACKED, else x's first row at this K block (rows lda floats apart); b: the weight block's rows at this K block ([kc][NB]); y: the tile's first
   output (row stride ldy); nvalid: its valid columns. `first`: the sums start at +0.0, else
   at y (the previous K blocks'); `last`: the epilogue runs and y gets the result. */
IRC_INLINE void irc_fc_tile(const int MR_, const int TV, const int PACKED, const float *restrict a,
                            long lda, const float *restrict b, int NB, long kc, float *restrict y, long ldy,
                            int nvalid, int first, int last, const float *restrict bias, int act,
                            const float *restrict res, int act2) {
  irc_vf acc[IRC_FC_MR][2];
  const int n0 = nvalid < IRC_VL ? nvalid : IRC_VL;
  const int n1 = nvalid - IRC_VL;
  for (int m = 0; m < MR_; ++m) {
    if (first) {
      acc[m][0] = (irc_vf){0.0f};
      if (TV > 1) acc[m][1] = (irc_vf){0.0f};
    } else {
      const float *p = y + m * ldy;
      acc[m][0] = n0 == IRC_VL ? *(const irc_vfu *)p : irc_vf_load_n(p, n0);
      if (TV > 1 && n1 > 0)
        acc[m][1] = n1 >= IRC_VL ? *(const irc_vfu *)(p + IRC_VL) : irc_vf_load_n(p + IRC_VL, n1);
      else if (TV > 1)
        acc[m][1] = (irc_vf){0.0f};
    }
  }
  for (long k = 0; k < kc; ++k) {
    const irc_vf b0 = *(const irc_vfu *)(b + k * NB);
    const irc_vf b1 = TV > 1 ? *(const irc_vfu *)(b + k * NB + IRC_VL) : b0;
    for (int m = 0; m < MR_; ++m) {
      const float x = PACKED ? a[k * MR_ + m] : a[m * lda + k];
      acc[m][0] += x * b0;
      if (TV > 1) acc[m][1] += x * b1;
    }
  }
  for (int v = 0; v < TV; ++v) {
    const int n = v == 0 ? n0 : (n1 < IRC_VL ? n1 : IRC_VL);
    if (n <= 0) break;
    irc_vf bv = (irc_vf){0.0f};
    if (last && bias) bv = n == IRC_VL ? *(const irc_vfu *)(bias + IRC_VL * v)
                                       : irc_vf_load_n(bias + IRC_VL * v, n);
    for (int m = 0; m < MR_; ++m) {
      irc_vf r = acc[m][v];
      if (last) {
        r = irc_fc_act(r + bv, act);
        if (res) {
          const float *rp = res + m * ldy + IRC_VL * v;
          r = irc_vf_act(r + (n == IRC_VL ? *(const irc_vfu *)rp : irc_vf_load_n(rp, n)), act2);
        }
      }
      float *o = y + m * ldy + IRC_VL * v;
      if (n == IRC_VL)
        *(irc_vfu *)o = r;
      else
        irc_vf_store_n(o, r, n);
    }
  }
}

/* A panel of `rows` (< IRC_FC_MR) rows: the tile with that many rows as a constant. */
IRC_INLINE void irc_fc_tail(const int TV, const int PACKED, int rows, const float *restrict a,
                            long lda, const float *restrict b, int NB, long kc, float *restrict y, long ldy,
                            int nvalid, int first, int last, const float *restrict bias, int act,
                            const float *restrict res, int act2) {
#define IRC_FC_TAIL(r)                                                                        \
  case r:                                                                                     \
    irc_fc_tile(r < IRC_FC_MR ? r : 1, TV, PACKED, a, lda, b, NB, kc, y, ldy, nvalid, first,  \
                last, bias,                                                                   \
                act, res, act2);                                                              \
    break;
  switch (rows) {
    IRC_FC_TAIL(1)
    IRC_FC_TAIL(2)
    IRC_FC_TAIL(3)
#if IRC_FC_MR > 4
    IRC_FC_TAIL(4)
    IRC_FC_TAIL(5)
#endif
#if IRC_FC_MR > 6
    IRC_FC_TAIL(6)
    IRC_FC_TAIL(7)
    IRC_FC_TAIL(8)
    IRC_FC_TAIL(9)
    IRC_FC_TAIL(10)
    IRC_FC_TAIL(11)
#endif
    default: break;
  }
#undef IRC_FC_TAIL
}

/* The arguments of irc_fc and its split: task t is output-channel block t / groups and
   the row panels of group t % groups (several groups when the blocks alone are too few for
   the threads to balance); a part is a range of tasks. */
typedef struct {
  const float *xp, *w, *bias, *res;
  float *y;
  long M, K, N, panels, groups, tasks, parts;
  int packed;
  int NB, act, act2;
} irc_fc_args;

/* Part `part`: its tasks one at a time, each K block by K block (the block's weights for
   one K block, NB x KC floats, stay in cache while the task's row panels pass them). */
IRC_INLINE void irc_fc_part(const int TV, const int PACKED, const irc_fc_args *restrict a,
                            long part) {
  long t0, t1;
  irc_pool_range(part, a->parts, a->tasks, &t0, &t1);
  const int NB = a->NB, SL = TV * IRC_VL;
  const long M = a->M, K = a->K, N = a->N;
  for (long t = t0; t < t1; ++t) {
    const long blk = t / a->groups, g = t % a->groups;
    const long p0 = g * a->panels / a->groups, p1 = (g + 1) * a->panels / a->groups;
    for (long k0 = 0; k0 < K; k0 += IRC_FC_KC) {
      const long kc = K - k0 < IRC_FC_KC ? K - k0 : IRC_FC_KC;
      const int first = k0 == 0, last = k0 + kc == K;
      for (int s = 0; s < NB; s += SL) {
        const long n0 = blk * NB + s;
        if (n0 >= N) break;
        const int nvalid = N - n0 < SL ? (int)(N - n0) : SL;
        const float *restrict wb = a->w + (blk * K + k0) * NB + s;
        const float *restrict bb = a->bias ? a->bias + n0 : NULL;
        for (long p = p0; p < p1; ++p) {
          const long r = p * IRC_FC_MR, off = r * N + n0;
          const int rows = M - r < IRC_FC_MR ? (int)(M - r) : IRC_FC_MR;
          const float *restrict xp = a->xp + r * K + (PACKED ? k0 * rows : k0);
          const float *restrict res = a->res ? a->res + off : NULL;
          if (rows == IRC_FC_MR)
            irc_fc_tile(IRC_FC_MR, TV, PACKED, xp, K, wb, NB, kc, a->y + off, N, nvalid, first,
                        last, bb, a->act, res, a->act2);
          else
            irc_fc_tail(TV, PACKED, rows, xp, K, wb, NB, kc, a->y + off, N, nvalid, first, last,
                        bb, a->act, res, a->act2);
        }
      }
    }
  }
}
static void irc_fc_part1(const void *a, long part) { irc_fc_part(1, 0, a, part); }
static void irc_fc_part2(const void *a, long part) { irc_fc_part(2, 0, a, part); }
static void irc_fc_part1p(const void *a, long part) { irc_fc_part(1, 1, a, part); }
static void irc_fc_part2p(const void *a, long part) { irc_fc_part(2, 1, a, part); }

/* Packing x into row panels: task i is panel i. */
typedef struct {
  const float *x;
  float *xp;
  long M, K;
} irc_fc_pack_args;

static void irc_fc_pack_panel(const void *ctx, long panel) {
  const irc_fc_pack_args *a = (const irc_fc_pack_args *)ctx;
  const long r0 = panel * IRC_FC_MR;
  const long rows = a->M - r0 < IRC_FC_MR ? a->M - r0 : IRC_FC_MR;
  const float *restrict x = a->x + r0 * a->K;
  float *restrict p = a->xp + r0 * a->K;
  for (long k = 0; k < a->K; ++k)
    for (long m = 0; m < rows; ++m) p[k * rows + m] = x[m * a->K + k];
}

/* Multiply-adds per part of a split product (~15-30 us of one core). */
#define IRC_FC_PART_WORK 2000000.0

/* y[M][N] = act2(act(x[M][K] . w^T + bias) + res): w packed by irc_pack_filter /
   packing.pack_filter as [ceil(N/NB)][K][NB] (NB = 16 or 32); bias [N] or NULL; act an
   IRC_ACT_* code (not tanh) or IRC_FC_GELU(_TANH); res [M][N] or NULL, act2 its
   activation. xp: M * K floats of scratch for the packed x. */
static void irc_fc(const float *restrict x, long M, long K, const float *restrict w, int NB,
                   const float *restrict bias, float *restrict y, long N, int act,
                   const float *restrict res, int act2, float *restrict xp) {
  const double work = (double)M * K * N;
  const int threads = work > IRC_PARALLEL_CONV_WORK ? irc_nthreads() : 1;
  const long panels = (M + IRC_FC_MR - 1) / IRC_FC_MR;
  const int packed = K > IRC_FC_PACK_K;
  if (packed) {
    const irc_fc_pack_args pa = {x, xp, M, K};
    irc_parallel(irc_fc_pack_panel, &pa, panels, (double)M * K > 65536 ? threads : 1);
  }
  const long blocks = (N + NB - 1) / NB;
  /* Row-panel groups where the blocks are fewer than the parts wanted. */
  const long want = irc_pool_parts(blocks * panels, work, IRC_FC_PART_WORK, threads);
  long groups = 1;
  if (IRC_FC_ROW_GROUPS && blocks < want) groups = (want + blocks - 1) / blocks < panels ? (want + blocks - 1) / blocks
                                                                   : panels;
  const long tasks = blocks * groups;
  const irc_fc_args a = {packed ? xp : x, w, bias, res, y, M, K, N, panels, groups, tasks,
                         irc_pool_parts(tasks, work, IRC_FC_PART_WORK, threads), packed, NB,
                         act, act2};
  /* Slices of two vectors where the block holds them (AVX-512: NB 32; AVX2 and narrower:
     any NB), else one. */
  const irc_task_fn part = NB >= 2 * IRC_VL ? (packed ? irc_fc_part2p : irc_fc_part2)
                                            : (packed ? irc_fc_part1p : irc_fc_part1);
  irc_parallel(part, &a, a.parts, threads);
}
