/* irc CPU kernels: snippet "pool_int" (targets/cpu/csrc.py puts it in a translation unit). */
/* Integer NHWC max / average pooling on stored values, as the reference: max over the taps
   inside the input (`lowest` when none), average = window sum / count rounded half away
   from zero (count = KH * KW with include_pad, else the taps inside; 0 when none).
   Per output pixel the taps inside the input are visited once each and the channels are the
   inner loop (contiguous in NHWC: the compiler's vector lanes). A max pool keeps its running
   maximum in the output row (initialised to the type's minimum, then raised to `lowest`
   where that is larger, or set to (T)lowest where no tap is inside); an average pool sums
   IRC_POOL_INT_BLOCK channels at a time in int64, exactly as the per-element sums. */
#define IRC_POOL_INT_BLOCK 64
#define IRC_POOL_INT(T, TMIN)                                                                \
  static void irc_pool2d_##T(int is_max, const T *restrict x, int N, int H, int W, int C,    \
                             T *restrict y, int OH, int OW, int KH, int KW, int SH, int SW,  \
                             int DH, int DW, int PT, int PL, int include_pad,               \
                             int64_t lowest) {                                               \
    for (int n = 0; n < N; ++n)                                                              \
      for (int oh = 0; oh < OH; ++oh)                                                        \
        for (int ow = 0; ow < OW; ++ow) {                                                    \
          T *restrict o = y + (((long)n * OH + oh) * OW + ow) * C;                           \
          long rows = 0, cols = 0;                                                           \
          for (int kh = 0; kh < KH; ++kh) {                                                  \
            const int ih = oh * SH - PT + kh * DH;                                           \
            rows += ih >= 0 && ih < H;                                                       \
          }                                                                                  \
          for (int kw = 0; kw < KW; ++kw) {                                                  \
            const int iw = ow * SW - PL + kw * DW;                                           \
            cols += iw >= 0 && iw < W;                                                       \
          }                                                                                  \
          const long count = rows * cols;                                                    \
          if (is_max) {                                                                      \
            for (int c = 0; c < C; ++c) o[c] = (T)(TMIN);                                    \
            for (int kh = 0; kh < KH; ++kh) {                                                \
              const int ih = oh * SH - PT + kh * DH;                                         \
              if (ih < 0 || ih >= H) continue;                                               \
              for (int kw = 0; kw < KW; ++kw) {                                              \
                const int iw = ow * SW - PL + kw * DW;                                       \
                if (iw < 0 || iw >= W) continue;                                             \
                const T *restrict p = x + (((long)n * H + ih) * W + iw) * C;                 \
                for (int c = 0; c < C; ++c) o[c] = p[c] > o[c] ? p[c] : o[c];                \
              }                                                                              \
            }                                                                                \
            if (count == 0 || lowest > (int64_t)(TMIN))                                      \
              for (int c = 0; c < C; ++c) {                                                  \
                const int64_t v = o[c];                                                      \
                o[c] = (T)(count == 0 || lowest > v ? lowest : v);                           \
              }                                                                              \
            continue;                                                                        \
          }                                                                                  \
          const int64_t cnt = include_pad ? (int64_t)KH * KW : count;                        \
          const int64_t half = cnt / 2;                                                      \
          for (int c0 = 0; c0 < C; c0 += IRC_POOL_INT_BLOCK) {                               \
            const int cc = C - c0 < IRC_POOL_INT_BLOCK ? C - c0 : IRC_POOL_INT_BLOCK;        \
            int64_t acc[IRC_POOL_INT_BLOCK];                                                 \
            for (int c = 0; c < cc; ++c) acc[c] = 0;                                         \
            for (int kh = 0; kh < KH; ++kh) {                                                \
              const int ih = oh * SH - PT + kh * DH;                                         \
              if (ih < 0 || ih >= H) continue;                                               \
              for (int kw = 0; kw < KW; ++kw) {                                              \
                const int iw = ow * SW - PL + kw * DW;                                       \
                if (iw < 0 || iw >= W) continue;                                             \
                const T *restrict p = x + (((long)n * H + ih) * W + iw) * C + c0;            \
                for (int c = 0; c < cc; ++c) acc[c] += p[c];                                 \
              }                                                                              \
            }                                                                                \
            for (int c = 0; c < cc; ++c) {                                                   \
              const int64_t a = acc[c];                                                      \
              o[c0 + c] =                                                                    \
                  (T)(cnt == 0 ? 0 : (a > 0 ? (a + half) / cnt : -((half - a) / cnt)));     \
            }                                                                                \
          }                                                                                  \
        }                                                                                    \
  }
IRC_POOL_INT(int8_t, INT8_MIN)
IRC_POOL_INT(uint8_t, 0)
IRC_POOL_INT(int16_t, INT16_MIN)
IRC_POOL_INT(int32_t, INT32_MIN)
