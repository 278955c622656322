"""The CPU target's fused int8 kernels (targets/cpu/qfusion.py, csrc snippet "qfused").

`lower-cpu` runs each lower-quantized chain `int8 x -> i32 - zp -> conv2d / fully_connected
-> quant.rescale [-> clip]` as one kernel: vpdpbusd dot products (u8 x s8, the correction
folded into the bias) or the int16 depthwise kernel, with the requantization in the
epilogue; a quantized add (both inputs rescaled, summed, rescaled) is one elementwise
kernel. Every case must be bit-exact with the reference target with every ISA profile the
host runs (`IRC_CPU_ISA`: VNNI intrinsics, AVX-512 without VNNI, AVX2, the portable C of the
generic profile); the cases cover
odd channel counts (tails of 4, 16 and 32), 1x1 convolutions flattened to one row, strides,
dilations, asymmetric padding, int8 and uint8 storage, zero points, per-tensor and
per-channel scales, a left-shifting rescale (scale ratio > 1) and one without a right shift
(ratio in [0.5, 1)), tiles too deep for the conv kernel's input buffer, narrower fused
activations
(clip), fully connected layers with one or several rows, and adds with scalar tails and
a size split across threads.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from cpu_support import (
    assert_each_equal,
    isa_params,
    load_with_isa,
    lower,
    needs_compiler,
    qtype,
    random_storage,
)
from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from irc.dialects import delegate, nn
from irc.dialects.quant import RESCALE_ROUNDING
from irc.targets.cpu.runtime import CpuRuntime
from irc.targets.reference.target import ReferenceRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache(unset=["IRC_CPU_FUSE_INT8"])]

rng = np.random.default_rng(8)

Add = Callable[[Operation], SSAValue]


def _rounding(op: Operation, single: bool) -> Operation:
    """`op`, requantizing with one rounding (as ONNX models do) when `single`."""
    if single:
        op.attributes[RESCALE_ROUNDING] = StringAttr("single_round")
    return op


class Case:
    """One quantized conv2d / fully_connected on an entry argument."""

    def __init__(
        self,
        id: str,
        shape: tuple[int, ...],
        out_c: int,
        kernel: tuple[int, int] = (1, 1),
        *,
        dtype: str = "int8",
        zp_in: int = 0,
        zp_out: int = 0,
        strides: tuple[int, int] = (1, 1),
        pads: tuple[int, int, int, int] = (0, 0, 0, 0),
        dilations: tuple[int, int] = (1, 1),
        depthwise: bool = False,
        per_channel: bool = True,
        act: str = "none",
        out_scale: float = 0.3,
        bias: bool = True,
        fc: bool = False,
        symmetric: bool = False,
        extreme: bool = False,
        single: bool = False,
    ):
        self.id = id
        self.single = single
        self.x = random_storage(rng, shape, dtype)
        self.in_type = TensorType(qtype(dtype, 0.05, zp_in), list(shape))
        groups = shape[-1] if depthwise else 1
        cg = 1 if depthwise else shape[-1]
        w_shape = (out_c, shape[-1]) if fc else (out_c, *kernel, cg)
        # uint8 filters: zero point 128 (weights - 128)
        self.w = random_storage(rng, w_shape, dtype)
        if symmetric:  # int8 weights in [-127, 127]: depthwise sums tap pairs in int16
            self.w = np.maximum(self.w, -127).astype(dtype)
        if extreme:  # the largest products: -128 inputs, -127 weights
            self.x[...] = -128
            self.w[...] = -127
        scales = list(rng.uniform(0.002, 0.02, out_c)) if per_channel else 0.01
        self.w_type = qtype(dtype, scales, 128 if dtype == "uint8" else 0)
        self.b = rng.integers(-3000, 3000, out_c).astype(np.int32) if bias else None
        self.out_el = qtype(dtype, out_scale, zp_out)
        self.props = dict(activation=act, result_elements=self.out_el)
        if not fc:
            self.props |= dict(
                strides=list(strides),
                pads=list(pads),
                dilations=list(dilations),
                groups=groups,
                layout="NHWC",
            )
        self.fc = fc
        self.types, self.feeds = [self.in_type], [self.x]

    def build(self, add: Add, args: Sequence[SSAValue]) -> SSAValue:
        (x,) = args
        w = add(nn.ConstantOp.from_array(self.w, TensorType(self.w_type, list(self.w.shape))))
        b = None if self.b is None else add(nn.ConstantOp.from_array(self.b))
        op_type = nn.FullyConnectedOp if self.fc else nn.Conv2DOp
        return add(_rounding(op_type.make(x, w, b, **self.props), self.single))


class AddCase:
    """One quantized add of two entry arguments (different scales and zero points)."""

    def __init__(
        self,
        id: str,
        shape: tuple[int, ...],
        dtype: str = "int8",
        act: str = "none",
        single: bool = False,
    ):
        self.id = id
        self.single = single
        zps = (-3, 10, 2) if dtype == "int8" else (120, 131, 128)
        self.types = [
            TensorType(qtype(dtype, scale, zp), list(shape))
            for scale, zp in ((0.05, zps[0]), (0.08, zps[1]))
        ]
        self.feeds = [random_storage(rng, shape, dtype), random_storage(rng, shape, dtype)]
        self.out_el = qtype(dtype, 0.07, zps[2])
        self.act = act

    def build(self, add: Add, args: Sequence[SSAValue]) -> SSAValue:
        op = nn.AddOp.make(*args, activation=self.act, result_elements=self.out_el)
        return add(_rounding(op, self.single))


CASES: list[Case | AddCase] = [
    Case("pw_flat_tail17", (1, 5, 7, 16), 17, zp_in=-3, zp_out=5),
    Case("pw_c33_oc40", (2, 3, 5, 33), 40, zp_in=11, act="relu6"),
    Case("pw_oc5_per_tensor", (1, 4, 4, 8), 5, per_channel=False),
    Case("pw_stride2", (1, 9, 7, 12), 24, strides=(2, 2), zp_in=-128, zp_out=-128),
    Case("pw_uint8", (1, 6, 5, 20), 36, dtype="uint8", zp_in=128, zp_out=120),
    Case("pw_left_shift", (1, 3, 3, 8), 16, out_scale=1e-5, zp_out=3),
    # scale ratio in [0.5, 1): no right shift (S = 31, AVX2's 64-bit shift path)
    Case("pw_no_right_shift", (1, 4, 6, 16), 20, per_channel=False, out_scale=7e-4),
    Case("dw_no_right_shift", (1, 5, 6, 16), 16, (3, 3), depthwise=True, per_channel=False,
         pads=(1, 1, 1, 1), out_scale=7e-4, zp_out=-20),
    Case("conv3x3_c3", (1, 11, 9, 3), 32, (3, 3), strides=(2, 2), pads=(0, 0, 1, 1)),
    # 3 channels, 11 output columns: a full 8-pixel tile gathered at a fixed stride, then a tail
    Case("conv3x3_c3_wide", (1, 6, 21, 3), 16, (3, 3), strides=(1, 2), pads=(1, 1, 1, 1),
         zp_in=-9, act="relu6"),
    Case("conv3x3_same", (1, 7, 6, 10), 20, (3, 3), pads=(1, 1, 1, 1), zp_in=7, zp_out=-4),
    # 3 channels with kernel rows of 5 words, and dilated (taps 2 words apart): the other
    # gathers of AVX2's widened tile buffer (irc_qconv_fill)
    Case("conv5x5_c3", (1, 9, 12, 3), 8, (5, 5), pads=(2, 2, 2, 2), zp_in=6),
    Case("conv3x3_c3_dilated", (1, 9, 10, 3), 16, (3, 3), dilations=(2, 2), zp_out=-7),
    # 15 pixels: a tail tile of 7 whose sums go through the generic epilogue (left shift)
    Case("pw_left_shift_tail7", (1, 1, 15, 24), 20, out_scale=1e-5, zp_in=-2),
    Case("conv_dilated", (2, 9, 10, 5), 9, (3, 2), pads=(2, 0, 1, 1), dilations=(2, 1)),
    Case("conv_uint8_nobias", (1, 6, 6, 4), 7, (2, 2), dtype="uint8", zp_in=200, bias=False),
    Case("dw3x3_c24", (1, 10, 9, 24), 24, (3, 3), depthwise=True, pads=(1, 1, 1, 1), zp_in=-5),
    Case("dw3x3_s2_c32", (1, 9, 9, 32), 32, (3, 3), depthwise=True, strides=(2, 2), act="relu6"),
    Case("dw5x5_dil_c20", (1, 8, 11, 20), 20, (5, 3), depthwise=True, pads=(2, 1, 2, 1)),
    Case("dw3x3_uint8", (1, 6, 7, 16), 16, (3, 3), depthwise=True, pads=(1, 0, 1, 2),
         dtype="uint8", zp_in=130, zp_out=100),
    Case("dw3x3_pairs", (1, 7, 8, 48), 48, (3, 3), depthwise=True, pads=(1, 1, 1, 1),
         zp_in=-7, symmetric=True),
    Case("dw5x3_pairs_extreme", (1, 6, 6, 16), 16, (5, 3), depthwise=True, extreme=True,
         out_scale=4.0, zp_in=5),
    Case("fc_one_row", (1, 70), 33, zp_in=-9, fc=True),
    # tiles deeper than the kernel's input buffer: the unbuffered loop (AVX2 runs it on
    # 8-lane slices, the generic profile on 4-lane ones)
    Case("pw_unbuffered_k2052", (1, 1, 9, 2052), 20, zp_in=-3, zp_out=5),
    Case("conv3x3_unbuffered_k460", (1, 3, 4, 460), 18, (3, 3), zp_in=4, act="relu"),
    Case("fc_rows", (9, 24), 10, zp_in=4, fc=True, bias=False, act="relu"),
    AddCase("add_odd", (3, 5, 7)),
    AddCase("add_relu6_threads", (1, 64, 64, 20), act="relu6"),
    AddCase("add_uint8", (2, 9, 16), dtype="uint8", act="relu"),
    # single rounding (ONNX): factors below 1 take mode 0's vector epilogues (K1 = K2)
    Case("pw_single", (1, 5, 7, 16), 17, zp_in=-3, zp_out=5, single=True),
    Case("conv3x3_single", (1, 7, 6, 10), 40, (3, 3), pads=(1, 1, 1, 1), zp_in=7,
         act="relu6", single=True),
    Case("conv3x3_c3_single", (1, 6, 21, 3), 16, (3, 3), strides=(1, 2), pads=(1, 1, 1, 1),
         zp_in=-9, single=True),
    Case("pw_single_no_right_shift", (1, 4, 6, 16), 20, per_channel=False, out_scale=7e-4,
         single=True),
    Case("pw_single_left_shift", (1, 3, 3, 8), 16, out_scale=1e-5, zp_out=3, single=True),
    Case("pw_single_uint8", (1, 6, 5, 20), 36, dtype="uint8", zp_in=128, zp_out=120,
         single=True),
    Case("dw3x3_single", (1, 10, 9, 24), 24, (3, 3), depthwise=True, pads=(1, 1, 1, 1),
         zp_in=-5, single=True),
    Case("dw3x3_s2_single", (1, 9, 9, 32), 32, (3, 3), depthwise=True, strides=(2, 2),
         act="relu6", single=True),
    Case("dw3x3_single_no_right_shift", (1, 5, 6, 16), 16, (3, 3), depthwise=True,
         per_channel=False, pads=(1, 1, 1, 1), out_scale=7e-4, zp_out=-20, single=True),
    Case("dw5x3_single_extreme", (1, 6, 6, 16), 16, (5, 3), depthwise=True, extreme=True,
         out_scale=4.0, zp_in=5, single=True),
    Case("fc_single", (1, 70), 33, zp_in=-9, fc=True, single=True),
    AddCase("add_single", (3, 5, 7), single=True),
    AddCase("add_single_relu6_threads", (1, 64, 64, 20), act="relu6", single=True),
    AddCase("add_single_uint8", (2, 9, 16), dtype="uint8", act="relu", single=True),
]  # fmt: skip


def _executable() -> tuple[ModuleOp, delegate.ExecutableOp, list[np.ndarray]]:
    types = [t for c in CASES for t in c.types]
    block = Block(arg_types=types)
    args = iter(block.args)
    results: list[SSAValue] = []
    for case in CASES:
        ops: list[Operation] = []

        def add(op: Operation, ops: list[Operation] = ops) -> SSAValue:
            ops.append(op)
            return op.results[0]

        results.append(case.build(add, [next(args) for _ in case.types]))
        block.add_ops(ops)
    block.add_op(ReturnOp(*results))
    func = FuncOp("entry", FunctionType.from_lists(types, [r.type for r in results]), Region(block))
    executable = delegate.ExecutableOp("test_cpu_qfused", "cpu", [func])
    module = ModuleOp([executable])
    module.verify()
    return module, executable, [f for c in CASES for f in c.feeds]


@pytest.fixture(scope="module")
def lowered() -> tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]]:
    module, executable, feed = _executable()
    expected = ReferenceRuntime().load(executable).execute("entry", feed)
    lower(module)
    return executable, feed, list(expected)


def _source(executable: delegate.ExecutableOp) -> str:
    (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
    return source


def test_every_chain_is_fused(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]],
) -> None:
    source = _source(lowered[0])
    assert "irc_conv2d_i32(" not in source
    assert "irc_depthwise_i32(" not in source
    assert "quant.rescale" not in source  # every rescale runs in a kernel's epilogue
    assert source.count("irc_qconv_m") >= 12
    assert source.count("irc_qdepthwise") >= 4
    assert source.count("irc_qadd_s8(") == 4
    assert source.count("irc_qadd_u8(") == 2


@pytest.mark.parametrize("name", isa_params(("avx512vnni", "avx512", "avx2", "generic")))
def test_fused_bit_exact(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]], name: str
) -> None:
    executable, feed, expected = lowered
    loaded = load_with_isa(executable, name)
    vnni = ctypes.CDLL(str(loaded.library.path)).irc_have_vnni()
    assert vnni == (name == "avx512vnni")  # vpdpbusd exactly where the profile has it
    actual = loaded.execute("entry", feed)
    assert_each_equal(CASES, actual, expected)


def test_fusion_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_INT8", "0")
    module, executable, _ = _executable()
    lower(module)
    source = _source(executable)
    assert "irc_qconv_m" not in source
    assert "irc_conv2d_i32(" in source


def test_thread_count(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    executable, feed, expected = lowered
    monkeypatch.setenv("IRC_CPU_THREADS", "1")
    loaded = CpuRuntime().load(executable)
    assert loaded.threads == 1
    one = loaded.execute("entry", feed)
    loaded.set_threads(2)
    assert loaded.threads == 2  # the library's pool, with or without OpenMP
    two = loaded.execute("entry", feed)
    for a, b, want in zip(one, two, expected, strict=True):
        np.testing.assert_array_equal(a, want)
        np.testing.assert_array_equal(b, want)
