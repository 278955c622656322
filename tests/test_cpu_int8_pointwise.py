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
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cache_support import private_cache_dir
from cpu_support import (
    cases_executable,
    generated_source,
    needs_compiler,
    qtype,
    random_storage,
    reference_then_lower,
)
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import delegate, nn
from irc.targets.cpu import toolchain
from irc.targets.cpu.runtime import CpuRuntime

pytestmark = needs_compiler

rng = np.random.default_rng(1103)


class PwCase:
    """One quantized 1x1 conv2d (NHWC) on an entry argument."""

    def __init__(
        self,
        id: str,
        shape: tuple[int, int, int, int],
        out_channels: int,
        *,
        dtype: str = "int8",
        zp_in: int = 0,
        zp_out: int = 0,
        strides: tuple[int, int] = (1, 1),
        kernel: int = 1,
        per_channel: bool = True,
        act: str = "none",
        out_scale: float = 0.5,
        bias: bool = True,
    ):
        self.id = id
        c = shape[-1]
        self.x = random_storage(rng, shape, dtype)
        # uint8 filters: zero point 128
        self.w = random_storage(rng, (out_channels, kernel, kernel, c), dtype)
        self.in_type = TensorType(qtype(dtype, 0.05, zp_in), list(shape))
        scales = list(rng.uniform(0.002, 0.02, out_channels)) if per_channel else 0.01
        self.w_type = qtype(dtype, scales, 128 if dtype == "uint8" else 0)
        self.b = rng.integers(-20000, 20000, out_channels).astype(np.int32) if bias else None
        self.props = dict(
            activation=act,
            result_elements=qtype(dtype, out_scale, zp_out),
            strides=list(strides),
            pads=[kernel // 2] * 4,
            dilations=[1, 1],
            groups=1,
            layout="NHWC",
        )

    def build(self, ops: list[Operation], x: SSAValue) -> SSAValue:
        w = nn.ConstantOp.from_array(self.w, TensorType(self.w_type, list(self.w.shape)))
        ops.append(w)
        b = None
        if self.b is not None:
            ops.append(bias := nn.ConstantOp.from_array(self.b))
            b = bias.results[0]
        ops.append(conv := nn.Conv2DOp.make(x, w.results[0], b, **self.props))
        return conv.results[0]


CASES = [
    PwCase("k16_oc96", (1, 6, 7, 16), 96, zp_in=-128, zp_out=-128, act="relu6"),
    PwCase("k24_oc144_relu6", (1, 5, 5, 24), 144, zp_in=5, zp_out=-20, act="relu6"),
    PwCase("k3_oc13_tail", (1, 3, 7, 3), 13, zp_in=-7, zp_out=4),
    PwCase("k8_oc16_one_vector", (1, 4, 5, 8), 16, zp_out=-3, act="relu"),
    PwCase("k8_oc16_whole_tiles", (1, 4, 8, 8), 16, zp_in=3, zp_out=10),
    PwCase("k33_oc40", (1, 3, 5, 33), 40, zp_in=127, zp_out=-128, per_channel=False),
    PwCase("k320_oc50", (1, 2, 5, 320), 50, zp_in=-1, zp_out=2, act="relu"),
    PwCase("k24_oc48_relu_below_zp", (1, 3, 3, 24), 48, zp_out=-100, act="relu", out_scale=0.05),
    PwCase("k16_oc24_saturating", (1, 3, 6, 16), 24, zp_in=9, out_scale=0.002),
    PwCase("k16_oc17_saturating_relu6", (1, 3, 4, 16), 17, out_scale=0.002, act="relu6"),
    PwCase("k16_oc33_left_shift", (1, 2, 5, 16), 33, zp_out=3, out_scale=1e-5),
    # rescale multiplier 0.75: no right shift (the int64 shifts of the packed epilogue)
    PwCase("k8_oc40_no_right_shift", (1, 3, 5, 8), 40, per_channel=False, out_scale=0.0005 / 0.75),
    PwCase("k8_oc35_three_pixels", (1, 1, 3, 8), 35, zp_in=-60, zp_out=7),
    PwCase("k24_oc64_stride2", (1, 7, 9, 24), 64, strides=(2, 2), zp_in=11, act="relu6"),
    PwCase("k16_oc31_no_bias", (2, 3, 3, 16), 31, zp_in=-5, bias=False),
    PwCase("u8_k16_oc96", (1, 5, 6, 16), 96, dtype="uint8", zp_in=128, zp_out=100),
    PwCase("u8_k24_oc20_relu6", (1, 3, 5, 24), 20, dtype="uint8", zp_in=0, zp_out=0, act="relu6"),
    PwCase("u8_k33_oc70_extreme_zp", (1, 3, 3, 33), 70, dtype="uint8", zp_in=255, zp_out=255),
    PwCase("u8_k8_oc48_saturating", (1, 2, 9, 8), 48, dtype="uint8", zp_in=3, out_scale=0.003),
    PwCase("k16_oc96_threads", (1, 40, 56, 16), 96, zp_in=-128, zp_out=-128, act="relu6"),
    # 8 pixels x 513 words (and 8 x 9 taps x 115 words) exceed the tile's input buffer.
    PwCase("k2052_oc20_unbuffered", (1, 1, 9, 2052), 20, zp_in=-3, zp_out=5),
    PwCase("k460_oc18_3x3_unbuffered", (1, 3, 4, 460), 18, kernel=3, zp_in=4, act="relu"),
]  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield from private_cache_dir(tmp_path_factory, unset=["IRC_CPU_FUSE_INT8"])


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
    for case, got, want in zip(CASES, actual, expected, strict=True):
        assert got.dtype == want.dtype, case.id
        np.testing.assert_array_equal(got, want, err_msg=case.id)
