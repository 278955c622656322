"""The CPU target's results do not depend on how a kernel is split over threads.

A kernel splits its work into parts from the thread count (`irc_pool_parts`: at least 4
per thread, so 16 threads on a 16-core host cut finer than 2 on a laptop): depthwise convs
by rows and, when the rows are few, by ranges of channel groups; implicit-GEMM convs by
pixels or output-channel blocks; pools by rows; elementwise ops by vectors or by the outer
iterations of their generated loop nests; the int8 kernels (IRC_QDWV, the int16 IRC_QDW,
the int32 convs of conv_int.c without fusion) by rows or row tiles. Whatever the split,
every element must go through the same arithmetic (the same vector formula, the same order
of sums, the same epilogue), so one executable run on 1, 2, 3, 5 and 16 threads (more
threads than this host has cores: the pool starts that many workers all the same) must
give the same bits, with transcendental epilogues (tanh, sigmoid, exp, erf, gelu, silu,
hard-swish) and channel counts that are not multiples of any vector width, for the host's
best ISA profile, AVX2 and the portable C (`IRC_CPU_ISA`). Built as gcc builds for Sapphire
Rapids, which leaves some loops' multiply-adds unfused (`fma_chains_avoided`): there a
16-core host ran a 7x7x480 depthwise conv with tanh on 2 threads 1-3 ulp away from 1
thread, the channel split having moved border channels from the 4-vector block code to the
1-vector one.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from cpu_support import (
    RUNNABLE_ISAS,
    ArgumentCase,
    QConvCase,
    cases_executable,
    generated_source,
    load_with_isa,
    lower,
    needs_compiler,
)
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import delegate, nn
from irc.dtypes import element_type
from irc.targets.cpu import toolchain

pytestmark = [needs_compiler, pytest.mark.private_cache(unset=["IRC_CPU_FUSE_INT8"])]

THREADS = (1, 2, 3, 5, 16)

RNG = np.random.default_rng(20261127)


@dataclass
class FloatCase:
    """One float32 op (or chain) on an entry argument `x`; `make(x, *constants)` returns
    the ops, the last one's first result is the case's output."""

    id: str
    x: np.ndarray
    make: Callable[..., Operation | list[Operation]]
    constants: tuple[np.ndarray, ...] = ()

    @property
    def in_type(self) -> TensorType:
        return TensorType(element_type(self.x.dtype), list(self.x.shape))

    def build(self, ops: list[Operation], x: SSAValue) -> SSAValue:
        consts = [nn.ConstantOp.from_array(c) for c in self.constants]
        ops += consts
        made = self.make(x, *(c.output for c in consts))
        made = made if isinstance(made, list) else [made]
        ops += made
        return made[-1].results[0]


def uniform(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.uniform(-1.0, 1.0, size=shape) * scale).astype(np.float32)


def depthwise(case_id: str, shape: tuple[int, int, int, int], k: int, **props: object) -> FloatCase:
    c = shape[-1]
    w, b = uniform(c, k, k, 1, scale=0.5), uniform(c)
    return FloatCase(
        case_id,
        uniform(*shape),
        lambda x, wv, bv: nn.Conv2DOp.make(x, wv, bv, layout="NHWC", groups=c, **props),
        (w, b),
    )


def conv(
    case_id: str, shape: tuple[int, int, int, int], oc: int, k: int, **props: object
) -> FloatCase:
    w, b = uniform(oc, k, k, shape[-1], scale=0.2), uniform(oc)
    return FloatCase(
        case_id,
        uniform(*shape),
        lambda x, wv, bv: nn.Conv2DOp.make(x, wv, bv, layout="NHWC", **props),
        (w, b),
    )


def unary(case_id: str, make: Callable[[SSAValue], Operation]) -> FloatCase:
    # 61 x 67 x 37 elements: big enough to split (gelu / silu above 131072), no multiple of
    # any vector width
    return FloatCase(case_id, uniform(1, 61, 67, 37, scale=4.0), make)


FLOAT_CASES = [
    depthwise("split_dw_c480_tanh", (1, 7, 7, 480), 3, pads=[1, 1, 1, 1], activation="tanh"),
    depthwise("split_dw_c144_5x5_tanh", (1, 9, 9, 144), 5, pads=[2, 2, 2, 2], activation="tanh"),
    depthwise(
        "split_dw_c96_s2_relu6",
        (1, 28, 27, 96),
        3,
        strides=[2, 2],
        pads=[0, 0, 1, 1],
        activation="relu6",
    ),
    depthwise("split_dw_c40_tanh", (1, 20, 21, 40), 3, pads=[1, 1, 1, 1], activation="tanh"),
    conv("split_pointwise_oc40_tanh", (1, 7, 7, 96), 40, 1, activation="tanh"),
    FloatCase(
        "split_avg_pool_c40_tanh",
        uniform(1, 29, 30, 40, scale=3.0),
        lambda x: nn.AvgPool2DOp.make(
            x, kernel=[3, 3], pads=[1, 1, 1, 1], layout="NHWC", activation="tanh"
        ),
    ),
    FloatCase(
        "split_max_pool_c24",
        uniform(1, 56, 57, 24),
        lambda x: nn.MaxPool2DOp.make(x, kernel=[2, 2], strides=[2, 2], layout="NHWC"),
    ),
    unary("split_sigmoid", lambda x: nn.SigmoidOp.make(x)),
    unary("split_tanh", lambda x: nn.TanhOp.make(x)),
    unary("split_exp", lambda x: nn.ExpOp.make(x)),
    unary("split_erf", lambda x: nn.ErfOp.make(x)),
    unary("split_hard_swish", lambda x: nn.HardSwishOp.make(x)),
    unary("split_gelu", lambda x: nn.GeluOp.make(x)),
    unary("split_gelu_tanh", lambda x: nn.GeluOp.make(x, approximate="tanh")),
    unary("split_silu", lambda x: nn.SiluOp.make(x)),
    FloatCase("split_softmax", uniform(37, 999, scale=5.0), lambda x: nn.SoftmaxOp.make(x)),
]

INT8_CASES = [
    QConvCase(
        "split_qdw_c40",
        RNG,
        (1, 30, 29, 40),
        40,
        (3, 3),
        depthwise=True,
        pads=(1, 1, 1, 1),
        act="relu6",
    ),
    QConvCase(
        "split_qdw_c480", RNG, (1, 7, 7, 480), 480, (3, 3), depthwise=True, pads=(1, 1, 1, 1)
    ),
    QConvCase(
        "split_qdw_c72_s2",
        RNG,
        (1, 28, 27, 72),
        72,
        (3, 3),
        depthwise=True,
        strides=(2, 2),
        pads=(0, 0, 1, 1),
        dtype="uint8",
        zp_in=131,
        zp_out=120,
    ),
    # (63 + 2 * 490 + 1) columns of 64 bytes overflow IRC_QDWV's stack budget: IRC_QDW
    QConvCase(
        "split_qdw_int16_c40",
        RNG,
        (1, 64, 1100, 40),
        40,
        (1, 3),
        depthwise=True,
        dilations=(1, 490),
        zp_in=-3,
    ),
    QConvCase("split_qpointwise_oc40", RNG, (1, 14, 14, 48), 40),
    QConvCase("split_qconv_3x3_oc24", RNG, (1, 14, 13, 24), 24, (3, 3), pads=(1, 1, 1, 1)),
]

GEMM_IDS = frozenset(
    {
        "split_pointwise_oc40_tanh",
        "split_qpointwise_oc40",
        "split_qconv_3x3_oc24",
    }
)
KERNEL_CASES = [c for c in [*FLOAT_CASES, *INT8_CASES] if c.id not in GEMM_IDS]
"""Built for every profile in `VECTOR_ISAS`, the float ones for generic too (cheap to
compile)."""
GEMM_CASES = [c for c in [*FLOAT_CASES, *INT8_CASES] if c not in KERNEL_CASES]
"""The implicit-GEMM convs (slow to compile): built for the host's best profile only."""

VECTOR_ISAS = tuple(dict.fromkeys(n for n in (RUNNABLE_ISAS[0], "avx2") if n in RUNNABLE_ISAS))
"""The host's best profile and AVX2 where it runs (AVX-512 with and without VNNI share their
float kernels); the generic profile (portable C) runs the float kernel cases."""

AVOID_FMA = "--param=avoid-fma-max-bits="


@contextlib.contextmanager
def fma_chains_avoided() -> Iterator[None]:
    """Builds as gcc's tuning for Sapphire Rapids does (gcc 13 and later): no multiply-add of
    a loop-carried chain of vectors up to 512 bits contracted into an FMA, decided loop by
    loop (the toolchain turns that off with `--param=avoid-fma-max-bits=0`; this undoes it,
    so that a kernel whose split moves elements between two loops shows it on any host).
    Without that flag (a compiler without gcc's params) the build is the usual one."""
    chain = toolchain.probe().toolchain
    assert chain is not None
    if f"{AVOID_FMA}0" not in chain.flags:
        yield
        return
    flags = tuple(f"{AVOID_FMA}512" if f == f"{AVOID_FMA}0" else f for f in chain.flags)
    tuned = dataclasses.replace(chain, flags=flags)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(toolchain, "probe", lambda: toolchain.ProbeResult(tuned))
        yield


def runs_on_every_thread_count(
    executable: delegate.ExecutableOp, inputs: list[np.ndarray], isa_name: str
) -> list[list[np.ndarray]]:
    """The outputs of `executable` on each of `THREADS`, built for `isa_name`."""
    with fma_chains_avoided():
        loaded = load_with_isa(executable, isa_name)
    runs = []
    for threads in THREADS:
        loaded.set_threads(threads)
        assert loaded.threads == threads
        runs.append(loaded.execute("entry", inputs))
    return runs


def assert_same_bits(cases: Sequence[ArgumentCase], runs: list[list[np.ndarray]]) -> None:
    """Every thread count's outputs equal the 1-thread ones bit for bit (NaN as NaN)."""
    failures = []
    for threads, run in zip(THREADS[1:], runs[1:], strict=True):
        for case, one, other in zip(cases, runs[0], run, strict=True):
            assert one.dtype == other.dtype
            if not np.array_equal(one, other, equal_nan=True):
                failures.append(
                    f"{case.id}: {threads} threads differ from 1 in "
                    f"{int(np.sum(one != other))} of {one.size} elements"
                )
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def kernels() -> tuple[delegate.ExecutableOp, list[np.ndarray]]:
    module, executable, inputs = cases_executable("test_cpu_split_kernels", KERNEL_CASES)
    lower(module)
    return executable, inputs


@pytest.mark.parametrize("isa_name", VECTOR_ISAS)
def test_kernels_give_the_same_bits_on_every_thread_count(
    kernels: tuple[delegate.ExecutableOp, list[np.ndarray]], isa_name: str
) -> None:
    assert_same_bits(KERNEL_CASES, runs_on_every_thread_count(*kernels, isa_name))


def test_portable_float_kernels_give_the_same_bits_on_every_thread_count() -> None:
    cases = [c for c in KERNEL_CASES if isinstance(c, FloatCase)]
    module, executable, inputs = cases_executable("test_cpu_split_portable", cases)
    lower(module)
    assert_same_bits(cases, runs_on_every_thread_count(executable, inputs, "generic"))


def test_implicit_gemm_convs_give_the_same_bits_on_every_thread_count() -> None:
    module, executable, inputs = cases_executable("test_cpu_split_gemm", GEMM_CASES)
    lower(module)
    assert_same_bits(GEMM_CASES, runs_on_every_thread_count(executable, inputs, VECTOR_ISAS[0]))


UNFUSED_CASES = [
    QConvCase("split_unfused_qdw_c144", RNG, (1, 56, 57, 144), 144, (3, 3), depthwise=True,
              pads=(1, 1, 1, 1)),
    QConvCase("split_unfused_qpointwise_oc72", RNG, (1, 28, 29, 96), 72, act="relu6"),
]  # fmt: skip
"""Over IRC_PARALLEL_WORK (4M multiply-adds): the int32 kernels of conv_int.c split."""


def test_unfused_int8_convs_give_the_same_bits_on_every_thread_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_INT8", "0")
    module, executable, inputs = cases_executable("test_cpu_split_unfused", UNFUSED_CASES)
    lower(module)
    assert "irc_depthwise_i32(" in generated_source(executable)
    assert "irc_conv2d_i32(" in generated_source(executable)
    assert_same_bits(UNFUSED_CASES, runs_on_every_thread_count(executable, inputs, VECTOR_ISAS[0]))
