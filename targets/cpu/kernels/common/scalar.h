/* irc CPU kernels: scalar helpers and epilogues. */
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

/* o[j] = act(o[j] + r[j]) for j < n: a residual add fused into a producer's epilogue. */
IRC_INLINE void irc_residual(float *restrict o, long n, const float *restrict r, int act) {
  long j;
  switch (act) {
    case IRC_ACT_NONE: for (j = 0; j < n; ++j) o[j] += r[j]; break;
    case IRC_ACT_RELU:
      for (j = 0; j < n; ++j) o[j] = o[j] + r[j] < 0.0f ? 0.0f : o[j] + r[j];
      break;
    case IRC_ACT_RELU6:
      for (j = 0; j < n; ++j) o[j] = irc_clampf(o[j] + r[j], 0.0f, 6.0f);
      break;
    default: for (j = 0; j < n; ++j) o[j] = irc_act(o[j] + r[j], act); break;
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
