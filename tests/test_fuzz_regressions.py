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

import irc

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
