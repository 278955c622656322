"""The shape rules of `nn` ops (`NNOp.result_shapes`) against numpy and brute force.

The rules are the single definition that the verifier, `infer-shapes` and `NNOp.make` share,
so each is compared with an independent computation: numpy's own shape semantics where numpy
has the operation, counting window positions on a padded axis for convolution and pooling.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np
import pytest
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from irc.dialects import nn
from irc.dialects.nn import NNOp, Shape, broadcast_shapes
from irc.dialects.nn.base import to_prop_attr

D = nn.DYNAMIC
"""A dynamic dimension (`?`)."""

RNG_SEED = 1234


def result_shapes(op: type[NNOp], *operand_shapes: Sequence[int], **props: object) -> list[Shape]:
    """`op`'s shape rule on Python property values, defaults filled in as the builder does."""
    kinds = {name: (kind, default) for name, kind, default, _ in op._prop_kinds()}
    full: dict[str, Attribute] = {n: d for n, (_, d) in kinds.items() if d is not None}
    full |= {n: to_prop_attr(kinds[n][0], v) for n, v in props.items() if v is not None}
    return op.result_shapes([tuple(s) for s in operand_shapes], full)


def raises_verify(message: str):
    return pytest.raises(VerifyException, match=re.escape(message))


# ---- Broadcasting ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((D, 3), (3,), (D, 3)),
        ((D,), (1,), (D,)),
        ((1,), (D,), (D,)),
        ((D,), (4,), (4,)),
        ((4,), (D,), (4,)),
        ((D,), (D,), (D,)),
        ((2, 1), (1, D), (2, D)),
        ((), (D, 2), (D, 2)),
        ((D, 1, 5), (3, 1), (D, 3, 5)),
    ],
)
def test_broadcast_with_dynamic_dims(a: Shape, b: Shape, expected: Shape) -> None:
    assert broadcast_shapes(a, b) == expected
    assert broadcast_shapes(b, a) == expected


def test_broadcast_matches_numpy() -> None:
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(500):
        a = tuple(int(d) for d in rng.choice([1, 2, 3], size=rng.integers(0, 4)))
        b = tuple(int(d) for d in rng.choice([1, 2, 3], size=rng.integers(0, 4)))
        try:
            expected = np.broadcast_shapes(a, b)
        except ValueError:
            with pytest.raises(VerifyException, match="are not broadcastable"):
                broadcast_shapes(a, b)
        else:
            assert broadcast_shapes(a, b) == expected


def test_broadcast_error_message() -> None:
    with raises_verify("shapes 2x3 and 4 are not broadcastable"):
        broadcast_shapes((2, 3), (4,))
    with raises_verify("shapes 2x? and 3x4 are not broadcastable"):
        broadcast_shapes((2, D), (3, 4))


# ---- Sliding windows ---------------------------------------------------------------------------


def brute_force_windows(
    size: int, kernel: int, stride: int, dilation: int, before: int, after: int
):
    """Number of window positions on a padded axis, by trying every start position."""
    padded = before + size + after
    last_tap = dilation * (kernel - 1)
    return sum(1 for start in range(0, padded, stride) if start + last_tap < padded)


WINDOW_PARAMS = list(
    itertools.product(range(1, 8), range(1, 4), range(1, 4), range(1, 3), range(3), range(3))
)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_conv2d_output_size_brute_force(layout: str) -> None:
    rng = np.random.default_rng(RNG_SEED)
    for size, kernel, stride, dilation, before, after in WINDOW_PARAMS:
        width = int(rng.integers(1, 6))
        x = (1, size, width, 2) if layout == "NHWC" else (1, 2, size, width)
        w = (3, kernel, 1, 2) if layout == "NHWC" else (3, 2, kernel, 1)
        props = {
            "strides": [stride, 1],
            "dilations": [dilation, 1],
            "pads": [before, 0, after, 0],
            "layout": layout,
        }
        expected = brute_force_windows(size, kernel, stride, dilation, before, after)
        if expected == 0:
            with pytest.raises(VerifyException, match="does not fit"):
                result_shapes(nn.Conv2DOp, x, w, **props)
            continue
        (out,) = result_shapes(nn.Conv2DOp, x, w, **props)
        assert out == ((1, expected, width, 3) if layout == "NHWC" else (1, 3, expected, width))


@pytest.mark.parametrize("op", [nn.MaxPool2DOp, nn.AvgPool2DOp])
def test_pool_output_size_brute_force(op: type[NNOp]) -> None:
    for size, kernel, stride, dilation, before, after in WINDOW_PARAMS:
        props = {
            "kernel": [kernel, 1],
            "strides": [stride, 1],
            "dilations": [dilation, 1],
            "pads": [before, 0, after, 0],
            "layout": "NHWC",
        }
        if before >= kernel or after >= kernel:
            with pytest.raises(VerifyException, match="must be smaller than kernel"):
                result_shapes(op, (1, size, 3, 2), **props)
            continue
        expected = brute_force_windows(size, kernel, stride, dilation, before, after)
        if expected == 0:
            with pytest.raises(VerifyException, match="does not fit"):
                result_shapes(op, (1, size, 3, 2), **props)
            continue
        assert result_shapes(op, (1, size, 3, 2), **props) == [(1, expected, 3, 2)]


def brute_force_transposed_size(
    size: int, kernel: int, stride: int, dilation: int, before: int, after: int, extra: int
) -> int:
    """Scatter every (input, tap) pair into a full output, then crop the pads."""
    full = np.zeros((size - 1) * stride + dilation * (kernel - 1) + 1 + extra)
    for i in range(size):
        for j in range(kernel):
            full[i * stride + j * dilation] += 1
    return len(full[before : len(full) - after])


def test_conv2d_transpose_output_size_brute_force() -> None:
    for size, kernel, stride, dilation, before, after in WINDOW_PARAMS:
        for extra in range(stride):  # output_padding < stride, as ONNX requires
            props = {
                "strides": [stride, 1],
                "dilations": [dilation, 1],
                "pads": [before, 0, after, 0],
                "output_padding": [extra, 0],
                "layout": "NHWC",
            }
            expected = brute_force_transposed_size(
                size, kernel, stride, dilation, before, after, extra
            )
            if expected <= 0:
                with pytest.raises(VerifyException, match="is empty"):
                    result_shapes(nn.Conv2DTransposeOp, (1, size, 2, 4), (3, kernel, 1, 4), **props)
                continue
            (out,) = result_shapes(
                nn.Conv2DTransposeOp, (1, size, 2, 4), (3, kernel, 1, 4), **props
            )
            assert out == (1, expected, 2, 3)
            # A conv2d with the same window maps the transposed conv's output back to its input.
            props.pop("output_padding")
            (back,) = result_shapes(nn.Conv2DOp, (1, expected, 2, 3), (4, kernel, 1, 3), **props)
            assert back == (1, size, 2, 4)


def test_conv2d_transpose_channels() -> None:
    # NHWC: OHWI with I = C_in / groups. NCHW: IOHW with O = C_out / groups.
    assert result_shapes(
        nn.Conv2DTransposeOp, (1, 3, 3, 4), (6, 1, 1, 2), groups=2, layout="NHWC"
    ) == [(1, 3, 3, 6)]
    assert result_shapes(
        nn.Conv2DTransposeOp, (1, 4, 3, 3), (4, 3, 1, 1), groups=2, layout="NCHW"
    ) == [(1, 6, 3, 3)]


def test_conv2d_grouped_channels() -> None:
    assert result_shapes(nn.Conv2DOp, (1, 5, 5, 4), (4, 3, 3, 1), groups=4, layout="NHWC") == [
        (1, 3, 3, 4)
    ]
    with raises_verify("filter expects 4 input channels (2 per group x 2 groups), input has 6"):
        result_shapes(nn.Conv2DOp, (1, 5, 5, 6), (4, 3, 3, 2), groups=2, layout="NHWC")


def test_windows_with_dynamic_dims() -> None:
    assert result_shapes(nn.Conv2DOp, (D, D, 8, 3), (4, 3, 3, 3), layout="NHWC") == [(D, D, 6, 4)]
    # A filter with dynamic spatial sizes leaves the output size unknown.
    assert result_shapes(nn.Conv2DOp, (1, 8, 8, 3), (4, D, 3, 3), layout="NHWC") == [(1, D, 6, 4)]
    assert result_shapes(nn.Conv2DTransposeOp, (1, 4, 4, 8), (4, 2, D, 8), layout="NHWC") == [
        (1, 5, D, 4)
    ]
    assert result_shapes(nn.Conv2DOp, (1, D, 8, 8), (D, 2, 3, 3), layout="NCHW") == [(1, D, 6, 6)]
    assert result_shapes(
        nn.MaxPool2DOp, (1, 4, D, D), kernel=[2, 2], strides=[2, 2], layout="NCHW"
    ) == [(1, 4, D, D)]


# ---- Matrix products ---------------------------------------------------------------------------


def test_fully_connected_matches_numpy() -> None:
    for x in [(8,), (2, 8), (2, 5, 8)]:
        expected = (np.zeros(x) @ np.zeros((3, 8)).T).shape
        assert result_shapes(nn.FullyConnectedOp, x, (3, 8)) == [expected]
    assert result_shapes(nn.FullyConnectedOp, (D, 8), (3, 8), (3,)) == [(D, 3)]
    assert result_shapes(nn.FullyConnectedOp, (2, D), (3, 8)) == [(2, 3)]


def test_batch_matmul_matches_numpy() -> None:
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(200):
        batch_a = tuple(int(d) for d in rng.choice([1, 2, 3], size=rng.integers(0, 3)))
        batch_b = tuple(int(d) for d in rng.choice([1, 2, 3], size=rng.integers(0, 3)))
        m, k, n = (int(v) for v in rng.integers(1, 5, size=3))
        adj_x, adj_y = (bool(v) for v in rng.integers(0, 2, size=2))
        a = (*batch_a, *((k, m) if adj_x else (m, k)))
        b = (*batch_b, *((n, k) if adj_y else (k, n)))
        lhs, rhs = np.zeros(a), np.zeros(b)  # zeros: np.empty garbage can overflow
        lhs = np.swapaxes(lhs, -1, -2) if adj_x else lhs
        rhs = np.swapaxes(rhs, -1, -2) if adj_y else rhs
        try:
            expected = np.matmul(lhs, rhs).shape
        except ValueError:
            with pytest.raises(VerifyException, match="not broadcastable"):
                result_shapes(nn.BatchMatmulOp, a, b, adj_x=adj_x, adj_y=adj_y)
        else:
            assert result_shapes(nn.BatchMatmulOp, a, b, adj_x=adj_x, adj_y=adj_y) == [expected]


def test_batch_matmul_dynamic() -> None:
    assert result_shapes(nn.BatchMatmulOp, (D, 3, 4), (4, D)) == [(D, 3, D)]
    assert result_shapes(nn.BatchMatmulOp, (2, 3, D), (1, 4, 5)) == [(2, 3, 5)]


# ---- Data movement -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target"),
    [
        ((2, 3, 4), [4, -1]),
        ((2, 3, 4), [-1]),
        ((2, 3, 4), [-1, 1, 2]),
        ((1, 7, 7, 64), [1, -1]),
        ((6,), [2, 3]),
        ((0, 3), [3, 0]),
        ((0, 3), [-1, 3]),
        ((), [1, 1]),
        ((1,), []),
    ],
)
def test_reshape_matches_numpy(shape: Shape, target: list[int]) -> None:
    expected = np.zeros(shape).reshape(target).shape
    assert result_shapes(nn.ReshapeOp, shape, shape=target) == [expected]


def test_reshape_dynamic() -> None:
    assert result_shapes(nn.ReshapeOp, (D, 4), shape=[-1, 2, 2]) == [(D, 2, 2)]
    assert result_shapes(nn.ReshapeOp, (D, 4), shape=[8, 2]) == [(8, 2)]
    with raises_verify("cannot reshape 2x3 (6 elements) into [4, -1]"):
        result_shapes(nn.ReshapeOp, (2, 3), shape=[4, -1])


def test_transpose_matches_numpy() -> None:
    for perm in itertools.permutations(range(4)):
        expected = np.zeros((1, 2, 3, 4)).transpose(perm).shape
        assert result_shapes(nn.TransposeOp, (1, 2, 3, 4), perm=list(perm)) == [expected]
    assert result_shapes(nn.TransposeOp, (D, 2), perm=[1, 0]) == [(2, D)]


def test_concat_matches_numpy() -> None:
    shapes = [(2, 1, 3), (2, 4, 3), (2, 2, 3)]
    for axis in (1, -2):
        expected = np.concatenate([np.zeros(s) for s in shapes], axis=axis).shape
        assert result_shapes(nn.ConcatOp, *shapes, axis=axis) == [expected]
    assert result_shapes(nn.ConcatOp, (D, 2), (3, 2), axis=1) == [(3, 4)]
    assert result_shapes(nn.ConcatOp, (2, D), (2, 3), axis=1) == [(2, D)]


def test_split_matches_numpy() -> None:
    x = np.zeros((3, 10, 2))
    for sizes in ([10], [3, 7], [1, 0, 4, 5], [2, 2, 2, 2, 2]):
        pieces = np.split(x, np.cumsum(sizes)[:-1], axis=1)
        expected = [p.shape for p in pieces]
        assert result_shapes(nn.SplitOp, x.shape, axis=1, sizes=sizes) == expected
        assert result_shapes(nn.SplitOp, x.shape, axis=-2, sizes=sizes) == expected
    assert result_shapes(nn.SplitOp, (D, 4), axis=0, sizes=[1, 2]) == [(1, 4), (2, 4)]
    assert result_shapes(nn.SplitOp, (D, 4), axis=1, sizes=[1, 3]) == [(D, 1), (D, 3)]


def _numpy_slice(begin: int, end: int, stride: int) -> slice:
    """The Python slice of an `nn.slice` dimension (`end = -1` with a negative stride is
    "through index 0", which Python spells `None`)."""
    return slice(begin, None if end == -1 else end, stride)


def test_slice_matches_numpy() -> None:
    rng = np.random.default_rng(RNG_SEED)
    checked = 0
    for _ in range(2000):
        shape = tuple(int(d) for d in rng.integers(0, 6, size=rng.integers(1, 4)))
        begin, end, strides = [], [], []
        for size in shape:
            stride = int(rng.choice([-3, -2, -1, 1, 2, 3]))
            if stride > 0:
                b, e = sorted(int(v) for v in rng.integers(0, size + 1, size=2))
                if rng.random() < 0.2:
                    b, e = e, b  # an empty slice
            else:
                b = int(rng.integers(0, size)) if size else 0
                e = int(rng.integers(-1, b + 1)) if size else -1
            begin.append(b)
            end.append(e)
            strides.append(stride)
        slices = tuple(_numpy_slice(*args) for args in zip(begin, end, strides))
        expected = np.zeros(shape)[slices].shape
        if any(s < 0 and size == 0 for s, size in zip(strides, shape)):
            continue  # begin 0 of an empty dimension with a negative stride: rejected
        got = result_shapes(nn.SliceOp, shape, begin=begin, end=end, strides=strides)
        assert got == [expected], (shape, begin, end, strides)
        checked += 1
    assert checked > 1000


def test_slice_dynamic_and_errors() -> None:
    assert result_shapes(nn.SliceOp, (D, 8), begin=[1, 0], end=[5, 8], strides=[2, 3]) == [(2, 3)]
    with raises_verify("slice [0:9:1] of dimension 0 is out of range for size 8"):
        result_shapes(nn.SliceOp, (8,), begin=[0], end=[9], strides=[1])
    with raises_verify("begin 8 of dimension 0 is out of range for size 8"):
        result_shapes(nn.SliceOp, (8,), begin=[8], end=[-1], strides=[-1])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_matches_numpy(mode: str) -> None:
    shape = (1, 4, 3, 2)
    for pads in ([0, 0, 1, 1, 2, 0, 0, 0], [0, 0, 3, 0, 0, 2, 1, 1], [0] * 8):
        pairs = list(zip(pads[0::2], pads[1::2]))
        if mode == "reflect" and any(max(p) >= s for p, s in zip(pairs, shape)):
            with pytest.raises(VerifyException, match="reflect padding"):
                result_shapes(nn.PadOp, shape, pads=pads, mode=mode)
            continue
        expected = np.pad(np.zeros(shape), pairs, mode=mode).shape
        assert result_shapes(nn.PadOp, shape, pads=pads, mode=mode) == [expected]
    assert result_shapes(nn.PadOp, (D, 3), pads=[1, 1, 0, 2]) == [(D, 5)]


def test_gather_matches_numpy() -> None:
    x = np.zeros((2, 5, 3))
    for indices in [(), (4,), (2, 3)]:
        for axis in range(-3, 3):
            expected = np.take(x, np.zeros(indices, np.int64), axis=axis).shape
            assert result_shapes(nn.GatherOp, x.shape, indices, axis=axis) == [expected]


def test_gather_batch_dims_matches_a_loop() -> None:
    """batch_dims = 1: one np.take per batch entry, stacked."""
    x, indices = np.zeros((2, 5, 3)), np.zeros((2, 4), np.int64)
    for axis in (1, 2):
        expected = np.stack([np.take(x[b], indices[b], axis=axis - 1) for b in range(2)]).shape
        assert result_shapes(nn.GatherOp, x.shape, indices.shape, axis=axis, batch_dims=1) == [
            expected
        ]


@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_matches_numpy(keepdims: bool) -> None:
    x = np.zeros((2, 3, 4, 5))
    for count in range(1, 5):
        for axes in itertools.combinations(range(-4, 0), count):
            expected = np.sum(x, axis=axes, keepdims=keepdims).shape
            got = result_shapes(
                nn.ReduceOp, x.shape, kind="sum", axes=list(axes), keepdims=keepdims
            )
            assert got == [expected]
    assert result_shapes(nn.ReduceOp, (D, 3), kind="max", axes=[1], keepdims=True) == [(D, 1)]


def test_resize_and_softmax() -> None:
    assert result_shapes(nn.ResizeOp, (D, 8, 8, 3), size=[4, 6], layout="NHWC") == [(D, 4, 6, 3)]
    assert result_shapes(nn.ResizeOp, (1, 3, D, 8), size=[4, 6], layout="NCHW") == [(1, 3, 4, 6)]
    assert result_shapes(nn.SoftmaxOp, (D, 10)) == [(D, 10)]
    assert result_shapes(nn.BatchNormOp, (D, 4), (4,), (4,), (4,), (D,), layout="NHWC") == [(D, 4)]
