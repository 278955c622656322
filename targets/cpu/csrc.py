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

Integer kernels (snippets "quant", "conv_int", "pool_int") run the `lower-quantized` form
with the reference's exact integer semantics; `irc_mbqm` is TFLite's
MultiplyByQuantizedMultiplier as targets/reference/quant.py defines it.

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

# ---- Fixed-point requantization (quant.rescale) -------------------------------------------------

_snippet(
    "quant",
    r"""
#include <stdint.h>

/* TFLite's MultiplyByQuantizedMultiplier, exactly as targets/reference/quant.py defines it:
   x * m * 2^(s - 31) with gemmlowp's SaturatingRoundingDoublingHighMul and
   RoundingDivideByPOT (single = 0), or one rounding of the 64-bit product (single = 1).
   Every intermediate is held in 64 bits, as the reference's int64 arithmetic. */
IRC_INLINE int64_t irc_srdhm(int64_t a, int64_t b) {
  const int64_t product = a * b; /* |a * b| <= 2^62: exact in 64 bits */
  const int64_t nudge = product >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
  const int64_t high = (product + nudge) / ((int64_t)1 << 31); /* truncates toward zero */
  return (a == INT32_MIN && b == INT32_MIN) ? INT32_MAX : high; /* select: vectorisable */
}

IRC_INLINE int64_t irc_rdbpot(int64_t x, int exponent) {
  const int64_t mask = ((int64_t)1 << exponent) - 1;
  const int64_t remainder = x & mask;
  const int64_t threshold = (mask >> 1) + (x < 0);
  return (x >> exponent) + (remainder > threshold);
}

IRC_INLINE int64_t irc_mbqm(int64_t x, int64_t m, int s, int single) {
  if (single) {
    const int total = 31 - s;
    const int64_t rounder = total > 0 ? ((int64_t)1 << (total - 1)) : 0;
    return (x * m + rounder) >> total;
  }
  const int left = s > 0 ? s : 0, right = s > 0 ? 0 : -s;
  int64_t shifted = x << left;
  shifted = shifted < INT32_MIN ? INT32_MIN : (shifted > INT32_MAX ? INT32_MAX : shifted);
  return irc_rdbpot(irc_srdhm(shifted, m), right);
}

/* irc_mbqm on 8 int64 lanes (gcc/clang vector extensions, so the generated rescale loops run
   on AVX-512 / AVX2 lanes instead of scalar 64-bit code), bit-exact with the scalar form:
   double rounding with per-lane left = max(s, 0), right = max(-s, 0); comparisons give
   -1 / 0 per lane, so "+ (x < 0)" becomes "- (x < 0)". */
typedef int64_t irc_q8 __attribute__((vector_size(64)));

IRC_INLINE irc_q8 irc_q8_sel(irc_q8 mask, irc_q8 a, irc_q8 b) { return (mask & a) | (~mask & b); }

IRC_INLINE irc_q8 irc_q8_clamp(irc_q8 v, int64_t lo, int64_t hi) {
  const irc_q8 vlo = (irc_q8){0} + lo, vhi = (irc_q8){0} + hi;
  return irc_q8_sel(v < vlo, vlo, irc_q8_sel(v > vhi, vhi, v));
}

IRC_INLINE irc_q8 irc_mbqm_q8(irc_q8 x, irc_q8 m, irc_q8 left, irc_q8 right) {
  const irc_q8 zero = {0}, lo32 = zero + INT32_MIN, hi32 = zero + INT32_MAX;
  const irc_q8 shifted = irc_q8_clamp(x << left, INT32_MIN, INT32_MAX);
  const irc_q8 product = shifted * m; /* |product| <= 2^62 */
  const irc_q8 sum = product + irc_q8_sel(product >= zero, zero + ((int64_t)1 << 30),
                                          zero + (1 - ((int64_t)1 << 30)));
  irc_q8 high = (sum + ((sum < zero) & (((int64_t)1 << 31) - 1))) >> 31; /* sum / 2^31 */
  high = irc_q8_sel((shifted == lo32) & (m == lo32), hi32, high);
  const irc_q8 mask = ((zero + 1) << right) - 1;
  const irc_q8 threshold = (mask >> 1) - (high < zero);
  return (high >> right) - ((high & mask) > threshold);
}

/* The single-rounding form on 8 lanes: (x * m + rounder) >> total, total = 31 - s. */
IRC_INLINE irc_q8 irc_mbqm1_q8(irc_q8 x, irc_q8 m, irc_q8 rounder, irc_q8 total) {
  return (x * m + rounder) >> total;
}

/* y = clamp(zp_out + mbqm(x - zp_in, m[c], s[c]), lo, hi) over [outer][C][inner] elements,
   C = 1 for per-tensor parameters: IRC_RESCALE(name, input type, output type) defines it
   (the generated code calls `irc_rescale` as the functions it instantiates do). */
#define IRC_RESCALE(NAME, TIN, TOUT)                                                        \
  static void NAME(const TIN *restrict x, TOUT *restrict y, long outer, long C, long inner, \
                   const int32_t *restrict m, const int32_t *restrict s, int64_t zp_in,     \
                   int64_t zp_out, int64_t lo, int64_t hi, int single) {                    \
    for (long o = 0; o < outer; ++o)                                                        \
      for (long c = 0; c < C; ++c) {                                                        \
        const int64_t mc = m[c];                                                            \
        const int sc = s[c];                                                                \
        const long base = (o * C + c) * inner;                                              \
        for (long i = 0; i < inner; ++i) {                                                  \
          int64_t v = zp_out + irc_mbqm((int64_t)x[base + i] - zp_in, mc, sc, single);      \
          y[base + i] = (TOUT)(v < lo ? lo : (v > hi ? hi : v));                            \
        }                                                                                   \
      }                                                                                     \
  }
""",
    ("common",),
)

# ---- Integer kernels of the lower-quantized form ------------------------------------------------

_snippet(
    "conv_int",
    r"""
/* Integer NHWC convolution accumulating exactly in int32 (the lower-quantized form: zero
   points already subtracted, so padding is 0): x [N][Hp][Wp][C] padded int32, w packed
   [G][ceil(OCg/16)][KH][KW][Cg][16] int32, bias int32 or NULL, y [N][OH][OW][OC] int32. */
static void irc_conv2d_i32(const int32_t *restrict x, int N, int Hp, int Wp, int C,
                           const int32_t *restrict w, const int32_t *restrict bias,
                           int32_t *restrict y, int OH, int OW, int OC, int KH, int KW, int SH,
                           int SW, int DH, int DW, int G, int Cg, int OCg) {
  const int nblk = (OCg + 15) / 16;
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * OC * KH * KW * Cg;
  IRC_PRAGMA(omp parallel for schedule(static) if (work > IRC_PARALLEL_WORK))
  for (long r = 0; r < rows; ++r) {
    const long n = r / OH, oh = r % OH;
    /* 4 output pixels x 16 channels per register tile; a tail tile repeats its last
       pixel (computed again, written once). */
    for (int ow0 = 0; ow0 < OW; ow0 += 4) {
      long px[4];
      for (int p = 0; p < 4; ++p) px[p] = ow0 + p < OW ? ow0 + p : OW - 1;
      for (int g = 0; g < G; ++g)
        for (int b = 0; b < nblk; ++b) {
          int32_t acc[4][16] = {{0}};
          const int32_t *restrict wb = w + ((long)g * nblk + b) * KH * KW * Cg * 16;
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              const long row = (n * Hp + oh * SH + kh * DH) * Wp + kw * DW;
              const int32_t *restrict x0 = x + (row + px[0] * SW) * C + g * Cg;
              const int32_t *restrict x1 = x + (row + px[1] * SW) * C + g * Cg;
              const int32_t *restrict x2 = x + (row + px[2] * SW) * C + g * Cg;
              const int32_t *restrict x3 = x + (row + px[3] * SW) * C + g * Cg;
              const int32_t *restrict wp = wb + ((long)kh * KW + kw) * Cg * 16;
              for (int c = 0; c < Cg; ++c) {
                const int32_t a0 = x0[c], a1 = x1[c], a2 = x2[c], a3 = x3[c];
                const int32_t *restrict wc = wp + c * 16;
                for (int j = 0; j < 16; ++j) {
                  acc[0][j] += a0 * wc[j];
                  acc[1][j] += a1 * wc[j];
                  acc[2][j] += a2 * wc[j];
                  acc[3][j] += a3 * wc[j];
                }
              }
            }
          const int oc0 = g * OCg + b * 16;
          const int cnt = OCg - b * 16 < 16 ? OCg - b * 16 : 16;
          for (int p = 0; p < 4 && ow0 + p < OW; ++p) {
            int32_t *restrict yo = y + (r * OW + ow0 + p) * OC + oc0;
            for (int j = 0; j < cnt; ++j) yo[j] = acc[p][j] + (bias ? bias[oc0 + j] : 0);
          }
        }
    }
  }
}

/* Integer depthwise convolution (one filter per channel): x padded int32
   [N][Hp][Wp][C], w [KH][KW][C] int32, bias int32 or NULL, y [N][OH][OW][C] int32. */
static void irc_depthwise_i32(const int32_t *restrict x, int N, int Hp, int Wp, int C,
                              const int32_t *restrict w, const int32_t *restrict bias,
                              int32_t *restrict y, int OH, int OW, int KH, int KW, int SH,
                              int SW, int DH, int DW) {
  const long rows = (long)N * OH;
  const double work = (double)rows * OW * C * KH * KW;
  IRC_PRAGMA(omp parallel for schedule(static) if (work > IRC_PARALLEL_WORK))
  for (long r = 0; r < rows; ++r) {
    const long n = r / OH, oh = r % OH;
    for (int ow = 0; ow < OW; ++ow) {
      int32_t *restrict yo = y + (r * OW + ow) * C;
      for (int c = 0; c < C; ++c) yo[c] = bias ? bias[c] : 0;
      for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw) {
          const int32_t *restrict xp =
              x + ((n * Hp + oh * SH + kh * DH) * Wp + (long)ow * SW + kw * DW) * C;
          const int32_t *restrict wp = w + ((long)kh * KW + kw) * C;
          for (int c = 0; c < C; ++c) yo[c] += xp[c] * wp[c];
        }
    }
  }
}
""",
    ("quant",),
)

_snippet(
    "pool_int",
    r"""
/* Integer NHWC max / average pooling on stored values, as the reference: max over the taps
   inside the input (`lowest` when none), average = window sum / count rounded half away
   from zero (count = KH * KW with include_pad, else the taps inside; 0 when none). */
#define IRC_POOL_INT(T)                                                                     \
  static void irc_pool2d_##T(int is_max, const T *restrict x, int N, int H, int W, int C,   \
                             T *restrict y, int OH, int OW, int KH, int KW, int SH, int SW, \
                             int DH, int DW, int PT, int PL, int include_pad,              \
                             int64_t lowest) {                                              \
    for (int n = 0; n < N; ++n)                                                             \
      for (int oh = 0; oh < OH; ++oh)                                                       \
        for (int ow = 0; ow < OW; ++ow) {                                                   \
          T *restrict o = y + (((long)n * OH + oh) * OW + ow) * C;                          \
          for (int c = 0; c < C; ++c) {                                                     \
            int64_t acc = is_max ? lowest : 0;                                              \
            long count = 0;                                                                 \
            for (int kh = 0; kh < KH; ++kh) {                                               \
              const int ih = oh * SH - PT + kh * DH;                                        \
              if (ih < 0 || ih >= H) continue;                                              \
              for (int kw = 0; kw < KW; ++kw) {                                             \
                const int iw = ow * SW - PL + kw * DW;                                      \
                if (iw < 0 || iw >= W) continue;                                            \
                const int64_t v = x[(((long)n * H + ih) * W + iw) * C + c];                 \
                if (is_max)                                                                 \
                  acc = v > acc ? v : acc;                                                  \
                else                                                                        \
                  acc += v;                                                                 \
                ++count;                                                                    \
              }                                                                             \
            }                                                                               \
            if (!is_max) {                                                                  \
              const int64_t cnt = include_pad ? (int64_t)KH * KW : count;                   \
              const int64_t half = cnt / 2;                                                 \
              acc = cnt == 0 ? 0 : (acc > 0 ? (acc + half) / cnt : -((half - acc) / cnt)); \
            }                                                                               \
            o[c] = (T)acc;                                                                  \
          }                                                                                 \
        }                                                                                   \
  }
IRC_POOL_INT(int8_t)
IRC_POOL_INT(uint8_t)
IRC_POOL_INT(int16_t)
IRC_POOL_INT(int32_t)
""",
    ("quant",),
)
