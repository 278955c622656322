/* irc CPU kernels: operations on the ISA's native float vector irc_vf (IRC_VL lanes, from
   <isa>/vector.h). The register-tiled kernels compute on it: a vector wider than the
   hardware's has no register mode in gcc and lives in memory. */
typedef float irc_vfu __attribute__((vector_size(4 * IRC_VL), aligned(4)));
typedef int irc_vfi __attribute__((vector_size(4 * IRC_VL)));

IRC_INLINE irc_vf irc_vf_select(irc_vfi m, irc_vf a, irc_vf b) {
  return (irc_vf)(((irc_vfi)a & m) | ((irc_vfi)b & ~m));
}

#ifndef IRC_VF_MINMAX
/* a > v ? a : v and a < v ? a : v, lane by lane (v where either is NaN). */
IRC_INLINE irc_vf irc_vf_max_of(irc_vf a, irc_vf v) { return irc_vf_select(a > v, a, v); }
IRC_INLINE irc_vf irc_vf_min_of(irc_vf a, irc_vf v) { return irc_vf_select(a < v, a, v); }
#endif

/* irc_act on IRC_VL lanes for the codes other than tanh (NaN passes through). */
IRC_INLINE irc_vf irc_vf_act(irc_vf v, int act) {
  const irc_vf zero = {0.0f};
  switch (act) {
    case IRC_ACT_RELU: return irc_vf_max_of(zero, v);
    case IRC_ACT_RELU6: return irc_vf_min_of(zero + 6.0f, irc_vf_max_of(zero, v));
    case IRC_ACT_RELU_N1_TO_1: return irc_vf_min_of(zero + 1.0f, irc_vf_max_of(zero - 1.0f, v));
    default: return v;
  }
}
