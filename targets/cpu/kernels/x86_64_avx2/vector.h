/* irc CPU kernels, AVX2: 8-lane float vectors (the 16 ymm registers); partial vectors by
   masked moves (masked-off lanes are neither read nor written). */
#include <immintrin.h>
#define IRC_VL 8

IRC_INLINE __m256i irc_mask8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The first n (1..IRC_VL) floats at p as a vector, the other lanes zero / not stored. */
typedef float irc_vf __attribute__((vector_size(4 * IRC_VL)));
IRC_INLINE irc_vf irc_vf_load_n(const float *p, int n) {
  return (irc_vf)_mm256_maskload_ps(p, irc_mask8(n));
}
IRC_INLINE void irc_vf_store_n(float *p, irc_vf v, int n) {
  _mm256_maskstore_ps(p, irc_mask8(n), (__m256)v);
}

/* a > v ? a : v and a < v ? a : v, lane by lane, in one instruction each (max / min return
   their second operand, v, when either is NaN or both are zeros: irc_vf_act's selects). */
#define IRC_VF_MINMAX
IRC_INLINE irc_vf irc_vf_max_of(irc_vf a, irc_vf v) {
  return (irc_vf)_mm256_max_ps((__m256)a, (__m256)v);
}
IRC_INLINE irc_vf irc_vf_min_of(irc_vf a, irc_vf v) {
  return (irc_vf)_mm256_min_ps((__m256)a, (__m256)v);
}
