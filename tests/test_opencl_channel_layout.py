"""Tile shapes of the register-tiled OpenCL convs (conv_kernels.py): output channels padded
past a multiple of 8 to widen the tile (`channel_layout`), depthwise rows in one tile; the
choices, and the numerics of every store form they lead to.

One module holds every case (one PoCL build per kernel style): 1x1 convs (the tiled GEMM)
whose channels become whole padding vectors (80 -> 96 as 3 x float16: the sixth vector is
all padding and stores nothing) with a same-shape residual and with BlazeFace's
channel-padded residual, float4 pieces (36 -> 48), lane-by-lane stores (42 -> 48), a 5x5
stride-2 direct conv with asymmetric pads (24 -> 32, face detection's first conv) and a
fully_connected (100 -> 128); under 8 channels of 48-long dot products (one float8);
and depthwise convs whose output rows are one tile (16 pixels at stride 1, 8 at stride 2:
`WHOLE_ROW_DEPTHWISE*`) or whose work-items loop over channel blocks. Outputs against the
reference at rtol 1e-4 / atol 1e-5, with -0.0 and NaN in the inputs (the sign of zeros and
NaN positions kept), in the `cpu` style and in the `gpu` style at 132 compute units (which
does not tile this way).
"""

from __future__ import annotations

import numpy as np
import pytest
from opencl_support import needs_device

import irc
from irc.targets.opencl import target as opencl_target
from irc.targets.opencl.conv_kernels import channel_layout

pytestmark = pytest.mark.private_cache

RNG = np.random.default_rng(50)


def test_channel_layout_choices() -> None:
    # (channels, depth) -> (padded channels, VW, NV)
    assert channel_layout(36, 32) == (48, 16, 3)  # not 40 as 5 x float8
    assert channel_layout(28, 24) == (32, 16, 2)  # a multiple of 8 needs no depth
    assert channel_layout(24, 24) == (24, 8, 3)  # short dot products: no padding past 8
    assert channel_layout(24, 75) == (32, 16, 2)
    assert channel_layout(88, 80) == (96, 16, 3)
    assert channel_layout(80, 72) == (96, 16, 3)
    assert channel_layout(16, 64) == (16, 16, 1)  # 32 would be twice the work
    assert channel_layout(96, 96) == (96, 16, 3)
    assert channel_layout(1000, 1280) == (1008, 16, 3)


def _t(*shape: int) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _dense(a: np.ndarray) -> str:
    return f"dense<{a.astype(np.float32).tolist()}>"


def _const(name: str, *shape: int) -> str:
    values = RNG.standard_normal(shape).astype(np.float32)
    return f"  %{name} = nn.constant {_dense(values)} : {_t(*shape)}\n"


def _conv(
    name: str,
    x: str,
    cin: int,
    c: int,
    hw: tuple[int, int],
    k: int = 1,
    out: tuple[int, int] | None = None,
    groups: int = 1,
    **attrs: str,
) -> str:
    """conv `name` of %`x` (1 x H x W x cin*groups) to c channels of `out` pixels (default:
    H x W), k x k, constant filter and bias; `attrs` are further properties."""
    h, w = hw
    oh, ow = out or hw
    attrs = {"groups": str(groups), **attrs} if groups > 1 else attrs
    extra = "".join(f" {key} = {value}" for key, value in attrs.items())
    filt = _t(c, k, k, cin)
    return (
        _const(f"{name}_w", c, k, k, cin)
        + _const(f"{name}_b", c)
        + f'  %{name} = nn.conv2d %{x}, %{name}_w, %{name}_b layout = "NHWC"{extra} : '
        f"{_t(1, h, w, cin * groups)}, {filt}, {_t(c)} -> {_t(1, oh, ow, c)}\n"
    )


ARGS = {
    "x72": (1, 4, 5, 72),
    "x80": (1, 3, 6, 80),
    "r80": (1, 3, 6, 80),
    "x32": (1, 5, 5, 32),
    "x36": (1, 3, 9, 36),
    "img": (1, 13, 19, 3),
    "v": (3, 64),
    "d16": (1, 5, 16, 48),
    "d8": (1, 9, 16, 40),
    "n48": (1, 3, 5, 48),
    "r6": (1, 3, 5, 6),
    "e28": (1, 32, 32, 28),
    "e192": (1, 6, 10, 192),
    "e42": (1, 9, 20, 42),
    "q42": (1, 9, 20, 42),
}
OUTPUTS = [
    ("pad_res", (1, 4, 5, 80)),
    ("same_res", (1, 3, 6, 80)),
    ("quads", (1, 5, 5, 36)),
    ("lanes", (1, 3, 9, 42)),
    ("first", (1, 6, 9, 24)),
    ("fc", (3, 100)),
    ("dw_row16", (1, 5, 16, 48)),
    ("dw_row8_s2", (1, 5, 8, 40)),
    ("narrow2", (1, 3, 5, 2)),
    ("narrow6", (1, 3, 5, 6)),
    ("dw_blocks28_s2", (1, 16, 16, 28)),
    ("dw_blocks192", (1, 6, 10, 192)),
    ("dw_blocks42_res", (1, 9, 20, 42)),
]
TILES = {
    "nn.conv2d 1x4x5x72, 80x1x1x72": "(tiled x16) [",
    "nn.conv2d 1x3x6x80, 80x1x1x80": "x48 tile",
    "nn.conv2d 1x5x5x32, 36x1x1x32": "x48 tile",
    "nn.conv2d 1x3x9x36, 42x1x1x36": "x48 tile",
    "nn.conv2d 1x13x19x3, 24x5x5x3": "x32 tile",
    "nn.fully_connected 3x64, 100x64": "x32 tile",
    "nn.conv2d 1x5x16x48, 48x3x3x1": "[16x16 tile]",
    "nn.conv2d 1x9x16x40, 40x3x3x1": "[8x8 tile]",
    "nn.conv2d 1x3x5x48, 2x1x1x48": "[8x8 tile]",
    "nn.conv2d 1x3x5x48, 6x1x1x48": "[8x8 tile]",
    "nn.conv2d 1x32x32x28, 28x3x3x1": "[4x28 tile]",
    "nn.conv2d 1x6x10x192, 192x3x3x1": "[10x32 tile]",
    "nn.conv2d 1x9x20x42, 42x3x3x1": "[4x42 tile]",
}
"""The cpu style's launches and the tiles they must use (the padded layouts)."""


def _module() -> str:
    args = ", ".join(f"%{name}: {_t(*shape)}" for name, shape in ARGS.items())
    results = ", ".join(_t(*shape) for _, shape in OUTPUTS)
    y80a, y80b, y6 = _t(1, 4, 5, 80), _t(1, 3, 6, 80), _t(1, 3, 5, 6)
    y42 = _t(1, 9, 20, 42)
    body = (
        # 72 -> 80 (96 padded: a whole padding vector) + BlazeFace's channel-padded residual
        _conv("c1", "x72", 72, 80, (4, 5))
        + f"  %p1 = nn.pad %x72 pads = [0, 0, 0, 0, 0, 0, 0, 8] : {_t(1, 4, 5, 72)} -> {y80a}\n"
        + f"  %a1 = nn.add %p1, %c1 : {y80a}, {y80a} -> {y80a}\n"
        + f"  %pad_res = nn.relu %a1 : {y80a} -> {y80a}\n"
        # 80 -> 80 (96) + a same-shape residual
        + _conv("c2", "x80", 80, 80, (3, 6))
        + f"  %same_res = nn.add %c2, %r80 : {y80b}, {y80b} -> {y80b}\n"
        # 32 -> 36 (48, float4 pieces) with relu; 36 -> 42 (48, lane by lane)
        + _conv("c3", "x32", 32, 36, (5, 5))
        + f"  %quads = nn.relu %c3 : {_t(1, 5, 5, 36)} -> {_t(1, 5, 5, 36)}\n"
        + _conv("lanes", "x36", 36, 42, (3, 9))
        # face detection's first conv: 5x5 stride 2, asymmetric pads, 3 -> 24 (32)
        + _conv("first", "img", 3, 24, (13, 19), 5, (6, 9), strides="[2, 2]", pads="[1, 1, 2, 2]")
        + _const("fw", 100, 64)
        + _const("fb", 100)
        + f"  %fc = nn.fully_connected %v, %fw, %fb : {_t(3, 64)}, {_t(100, 64)}, {_t(100)}"
        f" -> {_t(3, 100)}\n"
        # depthwise rows of 16 (stride 1) and 8 (stride 2) pixels: one tile per row
        + _conv("dw_row16", "d16", 1, 48, (5, 16), 3, groups=48, pads="[1, 1, 1, 1]")
        + _conv(
            "dw_row8_s2",
            "d8",
            1,
            40,
            (9, 16),
            3,
            out=(5, 8),
            groups=40,
            strides="[2, 2]",
            pads="[1, 0, 1, 1]",
            activation='"relu6"',
        )
        # under 8 output channels from long dot products: one float8, stored lane by lane
        + _conv("narrow2", "n48", 48, 2, (3, 5))
        + _conv("c6", "n48", 48, 6, (3, 5))
        + f"  %narrow6 = nn.sub %c6, %r6 : {y6}, {y6} -> {y6}\n"
        # depthwise work-items looping over several channel blocks (DEPTHWISE_MIN_ITEMS):
        # every block of float4s, 2 of 12 float16s, every block of float2s + a residual
        + _conv(
            "dw_blocks28_s2",
            "e28",
            1,
            28,
            (32, 32),
            3,
            (16, 16),
            28,
            strides="[2, 2]",
            pads="[0, 0, 1, 1]",
        )
        + _conv("dw_blocks192", "e192", 1, 192, (6, 10), 3, groups=192, pads="[1, 1, 1, 1]")
        + _conv("dw42", "e42", 1, 42, (9, 20), 3, groups=42, pads="[1, 1, 1, 1]")
        + f"  %dw_blocks42_res = nn.add %q42, %dw42 : {y42}, {y42} -> {y42}\n"
    )
    names = ", ".join(f"%{name}" for name, _ in OUTPUTS)
    return f"func.func @main({args}) -> ({results}) {{\n{body}  func.return {names} : {results}\n}}"


STYLES = {
    "cpu": {opencl_target.KERNELS_ENV: "cpu"},
    "gpu132": {opencl_target.KERNELS_ENV: "gpu", opencl_target.COMPUTE_UNITS_ENV: "132"},
}


def _feed() -> dict[str, np.ndarray]:
    feed = {}
    for i, shape in enumerate(ARGS.values()):
        x = RNG.standard_normal(shape).astype(np.float32)
        flat = x.reshape(-1)
        flat[::7] = -0.0
        flat[3::29] = np.nan
        feed[f"arg{i}"] = x
    return feed


@needs_device
@pytest.mark.parametrize("style", sorted(STYLES))
def test_padded_layouts_match_the_reference(style: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(opencl_target.COMPUTE_UNITS_ENV, raising=False)
    for name, value in STYLES[style].items():
        monkeypatch.setenv(name, value)
    text = _module()
    feed = _feed()
    expected = irc.compile(irc.parse_module(text), targets=["reference"]).run(feed)
    compiled = irc.compile(irc.parse_module(text), targets=["opencl"])
    assert "host: 0 ops" in compiled.summary, compiled.summary
    got = compiled.run(feed)
    assert len(expected) == len(OUTPUTS)
    for name, want in expected.items():
        have = np.asarray(got[name])
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-5, err_msg=name)
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(have[numbers]), np.signbit(want[numbers]))
    if style != "cpu":
        return
    launches = [
        description
        for loaded in compiled.program.loaded.values()  # type: ignore[attr-defined]
        for description, _, _ in loaded.launch_geometry("entry")
    ]
    for prefix, tile in TILES.items():
        (description,) = [d for d in launches if d.startswith(prefix)]
        assert tile in description, description
    assert not any(d.startswith("nn.pad") for d in launches)  # read unpadded by the GEMM
