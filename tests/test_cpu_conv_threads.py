"""The CPU target's float convolutions at the edges of their vector and thread paths.

Depthwise convolutions with channel counts that are not multiples of 16 (1, 3, 17, 24, 28,
36, 42, 72, 130: the last 16-channel block overlaps its neighbour, fewer than 16 channels
take the per-pixel path, border pixels run 64 channels at a time), strides, pads,
dilations, fused activations, a channel multiplier; and ops big enough to be split over two
threads: depthwise rows (and channel ranges when the rows are few), implicit-GEMM pixel
chunks (an unpadded pointwise conv's pixels as one row, a batch's too; row tails in a half
tile and single pixels) and, for small images and fully connected layers, output-channel
block ranges; residual epilogues (a relu after the add
fused, tanh in scalar code). One executable holds all cases; it runs with 1 and with 2
threads, both checked against the reference kernels (rtol 1e-4 / atol 1e-5), and the two
runs and one on 16 threads (a 16-core host's split) must agree bit for bit (a split never
changes the order of a sum, nor the code that computes an element); built for every
other ISA profile this host runs (`IRC_CPU_ISA`: AVX2's 6 x 16 tiles on 8-lane vectors, the
generic profile's portable C) it is checked once more on 2 threads. The last of those builds
(or, on a host with one profile, a second build of it) is made without OpenMP (the kernels
split over the library's own pool either way): it must give the same bits on 1 and 2
threads, and those of the OpenMP build where the ISA is the same (one build fewer than a
separate library without OpenMP: the family's C is compiled 3 times, not 4).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from cpu_support import (
    RUNNABLE_ISAS,
    Case,
    build_executable,
    execute_cases,
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
    reference_outputs,
)

from irc.dialects import cpu, delegate, nn
from irc.targets.cpu import toolchain
from irc.targets.cpu.runtime import CpuRuntime, LoadedCpuExecutable

RTOL, ATOL = 1e-4, 1e-5

pytestmark = [needs_compiler, pytest.mark.private_cache]

_RNG = np.random.default_rng(20261122)


def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return _RNG.uniform(low, high, size=shape).astype(np.float32)


def conv(
    case_id: str,
    x: tuple[int, ...],
    w: tuple[int, ...],
    *,
    bias: bool = True,
    const_filter: bool = True,
    **props: object,
) -> Case:
    props.setdefault("layout", "NHWC")
    arrays = [rand(*x), rand(*w, low=-0.5, high=0.5), rand(w[0]) if bias else None]
    return op_case(case_id, nn.Conv2DOp, arrays, [1] if const_filter else [], **props)


def depthwise(case_id: str, c: int, hw: tuple[int, int], k: int = 3, **props: object) -> Case:
    return conv(case_id, (1, *hw, c), (c, k, k, 1), groups=c, **props)


def _residual_pointwise(x, r, w, b):
    """A 1x1 conv over 32x36 pixels to 40 channels (a partial second vector) with relu6,
    then + r with relu: both epilogues in registers, big enough to be split."""
    conv_op = nn.Conv2DOp.make(x, w, b, layout="NHWC", activation="relu6")
    return [conv_op, nn.AddOp.make(conv_op.output, r, activation="relu")]


def _residual_tanh(x, r, w):
    """tanh as the conv's activation: the epilogue and the residual add run in scalar code."""
    conv_op = nn.Conv2DOp.make(x, w, None, layout="NHWC", activation="tanh")
    return [conv_op, nn.AddOp.make(conv_op.output, r)]


def _residual_relu(x, r, w, b):
    """conv -> add (no activation) -> relu: the relu joins the residual fusion (relu as the
    add's activation, in registers)."""
    conv_op = nn.Conv2DOp.make(x, w, b, pads=[1, 1, 1, 1], layout="NHWC")
    add = nn.AddOp.make(r, conv_op.output)
    return [conv_op, add, nn.ReluOp.make(add.output)]


TAIL_CASES = [
    depthwise("dw_c1", 1, (9, 8), pads=[1, 1, 1, 1]),
    depthwise("dw_c3_s2", 3, (10, 9), strides=[2, 2], pads=[1, 1, 1, 1], activation="relu"),
    depthwise("dw_c8_wide_s2", 8, (6, 41), strides=[2, 2], pads=[0, 1, 1, 1], activation="relu"),
    depthwise("dw_c5_wide_5x5", 5, (5, 30), k=5, pads=[2, 2, 2, 2], dilations=[1, 2]),
    depthwise("dw_c17", 17, (7, 11), pads=[1, 1, 1, 1], activation="relu6"),
    depthwise("dw_c24_s2_asym", 24, (12, 13), strides=[2, 2], pads=[0, 0, 1, 1]),
    depthwise("dw_c28_dil2", 28, (11, 12), dilations=[2, 2], pads=[2, 2, 2, 2]),
    depthwise("dw_c36_5x5_tanh", 36, (9, 10), k=5, pads=[2, 2, 2, 2], activation="tanh"),
    depthwise("dw_c42_n1_to_1", 42, (6, 19), activation="relu_n1_to_1", bias=False),
    depthwise("dw_c24_wide_pads", 24, (3, 4), k=3, pads=[3, 4, 3, 4], strides=[1, 2]),
    depthwise("dw_c17_runtime", 17, (5, 9), pads=[1, 1, 1, 1], const_filter=False),
    depthwise("dw_c72_borders", 72, (5, 7), pads=[1, 1, 1, 1], activation="relu6"),
    depthwise("dw_c130_5x5_s2", 130, (7, 6), k=5, strides=[2, 2], pads=[2, 2, 2, 2], bias=False),
    conv("dw_multiplier2_c17", (1, 6, 7, 17), (34, 3, 3, 1), groups=17, pads=[1, 1, 1, 1]),
]

SPLIT_CASES = [
    depthwise("split_dw_c28", 28, (40, 40), pads=[1, 1, 1, 1], activation="relu6"),
    depthwise("split_dw_c42_5x5_s2", 42, (33, 31), k=5, strides=[2, 2], pads=[1, 2, 2, 1]),
    depthwise("split_dw_channels_c480_tanh", 480, (7, 7), pads=[1, 1, 1, 1], activation="tanh"),
    conv("split_pointwise_7x7", (1, 7, 7, 96), (400, 1, 1, 96), activation="relu6"),
    conv("split_pointwise_batch2", (2, 7, 9, 64), (80, 1, 1, 64)),
    conv("split_3x3_w14", (1, 14, 14, 32), (48, 3, 3, 32), pads=[1, 1, 1, 1]),
    conv("split_3x3_oc40", (1, 20, 20, 24), (40, 3, 3, 24), pads=[1, 1, 1, 1]),
    conv("split_grouped", (1, 9, 9, 64), (96, 3, 3, 32), groups=2, pads=[1, 1, 1, 1]),
    op_case(
        "split_fully_connected",
        nn.FullyConnectedOp,
        [rand(2, 700), rand(808, 700, low=-0.1, high=0.1), rand(808)],
        [1],
    ),
    Case(
        "split_residual_pointwise",
        _residual_pointwise,
        [rand(1, 32, 36, 32), rand(1, 32, 36, 40, low=-4, high=4), rand(40, 1, 1, 32), rand(40)],
        frozenset({2, 3}),
    ),
    Case(
        "residual_relu",
        _residual_relu,
        [rand(1, 9, 10, 12), rand(1, 9, 10, 20, low=-2, high=2), rand(20, 3, 3, 12), rand(20)],
        frozenset({2, 3}),
    ),
    Case(
        "residual_tanh",
        _residual_tanh,
        [rand(1, 5, 6, 8), rand(1, 5, 6, 20), rand(20, 1, 1, 8)],
        frozenset({2}),
    ),
]

CASES = TAIL_CASES + SPLIT_CASES

Results = dict[str, list[tuple[np.ndarray, ...]]]
"""case id -> (1-thread output, 2-thread output, 16-thread output, the outputs of the library
built without OpenMP (`PLAIN_ISA`) on 1 and 2 threads, then each other runnable ISA's output
on 2 threads (`OTHER_ISAS`), reference) per output."""

_OTHERS = tuple(name for name in ("avx2", "generic") if name in RUNNABLE_ISAS[1:])
"""The float kernels differ in vector width only (AVX-512 with or without VNNI: the same)."""

PLAIN_ISA = _OTHERS[-1] if _OTHERS else None
"""The profile of the build without OpenMP: the last other profile, None for the host's own
(then its bits must equal the OpenMP build's)."""

OTHER_ISAS = _OTHERS[:-1]
"""The other profiles built with OpenMP."""


def load_without_openmp(
    executable: delegate.ExecutableOp, isa_name: str | None = None
) -> LoadedCpuExecutable:
    """The executable built without `-fopenmp` (a compiler without OpenMP) for the ISA
    profile `isa_name` (None: the host's): its kernels still split over the library's own
    pool."""
    chain = toolchain.probe().toolchain
    assert chain is not None
    plain = toolchain.Toolchain(
        chain.compiler, chain.version, tuple(f for f in chain.flags if f != "-fopenmp")
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(toolchain, "probe", lambda: toolchain.ProbeResult(plain))
        if isa_name is not None:
            return load_with_isa(executable, isa_name)
        return CpuRuntime().load(executable)


@pytest.fixture(scope="module")
def results() -> Results:
    module, executable, built = build_executable(CASES, name="test_cpu_conv_threads", per_case=True)
    expected = [reference_outputs(b) for b in built]
    lower(module)
    loaded = CpuRuntime().load(executable)
    runs = []
    for threads in (1, 2, 16):
        loaded.set_threads(threads)
        assert loaded.threads == threads
        runs.append(execute_cases(loaded, built))
    plain = load_without_openmp(executable, PLAIN_ISA)
    for threads in (1, 2):
        plain.set_threads(threads)
        runs.append(execute_cases(plain, built))
    for name in OTHER_ISAS:
        other = load_with_isa(executable, name)
        other.set_threads(2)
        runs.append(execute_cases(other, built))
    out: Results = {}
    at = 0
    for b, exp in zip(built, expected, strict=True):
        count = len(b.outputs)
        mine = [run[at : at + count] for run in runs]
        out[b.case.id] = list(zip(*mine, exp, strict=True))
        at += count
    return out


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_conv_against_reference_on_1_and_2_threads(results: Results, case_id: str) -> None:
    for one, two, sixteen, plain_one, plain_two, *others, expected in results[case_id]:
        assert one.shape == expected.shape
        assert one.dtype == np.float32
        np.testing.assert_allclose(one, expected, rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(one, two)
        np.testing.assert_array_equal(one, sixteen)
        np.testing.assert_array_equal(plain_one, plain_two)
        if PLAIN_ISA is None:
            np.testing.assert_array_equal(one, plain_two)
        else:
            message = f"{PLAIN_ISA} without OpenMP"
            np.testing.assert_allclose(plain_two, expected, rtol=RTOL, atol=ATOL, err_msg=message)
        for name, other in zip(OTHER_ISAS, others, strict=True):
            np.testing.assert_allclose(other, expected, rtol=RTOL, atol=ATOL, err_msg=name)


def test_relu_after_a_residual_add_runs_in_the_conv_epilogue() -> None:
    relu_case = next(c for c in SPLIT_CASES if c.id == "residual_relu")
    module, executable, _ = build_executable([relu_case], name="test_cpu_residual_relu")
    lower(module)
    (source,) = [op.source.data for op in executable.walk() if isinstance(op, cpu.CModuleOp)]
    assert "/* nn.add" not in source
    assert "/* nn.relu" not in source
    call = source[source.rindex("irc_conv2d(") :].split(";")[0]  # the generated call
    assert not call.endswith(", NULL, 0)")  # the conv carries the residual


def test_without_openmp_the_default_thread_count_follows_omp_num_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A library built without OpenMP reads OMP_NUM_THREADS itself (`irc-run --threads`
    sets it) for its default thread count; set_threads overrides it."""
    case = next(c for c in SPLIT_CASES if c.id == "split_3x3_oc40")
    module, executable, _ = build_executable([case], name="test_cpu_threads_no_openmp")
    lower(module)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("IRC_CPU_THREADS", raising=False)
    plain = load_without_openmp(executable)
    plain.set_threads(0)  # the default
    assert plain.threads == 3
    plain.set_threads(2)
    assert plain.threads == 2


def _thread_cpu_ticks() -> dict[int, int]:
    """This process's threads -> user + system CPU time so far, in clock ticks."""
    ticks = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        ticks[int(task.name)] = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks


def _thread_name(tid: int) -> str:
    try:
        return (Path("/proc/self/task") / str(tid) / "comm").read_text().strip()
    except OSError:  # the thread ended
        return ""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_no_pool_worker_burns_cpu_after_a_run() -> None:
    """Workers spin between the kernels of a run only: once the entry function returned,
    every thread of the pool sleeps (the issue's rule: no busy-waiting thread left after a
    run to steal the cores of whatever the process runs next)."""
    case = next(c for c in SPLIT_CASES if c.id == "split_3x3_oc40")
    module, executable, built = build_executable([case], name="test_cpu_pool_sleeps")
    lower(module)
    loaded = load_without_openmp(executable)  # only the pool's threads
    loaded.set_threads(2)
    for _ in range(20):
        loaded.execute("entry", list(built[0].args))
    # the pool's workers (started by this run, or earlier by its kernel library's)
    workers = {t for t in _thread_cpu_ticks() if _thread_name(t) == "irc-pool"}
    assert workers, "the run started no pool worker"
    time.sleep(0.05)
    start = _thread_cpu_ticks()
    time.sleep(0.5)
    end = _thread_cpu_ticks()
    burnt = {t: end[t] - start[t] for t in workers if t in start and t in end}
    tick = os.sysconf("SC_CLK_TCK")
    # A spinning worker would show ~0.5 s of CPU (fewer ticks when the machine is loaded);
    # a sleeping one none (one tick of rounding allowed).
    assert all(ticks <= max(1, tick // 100) for ticks in burnt.values()), burnt
