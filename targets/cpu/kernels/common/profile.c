/* irc CPU kernels: snippet "profile" (targets/cpu/csrc.py puts it in a translation unit). */
#include <time.h>
/* Monotonic clock in ns (kernel profiling, IRC_CPU_PROFILE=1). */
static double irc_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
