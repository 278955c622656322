"""The fused qcast's division (lowerings/epilogue.py's `qcast_exprs`): bit for bit the
reference's `round(saturate(v / scale))` for scales whose reciprocal is inexact, on values at
and within a few ulps of every rounding boundary (`(k + 1/2) * scale`), NaN, ±inf, -0.0 and
values past the storage range; in every store form of the tiled conv (float16, float4 and
scalar vectors, float4 pieces, lanes), the one-element kernel and the GPU-style kernels. A
multiplication by the reciprocal rounds ~1 in 50 of these values differently (the test
fails with it); checked only near boundaries it was exact but 12 % slower on PoCL."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import Case
from opencl_support import needs_device, run_cases_bit_exact
from xdsl.dialects.builtin import Float32Type, IntegerType, Signedness, TensorType
from xdsl.ir import SSAValue

from irc.dialects import nn, quant

pytestmark = [pytest.mark.private_cache, needs_device]

SCALES = [0.023529412, 0.1, 1 / 3, 0.0085937, 3.7, 0.047058824]


def _values(scale: float, count: int) -> np.ndarray:
    """Every rounding boundary of the quotient in [-135, 140] and its neighbours (0-3 ulps
    either side), special values, then random quotients: `count` values."""
    s = np.float32(scale)
    boundaries = (np.arange(-135, 140, dtype=np.float64) + 0.5) * float(s)
    with np.errstate(over="ignore"):
        v = boundaries.astype(np.float32)
    near = [v]
    for steps in (1, 2, 3):
        up, down = v, v
        for _ in range(steps):
            up = np.nextafter(up, np.float32(np.inf))
            down = np.nextafter(down, np.float32(-np.inf))
        near += [up, down]
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e30, 3e38], np.float32)
    rng = np.random.default_rng(int(scale * 1e6))
    with np.errstate(over="ignore"):
        random = (rng.standard_normal(count) * 150 * s).astype(np.float32)
    return np.resize(np.concatenate([special, *near, random]), count)


def _element(scale: float, signed: bool) -> quant.UniformQuantizedType:
    storage = IntegerType(8) if signed else IntegerType(8, signedness=Signedness.UNSIGNED)
    return quant.UniformQuantizedType.per_tensor(
        storage, Float32Type(), float(np.float32(scale)), -5 if signed else 128
    )


def _case(case_id: str, x: np.ndarray, w: np.ndarray, element, rounding: str, **props) -> Case:
    def build(xv: SSAValue, wv: SSAValue):
        conv = nn.Conv2DOp.make(xv, wv, None, layout="NHWC", **props)
        shape = conv.output.type.get_shape()  # type: ignore[union-attr]  # a TensorType
        q = quant.QCastOp(conv.output, TensorType(element, shape), rounding=rounding)
        return [conv, q, quant.DCastOp(q.output)]

    return Case(case_id, build, [x, w], frozenset({1}))


def _cases(scale: float, rounding: str, tag: str = "") -> list[Case]:
    element = _element(scale, rounding == "half_away_from_zero")
    cases = []
    # depthwise 1x1 of ones: the value passes unchanged (float16 / float4 / scalar kernels)
    for channels, (h, w) in ((16, (8, 16)), (12, (12, 16)), (3, (32, 24))):
        x = _values(scale, h * w * channels).reshape(1, h, w, channels)
        w = np.ones((channels, 1, 1, 1), np.float32)
        cases.append(_case(f"{tag}dw{channels}", x, w, element, rounding, groups=channels))
    # a 1x1 GEMM of the identity (finite values: 0 * inf would be NaN): float4 pieces (20
    # channels) and lanes (18)
    for channels in (20, 18):
        x = _values(scale, 8 * 16 * channels)
        x = np.where(np.isfinite(x) & (np.abs(x) < 1e20), x, np.float32(1.5)).reshape(
            1, 8, 16, channels
        )
        w = np.eye(channels, dtype=np.float32).reshape(channels, 1, 1, channels)
        cases.append(_case(f"{tag}gemm{channels}", x, w, element, rounding))
    return cases


def _run(cases: list[Case], kernels: str) -> str:
    return run_cases_bit_exact(cases, kernels, f"test_qcast_division_{kernels}")


@pytest.mark.parametrize("kernels", ["cpu", "gpu"])
@pytest.mark.parametrize("rounding", ["half_away_from_zero", "half_to_even"])
def test_qcast_rounding_boundaries_are_bit_exact(rounding: str, kernels: str) -> None:
    """Every scale's cases in one program (one build and load instead of one per scale: the
    kernels are the same, the scale is a constant of each)."""
    cases = [c for i, s in enumerate(SCALES) for c in _cases(s, rounding, f"scale{i}_")]
    source = _run(cases, kernels)
    assert source.count("fused quant.qcast, quant.dcast") >= 5 * len(SCALES)
