/* Fused int8 kernels: the lower-quantized chain `x (int8/uint8) -> i32 - zp -> conv -> rescale
   -> clamp -> int8/uint8` in one pass, no i32 tensor in memory. Exact: the products and the
   int32 sums are the chain's; requantization is irc_mbqm on 8 int64 lanes. The snippet
   "qfused" (csrc.py) is this file with each `#include "<dir>/<file>.h"` of a kernels/ file
   replaced by that file's text; the instances (IRC_QCONV, IRC_QDW, IRC_QDWV, IRC_QADD) are
   csrc's snippets of their own. */
typedef int32_t irc_vi32 __attribute__((vector_size(64)));
typedef uint32_t irc_vu32 __attribute__((vector_size(64)));
typedef int32_t irc_vi32x8 __attribute__((vector_size(32)));
typedef int8_t irc_vb8 __attribute__((vector_size(8)));

/* Multiply-adds above which a fused int8 conv / depthwise kernel splits over the threads:
   ~0.03 ms of one core's work with VNNI (a fork/join costs ~1-10 us), so that the small
   late layers of a CNN (7x7 and 14x14 depthwise, the classifier) do not run on one core
   while the other waits. Tasks go to threads dynamically (schedule(dynamic, 1)): a thread
   that the OS delays on a shared machine does not hold back the others' share. */
#define IRC_PARALLEL_QCONV_WORK 1000000.0
#define IRC_PARALLEL_QDW_WORK 250000.0
#define IRC_QDW_CHUNKS 1024 /* at most this many ranges of depthwise tasks */
/* Elements above which the fused int8 add splits (in chunks of IRC_QADD_CHUNK). */
#define IRC_PARALLEL_QADD 16384
#define IRC_QADD_CHUNK 4096

#if defined(__AVX512VNNI__) && defined(__AVX512F__) && !defined(IRC_PORTABLE)
#include <immintrin.h>
#define IRC_HAVE_VNNI 1
/* acc[j] += sum_i a.u8[i] * w[j].s8[i] (vpdpbusd, no saturation). */
IRC_INLINE irc_vi32 irc_dot4(irc_vi32 acc, uint32_t a, irc_vi32 w) {
  return (irc_vi32)_mm512_dpbusd_epi32((__m512i)acc, _mm512_set1_epi32((int)a), (__m512i)w);
}
#else
#define IRC_HAVE_VNNI 0
/* Portable form of the same: each lane of w holds 4 signed bytes, a 4 unsigned bytes. */
IRC_INLINE irc_vi32 irc_dot4(irc_vi32 acc, uint32_t a, irc_vi32 w) {
  const irc_vu32 u = (irc_vu32)w;
  const irc_vi32 w0 = (irc_vi32)(u << 24) >> 24, w1 = (irc_vi32)(u << 16) >> 24;
  const irc_vi32 w2 = (irc_vi32)(u << 8) >> 24, w3 = w >> 24;
  return acc + (int32_t)(a & 255u) * w0 + (int32_t)((a >> 8) & 255u) * w1 +
         (int32_t)((a >> 16) & 255u) * w2 + (int32_t)(a >> 24) * w3;
}
#endif

/* 1 when the fused int8 kernels use vpdpbusd (AVX512-VNNI; IRC_PORTABLE turns the
   intrinsics off for the portable C path). Weak: several kernel library parts define it. */
__attribute__((weak)) int irc_have_vnni(void) { return IRC_HAVE_VNNI; }

/* The int32 lanes of the ISA's native vector (IRC_QLANES: 16 with AVX-512 or VNNI, 8 with
   AVX2, 4 on SSE2 / NEON) and irc_dot4's portable form on them: the fused conv's portable
   tile (irc_qconv_slices) accumulates slices of that many channels in registers, where a
   tile of 16-lane vectors would be split by the compiler into 2 or 4 pieces per operation
   and spilled (an MR 8 x 32-channel tile: 64 xmm values in 16 registers), costing seconds of
   compile time per kernel instance. */
#if IRC_HAVE_VNNI || (defined(__AVX512F__) && !defined(IRC_PORTABLE))
#define IRC_QLANES 16
#elif defined(__AVX2__) && !defined(IRC_PORTABLE)
#define IRC_QLANES 8
#else
#define IRC_QLANES 4
#endif
typedef int32_t irc_viq __attribute__((vector_size(4 * IRC_QLANES)));
typedef uint32_t irc_vuq __attribute__((vector_size(4 * IRC_QLANES)));
IRC_INLINE irc_viq irc_dot4q(irc_viq acc, uint32_t a, irc_viq w) {
  const irc_vuq u = (irc_vuq)w;
  const irc_viq w0 = (irc_viq)(u << 24) >> 24, w1 = (irc_viq)(u << 16) >> 24;
  const irc_viq w2 = (irc_viq)(u << 8) >> 24, w3 = w >> 24;
  return acc + (int32_t)(a & 255u) * w0 + (int32_t)((a >> 8) & 255u) * w1 +
         (int32_t)((a >> 16) & 255u) * w2 + (int32_t)(a >> 24) * w3;
}

/* Requantization of 16 int32 lanes (16 consecutive channels) to bytes, exactly irc_mbqm:
   `q` holds the block's parameters as int64 in even/odd lane order (q[0..7] multipliers of
   channels 0, 2, .., 14, q[8..15] of 1, 3, .., 15; then the same for `a` (left shift) and
   `b` (right shift; with single rounding: the total shift)). `mode`: bit 0 single rounding,
   bit 1 some left shift > 0, bit 2 some multiplier == INT32_MIN (the saturating case).
   The result is clamp(r + zp, lo, hi), stored as the low byte (int8 or uint8) of `cnt`
   lanes. With AVX-512 the two int64 halves use vpmuldq: the doubling high multiply with
   its nudge is exactly (p + 2^30) >> 31 for either sign of p (truncation toward zero of
   (p + nudge) / 2^31), and the rounding right shift (h + half - (h < 0 && b > 0)) >> b.
   Mode 0 (double rounding, no left shift, right shifts <= 31) folds both into one shift,
   floor(floor(a / 2^31) + c) / 2^b) = floor((a + c 2^31) / 2^(31 + b)): the block then
   holds m, K1 = 2^30 + half 2^31, K2 = 2^30 + (half - (b > 0)) 2^31 and S = 31 + b, and
   r = (p + (p < -2^30 ? K2 : K1)) >> S, which fits in int32. */
#define IRC_RQ_BLOCK 64 /* int64 parameters per 16 channels */
#if defined(__AVX512F__) && !defined(IRC_PORTABLE)
#include "x86_64_avx512/requant.h"
#else
#include "common/requant_scalar.h"
#if defined(__AVX2__) && !defined(IRC_PORTABLE)
#include "x86_64_avx2/requant.h"
#define IRC_RQ_PARAMS(NAME, Q, MODE) const irc_rqp_avx2 NAME = irc_rq_prepare_avx2(Q, MODE)
#define IRC_RQ_STORE(ACC, P, Q, MODE, ZP, LO, HI, DST, CNT) \
  irc_rq_store_avx2(ACC, &P, MODE, ZP, LO, HI, DST, CNT)
#else
#define IRC_RQ_PARAMS(NAME, Q, MODE) const int64_t *restrict NAME = (Q)
#define IRC_RQ_STORE(ACC, P, Q, MODE, ZP, LO, HI, DST, CNT) \
  irc_rq_store_scalar(ACC, P, MODE, ZP, LO, HI, DST, CNT)
#endif
#endif

/* The conv kernel's mode-0 epilogue on four vectors at a time (AVX512BW): the parameters are
   read from the block as memory operands (no registers held across the tile), the two int64
   halves merge into int32 with one vpermt2d, and four vectors of int32 pack into 64 bytes with
   saturating packs: clamp(r + zp, lo, hi) == clamp(sat8(sat16(sat16(r) + zp)), lo, hi) for
   every int32 r when [lo, hi] lies in the packed byte's range (signed packs for hi <= 127,
   unsigned ones otherwise: then 0 <= lo). Needs AVX512BW and VL (byte packs, masked byte
   stores). */
#if defined(__AVX512BW__) && defined(__AVX512VL__) && !defined(IRC_PORTABLE)
#define IRC_QCONV_PACKED 1
/* Mode 0 on 16 int32 lanes, as irc_rq0_lanes. NONNEG (lo - zp >= 0): a lane whose product is
   below -2^30 rounds to r <= 0 with either constant and is clamped to lo - zp anyway, so K1
   serves every lane and the compare and select drop out. `sd` holds S - 32 per lane (natural
   channel order) when every S >= 32 (right shift >= 1), and WIDE is 0: then
   floor(T / 2^S) = floor(hi32(T) / 2^(S - 32)), so one vpermt2d takes the high dwords of the
   sums T = p + K and one 32-bit shift finishes; WIDE shifts the int64 sums (any S). The odd
   lanes reach vpmuldq's low dwords by vpshufd (port 5, beside the multiplies on port 0). */
IRC_INLINE __m512i irc_rq0_dwords(__m512i acc, const int64_t *restrict q, __m512i sd, int nonneg,
                                  int wide) {
  const __m512i lim = _mm512_set1_epi64(-((int64_t)1 << 30));
  const __m512i xs[2] = {acc, _mm512_shuffle_epi32(acc, _MM_PERM_DDBB)};
  __m512i t[2];
  for (int k = 0; k < 2; ++k) {
    const __m512i prod =
        _mm512_mul_epi32(xs[k], _mm512_loadu_si512((const void *)(q + 8 * k)));
    __m512i kk = _mm512_loadu_si512((const void *)(q + 16 + 8 * k));
    if (!nonneg)
      kk = _mm512_mask_loadu_epi64(kk, _mm512_cmplt_epi64_mask(prod, lim), q + 32 + 8 * k);
    t[k] = _mm512_add_epi64(prod, kk);
    if (wide) t[k] = _mm512_srav_epi64(t[k], _mm512_loadu_si512((const void *)(q + 48 + 8 * k)));
  }
  if (wide)
    return _mm512_permutex2var_epi32(
        t[0], _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30),
        t[1]);
  const __m512i high =
      _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  return _mm512_srav_epi32(_mm512_permutex2var_epi32(t[0], high, t[1]), sd);
}

/* S - 32 of a parameter block's 16 channels as int32 lanes in channel order. */
IRC_INLINE __m512i irc_rq0_shift32(const int64_t *restrict q) {
  const __m512i merge =
      _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
  const __m512i s = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void *)(q + 48)), merge,
                                              _mm512_loadu_si512((const void *)(q + 56)));
  return _mm512_sub_epi32(s, _mm512_set1_epi32(32));
}

/* Four vectors of requantized int32 (before the zero point) -> 64 bytes, vector g in bytes
   16g .. 16g + 15: clamp(r + zp, lo, hi) (`zp16` int16 lanes, `lo8`/`hi8` byte lanes). */
IRC_INLINE __m512i irc_rq_pack4(__m512i a, __m512i b, __m512i c, __m512i d, __m512i zp16,
                                __m512i lo8, __m512i hi8, int us) {
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(a, b), zp16);
  const __m512i cd = _mm512_adds_epi16(_mm512_packs_epi32(c, d), zp16);
  __m512i v;
  if (us)
    v = _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(ab, cd), lo8), hi8);
  else
    v = _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(ab, cd), lo8), hi8);
  return _mm512_permutexvar_epi32(order, v);
}

/* The epilogue of an MR x 16*NV tile (mode 0): groups of 4 vectors (NV = 2: two pixels x 32
   channels; NV = 1: four pixels x 16 channels), masked stores for the channel tail and the
   tile's repeated pixels. */
IRC_INLINE void irc_qconv_pack_store(irc_vi32 *acc, int mr, int nv, const int64_t *restrict q,
                                     const __m512i *sd, int64_t zp, int64_t lo, int64_t hi,
                                     uint8_t *restrict y, long pixels, long OC, long oc0,
                                     int nonneg, int wide) {
  const __m512i zp16 = _mm512_set1_epi16((short)zp);
  const __m512i lo8 = _mm512_set1_epi8((char)lo), hi8 = _mm512_set1_epi8((char)hi);
  const int us = hi > 127;
  const long left = OC - oc0;
  const long cnt = left < 16 * nv ? left : 16 * nv;
  const __mmask64 keep = cnt >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << cnt) - 1);
  const int per = 4 / nv;
#pragma GCC unroll 8
  for (int p = 0; p < mr; p += per) {
    __m512i r[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
      r[i] = irc_rq0_dwords((__m512i)acc[(p + i / nv) * nv + i % nv],
                            q + (i % nv) * IRC_RQ_BLOCK, sd[i % nv], nonneg, wide);
    const __m512i out = irc_rq_pack4(r[0], r[1], r[2], r[3], zp16, lo8, hi8, us);
    uint8_t *restrict dst = y + p * OC + oc0;
    if (nv == 2) {
      if (p < pixels)
        _mm256_mask_storeu_epi8(dst, (__mmask32)keep, _mm512_castsi512_si256(out));
      if (p + 1 < pixels)
        _mm256_mask_storeu_epi8(dst + OC, (__mmask32)keep, _mm512_extracti64x4_epi64(out, 1));
    } else if (OC == 16 && p + 3 < pixels) {
      _mm512_storeu_si512((void *)dst, out);
    } else {
      const __m128i part[4] = {_mm512_castsi512_si128(out), _mm512_extracti32x4_epi32(out, 1),
                               _mm512_extracti32x4_epi32(out, 2),
                               _mm512_extracti32x4_epi32(out, 3)};
      for (int i = 0; i < 4 && p + i < pixels; ++i)
        _mm_mask_storeu_epi8(dst + i * OC, (__mmask16)keep, part[i]);
    }
  }
}

IRC_INLINE void irc_qconv_store4(irc_vi32 *acc, int mr, int nv, const int64_t *restrict q,
                                 int64_t zp, int64_t lo, int64_t hi, uint8_t *restrict y,
                                 long pixels, long OC, long oc0, int nonneg) {
  __m512i sd[2];
  __mmask16 wide = 0;
  for (int v = 0; v < nv; ++v) { /* channels beyond OC (zero parameters, S = 31) are not stored */
    const long c = OC - oc0 - 16 * v;
    const __mmask16 valid = c >= 16 ? (__mmask16)0xffff : c <= 0 ? 0 : (__mmask16)((1u << c) - 1);
    sd[v] = irc_rq0_shift32(q + v * IRC_RQ_BLOCK);
    wide |= _mm512_mask_cmplt_epi32_mask(valid, sd[v], _mm512_setzero_si512());
  }
  if (wide)
    irc_qconv_pack_store(acc, mr, nv, q, sd, zp, lo, hi, y, pixels, OC, oc0, nonneg, 1);
  else
    irc_qconv_pack_store(acc, mr, nv, q, sd, zp, lo, hi, y, pixels, OC, oc0, nonneg, 0);
}
#define IRC_QCONV_STORE4 irc_qconv_store4
#else
#define IRC_QCONV_PACKED 0
#define IRC_QCONV_STORE4(ACC, MR, NV, Q, ZP, LO, HI, Y, PX, OC, OC0, NN) \
  ((void)(Q), (void)(Y), (void)(PX), (void)(OC0))
#endif

typedef struct {
  uint8_t *dst;
  const uint8_t *src;
  long N, H, W, C, Cp, PT, PL, PB, PR, rows_per_chunk;
  int fill;
} irc_qpad_args;

static void irc_qpad_rows(const void *ctx, long chunk) {
  const irc_qpad_args *A = (const irc_qpad_args *)ctx;
  const long H = A->H, W = A->W, C = A->C, Cp = A->Cp, PT = A->PT, PL = A->PL, PR = A->PR;
  const long Hp = H + PT + A->PB, Wp = W + PL + PR;
  const int fill = A->fill;
  const long r0 = chunk * A->rows_per_chunk;
  const long r1 = r0 + A->rows_per_chunk < A->N * Hp ? r0 + A->rows_per_chunk : A->N * Hp;
  for (long row = r0; row < r1; ++row) {
    const long n = row / Hp, h = row % Hp - PT;
    uint8_t *restrict d = A->dst + row * Wp * Cp;
    if (h < 0 || h >= H) {
      memset(d, fill, (size_t)(Wp * Cp));
      continue;
    }
    memset(d, fill, (size_t)(PL * Cp));
    memset(d + (PL + W) * Cp, fill, (size_t)(PR * Cp));
    d += PL * Cp;
    const uint8_t *restrict s = A->src + (n * H + h) * W * C;
    if (C == Cp)
      memcpy(d, s, (size_t)(W * C));
    else if (C == 3 && Cp == 4) { /* an image: no library call per pixel */
      long w = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      /* one 4-byte load per pixel (its 3 bytes and the next pixel's first), the top byte
         replaced: 2.6x faster than byte stores for a 224x224 image */
      for (; w + 1 < W; ++w) {
        uint32_t v;
        __builtin_memcpy(&v, s + 3 * w, 4);
        v = (v & 0x00ffffffu) | (uint32_t)(fill & 255) << 24;
        __builtin_memcpy(d + 4 * w, &v, 4);
      }
#endif
      for (; w < W; ++w) {
        d[4 * w] = s[3 * w], d[4 * w + 1] = s[3 * w + 1], d[4 * w + 2] = s[3 * w + 2];
        d[4 * w + 3] = (uint8_t)fill;
      }
    } else
      for (long w = 0; w < W; ++w) {
        memcpy(d + w * Cp, s + w * C, (size_t)C);
        memset(d + w * Cp + C, fill, (size_t)(Cp - C));
      }
  }
}

/* dst [N][H+PT+PB][W+PL+PR][Cp] bytes = src [N][H][W][C] with `fill` around and in the
   channels beyond C (the input's zero point: those taps then contribute nothing); rows split
   over the threads when the copy is large. */
static void irc_qpad(uint8_t *restrict dst, const uint8_t *restrict src, long N, long H, long W,
                     long C, long Cp, long PT, long PL, long PB, long PR, int fill) {
  const long rows = N * (H + PT + PB), bytes = rows * (W + PL + PR) * Cp;
  const long per = rows / 64 > 1 ? (rows + 63) / 64 : 1;
  const irc_qpad_args a = {dst, src, N, H, W, C, Cp, PT, PL, PB, PR, per, fill};
  irc_parallel(irc_qpad_rows, &a, (rows + per - 1) / per, bytes >= 131072 ? irc_nthreads() : 1);
}

/* Fused int8 convolution / fully connected as u8 x s8 dot products of 4 channels:
   x bytes [N][Hp][Wp][Cs] (Cs channels per pixel, a multiple of 4, already padded), each
   4-byte group XORed with `flip` (0x80808080 makes int8 storage unsigned: x + 128);
   w packed [ceil(OC/NB)][KH][KW][C4][NB][4] int8 (NB = 16 * NV, zero beyond OC); bias
   [ceil(OC/NB) * NB] int32 with the correction -(zp + 128 or 0) * sum(w) folded in at compile
   time; y [N][OH][OW][OC] bytes. Register tile: MR output pixels x NB channels, started at
   the bias; a tail tile repeats its last pixel (computed again, written once). The input
   words of a pixel tile (all taps) are XORed with `flip` once, into a stack buffer that
   every channel block of the tile reads (irc_qconv_fill, kernels/<isa>/qconv_tile.h; a
   broadcast from memory is a load, no shuffle; on AVX2 each word is stored as its two
   int16-pair dwords, pixel-major, IRC_QCONV_WIDE_X, and the tile and its mode-0 epilogue
   are irc_qconv_tile_avx2's); a tile too deep for IRC_QCONV_XBUF reads the input directly.
   Mode 0 with AVX512BW
   stores through irc_qconv_store4 (four vectors per pack, masked stores); other modes,
   MR = 1 and the portable path requantize vector by vector. Tasks (channel block fastest,
   then pixel tile, then row) form IRC_QCONV_CHUNKS contiguous chunks that the threads claim
   one at a time (irc_parallel, kernels/common/pool.h), so a thread decodes its position
   once per chunk and sets up the pixel pointers once per tile. */
#define IRC_QCONV_XBUF 4096 /* input words of one pixel tile, XORed once for all its blocks */
#define IRC_QCONV_CHUNKS 128 /* at most this many ranges of tasks the threads claim */
#define IRC_QCHUNK_WORK 250000.0 /* multiply-adds per claimed range, at least (~3 us) */

/* Ranges of `tasks` for irc_parallel: enough for two threads to balance and for a delayed
   one to cost little, few enough that claiming (one atomic per range) stays negligible. */
static long irc_qconv_chunks(long tasks, double work) {
  long n = (long)(work / IRC_QCHUNK_WORK);
  n = n < 8 ? 8 : (n > IRC_QCONV_CHUNKS ? IRC_QCONV_CHUNKS : n);
  return tasks < n ? tasks : n;
}
/* Fused int8 depthwise convolution (one filter per channel), 16 channels per vector (the
   lowering's choice only where IRC_QDWV's column buffer would not fit the stack):
   x * w exactly in int16 (|x| <= 255, |w| <= 128) summed in int32, the zero point's share
   -zp * sum(w) folded into the bias at compile time; a tap outside the input (padding, worth
   (zp - zp) * w = 0) adds zp * w back. x [N][H][W][C] of T (int8_t or uint8_t); w [KH][KW][Cp]
   int16 (Cp = C rounded up to 16, zero beyond C); bias [Cp] int32 (folded); q the
   requantization blocks; y [N][OH][OW][C] bytes. KHC/KWC: compile-time kernel size (the
   taps of an interior pixel unroll) or 0. Output rows split over the library's pool. */
typedef int16_t irc_vh16 __attribute__((vector_size(32)));
typedef int8_t irc_vsb16 __attribute__((vector_size(16)));
typedef uint8_t irc_vub16 __attribute__((vector_size(16)));

/* One tap of 16 channels: x (16 bytes) widened to int16 times w (exact in int16), and the
   widening of int16 lanes to int32. */
#if defined(__AVX512BW__) && defined(__AVX512VL__) && !defined(IRC_PORTABLE)
IRC_INLINE irc_vh16 irc_dw_prod_irc_vsb16(irc_vsb16 b, irc_vh16 w) {
  return (irc_vh16)_mm256_mullo_epi16(_mm256_cvtepi8_epi16((__m128i)b), (__m256i)w);
}
IRC_INLINE irc_vh16 irc_dw_prod_irc_vub16(irc_vub16 b, irc_vh16 w) {
  return (irc_vh16)_mm256_mullo_epi16(_mm256_cvtepu8_epi16((__m128i)b), (__m256i)w);
}
IRC_INLINE irc_vi32 irc_dw_widen(irc_vh16 p) {
  return (irc_vi32)_mm512_cvtepi16_epi32((__m256i)p);
}
#else
IRC_INLINE irc_vh16 irc_dw_prod_irc_vsb16(irc_vsb16 b, irc_vh16 w) {
  return __builtin_convertvector(b, irc_vh16) * w;
}
IRC_INLINE irc_vh16 irc_dw_prod_irc_vub16(irc_vub16 b, irc_vh16 w) {
  return __builtin_convertvector(b, irc_vh16) * w;
}
IRC_INLINE irc_vi32 irc_dw_widen(irc_vh16 p) { return __builtin_convertvector(p, irc_vi32); }
#endif

/* One tap of 16 channels' bytes at `src` (int8 when SIGNED, else uint8) times w. */
IRC_INLINE irc_vh16 irc_dw_prod(const uint8_t *src, irc_vh16 w, const int SIGNED) {
  if (SIGNED) {
    irc_vsb16 b;
    __builtin_memcpy(&b, src, 16);
    return irc_dw_prod_irc_vsb16(b, w);
  }
  irc_vub16 b;
  __builtin_memcpy(&b, src, 16);
  return irc_dw_prod_irc_vub16(b, w);
}

/* The arguments of an int16 depthwise convolution (an IRC_QDW instance's entry point), read
   by its parts. */
typedef struct {
  const uint8_t *x; /* int8_t or uint8_t */
  long N, H, W, C, Cp;
  int zp_in, pairs;
  const int16_t *w;
  const int32_t *bias;
  const int64_t *q;
  int mode;
  int64_t zp, lo, hi;
  uint8_t *y;
  long OH, OW;
  int KH_, KW_, SH, SW, DH, DW, PT, PL;
  long parts;
} irc_qdw_args;

/* Output rows of part `part` (irc_pool_range) of an int16 depthwise convolution: SIGNED for
   int8 input (else uint8), KHC, KWC the kernel size when the instance fixes it (3x3) or 0,
   MODEC the mode when fixed (0) or -1. */
IRC_INLINE void irc_qdw_part(const irc_qdw_args *A, long part, const int SIGNED, const int KHC,
                             const int KWC, const int MODEC) {
  const uint8_t *restrict x = A->x;
  const long N = A->N, H = A->H, W = A->W, C = A->C, Cp = A->Cp, OH = A->OH, OW = A->OW;
  const int zp_in = A->zp_in, pairs = A->pairs;
  const int16_t *restrict w = A->w;
  const int32_t *restrict bias = A->bias;
  const int64_t *restrict q = A->q;
  const int64_t zp = A->zp, lo = A->lo, hi = A->hi;
  uint8_t *restrict y = A->y;
  const int SH = A->SH, SW = A->SW, DH = A->DH, DW = A->DW, PT = A->PT, PL = A->PL;
  const int KH = KHC ? KHC : A->KH_, KW = KWC ? KWC : A->KW_;
  const int md = MODEC >= 0 ? MODEC : A->mode;
  long r0, r1;
  irc_pool_range(part, A->parts, N * OH, &r0, &r1);
  for (long r = r0; r < r1; ++r) {
    const long n = r / OH, oh = r % OH, ih0 = oh * SH - PT;
    const int rows_in = ih0 >= 0 && ih0 + (long)(KH - 1) * DH < H;
    for (long c = 0; c < Cp; c += 16) {
      const int cnt = C - c < 16 ? (int)(C - c) : 16;
      irc_vi32 bv;
      __builtin_memcpy(&bv, bias + c, 64);
      IRC_RQ_PARAMS(rq, q + c / 16 * IRC_RQ_BLOCK, md);
      for (long ow = 0; ow < OW; ++ow) {
        const long iw0 = ow * SW - PL;
        irc_vi32 acc = bv;
        if (cnt == 16 && rows_in && iw0 >= 0 && iw0 + (long)(KW - 1) * DW < W) {
          const uint8_t *restrict xp = x + ((n * H + ih0) * W + iw0) * C + c;
          int t = 0;
          if (pairs) /* two products still fit in int16: add them before widening */
            for (; t + 1 < KH * KW; t += 2) {
              const int h0 = t / KW, w0 = t % KW, h1 = (t + 1) / KW, w1 = (t + 1) % KW;
              irc_vh16 v0, v1;
              __builtin_memcpy(&v0, w + ((long)h0 * KW + w0) * Cp + c, 32);
              __builtin_memcpy(&v1, w + ((long)h1 * KW + w1) * Cp + c, 32);
              acc += irc_dw_widen(
                  irc_dw_prod(xp + ((long)h0 * DH * W + (long)w0 * DW) * C, v0, SIGNED) +
                  irc_dw_prod(xp + ((long)h1 * DH * W + (long)w1 * DW) * C, v1, SIGNED));
            }
          for (; t < KH * KW; ++t) {
            const int kh = t / KW, kw = t % KW;
            irc_vh16 wv;
            __builtin_memcpy(&wv, w + ((long)kh * KW + kw) * Cp + c, 32);
            acc += irc_dw_widen(
                irc_dw_prod(xp + ((long)kh * DH * W + (long)kw * DW) * C, wv, SIGNED));
          }
        } else {
          for (int kh = 0; kh < KH; ++kh) {
            const long ih = ih0 + (long)kh * DH;
            for (int kw = 0; kw < KW; ++kw) {
              const long iw = iw0 + (long)kw * DW;
              irc_vh16 wv;
              __builtin_memcpy(&wv, w + ((long)kh * KW + kw) * Cp + c, 32);
              if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                uint8_t b[16]; /* the channels beyond cnt read the zero point */
                memset(b, zp_in & 255, sizeof b);
                __builtin_memcpy(b, x + ((n * H + ih) * W + iw) * C + c, (size_t)cnt);
                acc += irc_dw_widen(irc_dw_prod(b, wv, SIGNED));
              } else {
                acc += __builtin_convertvector(wv, irc_vi32) * zp_in;
              }
            }
          }
        }
        IRC_RQ_STORE(acc, rq, q, md, zp, lo, hi, y + (r * OW + ow) * C + c, cnt);
      }
    }
  }
}

/* An int16 depthwise convolution's parts over the library's pool. */
IRC_INLINE void irc_qdw_run(void (*run_part)(const void *, long), irc_qdw_args a,
                            const int KHC, const int KWC) {
  const int KH = KHC ? KHC : a.KH_, KW = KWC ? KWC : a.KW_;
  const double work = (double)a.N * a.OH * a.OW * a.C * KH * KW;
  const int threads = work > IRC_PARALLEL_QDW_WORK ? irc_nthreads() : 1;
  a.parts = irc_pool_parts(a.N * a.OH, work, IRC_QCHUNK_WORK, threads);
  irc_parallel(run_part, &a, a.parts, threads);
}

/* An instance (csrc.fused_depthwise_kernel names them): NAME and its part function for
   input type T (int8_t or uint8_t; TV its 16-byte vector, irc_vsb16 or irc_vub16), the kernel
   size and the mode fixed at compile time. */
#define IRC_QDW(NAME, T, TV, KHC, KWC, MODEC)                                                 \
  static void NAME##_part(const void *ctx, long part) {                                       \
    irc_qdw_part((const irc_qdw_args *)ctx, part, (T)-1 < 0, KHC, KWC, MODEC);                \
  }                                                                                           \
  static void NAME(const T *restrict x, long N, long H, long W, long C, long Cp, int zp_in,   \
                   int pairs, const int16_t *restrict w, const int32_t *restrict bias,        \
                   const int64_t *restrict q, int mode, int64_t zp, int64_t lo, int64_t hi,   \
                   uint8_t *restrict y, long OH, long OW, int KH_, int KW_, int SH, int SW,   \
                   int DH, int DW, int PT, int PL) {                                          \
    const irc_qdw_args a = {(const uint8_t *)x, N,  H,  W,  C,   Cp,  zp_in, pairs, w,  bias, \
                            q,  mode, zp, lo, hi, y,  OH, OW,  KH_, KW_, SH,  SW,   DH, DW,   \
                            PT, PL,   0};                                                     \
    irc_qdw_run(NAME##_part, a, KHC, KWC);                                                    \
  }

/* Fused int8 depthwise convolution as u8 x s8 dot products over 4 kernel rows (vpdpbusd).
   Per task (one output row, or two when one quad holds the taps of both, and a block of 16
   channels), the input columns the task reads are gathered once into column quads: byte
   4c + t of column j is channel c of kernel row 4g + t (g: group of 4 rows, G = ceil(KH/4)
   groups) at input column j - PL, XORed with `flip` (0x80 for int8: x + 128 as an unsigned
   byte); a tap outside the input reads the input's zero point (it then cancels against the
   bias, which holds bias - (zp + offset) * sum(w)). An output pixel is G * KW dot products
   of its columns with the packed weights: neighbouring pixels share the columns (stride 1:
   each serves KW pixels, of both rows of a task), so the byte shuffles are paid once per
   input column, not once per tap. x [N][H][W][C] bytes; w [Cp/16][G][KW][16][4] int8 (zero
   beyond KH and C); bias [Cp] int32; y [N][OH][OW][C] bytes. Pixels run in chunks of
   IRC_DWQ_CHUNK so that the columns stay in L1: a chunk needs (IRC_DWQ_CHUNK - 1) * SW +
   (KW - 1) * DW + 1 of them per group (the lowering checks that they fit the stack). */
#define IRC_DWQ_CHUNK 64
#if IRC_HAVE_VNNI && defined(__AVX512BW__) && defined(__AVX512VL__)
/* Rows t = 0..3 of 16 channels in the four 128-bit lanes -> byte 4c + t = channel c of row
   t. */
#if defined(__AVX512VBMI__)
static const uint8_t irc_dwq_index[64] __attribute__((aligned(64))) = {
    0, 16, 32, 48, 1, 17, 33, 49, 2, 18, 34, 50, 3, 19, 35, 51,
    4, 20, 36, 52, 5, 21, 37, 53, 6, 22, 38, 54, 7, 23, 39, 55,
    8, 24, 40, 56, 9, 25, 41, 57, 10, 26, 42, 58, 11, 27, 43, 59,
    12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};

IRC_INLINE __m512i irc_dwq_interleave(__m512i v) {
  return _mm512_permutexvar_epi8(_mm512_load_si512((const void *)irc_dwq_index), v);
}
#else
/* Without VBMI (vpermb): dword 4l + t <- dword 4t + l, then the 4 x 4 bytes of each lane
   transposed. */
IRC_INLINE __m512i irc_dwq_interleave(__m512i v) {
  const __m512i dwords = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i bytes = _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(dwords, v), bytes);
}
#endif

IRC_INLINE irc_vi32 irc_dwq_dot(irc_vi32 acc, const uint8_t *restrict col, irc_vi32 w) {
  return (irc_vi32)_mm512_dpbusd_epi32((__m512i)acc, _mm512_load_si512((const void *)col),
                                       (__m512i)w);
}

/* Columns iw0 .. iw0 + count - 1 of 4 rows (row t at rp[t] + iw * rs[t]; rs 0 for a row of
   zero points) as quads of 16 channels, `cnt` of them valid (the others read `fill`); only
   the first `nr` rows count (the weights of the others are zero: they are not loaded). */
IRC_INLINE void irc_dwq_columns(uint8_t *restrict dst, const uint8_t *const rp[4],
                                const long rs[4], long iw0, long count, long W, int cnt,
                                int nr, int fill, uint32_t flip) {
  const __m512i vflip = _mm512_set1_epi32((int)flip);
  const __m512i outside = _mm512_xor_si512(_mm512_set1_epi8((char)fill), vflip);
  const __m128i vfill = _mm_set1_epi8((char)fill);
  const __mmask16 m = (__mmask16)((1u << cnt) - 1u);
  long left = -iw0, right = W - iw0;
  left = left < 0 ? 0 : (left > count ? count : left);
  right = right < left ? left : (right > count ? count : right);
  for (long j = 0; j < left; ++j) _mm512_store_si512((void *)(dst + j * 64), outside);
  if (cnt == 16)
    for (long j = left; j < right; ++j) {
      const long iw = iw0 + j;
      __m512i v = _mm512_zextsi128_si512(_mm_loadu_si128((const __m128i *)(rp[0] + iw * rs[0])));
      if (nr > 1)
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(rp[1] + iw * rs[1])), 1);
      if (nr > 2)
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(rp[2] + iw * rs[2])), 2);
      if (nr > 3)
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(rp[3] + iw * rs[3])), 3);
      _mm512_store_si512((void *)(dst + j * 64),
                         _mm512_xor_si512(irc_dwq_interleave(v), vflip));
    }
  else
    for (long j = left; j < right; ++j) {
      const long iw = iw0 + j;
      __m512i v = _mm512_zextsi128_si512(_mm_mask_loadu_epi8(vfill, m, rp[0] + iw * rs[0]));
      v = _mm512_inserti32x4(v, _mm_mask_loadu_epi8(vfill, m, rp[1] + iw * rs[1]), 1);
      v = _mm512_inserti32x4(v, _mm_mask_loadu_epi8(vfill, m, rp[2] + iw * rs[2]), 2);
      v = _mm512_inserti32x4(v, _mm_mask_loadu_epi8(vfill, m, rp[3] + iw * rs[3]), 3);
      _mm512_store_si512((void *)(dst + j * 64),
                         _mm512_xor_si512(irc_dwq_interleave(v), vflip));
    }
  for (long j = right; j < count; ++j) _mm512_store_si512((void *)(dst + j * 64), outside);
}
#elif defined(__AVX2__) && !defined(IRC_PORTABLE)
#define IRC_DWQ_INT16 1
#include "x86_64_avx2/dwq.h"
#else
/* The portable dot products (4 bytes per lane, column and weights alike) on native vectors:
   the 16 lanes as 16 / IRC_QLANES slices in a loop the compiler keeps (unrolled, the 16-lane
   form made 4 pixels x 3 taps x 4 slices of code per kernel instance: ~10,000 instructions
   on SSE2). */
IRC_INLINE irc_vi32 irc_dwq_dot(irc_vi32 acc, const uint8_t *restrict col, irc_vi32 w) {
  int32_t *restrict r = (int32_t *)&acc;
  const int32_t *restrict ws = (const int32_t *)&w;
#pragma GCC unroll 1
  for (int h = 0; h < 16; h += IRC_QLANES) {
    irc_viq sum, wq;
    irc_vuq a;
    __builtin_memcpy(&sum, r + h, sizeof sum);
    __builtin_memcpy(&wq, ws + h, sizeof wq);
    __builtin_memcpy(&a, col + 4 * h, sizeof a);
    const irc_vuq u = (irc_vuq)wq;
    const irc_viq w0 = (irc_viq)(u << 24) >> 24, w1 = (irc_viq)(u << 16) >> 24;
    const irc_viq w2 = (irc_viq)(u << 8) >> 24, w3 = wq >> 24;
    sum += (irc_viq)(a & 255u) * w0 + (irc_viq)((a >> 8) & 255u) * w1 +
           (irc_viq)((a >> 16) & 255u) * w2 + (irc_viq)(a >> 24) * w3;
    __builtin_memcpy(r + h, &sum, sizeof sum);
  }
  return acc;
}

IRC_INLINE void irc_dwq_columns(uint8_t *restrict dst, const uint8_t *const rp[4],
                                const long rs[4], long iw0, long count, long W, int cnt,
                                int nr, int fill, uint32_t flip) {
  (void)nr; /* the rows past it read zero points (rs 0) */
  const uint8_t fb = (uint8_t)fill, xb = (uint8_t)(flip & 255u);
  for (long j = 0; j < count; ++j) {
    const long iw = iw0 + j;
    const int inside = iw >= 0 && iw < W;
    for (int c = 0; c < 16; ++c)
      for (int t = 0; t < 4; ++t)
        dst[j * 64 + 4 * c + t] =
            (uint8_t)((inside && c < cnt ? rp[t][iw * rs[t] + c] : fb) ^ xb);
  }
}
#endif

#if !defined(IRC_DWQ_INT16)
/* Columns of 64 bytes (byte 4c + t: channel c of row t), the weights of a tap as they are
   packed, the dot products accumulating in the int32 lanes themselves, started at the bias. */
#define IRC_DWQ_COL 64
typedef irc_vi32 irc_dwq_w;
IRC_INLINE irc_dwq_w irc_dwq_wprep(irc_vi32 w) { return w; }
typedef irc_vi32 irc_dwq_acc;
IRC_INLINE irc_dwq_acc irc_dwq_init(irc_vi32 bias) { return bias; }
#define IRC_DWQ_STORE(ACC, RQ, MODE, ZP, LO, HI, DST, CNT) \
  IRC_RQ_STORE(ACC, RQ, q, MODE, ZP, LO, HI, DST, CNT)
#if IRC_HAVE_VNNI && IRC_QCONV_PACKED
/* Mode 0: the conv kernel's packed epilogue on 4 pixels x 16 channels (pixel stride C). */
#define IRC_DWQ_STORE4(ACC, NP, RQ, QB, MODE, ZP, LO, HI, Y, C, C0, CNT)                     \
  do {                                                                                       \
    if ((MODE) == 0)                                                                         \
      irc_qconv_store4(ACC, 4, 1, QB, ZP, LO, HI, Y, NP, C, C0, (LO) - (ZP) >= 0);           \
    else                                                                                     \
      for (int i_ = 0; i_ < (NP); ++i_)                                                      \
        IRC_DWQ_STORE(ACC[i_], RQ, MODE, ZP, LO, HI, (Y) + i_ * (C) + (C0), CNT);            \
  } while (0)
#endif
#endif
#if !defined(IRC_DWQ_STORE4)
#define IRC_DWQ_STORE4(ACC, NP, RQ, QB, MODE, ZP, LO, HI, Y, C, C0, CNT)                     \
  for (int i_ = 0; i_ < (NP); ++i_)                                                          \
  IRC_DWQ_STORE(ACC[i_], RQ, MODE, ZP, LO, HI, (Y) + i_ * (C) + (C0), CNT)
#endif

/* Mode 0 on one value (lane 0 of a parameter block): exact, as irc_rq0_lanes. */
IRC_INLINE int64_t irc_rq0_scalar(int64_t x, const int64_t *restrict q) {
  const int64_t prod = x * q[0];
  return (prod + (prod < -((int64_t)1 << 30) ? q[32] : q[16])) >> q[48];
}

/* Fused int8 add (TFLite's general 8-bit add in lower-quantized's form): y = clamp(zp +
   rq_o(rq_a((a - za) * ka) + rq_b((b - zb) * kb)), lo, hi) over n elements of T, each rq_*
   a mode-0 requantization (per tensor: block lane 0 holds the parameters); the int32 sum
   wraps as the chain's nn.add. Chunks of IRC_QADD_CHUNK elements are split across threads. */
#if defined(__AVX512F__) && !defined(IRC_PORTABLE)
#define IRC_QADD_VECTOR(CVT)                                                                 \
  {                                                                                          \
    const irc_rqp pa = irc_rq_load(qa, 0), pb = irc_rq_load(qb, 0), po = irc_rq_load(qo, 0); \
    const __m512i vza = _mm512_set1_epi32(za), vzb = _mm512_set1_epi32(zb);                  \
    const __m512i vka = _mm512_set1_epi32(ka), vkb = _mm512_set1_epi32(kb);                  \
    for (; i + 16 <= i1; i += 16) {                                                          \
      const __m512i xa = _mm512_mullo_epi32(                                                 \
          _mm512_sub_epi32(CVT(_mm_loadu_si128((const __m128i *)(a + i))), vza), vka);       \
      const __m512i xb = _mm512_mullo_epi32(                                                 \
          _mm512_sub_epi32(CVT(_mm_loadu_si128((const __m128i *)(b + i))), vzb), vkb);       \
      const __m512i sum = _mm512_add_epi32(irc_rq0_lanes(xa, &pa), irc_rq0_lanes(xb, &pb));  \
      irc_rq_store(sum, &po, 0, zp, lo, hi, y + i, 16);                                      \
    }                                                                                        \
  }
#elif defined(__AVX2__) && !defined(IRC_PORTABLE)
/* AVX2: 8 elements per step (irc_qadd8_avx2, kernels/x86_64_avx2/requant.h). */
#define IRC_QADD_VECTOR(CVT)                                                                 \
  for (; i + 8 <= i1; i += 8) {                                                              \
    const __m128i ra = _mm_loadl_epi64((const __m128i *)(a + i));                            \
    const __m128i rb = _mm_loadl_epi64((const __m128i *)(b + i));                            \
    const int sgn = (__typeof__(a[0]))-1 < 0;                                                \
    irc_qadd8_avx2(sgn ? _mm256_cvtepi8_epi32(ra) : _mm256_cvtepu8_epi32(ra),                \
                   sgn ? _mm256_cvtepi8_epi32(rb) : _mm256_cvtepu8_epi32(rb), za, zb, ka, kb, \
                   qa, qb, qo, zp, lo, hi, y + i);                                           \
  }
#else
#define IRC_QADD_VECTOR(CVT)
#endif
#define IRC_QADD(NAME, T, CVT)                                                                \
  typedef struct {                                                                            \
    const T *a, *b;                                                                           \
    long n, size;                                                                             \
    int za, zb, ka, kb;                                                                       \
    const int64_t *qa, *qb, *qo;                                                              \
    int64_t zp, lo, hi;                                                                       \
    uint8_t *y;                                                                               \
  } NAME##_args;                                                                              \
  /* Chunk `t` of `size` elements (irc_parallel). */                                          \
  static void NAME##_chunk(const void *ctx, long t) {                                         \
    const NAME##_args *A = (const NAME##_args *)ctx;                                          \
    const T *restrict a = A->a, *restrict b = A->b;                                           \
    const int za = A->za, zb = A->zb, ka = A->ka, kb = A->kb;                                 \
    const int64_t *restrict qa = A->qa, *restrict qb = A->qb, *restrict qo = A->qo;           \
    const int64_t zp = A->zp, lo = A->lo, hi = A->hi;                                         \
    uint8_t *restrict y = A->y;                                                               \
    const long i1 = (t + 1) * A->size < A->n ? (t + 1) * A->size : A->n;                      \
    long i = t * A->size;                                                                     \
    IRC_QADD_VECTOR(CVT)                                                                      \
    for (; i < i1; ++i) {                                                                     \
      const int64_t va = irc_rq0_scalar((int64_t)((int32_t)a[i] - za) * ka, qa);             \
      const int64_t vb = irc_rq0_scalar((int64_t)((int32_t)b[i] - zb) * kb, qb);             \
      const int32_t s = (int32_t)((uint32_t)(int32_t)va + (uint32_t)(int32_t)vb);             \
      const int64_t r = zp + irc_rq0_scalar(s, qo);                                           \
      y[i] = (uint8_t)(r < lo ? lo : (r > hi ? hi : r));                                      \
    }                                                                                         \
  }                                                                                           \
  static void NAME(const T *restrict a, const T *restrict b, long n, int za, int zb, int ka,  \
                   int kb, const int64_t *restrict qa, const int64_t *restrict qb,            \
                   const int64_t *restrict qo, int64_t zp, int64_t lo, int64_t hi,            \
                   uint8_t *restrict y) {                                                     \
    const long size = n / IRC_QADD_CHUNK > 4096 ? (n + 4095) / 4096 : IRC_QADD_CHUNK;         \
    const NAME##_args args = {a, b, n, size, za, zb, ka, kb, qa, qb, qo, zp, lo, hi, y};      \
    irc_parallel(NAME##_chunk, &args, (n + size - 1) / size,                                  \
                 n >= IRC_PARALLEL_QADD ? irc_nthreads() : 1);                                \
  }
