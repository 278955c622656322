/* irc CPU kernels: requantization lane by lane, exactly irc_mbqm (every ISA without
   AVX-512; AVX2 for the modes other than 0). */
IRC_INLINE void irc_rq_store_scalar(irc_vi32 acc, const int64_t *restrict q, int mode, int64_t zp,
                                    int64_t lo, int64_t hi, uint8_t *restrict dst, int cnt) {
  for (int j = 0; j < cnt; ++j) {
    const int e = (j & 1) * 8 + j / 2;
    const int64_t m = q[e], a = q[16 + e], b = q[32 + e], x = acc[j];
    int64_t r;
    if (mode == 0) { /* m, K1, K2, S */
      const int64_t prod = x * m;
      r = (prod + (prod < -((int64_t)1 << 30) ? b : a)) >> q[48 + e];
    } else if (mode & 1) {
      r = (x * m + (b > 0 ? ((int64_t)1 << (b - 1)) : 0)) >> b;
    } else {
      int64_t s = x << a;
      s = s < INT32_MIN ? INT32_MIN : (s > INT32_MAX ? INT32_MAX : s);
      r = irc_rdbpot(irc_srdhm(s, m), (int)b);
    }
    r += zp;
    dst[j] = (uint8_t)(r < lo ? lo : (r > hi ? hi : r));
  }
}
