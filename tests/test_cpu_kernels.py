"""CPU target kernels against the reference kernels, family by family.

The families (convolution, fully connected, elementwise, pooling, reductions, softmax, data
movement, small graphs) are one executable holding all of their cases, lowered with
`lower-cpu` and compiled once; each case is then checked against
`irc.targets.reference.kernel_for` with rtol 1e-4 / atol 1e-5 (float sums reassociate).
Shapes are chosen to hit the kernels' edges: odd sizes, register-tile and channel-block
tails, strides, dilations, asymmetric pads, grouped and depthwise convolutions,
broadcasting, weights as constants (packed at compile time) and as arguments (packed at run
time), NCHW ops (wrapped in transposes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from cpu_support import (
    Case,
    Results,
    build_executable,
    lower,
    needs_compiler,
    op_case,
    run_family,
)

from irc.dialects import nn

RTOL, ATOL = 1e-4, 1e-5

pytestmark = [needs_compiler, pytest.mark.private_cache]

_RNG = np.random.default_rng(20250601)


def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return _RNG.uniform(low, high, size=shape).astype(np.float32)


def check(results: Results, case_id: str) -> None:
    actual, expected = results[case_id]
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)


def ids(cases: Sequence[Case]) -> list[str]:
    return [c.id for c in cases]


# ---- Convolution --------------------------------------------------------------------------------


def conv(
    case_id: str,
    x: tuple[int, ...],
    w: tuple[int, ...],
    *,
    bias: bool = True,
    const_filter: bool = True,
    **props: object,
) -> Case:
    layout = props.setdefault("layout", "NHWC")
    oc = w[0]
    arrays = [rand(*x), rand(*w, low=-0.5, high=0.5), rand(oc) if bias else None]
    constants = [1] if const_filter else []
    del layout
    return op_case(case_id, nn.Conv2DOp, arrays, constants, **props)


CONV_CASES = [
    conv("pointwise_oc24", (1, 5, 7, 8), (24, 1, 1, 8)),
    conv("pointwise_oc16_runtime_filter", (2, 3, 5, 12), (16, 1, 1, 12), const_filter=False),
    conv("pointwise_oc40_relu", (1, 6, 6, 16), (40, 1, 1, 16), activation="relu"),
    conv("pointwise_stride2", (1, 9, 8, 6), (10, 1, 1, 6), strides=[2, 2]),
    conv("3x3_pad1_relu6", (2, 9, 11, 3), (16, 3, 3, 3), pads=[1, 1, 1, 1], activation="relu6"),
    conv("3x3_stride2_asym", (1, 10, 9, 5), (7, 3, 3, 5), strides=[2, 2], pads=[0, 0, 1, 1]),
    conv("3x3_dilation2", (1, 12, 12, 4), (8, 3, 3, 4), dilations=[2, 2], pads=[2, 2, 2, 2]),
    conv(
        "5x3_mixed",
        (1, 14, 13, 6),
        (9, 5, 3, 6),
        strides=[2, 1],
        dilations=[1, 2],
        pads=[2, 1, 1, 2],
        activation="tanh",
    ),
    conv("3x3_runtime_filter_nobias", (1, 7, 9, 8), (33, 3, 3, 8), bias=False, const_filter=False),
    conv("tiles_and_tails", (1, 13, 21, 32), (48, 3, 3, 32), pads=[1, 1, 1, 1]),
    conv("long_rows", (1, 2, 75, 8), (20, 1, 3, 8), pads=[0, 1, 0, 1]),
    conv("clip_n1_to_1", (1, 4, 4, 4), (4, 2, 2, 4), activation="relu_n1_to_1"),
    conv("grouped2", (1, 6, 6, 8), (12, 3, 3, 4), groups=2, pads=[1, 1, 1, 1]),
    conv("grouped4_runtime", (1, 5, 5, 8), (8, 1, 1, 2), groups=4, const_filter=False),
    conv("depthwise_3x3", (1, 9, 9, 16), (16, 3, 3, 1), groups=16, pads=[1, 1, 1, 1]),
    conv(
        "depthwise_s2_asym_relu6",
        (2, 10, 11, 24),
        (24, 3, 3, 1),
        groups=24,
        strides=[2, 2],
        pads=[0, 0, 1, 1],
        activation="relu6",
    ),
    conv("depthwise_dilated_odd_c", (1, 11, 10, 7), (7, 3, 3, 1), groups=7, dilations=[2, 2]),
    conv(
        "depthwise_runtime_filter",
        (1, 6, 7, 5),
        (5, 5, 5, 1),
        groups=5,
        pads=[2, 2, 2, 2],
        const_filter=False,
    ),
    conv("depthwise_multiplier2", (1, 6, 6, 4), (8, 3, 3, 1), groups=4, pads=[1, 1, 1, 1]),
    # 3x3 stride 1 rows of several full pixel tiles (irc_dw_tile3: input columns shared by
    # the taps), channels a multiple of the vector and not, padded and not.
    conv(
        "depthwise_3x3_rows",
        (1, 7, 21, 40),
        (40, 3, 3, 1),
        groups=40,
        pads=[1, 1, 1, 1],
        activation="relu6",
    ),
    conv("depthwise_3x3_rows_valid", (2, 5, 19, 32), (32, 3, 3, 1), groups=32, bias=False),
    conv("nchw_const", (1, 3, 8, 9), (5, 3, 3, 3), layout="NCHW", pads=[1, 1, 1, 1]),
    conv("nchw_runtime", (2, 4, 6, 5), (6, 4, 3, 3), layout="NCHW", const_filter=False),
    conv("nchw_depthwise", (1, 6, 7, 7), (6, 1, 3, 3), layout="NCHW", groups=6, pads=[1, 1, 1, 1]),
    conv(
        "nchw_depthwise_runtime",
        (1, 4, 5, 5),
        (4, 1, 3, 3),
        layout="NCHW",
        groups=4,
        const_filter=False,
    ),
]


def _conv_sweep(count: int, seed: int) -> list[Case]:
    """Random valid conv2d configurations: any groups (1, depthwise, in between), kernel,
    stride, dilation and padding (also wider than the kernel, so that whole windows fall in
    the padding), odd channel counts around the 16/32-channel blocks."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    while len(cases) < count:
        n = int(rng.integers(1, 3))
        h, w = (int(v) for v in rng.integers(1, 13, size=2))
        c = int(rng.choice([1, 2, 3, 5, 8, 16, 17, 24, 33]))
        kind = rng.choice(["dense", "depthwise", "grouped"])
        divisors = [g for g in range(2, c + 1) if c % g == 0]
        groups = {"dense": 1, "depthwise": c, "grouped": int(rng.choice(divisors or [1]))}[kind]
        oc = c if kind == "depthwise" else groups * int(rng.integers(1, 41 if groups == 1 else 6))
        kh, kw = (int(v) for v in rng.integers(1, 6, size=2))
        strides = [int(v) for v in rng.integers(1, 4, size=2)]
        dilations = [int(v) for v in rng.integers(1, 4, size=2)]
        pads = [int(v) for v in rng.integers(0, 5, size=4)]
        if h + pads[0] + pads[2] < dilations[0] * (kh - 1) + 1:
            continue
        if w + pads[1] + pads[3] < dilations[1] * (kw - 1) + 1:
            continue
        case = conv(
            f"sweep{seed}_{len(cases)}_{kind}",
            (n, h, w, c),
            (oc, kh, kw, c // groups),
            bias=bool(rng.integers(0, 2)),
            const_filter=bool(rng.integers(0, 2)),
            groups=groups,
            strides=strides,
            dilations=dilations,
            pads=pads,
            activation=str(rng.choice(["none", "relu", "relu6", "tanh"])),
        )
        cases.append(case)
    return cases


CONV_SWEEP = _conv_sweep(40, 1)


@pytest.mark.parametrize("case_id", ids(CONV_SWEEP))
def test_conv2d_sweep(family_results: Results, case_id: str) -> None:
    check(family_results, case_id)


@pytest.mark.parametrize("case_id", ids(CONV_CASES))
def test_conv2d(family_results: Results, case_id: str) -> None:
    check(family_results, case_id)


# ---- Fully connected ----------------------------------------------------------------------------


def fc(
    case_id: str,
    x: tuple[int, ...],
    n: int,
    *,
    bias: bool = True,
    const: bool = True,
    **props: object,
) -> Case:
    arrays = [rand(*x), rand(n, x[-1], low=-0.3, high=0.3), rand(n) if bias else None]
    return op_case(case_id, nn.FullyConnectedOp, arrays, [1] if const else [], **props)


FC_CASES = [
    fc("classifier_relu", (1, 64), 10, activation="relu"),
    fc("batch7_runtime_nobias", (7, 33), 40, bias=False, const=False),
    fc("leading_dims", (2, 3, 16), 5),
    fc("k100_n17", (1, 100), 17, activation="relu6"),
    fc("m20_n64", (20, 48), 64),
    op_case(
        "zero_bias_const",
        nn.FullyConnectedOp,
        [rand(3, 8), rand(4, 8), np.zeros(4, np.float32)],
        [1, 2],
        activation="relu",
    ),
]


_BMM = nn.BatchMatmulOp
BATCH_MATMUL_CASES = [
    op_case("bmm", _BMM, [rand(2, 3, 4), rand(2, 4, 5)]),
    op_case("bmm_adj_x", _BMM, [rand(2, 4, 3), rand(2, 4, 5)], adj_x=True),
    op_case("bmm_adj_y", _BMM, [rand(2, 3, 4), rand(2, 5, 4)], adj_y=True),
    op_case("bmm_adj_xy", _BMM, [rand(3, 7, 2), rand(3, 6, 7)], adj_x=True, adj_y=True),
    op_case("bmm_bcast", _BMM, [rand(2, 1, 3, 8), rand(4, 8, 5)]),
    op_case("bmm_bcast_lhs", _BMM, [rand(1, 6, 9), rand(3, 2, 9, 4)]),
    op_case("bmm_rank2", _BMM, [rand(5, 33), rand(33, 6)]),
    op_case("bmm_const_rhs", _BMM, [rand(1, 200), rand(200, 2)], [1]),  # ppocr's classifier
    op_case("bmm_empty_k", _BMM, [rand(2, 3, 0), rand(2, 0, 4)]),
    op_case("bmm_threads", _BMM, [rand(4, 96, 128), rand(4, 128, 160)]),
]
"""Broadcast batches, both transposes, rank 2, constant weights, K = 0 (zeros), and one big
enough to split across threads."""


@pytest.mark.parametrize("case_id", ids(BATCH_MATMUL_CASES))
def test_batch_matmul(family_results: Results, case_id: str) -> None:
    check(family_results, case_id)


@pytest.mark.parametrize("case_id", ids(FC_CASES))
def test_fully_connected(family_results: Results, case_id: str) -> None:
    check(family_results, case_id)


# ---- Elementwise --------------------------------------------------------------------------------

_NAN_INPUT = rand(2, 3, 4)
_NAN_INPUT[0, 1, 2] = np.nan
_NAN_INPUT[1, 2, 0] = np.nan


def binary(
    case_id: str,
    op_type: type[nn.NNOp],
    a: np.ndarray,
    b: np.ndarray,
    const_b: bool = False,
    **props: object,
) -> Case:
    return op_case(case_id, op_type, [a, b], [1] if const_b else [], **props)


BINARY_CASES = [
    binary("add_same", nn.AddOp, rand(2, 3, 4), rand(2, 3, 4)),
    binary("add_channel_bias_const", nn.AddOp, rand(1, 8, 8, 16), rand(16), const_b=True),
    binary(
        "add_relu6",
        nn.AddOp,
        rand(3, 5, low=-8, high=8),
        rand(3, 5, low=-8, high=8),
        activation="relu6",
    ),
    binary("sub_outer", nn.SubOp, rand(2, 1, 3), rand(2, 4, 1)),
    binary("mul_both_broadcast", nn.MulOp, rand(4, 1, 5), rand(1, 3, 1), activation="relu"),
    binary("mul_scalar", nn.MulOp, rand(3, 7), np.array(1.5, dtype=np.float32), const_b=True),
    binary(
        "div_rank0", nn.DivOp, np.array(3.0, dtype=np.float32), np.array(-2.0, dtype=np.float32)
    ),
    binary(
        "div_lhs_broadcast", nn.DivOp, rand(5), rand(2, 5, low=0.5, high=2.0), activation="tanh"
    ),
    binary("maximum_nan", nn.MaximumOp, _NAN_INPUT, rand(3, 4)),
    binary("minimum_nan", nn.MinimumOp, rand(4), _NAN_INPUT),
    binary("pow", nn.PowOp, rand(2, 6, low=0.1, high=3.0), rand(6, low=-2, high=2)),
    binary("squared_difference", nn.SquaredDifferenceOp, rand(3, 4), rand(1, 4)),
    binary("prelu_channel", nn.PReluOp, rand(1, 4, 4, 3), rand(3, low=0, high=0.5), const_b=True),
    binary("add_size_one_dims", nn.AddOp, rand(1, 1, 6, 1), rand(1, 1, 1, 1)),
    binary("sub_splat_const", nn.SubOp, rand(2, 3, 4), np.full((2, 3, 4), 0.75, np.float32), True),
]


def unary(
    case_id: str, op_type: type[nn.NNOp], x: np.ndarray | None = None, **props: object
) -> Case:
    return op_case(case_id, op_type, [rand(3, 5, 7, low=-8, high=8) if x is None else x], **props)


_POSITIVE = rand(4, 9, low=0.01, high=10.0)

UNARY_CASES = [
    unary("relu", nn.ReluOp, _NAN_INPUT),
    unary("relu6", nn.Relu6Op),
    unary("clip_both", nn.ClipOp, min=-1.5, max=2.25),
    unary("clip_min", nn.ClipOp, min=0.5),
    unary("clip_max", nn.ClipOp, max=-0.5),
    unary("sigmoid", nn.SigmoidOp, rand(3, 50, low=-100, high=100)),
    unary("tanh", nn.TanhOp),
    unary("hard_swish", nn.HardSwishOp),
    unary("leaky_relu", nn.LeakyReluOp, alpha=0.2),
    unary("hard_sigmoid", nn.HardSigmoidOp),
    unary("exp", nn.ExpOp, rand(2, 7, low=-5, high=5)),
    unary("log", nn.LogOp, _POSITIVE),
    unary("sqrt", nn.SqrtOp, _POSITIVE),
    unary("rsqrt", nn.RsqrtOp, _POSITIVE),
    unary("abs", nn.AbsOp),
    unary("neg", nn.NegOp),
    unary("erf", nn.ErfOp, rand(5, 5, low=-3, high=3)),
    unary("gelu", nn.GeluOp, rand(5, 5, low=-4, high=4)),
    unary("gelu_tanh", nn.GeluOp, rand(5, 5, low=-4, high=4), approximate="tanh"),
    unary("relu_rank0", nn.ReluOp, np.array(-3.0, dtype=np.float32)),
]

ELEMENTWISE_CASES = BINARY_CASES + UNARY_CASES


@pytest.mark.parametrize("case_id", ids(ELEMENTWISE_CASES))
def test_elementwise(family_results: Results, case_id: str) -> None:
    check(family_results, case_id)


# ---- Pooling, reductions, softmax ---------------------------------------------------------------


def pool(case_id: str, op_type: type[nn.NNOp], x: tuple[int, ...], **props: object) -> Case:
    props.setdefault("layout", "NHWC")
    return op_case(case_id, op_type, [rand(*x)], **props)


REDUCTION_CASES = [
    pool("max_2x2_s2", nn.MaxPool2DOp, (1, 8, 9, 5), kernel=[2, 2], strides=[2, 2]),
    pool("max_3x3_pad", nn.MaxPool2DOp, (2, 7, 7, 3), kernel=[3, 3], pads=[1, 1, 1, 1]),
    pool(
        "max_3x3_s2_asym_relu",
        nn.MaxPool2DOp,
        (1, 9, 10, 4),
        kernel=[3, 3],
        strides=[2, 2],
        pads=[0, 0, 1, 1],
        activation="relu",
    ),
    pool("max_dilated", nn.MaxPool2DOp, (1, 10, 10, 6), kernel=[2, 3], dilations=[2, 2]),
    pool("avg_3x3_pad", nn.AvgPool2DOp, (1, 6, 7, 5), kernel=[3, 3], pads=[1, 1, 1, 1]),
    pool(
        "avg_3x3_pad_incl",
        nn.AvgPool2DOp,
        (1, 6, 7, 5),
        kernel=[3, 3],
        pads=[1, 1, 1, 1],
        count_include_pad=True,
    ),
    pool("avg_global", nn.AvgPool2DOp, (2, 7, 7, 32), kernel=[7, 7]),
    pool(
        "avg_s2_relu6",
        nn.AvgPool2DOp,
        (1, 8, 8, 3),
        kernel=[2, 2],
        strides=[2, 2],
        activation="relu6",
    ),
    pool("max_nchw", nn.MaxPool2DOp, (1, 4, 8, 8), kernel=[2, 2], strides=[2, 2], layout="NCHW"),
    pool("avg_nchw", nn.AvgPool2DOp, (2, 3, 5, 6), kernel=[3, 3], pads=[1, 1, 1, 1], layout="NCHW"),
    op_case(
        "reduce_mean_hw_keep",
        nn.ReduceOp,
        [rand(2, 5, 6, 8)],
        kind="mean",
        axes=[1, 2],
        keepdims=True,
    ),
    op_case("reduce_sum_last", nn.ReduceOp, [rand(3, 4, 9)], kind="sum", axes=[-1]),
    op_case("reduce_max_first", nn.ReduceOp, [rand(6, 5)], kind="max", axes=[0]),
    op_case("reduce_min_outer_inner", nn.ReduceOp, [rand(3, 4, 5)], kind="min", axes=[0, 2]),
    op_case(
        "reduce_prod",
        nn.ReduceOp,
        [rand(4, 6, low=0.5, high=1.5)],
        kind="prod",
        axes=[1],
        keepdims=True,
    ),
    op_case("reduce_mean_all", nn.ReduceOp, [rand(3, 4, 5)], kind="mean", axes=[0, 1, 2]),
    op_case("reduce_max_nan", nn.ReduceOp, [_NAN_INPUT], kind="max", axes=[1]),
    op_case("softmax_last", nn.SoftmaxOp, [rand(2, 10, low=-5, high=5)]),
    op_case("softmax_beta", nn.SoftmaxOp, [rand(4, 7, low=-5, high=5)], beta=0.5),
    op_case("softmax_middle_axis", nn.SoftmaxOp, [rand(2, 5, 3)], axis=1),
    op_case("softmax_large", nn.SoftmaxOp, [rand(1, 1000, low=-50, high=50)]),
    op_case("log_softmax", nn.LogSoftmaxOp, [rand(3, 6, low=-5, high=5)]),
]


@pytest.mark.parametrize("case_id", ids(REDUCTION_CASES))
def test_pool_reduce_softmax(family_results: Results, case_id: str) -> None:
    check(family_results, case_id)


# ---- Data movement ------------------------------------------------------------------------------

MOVEMENT_CASES = [
    op_case("reshape", nn.ReshapeOp, [rand(2, 3, 4)], shape=[4, -1]),
    op_case("transpose_nchw", nn.TransposeOp, [rand(1, 5, 6, 3)], perm=[0, 3, 1, 2]),
    op_case("transpose_rotate", nn.TransposeOp, [rand(3, 4, 5)], perm=[2, 0, 1]),
    op_case("transpose_keep_inner", nn.TransposeOp, [rand(2, 3, 4, 5)], perm=[1, 0, 2, 3]),
    op_case(
        "concat_channels",
        nn.ConcatOp,
        [[rand(1, 4, 4, 3), rand(1, 4, 4, 5), rand(1, 4, 4, 1)]],
        axis=-1,
    ),
    op_case("concat_outer", nn.ConcatOp, [[rand(2, 3), rand(4, 3)]], axis=0, activation="relu"),
    op_case("concat_middle", nn.ConcatOp, [[rand(2, 1, 3), rand(2, 4, 3)]], axis=1),
    op_case("split_channels", nn.SplitOp, [rand(1, 3, 3, 8)], axis=3, sizes=[2, 5, 1]),
    op_case("split_outer", nn.SplitOp, [rand(6, 4)], axis=0, sizes=[4, 2]),
    op_case(
        "slice_strided",
        nn.SliceOp,
        [rand(5, 8, 3)],
        begin=[1, 0, 0],
        end=[5, 7, 3],
        strides=[2, 3, 1],
    ),
    op_case("slice_reverse", nn.SliceOp, [rand(4, 6)], begin=[3, 5], end=[-1, 0], strides=[-1, -2]),
    op_case("pad_spatial", nn.PadOp, [rand(1, 3, 4, 2)], pads=[0, 0, 1, 2, 2, 1, 0, 0]),
    op_case("pad_value", nn.PadOp, [rand(3, 4)], pads=[1, 0, 0, 3], value=1.5),
    op_case("broadcast_to", nn.BroadcastToOp, [rand(3, 1)], shape=[2, 3, 4]),
    op_case("resize_nearest_2x", nn.ResizeOp, [rand(1, 4, 5, 3)], size=[8, 10], layout="NHWC"),
    op_case(
        "resize_nearest_asym_floor",
        nn.ResizeOp,
        [rand(1, 5, 7, 2)],
        size=[3, 11],
        coordinate_mode="asymmetric",
        nearest_mode="floor",
        layout="NHWC",
    ),
    op_case(
        "resize_nearest_tf_half_pixel",
        nn.ResizeOp,
        [rand(2, 3, 3, 4)],
        size=[7, 5],
        coordinate_mode="tf_half_pixel_for_nn",
        layout="NHWC",
    ),
    op_case(
        "resize_bilinear_half_pixel",
        nn.ResizeOp,
        [rand(1, 4, 6, 3)],
        size=[9, 13],
        mode="bilinear",
        layout="NHWC",
    ),
    op_case(
        "resize_bilinear_align_corners",
        nn.ResizeOp,
        [rand(1, 5, 5, 2)],
        size=[8, 3],
        mode="bilinear",
        coordinate_mode="align_corners",
        layout="NHWC",
    ),
    op_case(
        "resize_bilinear_nchw",
        nn.ResizeOp,
        [rand(1, 3, 4, 4)],
        size=[8, 8],
        mode="bilinear",
        coordinate_mode="asymmetric",
        layout="NCHW",
    ),
]


@pytest.mark.parametrize("case_id", ids(MOVEMENT_CASES))
def test_data_movement(family_results: Results, case_id: str) -> None:
    check(family_results, case_id)


# ---- Small graphs: buffer planning, aliases, outputs --------------------------------------------


def _block_graph(x, w1, b1, w2, wfc):
    """conv -> relu6 -> depthwise -> residual add -> avg pool -> reshape -> fc -> softmax."""
    c1 = nn.Conv2DOp.make(x, w1, b1, pads=[1, 1, 1, 1], layout="NHWC", activation="relu6")
    dw = nn.Conv2DOp.make(c1.output, w2, None, groups=8, pads=[1, 1, 1, 1], layout="NHWC")
    add = nn.AddOp.make(dw.output, c1.output, activation="relu")
    pool = nn.AvgPool2DOp.make(add.output, kernel=[6, 6], layout="NHWC")
    flat = nn.ReshapeOp.make(pool.output, shape=[1, 8])
    logits = nn.FullyConnectedOp.make(flat.output, wfc, None)
    prob = nn.SoftmaxOp.make(logits.output)
    return [c1, dw, add, pool, flat, logits, prob]


def _residual_pointwise(x, r, w, b):
    """A 1x1 conv (one row of 35 pixels, 20 channels: tails) whose result is added to `r`
    (residual on the left) with relu6: the add runs in the conv's epilogue."""
    conv = nn.Conv2DOp.make(x, w, b, layout="NHWC")
    return [conv, nn.AddOp.make(r, conv.output, activation="relu6")]


def _residual_strided(x, r, w):
    """A padded, strided 3x3 conv with relu, then + r: residual after the conv's own
    activation."""
    conv = nn.Conv2DOp.make(
        x, w, None, strides=[2, 2], pads=[1, 0, 1, 1], layout="NHWC", activation="relu"
    )
    return [conv, nn.AddOp.make(conv.output, r)]


def _residual_shared(x, r, w):
    """The conv's result has a second use: the add stays a separate op."""
    conv = nn.Conv2DOp.make(x, w, None, layout="NHWC")
    add = nn.AddOp.make(conv.output, r)
    return [conv, add, nn.MulOp.make(add.output, conv.output)]


RESIDUAL_CASES = [
    Case(
        "residual_pointwise",
        _residual_pointwise,
        [rand(1, 5, 7, 8), rand(1, 5, 7, 20, low=-4, high=4), rand(20, 1, 1, 8), rand(20)],
        frozenset({2, 3}),
    ),
    Case(
        "residual_strided",
        _residual_strided,
        [rand(1, 9, 10, 6), rand(1, 5, 5, 40), rand(40, 3, 3, 6)],
        frozenset({2}),
    ),
    Case(
        "residual_shared",
        _residual_shared,
        [rand(1, 3, 3, 4), rand(1, 3, 3, 8), rand(8, 1, 1, 4)],
        frozenset({2}),
    ),
]

GRAPH_CASES = [
    Case(
        "block",
        _block_graph,
        [rand(1, 6, 6, 3), rand(8, 3, 3, 3), rand(8), rand(8, 3, 3, 1), rand(5, 8)],
        frozenset({1, 2, 3, 4}),
    ),
    *RESIDUAL_CASES,
]


def test_residual_add_runs_in_the_conv_epilogue() -> None:
    module, executable, _ = build_executable(RESIDUAL_CASES[:2])
    lower(module)
    (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
    assert "/* nn.add" not in source
    entry = source[source.index("irc_fn_") :]  # the generated code, after the library
    assert entry.count("irc_conv2d(") == 2
    assert entry.count(", NULL, 0);") == 0  # both convs carry their residual


@pytest.mark.parametrize("case_id", ids(GRAPH_CASES))
def test_graphs(family_results: Results, case_id: str) -> None:
    check(family_results, case_id)


FAMILIES = (
    CONV_SWEEP,
    CONV_CASES,
    BATCH_MATMUL_CASES,
    FC_CASES,
    ELEMENTWISE_CASES,
    REDUCTION_CASES,
    MOVEMENT_CASES,
    GRAPH_CASES,
)


@pytest.fixture(scope="module")
def family_results() -> Results:
    """Every family's cases in ONE executable: the kernels' C (conv2d.c, the pool, ...) is
    compiled once, not once per family (gcc on the eight families' C: 17.6 s of CPU one by
    one, 8.5 s together; Xeon @ 2.50GHz, AVX-512)."""
    cases = [case for family in FAMILIES for case in family]
    assert len({case.id for case in cases}) == len(cases), "case ids must be unique"
    return run_family(cases)
