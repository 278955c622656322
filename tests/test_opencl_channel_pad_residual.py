"""A residual add of a channel-padded tensor (BlazeFace's `nn.pad` of the last axis feeding
`add(pad(x), conv(...))`) reads the unpadded tensor inside the fused kernel: no pad launch.

Each case checks the outputs against the reference (rtol 1e-4 / atol 1e-5; -0.0 and NaN
in the input) and which launches ran: the pad's disappears exactly where
`epilogue.channel_pad_view` holds (a last-axis pad of zeros read once by a fused epilogue),
on every store form of the register-tiled conv (whole vectors with `Cin` a multiple of the
vector or of a narrower piece, float4 pieces, lane by lane), the one-element conv and
elementwise kernels, and the GPU-style kernels (`IRC_OPENCL_KERNELS=gpu`).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from opencl_support import needs_device

import irc
from irc.targets.opencl import target as opencl_target

pytestmark = [pytest.mark.private_cache, needs_device]

RNG = np.random.default_rng(16)


def _t(*shape: int) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _dense(a: np.ndarray) -> str:
    return f"dense<{a.astype(np.float32).tolist()}>"


def _conv_case(
    cin: int, c: int, hw: tuple[int, int] = (3, 5), *, swap: bool = False, op: str = "add"
) -> str:
    """relu(pad(x) <op> conv1x1(x)): the 1x1 conv (a tiled GEMM for C >= 8) fuses the add."""
    h, w = hw
    x, y = _t(1, h, w, cin), _t(1, h, w, c)
    weights = RNG.standard_normal((c, 1, 1, cin)).astype(np.float32)
    bias = RNG.standard_normal(c).astype(np.float32)
    operands = "%y, %p" if swap else "%p, %y"
    return (
        f"func.func @main(%x: {x}) -> {y} {{\n"
        f"  %w = nn.constant {_dense(weights)} : {_t(c, 1, 1, cin)}\n"
        f"  %b = nn.constant {_dense(bias)} : {_t(c)}\n"
        f'  %y = nn.conv2d %x, %w, %b layout = "NHWC" : {x}, {_t(c, 1, 1, cin)}, {_t(c)} -> {y}\n'
        f"  %p = nn.pad %x pads = [0, 0, 0, 0, 0, 0, 0, {c - cin}] : {x} -> {y}\n"
        f"  %a = nn.{op} {operands} : {y}, {y} -> {y}\n"
        f"  %r = nn.relu %a : {y} -> {y}\n"
        f"  func.return %r : {y}\n}}"
    )


def _elementwise_case(cin: int, c: int) -> str:
    """pad(x) + z * z: an elementwise producer (one work-item per element) fuses the add."""
    x, y = _t(1, 2, 3, cin), _t(1, 2, 3, c)
    return (
        f"func.func @main(%x: {x}, %z: {y}) -> {y} {{\n"
        f"  %m = nn.mul %z, %z : {y}, {y} -> {y}\n"
        f"  %p = nn.pad %x pads = [0, 0, 0, 0, 0, 0, 0, {c - cin}] : {x} -> {y}\n"
        f"  %a = nn.add %m, %p : {y}, {y} -> {y}\n"
        f"  func.return %a : {y}\n}}"
    )


def _kept_pad(pads: str, value: str = "", twice: bool = False) -> str:
    """A pad that stays a launch: padding before the channels, a nonzero value, or read
    twice."""
    x, y = _t(1, 4, 4, 8), _t(1, 4, 4, 16)
    weights = RNG.standard_normal((16, 1, 1, 8)).astype(np.float32)
    extra = f"  %q = nn.add %p, %p : {y}, {y} -> {y}\n" if twice else ""
    result = "%q" if twice else "%r"
    return (
        f"func.func @main(%x: {x}) -> {y} {{\n"
        f"  %w = nn.constant {_dense(weights)} : {_t(16, 1, 1, 8)}\n"
        f'  %y = nn.conv2d %x, %w layout = "NHWC" : {x}, {_t(16, 1, 1, 8)} -> {y}\n'
        f"  %p = nn.pad %x pads = {pads}{value} : {x} -> {y}\n"
        f"  %a = nn.add %p, %y : {y}, {y} -> {y}\n"
        f"  %r = nn.relu %a : {y} -> {y}\n"
        f"{extra}"
        f"  func.return {result} : {y}\n}}"
    )


ELIDED = {
    # register-tiled store forms: float4 pieces (28 = 32 - 4), whole float16 vectors with Cin
    # in float4 / float2 / float8 pieces, float8 vectors, lane by lane (42 channels)
    "quads_24_28": _conv_case(24, 28),
    "vector16_28_32": _conv_case(28, 32, swap=True),
    "quads8_32_36": _conv_case(32, 36),
    "lanes_36_42": _conv_case(36, 42, (2, 9)),
    "vector16_42_48": _conv_case(42, 48),
    "vector8_48_56": _conv_case(48, 56),
    "vector16_56_64": _conv_case(56, 64, op="sub"),
    "cin_odd_5_16": _conv_case(5, 16),
    # one work-item per output element (fewer than 8 output channels)
    "scalar_3_5": _conv_case(3, 5),
    "scalar_sub_2_6": _conv_case(2, 6, swap=True, op="sub"),
    "elementwise_3_8": _elementwise_case(3, 8),
}
KEPT = {
    "nonzero_value": _kept_pad("[0, 0, 0, 0, 0, 0, 0, 8]", " value = 1.5"),
    "leading_channels": _kept_pad("[0, 0, 0, 0, 0, 0, 8, 0]"),
    "read_twice": _kept_pad("[0, 0, 0, 0, 0, 0, 0, 8]", twice=True),
}
STYLES = {
    "cpu": {},
    "gpu1": {opencl_target.KERNELS_ENV: "gpu", opencl_target.COMPUTE_UNITS_ENV: "1"},
    "gpu132": {opencl_target.KERNELS_ENV: "gpu", opencl_target.COMPUTE_UNITS_ENV: "132"},
}


def _feed(text: str) -> dict[str, np.ndarray]:
    module = irc.parse_module(text)
    func = next(op for op in module.walk() if op.name == "func.func")
    feed = {}
    for i, arg in enumerate(func.regions[0].blocks[0].args):
        shape = tuple(arg.type.get_shape())  # type: ignore[attr-defined]  # tensor arguments
        x = RNG.standard_normal(shape).astype(np.float32)
        flat = x.reshape(-1)
        flat[::7] = -0.0
        flat[3::11] = np.nan
        feed[f"arg{i}"] = x
    return feed


def _launches(compiled: irc.CompiledModel) -> list[str]:
    rows = []
    for loaded in compiled.program.loaded.values():  # type: ignore[attr-defined]
        geometry = getattr(loaded, "launch_geometry", None)
        if geometry is not None:
            rows += [description for description, _, _ in geometry("entry")]
    return rows


def _check(text: str, style: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.delenv(opencl_target.KERNELS_ENV, raising=False)
    monkeypatch.delenv(opencl_target.COMPUTE_UNITS_ENV, raising=False)
    for name, value in STYLES[style].items():
        monkeypatch.setenv(name, value)
    feed = _feed(text)
    expected = irc.compile(irc.parse_module(text), targets=["reference"]).run(feed)
    compiled = irc.compile(irc.parse_module(text), targets=["opencl"])
    assert "host: 0 ops" in compiled.summary, compiled.summary
    got = compiled.run(feed)
    for name, want in expected.items():
        np.testing.assert_allclose(np.asarray(got[name]), want, rtol=1e-4, atol=1e-5)
        have, numbers = np.asarray(got[name]), ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(have[numbers]), np.signbit(want[numbers]))
    return _launches(compiled)


def _combined(texts: list[str]) -> str:
    """One function running each of `texts` (single-block functions) on its own arguments
    to its own results, values renamed apart."""
    args: list[str] = []
    outs: list[str] = []
    body: list[str] = []
    results: list[str] = []
    for i, text in enumerate(texts):
        renamed = re.sub(r"%(\w+)", rf"%\g<1>_{i}", text).splitlines()
        header, *lines, ret, _ = renamed
        args.append(header[header.index("(") + 1 : header.index(") ->")])
        value, _, types = ret.removeprefix("  func.return ").partition(" : ")
        results.append(value)
        outs.append(types)
        body += lines
    return "\n".join(
        [
            f"func.func @main({', '.join(args)}) -> ({', '.join(outs)}) {{",
            *body,
            f"  func.return {', '.join(results)} : {', '.join(outs)}",
            "}",
        ]
    )


def _producer(text: str) -> str:
    """The launch description's start for the op that fuses the add: `nn.<op> <operand
    shapes> -> <result shape>` of the function's first conv2d or mul."""
    line = next(ln for ln in text.splitlines() if " = nn.conv2d " in ln or " = nn.mul " in ln)
    op = line.split(" = ")[1].split()[0]
    shapes = re.findall(r"tensor<([0-9x]+)xf32>", line.split(" : ", 1)[1])
    return f"{op} {', '.join(shapes[:-1])} -> {shapes[-1]}"


ELIDED_NAMES = sorted(ELIDED)


@pytest.fixture(scope="module")
def elided_launches() -> dict[str, list[str]]:
    """Style -> the launches of ONE model running every `ELIDED` case (one OpenCL program
    per style), checked against the reference as `_check` does."""
    text = _combined([ELIDED[name] for name in ELIDED_NAMES])
    with pytest.MonkeyPatch.context() as mp:
        return {style: _check(text, style, mp) for style in sorted(STYLES)}


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("case", ELIDED_NAMES)
def test_channel_pad_read_inside_the_fused_kernel(elided_launches, case: str, style: str) -> None:
    launches = elided_launches[style]
    assert not any("nn.pad" in d for d in launches), launches
    producer = _producer(ELIDED[case])
    mine = [d for d in launches if d.startswith(producer)]
    assert mine, (producer, launches)
    assert all("fused nn." in d for d in mine), mine


def test_elided_cases_have_distinct_producers() -> None:
    """Each case's launch is told apart by its producer's shapes in the combined model."""
    producers = [_producer(ELIDED[name]) for name in ELIDED_NAMES]
    assert len(set(producers)) == len(producers)
    assert all(not a.startswith(b) for a in producers for b in producers if a != b)


@pytest.mark.parametrize("case", sorted(KEPT))
def test_other_pads_stay_launches(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    launches = _check(KEPT[case], "cpu", monkeypatch)
    assert any("nn.pad" in d for d in launches), launches
