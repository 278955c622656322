/* irc CPU kernels, AVX2: 8-lane float vectors (the 16 ymm registers); partial vectors by
   masked moves (masked-off lanes are neither read nor written). */
#include <immintrin.h>
#define IRC_VL 8

IRC_INLINE __m256i irc_mask8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The first n (1..16) floats at p as a 16-lane vector, the other lanes zero / not stored. */
IRC_INLINE irc_v16 irc_v16_load_n(const float *p, int n) {
  const __m256 lo = _mm256_maskload_ps(p, irc_mask8(n));
  const __m256 hi = _mm256_maskload_ps(p + 8, irc_mask8(n - 8));
  irc_v16 v;
  memcpy(&v, &lo, 32);
  memcpy((char *)&v + 32, &hi, 32);
  return v;
}
IRC_INLINE void irc_v16_store_n(float *p, irc_v16 v, int n) {
  __m256 lo, hi;
  memcpy(&lo, &v, 32);
  memcpy(&hi, (const char *)&v + 32, 32);
  _mm256_maskstore_ps(p, irc_mask8(n), lo);
  _mm256_maskstore_ps(p + 8, irc_mask8(n - 8), hi);
}

typedef float irc_vf __attribute__((vector_size(4 * IRC_VL)));
IRC_INLINE irc_vf irc_vf_load_n(const float *p, int n) {
  return (irc_vf)_mm256_maskload_ps(p, irc_mask8(n));
}
IRC_INLINE void irc_vf_store_n(float *p, irc_vf v, int n) {
  _mm256_maskstore_ps(p, irc_mask8(n), (__m256)v);
}
