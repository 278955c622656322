/* irc CPU kernels: types, threads and activations every kernel uses. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#define IRC_INLINE static inline __attribute__((always_inline))
#define IRC_PARALLEL_WORK 4000000.0 /* multiply-adds below which an op stays on one thread */
#define IRC_PARALLEL_CONV_WORK 200000.0 /* the same for the float implicit-GEMM convs */
#if defined(_OPENMP)
#include <omp.h>
#define IRC_PRAGMA(x) _Pragma(#x)
#else
#define IRC_PRAGMA(x)
#endif
/* An OpenMP parallel loop on the library's thread count (irc_nthreads), with `clauses`. */
#define IRC_PARFOR(clauses) IRC_PRAGMA(omp parallel for num_threads(irc_nthreads()) clauses)

/* Threads of this library's parallel kernels (irc_parallel, pool.h; the `omp parallel`
   loops left in generated code name them too): irc_set_threads(n) from the runtime
   (IRC_CPU_THREADS, set_threads), n <= 0: the default, OpenMP's where the library uses it
   (OMP_NUM_THREADS, else the CPUs), else the CPUs this process may run on. */
#if !defined(IRC_GLUE) /* generated code asks its kernel library (api/pool.h) */
static int irc_threads_wanted = 0;
static int irc_default_threads_count = 0; /* computed once (pool.c), forgotten by n <= 0 */
void irc_set_threads(int n) {
  irc_threads_wanted = n;
  if (n <= 0) irc_default_threads_count = 0; /* asking for the default reads it again */
}
static int irc_default_threads(void);
static int irc_nthreads(void) {
  return irc_threads_wanted > 0 ? irc_threads_wanted : irc_default_threads();
}
int irc_get_threads(void) { return irc_nthreads(); }
#endif

enum { IRC_ACT_NONE = 0, IRC_ACT_RELU = 1, IRC_ACT_RELU6 = 2, IRC_ACT_RELU_N1_TO_1 = 3,
       IRC_ACT_TANH = 4 };
