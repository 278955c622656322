/* float16 <-> float32 conversion of whole buffers (nn.cast between f16 and f32).
 * float16 values are held as their IEEE binary16 bits (uint16_t). Rounding to half is to
 * nearest, ties to even, as numpy's astype(float16): overflow gives +-inf, NaN stays NaN
 * (quiet NaNs keep their upper payload bits, as numpy and F16C do). The F16C instructions
 * (vcvtps2ph / vcvtph2ps, x86-64-v3 and AVX-512 profiles) convert 8 values at a time; the
 * portable scalar functions do the rest and the generic profile. irc_h2f / irc_f2h convert
 * one value, irc_vf_load_h / irc_vf_store_h a whole irc_vf (16 lanes per instruction on
 * AVX-512): what the float16 kernels (conv2d_f16.c, lowerings/binary16.py) widen on load and
 * round on store with. */
#include <stdint.h>
#include <string.h>
#if defined(__F16C__) && !defined(IRC_PORTABLE)
#include <immintrin.h>
#endif

static inline float irc_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
    float f;
    if (exponent == 0x1fu) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent == 0) {
        f = (float)mantissa * 5.9604644775390625e-8f; /* subnormal: mantissa * 2^-24, exact */
        memcpy(&bits, &f, 4);
        bits |= sign;
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t irc_float_to_half(float value) {
    uint32_t x;
    memcpy(&x, &value, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) { /* NaN: numpy's rule, the payload's upper bits, never inf */
        uint32_t payload = 0x7c00u + ((x & 0x7fffffu) >> 13);
        return (uint16_t)(sign | (payload == 0x7c00u ? 0x7c01u : payload));
    }
    if (x >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: inf */
    if (x < 0x38800000u) {                                     /* below 2^-14: subnormal */
        if (x <= 0x33000000u) return (uint16_t)sign;           /* <= 2^-25: zero (ties even) */
        uint32_t shift = 126u - (x >> 23), m = (x & 0x7fffffu) | 0x800000u;
        uint32_t r = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        r += rest > half || (rest == half && (r & 1u));
        return (uint16_t)(sign | r);
    }
    x += 0xc8000fffu + ((x >> 13) & 1u); /* rebias (-112 << 23), round to nearest even */
    return (uint16_t)(sign | (x >> 13));
}

static void irc_f32_to_f16(const float *restrict in, uint16_t *restrict out, int64_t n) {
    int64_t i = 0;
#if defined(__F16C__) && !defined(IRC_PORTABLE)
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(out + i), h);
    }
#endif
    for (; i < n; i++) out[i] = irc_float_to_half(in[i]);
}

static void irc_f16_to_f32(const uint16_t *restrict in, float *restrict out, int64_t n) {
    int64_t i = 0;
#if defined(__F16C__) && !defined(IRC_PORTABLE)
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i))));
#endif
    for (; i < n; i++) out[i] = irc_half_to_float(in[i]);
}

/* One value: float16 bits to float32 (exact) and float32 to float16 bits (nearest, ties to
   even): F16C's one-value forms where present, else the portable functions above. */
static inline float irc_h2f(uint16_t h) {
#if defined(__F16C__) && !defined(IRC_PORTABLE)
    return _cvtsh_ss(h);
#else
    return irc_half_to_float(h);
#endif
}

static inline uint16_t irc_f2h(float f) {
#if defined(__F16C__) && !defined(IRC_PORTABLE)
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    return irc_float_to_half(f);
#endif
}

/* A vector of IRC_VL float16 values as float32 (irc_vf_load_h) and a float32 vector rounded
   to float16 (irc_vf_store_h): one vcvtph2ps / vcvtps2ph of the whole vector on the AVX-512
   (16 lanes) and AVX2 (8 lanes, F16C) profiles, lane by lane otherwise; the _n forms move
   the first n (1..IRC_VL) lanes only. */
#if IRC_VL == 16 && defined(__AVX512F__) && !defined(IRC_PORTABLE)
static inline irc_vf irc_vf_load_h(const uint16_t *p) {
    return (irc_vf)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline void irc_vf_store_h(uint16_t *p, irc_vf v) {
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT));
}
#elif IRC_VL == 8 && defined(__F16C__) && !defined(IRC_PORTABLE)
static inline irc_vf irc_vf_load_h(const uint16_t *p) {
    return (irc_vf)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline void irc_vf_store_h(uint16_t *p, irc_vf v) {
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT));
}
#else
static inline irc_vf irc_vf_load_h(const uint16_t *p) {
    irc_vf v;
    for (int j = 0; j < IRC_VL; ++j) v[j] = irc_h2f(p[j]);
    return v;
}
static inline void irc_vf_store_h(uint16_t *p, irc_vf v) {
    for (int j = 0; j < IRC_VL; ++j) p[j] = irc_f2h(v[j]);
}
#endif

/* The partial forms go through a vector's worth of halves on the stack: one whole-vector
   conversion instead of n one-value ones (the lanes past n are +0.0 / not stored). */
static inline irc_vf irc_vf_load_hn(const uint16_t *p, int n) {
    uint16_t t[IRC_VL] = {0};
    memcpy(t, p, sizeof(uint16_t) * (size_t)n);
    return irc_vf_load_h(t);
}

static inline void irc_vf_store_hn(uint16_t *p, irc_vf v, int n) {
    uint16_t t[IRC_VL];
    irc_vf_store_h(t, v);
    memcpy(p, t, sizeof(uint16_t) * (size_t)n);
}
