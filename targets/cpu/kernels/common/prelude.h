/* irc CPU kernels: types, threads and activations every kernel uses. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#define IRC_INLINE static inline __attribute__((always_inline))
#define IRC_PARALLEL_WORK 4000000.0 /* multiply-adds below which an op stays on one thread */
#define IRC_PARALLEL_CONV_WORK 1000000.0 /* the same for the float implicit-GEMM convs */
#if defined(_OPENMP)
#include <omp.h>
#define IRC_PRAGMA(x) _Pragma(#x)
#else
#define IRC_PRAGMA(x)
#endif
/* An OpenMP parallel loop on the library's thread count (irc_nthreads), with `clauses`. */
#define IRC_PARFOR(clauses) IRC_PRAGMA(omp parallel for num_threads(irc_nthreads()) clauses)

/* Threads of this library's parallel loops (every `omp parallel` names them):
   irc_set_threads(n) from the runtime (IRC_CPU_THREADS), n <= 0: OpenMP's default. */
static int irc_threads_wanted = 0;
void irc_set_threads(int n) { irc_threads_wanted = n; }
static int irc_nthreads(void) {
#if defined(_OPENMP)
  return irc_threads_wanted > 0 ? irc_threads_wanted : omp_get_max_threads();
#else
  return 1;
#endif
}
int irc_get_threads(void) { return irc_nthreads(); }

typedef float irc_v16 __attribute__((vector_size(64)));
typedef float irc_v16u __attribute__((vector_size(64), aligned(4)));

enum { IRC_ACT_NONE = 0, IRC_ACT_RELU = 1, IRC_ACT_RELU6 = 2, IRC_ACT_RELU_N1_TO_1 = 3,
       IRC_ACT_TANH = 4 };

typedef int irc_v16i __attribute__((vector_size(64)));

/* m ? a : b lane by lane (m: all-ones / all-zeros lanes of a vector comparison). */
IRC_INLINE irc_v16 irc_v16_select(irc_v16i m, irc_v16 a, irc_v16 b) {
  return (irc_v16)(((irc_v16i)a & m) | ((irc_v16i)b & ~m));
}

/* irc_act on 16 lanes for the codes other than tanh (NaN passes through like irc_act). */
IRC_INLINE irc_v16 irc_v16_act(irc_v16 v, int act) {
  const irc_v16 zero = {0.0f};
  switch (act) {
    case IRC_ACT_RELU: return irc_v16_select(v < zero, zero, v);
    case IRC_ACT_RELU6:
      v = irc_v16_select(v < zero, zero, v);
      return irc_v16_select(v > zero + 6.0f, zero + 6.0f, v);
    case IRC_ACT_RELU_N1_TO_1:
      v = irc_v16_select(v < zero - 1.0f, zero - 1.0f, v);
      return irc_v16_select(v > zero + 1.0f, zero + 1.0f, v);
    default: return v;
  }
}
