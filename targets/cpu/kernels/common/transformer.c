/* irc CPU kernels: snippet "transformer" (targets/cpu/transformer_kernels.py puts it in a
   translation unit): layer_norm, silu and scaled dot-product attention on the ISA's native
   float vector irc_vf (IRC_VL lanes), with scalar tails. */

/* The sum of the lanes of v. */
IRC_INLINE float irc_vf_hsum(irc_vf v) {
  float s = 0.0f;
  for (int i = 0; i < IRC_VL; ++i) s += v[i];
  return s;
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
  irc_vf fx = x * 1.44269504088896341f + 0.5f;
  irc_vf t = __builtin_convertvector(__builtin_convertvector(fx, irc_vfi), irc_vf);
  fx = irc_vf_select(t > fx, t - 1.0f, t); /* floor */
  x = x - fx * 0.693359375f + fx * 2.12194440e-4f;
  const irc_vf z = x * x;
  irc_vf p = zero + 1.9875691500e-4f;
  p = p * x + 1.3981999507e-3f;
  p = p * x + 8.3334519073e-3f;
  p = p * x + 4.1665795894e-2f;
  p = p * x + 1.6666665459e-1f;
  p = p * x + 5.0000001201e-1f;
  p = p * z + x + 1.0f;
  const irc_vfi n = __builtin_convertvector(fx, irc_vfi);
  const irc_vf scale = (irc_vf)((n + 127) << 23);
  return irc_vf_select(nan, x, irc_vf_select(tiny, zero, p * scale));
}

/* erfc(a) for a >= 0 on IRC_VL lanes (Numerical Recipes' erfcc, a Chebyshev fit: relative
   error < 1.2e-7, so the far tail of gelu keeps its digits; 0 above a = 8.3, where exp's
   argument falls below -69). */
IRC_INLINE irc_vf irc_vf_erfc_abs(irc_vf a) {
  const irc_vf t = 1.0f / (1.0f + 0.5f * a);
  irc_vf p = t * 0.17087277f - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  return t * irc_vf_exp(p * t - 1.26551223f - a * a);
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
    const irc_vf q = irc_vf_erfc_abs(irc_vf_select(neg, -x, x) * 0.70710678118654752f);
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
    float sum = irc_vf_hsum(acc);
    for (; k < n; ++k) sum += xr[k];
    const float mean = sum / (float)n;
    irc_vf sq = {0.0f};
    for (k = 0; k + IRC_VL <= n; k += IRC_VL) {
      const irc_vf c = *(const irc_vfu *)(xr + k) - mean;
      sq += c * c;
    }
    float ss = irc_vf_hsum(sq);
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

/* y = x * sigmoid(x) = x / (1 + exp(-x)) on n elements. */
static void irc_silu_part(const void *ctx, long part) {
  const irc_unary_args *a = (const irc_unary_args *)ctx;
  long i0, i1;
  irc_pool_range(part, a->parts, a->vectors, &i0, &i1);
  for (long i = i0; i < i1; ++i) {
    const irc_vf v = *(const irc_vfu *)(a->x + i * IRC_VL);
    *(irc_vfu *)(a->y + i * IRC_VL) = v / (1.0f + irc_vf_exp(-v));
  }
}

static void irc_silu(const float *restrict x, float *restrict y, long n) {
  const long vectors = n / IRC_VL;
  const int threads = n > 131072 ? irc_nthreads() : 1;
  const irc_unary_args a = {x, y, vectors,
                            irc_pool_parts(vectors, (double)n, IRC_UNARY_PART, threads), 0};
  irc_parallel(irc_silu_part, &a, a.parts, threads);
  for (long k = vectors * IRC_VL; k < n; ++k) y[k] = x[k] / (1.0f + expf(-x[k]));
}

/* Softmax of a row of n scores in place, in float lanes. */
IRC_INLINE void irc_softmax_row(float *restrict s, long n) {
  const irc_vf zero = {0.0f};
  irc_vf vmx = zero - INFINITY;
  long j = 0;
  for (; j + IRC_VL <= n; j += IRC_VL) {
    const irc_vf x = *(irc_vfu *)(s + j);
    vmx = irc_vf_select(x > vmx, x, vmx);
  }
  float mx = -INFINITY;
  for (int i = 0; i < IRC_VL; ++i) mx = irc_maxf(mx, vmx[i]);
  for (; j < n; ++j) mx = irc_maxf(mx, s[j]);
  if (!(mx > -INFINITY)) mx = 0.0f; /* a row masked everywhere with -inf */
  irc_vf acc = {0.0f};
  for (j = 0; j + IRC_VL <= n; j += IRC_VL) {
    const irc_vf e = irc_vf_exp(*(irc_vfu *)(s + j) - mx);
    *(irc_vfu *)(s + j) = e;
    acc += e;
  }
  float sum = irc_vf_hsum(acc);
  for (; j < n; ++j) {
    s[j] = s[j] - mx < -69.0f ? 0.0f : expf(s[j] - mx);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (j = 0; j < n; ++j) s[j] *= inv;
}

/* y[0:n] = sum_k a[k] * x[k * stride + 0:n] for k < K: register-blocked over 4 vectors of
   y at a time (the accumulators stay in registers across k), then single vectors, then a
   scalar tail. */
static void irc_axpy_rows(const float *restrict a, const float *restrict x, long K,
                          long stride, float *restrict y, long n) {
  long j = 0;
  for (; j + 4 * IRC_VL <= n; j += 4 * IRC_VL) {
    /* two accumulators per vector (even and odd k): 8 independent FMA chains */
    irc_vf c0 = {0.0f}, c1 = {0.0f}, c2 = {0.0f}, c3 = {0.0f};
    irc_vf d0 = {0.0f}, d1 = {0.0f}, d2 = {0.0f}, d3 = {0.0f};
    long k = 0;
    for (; k + 2 <= K; k += 2) {
      const float *restrict xr = x + k * stride + j;
      const float *restrict xs = xr + stride;
      const float ak = a[k], bk = a[k + 1];
      c0 += ak * *(const irc_vfu *)(xr);
      c1 += ak * *(const irc_vfu *)(xr + IRC_VL);
      c2 += ak * *(const irc_vfu *)(xr + 2 * IRC_VL);
      c3 += ak * *(const irc_vfu *)(xr + 3 * IRC_VL);
      d0 += bk * *(const irc_vfu *)(xs);
      d1 += bk * *(const irc_vfu *)(xs + IRC_VL);
      d2 += bk * *(const irc_vfu *)(xs + 2 * IRC_VL);
      d3 += bk * *(const irc_vfu *)(xs + 3 * IRC_VL);
    }
    if (k < K) {
      const float *restrict xr = x + k * stride + j;
      const float ak = a[k];
      c0 += ak * *(const irc_vfu *)(xr);
      c1 += ak * *(const irc_vfu *)(xr + IRC_VL);
      c2 += ak * *(const irc_vfu *)(xr + 2 * IRC_VL);
      c3 += ak * *(const irc_vfu *)(xr + 3 * IRC_VL);
    }
    *(irc_vfu *)(y + j) = c0 + d0;
    *(irc_vfu *)(y + j + IRC_VL) = c1 + d1;
    *(irc_vfu *)(y + j + 2 * IRC_VL) = c2 + d2;
    *(irc_vfu *)(y + j + 3 * IRC_VL) = c3 + d3;
  }
  for (; j + IRC_VL <= n; j += IRC_VL) {
    irc_vf c = {0.0f};
    for (long k = 0; k < K; ++k) c += a[k] * *(const irc_vfu *)(x + k * stride + j);
    *(irc_vfu *)(y + j) = c;
  }
  for (; j < n; ++j) {
    float c = 0.0f;
    for (long k = 0; k < K; ++k) c += a[k] * x[k * stride + j];
    y[j] = c;
  }
}

/* The dot product of a[0:n] and b[0:n] in float lanes. */
IRC_INLINE float irc_dot(const float *restrict a, const float *restrict b, long n) {
  irc_vf acc = {0.0f};
  long j = 0;
  for (; j + IRC_VL <= n; j += IRC_VL) acc += *(const irc_vfu *)(a + j) * *(const irc_vfu *)(b + j);
  float sum = irc_vf_hsum(acc);
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

/* y[r][0:n] = sum_k a[r][k] * x[k * stride + 0:n] for 4 rows r (a rows lda apart, y rows
   ldy apart): a 4-row x 4-vector register tile, so every loaded x vector serves 4 rows;
   the columns left over go row by row through irc_axpy_rows. */
static void irc_axpy_rows4(const float *restrict a, long lda, const float *restrict x, long K,
                           long stride, float *restrict y, long ldy, long n) {
  long j = 0;
  for (; j + 4 * IRC_VL <= n; j += 4 * IRC_VL) {
    const irc_vf zero = {0.0f};
    irc_vf c00 = zero, c01 = zero, c02 = zero, c03 = zero, c10 = zero, c11 = zero;
    irc_vf c12 = zero, c13 = zero, c20 = zero, c21 = zero, c22 = zero, c23 = zero;
    irc_vf c30 = zero, c31 = zero, c32 = zero, c33 = zero;
    for (long k = 0; k < K; ++k) {
      const float *restrict xr = x + k * stride + j;
      const irc_vf x0 = *(const irc_vfu *)(xr), x1 = *(const irc_vfu *)(xr + IRC_VL);
      const irc_vf x2 = *(const irc_vfu *)(xr + 2 * IRC_VL);
      const irc_vf x3 = *(const irc_vfu *)(xr + 3 * IRC_VL);
      const float a0 = a[k], a1 = a[lda + k], a2 = a[2 * lda + k], a3 = a[3 * lda + k];
      c00 += a0 * x0; c01 += a0 * x1; c02 += a0 * x2; c03 += a0 * x3;
      c10 += a1 * x0; c11 += a1 * x1; c12 += a1 * x2; c13 += a1 * x3;
      c20 += a2 * x0; c21 += a2 * x1; c22 += a2 * x2; c23 += a2 * x3;
      c30 += a3 * x0; c31 += a3 * x1; c32 += a3 * x2; c33 += a3 * x3;
    }
    float *restrict y0 = y + j, *restrict y1 = y0 + ldy;
    float *restrict y2 = y1 + ldy, *restrict y3 = y2 + ldy;
    *(irc_vfu *)(y0) = c00; *(irc_vfu *)(y0 + IRC_VL) = c01;
    *(irc_vfu *)(y0 + 2 * IRC_VL) = c02; *(irc_vfu *)(y0 + 3 * IRC_VL) = c03;
    *(irc_vfu *)(y1) = c10; *(irc_vfu *)(y1 + IRC_VL) = c11;
    *(irc_vfu *)(y1 + 2 * IRC_VL) = c12; *(irc_vfu *)(y1 + 3 * IRC_VL) = c13;
    *(irc_vfu *)(y2) = c20; *(irc_vfu *)(y2 + IRC_VL) = c21;
    *(irc_vfu *)(y2 + 2 * IRC_VL) = c22; *(irc_vfu *)(y2 + 3 * IRC_VL) = c23;
    *(irc_vfu *)(y3) = c30; *(irc_vfu *)(y3 + IRC_VL) = c31;
    *(irc_vfu *)(y3 + 2 * IRC_VL) = c32; *(irc_vfu *)(y3 + 3 * IRC_VL) = c33;
  }
  if (j < n)
    for (int r = 0; r < 4; ++r) irc_axpy_rows(a + r * lda, x + j, K, stride, y + r * ldy + j, n - j);
}

/* o[b] = softmax(scale * q[b] @ k[b]^T + mask) @ v[b] for B batches: q[b] is [M][D], v[b]
   [N][E] and o[b] [M][E], contiguous; k[b] is [N][D] or, key_t, [D][N]. The mask (NULL:
   none) is read at mo[b] + m * msm + n * msn (broadcasting: zero strides). Blocks of 4
   query rows: their scores on the stack, the products as 4-row register tiles
   (irc_axpy_rows4: each key and value row loaded once per block); blocks split across
   threads. */
typedef struct {
  const float *q, *k, *v, *mask;
  float *o;
  long M, N, D, E, blocks, tasks, parts;
  int key_t;
  float scale;
  const long *mo;
  long msm, msn;
} irc_attention_args;

/* Part `part` of irc_attention: task t is batch t / blocks, query block t % blocks. */
static void irc_attention_part(const void *ctx, long part) {
  const irc_attention_args *restrict a = (const irc_attention_args *)ctx;
  const float *restrict q = a->q, *restrict k = a->k, *restrict v = a->v;
  const float *restrict mask = a->mask;
  float *restrict o = a->o;
  const long M = a->M, N = a->N, D = a->D, E = a->E, blocks = a->blocks, msm = a->msm;
  const long msn = a->msn;
  const long *restrict mo = a->mo;
  const int key_t = a->key_t;
  const float scale = a->scale;
  long t0, t1;
  irc_pool_range(part, a->parts, a->tasks, &t0, &t1);
  for (long t = t0; t < t1; ++t) {
    const long b = t / blocks, mb = t % blocks;
    {
      float s[4 * N];
      const long m0 = mb * 4, rows = M - m0 < 4 ? M - m0 : 4;
      const float *restrict qb = q + (b * M + m0) * D;
      const float *restrict kb = k + b * N * D;
      const float *restrict vb = v + b * N * E;
      float *restrict ob = o + (b * M + m0) * E;
      if (key_t && rows == 4) {
        irc_axpy_rows4(qb, D, kb, D, N, s, N, N);
      } else {
        for (long r = 0; r < rows; ++r) {
          if (key_t) {
            irc_axpy_rows(qb + r * D, kb, D, N, s + r * N, N);
          } else {
            for (long n = 0; n < N; ++n) s[r * N + n] = irc_dot(qb + r * D, kb + n * D, D);
          }
        }
      }
      for (long r = 0; r < rows; ++r) {
        float *restrict sr = s + r * N;
        if (mask) {
          const float *restrict mr = mask + mo[b] + (m0 + r) * msm;
          if (msn == 1) {
            for (long n = 0; n < N; ++n) sr[n] = sr[n] * scale + mr[n];
          } else {
            for (long n = 0; n < N; ++n) sr[n] = sr[n] * scale + mr[n * msn];
          }
        } else {
          for (long n = 0; n < N; ++n) sr[n] *= scale;
        }
        irc_softmax_row(sr, N);
      }
      if (rows == 4) {
        irc_axpy_rows4(s, N, vb, N, E, ob, E, E);
      } else {
        for (long r = 0; r < rows; ++r) irc_axpy_rows(s + r * N, vb, N, E, ob + r * E, E);
      }
    }
  }
}

static void irc_attention(const float *restrict q, const float *restrict k,
                          const float *restrict v, const float *restrict mask,
                          float *restrict o, long B, long M, long N, long D, long E,
                          int key_t, float scale, const long *restrict mo, long msm, long msn) {
  const double work = (double)B * M * N * (D + E);
  const long blocks = (M + 3) / 4;
  const int threads = work > IRC_PARALLEL_WORK ? irc_nthreads() : 1;
  const irc_attention_args a = {q,      k,   v,    mask, o,     M,  N,  D,  E,   blocks,
                                B * blocks,
                                irc_pool_parts(B * blocks, work, 250000.0, threads),
                                key_t,  scale, mo, msm, msn};
  irc_parallel(irc_attention_part, &a, a.parts, threads);
}
