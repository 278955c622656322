/* irc CPU kernels: snippet "pool_int" (targets/cpu/csrc.py puts it in a translation unit). */
/* Integer NHWC max / average pooling on stored values, as the reference: max over the taps
   inside the input (`lowest` when none), average = window sum / count rounded half away
   from zero (count = KH * KW with include_pad, else the taps inside; 0 when none). */
#define IRC_POOL_INT(T)                                                                     \
  static void irc_pool2d_##T(int is_max, const T *restrict x, int N, int H, int W, int C,   \
                             T *restrict y, int OH, int OW, int KH, int KW, int SH, int SW, \
                             int DH, int DW, int PT, int PL, int include_pad,              \
                             int64_t lowest) {                                              \
    for (int n = 0; n < N; ++n)                                                             \
      for (int oh = 0; oh < OH; ++oh)                                                       \
        for (int ow = 0; ow < OW; ++ow) {                                                   \
          T *restrict o = y + (((long)n * OH + oh) * OW + ow) * C;                          \
          for (int c = 0; c < C; ++c) {                                                     \
            int64_t acc = is_max ? lowest : 0;                                              \
            long count = 0;                                                                 \
            for (int kh = 0; kh < KH; ++kh) {                                               \
              const int ih = oh * SH - PT + kh * DH;                                        \
              if (ih < 0 || ih >= H) continue;                                              \
              for (int kw = 0; kw < KW; ++kw) {                                             \
                const int iw = ow * SW - PL + kw * DW;                                      \
                if (iw < 0 || iw >= W) continue;                                            \
                const int64_t v = x[(((long)n * H + ih) * W + iw) * C + c];                 \
                if (is_max)                                                                 \
                  acc = v > acc ? v : acc;                                                  \
                else                                                                        \
                  acc += v;                                                                 \
                ++count;                                                                    \
              }                                                                             \
            }                                                                               \
            if (!is_max) {                                                                  \
              const int64_t cnt = include_pad ? (int64_t)KH * KW : count;                   \
              const int64_t half = cnt / 2;                                                 \
              acc = cnt == 0 ? 0 : (acc > 0 ? (acc + half) / cnt : -((half - acc) / cnt)); \
            }                                                                               \
            o[c] = (T)acc;                                                                  \
          }                                                                                 \
        }                                                                                   \
  }
IRC_POOL_INT(int8_t)
IRC_POOL_INT(uint8_t)
IRC_POOL_INT(int16_t)
IRC_POOL_INT(int32_t)
