"""The fused qcast -> dcast round trip (lowerings/requantize.py): bit for bit the reference's
qcast then dcast where the clamp's low bound is 0 (one comparison for NaN and the bound,
half away from zero as half up), where it is not, and where a clamping activation before
the qcast is dropped because the clamp subsumes it (or kept because it does not): fused
`activation`s of the producer and of a residual add, `nn.relu6` / `nn.clip` ops. Values at
and within a few ulps of every rounding boundary, NaN, ±inf, -0.0 and values past the
activation's and the storage's bounds; the tiled conv's store forms and the GPU-style
kernels."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pytest
from cpu_support import Case
from opencl_support import kernel_style_params, needs_device, run_cases_bit_exact
from xdsl.dialects.builtin import Float32Type, IntegerType, Signedness, TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn, quant
from irc.targets.opencl.lowerings.requantize import activation_subsumed, quantized_index

pytestmark = [pytest.mark.private_cache, needs_device]


def _element(scale: float, zp: int, signed: bool) -> quant.UniformQuantizedType:
    """A per-tensor type with `scale` rounded to float32 (as models store it)."""
    scale = float(np.float32(scale))
    storage = IntegerType(8) if signed else IntegerType(8, signedness=Signedness.UNSIGNED)
    return quant.UniformQuantizedType.per_tensor(storage, Float32Type(), scale, zp)


def _values(scale: float, count: int, seed: int) -> np.ndarray:
    """Every rounding boundary of the quotient in [-260, 260], its neighbours (1-3 ulps),
    the activation bounds and theirs, special values, then random values: `count` values."""
    s = np.float32(scale)
    boundaries = ((np.arange(-260, 260, dtype=np.float64) + 0.5) * float(s)).astype(np.float32)
    bounds = np.array([0.0, 6.0, -1.0, 1.0, 255 * s, 127 * s, -128 * s], np.float32)
    near = [boundaries, bounds]
    for base in (boundaries, bounds):
        up, down = base, base
        for _ in range(3):
            up = np.nextafter(up, np.float32(np.inf))
            down = np.nextafter(down, np.float32(-np.inf))
            near += [up, down]
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e30, 3e38], np.float32)
    rng = np.random.default_rng(seed)
    random = (rng.standard_normal(count) * 200 * s).astype(np.float32)
    return np.resize(np.concatenate([special, *near, random]), count)


Tail = Callable[[SSAValue], list[Operation]]
"""The ops after the conv: the round trip and what goes with it."""


def _round_trip(element: quant.UniformQuantizedType, rounding: str) -> Tail:
    def tail(value: SSAValue) -> list[Operation]:
        shape = value.type.get_shape()  # type: ignore[union-attr]  # a TensorType
        q = quant.QCastOp(value, TensorType(element, shape), rounding=rounding)
        return [q, quant.DCastOp(q.output)]

    return tail


def _case(
    case_id: str,
    channels: int,
    element,
    rounding: str,
    activation: str | None,
    seed: int,
    *,
    unary: Callable[[SSAValue], Operation] | None = None,
    residual_activation: str | None = None,
) -> Case:
    """A depthwise 1x1 conv of ones (the value passes unchanged into the epilogue) with
    `activation`, an optional unary op, then the round trip; with `residual_activation` a
    second round trip after a residual add with that fused activation."""
    scale = float(element.scale_values[0])
    x = _values(scale, 8 * 16 * channels, seed).reshape(1, 8, 16, channels)
    w = np.ones((channels, 1, 1, 1), np.float32)
    arrays = [x, w]
    if residual_activation is not None:
        arrays.append(_values(scale, 8 * 16 * channels, seed + 1).reshape(1, 8, 16, channels))

    def build(xv: SSAValue, wv: SSAValue, *rest: SSAValue) -> list[Operation]:
        props = {"activation": activation} if activation is not None else {}
        conv = nn.Conv2DOp.make(xv, wv, None, layout="NHWC", groups=channels, **props)
        ops: list[Operation] = [conv]
        if unary is not None:
            ops.append(unary(ops[-1].results[0]))
        ops += _round_trip(element, rounding)(ops[-1].results[0])
        if residual_activation is not None:
            add = nn.AddOp.make(ops[-1].results[0], rest[0], activation=residual_activation)
            ops.append(add)
            ops += _round_trip(element, rounding)(add.output)
        return ops

    return Case(case_id, build, arrays, frozenset({1}))


RELU6 = _element(6 / 255, -128, True)  # relu6 subsumed (MobileNetV2)
RELU6_U8 = _element(6 / 255, 0, False)
COARSE = _element(0.05, -128, True)  # 6 / 0.05 = 120 < 127.5: relu6 kept
MID = _element(0.0859375, 3, True)  # low bound -131: the general clamp and rounding
UNIT = _element(1 / 128, 0, True)  # relu_n1_to_1 subsumed: -1 -> -128, 1 -> 128 -> 127
UNIT_KEPT = _element(1 / 127, 0, True)  # -1 -> -127 > -128: kept


def _relu6(value: SSAValue) -> Operation:
    return nn.Relu6Op.make(value)


def _clip(value: SSAValue) -> Operation:
    return nn.ClipOp.make(value, min=0.0, max=3.0)


def _cases(rounding: str) -> list[Case]:
    return [
        _case("relu6_subsumed", 16, RELU6, rounding, "relu6", 1),
        _case("relu6_u8_lanes", 12, RELU6_U8, rounding, "relu6", 2),
        _case("relu_scalar", 3, RELU6, rounding, "relu", 3),
        _case("relu6_kept", 16, COARSE, rounding, "relu6", 4),
        _case("no_activation_low0", 16, RELU6, rounding, None, 5),
        _case("no_activation_mid", 16, MID, rounding, None, 6),
        _case("relu_mid_kept", 16, MID, rounding, "relu", 7),
        _case("unit_subsumed", 16, UNIT, rounding, "relu_n1_to_1", 8),
        _case("unit_kept", 16, UNIT_KEPT, rounding, "relu_n1_to_1", 9),
        _case("relu6_op", 16, RELU6, rounding, None, 10, unary=_relu6),
        _case("clip_op_kept", 16, RELU6, rounding, None, 11, unary=_clip),
        _case("residual_relu", 16, RELU6, rounding, None, 12, residual_activation="relu"),
        _case("residual_mid", 16, MID, rounding, "relu6", 13, residual_activation="relu"),
    ]


def _run(cases: list[Case], kernels: str) -> str:
    return run_cases_bit_exact(cases, kernels, f"test_requantize_{kernels}")


@pytest.mark.parametrize("kernels", kernel_style_params())
@pytest.mark.parametrize("rounding", ["half_away_from_zero", "half_to_even"])
def test_round_trip_is_bit_exact(rounding: str, kernels: str) -> None:
    source = _run(_cases(rounding), kernels)
    # the round trips spend no zero-point addition; the low-0 clamp is one comparison
    assert "+ -128.0f" not in source
    assert "- -128.0f" not in source
    assert "(v >= 0.0f ? (v > 255.0f ? 255.0f : v) : 0.0f)" in source
    kernels_text = re.split(r"/\* ", source)
    relu6_kept = sum("6.0f ? 6.0f" in k for k in kernels_text)
    # relu6 stays where 6 / scale does not reach the maximum: relu6_kept, residual_mid
    assert relu6_kept == 2


def _qcast(element: quant.UniformQuantizedType, rounding: str) -> quant.QCastOp:
    x = nn.ConstantOp.from_array(np.zeros((1, 4), np.float32))
    return quant.QCastOp(x.output, TensorType(element, [1, 4]), rounding=rounding)


@pytest.mark.parametrize(
    ("element", "bounds", "subsumed"),
    [
        (RELU6, (0.0, 6.0), True),
        (RELU6, (0.0, math.inf), True),
        (RELU6, (0.0, 5.99), True),  # 254.58 rounds to 255
        (RELU6, (0.0, 5.98), False),
        (COARSE, (0.0, 6.0), False),
        (MID, (0.0, math.inf), False),
        (UNIT, (-1.0, 1.0), True),
        (UNIT_KEPT, (-1.0, 1.0), False),
        (MID, (-math.inf, math.inf), True),
    ],
)
def test_activation_subsumed(element, bounds: tuple[float, float], subsumed: bool) -> None:
    assert activation_subsumed(bounds, _qcast(element, "half_away_from_zero")) is subsumed


def test_quantized_index_matches_the_reference_rounding() -> None:
    q = _qcast(MID, "half_away_from_zero")
    even = _qcast(MID, "half_to_even")
    s = float(np.float32(0.0859375))
    assert quantized_index(q, 2.5 * s) == 3
    assert quantized_index(even, 2.5 * s) == 2
    assert quantized_index(q, -2.5 * s) == -3
    assert quantized_index(even, -2.5 * s) == -2
    assert quantized_index(q, math.nan) == 0
    assert quantized_index(q, math.inf) == 124
    assert quantized_index(q, -math.inf) == -131


def _cast_pair(case_id: str, element: quant.UniformQuantizedType, seed: int) -> Case:
    """qcast then dcast of a model input, as separate kernels (no producer to fuse into):
    values over the whole storage range and past it."""
    scale = float(element.scale_values[0])
    rng = np.random.default_rng(seed)
    x = (rng.uniform(-300, 300, (1, 8, 16, 16)) * scale).astype(np.float32)

    def build(xv: SSAValue) -> list[Operation]:
        return _round_trip(element, "half_away_from_zero")(xv)

    return Case(case_id, build, [x])


@pytest.mark.parametrize("kernels", kernel_style_params())
def test_standalone_casts_are_bit_exact(kernels: str) -> None:
    """The qcast and dcast kernels of a tensor no producer absorbs (16 values per work-item
    with `kernels=cpu`, a table with `kernels=gpu`): the reference's division and its double
    product, also for a scale that is not a float32."""
    inexact = quant.UniformQuantizedType.per_tensor(IntegerType(8), Float32Type(), 0.05, 3)
    cases = [
        _cast_pair("i8", RELU6, 1),
        _cast_pair("u8", _element(0.0859375, 131, False), 2),
        _cast_pair("mid", MID, 3),
        _cast_pair("double_scale", inexact, 4),
    ]
    source = _run(cases, kernels)
    assert "quant.dcast 1x8x16x16" in source  # not fused: its own kernels
