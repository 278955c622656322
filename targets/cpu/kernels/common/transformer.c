/* irc CPU kernels: snippet "transformer" (targets/cpu/transformer_kernels.py puts it in a
   translation unit): layer_norm, silu and scaled dot-product attention on the ISA's native
   float vector irc_vf (IRC_VL lanes), with scalar tails. */

/* The sum of the lanes of v. */
IRC_INLINE float irc_vf_hsum(irc_vf v) {
  float s = 0.0f;
  for (int i = 0; i < IRC_VL; ++i) s += v[i];
  return s;
}

/* The largest lane of v (NaN lanes ignored), as a tree where the ISA has one. */
IRC_INLINE float irc_vf_hmax(irc_vf v) {
#if IRC_VL == 16 && defined(__AVX512F__)
  return _mm512_reduce_max_ps((__m512)v);
#elif IRC_VL == 8 && defined(__AVX__)
  __m128 h = _mm_max_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
#else
  float m = v[0];
  for (int i = 1; i < IRC_VL; ++i) m = v[i] > m ? v[i] : m;
  return m;
#endif
}

/* The sum of the lanes of v, as a tree where the ISA has one. */
IRC_INLINE float irc_vf_hsum_tree(irc_vf v) {
#if IRC_VL == 16 && defined(__AVX512F__)
  return _mm512_reduce_add_ps((__m512)v);
#elif IRC_VL == 8 && defined(__AVX__)
  __m128 h = _mm_add_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
#else
  return irc_vf_hsum(v);
#endif
}

/* Cephes' expf polynomial: e^r for |r| <= ln2 / 2 (irc_vf_exp and irc_vf_exp_nonpos). */
IRC_INLINE irc_vf irc_vf_exp_poly(irc_vf r) {
  const irc_vf zero = {0.0f};
  const irc_vf z = r * r;
  irc_vf p = zero + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * z + r + 1.0f;
}

/* exp on IRC_VL lanes (Cephes' expf: x = n ln2 + r, a degree-6 polynomial of r, times 2^n),
   within 2 ulp of expf above e^-69; below (results under 1e-30) it is 0, so that what is
   computed from it never meets denormals (a masked score's softmax weight times a value
   would run at a hundredth of the speed); above 88.37 the argument is clamped (no inf).
   NaN gives NaN. */
IRC_INLINE irc_vf irc_vf_exp(irc_vf x) {
  const irc_vf zero = {0.0f};
  const irc_vfi nan = x != x;
  const irc_vfi tiny = x < zero - 69.0f;
  x = irc_vf_select(x > zero + 88.3762626647949f, zero + 88.3762626647949f, x);
  x = irc_vf_select(tiny, zero, x);
  /* n = x / ln2 rounded to nearest: adding 1.5 * 2^23 leaves it in the low mantissa bits
     (cheaper than floor(x / ln2 + 0.5) through two conversions; the same but at ties) */
  const irc_vf t = x * 1.44269504088896341f + 12582912.0f;
  const irc_vf fx = t - 12582912.0f;
  x = x - fx * 0.693359375f + fx * 2.12194440e-4f;
  const irc_vf p = irc_vf_exp_poly(x);
  const irc_vf scale = (irc_vf)(((irc_vfi)t - 0x4B400000 + 127) << 23);
  return irc_vf_select(nan, x, irc_vf_select(tiny, zero, p * scale));
}

/* exp(x) on IRC_VL lanes for x <= 0 (softmax numerators): x = n ln2 + r by the
   round-to-nearest of x / ln2 (the 1.5 * 2^23 shift), Cephes' polynomial of r (as
   irc_vf_exp), times 2^n; 0 below -87 (so no denormals), NaN gives NaN. */
IRC_INLINE irc_vf irc_vf_exp_nonpos(irc_vf x) {
  const irc_vf zero = {0.0f};
  const irc_vfi keep = x > zero - 87.0f; /* false for NaN and -inf too */
  const irc_vfi nan = x != x;
  const irc_vf t = x * 1.44269504088896341f + 12582912.0f;
  const irc_vf n = t - 12582912.0f;
  const irc_vf r = x - n * 0.693359375f + n * 2.12194440e-4f;
  const irc_vf p = irc_vf_exp_poly(r);
  const irc_vfi bits = ((irc_vfi)t - 0x4B400000 + 127) << 23;
  const irc_vf e = (irc_vf)((irc_vfi)(p * (irc_vf)bits) & keep);
  return irc_vf_select(nan, x, e);
}

/* 1 / d on IRC_VL lanes for 1 <= d <= 6: on AVX-512 the 14-bit reciprocal estimate and one
   Newton step, within 2 ulp (a 16-lane division occupies the divider ~10 cycles: gelu 0.88x
   the time, 1 thread, Xeon @ 2.50GHz); a division elsewhere (AVX2's 12-bit estimate needs
   two steps, which cost more than its 8-lane division). */
IRC_INLINE irc_vf irc_vf_recip_1_6(irc_vf d) {
#if IRC_VL == 16 && defined(__AVX512F__)
  const irc_vf r = (irc_vf)_mm512_rcp14_ps((__m512)d);
  return r * (2.0f - d * r);
#else
  return 1.0f / d;
#endif
}

/* erfc(a) for a >= 0 on IRC_VL lanes (Numerical Recipes' erfcc, a Chebyshev fit: relative
   error < 1.2e-7, so the far tail of gelu keeps its digits; 0 from a = 8.3 on, where exp's
   argument falls below -69, so a is clamped to 10 first: NaN gives 0, the caller keeps x's
   NaN). */
IRC_INLINE irc_vf irc_vf_erfc_abs(irc_vf a) {
  const irc_vf ten = {0.0f};
  a = irc_vf_select(a < 10.0f, a, ten + 10.0f); /* not a * 0 + 10: inf * 0 is NaN */
  const irc_vf t = irc_vf_recip_1_6(1.0f + 0.5f * a);
  irc_vf p = t * 0.17087277f - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  return t * irc_vf_exp_nonpos(p * t - 1.26551223f - a * a);
}

/* GELU on IRC_VL lanes: 0.5 x (1 + erf(x / sqrt 2)), or with tanh_form
   0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as the reference computes them
   (docs/semantics.md): x / (1 + exp(-2u)) and, for x < 0, 0.5 x erfc(-x / sqrt 2): no
   cancellation near -1; below x = -10, x * 0 (-0.0, -inf NaN). */
IRC_INLINE irc_vf irc_vf_gelu(irc_vf x, int tanh_form) {
  const irc_vfi tail = x < -10.0f;
  irc_vf y;
  if (tanh_form) {
    const irc_vf u2 = 1.5957691216057308f * (x + 0.044715f * x * x * x);
    y = x / (1.0f + irc_vf_exp(-u2));
  } else {
    const irc_vfi neg = x < 0.0f;
    const irc_vf ax = (irc_vf)((irc_vfi)x & 0x7fffffff); /* |x| */
    const irc_vf q = irc_vf_erfc_abs(ax * 0.70710678118654752f);
    y = 0.5f * x * irc_vf_select(neg, q, 2.0f - q);
  }
  return irc_vf_select(tail, x * 0.0f, y);
}

typedef struct {
  const float *x;
  float *y;
  long vectors, parts;
  int tanh_form;
} irc_unary_args;

#define IRC_UNARY_PART 16384 /* elements per part of a split gelu / silu */

static void irc_gelu_part(const void *ctx, long part) {
  const irc_unary_args *a = (const irc_unary_args *)ctx;
  long i0, i1;
  irc_pool_range(part, a->parts, a->vectors, &i0, &i1);
  for (long i = i0; i < i1; ++i)
    *(irc_vfu *)(a->y + i * IRC_VL) =
        irc_vf_gelu(*(const irc_vfu *)(a->x + i * IRC_VL), a->tanh_form);
}

/* y = gelu(x) on n elements (vectors, then one partial vector). */
static void irc_gelu(const float *restrict x, float *restrict y, long n, int tanh_form) {
  const long vectors = n / IRC_VL;
  const int threads = n > 65536 ? irc_nthreads() : 1;
  const irc_unary_args a = {x, y, vectors,
                            irc_pool_parts(vectors, (double)n, IRC_UNARY_PART, threads),
                            tanh_form};
  irc_parallel(irc_gelu_part, &a, a.parts, threads);
  const long rest = n - vectors * IRC_VL;
  if (rest)
    irc_vf_store_n(y + vectors * IRC_VL,
                   irc_vf_gelu(irc_vf_load_n(x + vectors * IRC_VL, (int)rest), tanh_form),
                   (int)rest);
}

/* y = (x - mean) / sqrt(var + eps) * g (+ b) over rows of n elements: the mean, then the
   (biased) variance of the centred row, both in float lanes. b may be NULL. */
typedef struct {
  const float *x, *g, *b;
  float *y;
  long rows, n, parts;
  float eps;
} irc_layer_norm_args;

static void irc_layer_norm_part(const void *ctx, long part) {
  const irc_layer_norm_args *restrict a = (const irc_layer_norm_args *)ctx;
  const float *restrict x = a->x, *restrict g = a->g, *restrict b = a->b;
  float *restrict y = a->y;
  const long n = a->n;
  const float eps = a->eps;
  long r0, r1;
  irc_pool_range(part, a->parts, a->rows, &r0, &r1);
  for (long r = r0; r < r1; ++r) {
    const float *restrict xr = x + r * n;
    float *restrict yr = y + r * n;
    irc_vf acc = {0.0f};
    long k = 0;
    for (; k + IRC_VL <= n; k += IRC_VL) acc += *(const irc_vfu *)(xr + k);
    float sum = irc_vf_hsum_tree(acc);
    for (; k < n; ++k) sum += xr[k];
    const float mean = sum / (float)n;
    irc_vf sq = {0.0f};
    for (k = 0; k + IRC_VL <= n; k += IRC_VL) {
      const irc_vf c = *(const irc_vfu *)(xr + k) - mean;
      sq += c * c;
    }
    float ss = irc_vf_hsum_tree(sq);
    for (; k < n; ++k) ss += (xr[k] - mean) * (xr[k] - mean);
    const float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (k = 0; k + IRC_VL <= n; k += IRC_VL) {
      irc_vf v = (*(const irc_vfu *)(xr + k) - mean) * inv * *(const irc_vfu *)(g + k);
      if (b) v += *(const irc_vfu *)(b + k);
      *(irc_vfu *)(yr + k) = v;
    }
    for (; k < n; ++k) yr[k] = (xr[k] - mean) * inv * g[k] + (b ? b[k] : 0.0f);
  }
}

static void irc_layer_norm(const float *restrict x, const float *restrict g,
                           const float *restrict b, float *restrict y, long rows, long n,
                           float eps) {
  const double work = (double)rows * n;
  const int threads = work > 65536.0 ? irc_nthreads() : 1;
  const irc_layer_norm_args a = {x, g, b, y, rows, n,
                                 irc_pool_parts(rows, work, IRC_UNARY_PART, threads), eps};
  irc_parallel(irc_layer_norm_part, &a, a.parts, threads);
}

/* SiLU on IRC_VL lanes: x * sigmoid(x) = x / (1 + exp(-x)). */
IRC_INLINE irc_vf irc_vf_silu(irc_vf v) { return v / (1.0f + irc_vf_exp(-v)); }

static void irc_silu_part(const void *ctx, long part) {
  const irc_unary_args *a = (const irc_unary_args *)ctx;
  long i0, i1;
  irc_pool_range(part, a->parts, a->vectors, &i0, &i1);
  for (long i = i0; i < i1; ++i)
    *(irc_vfu *)(a->y + i * IRC_VL) = irc_vf_silu(*(const irc_vfu *)(a->x + i * IRC_VL));
}

/* y = silu(x) on n elements (vectors, then one partial vector). */
static void irc_silu(const float *restrict x, float *restrict y, long n) {
  const long vectors = n / IRC_VL;
  const int threads = n > 131072 ? irc_nthreads() : 1;
  const irc_unary_args a = {x, y, vectors,
                            irc_pool_parts(vectors, (double)n, IRC_UNARY_PART, threads), 0};
  irc_parallel(irc_silu_part, &a, a.parts, threads);
  const long rest = n - vectors * IRC_VL;
  if (rest) /* one partial vector (as gelu): an element's bits do not depend on IRC_VL */
    irc_vf_store_n(y + vectors * IRC_VL,
                   irc_vf_silu(irc_vf_load_n(x + vectors * IRC_VL, (int)rest)), (int)rest);
}

/* Scaled dot-product attention: per batch (head) b, o[b] = softmax(scale * q[b] @ k[b]^T +
   mask) @ v[b]. A head's query rows go in blocks (irc_att_rows); a block's scores
   [rows][N] stay in a buffer on the thread's stack (in cache, never written out). Both
   products run as register tiles of IRC_ATT_MR rows x two vectors (irc_att_tile: every
   loaded key / value vector serves IRC_ATT_MR rows), column tiles outermost, each column
   slice of the keys or values packed contiguous (zero-filled to two vectors) so it stays in
   L1 across the block's rows; partial vectors are stored by masked moves. The scale and a
   unit-stride mask are applied as the scores are stored, and the softmax's 1 / sum scales
   the output rows as they are stored. */
#if IRC_VL >= 16
#define IRC_ATT_MR 8 /* 16 zmm accumulators of 32 */
#else
#define IRC_ATT_MR 6 /* 12 accumulators of 16 registers */
#endif
#define IRC_ATT_SCORES 16384 /* floats of a block's scores (64 KiB; see irc_att_rows) */
#define IRC_ATT_TILES 8      /* at most this many row tiles per block */
#define IRC_ATT_PACK_K 512   /* products over at most this many k pack their column slices */

/* How a tile stores its rows: c * rs[r] (the value product: rs the rows' 1 / sum), else
   c * scale; plus the row's mask (unit stride along the keys) where it has one; plus what
   y holds with accumulate. */
typedef struct {
  const float *rs;
  float scale;
  int accumulate;
  const float *mask[IRC_ATT_MR];
} irc_att_epilogue;

/* v0 (and v1 past IRC_VL) += the cols floats at p. */
IRC_INLINE void irc_att_add_row(irc_vf *v0, irc_vf *v1, const float *restrict p, int cols) {
  if (cols >= IRC_VL) {
    *v0 += *(const irc_vfu *)p;
    if (cols == 2 * IRC_VL) *v1 += *(const irc_vfu *)(p + IRC_VL);
    else if (cols > IRC_VL) *v1 += irc_vf_load_n(p + IRC_VL, cols - IRC_VL);
  } else {
    *v0 += irc_vf_load_n(p, cols);
  }
}

/* y[r][0:cols] = sum_{k < K} a[ao[r] + k] * x[k * 2 IRC_VL + 0:cols] through the epilogue
   for the IRC_ATT_MR rows of a block (ao: row offsets, the last row repeated past the
   block's end), the y rows r < rows ldy apart; x is a packed slice (two vectors per k,
   zero-filled); mask columns from j; 1 <= cols <= 2 * IRC_VL. */
IRC_INLINE void irc_att_tile(const float *restrict a, const long *restrict ao,
                             const float *restrict x, long K, float *restrict y, long ldy,
                             int rows, int cols, const irc_att_epilogue *restrict ep, long j) {
  const irc_vf zero = {0.0f};
  irc_vf c0[IRC_ATT_MR], c1[IRC_ATT_MR];
  for (int r = 0; r < IRC_ATT_MR; ++r) c0[r] = c1[r] = zero;
  if (cols > IRC_VL) {
    for (long k = 0; k < K; ++k) {
      const irc_vf x0 = *(const irc_vf *)(x + k * 2 * IRC_VL);
      const irc_vf x1 = *(const irc_vf *)(x + k * 2 * IRC_VL + IRC_VL);
      for (int r = 0; r < IRC_ATT_MR; ++r) {
        const float av = a[ao[r] + k];
        c0[r] += av * x0;
        c1[r] += av * x1;
      }
    }
  } else {
    for (long k = 0; k < K; ++k) {
      const irc_vf x0 = *(const irc_vf *)(x + k * 2 * IRC_VL);
      for (int r = 0; r < IRC_ATT_MR; ++r) c0[r] += a[ao[r] + k] * x0;
    }
  }
  for (int r = 0; r < rows; ++r) {
    const float f = ep->rs ? ep->rs[r] : ep->scale;
    irc_vf v0 = c0[r] * f, v1 = c1[r] * f;
    float *restrict yr = y + r * ldy;
    if (ep->mask[r]) irc_att_add_row(&v0, &v1, ep->mask[r] + j, cols);
    if (ep->accumulate) irc_att_add_row(&v0, &v1, yr, cols);
    if (cols >= IRC_VL) {
      *(irc_vfu *)yr = v0;
      if (cols == 2 * IRC_VL) *(irc_vfu *)(yr + IRC_VL) = v1;
      else if (cols > IRC_VL) irc_vf_store_n(yr + IRC_VL, v1, cols - IRC_VL);
    } else {
      irc_vf_store_n(yr, v0, cols);
    }
  }
}

#if IRC_VL == 16 && defined(__AVX512F__)
#define IRC_ATT_TRANSPOSE 1
/* r[i] = column i of the IRC_VL x IRC_VL block whose row i was r[i]. */
IRC_INLINE void irc_vf_transpose(irc_vf r[IRC_VL]) {
  __m512 a[16], t[16];
  for (int i = 0; i < 16; ++i) a[i] = (__m512)r[i];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d w = _mm512_castps_pd(t[4 * i]), x = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d y = _mm512_castps_pd(t[4 * i + 2]), z = _mm512_castps_pd(t[4 * i + 3]);
    a[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(w, y));
    a[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(w, y));
    a[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, z));
    a[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, z));
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_f32x4(a[8 * i + j], a[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_f32x4(a[8 * i + j], a[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = (irc_vf)_mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = (irc_vf)_mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}
#elif IRC_VL == 8 && defined(__AVX__)
#define IRC_ATT_TRANSPOSE 1
IRC_INLINE void irc_vf_transpose(irc_vf r[IRC_VL]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps((__m256)r[2 * i], (__m256)r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps((__m256)r[2 * i], (__m256)r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = (irc_vf)_mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
    r[4 + i] = (irc_vf)_mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
  }
}
#else
#define IRC_ATT_TRANSPOSE 0
#endif

/* xp[k][c0 + 0:cols] = element k of rows c0.. of x (row c at x + c * ldx) for k < K: whole
   IRC_VL x IRC_VL blocks transposed in registers where the ISA has the shuffles, the rest
   one element at a time. */
static void irc_att_pack_t(const float *restrict x, long ldx, long K, int c0, int cols,
                           float *restrict xp) {
  long k0 = 0;
#if IRC_ATT_TRANSPOSE
  if (cols == IRC_VL)
    for (; k0 + IRC_VL <= K; k0 += IRC_VL) {
      irc_vf r[IRC_VL];
      for (int i = 0; i < IRC_VL; ++i) r[i] = *(const irc_vfu *)(x + i * ldx + k0);
      irc_vf_transpose(r);
      for (int i = 0; i < IRC_VL; ++i) *(irc_vf *)(xp + (k0 + i) * 2 * IRC_VL + c0) = r[i];
    }
#endif
  for (int c = 0; c < cols; ++c) {
    const float *restrict xc = x + c * ldx;
    for (long k = k0; k < K; ++k) xp[k * 2 * IRC_VL + c0 + c] = xc[k];
  }
}

/* xp[k][0:2 IRC_VL] = columns j..j+cols of x (element (k, c) at x[k * ldx + c], or with
   x_t at x[c * ldx + k]) for k < K, zero past cols. */
static void irc_att_pack(const float *restrict x, long ldx, int x_t, long K, long j, int cols,
                         float *restrict xp) {
  const irc_vf zero = {0.0f};
  if (x_t) {
    if (cols < 2 * IRC_VL)
      for (long k = 0; k < K; ++k) {
        *(irc_vf *)(xp + k * 2 * IRC_VL) = zero;
        *(irc_vf *)(xp + k * 2 * IRC_VL + IRC_VL) = zero;
      }
    const int c1 = cols < IRC_VL ? cols : IRC_VL;
    irc_att_pack_t(x + j * ldx, ldx, K, 0, c1, xp);
    if (cols > IRC_VL) irc_att_pack_t(x + (j + IRC_VL) * ldx, ldx, K, IRC_VL, cols - IRC_VL, xp);
    return;
  }
  for (long k = 0; k < K; ++k) {
    const float *restrict xr = x + k * ldx + j;
    irc_vf x0 = zero, x1 = zero;
    if (cols >= IRC_VL) {
      x0 = *(const irc_vfu *)xr;
      if (cols == 2 * IRC_VL) x1 = *(const irc_vfu *)(xr + IRC_VL);
      else if (cols > IRC_VL) x1 = irc_vf_load_n(xr + IRC_VL, cols - IRC_VL);
    } else {
      x0 = irc_vf_load_n(xr, cols);
    }
    *(irc_vf *)(xp + k * 2 * IRC_VL) = x0;
    *(irc_vf *)(xp + k * 2 * IRC_VL + IRC_VL) = x1;
  }
}

/* y[0:rows][0:n] = a[0:rows][0:K] @ x[0:K][0:n] (a rows lda apart, y rows ldy; x as
   irc_att_pack reads it) through the epilogue (rs and mask rows from the block's row 0);
   k in chunks of IRC_ATT_PACK_K, the later ones added to the first. */
static void irc_att_product(const float *restrict a, long lda, long rows,
                            const float *restrict x, long ldx, int x_t, long K, long n,
                            float *restrict y, long ldy, const float *restrict rs, float scale,
                            const float *const *restrict mask) {
  const long chunk = K < 1 ? 1 : (K < IRC_ATT_PACK_K ? K : IRC_ATT_PACK_K);
  float xp[chunk * 2 * IRC_VL] __attribute__((aligned(64)));
  for (long j = 0; j < n; j += 2 * IRC_VL) {
    const int cols = n - j < 2 * IRC_VL ? (int)(n - j) : 2 * IRC_VL;
    for (long k0 = 0; k0 == 0 || k0 < K; k0 += chunk) { /* K = 0: one empty chunk */
      const long kc = K - k0 < chunk ? K - k0 : chunk;
      irc_att_pack(x_t ? x + k0 : x + k0 * ldx, ldx, x_t, kc, j, cols, xp);
      for (long r0 = 0; r0 < rows; r0 += IRC_ATT_MR) {
        const int mr = rows - r0 < IRC_ATT_MR ? (int)(rows - r0) : IRC_ATT_MR;
        long ao[IRC_ATT_MR];
        irc_att_epilogue ep = {rs ? rs + r0 : NULL, scale, k0 > 0, {NULL}};
        for (int r = 0; r < IRC_ATT_MR; ++r) {
          ao[r] = (r < mr ? r : mr - 1) * lda;
          ep.mask[r] = mask && k0 == 0 && r < mr ? mask[r0 + r] : NULL;
        }
        irc_att_tile(a + r0 * lda + k0, ao, xp, kc, y + r0 * ldy + j, ldy, mr, cols, &ep, j);
      }
    }
  }
}

/* Softmax numerators of a row of n scores in place (exp(s - max)); returns 1 / their sum. */
IRC_INLINE float irc_att_softmax_row(float *restrict s, long n) {
  const irc_vf zero = {0.0f};
  const int rest = (int)(n % IRC_VL);
  const long full = n - rest;
  irc_vf vmx = zero - INFINITY;
  for (long j = 0; j < full; j += IRC_VL) {
    const irc_vf x = *(irc_vfu *)(s + j);
    vmx = irc_vf_select(x > vmx, x, vmx);
  }
  irc_vfi tail = {0};
  for (int i = 0; i < IRC_VL; ++i) tail[i] = i < rest ? -1 : 0;
  if (rest) {
    const irc_vf x = irc_vf_select(tail, irc_vf_load_n(s + full, rest), zero - INFINITY);
    vmx = irc_vf_select(x > vmx, x, vmx);
  }
  float mx = irc_vf_hmax(vmx);
  if (!(mx > -INFINITY)) mx = 0.0f; /* a row masked everywhere with -inf */
  irc_vf acc = zero;
  for (long j = 0; j < full; j += IRC_VL) {
    const irc_vf e = irc_vf_exp_nonpos(*(irc_vfu *)(s + j) - mx);
    *(irc_vfu *)(s + j) = e;
    acc += e;
  }
  if (rest) {
    const irc_vf e = irc_vf_exp_nonpos(irc_vf_load_n(s + full, rest) - mx);
    irc_vf_store_n(s + full, e, rest);
    acc += irc_vf_select(tail, e, zero);
  }
  return 1.0f / irc_vf_hsum_tree(acc);
}

/* irc_att_layout: types.h. */

typedef struct {
  const float *q, *k, *v, *mask;
  float *o;
  long M, N, D, E, rows, blocks, tasks, parts, ld;
  float scale;
  const long *mo;
  long msm, msn;
  const irc_att_layout *lay;
} irc_attention_args;

/* Part `part` of irc_attention: task t is batch t / blocks, query block t % blocks. */
static void irc_attention_part(const void *ctx, long part) {
  const irc_attention_args *restrict a = (const irc_attention_args *)ctx;
  const long M = a->M, N = a->N, D = a->D, E = a->E, R = a->rows, blocks = a->blocks;
  const irc_att_layout *restrict lay = a->lay;
  const long ld = a->ld, msm = a->msm, msn = a->msn;
  long t0, t1;
  irc_pool_range(part, a->parts, a->tasks, &t0, &t1);
  float s[R * ld] __attribute__((aligned(64)));
  float inv[R];
  const float *mrows[R];
  for (long t = t0; t < t1; ++t) {
    const long b = t / blocks, m0 = (t % blocks) * R;
    const long rows = M - m0 < R ? M - m0 : R;
    const float *restrict qb = a->q + lay->qo[b] + m0 * lay->qs;
    const float *restrict kb = a->k + lay->ko[b];
    const float *restrict vb = a->v + lay->vo[b];
    float *restrict ob = a->o + lay->oo[b] + m0 * lay->os;
    for (long r = 0; r < rows; ++r)
      mrows[r] = a->mask ? a->mask + a->mo[b] + (m0 + r) * msm : NULL;
    const int fused_mask = a->mask && msn == 1;
    irc_att_product(qb, lay->qs, rows, kb, lay->ks, lay->k_t, D, N, s, ld, NULL, a->scale,
                    fused_mask ? mrows : NULL);
    for (long r = 0; r < rows; ++r) {
      float *restrict sr = s + r * ld;
      if (a->mask && !fused_mask)
        for (long n = 0; n < N; ++n) sr[n] += mrows[r][n * msn];
      inv[r] = irc_att_softmax_row(sr, N);
    }
    irc_att_product(s, ld, rows, vb, lay->vs, 0, N, E, ob, lay->os, inv, 1.0f, NULL);
  }
}

/* The query rows per block: a whole number of tiles, at most IRC_ATT_TILES, whose scores
   fit IRC_ATT_SCORES floats (long rows: up to 4 tiles within 4x that; always one tile, at
   most 512 KiB at 16384 keys), fewer while that leaves under four tasks per thread; then
   the blocks of a head evened out (198 rows: 56, 56, 56, 30, not 64, 64, 64, 6). */
static long irc_att_rows(long B, long M, long ld, int threads) {
  long rows = IRC_ATT_SCORES / ld / IRC_ATT_MR * IRC_ATT_MR;
  if (rows < 4 * IRC_ATT_MR) { /* long rows: up to 4 tiles within 4x the budget */
    rows = 4 * IRC_ATT_SCORES / ld / IRC_ATT_MR * IRC_ATT_MR;
    rows = rows > 4 * IRC_ATT_MR ? 4 * IRC_ATT_MR : rows;
  }
  if (rows < IRC_ATT_MR) rows = IRC_ATT_MR;
  if (rows > IRC_ATT_TILES * IRC_ATT_MR) rows = IRC_ATT_TILES * IRC_ATT_MR;
  while (rows > IRC_ATT_MR && B * ((M + rows - 1) / rows) < 4L * threads) rows -= IRC_ATT_MR;
  const long blocks = (M + rows - 1) / rows;
  const long even = ((M + blocks - 1) / blocks + IRC_ATT_MR - 1) / IRC_ATT_MR * IRC_ATT_MR;
  return even < rows ? even : rows;
}

/* o[b] = softmax(scale * q[b] @ k[b]^T + mask[b]) @ v[b] for the B heads of [M][D]
   queries, N keys ([N][D] or [D][N]: lay->k_t) and [N][E] values, each where `lay` puts it;
   the mask's row m of head b at mo[b] + m * msm, elements msn apart (mask NULL: none). */
static void irc_attention(const float *restrict q, const float *restrict k,
                          const float *restrict v, const float *restrict mask,
                          float *restrict o, long B, long M, long N, long D, long E,
                          float scale, const long *restrict mo, long msm, long msn,
                          const irc_att_layout *restrict lay) {
  if (N == 0) { /* no keys: an empty sum */
    for (long b = 0; b < B; ++b)
      for (long m = 0; m < M; ++m)
        memset(o + lay->oo[b] + m * lay->os, 0, sizeof(float) * (size_t)E);
    return;
  }
  const double work = (double)B * M * N * (D + E);
  const long ld = (N + IRC_VL - 1) / IRC_VL * IRC_VL;
  const int threads = work > IRC_PARALLEL_WORK ? irc_nthreads() : 1;
  const long rows = irc_att_rows(B, M, ld, threads);
  const long blocks = (M + rows - 1) / rows;
  const irc_attention_args a = {q,     k,     v,  mask, o,   M,   N,      D,     E,
                                rows,  blocks, B * blocks,
                                irc_pool_parts(B * blocks, work, 250000.0, threads),
                                ld,    scale, mo, msm, msn, lay};
  irc_parallel(irc_attention_part, &a, a.parts, threads);
}
