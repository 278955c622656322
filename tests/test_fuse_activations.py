"""`fuse-activations`: a relu / relu6 / clip after a float conv becomes the conv's fused
activation, with the same values on every target (NaN and -0.0 included), and only where the
region's target takes the fused op."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import needs_compiler
from opencl_support import needs_device
from xdsl.dialects.builtin import ModuleOp

import irc
from irc.dialects import nn
from irc.passes.fuse_activations import fuse_activations

pytestmark = pytest.mark.private_cache

T = "tensor<1x3x4x8xf32>"
GRAPH = f"""
func.func @main(%x: {T}) -> ({T}, {T}, {T}, {T}) {{
  %w = nn.constant dense<[[[[1.0, -1.0, 0.5, 0.0, 2.0, -0.5, 1.0, 0.25]]],
      [[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]],
      [[[-1.0, 1.0, -2.0, 0.5, 0.0, 1.0, -1.0, 3.0]]],
      [[[1.0e+30, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]],
      [[[0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]]],
      [[[-0.25, 0.0, 0.25, 0.0, -0.25, 0.0, 0.25, 0.0]]],
      [[[3.0, -3.0, 3.0, -3.0, 3.0, -3.0, 3.0, -3.0]]],
      [[[0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0, -1.0]]]]> : tensor<8x1x1x8xf32>
  %a = nn.conv2d %x, %w layout = "NHWC" : {T}, tensor<8x1x1x8xf32> -> {T}
  %ar = nn.relu %a : {T} -> {T}
  %b = nn.conv2d %x, %w layout = "NHWC" : {T}, tensor<8x1x1x8xf32> -> {T}
  %br = nn.relu6 %b : {T} -> {T}
  %c = nn.conv2d %x, %w layout = "NHWC" : {T}, tensor<8x1x1x8xf32> -> {T}
  %cr = nn.clip %c min = 0.0 max = 6.0 : {T} -> {T}
  %d = nn.conv2d %x, %w layout = "NHWC" : {T}, tensor<8x1x1x8xf32> -> {T}
  %dr = nn.clip %d min = -1.0 max = 1.0 : {T} -> {T}
  func.return %ar, %br, %cr, %dr : {T}, {T}, {T}, {T}
}}
"""


def _input() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, 4, 8)).astype(np.float32) * 4
    edges = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, 3e38, -3e38, 1e30, -1e30]
    x.reshape(-1)[: len(edges) * 3 : 3] = edges
    x[0, 2, 3] = -0.0  # a pixel whose products are all zeros of either sign
    return x


def _activations_left(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if isinstance(op, (nn.ReluOp, nn.Relu6Op, nn.ClipOp))]


def test_the_pass_fuses_all_four_in_whole_module_mode() -> None:
    module = irc.parse_module(GRAPH)
    assert fuse_activations(module) == 4
    assert _activations_left(module) == []
    convs = [op for op in module.walk() if isinstance(op, nn.Conv2DOp)]
    assert [c.activation.data for c in convs] == ["relu", "relu6", "relu6", "relu_n1_to_1"]


def _reference(module: ModuleOp, x: np.ndarray) -> dict[str, np.ndarray]:
    with np.errstate(all="ignore"):  # inf * 0 and overflows are the point of the input
        return irc.run(module, {"arg0": x})


def test_reference_gives_the_same_values_fused_and_apart() -> None:
    x = _input()
    apart = _reference(irc.parse_module(GRAPH), x)
    module = irc.parse_module(GRAPH)
    fuse_activations(module)
    fused = _reference(module, x)
    for name in apart:
        np.testing.assert_array_equal(fused[name], apart[name], err_msg=name)
        np.testing.assert_array_equal(np.signbit(fused[name]), np.signbit(apart[name]))


@pytest.mark.parametrize(
    "target",
    [pytest.param("cpu", marks=needs_compiler), pytest.param("opencl", marks=needs_device)],
)
def test_compiled_target_fuses_and_agrees_with_the_reference(target: str) -> None:
    x = _input()
    want = _reference(irc.parse_module(GRAPH), x)
    compiled = irc.compile(irc.parse_module(GRAPH), targets=[target])
    assert "host: 0 ops" in compiled.summary, compiled.summary
    assert _activations_left(compiled.module) == []  # fused before lowering
    got = compiled.run({"arg0": x})
    for name in want:
        w, g = np.asarray(want[name]), np.asarray(got[name])
        assert np.array_equal(np.isnan(g), np.isnan(w)), name
        finite = ~np.isnan(w)
        np.testing.assert_allclose(g[finite], w[finite], rtol=1e-5, atol=1e-5, err_msg=name)
        zeros = finite & (w == 0)
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(w[zeros]), err_msg=name)
