/* irc CPU kernels, every ISA: the fused int8 convolution / fully connected (IRC_QCONV, see
   kernels/common/qfused.c for the layouts) as static inline functions with the tile shape and
   the mode as compile-time arguments; an instance (csrc.fused_conv_kernel) is two small
   functions around them. Follows the ISA's qconv_tile.h (IRC_QCONV_AVX2, irc_qconv_fill,
   irc_qconv_tile_avx2) in the snippet "qconv_tile". */
/* The arguments of a fused int8 conv (an IRC_QCONV instance's entry point), read by its
   chunks. */
#define IRC_QCONV_MR_MAX 8 /* the instances' largest tile: MR <= 8 pixels, NV <= 2 */
typedef struct {
  const uint8_t *x;
  long N, Hp, Wp, Cs;
  uint32_t flip;
  const int8_t *w;
  const int32_t *bias;
  const int64_t *q;
  int mode;
  int64_t zp, lo, hi;
  uint8_t *y;
  long OH, OW, OC;
  int KH, KW, SH, SW, DH, DW;
  long C4;
} irc_qconv_args;

/* The conv's tile on vectors of IRC_QLANES channels (no VNNI, below AVX-512): the tile's
   channels in slices of IRC_QLANES, each slice's MR accumulators in registers over all taps,
   then stored into its lanes of acc [MR][NV][16] (bias: the tile's block); the int32 sums
   are the same. */
IRC_INLINE void irc_qconv_slices(const int MR, const int NV, int32_t *restrict acc,
                                 const int32_t *restrict bias, const int8_t *restrict wb,
                                 const uint32_t *restrict xb, int buffered,
                                 const uint8_t *const *xp, const irc_qconv_args *A) {
  const long NB = 16 * NV, Wp = A->Wp, Cs = A->Cs, C4 = A->C4;
  const int KH = A->KH, KW = A->KW, DH = A->DH, DW = A->DW;
  const uint32_t flip = A->flip;
  for (int s = 0; s < NV * 16 / IRC_QLANES; ++s) {
    const long sc = (long)s * IRC_QLANES; /* the slice's first channel in the block */
    irc_viq an[IRC_QCONV_MR_MAX], bq;
    __builtin_memcpy(&bq, bias + sc, sizeof bq);
    for (int p = 0; p < MR; ++p) an[p] = bq;
    if (buffered)
      for (long k = 0; k < KH * KW * C4; ++k) {
        irc_viq wq;
        __builtin_memcpy(&wq, wb + (k * NB + sc) * 4, sizeof wq);
        for (int p = 0; p < MR; ++p) an[p] = irc_dot4q(an[p], xb[k * MR + p], wq);
      }
    else
      for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw) {
          const long off = ((long)kh * DH * Wp + (long)kw * DW) * Cs;
          const int8_t *restrict wp = wb + ((long)kh * KW + kw) * C4 * NB * 4;
          for (long c4 = 0; c4 < C4; ++c4) {
            irc_viq wq;
            __builtin_memcpy(&wq, wp + (c4 * NB + sc) * 4, sizeof wq);
            for (int p = 0; p < MR; ++p) {
              uint32_t a;
              __builtin_memcpy(&a, xp[p] + off + c4 * 4, 4);
              an[p] = irc_dot4q(an[p], a ^ flip, wq);
            }
          }
        }
    for (int p = 0; p < MR; ++p) __builtin_memcpy(acc + p * NV * 16 + sc, &an[p], sizeof an[p]);
  }
}

/* Chunk `ch` of a fused int8 conv's tasks (irc_parallel) for an MR x 16 NV register tile;
   MODEC: the requantization mode when the instance fixes it (0), else -1 (A->mode). */
IRC_INLINE void irc_qconv_chunk(const irc_qconv_args *A, long ch, const int MR, const int NV,
                                const int MODEC) {
  const uint8_t *restrict x = A->x;
  const long N = A->N, Hp = A->Hp, Wp = A->Wp, Cs = A->Cs;
  const uint32_t flip = A->flip;
  const int8_t *restrict w = A->w;
  const int32_t *restrict bias = A->bias;
  const int64_t *restrict q = A->q;
  const int64_t zp = A->zp, lo = A->lo, hi = A->hi;
  uint8_t *restrict y = A->y;
  const long OH = A->OH, OW = A->OW, OC = A->OC, C4 = A->C4;
  const int KH = A->KH, KW = A->KW, SH = A->SH, SW = A->SW, DH = A->DH, DW = A->DW;
  const long NB = 16 * NV, nblk = (OC + NB - 1) / NB, tiles = (OW + MR - 1) / MR;
  const long tasks = N * OH * tiles * nblk;
  const int md = MODEC >= 0 ? MODEC : A->mode;
  const long chunks = irc_qconv_chunks(tasks, (double)N * OH * OW * OC * KH * KW * C4 * 4);
  const int buffered = (long)MR * KH * KW * C4 <= IRC_QCONV_XBUF;
  (void)md;
  {
    const long t0 = tasks * ch / chunks, t1 = tasks * (ch + 1) / chunks;
    long b = t0 % nblk, r = t0 / nblk / tiles, ow0 = t0 / nblk % tiles * MR;
    const uint8_t *xp[IRC_QCONV_MR_MAX] = {0}; /* set at the chunk's first task */
    uint32_t xb[IRC_QCONV_XBUF * (1 + IRC_QCONV_WIDE_X)];
    for (long t = t0; t < t1; ++t) {
      if (t == t0 || b == 0) { /* a new pixel tile */
        const long n = r / OH, oh = r % OH;
        for (int p = 0; p < MR; ++p) {
          const long pix = ow0 + p < OW ? ow0 + p : OW - 1;
          xp[p] = x + ((n * Hp + oh * SH) * Wp + pix * SW) * Cs;
        }
        if (buffered) /* the tile's input words, once for all its channel blocks */
          irc_qconv_fill(xb, xp, MR, KH, KW, C4, (long)DH * Wp * Cs, (long)DW * Cs, flip,
                         IRC_QCONV_XBUF);
      }
      irc_vi32 acc[IRC_QCONV_MR_MAX * 2]; /* [MR][NV] */
      const int8_t *restrict wb = w + b * KH * KW * C4 * NB * 4;
      int stored = 0;
      if (IRC_QCONV_AVX2 && buffered) /* AVX2 without VNNI: exact int16 pairs */
        stored = irc_qconv_tile_avx2(MR, NV, (int32_t *)acc, bias + b * NB, xb, wb,
                                     KH * KW * C4, MODEC == 0,
                                     q + b * NV * IRC_RQ_BLOCK, zp, lo, hi,
                                     y + (r * OW + ow0) * OC, OW - ow0, OC, b * NB);
      else if (IRC_QLANES < 16) /* slices of native vectors (IRC_QLANES) */
        irc_qconv_slices(MR, NV, (int32_t *)acc, bias + b * NB, wb, xb, buffered, xp, A);
      else {
        for (int v = 0; v < NV; ++v) {
          irc_vi32 bv;
          __builtin_memcpy(&bv, bias + b * NB + v * 16, 64);
          for (int p = 0; p < MR; ++p) acc[p * NV + v] = bv;
        }
        if (buffered) /* all taps: the weights are packed in the same order */
          for (long k = 0; k < KH * KW * C4; ++k) {
            irc_vi32 wv[2];
            for (int v = 0; v < NV; ++v)
              __builtin_memcpy(&wv[v], wb + (k * NB + v * 16) * 4, 64);
            for (int p = 0; p < MR; ++p)
              for (int v = 0; v < NV; ++v)
                acc[p * NV + v] = irc_dot4(acc[p * NV + v], xb[k * MR + p], wv[v]);
          }
        else
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              const long off = ((long)kh * DH * Wp + (long)kw * DW) * Cs;
              const int8_t *restrict wp = wb + ((long)kh * KW + kw) * C4 * NB * 4;
              for (long c4 = 0; c4 < C4; ++c4) {
                irc_vi32 wv[2];
                for (int v = 0; v < NV; ++v)
                  __builtin_memcpy(&wv[v], wp + (c4 * NB + v * 16) * 4, 64);
                for (int p = 0; p < MR; ++p) {
                  uint32_t a;
                  __builtin_memcpy(&a, xp[p] + off + c4 * 4, 4);
                  a ^= flip;
                  for (int v = 0; v < NV; ++v)
                    acc[p * NV + v] = irc_dot4(acc[p * NV + v], a, wv[v]);
                }
              }
            }
      }
      if (stored) {
      } else if (IRC_QCONV_PACKED && MODEC == 0 && MR % (4 / NV) == 0) {
        uint8_t *restrict yt = y + (r * OW + ow0) * OC;
        const long px = OW - ow0, oc0 = b * NB;
        const int64_t *restrict qb = q + b * NV * IRC_RQ_BLOCK;
        if (lo - zp >= 0)
          IRC_QCONV_STORE4(acc, MR, NV, qb, zp, lo, hi, yt, px, OC, oc0, 1);
        else
          IRC_QCONV_STORE4(acc, MR, NV, qb, zp, lo, hi, yt, px, OC, oc0, 0);
      } else
        for (int v = 0; v < NV; ++v) {
          const long oc0 = b * NB + v * 16;
          if (oc0 >= OC) break;
          const int cnt = OC - oc0 < 16 ? (int)(OC - oc0) : 16;
          IRC_RQ_PARAMS(rq, q + oc0 / 16 * IRC_RQ_BLOCK, md);
          for (int p = 0; p < MR && ow0 + p < OW; ++p)
            IRC_RQ_STORE(acc[p * NV + v], rq, q, md, zp, lo, hi,
                         y + (r * OW + ow0 + p) * OC + oc0, cnt);
        }
      if (++b == nblk) {
        b = 0;
        ow0 += MR;
        if (ow0 >= OW) ow0 = 0, ++r;
      }
    }
  }
}

/* A fused int8 conv's tasks split over the threads (irc_parallel): `chunk` runs
   irc_qconv_chunk for the instance's tile. */
IRC_INLINE void irc_qconv_run(void (*chunk)(const void *, long), const irc_qconv_args *a,
                              const int MR, const int NV) {
  const long tasks = a->N * a->OH * ((a->OW + MR - 1) / MR) * ((a->OC + 16 * NV - 1) / (16 * NV));
  const double work = (double)a->N * a->OH * a->OW * a->OC * a->KH * a->KW * a->C4 * 4;
  irc_parallel(chunk, a, irc_qconv_chunks(tasks, work),
               work > IRC_PARALLEL_QCONV_WORK ? irc_nthreads() : 1);
}

/* An instance of the fused int8 conv (csrc.fused_conv_kernel names them): NAME and its
   chunk function, the tile MR x 16 NV and the mode MODEC fixed at compile time. */
#define IRC_QCONV(NAME, MR, NV, MODEC)                                                        \
  static void NAME##_chunk(const void *ctx, long ch) {                                        \
    irc_qconv_chunk((const irc_qconv_args *)ctx, ch, MR, NV, MODEC);                          \
  }                                                                                           \
  static void NAME(const uint8_t *restrict x, long N, long Hp, long Wp, long Cs,              \
                   uint32_t flip, const int8_t *restrict w, const int32_t *restrict bias,     \
                   const int64_t *restrict q, int mode, int64_t zp, int64_t lo, int64_t hi,   \
                   uint8_t *restrict y, long OH, long OW, long OC, int KH, int KW, int SH,    \
                   int SW, int DH, int DW, long C4) {                                         \
    const irc_qconv_args a = {x,  N,  Hp, Wp, Cs, flip, w,  bias, q,  mode, zp, lo, hi,       \
                              y,  OH, OW, OC, KH, KW,   SH, SW,   DH, DW,   C4};              \
    irc_qconv_run(NAME##_chunk, &a, MR, NV);                                                  \
  }
