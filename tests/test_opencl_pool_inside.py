"""Pools whose every window lies inside the image (`lowerings/pool.py`'s `_pool_inside`: one
output pixel per work-item, unrolled taps) against the reference, bit for bit: NaN, ±inf,
-0.0 windows, max and average, strides, dilations, bottom/right pads that no window reaches,
and the kernels chosen (the padded pools keep the one-vector-per-work-item form). Those are
`kernels=cpu` kernels (PoCL's default); the same pools with `kernels=gpu` (a GPU's default:
one output element per work-item) are checked bit for bit too."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_support import kernel_style_params, needs_device

import irc
from irc.targets.opencl.target import KERNELS_ENV

pytestmark = [pytest.mark.private_cache, needs_device]

RNG = np.random.default_rng(61)


def _pool(kind: str, x: tuple[int, ...], attrs: str, out: tuple[int, ...]) -> str:
    tx, ty = (f"tensor<{'x'.join(map(str, s))}xf32>" for s in (x, out))
    return (
        f"func.func @main(%x: {tx}) -> {ty} {{\n"
        f'  %p = nn.{kind} %x {attrs} layout = "NHWC" : {tx} -> {ty}\n'
        f"  %r = nn.relu6 %p : {ty} -> {ty}\n"
        f"  func.return %r : {ty}\n}}"
    )


CASES = {
    "max_2x2_s2_c28": ("max_pool2d", (1, 8, 8, 28), "kernel = [2, 2] strides = [2, 2]", True),
    "max_2x2_s2_c42": ("max_pool2d", (1, 6, 6, 42), "kernel = [2, 2] strides = [2, 2]", True),
    "max_2x2_s2_c88": ("max_pool2d", (2, 4, 4, 88), "kernel = [2, 2] strides = [2, 2]", True),
    "max_3x3_s1_dil2": (
        "max_pool2d",
        (1, 9, 7, 8),
        "kernel = [3, 3] strides = [1, 1] dilations = [2, 2]",
        True,
    ),
    "avg_3x2_s2": ("avg_pool2d", (1, 9, 8, 12), "kernel = [3, 2] strides = [2, 2]", True),
    # a bottom/right pad that no window reaches (6 rows: windows 0-1, 2-3, 4-5), and one
    # that the last window reaches (7 rows)
    "max_unreached_pad": (
        "max_pool2d",
        (1, 6, 6, 16),
        "kernel = [2, 2] strides = [2, 2] pads = [0, 0, 1, 1]",
        True,
    ),
    "max_reached_pad": (
        "max_pool2d",
        (1, 7, 7, 16),
        "kernel = [2, 2] strides = [2, 2] pads = [0, 0, 1, 1]",
        False,
    ),
    "avg_padded": (
        "avg_pool2d",
        (1, 6, 6, 8),
        "kernel = [3, 3] strides = [1, 1] pads = [1, 1, 1, 1]",
        False,
    ),
    "max_odd_channels": ("max_pool2d", (1, 4, 4, 3), "kernel = [2, 2] strides = [2, 2]", False),
}


def _out_shape(x: tuple[int, ...], attrs: str) -> tuple[int, ...]:
    def ints(name: str, default: list[int]) -> list[int]:
        if f"{name} = [" not in attrs:
            return default
        return [int(v) for v in attrs.split(f"{name} = [")[1].split("]")[0].split(",")]

    kh, kw = ints("kernel", [1, 1])
    sh, sw = ints("strides", [1, 1])
    dh, dw = ints("dilations", [1, 1])
    top, left, bottom, right = ints("pads", [0, 0, 0, 0])
    oh = (x[1] + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (x[2] + left + right - dw * (kw - 1) - 1) // sw + 1
    return (x[0], oh, ow, x[3])


@pytest.mark.parametrize("style", kernel_style_params())
@pytest.mark.parametrize("case", sorted(CASES))
def test_pool_matches_the_reference(case: str, style: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KERNELS_ENV, style)
    kind, shape, attrs, inside = CASES[case]
    text = _pool(kind, shape, attrs, _out_shape(shape, attrs))
    x = RNG.standard_normal(shape).astype(np.float32) * 4
    flat = x.reshape(-1)
    flat[::9] = -0.0
    flat[1::17] = np.nan
    flat[2::23] = np.inf
    if kind == "max_pool2d":  # inf - inf would be NaN with a warning in a sum
        flat[4::29] = -np.inf
    x[0, :2, :2, 0] = -0.0  # a window of -0.0 only
    feed = {"arg0": x}
    want = irc.compile(irc.parse_module(text), targets=["reference"]).run(feed)["result0"]
    compiled = irc.compile(irc.parse_module(text), targets=["opencl"])
    assert "host: 0 ops" in compiled.summary, compiled.summary
    have = np.asarray(compiled.run(feed)["result0"])
    np.testing.assert_array_equal(have, want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(have[numbers]), np.signbit(want[numbers]))
    launches = [
        description
        for loaded in compiled.program.loaded.values()  # type: ignore[attr-defined]
        for description, _, _ in loaded.launch_geometry("entry")
    ]
    # kernels=gpu pools: one output element per work-item, no channel vectors
    assert any("pixel per item" in d for d in launches) == (inside and style == "cpu"), launches
    assert any("(x" in d for d in launches) == (style == "cpu" and shape[3] % 2 == 0), launches
