"""Compile-time quantization arithmetic shared by passes and targets.

These are the parameter computations TFLite performs when it prepares an int8 kernel
(`QuantizeMultiplier`, `CalculateActivationRangeQuantized`); the run-time arithmetic they
feed is `quant.rescale`, whose single definition is the reference kernel
(`irc.targets.reference.quant`).
"""

from __future__ import annotations

import math

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def round_half_away_from_zero(value: float) -> int:
    """C's `std::round` (TFLite's `TfLiteRound`) on a Python float."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def quantize_multiplier(real: float, *, single_rounding: bool = False) -> tuple[int, int]:
    """TFLite's `QuantizeMultiplier`: real ~= multiplier * 2^(shift - 31).

    Returns (multiplier, shift) with multiplier in [2^30, 2^31) (or 0 for a zero real) and
    shift the power-of-two exponent (positive: left shift). With `single_rounding`, shifts are
    capped at 30 as TFLITE_SINGLE_ROUNDING requires.
    """
    if real < 0:
        raise ValueError(f"multipliers must be non-negative, got {real}")
    if real == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real)  # real = fraction * 2^shift, fraction in [0.5, 1)
    fixed = round_half_away_from_zero(fraction * (1 << 31))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if single_rounding and shift > 30:
        return INT32_MAX, 30
    if shift > 30:
        raise ValueError(f"multiplier {real} is too large for a 32-bit rescale")
    return fixed, shift


def activation_range(
    activation: str, scale: float, zero_point: int, storage_range: tuple[int, int]
) -> tuple[int, int]:
    """TFLite's `CalculateActivationRangeQuantized`: a fused activation in stored integers."""
    low, high = storage_range

    def quantize(real: float) -> int:
        return zero_point + round_half_away_from_zero(real / scale)

    match activation:
        case "none":
            return low, high
        case "relu":
            return max(low, quantize(0.0)), high
        case "relu6":
            return max(low, quantize(0.0)), min(high, quantize(6.0))
        case "relu_n1_to_1":
            return max(low, quantize(-1.0)), min(high, quantize(1.0))
    raise ValueError(f"activation '{activation}' has no quantized clamp range")
