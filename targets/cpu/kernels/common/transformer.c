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
   within 2 ulp of expf; the argument is clamped to [-87.3, 88.37] (no inf, no denormals),
   NaN gives NaN. */
IRC_INLINE irc_vf irc_vf_exp(irc_vf x) {
  const irc_vf zero = {0.0f};
  const irc_vfi nan = x != x;
  x = irc_vf_select(x > zero + 88.3762626647949f, zero + 88.3762626647949f, x);
  x = irc_vf_select(x < zero - 87.3365478515625f, zero - 87.3365478515625f, x);
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
  return irc_vf_select(nan, x, p * scale);
}

/* y = (x - mean) / sqrt(var + eps) * g (+ b) over rows of n elements: the mean, then the
   (biased) variance of the centred row, both in float lanes. b may be NULL. */
static void irc_layer_norm(const float *restrict x, const float *restrict g,
                           const float *restrict b, float *restrict y, long rows, long n,
                           float eps) {
  IRC_PARFOR(schedule(static) if ((double)rows * n > 65536.0))
  for (long r = 0; r < rows; ++r) {
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

/* y = x * sigmoid(x) = x / (1 + exp(-x)) on n elements. */
static void irc_silu(const float *restrict x, float *restrict y, long n) {
  const long vectors = n / IRC_VL;
  IRC_PARFOR(schedule(static) if (n > 131072))
  for (long i = 0; i < vectors; ++i) {
    const irc_vf v = *(const irc_vfu *)(x + i * IRC_VL);
    *(irc_vfu *)(y + i * IRC_VL) = v / (1.0f + irc_vf_exp(-v));
  }
  for (long k = vectors * IRC_VL; k < n; ++k) y[k] = x[k] / (1.0f + expf(-x[k]));
}

/* Softmax of a row of n scores in place, in float lanes. */
IRC_INLINE void irc_softmax_row(float *restrict s, long n) {
  float mx = -INFINITY;
  for (long j = 0; j < n; ++j) mx = irc_maxf(mx, s[j]);
  if (!(mx > -INFINITY)) mx = 0.0f; /* a row masked everywhere with -inf */
  irc_vf acc = {0.0f};
  long j = 0;
  for (; j + IRC_VL <= n; j += IRC_VL) {
    const irc_vf e = irc_vf_exp(*(irc_vfu *)(s + j) - mx);
    *(irc_vfu *)(s + j) = e;
    acc += e;
  }
  float sum = irc_vf_hsum(acc);
  for (; j < n; ++j) {
    s[j] = expf(s[j] - mx);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (j = 0; j < n; ++j) s[j] *= inv;
}

/* o[b] = softmax(scale * q[b] @ k[b]^T + mask) @ v[b] for B batches: q[b] is [M][D], v[b]
   [N][E] and o[b] [M][E], contiguous; k[b] is [N][D] or, key_t, [D][N]. The mask (NULL:
   none) is read at mo[b] + m * msm + n * msn (broadcasting: zero strides). One row of
   scores per (batch, query row) at a time, on the stack; rows split across threads. */
static void irc_attention(const float *restrict q, const float *restrict k,
                          const float *restrict v, const float *restrict mask,
                          float *restrict o, long B, long M, long N, long D, long E,
                          int key_t, float scale, const long *restrict mo, long msm, long msn) {
  const double work = (double)B * M * N * (D + E);
  IRC_PARFOR(collapse(2) schedule(static) if (work > IRC_PARALLEL_WORK))
  for (long b = 0; b < B; ++b)
    for (long m = 0; m < M; ++m) {
      float s[N];
      const float *restrict qr = q + (b * M + m) * D;
      const float *restrict kb = k + b * N * D;
      const float *restrict vb = v + b * N * E;
      float *restrict orow = o + (b * M + m) * E;
      if (key_t) {
        for (long n = 0; n < N; ++n) s[n] = 0.0f;
        for (long d = 0; d < D; ++d) {
          const float a = qr[d];
          const float *restrict kr = kb + d * N;
          for (long n = 0; n < N; ++n) s[n] += a * kr[n];
        }
      } else {
        for (long n = 0; n < N; ++n) {
          const float *restrict kr = kb + n * D;
          float acc = 0.0f;
          for (long d = 0; d < D; ++d) acc += qr[d] * kr[d];
          s[n] = acc;
        }
      }
      if (mask) {
        const float *restrict mr = mask + mo[b] + m * msm;
        for (long n = 0; n < N; ++n) s[n] = s[n] * scale + mr[n * msn];
      } else {
        for (long n = 0; n < N; ++n) s[n] *= scale;
      }
      irc_softmax_row(s, N);
      for (long e = 0; e < E; ++e) orow[e] = 0.0f;
      for (long n = 0; n < N; ++n) {
        const float p = s[n];
        const float *restrict vr = vb + n * E;
        for (long e = 0; e < E; ++e) orow[e] += p * vr[e];
      }
    }
}
