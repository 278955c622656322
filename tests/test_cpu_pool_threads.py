"""The CPU target's pools, pads, resizes and pool-run loop nests on 1 and 2 threads, every ISA.

Pools run in channel vectors (IRC_VL lanes and a partial last vector: C = 5, 16, 28, 42,
70, 1280 cover a tail only, whole vectors only and both) and split their output rows over
the threads from ~32k window taps x channels; NaN inputs (a NaN wins the max), padding,
count_include_pad, dilation and the fused activations (tanh in scalar code). Pads are the
`irc_pad` kernel (output rows split over the threads; zero or other fill values, the
channel padding of BlazeFace's residual branches, int8 and int32 storage, ranks 1 to 4)
or, for other ranks, loop nests. Resizes split their output rows; loop nests that a
lowering marks parallel (elementwise, concat, integer ops, transposed convolutions) run as
tasks of the same pool (`outline`). One executable holds all cases; it runs on 1 and 2 threads
and, on 2 threads, with every other ISA profile this host runs whose C differs
(`isas_with_distinct_code`: avx512 is the C of avx512vnni here): 1 and 2 threads agree bit
for bit (a split never changes a value), and so do the ISAs on pools (the same operations
per lane on any vector width) and copies; max pools, pads, nearest resizes and copies
equal the reference exactly, arithmetic within float tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import (
    Case,
    build_executable,
    generated_source,
    isas_with_distinct_code,
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
    reference_outputs,
)

from irc.dialects import nn
from irc.targets.cpu.runtime import CpuRuntime

RTOL, ATOL = 1e-4, 1e-5

pytestmark = [needs_compiler, pytest.mark.private_cache]

_RNG = np.random.default_rng(20261126)


def rand(*shape: int) -> np.ndarray:
    return _RNG.uniform(-3.0, 3.0, size=shape).astype(np.float32)


def with_nans(array: np.ndarray, count: int) -> np.ndarray:
    flat = array.reshape(-1)
    flat[_RNG.choice(flat.size, size=count, replace=False)] = np.nan
    return array


def pool(case_id: str, op_type: type[nn.NNOp], x: np.ndarray, **props: object) -> Case:
    props.setdefault("layout", "NHWC")
    return op_case(case_id, op_type, [x], **props)


def pad(case_id: str, x: np.ndarray, pads: list[int], value: float = 0.0) -> Case:
    return op_case(case_id, nn.PadOp, [x], pads=pads, value=value)


POOL_CASES = [
    pool(
        "max_2x2_s2_c28_split", nn.MaxPool2DOp, rand(1, 64, 64, 28), kernel=[2, 2], strides=[2, 2]
    ),
    pool(
        "max_3x3_s2_c42_nan_split",
        nn.MaxPool2DOp,
        with_nans(rand(1, 33, 31, 42), 40),
        kernel=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
    ),
    pool(
        "max_dilated_c5_relu",
        nn.MaxPool2DOp,
        rand(2, 10, 11, 5),
        kernel=[2, 3],
        dilations=[2, 2],
        activation="relu",
    ),
    pool(
        "avg_3x3_c70_incl_tanh_split",
        nn.AvgPool2DOp,
        rand(1, 20, 20, 70),
        kernel=[3, 3],
        pads=[1, 1, 1, 1],
        count_include_pad=True,
        activation="tanh",
    ),
    pool(
        "avg_3x3_c16_relu6_split",
        nn.AvgPool2DOp,
        rand(1, 40, 40, 16),
        kernel=[3, 3],
        pads=[1, 1, 1, 1],
        activation="relu6",
    ),
    pool("avg_global_c1280", nn.AvgPool2DOp, rand(1, 7, 7, 1280), kernel=[7, 7]),
]

PAD_CASES = [
    pad("pad_channels_c24_to_28_split", rand(1, 64, 64, 24), [0, 0, 0, 0, 0, 0, 0, 4]),
    pad("pad_channels_small", rand(1, 16, 16, 42), [0, 0, 0, 0, 0, 0, 0, 6]),
    pad("pad_channels_both_sides", rand(1, 8, 9, 20), [0, 0, 1, 0, 0, 2, 3, 2]),
    pad("pad_channels_wide", rand(1, 4, 5, 3), [0, 0, 0, 0, 0, 0, 0, 40]),
    pad("pad_spatial_split", rand(1, 130, 127, 3), [0, 0, 1, 2, 2, 1, 0, 0]),
    pad("pad_all_dims_value", rand(2, 5, 6, 7), [1, 0, 2, 1, 0, 3, 2, 1], value=-1.5),
    pad("pad_rank2", rand(9, 13), [1, 2, 3, 0]),
    pad("pad_rank1_value", rand(17), [3, 5], value=2.0),
    pad(
        "pad_int8",
        _RNG.integers(-128, 128, size=(1, 9, 8, 5)).astype(np.int8),
        [0, 0, 1, 1, 1, 1, 0, 0],
        value=-3,
    ),
    pad(
        "pad_int32_channels",
        _RNG.integers(-1000, 1000, size=(1, 6, 7, 9)).astype(np.int32),
        [0, 0, 0, 0, 1, 0, 0, 7],
    ),
    pad("pad_rank5_loops", rand(2, 3, 4, 5, 6), [0, 0, 1, 0, 0, 1, 1, 1, 0, 2]),
]

RESIZE_CASES = [
    op_case(
        "resize_nearest_2x_split",
        nn.ResizeOp,
        [rand(2, 20, 21, 24)],
        size=[40, 42],
        layout="NHWC",
    ),
    op_case(
        "resize_bilinear_split",
        nn.ResizeOp,
        [rand(1, 17, 23, 19)],
        size=[50, 41],
        mode="bilinear",
        layout="NHWC",
    ),
]

# Loop nests marked parallel run as tasks of the pool (targets/cpu/outline.py): an
# elementwise op, a concat of rows, an integer op, a transposed convolution's rows.
LOOP_CASES = [
    op_case("loop_add_split", nn.AddOp, [rand(1, 64, 64, 24), rand(1, 64, 64, 24)]),
    op_case("loop_sigmoid_split", nn.SigmoidOp, [rand(1, 1, 200, 200)]),
    op_case(
        "loop_concat_split",
        nn.ConcatOp,
        [[rand(1, 64, 64, 24), rand(1, 64, 64, 8)]],
        axis=3,
    ),
    op_case(
        "loop_int32_maximum_split",
        nn.MaximumOp,
        [
            _RNG.integers(-9, 9, size=(4, 100, 100)).astype(np.int32),
            _RNG.integers(-9, 9, size=(4, 100, 100)).astype(np.int32),
        ],
    ),
    op_case(
        "loop_conv_transpose_split",
        nn.Conv2DTransposeOp,
        [rand(1, 40, 40, 32), rand(16, 2, 2, 32), None],
        [1],
        strides=[2, 2],
        layout="NHWC",
    ),
]

CASES = POOL_CASES + PAD_CASES + RESIZE_CASES + LOOP_CASES


@pytest.fixture(scope="module")
def results() -> tuple[tuple[str, ...], dict[str, list[tuple[np.ndarray, ...]]]]:
    """(the other ISAs run, case id -> per output (1 thread, 2 threads, each other ISA on 2
    threads, reference)): the other ISAs are those this host runs whose C differs from the
    native build's and from each other's (`isas_with_distinct_code`)."""
    module, executable, built = build_executable(CASES, name="test_cpu_pool_threads")
    expected = [reference_outputs(b) for b in built]
    lower(module)
    loaded = CpuRuntime().load(executable)
    args = [a for b in built for a in b.args]
    runs = []
    for threads in (1, 2):
        loaded.set_threads(threads)
        runs.append(list(loaded.execute("entry", args)))
    others = isas_with_distinct_code(executable)[1:]
    for name in others:
        other = load_with_isa(executable, name)
        other.set_threads(2)
        runs.append(list(other.execute("entry", args)))
    out = {}
    at = 0
    for b, exp in zip(built, expected, strict=True):
        count = len(b.outputs)
        mine = [run[at : at + count] for run in runs]
        out[b.case.id] = list(zip(*mine, exp, strict=True))
        at += count
    return others, out


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_pools_and_pads_on_threads_and_isas(results, case_id: str) -> None:
    exact = case_id.startswith(("max", "pad", "resize_nearest", "loop_concat", "loop_int32"))
    same_on_every_isa = exact or case_id.startswith("avg")  # the same operations per lane
    others, outputs = results
    for one, two, *isas, expected in outputs[case_id]:
        assert one.shape == expected.shape
        assert one.dtype == expected.dtype
        if exact:
            np.testing.assert_array_equal(one, expected)
        else:
            np.testing.assert_allclose(one, expected, rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(one, two)  # a split never changes a value
        for name, other in zip(others, isas, strict=True):
            if same_on_every_isa:
                np.testing.assert_array_equal(one, other, err_msg=name)
            else:
                np.testing.assert_allclose(other, expected, rtol=RTOL, atol=ATOL, err_msg=name)


def test_marked_loops_run_as_pool_tasks() -> None:
    """The loop cases' nests are outlined into tasks of the pool: no OpenMP loop is left
    in the generated functions, one task per case (the float add, sigmoid, concat, integer
    maximum and the transposed convolution's rows)."""
    module, executable, _ = build_executable(LOOP_CASES, name="test_cpu_pool_loops")
    lower(module)
    source = generated_source(executable)
    entry = source[source.index("} irc_fn_0_loops;") :]
    assert "IRC_PARFOR(" not in entry
    assert entry.count("irc_parallel(irc_fn_0_loop") == len(LOOP_CASES)
