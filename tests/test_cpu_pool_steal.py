"""The CPU kernels' thread pool (kernels/common/pool.c) on its own, through a small C library.

`irc_parallel` deals a job's indices in contiguous ranges, one per thread, and a thread that
has run its own range takes what is left of the others' from their backs. Checked here: every
index runs exactly once, for totals below, at and above the thread count, on 1, 2, 3 and 16
threads and over many jobs in a row (stale workers of an earlier job must not take an index
of the next); a worker stalled inside an index holds back only that index (the caller takes
the rest of the worker's range) and the caller waits for it asleep, not spinning; a nested
call runs serially.
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

import numpy as np
import pytest
from cpu_support import needs_compiler

from irc.targets.cpu import csrc, toolchain

pytestmark = [needs_compiler, pytest.mark.private_cache]

SOURCE = r"""
#include <stdint.h>
#include <time.h>
static __thread int irc_test_is_caller;
static _Atomic int irc_test_counts[4096];
static _Atomic long irc_test_by_caller;
static _Atomic int irc_test_stalls;
static long irc_test_stall_ms;

static void irc_test_count(const void *ctx, long i) {
  (void)ctx;
  atomic_fetch_add(&irc_test_counts[i], 1);
  if (irc_test_is_caller) {
    atomic_fetch_add(&irc_test_by_caller, 1);
    if (irc_test_stall_ms > 0) { /* 0.2 ms asleep: the worker wakes meanwhile */
      struct timespec t = {0, 200000L};
      nanosleep(&t, NULL);
    }
  } else if (irc_test_stall_ms > 0 && atomic_fetch_add(&irc_test_stalls, 1) == 0) {
    struct timespec t = {irc_test_stall_ms / 1000, (irc_test_stall_ms % 1000) * 1000000L};
    nanosleep(&t, NULL); /* the first index a worker runs stalls it */
  }
}

static void irc_test_nested(const void *ctx, long i) {
  (void)ctx;
  irc_parallel(irc_test_count, NULL, 3, irc_nthreads()); /* the pool is busy: serial */
  atomic_fetch_add(&irc_test_counts[1000 + i], 1);
}

/* `jobs` jobs of `total` indices on `threads` threads, in one run; counts into `out`. */
long irc_test_cover(long total, int threads, long jobs, long stall_ms, int nested, int *out) {
  for (int i = 0; i < 4096; ++i) atomic_store(&irc_test_counts[i], 0);
  atomic_store(&irc_test_by_caller, 0);
  atomic_store(&irc_test_stalls, 0);
  irc_test_stall_ms = stall_ms;
  irc_test_is_caller = 1;
  irc_set_threads(threads);
  irc_pool_run_begin();
  for (long j = 0; j < jobs; ++j)
    irc_parallel(nested ? irc_test_nested : irc_test_count, NULL, total, threads);
  irc_pool_run_end();
  for (int i = 0; i < 4096; ++i) out[i] = atomic_load(&irc_test_counts[i]);
  return atomic_load(&irc_test_by_caller);
}
"""


@pytest.fixture(scope="module")
def pool() -> ctypes.CDLL:
    chain = toolchain.probe().toolchain
    assert chain is not None
    text = "\n".join(
        [
            csrc.kernel_file("common/prelude.h"),
            csrc.kernel_file("common/pool.h"),
            csrc.kernel_file("common/pool.c"),
            SOURCE,
        ]
    )
    library = ctypes.CDLL(str(toolchain.build(text, chain).path))
    library.irc_test_cover.restype = ctypes.c_long
    library.irc_test_cover.argtypes = [
        ctypes.c_long,
        ctypes.c_int,
        ctypes.c_long,
        ctypes.c_long,
        ctypes.c_int,
        ctypes.c_void_p,
    ]
    return library


def cover(
    pool: ctypes.CDLL, total: int, threads: int, jobs: int, stall_ms: int = 0, nested: int = 0
) -> tuple[np.ndarray, int]:
    counts = np.zeros(4096, np.int32)
    by_caller = pool.irc_test_cover(total, threads, jobs, stall_ms, nested, counts.ctypes.data)
    return counts, by_caller


@pytest.mark.parametrize("threads", [1, 2, 3, 16])
@pytest.mark.parametrize("total", [1, 2, 3, 17, 64, 255, 4000])
def test_every_index_once_per_job(pool: ctypes.CDLL, threads: int, total: int) -> None:
    jobs = 200 if total < 1000 else 5
    counts, by_caller = cover(pool, total, threads, jobs)
    np.testing.assert_array_equal(counts[:total], jobs)
    assert not counts[total:].any()
    if threads == 1 or total == 1:
        assert by_caller == total * jobs  # no worker takes part


def test_a_stalled_worker_holds_back_one_index_and_the_caller_sleeps(pool: ctypes.CDLL) -> None:
    cover(pool, 64, 2, 20)  # the worker exists and is warm
    total, stall_ms = 200, 300
    wall, cpu = time.perf_counter(), time.process_time()
    counts, by_caller = cover(pool, total, 2, 1, stall_ms=stall_ms)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    np.testing.assert_array_equal(counts[:total], 1)
    # The worker ran at most the index it stalled in (none if the OS never ran it within
    # the caller's 40 ms): the caller took every other one, its own range and the rest of
    # the worker's.
    assert by_caller >= total - 1
    if by_caller == total - 1:  # the worker did stall: the caller waited ~260 ms asleep
        assert wall >= stall_ms / 1000 * 0.9
        assert cpu < 0.1 * wall, (cpu, wall)  # spinning (or sched_yield) would take ~all


def test_a_nested_call_runs_serially(pool: ctypes.CDLL) -> None:
    counts, _ = cover(pool, 16, 2, 10, nested=1)
    assert counts[0] == counts[1] == counts[2] == 16 * 10
    np.testing.assert_array_equal(counts[1000:1016], 10)


def _links_openmp(path: str) -> bool:
    data = Path(path).read_bytes()
    # libgomp or LLVM's libomp among the needed libraries, or their entry points
    return any(name in data for name in (b"libgomp", b"libomp", b"GOMP_", b"__kmpc_", b"omp_get_"))


def test_only_a_source_with_an_openmp_loop_links_openmp(pool: ctypes.CDLL) -> None:
    """Every kernel runs on the pool: a library links OpenMP only for a loop still generated
    as an OpenMP loop (an `IRC_PARFOR(` line), never for the prelude's definition of it."""
    chain = toolchain.probe().toolchain
    assert chain is not None
    common = "".join(
        csrc.kernel_file(f"common/{name}") for name in ("prelude.h", "pool.h", "pool.c")
    )
    assert not toolchain.uses_openmp(common)
    assert "-fopenmp" not in toolchain.for_source(chain, common).flags
    assert not _links_openmp(pool._name)  # the library of the tests above
    loop = "void irc_loop(float *x) {\n  IRC_PARFOR(schedule(static))\n"
    loop += "  for (long i = 0; i < 64; ++i) x[i] += 1.0f;\n}\n"
    assert toolchain.uses_openmp(common + loop)
    if not chain.openmp:
        pytest.skip("the compiler has no OpenMP")
    assert toolchain.for_source(chain, common + loop) == chain
    assert _links_openmp(str(toolchain.build(common + loop, chain).path))


_RESIZE_WRAPPER = r"""
void t_resize(int kind, int threads, const void *x, long N, long H, long W, long C, void *y,
              long OH, long OW, const int32_t *hl, const int32_t *hh, const void *hw,
              const int32_t *wl, const int32_t *wh, const void *ww) {
  irc_set_threads(threads);
  if (kind == 0)
    irc_resize_nearest_q(x, N, H, W, C, y, OH, OW, hl, wl);
  else if (kind == 1)
    irc_resize_bilinear_s8(x, N, H, W, C, y, OH, OW, hl, hh, hw, wl, wh, ww);
  else
    irc_resize_bilinear_u8(x, N, H, W, C, y, OH, OW, hl, hh, hw, wl, wh, ww);
}
"""


def test_quantized_resizes_split_over_the_pool_with_the_same_bits() -> None:
    """The quantized resizes (quant_kernels.py) split their output rows over the pool, no
    OpenMP: big enough to split (IRC_PARALLEL_WORK), the same bytes on 1, 2, 3, 16 threads."""
    chain = toolchain.probe().toolchain
    assert chain is not None
    source = csrc.source_for({"resize_q"}) + _RESIZE_WRAPPER
    assert not toolchain.uses_openmp(source)
    library = ctypes.CDLL(str(toolchain.build(source, chain).path))
    rng = np.random.default_rng(11)
    n, h, w, c, oh, ow = 2, 40, 36, 32, 300, 260  # work: 5 M (nearest) .. 40 M (u8 bilinear)
    x = rng.integers(0, 256, size=(n, h, w, c)).astype(np.uint8)
    hl = rng.integers(0, h, oh).astype(np.int32)
    hh = np.minimum(hl + 1, h - 1).astype(np.int32)
    wl = rng.integers(0, w, ow).astype(np.int32)
    wh = np.minimum(wl + 1, w - 1).astype(np.int32)
    weights = {
        1: (rng.integers(0, 1025, oh).astype(np.int32), rng.integers(0, 1025, ow).astype(np.int32)),
        2: (rng.random(oh).astype(np.float32), rng.random(ow).astype(np.float32)),
    }
    for kind in (0, 1, 2):
        outs = []
        for threads in (1, 2, 3, 16):
            y = np.zeros((n, oh, ow, c), np.uint8)
            hw, ww = weights.get(kind, (hl, wl))
            library.t_resize(
                ctypes.c_int(kind),
                ctypes.c_int(threads),
                ctypes.c_void_p(x.ctypes.data),
                *(ctypes.c_long(v) for v in (n, h, w, c)),
                ctypes.c_void_p(y.ctypes.data),
                ctypes.c_long(oh),
                ctypes.c_long(ow),
                *(ctypes.c_void_p(a.ctypes.data) for a in (hl, hh, hw, wl, wh, ww)),
            )
            outs.append(y)
        assert outs[0].any()
        for other in outs[1:]:
            np.testing.assert_array_equal(other, outs[0])


def test_counters_describe_the_jobs(pool: ctypes.CDLL) -> None:
    """irc_pool_counters (benchmarks/cpu_thread_scaling.py): jobs split over threads, their
    indices, those run by workers, the caller's wait, the workers' joins; read and reset."""
    counts = (ctypes.c_long * 6)()
    pool.irc_pool_counters(counts)  # reset
    cover(pool, 64, 1, 10)  # one thread: nothing split
    pool.irc_pool_counters(counts)
    assert list(counts) == [0] * 6
    cover(pool, 64, 2, 50)
    pool.irc_pool_counters(counts)
    jobs, indices, by_workers, wait_ns, joined, join_ns = list(counts)
    assert (jobs, indices) == (50, 50 * 64)
    assert 0 <= by_workers <= indices
    assert wait_ns >= 0
    assert joined <= jobs
    assert (joined > 0) == (by_workers > 0)
    assert join_ns >= 0
    pool.irc_pool_counters(counts)
    assert list(counts) == [0] * 6
