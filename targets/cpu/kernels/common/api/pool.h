/* irc CPU kernels: the kernel library core's entry points: the thread pool (pool.c) and the
   thread count (prelude.h), one of each per library core (targets/cpu/library.py). */
IRC_KERNEL(void, parallel, (irc_task_fn fn, const void *ctx, long total, int threads))
IRC_KERNEL(int, nthreads, (void))
IRC_KERNEL(void, pool_run_begin, (void))
IRC_KERNEL(void, pool_run_end, (void))
