"""Regression tests of findings of the differential fuzzer (`fuzz/differential.py`).

Each graph is the fuzzer's minimised finding, compiled for the target that failed and
compared with the reference by the fuzzer's own rule (docs/semantics.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from cpu_support import needs_compiler
from opencl_support import needs_device
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.passes import PassPipeline

import irc
from irc.context import get_all_passes, make_context
from irc.dialects import nn
from irc.targets.opencl.target import OpenCLTarget

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.differential import compare

pytestmark = pytest.mark.private_cache

# seed 200290 (--max-ops 8, cpu): convert-layout hoisted the NHWC input transpose of the
# conv2d above a broadcast_to from rank 3 and built a rank-4 transpose of the rank-3
# argument (IndexError in `transposed_type`).
BROADCAST_BEFORE_CONV = """
!qx = !quant.uniform<i8:f32, 0.032543256878852844:-78>
!qw = !quant.uniform<i8:f32, 0.03433513641357422>
!qb = !quant.uniform<i32:f32, 0.0011173771927133203>
!qy = !quant.uniform<i8:f32, 0.11378547549247742:69>
func.func @main(%x: tensor<1x3x1xf32>) -> tensor<2x2x3x3x!qy> {
  %b = nn.broadcast_to %x shape = [2, 2, 3, 3] : tensor<1x3x1xf32> -> tensor<2x2x3x3xf32>
  %q = quant.qcast %b : tensor<2x2x3x3xf32> to tensor<2x2x3x3x!qx>
  %w = nn.constant dense<[[[[-49]], [[89]]], [[[4]], [[34]]]]>
      : tensor<2x2x1x1xi8> -> tensor<2x2x1x1x!qw>
  %c = nn.constant dense<[-14, -222]> : tensor<2xi32> -> tensor<2x!qb>
  %y = nn.conv2d %q, %w, %c layout = "NCHW"
      : tensor<2x2x3x3x!qx>, tensor<2x2x1x1x!qw>, tensor<2x!qb> -> tensor<2x2x3x3x!qy>
  func.return %y : tensor<2x2x3x3x!qy>
}
"""


def _run(text: str, target: str, feed: dict[str, np.ndarray]) -> tuple[irc.CompiledModel, dict]:
    compiled = irc.compile(irc.parse_module(text), targets=[target])
    return compiled, compiled.run(feed)


@needs_compiler
def test_broadcast_to_before_converted_conv_on_cpu() -> None:
    feed = {"arg0": np.array([[[-2.0], [0.5], [1.75]]], np.float32)}
    _, expected = _run(BROADCAST_BEFORE_CONV, "reference", feed)
    compiled, got = _run(BROADCAST_BEFORE_CONV, "cpu", feed)
    assert not compiled.refusals, [r.describe() for r in compiled.refusals]
    for name, ref in expected.items():
        assert compare(np.asarray(ref), np.asarray(got[name])) is None, name


# An NCHW mask computed after a conv2d (OpenCL converts the conv to NHWC, so the compare
# runs on NHWC data and its i1 result gets the transpose back), and a [C, 1, 1] mask argument
# of a select between two NHWC convs (reshaped to [1, 1, C]): convert-layout inserted an i1
# transpose / reshape in the OpenCL region which supports() refused only at lowering, so
# the whole region fell back to the host.
MASK_AFTER_CONV = """
func.func @main(%x: tensor<1x3x4x4xf32>, %y: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %z = nn.constant dense<0.0> : tensor<1xf32> -> tensor<1xf32>
  %w = nn.constant dense<0.25> : tensor<3x3x1x1xf32> -> tensor<3x3x1x1xf32>
  %c = nn.conv2d %x, %w layout = "NCHW"
      : tensor<1x3x4x4xf32>, tensor<3x3x1x1xf32> -> tensor<1x3x4x4xf32>
  %m = nn.compare %c, %z kind = "gt" : tensor<1x3x4x4xf32>, tensor<1xf32> -> tensor<1x3x4x4xi1>
  %s = nn.select %m, %x, %y
      : tensor<1x3x4x4xi1>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
  func.return %s : tensor<1x3x4x4xf32>
}
"""
CHANNEL_MASK = """
func.func @main(%x: tensor<1x3x4x4xf32>, %m: tensor<3x1x1xi1>) -> tensor<1x3x4x4xf32> {
  %w = nn.constant dense<0.25> : tensor<3x3x1x1xf32> -> tensor<3x3x1x1xf32>
  %v = nn.constant dense<-0.5> : tensor<3x3x1x1xf32> -> tensor<3x3x1x1xf32>
  %a = nn.conv2d %x, %w layout = "NCHW"
      : tensor<1x3x4x4xf32>, tensor<3x3x1x1xf32> -> tensor<1x3x4x4xf32>
  %b = nn.conv2d %x, %v layout = "NCHW"
      : tensor<1x3x4x4xf32>, tensor<3x3x1x1xf32> -> tensor<1x3x4x4xf32>
  %s = nn.select %m, %a, %b
      : tensor<3x1x1xi1>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
  func.return %s : tensor<1x3x4x4xf32>
}
"""
MASK_CASES = {"mask_after_conv": MASK_AFTER_CONV, "channel_mask": CHANNEL_MASK}


def _mask_feed(text: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    if "%m: tensor<3x1x1xi1>" in text:
        return {"arg0": x, "arg1": np.array([True, False, True]).reshape(3, 1, 1)}
    return {"arg0": x, "arg1": rng.standard_normal((1, 3, 4, 4)).astype(np.float32)}


@pytest.mark.parametrize("text", MASK_CASES.values(), ids=MASK_CASES.keys())
def test_opencl_accepts_the_mask_movement_convert_layout_inserts(text: str) -> None:
    """The i1 transpose / reshape that `convert-layout{to=NHWC}` leaves is an op the OpenCL
    target supports (and the graphs do leave one)."""
    module = irc.parse_module(text)
    spec = "convert-layout{to=NHWC},canonicalize"
    PassPipeline.parse_spec(get_all_passes(), spec).apply(make_context(), module)
    masks = [
        op
        for op in module.walk()
        if isinstance(op, (nn.TransposeOp, nn.ReshapeOp))
        and isinstance(t := op.results[0].type, TensorType)
        and isinstance(t.element_type, IntegerType)
    ]
    assert masks, str(module)
    for op in masks:
        assert OpenCLTarget().supports(op), OpenCLTarget().supports(op).reason


@needs_device
@pytest.mark.parametrize("text", MASK_CASES.values(), ids=MASK_CASES.keys())
def test_mask_movement_runs_on_opencl(text: str) -> None:
    feed = _mask_feed(text)
    _, expected = _run(text, "reference", feed)
    compiled, got = _run(text, "opencl", feed)
    assert not compiled.refusals, [r.describe() for r in compiled.refusals]
    assert "host: 0 ops" in compiled.summary, compiled.summary
    for name, ref in expected.items():
        assert compare(np.asarray(ref), np.asarray(got[name])) is None, name


def test_opencl_moves_a_constant_mask() -> None:
    """A constant mask is uploaded as its bytes (lowerings/typed.py), not as floats: its
    transpose runs on the OpenCL target."""
    module = irc.parse_module(CONSTANT_MASK_TRANSPOSE)
    (transpose,) = [op for op in module.walk() if isinstance(op, nn.TransposeOp)]
    answer = OpenCLTarget().supports(transpose)
    assert answer, answer.reason


CONSTANT_MASK_TRANSPOSE = (
    "func.func @main() -> tensor<3x2xi1> {\n"
    "  %m = nn.constant dense<[[true, false, true], [false, false, true]]>"
    " : tensor<2x3xi1> -> tensor<2x3xi1>\n"
    "  %t = nn.transpose %m perm = [1, 0] : tensor<2x3xi1> -> tensor<3x2xi1>\n"
    "  func.return %t : tensor<3x2xi1>\n"
    "}\n"
)


# seeds 400227, 401317, 402513 (--max-ops 12, first seen on NVIDIA OpenCL, then on cpu and
# PoCL): relu of -0.0 was +0 on the reference (np.maximum) and -0.0 on cpu, opencl and
# onnxruntime (`x < 0 ? 0 : x`; the reference's own relu6 / clip keep -0.0 too), so a later
# rsqrt or division gave +inf on one side and -inf on the other. relu now keeps -0.0 everywhere.
# Seed 300642 (onnx-import): the same for nn.clip (np.maximum) against the fused relu6
# (np.clip) of the `nn` graph: ONNX Clip imports as nn.clip; pow(clip(-0.0), -1) was +inf.
RELU_OF_NEGATIVE_ZERO = """
func.func @main(%x: tensor<1x2x1x8xf32>, %y: tensor<1x2x1x8xf32>)
    -> (tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>) {
  %r = nn.relu %x : tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  %s = nn.rsqrt %r : tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  %d = nn.div %y, %r : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  %a = nn.add %x, %x activation = "relu"
      : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  %e = nn.rsqrt %a : tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  %c = nn.clip %x min = 0.0 max = 6.0 : tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  %f = nn.div %y, %c : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  func.return %s, %d, %e, %f
      : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>
}
"""


def _negative_zero_feed() -> dict[str, np.ndarray]:
    x = np.array([-0.0, 0.0, -1.5, 2.0, np.nan, -np.inf, np.inf, -0.0] * 2, np.float32)
    y = np.full(16, 1.0, np.float32)
    return {"arg0": x.reshape(1, 2, 1, 8), "arg1": y.reshape(1, 2, 1, 8)}


def test_reference_relu_keeps_negative_zero() -> None:
    _, out = _run(RELU_OF_NEGATIVE_ZERO, "reference", _negative_zero_feed())
    rsqrt, div, fused, clipped = (np.asarray(v).ravel() for v in out.values())
    assert rsqrt[0] == -np.inf
    assert rsqrt[1] == np.inf
    assert div[0] == -np.inf  # 1 / relu(-0.0)
    assert fused[0] == -np.inf  # rsqrt(relu(-0.0 + -0.0)), the fused activation
    assert clipped[0] == -np.inf  # 1 / clip(-0.0, 0, 6)
    assert clipped[6] == 1 / 6
    assert np.isnan(rsqrt[4])
    assert np.isnan(clipped[4])


def _agrees_on_negative_zero(target: str, outputs: list[str]) -> None:
    feed = _negative_zero_feed()
    _, expected = _run(RELU_OF_NEGATIVE_ZERO, "reference", feed)
    compiled, got = _run(RELU_OF_NEGATIVE_ZERO, target, feed)
    assert "host: 0 ops" in compiled.summary, compiled.summary
    for name in outputs:
        assert compare(np.asarray(expected[name]), np.asarray(got[name])) is None, name


@pytest.mark.parametrize(
    "target",
    [pytest.param("cpu", marks=needs_compiler), pytest.param("opencl", marks=needs_device)],
)
def test_relu_of_negative_zero_agrees_with_the_reference(target: str) -> None:
    _agrees_on_negative_zero(target, ["result0", "result1", "result2"])


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("cpu", marks=needs_compiler),
        pytest.param("opencl", marks=needs_device),
    ],
)
def test_clip_of_negative_zero_agrees_with_the_reference(target: str) -> None:
    _agrees_on_negative_zero(target, ["result3"])


# seed 300223 (--max-ops 12, cpu): softmax with beta of a row holding FLT_MAX. The row max is
# the rounded product `x * beta`; with -ffp-contract=fast gcc turns `x * beta - max` into
# fma(x, beta, -max), whose exact product leaves the rounding error (~1e31) for exp: inf, and
# the row becomes inf / inf = NaN. The OpenCL kernel had the same bug under -cl-mad-enable
# and skips the subtraction where `x * beta == max` (docs/semantics.md).
SOFTMAX_OF_FLT_MAX = """
func.func @main(%x: tensor<1x22xf32>, %y: tensor<1x22xf32>) -> tensor<2x22xf32> {
  %s = nn.softmax %x beta = 0.33 : tensor<1x22xf32> -> tensor<1x22xf32>
  %c = nn.concat %y, %s axis = -2 : tensor<1x22xf32>, tensor<1x22xf32> -> tensor<2x22xf32>
  func.return %c : tensor<2x22xf32>
}
"""


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("cpu", marks=needs_compiler),
        pytest.param("opencl", marks=needs_device),
    ],
)
def test_softmax_of_a_row_with_flt_max(target: str) -> None:
    x = np.linspace(-2.5, 1.5, 22).astype(np.float32).reshape(1, 22)
    x[0, 4] = np.finfo(np.float32).max
    feed = {"arg0": x, "arg1": np.zeros((1, 22), np.float32)}
    _, expected = _run(SOFTMAX_OF_FLT_MAX, "reference", feed)
    _, got = _run(SOFTMAX_OF_FLT_MAX, target, feed)
    ref = np.asarray(expected["result0"])
    assert ref[1, 4] == 1.0
    assert compare(ref, np.asarray(got["result0"])) is None


# seed 201565 (PoCL) and 401555 (NVIDIA OpenCL): pow(-inf, 0.5). The semantics is NaN (a
# negative base with a non-integral exponent, docs/semantics.md), written out on every target:
# C99 / OpenCL `pow` and numpy's own vectorised float32 power give +inf (smoke seeds 5075,
# 5089 after the first fix), numpy's scalar path NaN.
POW_OF_NEGATIVE_INFINITY = """
func.func @main(%x: tensor<2x1x4x6xf32>) -> tensor<2x1x4x6xf32> {
  %h = nn.constant dense<5.000000e-01> : tensor<f32>
  %p = nn.pow %x, %h : tensor<2x1x4x6xf32>, tensor<f32> -> tensor<2x1x4x6xf32>
  %a = nn.constant dense<[0.17, -0.5, 0.33, 0.26, 1.14, 0.36]> : tensor<6xf32>
  %r = nn.prelu %p, %a : tensor<2x1x4x6xf32>, tensor<6xf32> -> tensor<2x1x4x6xf32>
  func.return %r : tensor<2x1x4x6xf32>
}
"""


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("cpu", marks=needs_compiler),
        pytest.param("opencl", marks=needs_device),
    ],
)
def test_pow_of_negative_infinity(target: str) -> None:
    x = np.linspace(0.5, 4.0, 48).astype(np.float32).reshape(2, 1, 4, 6)
    x.flat[36] = -np.inf
    x.flat[7] = -4.0
    _, expected = _run(POW_OF_NEGATIVE_INFINITY, "reference", {"arg0": x})
    _, got = _run(POW_OF_NEGATIVE_INFINITY, target, {"arg0": x})
    ref = np.asarray(expected["result0"])
    assert np.isnan(ref.flat[36])
    assert np.isnan(ref.flat[7])
    assert compare(ref, np.asarray(got["result0"])) is None


# seed 1001745 (both native targets): avg_pool2d of a window holding only -0.0 is -0.0 on the
# reference (its sum starts from the first tap) and was +0.0 on cpu and opencl (sums started
# at +0.0); `1 / avg` showed it as -inf against +inf. Sums now start at -0.0, the exact
# additive identity, and a window with taps in the padding adds +0.0 as the reference's sum
# over the zero-padded input does. C = 4 takes OpenCL's vector kernel, C = 3 the scalar one.
def _avg_pool_of_negative_zero(channels: int) -> str:
    t_in = f"tensor<1x4x4x{channels}xf32>"
    return f"""
func.func @main(%x: {t_in}) -> ({t_in}, {t_in}, tensor<1x2x2x{channels}xf32>) {{
  %a = nn.avg_pool2d %x kernel = [3, 3] pads = [1, 1, 1, 1] layout = "NHWC" : {t_in} -> {t_in}
  %b = nn.avg_pool2d %x kernel = [3, 3] pads = [1, 1, 1, 1] count_include_pad = true
      layout = "NHWC" : {t_in} -> {t_in}
  %c = nn.avg_pool2d %x kernel = [2, 2] strides = [2, 2] layout = "NHWC"
      : {t_in} -> tensor<1x2x2x{channels}xf32>
  func.return %a, %b, %c : {t_in}, {t_in}, tensor<1x2x2x{channels}xf32>
}}
"""


@pytest.mark.parametrize("channels", [3, 4])
@pytest.mark.parametrize(
    "target",
    [pytest.param("cpu", marks=needs_compiler), pytest.param("opencl", marks=needs_device)],
)
def test_avg_pool_of_negative_zero_keeps_its_sign(target: str, channels: int) -> None:
    x = np.full((1, 4, 4, channels), -0.0, np.float32)
    x[0, 3, 3, 0] = 2.0  # one window of each pool that is not all -0.0
    text = _avg_pool_of_negative_zero(channels)
    _, expected = _run(text, "reference", {"arg0": x})
    compiled, got = _run(text, target, {"arg0": x})
    assert "host: 0 ops" in compiled.summary, compiled.summary
    want_a = np.asarray(expected["result0"])
    assert np.signbit(want_a[0, 1, 1]).all()  # an interior window: -0.0 on the reference
    assert not np.signbit(want_a[0, 0, 0]).any()  # a window with padding: +0.0
    for name in ("result0", "result1", "result2"):
        want, have = np.asarray(expected[name]), np.asarray(got[name])
        np.testing.assert_array_equal(have, want, err_msg=name)
        np.testing.assert_array_equal(np.signbit(have), np.signbit(want), err_msg=name)


# seed 1100519 (cpu, opencl; onnxruntime too): conv2d whose every product is -0.0 (+0.0 taps
# times negative weights, no bias). Its exact sum is -0.0 and the reference's sum of the
# products keeps it (a depthwise-form conv: groups == input channels, multiplier 2). The
# native conv kernels started their accumulators at +0.0, and +0.0 + -0.0 is +0.0, so `x ** -1`
# after it was +inf against the reference's -inf. Fixed: depthwise-form sums start at -0.0 on
# cpu (7866942) and opencl (a3ba388); matrix-product forms keep BLAS's +0.0 like the reference
# (docs/semantics.md).
CONV_OF_NEGATIVE_PRODUCTS = """
func.func @main(%x: tensor<1x3x4x3xf32>) -> tensor<1x6x2x3xf32> {
  %w = nn.constant dense<[[[[0.5], [-1.25]]], [[[-0.5], [0.25]]], [[[-0.875], [0.375]]],
      [[[-1.125], [-0.375]]], [[[0.25], [1.75]]], [[[-1.125], [-0.875]]]]>
      : tensor<6x1x2x1xf32>
  %y = nn.conv2d %x, %w dilations = [2, 2] groups = 3 layout = "NCHW"
      : tensor<1x3x4x3xf32>, tensor<6x1x2x1xf32> -> tensor<1x6x2x3xf32>
  %e = nn.constant dense<-1.0> : tensor<3xf32>
  %r = nn.pow %y, %e : tensor<1x6x2x3xf32>, tensor<3xf32> -> tensor<1x6x2x3xf32>
  func.return %r : tensor<1x6x2x3xf32>
}
"""


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("cpu", marks=needs_compiler),
        pytest.param("opencl", marks=needs_device),
    ],
)
def test_conv_of_negative_zero_products_keeps_its_sign(target: str) -> None:
    feed = {"arg0": np.zeros((1, 3, 4, 3), np.float32)}
    _, expected = _run(CONV_OF_NEGATIVE_PRODUCTS, "reference", feed)
    compiled, got = _run(CONV_OF_NEGATIVE_PRODUCTS, target, feed)
    assert "host: 0 ops" in compiled.summary, compiled.summary
    want, have = np.asarray(expected["result0"]), np.asarray(got["result0"])
    assert (want[0, 3] == -np.inf).all()  # both weights of channel 3 are negative: 1 / -0.0
    np.testing.assert_array_equal(have, want)


# seeds 7001947 (gelu tanh, then pow; cpu and opencl) and 7002651 (gelu tanh, then rsqrt;
# opencl): gelu's far-negative tail 0.5 x (1 + tanh(u)) cancels; the reference's tanh(u) rounded
# to -1 for x = -7.92 (gelu -0.0, rsqrt -inf) where opencl's x / (1 + exp(-2u)) kept
# -1.0e-20 (rsqrt NaN), and the cpu's 2 - 2 / (exp(2u) + 1) gave -0.0 for x = -4.98 where the
# reference kept -2.97e-7 (`pow(., 0.5)`: 0 against NaN). The erf form had the same cancellation
# (opencl's float8 kernel computed erfc, the others 1 + erf). Every target now computes both
# forms without it (x / (1 + exp(-2u)), 0.5 x erfc(-x / sqrt 2)) and gives x * 0 below
# x = -10, where both forms are still normal numbers: the class of the result (-0.0 or
# -tiny) is decided by the input, not by a last ulp. 48 elements take OpenCL's float8
# kernels, 45 its one-element ones.
def _gelu_tail(n: int, approximate: str) -> str:
    t = f"tensor<{n}xf32>"
    return f"""
func.func @main(%x: {t}) -> ({t}, {t}, {t}) {{
  %g = nn.gelu %x approximate = "{approximate}" : {t} -> {t}
  %r = nn.rsqrt %g : {t} -> {t}
  %e = nn.constant dense<-1.0> : tensor<1xf32>
  %p = nn.pow %g, %e : {t}, tensor<1xf32> -> {t}
  func.return %g, %r, %p : {t}, {t}, {t}
}}
"""


def _gelu_tail_inputs(n: int) -> np.ndarray:
    edge = [-7.9214387, -9.217257, -4.9758854, -5.15, -10.0, np.nextafter(-10.0, -11.0)]
    edge += [-np.inf, np.nan, -0.0, 0.0, np.inf, 3.4e38, -3.4e38, 1e-40, -1e30, 20.0]
    x = np.linspace(-13.0, -3.0, n).astype(np.float32)
    x[: len(edge)] = np.asarray(edge, np.float32)
    return x


@pytest.mark.parametrize("n", [45, 48])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize(
    "target",
    [pytest.param("cpu", marks=needs_compiler), pytest.param("opencl", marks=needs_device)],
)
def test_gelu_tail_class_does_not_hang_on_an_ulp(target: str, approximate: str, n: int) -> None:
    x = _gelu_tail_inputs(n)
    text = _gelu_tail(n, approximate)
    _, expected = _run(text, "reference", {"arg0": x})
    compiled, got = _run(text, target, {"arg0": x})
    assert "host: 0 ops" in compiled.summary, compiled.summary
    gelu = np.asarray(expected["result0"])
    tail = (x < -10.0) & np.isfinite(x)  # -inf: NaN (-inf * 0), whose sign bit is free
    assert (gelu[tail] == 0).all()
    assert np.signbit(gelu[tail]).all()
    near = (x >= -10.0) & (x < 0)
    assert (gelu[near] < 0).all()
    assert (np.abs(gelu[near]) >= np.finfo(np.float32).tiny).all()
    for name in ("result0", "result1", "result2"):
        assert compare(np.asarray(expected[name]), np.asarray(got[name])) is None, name
    np.testing.assert_array_equal(np.signbit(np.asarray(got["result0"])[tail]), True)


# seed 9100028 (--onnx, onnx-import crash): an ONNX Pad with constant value -inf became
# `nn.pad ... value = -inf`, and irc.compile of the model file printed its artifact for the
# compile cache, where the float property's printer refused -inf ("no MLIR float literal").
# Float properties now print and parse `inf`, `-inf` and `nan`.
@pytest.mark.parametrize("value", ["-inf", "inf", "nan", "-0.0"])
def test_pad_value_that_is_not_a_finite_number_round_trips(value: str) -> None:
    text = f"""
func.func @main(%x: tensor<1x2xf32>) -> tensor<2x3xf32> {{
  %y = nn.pad %x pads = [0, 1, 0, 1] value = {value} : tensor<1x2xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}}
"""
    printed = str(irc.parse_module(text))
    assert f"value = {value} " in printed
    again = irc.parse_module(printed)
    assert str(again) == printed
    got = irc.compile(again, targets=["reference"]).run({"arg0": np.ones((1, 2), np.float32)})
    pad = np.asarray(got["result0"]).ravel()[2:]
    np.testing.assert_array_equal(np.signbit(pad), np.signbit(np.float32(value)))
    np.testing.assert_array_equal(pad, np.full(4, np.float32(value)))


def test_onnx_pad_of_negative_infinity_compiles_through_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx
    from onnx import TensorProto, helper
    from onnx_support import make_onnx_model

    monkeypatch.setenv("IRC_COMPILE_CACHE", "1")
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "cache"))
    pads = helper.make_tensor("pads", TensorProto.INT64, [4], [0, 1, 0, 1])
    fill = helper.make_tensor("fill", TensorProto.FLOAT, [], [-np.inf])
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads", "fill"], ["y"])],
        "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [pads, fill],
    )
    model = make_onnx_model(graph, 17)
    path = tmp_path / "pad.onnx"
    onnx.save(model, path)
    for _ in range(2):  # the second compile reads the cached artifact back
        got = irc.compile(str(path), targets=["reference"]).run({"x": np.ones((1, 2), np.float32)})
        np.testing.assert_array_equal(np.asarray(got["y"]).ravel(), [-np.inf, 1, 1, -np.inf])
