/* irc CPU kernels: the thread pool of the parallel kernels (irc_parallel), float and int8.

   irc_parallel(fn, ctx, total, threads) runs fn(ctx, i) for i = 0 .. total - 1 on up to
   `threads` threads: the indices are dealt in contiguous ranges, one per thread (the caller
   and the pool's workers); each takes its own indices one at a time from the front of its
   range, then takes what is left of the others' ranges from their backs. So whoever runs
   does the work, and the caller waits only for the indices that a worker has taken and not
   finished. A worker that the OS has not scheduled (a shared, loaded machine) therefore
   never holds the caller back: the caller takes every index itself. An OpenMP loop instead
   waits at its closing barrier for every thread of the team to arrive, and a thread bound
   to a busy core can take a whole scheduler time slice to do so; with ~50 parallel loops
   in a CNN's run that made two threads slower than one on a loaded machine. Which thread
   runs an index never changes what it computes: the kernels' indices (parts) depend on
   the thread count only through irc_pool_parts, and their values on nothing of it
   (tests/test_cpu_split_determinism.py).

   Workers are created on the first parallel call (named "irc-pool"). Inside a run
   (between the generated entry function's irc_pool_run_begin and irc_pool_run_end) a worker
   spins for up to IRC_POOL_RUN_SPIN_NS after each job, so the next parallel kernel of the
   run, after the serial kernels between them, starts without a wake-up call; then it
   sleeps on a futex. When no run is in progress (the last one ended, or a kernel called
   from outside an entry) it sleeps at once: no thread keeps spinning after a run. A call
   that finds the pool busy (another thread of the process inside a kernel of this library,
   or a nested call) runs serially.
   Each library has its own pool (its own statics); a child process forked while workers
   existed starts a new pool on its first parallel call (pthread_atfork). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#define IRC_POOL_THREADS 1
#else
#define IRC_POOL_THREADS 0
#endif

#define IRC_POOL_MAX_WORKERS 63
/* A worker's spin after a job, inside a run, before it sleeps: long enough to bridge the
   serial kernels between two parallel ones (pads, concats, small elementwise ops: tens of
   microseconds), short enough that a spinning worker does not lose the scheduler's favour
   on a loaded machine (on the 2-vCPU Xeon at load 6-8, MobileNetV2 int8 at 2 threads /
   TFLite at 2 threads: 0.9-1.4 with 0-100 us, 1.3-1.8 with 1 ms; at load 4, irc with
   100 us / irc with 20 us at 2 threads, same process: MobileNetV2 fp32 1.11-1.14x). */
#ifndef IRC_POOL_RUN_SPIN_NS
#define IRC_POOL_RUN_SPIN_NS 20000
#endif
/* A worker's spin after irc_pool_run_begin woke it, until the run's first job: the serial
   kernels before a run's first parallel one (input quantization, pads) can outlast
   IRC_POOL_RUN_SPIN_NS, and a worker back asleep then costs that job a second wake-up
   (tens of microseconds before the worker runs). The spin ends with the run in any case. */
#ifndef IRC_POOL_FIRST_SPIN_NS
#define IRC_POOL_FIRST_SPIN_NS 200000
#endif

/* The caller's spin for indices that workers took and have not finished, before it sleeps
   on the futex `done` until they have: a worker preempted while it holds an index then
   does not keep this core spinning (the scheduler may move the worker onto it). */
#ifndef IRC_POOL_WAIT_SPIN_NS
#define IRC_POOL_WAIT_SPIN_NS 50000
#endif

static struct {
  /* The job word and the completion count on cache lines of their own. */
  _Alignas(64) _Atomic uint64_t job;  /* generation << 32 | total << 16 | slots */
  _Alignas(64) _Atomic uint32_t done; /* indices of the current generation finished (futex) */
  _Atomic int caller_sleeps;          /* the caller waits for `done` on the futex */
  _Alignas(64) _Atomic uint32_t wake; /* futex word: bumped for each job */
  _Atomic int sleepers;     /* workers blocked on `wake` */
  _Atomic int busy;         /* a caller owns the pool */
  _Atomic int running;      /* entry-function runs in progress (irc_pool_run_begin/end) */
  _Atomic int first;        /* a run woke the workers and has not started a job yet */
  irc_task_fn fn;
  const void *ctx;
  long start_ns; /* when the current job was published (irc_pool_ns) */
  int workers;
  pthread_mutex_t start;
} irc_pool = {.start = PTHREAD_MUTEX_INITIALIZER};

/* The indices of a job, dealt in contiguous ranges, one per thread that may take part (slot
   0 the caller's, slot k worker k - 1's), each on a cache line of its own: generation << 32
   | next << 16 | end. A thread takes its own indices from the front, then those left in the
   other ranges from the back (one compare-and-swap each: the generation makes a stale
   thread's swap fail). So a claim normally touches a line only its own core uses (one
   shared claim word moved between the cores on every index: ~0.2-0.3 us each, ~1000
   indices per MobileNetV2 run), and a thread that the OS does not run still holds none
   of its indices back. */
static struct {
  _Alignas(64) _Atomic uint64_t range;
} irc_pool_slots[IRC_POOL_MAX_WORKERS + 1];

/* What the pool did since irc_pool_counters last read them (benchmarks/cpu_thread_scaling.py):
   jobs split over threads, their indices, the indices workers ran, the ns the caller waited
   for workers' indices after its own work, the jobs workers joined (summed over workers),
   and the ns from a job's start to each joining worker's first index. A few clock reads
   and one atomic add per thread and job. */
enum { IRC_POOL_JOBS, IRC_POOL_INDICES, IRC_POOL_BY_WORKERS, IRC_POOL_WAIT_NS, IRC_POOL_JOINED,
       IRC_POOL_JOIN_NS, IRC_POOL_COUNTERS };
static _Alignas(64) _Atomic long irc_pool_counts[IRC_POOL_COUNTERS];
void irc_pool_counters(long *out) {
  for (int k = 0; k < IRC_POOL_COUNTERS; ++k) out[k] = atomic_exchange(&irc_pool_counts[k], 0);
}

IRC_INLINE void irc_pool_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static long irc_pool_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000000000L + t.tv_nsec;
}

#if IRC_POOL_THREADS
static void irc_pool_wake_caller(void) {
  syscall(SYS_futex, &irc_pool.done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#else
static void irc_pool_wake_caller(void) {}
#endif

/* An index of slot `slot`'s range in generation `gen` (its front, or its back for a thief)
   into *index; 0 when none is left. */
IRC_INLINE int irc_pool_take(int slot, uint32_t gen, int back, long *index) {
  _Atomic uint64_t *range = &irc_pool_slots[slot].range;
  uint64_t w = atomic_load_explicit(range, memory_order_acquire);
  for (;;) {
    const uint32_t lo = (uint32_t)(w >> 16) & 0xffff, hi = (uint32_t)w & 0xffff;
    if ((uint32_t)(w >> 32) != gen || lo >= hi) return 0;
    const uint64_t taken = back ? w - 1 : w + ((uint64_t)1 << 16);
    if (atomic_compare_exchange_weak_explicit(range, &w, taken, memory_order_acq_rel,
                                              memory_order_acquire)) {
      *index = back ? (long)hi - 1 : (long)lo;
      return 1;
    }
  }
}

/* Run the indices of the job whose word is `job` as slot `self`: its own range, then what
   is left of the others; then count them done (one atomic add per thread and job). */
static void irc_pool_work(uint64_t job, int self) {
  const uint32_t gen = (uint32_t)(job >> 32), total = (uint32_t)(job >> 16) & 0xffff;
  const int slots = (int)(job & 0xffff);
  uint32_t count = 0;
  long i, first_ns = 0;
  for (int k = 0; k < slots; ++k) {
    const int victim = (self + k) % slots; /* its own range first, from the front */
    while (irc_pool_take(victim, gen, k > 0, &i)) {
      if (self && !count) first_ns = irc_pool_ns();
      irc_pool.fn(irc_pool.ctx, i);
      ++count;
    }
  }
  if (!count) return;
  if (self) {
    atomic_fetch_add_explicit(&irc_pool_counts[IRC_POOL_BY_WORKERS], count, memory_order_relaxed);
    atomic_fetch_add_explicit(&irc_pool_counts[IRC_POOL_JOINED], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&irc_pool_counts[IRC_POOL_JOIN_NS], first_ns - irc_pool.start_ns,
                              memory_order_relaxed);
  }
  if (atomic_fetch_add(&irc_pool.done, count) + count == total &&
      atomic_load(&irc_pool.caller_sleeps))
    irc_pool_wake_caller();
}

#if IRC_POOL_THREADS
static void *irc_pool_worker(void *arg) {
  const int id = (int)(intptr_t)arg;
  prctl(PR_SET_NAME, "irc-pool", 0, 0, 0); /* top -H, /proc/<pid>/task/<tid>/comm */
  uint32_t seen = atomic_load_explicit(&irc_pool.wake, memory_order_acquire);
  for (;;) {
    uint32_t now = atomic_load_explicit(&irc_pool.wake, memory_order_acquire);
    if (now == seen) {
      const long until =
          irc_pool_ns() + (atomic_load_explicit(&irc_pool.first, memory_order_relaxed)
                               ? IRC_POOL_FIRST_SPIN_NS
                               : IRC_POOL_RUN_SPIN_NS);
      for (int spins = 0; now == seen; ++spins) {
        irc_pool_relax();
        /* Sleep once no run is in progress, or after the spin inside one. */
        if (atomic_load_explicit(&irc_pool.running, memory_order_relaxed) <= 0 ||
            ((spins & 255) == 255 && irc_pool_ns() > until)) {
          atomic_fetch_add(&irc_pool.sleepers, 1);
          syscall(SYS_futex, &irc_pool.wake, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
          atomic_fetch_sub(&irc_pool.sleepers, 1);
          break;
        }
        now = atomic_load_explicit(&irc_pool.wake, memory_order_acquire);
      }
      now = atomic_load_explicit(&irc_pool.wake, memory_order_acquire);
      if (now == seen) continue;
    }
    seen = now;
    const uint64_t job = atomic_load_explicit(&irc_pool.job, memory_order_acquire);
    if (id + 1 < (int)(job & 0xffff)) irc_pool_work(job, id + 1);
  }
  return NULL;
}
#endif

/* The library's default thread count: OpenMP's where it is linked (OMP_NUM_THREADS, else the
   CPUs), else the same without it: the leading number of OMP_NUM_THREADS (irc-run --threads
   sets it), else the CPUs this process may run on (its affinity mask); computed once, and
   again after irc_set_threads(n <= 0) (one library serves every model of its profile in a
   process: a model loaded later with another OMP_NUM_THREADS asks for the default anew). */
extern char *getenv(const char *name);
static int irc_default_threads(void) {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  int count = irc_default_threads_count;
  if (count > 0) return count;
  int n = 0;
  for (const char *env = getenv("OMP_NUM_THREADS"); env && *env >= '0' && *env <= '9'; ++env)
    n = n < 100000 ? n * 10 + (*env - '0') : n;
  if (n > 0) return irc_default_threads_count = n;
  n = 1;
#if IRC_POOL_THREADS
  unsigned long mask[16] = {0};
  const long bytes = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
  if (bytes > 0) {
    n = 0;
    for (long i = 0; i < bytes / (long)sizeof mask[0]; ++i) n += __builtin_popcountl(mask[i]);
  }
  if (n < 1) n = 1;
#endif
  irc_default_threads_count = n;
  return n;
#endif
}

#if IRC_POOL_THREADS
/* In a forked child only the forking thread exists: forget the parent's workers (the next
   parallel call starts new ones) and a job another parent thread was running. */
static void irc_pool_after_fork(void) {
  irc_pool.workers = 0;
  atomic_store(&irc_pool.sleepers, 0);
  atomic_store(&irc_pool.busy, 0);
  atomic_store(&irc_pool.running, 0);
  atomic_store(&irc_pool.first, 0);
  pthread_mutex_init(&irc_pool.start, NULL);
}
static pthread_once_t irc_pool_fork_once = PTHREAD_ONCE_INIT;
static void irc_pool_register_fork(void) {
  pthread_atfork(NULL, NULL, irc_pool_after_fork);
}
#endif

/* A run of a generated entry function starts / ends: workers spin between the run's jobs
   (IRC_POOL_RUN_SPIN_NS) only while some run is in progress, and sleep when none is. A run
   on more than one thread wakes the sleeping workers as it starts: they come up while the
   caller runs its first kernel, and spin for the run's first parallel one (otherwise the
   first job of every run waits for a wake-up, and the OS may place the woken worker on
   the caller's busy core). */
IRC_INLINE void irc_pool_run_begin(void) {
  atomic_fetch_add_explicit(&irc_pool.running, 1, memory_order_relaxed);
#if IRC_POOL_THREADS
  if (irc_pool.workers > 0 && atomic_load_explicit(&irc_pool.sleepers, memory_order_relaxed) > 0 &&
      irc_nthreads() > 1 && atomic_load_explicit(&irc_pool.busy, memory_order_relaxed) == 0) {
    atomic_store_explicit(&irc_pool.first, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&irc_pool.wake, 1, memory_order_release);
    syscall(SYS_futex, &irc_pool.wake, FUTEX_WAKE_PRIVATE, irc_nthreads() - 1, NULL, NULL, 0);
  }
#endif
}
IRC_INLINE void irc_pool_run_end(void) {
  atomic_store_explicit(&irc_pool.first, 0, memory_order_relaxed);
  atomic_fetch_sub_explicit(&irc_pool.running, 1, memory_order_relaxed);
}

/* fn(ctx, i) for i in [0, total) (total < 65536) on up to `threads` threads. */
static void irc_parallel(irc_task_fn fn, const void *ctx, long total, int threads) {
  int zero = 0;
  if (threads <= 1 || total <= 1 || !IRC_POOL_THREADS ||
      !atomic_compare_exchange_strong(&irc_pool.busy, &zero, 1)) {
    for (long i = 0; i < total; ++i) fn(ctx, i);
    return;
  }
  const int want = threads - 1 < IRC_POOL_MAX_WORKERS ? threads - 1 : IRC_POOL_MAX_WORKERS;
#if IRC_POOL_THREADS
  if (irc_pool.workers < want) {
    pthread_once(&irc_pool_fork_once, irc_pool_register_fork);
    pthread_mutex_lock(&irc_pool.start);
    while (irc_pool.workers < want) {
      pthread_t thread;
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      pthread_attr_setstacksize(&attr, 8 << 20);
      const int failed =
          pthread_create(&thread, &attr, irc_pool_worker, (void *)(intptr_t)irc_pool.workers);
      pthread_attr_destroy(&attr);
      if (failed) break;
      ++irc_pool.workers;
    }
    pthread_mutex_unlock(&irc_pool.start);
  }
#endif
  atomic_store_explicit(&irc_pool.first, 0, memory_order_relaxed);
  irc_pool.fn = fn;
  irc_pool.ctx = ctx;
  irc_pool.start_ns = irc_pool_ns();
  atomic_store_explicit(&irc_pool.done, 0, memory_order_relaxed);
  const uint64_t gen = (atomic_load_explicit(&irc_pool.job, memory_order_relaxed) >> 32) + 1;
  const uint64_t g = (gen & 0xffffffffu) << 32;
  const int slots = (irc_pool.workers < want ? irc_pool.workers : want) + 1;
  for (int k = 0; k < slots; ++k) {
    const uint64_t lo = (uint64_t)(k * total / slots), hi = (uint64_t)((k + 1) * total / slots);
    atomic_store_explicit(&irc_pool_slots[k].range, g | lo << 16 | hi, memory_order_relaxed);
  }
  const uint64_t w = g | (uint64_t)total << 16 | (uint64_t)slots;
  atomic_store_explicit(&irc_pool.job, w, memory_order_release);
  atomic_fetch_add_explicit(&irc_pool.wake, 1, memory_order_release);
#if IRC_POOL_THREADS
  if (atomic_load(&irc_pool.sleepers) > 0)
    syscall(SYS_futex, &irc_pool.wake, FUTEX_WAKE_PRIVATE, IRC_POOL_MAX_WORKERS, NULL, NULL, 0);
#endif
  irc_pool_work(w, 0);
  const long worked = irc_pool_ns();
  /* Indices a worker claimed and has not finished: spin briefly (one part, normally), then
     sleep until the last one finishes. A worker that the OS preempted while it held an
     index then gets this core (an idle core pulls it), instead of waiting for the other
     core's next time slice while this one spins or yields. */
  const long until = worked + IRC_POOL_WAIT_SPIN_NS;
  for (int spins = 0; atomic_load_explicit(&irc_pool.done, memory_order_acquire) < total;
       ++spins) {
    irc_pool_relax();
#if IRC_POOL_THREADS
    if ((spins & 63) == 63 && irc_pool_ns() > until) {
      atomic_store(&irc_pool.caller_sleeps, 1);
      uint32_t d;
      while ((d = atomic_load(&irc_pool.done)) < (uint32_t)total)
        syscall(SYS_futex, &irc_pool.done, FUTEX_WAIT_PRIVATE, d, NULL, NULL, 0);
      atomic_store(&irc_pool.caller_sleeps, 0);
      break;
    }
#endif
  }
  atomic_fetch_add_explicit(&irc_pool_counts[IRC_POOL_JOBS], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&irc_pool_counts[IRC_POOL_INDICES], total, memory_order_relaxed);
  atomic_fetch_add_explicit(&irc_pool_counts[IRC_POOL_WAIT_NS], irc_pool_ns() - worked,
                            memory_order_relaxed);
  atomic_store_explicit(&irc_pool.busy, 0, memory_order_release);
}
