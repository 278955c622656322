"""A fused per-tensor `quant.qcast` -> `quant.dcast` pair (the 8-bit round trip `opencl-fuse`
folds into a kernel's epilogue) as expressions of `v`, bit for bit the two casts.

The pair's value is `scale * clamp(round(v / scale))` with the clamp `[low - zp, high - zp]`
(the zero point added by the qcast is subtracted again by the dcast: integers, exact), so the
round trip spends no addition on `zp`. Where the clamp's low bound is >= 0 (a ReLU-like
tensor: `zp` at the storage minimum) NaN and the low bound are one comparison and half away
from zero is half up. A clamping activation just before the qcast (`relu`, `relu6`,
`relu_n1_to_1`, `nn.relu` / `nn.relu6` / `nn.clip`) that the clamp subsumes — its bounds
already quantize to the storage limits — is dropped (`activation_subsumed`).

Strict builds only (`ROUNDING_MAGIC` needs them); under fast math epilogue.py keeps the
separate casts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation

from irc.dialects import nn, quant
from irc.dialects.nn.base import get_float, get_str
from irc.dialects.quant import UniformQuantizedType
from irc.targets.opencl.lowerings.helpers import _f

ROUNDING_MAGIC = "12582912.0f"
"""1.5 * 2**23: `(v + M) - M` rounds a float with |v| < 2**22 to an integer, ties to even, in
the default rounding mode — exactly `rint(v)`, with two additions instead of a call (PoCL
does not inline builtins on `float16`: every call spills the register tile). Valid in a
strict build only: `-cl-fast-relaxed-math` lets the compiler fold it back to `v`."""

ACTIVATION_BOUNDS: dict[str, tuple[float, float]] = {
    "relu": (0.0, math.inf),
    "relu6": (0.0, 6.0),
    "relu_n1_to_1": (-1.0, 1.0),
}
"""The fused activations that are clamps (NaN passes through them), as (low, high)."""


def _element(qcast: quant.QCastOp) -> UniformQuantizedType:
    element = qcast.output.type.element_type
    assert isinstance(element, UniformQuantizedType)
    return element


def _clamp(qcast: quant.QCastOp) -> tuple[int, int]:
    """The qcast's saturation bounds before the zero point: `(low - zp, high - zp)`."""
    element = _element(qcast)
    zp = int(element.zero_point_values[0])
    low, high = element.storage_range
    return low - zp, high - zp


def is_round_trip(epilogue: Sequence[Operation], index: int) -> bool:
    """Whether `epilogue[index]` is a per-tensor qcast whose value only the next op, a dcast,
    reads back."""
    if index + 1 >= len(epilogue):
        return False
    qcast, dcast = epilogue[index], epilogue[index + 1]
    if not isinstance(qcast, quant.QCastOp) or not isinstance(dcast, quant.DCastOp):
        return False
    if dcast.input is not qcast.output or not qcast.output.has_one_use():
        return False
    element = _element(qcast)
    return len(element.scale_values) == 1 and len(element.zero_point_values) == 1


def round_trip_exprs(qcast: quant.QCastOp, last: bool) -> list[str]:
    """The qcast -> dcast pair as expressions of `v`: the float32 division (exact where the
    build divides correctly rounded), the clamp (NaN to 0), the rounding, then the scale. The
    final `+ 0.0f` (unless the pair ends the epilogue) keeps `-cl-mad-enable` from contracting
    the product with a following residual add (epilogue.py's `dcast_expr`); the rounded value
    is never -0.0, so it changes nothing."""
    element = _element(qcast)
    scale = _f(float(np.float32(element.scale_values[0])))
    low, high = _clamp(qcast)
    lo, hi = _f(low), _f(high)
    even = f"((v + {ROUNDING_MAGIC}) - {ROUNDING_MAGIC})"
    if low == 0:
        saturate = f"(v >= 0.0f ? (v > {hi} ? {hi} : v) : 0.0f)"
    else:
        saturate = f"(v != v ? 0.0f : v < {lo} ? {lo} : v > {hi} ? {hi} : v)"
    if qcast.rounding.data == "half_to_even":
        rounding = even
    elif low >= 0:  # v >= 0 here: a tie rounded down by `even` goes up
        rounding = f"(v - {even} == 0.5f ? {even} + 1.0f : {even})"
    else:
        rounding = (
            f"(v - {even} == 0.5f || v - {even} == -0.5f ? (v < 0.0f ? v - 0.5f : v + 0.5f)"
            f" : {even})"
        )
    product = f"({scale} * v)" if last else f"({scale} * v + 0.0f)"
    return [f"v / {scale}", saturate, rounding, product]


def quantized_index(qcast: quant.QCastOp, x: float) -> int:
    """The clamped integer (before the zero point) that the fused qcast gives `x`: the
    float32 division, the qcast's rounding, NaN to 0, the clamp."""
    element = _element(qcast)
    with np.errstate(all="ignore"):
        q = float(np.float32(x) / np.float32(element.scale_values[0]))
    low, high = _clamp(qcast)
    if math.isnan(q):
        return min(max(0, low), high)
    if math.isinf(q):
        return high if q > 0 else low
    if qcast.rounding.data == "half_to_even":
        r = round(q)  # Python rounds ties to even
    else:
        r = math.copysign(math.floor(abs(q) + 0.5), q) if abs(q) % 1 == 0.5 else round(q)
    return min(max(int(r), low), high)


def activation_subsumed(bounds: tuple[float, float], qcast: quant.QCastOp) -> bool:
    """Whether a clamp to `bounds` (NaN passing through) just before a round trip through
    `qcast` changes no result: below the low bound the clamped value quantizes to the storage
    minimum, as every smaller value does (the qcast is monotonic), and above the high bound
    likewise to the maximum."""
    low, high = _clamp(qcast)
    a, b = bounds
    return (a == -math.inf or quantized_index(qcast, a) == low) and (
        b == math.inf or quantized_index(qcast, b) == high
    )


def unary_bounds(op: Operation) -> tuple[float, float] | None:
    """The (low, high) of a unary epilogue op that is a clamp, else None."""
    if isinstance(op, nn.ReluOp):
        return ACTIVATION_BOUNDS["relu"]
    if isinstance(op, nn.Relu6Op):
        return ACTIVATION_BOUNDS["relu6"]
    if isinstance(op, nn.ClipOp):
        props = op.all_properties()
        low, high = get_float(props, "min"), get_float(props, "max")
        bounds = (-math.inf if low is None else low, math.inf if high is None else high)
        return bounds if bounds[0] <= bounds[1] else None  # NaN bounds too
    return None


def fused_bounds(props: dict) -> tuple[float, float] | None:
    """The (low, high) of an op's fused `activation` attribute when it is a clamp."""
    if props.get("activation") is None:
        return None
    return ACTIVATION_BOUNDS.get(get_str(props, "activation"))
