"""Bilinear resize where a source coordinate falls exactly on a pixel: which neighbours it reads.

onnxruntime (the peer of float `nn.resize`) interpolates between `floor(x)` and
`min(floor(x) + 1, in - 1)` as `a (1 - w) + b w`: at an exact interior sample `x = k` it reads
pixels k and k + 1 with weight 0 (a NaN or inf in pixel k + 1 shows: `inf * 0` is NaN), at the
last pixel it reads that pixel alone. The reference's taps are the same, and the cpu and
opencl kernels gather with the reference's own tables, so every target gives the reference's
bits, NaN positions included (docs/semantics.md, "resize").

Seed 7214257 of the differential fuzzer was first filed as this case; it is a conv2d whose
window sums an overflowing product (`-1.24 * 3.4e38`) and +inf in another order than the
reference's BLAS (docs/semantics.md, "overflowing sum, order").
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import needs_compiler
from onnx import helper
from onnx_support import run_onnx
from opencl_support import needs_device

import irc

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

TARGETS = [
    pytest.param("cpu", marks=needs_compiler),
    pytest.param("opencl", marks=needs_device),
]

RESIZE = """
func.func @main(%x: tensor<1x1x6x{c}xf32>) -> tensor<1x1x{ow}x{c}xf32> {{
  %y = nn.resize %x size = [1, {ow}] mode = "bilinear" coordinate_mode = "{mode}"
      layout = "NHWC" : tensor<1x1x6x{c}xf32> -> tensor<1x1x{ow}x{c}xf32>
  func.return %y : tensor<1x1x{ow}x{c}xf32>
}}
"""

# (coordinate mode, output width): align_corners 6 -> 11 samples x = 0, 0.5, .., 5 (every
# integer exactly, 5 the last pixel); half_pixel 6 -> 12 clamps x = 5.25 to the last pixel.
GEOMETRIES = [("align_corners", 11), ("half_pixel", 12)]

SPECIAL = [np.nan, np.inf, -np.inf]


def _row(pixel: int, value: float, channels: int) -> np.ndarray:
    row = np.arange(1, 7, dtype=np.float32)
    row[pixel] = value
    return np.repeat(row[:, None], channels, axis=1).reshape(1, 1, 6, channels)


def _run(target: str, mode: str, ow: int, x: np.ndarray) -> np.ndarray:
    text = RESIZE.format(c=x.shape[-1], ow=ow, mode=mode)
    compiled = irc.compile(irc.parse_module(text), targets=[target])
    (y,) = compiled.run({"arg0": x}).values()
    return np.asarray(y)


def _onnx_resize(mode: str, ow: int, x: np.ndarray) -> np.ndarray:
    node = helper.make_node(
        "Resize", ["X", "", "", "sizes"], ["Y"], mode="linear", coordinate_transformation_mode=mode
    )
    nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    sizes = np.array([1, x.shape[-1], 1, ow], np.int64)
    (y,) = run_onnx(node, {"X": nchw}, constants={"sizes": sizes})
    return y.transpose(0, 2, 3, 1)


@pytest.mark.parametrize(("mode", "ow"), GEOMETRIES)
@pytest.mark.parametrize("pixel", [2, 4, 5])
def test_reference_reads_the_neighbours_onnxruntime_reads(mode: str, ow: int, pixel: int) -> None:
    """A NaN shows exactly where onnxruntime's shows. (An inf differs by formula, not by
    taps: `a + (b - a) w` is NaN where `a (1 - w) + b w` is inf, docs/semantics.md.)"""
    x = _row(pixel, np.nan, 1)
    expected = _onnx_resize(mode, ow, x)
    got = _run("reference", mode, ow, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)


def test_the_last_pixel_is_read_alone_and_an_interior_sample_reads_its_right_neighbour() -> None:
    """The two facts the targets must keep, stated on onnxruntime's own output."""
    at_edge = _onnx_resize("align_corners", 11, _row(4, np.nan, 1)).ravel()
    assert at_edge[10] == 6.0  # x = 5: pixel 5 alone, the NaN in pixel 4 does not show
    interior = _onnx_resize("align_corners", 11, _row(4, np.inf, 1)).ravel()
    assert np.isnan(interior[6])  # x = 3: pixels 3 and 4, weight 0 on 4: inf * 0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("channels", [1, 4, 3])  # 4: opencl's row kernel (channel vectors)
@pytest.mark.parametrize(("mode", "ow"), GEOMETRIES)
@pytest.mark.parametrize("value", SPECIAL)
@pytest.mark.parametrize("pixel", [2, 4, 5])
def test_native_targets_give_the_reference_bits_at_exact_samples(
    target: str, channels: int, mode: str, ow: int, value: float, pixel: int
) -> None:
    x = _row(pixel, value, channels)
    expected = _run("reference", mode, ow, x)
    got = _run(target, mode, ow, x)
    # equal bits except a NaN's payload and sign (a GPU's default NaN is not x86's)
    np.testing.assert_array_equal(got, expected)
    same = ~np.isnan(expected)
    np.testing.assert_array_equal(got[same].view(np.uint32), expected[same].view(np.uint32))
