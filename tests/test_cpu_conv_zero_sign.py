"""The sign of a zero sum in the CPU target's float convolutions and fully connected layers,
as the reference gives it.

The reference sums a depthwise-form conv (groups equal to the input channels, > 1, any
channel multiplier) over its taps' products from the first: a sum of products that are all
-0.0 is -0.0 (the kernels start at -0.0, the exact additive identity; +0.0 + -0.0 would be
+0.0), then a +0.0 bias makes it +0.0, a -0.0 bias keeps it. The depthwise kernel skips the
taps in the zero padding, whose products (+0.0 * w) the reference's sum over the padded input
has: a positive weight there makes a border pixel's zero sum +0.0. Every other conv and
fully connected layer is a matrix product on the reference (BLAS, from +0.0): never -0.0,
whatever the bias. Every form is checked, sign bit for sign bit, with every ISA profile this
host runs whose C differs (`isas_with_distinct_code`): register tiles and their pixel
tails, partial channel vectors, the depthwise per-pixel paths (fewer than 16 channels, 64
channels at a time), a channel multiplier (irc_conv2d), pointwise, grouped and fully
connected layers, the in-register and the scalar (tanh) epilogues.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import (
    Case,
    build_executable,
    execute_cases,
    isas_with_distinct_code,
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
    reference_outputs,
)

from irc.dialects import nn

pytestmark = [needs_compiler, pytest.mark.private_cache]


def _filled(shape: tuple[int, ...], value: float) -> np.ndarray:
    return np.full(shape, value, np.float32)


def _conv(
    case_id: str,
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    **props: object,
) -> Case:
    props.setdefault("layout", "NHWC")
    constants = [1] if bias is None else [1, 2]
    return op_case(case_id, nn.Conv2DOp, [x, w, bias], constants, **props)


def _depthwise(
    case_id: str, c: int, hw: tuple[int, int], x: float, w: float, **props: object
) -> Case:
    return _conv(case_id, _filled((1, *hw, c), x), _filled((c, 3, 3, 1), w), groups=c, **props)


def _fc(case_id: str, m: int, k: int, n: int, bias: np.ndarray | None = None) -> Case:
    arrays = [_filled((m, k), 0.0), _filled((n, k), -0.75), bias]
    return op_case(case_id, nn.FullyConnectedOp, arrays, [1] if bias is None else [1, 2])


CASES = [
    # +0.0 inputs, negative weights: every product, the padding's too, is -0.0.
    _depthwise("depthwise_c40", 40, (6, 12), 0.0, -0.5, pads=[1, 1, 1, 1]),
    _depthwise("depthwise_c72", 72, (3, 10), 0.0, -0.5, pads=[1, 1, 1, 1]),
    _depthwise("depthwise_c3", 3, (5, 11), 0.0, -0.5, pads=[1, 1, 1, 1]),
    _depthwise("depthwise_stride2", 32, (7, 19), 0.0, -0.5, strides=[2, 2], pads=[1, 1, 1, 1]),
    _depthwise("depthwise_tanh", 16, (4, 9), 0.0, -0.5, pads=[1, 1, 1, 1], activation="tanh"),
    _conv(
        "depthwise_negative_zero_bias",
        _filled((1, 4, 9, 24), 0.0),
        _filled((24, 3, 3, 1), -0.5),
        _filled((24,), -0.0),
        groups=24,
        pads=[1, 1, 1, 1],
        activation="relu",
    ),
    _conv(
        "multiplier_2_padded",
        _filled((1, 5, 9, 12), 0.0),
        _filled((24, 3, 3, 1), -0.25),
        groups=12,
        pads=[1, 1, 1, 1],
    ),
    # -0.0 inputs, positive weights: -0.0 inside, +0.0 where a tap lies in the padding.
    _depthwise("depthwise_border_c40", 40, (6, 12), -0.0, 0.5, pads=[1, 1, 1, 1]),
    _depthwise("depthwise_border_c72", 72, (3, 10), -0.0, 0.5, pads=[1, 1, 1, 1]),
    _depthwise("depthwise_border_c3", 3, (5, 11), -0.0, 0.5, pads=[1, 1, 1, 1]),
    _depthwise(
        "depthwise_border_relu6", 48, (4, 9), -0.0, 0.5, pads=[2, 0, 1, 2], activation="relu6"
    ),
    _conv(
        "multiplier_2_border",
        _filled((1, 5, 9, 12), -0.0),
        _filled((24, 3, 3, 1), 0.25),
        groups=12,
        pads=[1, 1, 1, 1],
    ),
    # A +0.0 bias: +0.0 everywhere.
    _conv(
        "depthwise_positive_zero_bias",
        _filled((1, 4, 9, 24), 0.0),
        _filled((24, 3, 3, 1), -0.5),
        _filled((24,), 0.0),
        groups=24,
        pads=[1, 1, 1, 1],
    ),
    # Matrix products: +0.0 whatever the products and the bias.
    _conv("pointwise_oc40", _filled((1, 5, 5, 24), 0.0), _filled((40, 1, 1, 24), -0.5)),
    _conv(
        "pointwise_tanh",
        _filled((1, 3, 7, 8), 0.0),
        _filled((20, 1, 1, 8), -0.5),
        activation="tanh",
    ),
    _conv(
        "pointwise_relu_negative_zero_bias",
        _filled((1, 4, 4, 16), 0.0),
        _filled((24, 1, 1, 16), -0.5),
        _filled((24,), -0.0),
        activation="relu",
    ),
    _conv(
        "grouped_3x3_padded",
        _filled((1, 6, 9, 8), 0.0),
        _filled((12, 3, 3, 4), -0.25),
        groups=2,
        pads=[1, 1, 1, 1],
    ),
    _fc("fully_connected_m13_n40", 13, 70, 40),
    _fc("fully_connected_m1_n10", 1, 64, 10),
    _fc("fully_connected_negative_zero_bias", 9, 32, 48, _filled((48,), -0.0)),
]

ALL_NEGATIVE = {
    "depthwise_c40",
    "depthwise_c72",
    "depthwise_c3",
    "depthwise_stride2",
    "depthwise_tanh",
    "depthwise_negative_zero_bias",
    "multiplier_2_padded",
}
"""Cases whose reference result is all -0.0; border cases mix -0.0 and +0.0, the rest are
+0.0 (checked, so that a reference giving one sign everywhere cannot make the test pass)."""


@pytest.fixture(scope="module")
def results() -> dict[str, list[tuple[str, np.ndarray, np.ndarray]]]:
    module, executable, built = build_executable(
        CASES, name="test_cpu_conv_zero_sign", per_case=True
    )
    expected = [reference_outputs(b)[0] for b in built]
    lower(module)
    out: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {b.case.id: [] for b in built}
    for name in isas_with_distinct_code(executable):
        got = execute_cases(load_with_isa(executable, name), built)
        for b, want, have in zip(built, expected, got, strict=True):
            out[b.case.id].append((name, np.asarray(have), want))
    return out


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_zero_sums_keep_the_reference_sign(results, case_id: str) -> None:
    for name, have, want in results[case_id]:
        assert not want.any()  # every result is a zero
        if case_id in ALL_NEGATIVE:
            assert np.signbit(want).all()
        elif "border" in case_id:  # -0.0 inside, +0.0 at the padding
            assert np.signbit(want).any()
            assert not np.signbit(want).all()
        else:
            assert not np.signbit(want).any()
        np.testing.assert_array_equal(np.signbit(have), np.signbit(want), err_msg=name)
