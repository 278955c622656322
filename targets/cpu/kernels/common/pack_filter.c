/* irc CPU kernels: snippet "pack_filter" (targets/cpu/csrc.py puts it in a translation unit). */
/* OHWI filter [G*OCg][KH][KW][Cg] -> [G][ceil(OCg/NB)][KH][KW][Cg][NB], zero-padded channels
   (the layout irc_conv2d reads; targets/cpu/packing.py packs constant filters the same way). */
static void irc_pack_filter(float *restrict dst, const float *restrict src, int G, int OCg,
                            int KH, int KW, int Cg, int NB) {
  const int nblk = (OCg + NB - 1) / NB;
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < nblk; ++b)
      for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw)
          for (int c = 0; c < Cg; ++c)
            for (int j = 0; j < NB; ++j) {
              const int oc = b * NB + j;
              *dst++ = oc < OCg
                  ? src[((((size_t)g * OCg + oc) * KH + kh) * KW + kw) * Cg + c] : 0.0f;
            }
}
