/* irc CPU kernels: snippet "pad_nhwc" (targets/cpu/csrc.py puts it in a translation unit). */
/* Output bytes per part of a split pad, and from which a pad splits over the threads
   (~5 us of one core: a pad only writes its output once). */
#define IRC_PAD_PART_BYTES 32768.0
#define IRC_PAD_PARALLEL_BYTES 65536.0

/* dst = src [D0][D1][D2][D3] with lo[d] / hi[d] elements of `fill` before / after each
   dimension d (elements of esize = 1, 2, 4 or 8 bytes; zero: every byte of fill is 0). */
typedef struct {
  char *dst;
  const char *src;
  const void *fill;
  int esize, zero;
  long d[4], lo[4], od[4];
  long rows, parts;
} irc_pad_args;

/* n elements of the fill at p. */
IRC_INLINE void irc_pad_fill(const irc_pad_args *restrict a, char *restrict p, long n) {
  if (n <= 0) return;
  if (a->zero && a->esize == 4 && n <= IRC_VL) { /* a pixel's padding channels */
    irc_vf_store_n((float *)p, (irc_vf){0.0f}, (int)n);
    return;
  }
  if (a->zero) {
    memset(p, 0, (size_t)n * a->esize);
    return;
  }
  switch (a->esize) {
    case 1: memset(p, *(const unsigned char *)a->fill, (size_t)n); break;
    case 2: {
      uint16_t v, *o = (uint16_t *)p;
      memcpy(&v, a->fill, 2);
      for (long i = 0; i < n; ++i) o[i] = v;
      break;
    }
    case 4: {
      uint32_t v, *o = (uint32_t *)p;
      memcpy(&v, a->fill, 4);
      for (long i = 0; i < n; ++i) o[i] = v;
      break;
    }
    default: {
      uint64_t v, *o = (uint64_t *)p;
      memcpy(&v, a->fill, 8);
      for (long i = 0; i < n; ++i) o[i] = v;
      break;
    }
  }
}

/* n elements copied from x to o (short rows, e.g. a pixel's channels, are not worth a
   memcpy call each): 4-byte elements as float vectors (moves keep every bit) with a partial
   last vector, the others in typed loops. */
IRC_INLINE void irc_pad_copy(int esize, char *restrict o, const char *restrict x, long n) {
  if (esize == 4) {
    long i = 0;
    for (; i + IRC_VL <= n; i += IRC_VL)
      *(irc_vfu *)(o + 4 * i) = *(const irc_vfu *)(x + 4 * i);
    if (i < n) {
      const int rest = (int)(n - i);
      irc_vf_store_n((float *)(o + 4 * i), irc_vf_load_n((const float *)(x + 4 * i), rest), rest);
    }
    return;
  }
  switch (esize) {
    case 1: for (long i = 0; i < n; ++i) o[i] = x[i]; break;
    case 2:
      for (long i = 0; i < n; ++i) ((uint16_t *)o)[i] = ((const uint16_t *)x)[i];
      break;
    case 4:
      for (long i = 0; i < n; ++i) ((uint32_t *)o)[i] = ((const uint32_t *)x)[i];
      break;
    default:
      for (long i = 0; i < n; ++i) ((uint64_t *)o)[i] = ((const uint64_t *)x)[i];
      break;
  }
}

/* Output rows [r0, r1) of [OD0][OD1], each [OD2][OD3] elements, written once. */
static void irc_pad_rows(const irc_pad_args *restrict a, long r0, long r1) {
  const int es = a->esize;
  const long d2 = a->d[2], d3 = a->d[3], lo2 = a->lo[2], lo3 = a->lo[3];
  const long od2 = a->od[2], od3 = a->od[3], hi3 = od3 - lo3 - d3;
  for (long r = r0; r < r1; ++r) {
    char *o = a->dst + r * od2 * od3 * es;
    const long s0 = r / a->od[1] - a->lo[0], s1 = r % a->od[1] - a->lo[1];
    if (s0 < 0 || s0 >= a->d[0] || s1 < 0 || s1 >= a->d[1]) {
      irc_pad_fill(a, o, od2 * od3);
      continue;
    }
    const char *x = a->src + (s0 * a->d[1] + s1) * d2 * d3 * es;
    irc_pad_fill(a, o, lo2 * od3);
    char *in = o + lo2 * od3 * es;
    if (lo3 == 0 && hi3 == 0)
      memcpy(in, x, (size_t)(d2 * d3 * es));
    else if (lo3 == 0 && a->zero && es == 4)
      /* channels padded after with zeros (a residual branch's channel pad): each output
         vector is a load of what is left of the pixel's input, zero lanes past it */
      for (long w = 0; w < d2; ++w) {
        float *ow = (float *)in + w * od3;
        const float *xw = (const float *)x + w * d3;
        for (long j = 0; j < od3; j += IRC_VL) {
          const long have = d3 - j, room = od3 - j;
          const irc_vf v = have >= IRC_VL ? *(const irc_vfu *)(xw + j)
                           : have > 0     ? irc_vf_load_n(xw + j, (int)have)
                                          : (irc_vf){0.0f};
          if (room >= IRC_VL)
            *(irc_vfu *)(ow + j) = v;
          else
            irc_vf_store_n(ow + j, v, (int)room);
        }
      }
    else
      for (long w = 0; w < d2; ++w) {
        char *ow = in + w * od3 * es;
        irc_pad_fill(a, ow, lo3);
        irc_pad_copy(es, ow + lo3 * es, x + w * d3 * es, d3);
        irc_pad_fill(a, ow + (lo3 + d3) * es, hi3);
      }
    irc_pad_fill(a, in + d2 * od3 * es, (od2 - lo2 - d2) * od3);
  }
}

static void irc_pad_part(const void *ctx, long part) {
  const irc_pad_args *a = (const irc_pad_args *)ctx;
  long r0, r1;
  irc_pool_range(part, a->parts, a->rows, &r0, &r1);
  irc_pad_rows(a, r0, r1);
}

/* dst = src of dims d[4] padded by lo[4] / hi[4] (>= 0) elements of *fill (esize bytes),
   every output byte written once; rows of the two leading dimensions split over the
   threads when the output is big enough. */
static void irc_pad(void *dst, const void *src, int esize, const long d[4], const long lo[4],
                    const long hi[4], const void *fill) {
  irc_pad_args a = {(char *)dst, (const char *)src, fill, esize, 1, {0}, {0}, {0}, 0, 1};
  for (int k = 0; k < esize; ++k) a.zero &= ((const unsigned char *)fill)[k] == 0;
  for (int k = 0; k < 4; ++k) {
    a.d[k] = d[k];
    a.lo[k] = lo[k];
    a.od[k] = lo[k] + d[k] + hi[k];
  }
  a.rows = a.od[0] * a.od[1];
  const double bytes = (double)a.rows * a.od[2] * a.od[3] * esize;
  const int threads = a.rows > 1 && bytes > IRC_PAD_PARALLEL_BYTES ? irc_nthreads() : 1;
  a.parts = irc_pool_parts(a.rows, bytes, IRC_PAD_PART_BYTES, threads);
  irc_parallel(irc_pad_part, &a, a.parts, threads);
}

/* dst = src [N][H][W][C] (float) with PT/PL/PB/PR zero rows and columns around each image. */
static void irc_pad_nhwc(float *restrict dst, const float *restrict src, int N, int H, int W,
                         int C, int PT, int PL, int PB, int PR) {
  const long d[4] = {N, H, W, C}, lo[4] = {0, PT, PL, 0}, hi[4] = {0, PB, PR, 0};
  const float zero = 0.0f;
  irc_pad(dst, src, 4, d, lo, hi, &zero);
}
