/* irc CPU kernels, every ISA: the fused int8 depthwise convolution on column quads (IRC_QDWV,
   see kernels/common/qfused.c for the layouts and the ISAs' columns and dot products) as
   static inline functions with the kernel size and the mode as compile-time arguments; an
   instance (csrc.fused_depthwise_quads_kernel) is two small functions around them. In the
   snippet "qconv_tile", after the ISA's qconv_tile.h (AVX2's IRC_DWQ_STORE4 stores through
   its conv epilogue). */
/* The arguments of a column-quad depthwise convolution (an IRC_QDWV instance's entry point),
   read by its chunks. */
typedef struct {
  const uint8_t *x;
  long N, H, W, C, Cp;
  int zp_in;
  uint32_t flip;
  const int8_t *w;
  const int32_t *bias;
  const int64_t *q;
  int mode;
  int64_t zp, lo, hi;
  uint8_t *y;
  long OH, OW;
  int KH_, KW_, SH, SW, DH, DW, PT, PL;
  long tasks, chunks;
} irc_qdwv_args;

/* Chunk `ch` of a column-quad depthwise convolution's tasks (irc_parallel); KHC, KWC: the
   kernel size when the instance fixes it (3x3), else 0; MODEC as irc_qconv_chunk's. */
IRC_INLINE void irc_qdwv_chunk(const irc_qdwv_args *A, long ch, const int KHC, const int KWC,
                               const int MODEC) {
  const uint8_t *restrict x = A->x;
  const long N = A->N, H = A->H, W = A->W, C = A->C, Cp = A->Cp, OH = A->OH, OW = A->OW;
  const int zp_in = A->zp_in;
  const uint32_t flip = A->flip;
  const int8_t *restrict w = A->w;
  const int32_t *restrict bias = A->bias;
  const int64_t *restrict q = A->q;
  const int64_t zp = A->zp, lo = A->lo, hi = A->hi;
  uint8_t *restrict y = A->y;
  const int SH = A->SH, SW = A->SW, DH = A->DH, DW = A->DW, PT = A->PT, PL = A->PL;
  const int KH = KHC ? KHC : A->KH_, KW = KWC ? KWC : A->KW_, G = (KH + 3) / 4;
  /* Two output rows per task when one quad holds both rows' taps (stride and dilation 1,
     KH <= 3): the second row uses quad bytes 1 .. KH, its weights shifted up one byte. */
  const int R = SH == 1 && DH == 1 && KH <= 3 ? 2 : 1;
  const long tiles = (OH + R - 1) / R, nblk = Cp / 16;
  const long ncol = (IRC_DWQ_CHUNK - 1L) * SW + (long)(KW - 1) * DW + 1;
  const int md = MODEC >= 0 ? MODEC : A->mode;
  const long t0 = A->tasks * ch / A->chunks, t1 = A->tasks * (ch + 1) / A->chunks;
  (void)N, (void)md;
  for (long t = t0; t < t1; ++t) { /* (image, row tile, block of 16 channels) */
    uint8_t cols[G * ncol * IRC_DWQ_COL] __attribute__((aligned(64)));
    uint8_t zrow[16];
    memset(zrow, zp_in & 255, sizeof zrow);
    const long c = t % nblk * 16, n = t / nblk / tiles, oh = t / nblk % tiles * R;
    const long ih0 = oh * SH - PT, r = n * OH + oh;
    const int two = R == 2 && oh + 1 < OH, cnt = C - c < 16 ? (int)(C - c) : 16;
    const int nrows = KH + two; /* rows of the quads with nonzero weights */
    const uint8_t *rp[4 * G];
    long rs[4 * G];
    for (int k = 0; k < 4 * G; ++k) {
      const long ih = ih0 + (long)k * DH;
      const int inside = (k < KH || (two && k == KH)) && ih >= 0 && ih < H;
      rp[k] = inside ? x + (n * H + ih) * W * C + c : zrow;
      rs[k] = inside ? C : 0;
    }
    irc_vi32 bv;
    __builtin_memcpy(&bv, bias + c, 64);
    IRC_RQ_PARAMS(rq, q + c / 16 * IRC_RQ_BLOCK, md);
    const int8_t *restrict wb = w + c / 16 * (long)G * KW * 64;
    /* The weights of every tap, prepared once per task (the second row's shifted). */
    irc_dwq_w wv[KHC && KWC ? (KHC + 3) / 4 * KWC : G * KW];
    irc_dwq_w wv2[KWC ? KWC : KW];
    for (int k = 0; k < G * KW; ++k) {
      irc_vi32 w8;
      __builtin_memcpy(&w8, wb + k * 64, 64);
      wv[k] = irc_dwq_wprep(w8);
      if (k < KW) wv2[k] = irc_dwq_wprep((irc_vi32)((irc_vu32)w8 << 8));
    }
    for (long ow0 = 0; ow0 < OW; ow0 += IRC_DWQ_CHUNK) {
      const long nout = OW - ow0 < IRC_DWQ_CHUNK ? OW - ow0 : IRC_DWQ_CHUNK;
      const long used = (nout - 1) * SW + (long)(KW - 1) * DW + 1;
      for (int g = 0; g < G; ++g)
        irc_dwq_columns(cols + g * ncol * IRC_DWQ_COL, rp + 4 * g, rs + 4 * g, ow0 * SW - PL,
                        used, W, cnt, nrows - 4 * g < 4 ? nrows - 4 * g : 4, zp_in, flip);
      /* Four pixels at a time (a tail group repeats its last pixel, stored once): one
         requantization and packed store for the four (IRC_DWQ_STORE4). */
      for (long p0 = 0; p0 < nout; p0 += 4) {
        const long np = nout - p0 < 4 ? nout - p0 : 4;
        uint8_t *restrict yp = y + (r * OW + ow0 + p0) * C;
        irc_dwq_acc acc[4];
        for (int i = 0; i < 4; ++i) {
          const uint8_t *restrict cp = cols + (p0 + (i < np ? i : np - 1)) * SW * IRC_DWQ_COL;
          acc[i] = irc_dwq_init(bv);
          for (int g = 0; g < G; ++g)
            for (int kw = 0; kw < KW; ++kw)
              acc[i] = irc_dwq_dot(acc[i], cp + (g * ncol + (long)kw * DW) * IRC_DWQ_COL,
                                   wv[g * KW + kw]);
        }
        IRC_DWQ_STORE4(acc, np, rq, q + c / 16 * IRC_RQ_BLOCK, md, zp, lo, hi, yp, C, c, cnt);
        if (two) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t *restrict cp =
                cols + (p0 + (i < np ? i : np - 1)) * SW * IRC_DWQ_COL;
            acc[i] = irc_dwq_init(bv);
            for (int kw = 0; kw < KW; ++kw)
              acc[i] = irc_dwq_dot(acc[i], cp + (long)kw * DW * IRC_DWQ_COL, wv2[kw]);
          }
          IRC_DWQ_STORE4(acc, np, rq, q + c / 16 * IRC_RQ_BLOCK, md, zp, lo, hi,
                         yp + OW * C, C, c, cnt);
        }
      }
    }
  }
}

/* A column-quad depthwise convolution's tasks (one output row, or two, of 16 channels) split
   over the threads (irc_parallel): `chunk` runs irc_qdwv_chunk for the instance. */
IRC_INLINE void irc_qdwv_run(void (*chunk)(const void *, long), irc_qdwv_args a, const int KHC,
                             const int KWC) {
  const int KH = KHC ? KHC : a.KH_, KW = KWC ? KWC : a.KW_;
  const int R = a.SH == 1 && a.DH == 1 && KH <= 3 ? 2 : 1;
  const double work = (double)a.N * a.OH * a.OW * a.C * KH * KW;
  long chunks = (long)(work / IRC_QCHUNK_WORK * 2); /* ~2x cheaper per multiply-add */
  chunks = chunks < 8 ? 8 : (chunks > IRC_QDW_CHUNKS ? IRC_QDW_CHUNKS : chunks);
  a.tasks = a.N * ((a.OH + R - 1) / R) * (a.Cp / 16);
  a.chunks = a.tasks < chunks ? a.tasks : chunks;
  irc_parallel(chunk, &a, a.chunks, work > IRC_PARALLEL_QDW_WORK ? irc_nthreads() : 1);
}

/* An instance of the column-quad depthwise convolution (csrc.fused_depthwise_quads_kernel
   names them): NAME and its chunk function, kernel size and mode fixed at compile time. */
#define IRC_QDWV(NAME, KHC, KWC, MODEC)                                                       \
  static void NAME##_chunk(const void *ctx, long ch) {                                        \
    irc_qdwv_chunk((const irc_qdwv_args *)ctx, ch, KHC, KWC, MODEC);                          \
  }                                                                                           \
  static void NAME(const uint8_t *restrict x, long N, long H, long W, long C, long Cp,        \
                   int zp_in, uint32_t flip, const int8_t *restrict w,                        \
                   const int32_t *restrict bias, const int64_t *restrict q, int mode,         \
                   int64_t zp, int64_t lo, int64_t hi, uint8_t *restrict y, long OH, long OW, \
                   int KH_, int KW_, int SH, int SW, int DH, int DW, int PT, int PL) {        \
    const irc_qdwv_args a = {x,  N,  H,   W,   C,  Cp, zp_in, flip, w,  bias, q,  mode, zp, lo,  \
                             hi, y,  OH,  OW,  KH_, KW_, SH,  SW,   DH, DW,   PT, PL,   0,  0};  \
    irc_qdwv_run(NAME##_chunk, a, KHC, KWC);                                                  \
  }
