"""The C kernel library of the CPU target: snippets the code generator puts in front of the
generated entry functions.

Each snippet is C99 with GNU vector extensions (gcc and clang); a translation unit contains
only the snippets its functions use (`source_for`), so small executables compile quickly.
Kernels take sizes as arguments; the generated code passes literal constants. The hot
kernels follow PERF_NOTES.md: NHWC with channels innermost, weights packed at compile time
as ``[G][OCg/NB][KH][KW][Cg][NB]`` (NB = 16 or 32 output channels, one or two 16-lane
vectors), an 8-pixel x NB-channel accumulator tile kept in registers, and one OpenMP
parallel loop over output rows per op (only when the op is big enough to pay for the
fork/join).

Float semantics follow the reference kernels: NaN propagates through max/min/relu/clip like
numpy's `maximum`/`minimum`, fused activations are TFLite's.
"""

from __future__ import annotations

from collections.abc import Iterable

ACTIVATION_CODES = {"none": 0, "relu": 1, "relu6": 2, "relu_n1_to_1": 3, "tanh": 4}
"""`activation` property values -> the `IRC_ACT_*` codes of the C library."""

CONV_TILE_PIXELS = 8
"""Output pixels per register tile of the convolution micro-kernel (IRC_MR)."""

_SNIPPETS: dict[str, tuple[tuple[str, ...], str]] = {}
"""name -> (dependencies, C text)."""


def _snippet(name: str, text: str, deps: tuple[str, ...] = ()) -> None:
    _SNIPPETS[name] = (deps, text.strip("\n") + "\n")


def source_for(names: Iterable[str]) -> str:
    """The C text of the snippets `names` and their dependencies, dependencies first."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered:
            return
        deps, _ = _SNIPPETS[name]
        for dep in deps:
            visit(dep)
        ordered.append(name)

    for name in sorted(set(names)):
        visit(name)
    return "\n".join(_SNIPPETS[name][1] for name in ordered)


def snippet_names() -> frozenset[str]:
    return frozenset(_SNIPPETS)


# ---- Common -------------------------------------------------------------------------------------

_snippet(
    "common",
    r"""
#include <math.h>
#include <stddef.h>
#include <string.h>

#define IRC_INLINE static inline __attribute__((always_inline))
#define IRC_PARALLEL_WORK 4000000.0 /* multiply-adds below which an op stays on one thread */
#if defined(_OPENMP)
#define IRC_PRAGMA(x) _Pragma(#x)
#else
#define IRC_PRAGMA(x)
#endif

typedef float irc_v16 __attribute__((vector_size(64)));
typedef float irc_v16u __attribute__((vector_size(64), aligned(4)));

enum { IRC_ACT_NONE = 0, IRC_ACT_RELU = 1, IRC_ACT_RELU6 = 2, IRC_ACT_RELU_N1_TO_1 = 3,
       IRC_ACT_TANH = 4 };

/* numpy's maximum/minimum: a NaN in either operand gives NaN. */
IRC_INLINE float irc_maxf(float a, float b) { return (a != a || a > b) ? a : b; }
IRC_INLINE float irc_minf(float a, float b) { return (a != a || a < b) ? a : b; }
IRC_INLINE float irc_clampf(float x, float lo, float hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

IRC_INLINE float irc_act(float v, int act) {
  switch (act) {
    case IRC_ACT_RELU: return v < 0.0f ? 0.0f : v;
    case IRC_ACT_RELU6: return irc_clampf(v, 0.0f, 6.0f);
    case IRC_ACT_RELU_N1_TO_1: return irc_clampf(v, -1.0f, 1.0f);
    case IRC_ACT_TANH: return tanhf(v);
    default: return v;
  }
}

/* o[j] = act(o[j] + bias[j]) for j < n; bias may be NULL. */
static void irc_epilogue(float *restrict o, long n, const float *restrict bias, int act) {
  long j;
  if (bias)
    for (j = 0; j < n; ++j) o[j] += bias[j];
  switch (act) {
    case IRC_ACT_NONE: break;
    case IRC_ACT_RELU: for (j = 0; j < n; ++j) o[j] = o[j] < 0.0f ? 0.0f : o[j]; break;
    case IRC_ACT_RELU6: for (j = 0; j < n; ++j) o[j] = irc_clampf(o[j], 0.0f, 6.0f); break;
    case IRC_ACT_RELU_N1_TO_1:
      for (j = 0; j < n; ++j) o[j] = irc_clampf(o[j], -1.0f, 1.0f);
      break;
    default: for (j = 0; j < n; ++j) o[j] = irc_act(o[j], act); break;
  }
}
""",
)

# ---- Convolution as an implicit GEMM ------------------------------------------------------------

_snippet(
    "pad_nhwc",
    r"""
/* dst = src [N][H][W][C] with PT/PL/PB/PR zero rows and columns around each image. */
static void irc_pad_nhwc(float *restrict dst, const float *restrict src, int N, int H, int W,
                         int C, int PT, int PL, int PB, int PR) {
  const int Hp = H + PT + PB, Wp = W + PL + PR;
  memset(dst, 0, sizeof(float) * (size_t)N * Hp * Wp * C);
  for (int n = 0; n < N; ++n)
    for (int h = 0; h < H; ++h)
      memcpy(dst + (((size_t)n * Hp + h + PT) * Wp + PL) * C,
             src + ((size_t)n * H + h) * W * C, sizeof(float) * (size_t)W * C);
}
""",
    ("common",),
)

_snippet(
    "pack_filter",
    r"""
/* OHWI filter [G*OCg][KH][KW][Cg] -> [G][ceil(OCg/NB)][KH][KW][Cg][NB], zero-padded channels
   (the layout irc_conv2d reads; targets/cpu/packing.py packs constant filters the same way). */
static void irc_pack_filter(float *restrict dst, const float *restrict src, int G, int OCg,
                            int KH, int KW, int Cg, int NB) {
  const int nblk = (OCg + NB - 1) / NB;
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < nblk; ++b)
      for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw)
          for (int c = 0; c < Cg; ++c)
            for (int j = 0; j < NB; ++j) {
              const int oc = b * NB + j;
              *dst++ = oc < OCg
                  ? src[((((size_t)g * OCg + oc) * KH + kh) * KW + kw) * Cg + c] : 0.0f;
            }
}
""",
)

_snippet(
    "conv2d",
    r"""
#define IRC_MR 8

/* MR output pixels (MR_ constant after inlining) x 16*NV output channels, accumulated in
   registers over the KH x KW x Cg reduction. x: input of pixel 0 at tap (0, 0); xs_pix:
   floats between the inputs of consecutive output pixels; xs_h/xs_w: between taps. */
IRC_INLINE void irc_conv_tile(const int MR_, const int NV, const float *restrict x, long xs_pix,
                              long xs_h, long xs_w, int KH, int KW, int Cg,
                              const float *restrict w, float *restrict y, long ys_pix,
                              int nvalid) {
  irc_v16 acc[IRC_MR][2];
  for (int m = 0; m < MR_; ++m)
    for (int v = 0; v < NV; ++v) acc[m][v] = (irc_v16){0.0f};
  for (int kh = 0; kh < KH; ++kh)
    for (int kw = 0; kw < KW; ++kw) {
      const float *restrict xt = x + kh * xs_h + kw * xs_w;
      const irc_v16 *restrict wt = (const irc_v16 *)(w + (long)(kh * KW + kw) * Cg * 16 * NV);
      for (int c = 0; c < Cg; ++c) {
        const irc_v16 b0 = wt[c * NV];
        const irc_v16 b1 = NV > 1 ? wt[c * NV + 1] : b0;
        for (int m = 0; m < MR_; ++m) {
          const float a = xt[m * xs_pix + c];
          acc[m][0] += a * b0;
          if (NV > 1) acc[m][1] += a * b1;
        }
      }
    }
  for (int m = 0; m < MR_; ++m) {
    float *restrict o = y + m * ys_pix;
    if (nvalid == 16 * NV) {
      for (int v = 0; v < NV; ++v) *(irc_v16u *)(o + 16 * v) = acc[m][v];
    } else {
      float tmp[32] __attribute__((aligned(64)));
      for (int v = 0; v < NV; ++v) *(irc_v16 *)(tmp + 16 * v) = acc[m][v];
      for (int j = 0; j < nvalid; ++j) o[j] = tmp[j];
    }
  }
}

/* One task of irc_conv2d: up to `chunk` output pixels of one output row, all channels. */
IRC_INLINE void irc_conv2d_task(const int NV, long t, int nchunk, int chunk,
                                const float *restrict x, int Hp, int Wp, int C,
                                const float *restrict w, const float *restrict bias,
                                float *restrict y, int OH, int OW, int OC, int KH, int KW,
                                int SH, int SW, int DH, int DW, int G, int Cg, int OCg,
                                int act) {
  const int NB = 16 * NV;
  const int nblk = (OCg + NB - 1) / NB;
  const long wblk = (long)KH * KW * Cg * NB;
  const int ch = (int)(t % nchunk);
  const long row = t / nchunk;
  const int oh = (int)(row % OH), n = (int)(row / OH);
  const int ow0 = ch * chunk, ow1 = ow0 + chunk < OW ? ow0 + chunk : OW;
  const float *restrict xrow = x + ((long)n * Hp + (long)oh * SH) * Wp * C;
  float *restrict yrow = y + row * OW * OC;
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < nblk; ++b) {
      const float *restrict wb = w + ((long)g * nblk + b) * wblk;
      const int oc0 = g * OCg + b * NB;
      const int nvalid = OCg - b * NB < NB ? OCg - b * NB : NB;
      const float *restrict bb = bias ? bias + oc0 : NULL;
      int ow = ow0;
      for (; ow + IRC_MR <= ow1; ow += IRC_MR) {
        float *restrict o = yrow + (long)ow * OC + oc0;
        irc_conv_tile(IRC_MR, NV, xrow + (long)ow * SW * C + g * Cg, (long)SW * C,
                      (long)DH * Wp * C, (long)DW * C, KH, KW, Cg, wb, o, OC, nvalid);
        for (int m = 0; m < IRC_MR; ++m) irc_epilogue(o + (long)m * OC, nvalid, bb, act);
      }
      for (; ow < ow1; ++ow) {
        float *restrict o = yrow + (long)ow * OC + oc0;
        irc_conv_tile(1, NV, xrow + (long)ow * SW * C + g * Cg, (long)SW * C,
                      (long)DH * Wp * C, (long)DW * C, KH, KW, Cg, wb, o, OC, nvalid);
        irc_epilogue(o, nvalid, bb, act);
      }
    }
}

/* y[N][OH][OW][OC] = act(conv(x[N][Hp][Wp][C] (already padded), w packed by
   irc_pack_filter with NB = 16 * NV) + bias), groups G (Cg = C / G, OCg = OC / G). Tasks
   are chunks of output rows; the OpenMP loop lives here, outside the inlined task, so that
   NV stays a literal constant inside the outlined parallel body. */
static void irc_conv2d(int NV, const float *restrict x, int N, int Hp, int Wp, int C,
                       const float *restrict w, const float *restrict bias, float *restrict y,
                       int OH, int OW, int OC, int KH, int KW, int SH, int SW, int DH, int DW,
                       int G, int Cg, int OCg, int act) {
  const int chunk = 8 * IRC_MR;
  const int nchunk = (OW + chunk - 1) / chunk;
  const long tasks = (long)N * OH * nchunk;
  const double work = (double)N * OH * OW * KH * KW * Cg * OC;
  (void)work;
  IRC_PRAGMA(omp parallel for schedule(static) if (tasks > 1 && work > IRC_PARALLEL_WORK))
  for (long t = 0; t < tasks; ++t) {
    if (NV == 2)
      irc_conv2d_task(2, t, nchunk, chunk, x, Hp, Wp, C, w, bias, y, OH, OW, OC, KH, KW, SH,
                      SW, DH, DW, G, Cg, OCg, act);
    else
      irc_conv2d_task(1, t, nchunk, chunk, x, Hp, Wp, C, w, bias, y, OH, OW, OC, KH, KW, SH,
                      SW, DH, DW, G, Cg, OCg, act);
  }
}
""",
    ("common",),
)

_snippet(
    "depthwise",
    r"""
#define IRC_DW_MR 8

/* MR_ output pixels x 16 channels of a depthwise conv, accumulated in registers over the
   KH x KW taps; x: input of pixel 0 at tap (0, 0); w: tap (0, 0) weights of the 16 channels,
   ws_tap floats between taps. */
IRC_INLINE void irc_dw_tile(const int MR_, const float *restrict x, long xs_pix, long xs_h,
                            long xs_w, int KH, int KW, const float *restrict w, long ws_tap,
                            float *restrict y, long ys_pix) {
  irc_v16 acc[IRC_DW_MR];
  for (int m = 0; m < MR_; ++m) acc[m] = (irc_v16){0.0f};
  for (int kh = 0; kh < KH; ++kh)
    for (int kw = 0; kw < KW; ++kw) {
      const irc_v16 wv = *(const irc_v16u *)(w + (long)(kh * KW + kw) * ws_tap);
      const float *restrict xt = x + kh * xs_h + kw * xs_w;
      for (int m = 0; m < MR_; ++m) acc[m] += *(const irc_v16u *)(xt + m * xs_pix) * wv;
    }
  for (int m = 0; m < MR_; ++m) *(irc_v16u *)(y + m * ys_pix) = acc[m];
}

/* One output pixel of a depthwise conv, channels [c0, c1), taps outside the input skipped;
   xr: the input row of tap kh = 0 (column 0), w: the weights of tap kh = 0. */
static void irc_dw_pixel(const float *restrict xr, long xs_h, int W, int iw0, int DW, int nkh,
                         int KW, const float *restrict w, int C, int c0, int c1,
                         float *restrict o) {
  for (int c = c0; c < c1; ++c) o[c] = 0.0f;
  for (int kh = 0; kh < nkh; ++kh)
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = iw0 + kw * DW;
      if (iw < 0 || iw >= W) continue;
      const float *restrict xi = xr + kh * xs_h + (long)iw * C;
      const float *restrict wk = w + (long)(kh * KW + kw) * C;
      for (int c = c0; c < c1; ++c) o[c] += xi[c] * wk[c];
    }
}

/* Depthwise conv (groups = C = OC): y[N][OH][OW][C] from x[N][H][W][C] and w[KH][KW][C], with
   implicit zero padding (PT rows, PL columns): taps above/below the input are skipped per
   row; pixels whose window is inside the row use 16-channel x 8-pixel register tiles, the
   others (and the last C % 16 channels) a checked per-pixel loop; then the bias/activation
   epilogue runs over the finished row. */
static void irc_depthwise(const float *restrict x, int N, int H, int W, int C,
                          const float *restrict w, const float *restrict bias, float *restrict y,
                          int OH, int OW, int KH, int KW, int SH, int SW, int DH, int DW, int PT,
                          int PL, int act) {
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * KH * KW * C;
  const int cvec = C & ~15;
  /* Output columns whose taps all fall inside the input: [ow_lo, ow_hi). */
  const int ow_lo = (PL + SW - 1) / SW;
  const int last = W - 1 - (KW - 1) * DW + PL;
  int ow_hi = last < 0 ? 0 : last / SW + 1;
  if (ow_hi > OW) ow_hi = OW;
  (void)work;
  IRC_PRAGMA(omp parallel for schedule(static) if (rows > 1 && work > IRC_PARALLEL_WORK))
  for (long r = 0; r < rows; ++r) {
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
    float *restrict yrow = y + r * OW * C;
    for (int ow = 0; ow < OW; ++ow) {
      const int interior = ow >= ow_lo && ow < ow_hi;
      if (interior && cvec == C) continue;
      irc_dw_pixel(xr, xs_h, W, ow * SW - PL, DW, nkh, KW, wr, C, interior ? cvec : 0, C,
                   yrow + (long)ow * C);
    }
    if (ow_lo < ow_hi)
      for (int c = 0; c < cvec; c += 16) {
        const float *restrict xc = xr + (long)(ow_lo * SW - PL) * C + c;
        int ow = ow_lo;
        if (nkh == 0) {
          for (; ow < ow_hi; ++ow)
            for (int j = 0; j < 16; ++j) yrow[(long)ow * C + c + j] = 0.0f;
          continue;
        }
        for (; ow + IRC_DW_MR <= ow_hi; ow += IRC_DW_MR)
          irc_dw_tile(IRC_DW_MR, xc + (ow - ow_lo) * xs_pix, xs_pix, xs_h, xs_w, nkh, KW,
                      wr + c, C, yrow + (long)ow * C + c, C);
        for (; ow < ow_hi; ++ow)
          irc_dw_tile(1, xc + (ow - ow_lo) * xs_pix, xs_pix, xs_h, xs_w, nkh, KW, wr + c, C,
                      yrow + (long)ow * C + c, C);
      }
    for (int ow = 0; ow < OW; ++ow) irc_epilogue(yrow + (long)ow * C, C, bias, act);
  }
}
""",
    ("common",),
)

# ---- Pooling ------------------------------------------------------------------------------------

_snippet(
    "pool2d",
    r"""
/* Max (is_max) or average pooling, NHWC; windows clipped to the input (padding never wins
   the max; averages divide by the taps inside unless count_include_pad). */
static void irc_pool2d(int is_max, const float *restrict x, int N, int H, int W, int C,
                       float *restrict y, int OH, int OW, int KH, int KW, int SH, int SW, int DH,
                       int DW, int PT, int PL, int count_include_pad, int act) {
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * KH * KW * C;
  (void)work;
  IRC_PRAGMA(omp parallel for schedule(static) if (rows > 1 && work > IRC_PARALLEL_WORK))
  for (long r = 0; r < rows; ++r) {
    const int n = (int)(r / OH), oh = (int)(r % OH);
    for (int ow = 0; ow < OW; ++ow) {
      float *restrict o = y + (r * OW + ow) * C;
      const float init = is_max ? -INFINITY : 0.0f;
      int count = 0;
      for (int c = 0; c < C; ++c) o[c] = init;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * SH - PT + kh * DH;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
          const int iw = ow * SW - PL + kw * DW;
          if (iw < 0 || iw >= W) continue;
          const float *restrict xi = x + (((long)n * H + ih) * W + iw) * C;
          ++count;
          if (is_max)
            for (int c = 0; c < C; ++c) o[c] = irc_maxf(o[c], xi[c]);
          else
            for (int c = 0; c < C; ++c) o[c] += xi[c];
        }
      }
      if (!is_max) {
        const float d = (float)(count_include_pad ? KH * KW : count);
        for (int c = 0; c < C; ++c) o[c] = o[c] / d;
      }
      irc_epilogue(o, C, NULL, act);
    }
  }
}
""",
    ("common",),
)

# ---- Softmax ------------------------------------------------------------------------------------

_snippet(
    "softmax",
    r"""
/* Softmax (or log-softmax) of x viewed as [outer][n][inner] along the middle axis:
   z = beta * x, e = exp(z - max z), y = e / sum e (log: z - max z - log(sum e)). */
static void irc_softmax(const float *restrict x, float *restrict y, long outer, long n,
                        long inner, float beta, int scaled, int is_log) {
  for (long o = 0; o < outer; ++o)
    for (long i = 0; i < inner; ++i) {
      const float *restrict xs = x + o * n * inner + i;
      float *restrict ys = y + o * n * inner + i;
      float mx = -INFINITY, sum = 0.0f;
      for (long k = 0; k < n; ++k) {
        const float z = scaled ? xs[k * inner] * beta : xs[k * inner];
        mx = irc_maxf(mx, z);
      }
      for (long k = 0; k < n; ++k) {
        const float z = (scaled ? xs[k * inner] * beta : xs[k * inner]) - mx;
        const float e = expf(z);
        sum += e;
        ys[k * inner] = is_log ? z : e;
      }
      if (is_log) {
        const float l = logf(sum);
        for (long k = 0; k < n; ++k) ys[k * inner] = ys[k * inner] - l;
      } else {
        for (long k = 0; k < n; ++k) ys[k * inner] = ys[k * inner] / sum;
      }
    }
}
""",
    ("common",),
)

# ---- Resize -------------------------------------------------------------------------------------

_snippet(
    "resize",
    r"""
/* Nearest-neighbour resize, NHWC: output (oh, ow) copies input (hi[oh], wi[ow]). */
static void irc_resize_nearest(const float *restrict x, int N, int H, int W, int C,
                               float *restrict y, int OH, int OW, const int *restrict hi,
                               const int *restrict wi) {
  for (int n = 0; n < N; ++n)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow)
        memcpy(y + (((long)n * OH + oh) * OW + ow) * C,
               x + (((long)n * H + hi[oh]) * W + wi[ow]) * C, sizeof(float) * (size_t)C);
}

/* Bilinear resize, NHWC, interpolating along H first and then along W (the reference's
   order): a + (b - a) * weight with low/high input indices per output row and column. */
static void irc_resize_bilinear(const float *restrict x, int N, int H, int W, int C,
                                float *restrict y, int OH, int OW, const int *restrict hl,
                                const int *restrict hh, const float *restrict hw,
                                const int *restrict wl, const int *restrict wh,
                                const float *restrict ww) {
  for (int n = 0; n < N; ++n)
    for (int oh = 0; oh < OH; ++oh) {
      const float *restrict r0 = x + ((long)n * H + hl[oh]) * W * C;
      const float *restrict r1 = x + ((long)n * H + hh[oh]) * W * C;
      const float fh = hw[oh];
      for (int ow = 0; ow < OW; ++ow) {
        const float fw = ww[ow];
        const float *restrict a0 = r0 + (long)wl[ow] * C, *restrict b0 = r1 + (long)wl[ow] * C;
        const float *restrict a1 = r0 + (long)wh[ow] * C, *restrict b1 = r1 + (long)wh[ow] * C;
        float *restrict o = y + (((long)n * OH + oh) * OW + ow) * C;
        for (int c = 0; c < C; ++c) {
          const float lo = a0[c] + (b0[c] - a0[c]) * fh;
          const float hi = a1[c] + (b1[c] - a1[c]) * fh;
          o[c] = lo + (hi - lo) * fw;
        }
      }
    }
}
""",
    ("common",),
)
