/* irc CPU kernels: what code running on the thread pool (pool.c: irc_parallel) needs:
   the task type and how a generated loop nest is split into parts. */
#include <stdint.h>

typedef void (*irc_task_fn)(const void *ctx, long i);

/* Work per part of a generated loop nest run on the pool (targets/cpu/outline.py):
   elements (~1-2 us of one core for an elementwise op or a copy) or multiply-adds. */
#define IRC_LOOP_PART_WORK 8192.0

/* Ranges ("parts") of a kernel's `tasks` that the threads take one at a time: about one per
   `part_work` multiply-adds of the op's `work`, at least 4 per thread (a thread that the OS
   delays, or a part heavier than the others, then costs little), at most
   IRC_POOL_MAX_PARTS, at most one per task; 1 on one thread. */
#define IRC_POOL_MAX_PARTS 256
static long irc_pool_parts(long tasks, double work, double part_work, int threads) {
  if (threads <= 1 || tasks <= 1) return 1;
  double n = work / part_work;
  if (n < 4.0 * threads) n = 4.0 * threads;
  if (n > IRC_POOL_MAX_PARTS) n = IRC_POOL_MAX_PARTS;
  return tasks < (long)n ? tasks : (long)n;
}

/* The tasks [*lo, *hi) of part `part` of `parts` (contiguous, sizes differing by one). */
IRC_INLINE void irc_pool_range(long part, long parts, long tasks, long *lo, long *hi) {
  *lo = part * tasks / parts;
  *hi = (part + 1) * tasks / parts;
}
