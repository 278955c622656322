/* irc CPU kernels: types that the kernel library's entry points take (api/<part>.h). */

/* Where each operand of a batch (head) b lies: its matrix at element offset xo[b], rows
   xs apart (elements contiguous along a row); the keys' rows along k_t: with k_t, key n's
   d-th element at ko[b] + n * ks + d (keys [N][D]), else at ko[b] + d * ks + n ([D][N]).
   Strided offsets read a head out of a [S][heads][Dh] tensor in place (no transpose). */
typedef struct {
  const long *qo, *ko, *vo, *oo;
  long qs, ks, vs, os;
  int k_t;
} irc_att_layout;
