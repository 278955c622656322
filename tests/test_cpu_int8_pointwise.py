"""The CPU target's fused int8 1x1 convolutions (csrc IRC_QCONV and its packed epilogue).

A lower-quantized 1x1 chain `int8 x -> i32 - zp -> conv2d -> quant.rescale [-> clip]` runs as
one vpdpbusd GEMM whose mode-0 epilogue requantizes four vectors at a time (the int64 halves
merged with vpermt2d, saturating packs to bytes, the clamp on bytes, masked stores) and drops
the rounding select when the clamp's lower bound is at or above the zero point (relu-like).
Every case must be bit-exact with the reference target, with the AVX-512 intrinsics and with
the portable C path (`IRC_CPU_PORTABLE=1`), on one and two threads. The cases cover input
depths K in {3, 8, 16, 24, 33, 320} (K % 4 != 0: the padded copy), output channel counts that
are not multiples of 16 or 32 (masked channel tails, a skipped half block), 16 channels (one
vector per tile), pixel counts that are not multiples of the 8-pixel tile (a repeated last
pixel), fewer than 4 pixels (the one-pixel tile), int8 and uint8 storage (uint8 results up to
255: the unsigned packs), zero points at both ends, per-tensor and per-channel scales, relu /
relu6 clamps (below, at and above the zero point), results that saturate both ways, a
rescale without right shift (int64 shifts), a left-shifting rescale (the generic epilogue), a
strided 1x1 (not flattened to one row) and tiles whose input does not fit the kernel's
per-tile buffer of XORed input words (a very deep 1x1 and a deep 3x3: the unbuffered loop).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from cpu_support import (
    QConvCase,
    assert_each_equal,
    cases_executable,
    generated_source,
    needs_compiler,
    reference_then_lower,
)

from irc.dialects import delegate
from irc.targets.cpu import toolchain
from irc.targets.cpu.runtime import CpuRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache(unset=["IRC_CPU_FUSE_INT8"])]

rng = np.random.default_rng(1103)


def pw_case(
    id: str,
    shape: tuple[int, int, int, int],
    out_channels: int,
    *,
    kernel: int = 1,
    **options: Any,
) -> QConvCase:
    """One quantized conv2d (NHWC, `kernel` x `kernel`, "same" pads) on an entry argument."""
    pads = [kernel // 2] * 4
    return QConvCase(id, rng, shape, out_channels, (kernel, kernel), pads=pads, **options)


CASES = [
    pw_case("k16_oc96", (1, 6, 7, 16), 96, zp_in=-128, zp_out=-128, act="relu6"),
    pw_case("k24_oc144_relu6", (1, 5, 5, 24), 144, zp_in=5, zp_out=-20, act="relu6"),
    pw_case("k3_oc13_tail", (1, 3, 7, 3), 13, zp_in=-7, zp_out=4),
    pw_case("k8_oc16_one_vector", (1, 4, 5, 8), 16, zp_out=-3, act="relu"),
    pw_case("k8_oc16_whole_tiles", (1, 4, 8, 8), 16, zp_in=3, zp_out=10),
    pw_case("k33_oc40", (1, 3, 5, 33), 40, zp_in=127, zp_out=-128, per_channel=False),
    pw_case("k320_oc50", (1, 2, 5, 320), 50, zp_in=-1, zp_out=2, act="relu"),
    pw_case("k24_oc48_relu_below_zp", (1, 3, 3, 24), 48, zp_out=-100, act="relu", out_scale=0.05),
    pw_case("k16_oc24_saturating", (1, 3, 6, 16), 24, zp_in=9, out_scale=0.002),
    pw_case("k16_oc17_saturating_relu6", (1, 3, 4, 16), 17, out_scale=0.002, act="relu6"),
    pw_case("k16_oc33_left_shift", (1, 2, 5, 16), 33, zp_out=3, out_scale=1e-5),
    # rescale multiplier 0.75: no right shift (the int64 shifts of the packed epilogue)
    pw_case("k8_oc40_no_right_shift", (1, 3, 5, 8), 40, per_channel=False, out_scale=0.0005 / 0.75),
    pw_case("k8_oc35_three_pixels", (1, 1, 3, 8), 35, zp_in=-60, zp_out=7),
    pw_case("k24_oc64_stride2", (1, 7, 9, 24), 64, strides=(2, 2), zp_in=11, act="relu6"),
    pw_case("k16_oc31_no_bias", (2, 3, 3, 16), 31, zp_in=-5, bias=False),
    pw_case("u8_k16_oc96", (1, 5, 6, 16), 96, dtype="uint8", zp_in=128, zp_out=100),
    pw_case("u8_k24_oc20_relu6", (1, 3, 5, 24), 20, dtype="uint8", zp_in=0, zp_out=0, act="relu6"),
    pw_case("u8_k33_oc70_extreme_zp", (1, 3, 3, 33), 70, dtype="uint8", zp_in=255, zp_out=255),
    pw_case("u8_k8_oc48_saturating", (1, 2, 9, 8), 48, dtype="uint8", zp_in=3, out_scale=0.003),
    pw_case("k16_oc96_threads", (1, 40, 56, 16), 96, zp_in=-128, zp_out=-128, act="relu6"),
    # 8 pixels x 513 words (and 8 x 9 taps x 115 words) exceed the tile's input buffer.
    pw_case("k2052_oc20_unbuffered", (1, 1, 9, 2052), 20, zp_in=-3, zp_out=5),
    pw_case("k460_oc18_3x3_unbuffered", (1, 3, 4, 460), 18, kernel=3, zp_in=4, act="relu"),
]  # fmt: skip


@pytest.fixture(scope="module")
def lowered() -> tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]]:
    return reference_then_lower(*cases_executable("test_cpu_int8_pointwise", CASES))


def test_kernels_chosen(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]],
) -> None:
    source = generated_source(lowered[0])
    assert "irc_conv2d_i32(" not in source
    assert "quant.rescale" not in source
    assert source.count("irc_qconv_m8n2_m0(") == 17  # mode 0, more than 16 channels
    assert source.count("irc_qconv_m8n1_m0(") == 3  # 16 or fewer channels
    assert source.count("irc_qconv_m1n2_m0(") == 1  # three pixels: the one-pixel tile
    assert source.count("irc_qconv_m8n2(") == 1  # the left shift: the generic epilogue


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("portable", [False, True], ids=["intrinsics", "portable"])
def test_pointwise_bit_exact(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]],
    portable: bool,
    threads: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    executable, feed, expected = lowered
    if portable:
        monkeypatch.setenv(toolchain.PORTABLE_ENV, "1")
    loaded = CpuRuntime().load(executable)
    if portable:
        assert ctypes.CDLL(str(loaded.library.path)).irc_have_vnni() == 0
    loaded.set_threads(threads)
    actual = loaded.execute("entry", feed)
    assert_each_equal(CASES, actual, expected)
