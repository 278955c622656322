/* irc CPU kernels, portable C: 4-lane float vectors (SSE2, NEON); partial vectors lane by
   lane. */
#define IRC_VL 4

/* The first n (1..IRC_VL) floats at p as a vector, the other lanes zero / not stored. */
typedef float irc_vf __attribute__((vector_size(4 * IRC_VL)));
IRC_INLINE irc_vf irc_vf_load_n(const float *p, int n) {
  irc_vf v = {0.0f};
  for (int j = 0; j < n; ++j) v[j] = p[j];
  return v;
}
IRC_INLINE void irc_vf_store_n(float *p, irc_vf v, int n) {
  for (int j = 0; j < n; ++j) p[j] = v[j];
}
