/* irc CPU kernels, AVX-512: 16-lane float vectors; partial vectors by masked moves. */
#include <immintrin.h>
#define IRC_VL 16

/* The first n (1..IRC_VL) floats at p as a vector, the other lanes zero / not stored. */
typedef float irc_vf __attribute__((vector_size(4 * IRC_VL)));
IRC_INLINE irc_vf irc_vf_load_n(const float *p, int n) {
  return (irc_vf)_mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), p);
}
IRC_INLINE void irc_vf_store_n(float *p, irc_vf v, int n) {
  _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1u), (__m512)v);
}

/* a > v ? a : v and a < v ? a : v, lane by lane, in one instruction each (max / min return
   their second operand, v, when either is NaN or both are zeros: irc_vf_act's selects). */
#define IRC_VF_MINMAX
IRC_INLINE irc_vf irc_vf_max_of(irc_vf a, irc_vf v) {
  return (irc_vf)_mm512_max_ps((__m512)a, (__m512)v);
}
IRC_INLINE irc_vf irc_vf_min_of(irc_vf a, irc_vf v) {
  return (irc_vf)_mm512_min_ps((__m512)a, (__m512)v);
}
