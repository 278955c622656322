"""The CPU target's fused int8 depthwise kernels (csrc IRC_QDWV and its int16 fallback).

A lower-quantized depthwise chain `int8 x -> i32 - zp -> conv2d{groups=C} -> quant.rescale
[-> clip]` runs as one kernel: the input columns of an output row are gathered into quads of
4 kernel rows and each output pixel is vpdpbusd dot products with the packed weights, in
chunks of 64 pixels; a kernel too wide for the column buffer takes the int16 kernel. Every
case must be bit-exact with the reference target, once with the AVX-512 intrinsics, once
with the AVX2 profile (`IRC_CPU_ISA=avx2`), once with the portable C path
(`IRC_CPU_PORTABLE=1`) and once compiled without AVX512-VBMI
(another byte interleave), with one and two threads. The cases cover
channel counts that are not multiples of 16 (the masked tail block), widths that are not
multiples of the pixel chunk (several chunks per row, a short last one), strides 1 and 2
(also mixed), dilations, every padding side, kernel heights below, at and above one quad of
4 rows (1, 2, 3, 5, 9), int8 and uint8 storage with extreme zero points, the largest
products (-128 inputs and -128 weights), per-tensor and per-channel scales, a left-shifting
rescale, a fused clip, batches, and the int16 fallback.
"""

from __future__ import annotations

import ctypes
import dataclasses
from typing import Any

import numpy as np
import pytest
from cpu_support import (
    RUNNABLE_ISAS,
    QConvCase,
    assert_each_equal,
    cases_executable,
    generated_source,
    needs_compiler,
    reference_then_lower,
    with_kernels,
)

from irc.dialects import delegate
from irc.targets.cpu import csrc, toolchain
from irc.targets.cpu.runtime import CpuRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache(unset=["IRC_CPU_FUSE_INT8"])]

rng = np.random.default_rng(23)


def dw_case(
    id: str, shape: tuple[int, int, int, int], kernel: tuple[int, int] = (3, 3), **options: Any
) -> QConvCase:
    """One quantized depthwise conv2d (NHWC, groups = channels) on an entry argument."""
    options.setdefault("out_scale", 0.3)
    return QConvCase(id, rng, shape, shape[-1], kernel, depthwise=True, bias_bound=3000, **options)


CASES = [
    dw_case("c5_same", (1, 7, 9, 5), pads=(1, 1, 1, 1), zp_in=-5, zp_out=3),
    dw_case("c24_same", (1, 6, 10, 24), pads=(1, 1, 1, 1), zp_in=7),
    dw_case("c40_wide_chunks", (1, 4, 133, 40), pads=(1, 1, 1, 1), zp_in=-128, act="relu6"),
    dw_case("c72_s2_chunks", (1, 5, 141, 72), strides=(2, 2), pads=(0, 0, 1, 1), zp_in=127),
    dw_case("c16_s2_same", (2, 9, 9, 16), strides=(2, 2), pads=(1, 1, 1, 1), zp_out=-128),
    dw_case("c33_s21", (1, 8, 11, 33), strides=(2, 1), pads=(0, 2, 1, 0)),
    dw_case("c20_5x3_dil", (1, 11, 12, 20), (5, 3), pads=(2, 1, 2, 1), dilations=(2, 2)),
    dw_case("c17_9x3", (1, 12, 6, 17), (9, 3), pads=(4, 1, 4, 1), zp_in=9),
    dw_case("c48_2x4", (1, 5, 8, 48), (2, 4), pads=(1, 2, 0, 1), dilations=(1, 2)),
    dw_case("c8_1x5_s2", (1, 3, 15, 8), (1, 5), strides=(1, 2), pads=(0, 2, 0, 2)),
    dw_case("c64_pads_only_bottom_right", (1, 6, 6, 64), pads=(0, 0, 2, 2), per_channel=False),
    dw_case("c19_uint8", (1, 6, 7, 19), pads=(1, 0, 1, 2), dtype="uint8", zp_in=255, zp_out=100),
    dw_case("c32_uint8_s2", (1, 10, 70, 32), strides=(2, 2), dtype="uint8", zp_in=0, act="relu"),
    dw_case("c16_extreme", (1, 5, 5, 16), pads=(1, 1, 1, 1), out_scale=40.0, zp_in=5),
    dw_case("c21_uint8_extreme", (1, 4, 6, 21), dtype="uint8", out_scale=40.0, zp_in=3),
    dw_case("c12_left_shift", (1, 5, 6, 12), pads=(1, 1, 1, 1), out_scale=1e-5, zp_out=3),
    dw_case("c26_no_bias", (1, 6, 5, 26), (3, 3), pads=(2, 2, 2, 2), bias=False),
    # (63 * 1 + 2 * 490 + 1) columns of 64 bytes overflow the stack budget: the int16 kernel.
    dw_case("c5_fallback", (1, 2, 1000, 5), (1, 3), dilations=(1, 490), zp_in=-3),
    dw_case("c48_threads", (1, 48, 56, 48), pads=(1, 1, 1, 1), zp_in=-2),
]  # fmt: skip


@pytest.fixture(scope="module")
def lowered() -> tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]]:
    return reference_then_lower(*cases_executable("test_cpu_int8_depthwise", CASES))


def test_kernels_chosen(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]],
) -> None:
    source = generated_source(lowered[0])
    assert "irc_depthwise_i32(" not in source
    assert "quant.rescale" not in source
    assert source.count("irc_qdepthwise_quads3x3_m0(") == 13  # the 3x3 cases in mode 0
    assert source.count("irc_qdepthwise_quads3x3(") == 1  # the left shift: mode 2
    assert source.count("irc_qdepthwise_quads_m0(") == 4  # 5x3, 9x3, 2x4, 1x5
    assert source.count("irc_qdepthwise_s8_m0(") == 1  # the fallback
    # The lowering sizes the column buffer with the kernel's chunk of pixels.
    assert f"#define IRC_DWQ_CHUNK {csrc.DEPTHWISE_QUADS_CHUNK}\n" in with_kernels(source)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("variant", ["intrinsics", "no_vbmi", "avx2", "portable"])
def test_depthwise_bit_exact(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]],
    variant: str,
    threads: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    executable, feed, expected = lowered
    if variant == "avx2" and variant not in RUNNABLE_ISAS:
        pytest.skip("this host does not run AVX2")
    if variant == "avx2":
        monkeypatch.setenv(toolchain.ISA_ENV, "avx2")
    elif variant == "portable":
        monkeypatch.setenv(toolchain.PORTABLE_ENV, "1")
    elif variant == "no_vbmi":  # AVX512-VNNI without VBMI (Cascade Lake): vpermd + vpshufb
        probe = toolchain.probe().toolchain
        if probe is None or "-march=native" not in probe.flags:
            pytest.skip("the compiler does not target this CPU's AVX-512 extensions")
        build = toolchain.build

        def build_without_vbmi(source: str, chain: toolchain.Toolchain) -> toolchain.Library:
            flags = (*chain.flags, "-mno-avx512vbmi")
            return build(source, dataclasses.replace(chain, flags=flags))

        monkeypatch.setattr(toolchain, "build", build_without_vbmi)
    loaded = CpuRuntime().load(executable)
    if variant in ("avx2", "portable"):
        assert ctypes.CDLL(str(loaded.library.path)).irc_have_vnni() == 0
    loaded.set_threads(threads)
    actual = loaded.execute("entry", feed)
    assert_each_equal(CASES, actual, expected)
