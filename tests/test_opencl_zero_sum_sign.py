"""The sign of a zero sum in the OpenCL conv kernels, as the reference gives it.

The reference computes a depthwise conv (groups == input channels > 1) as a sum of its taps'
products over the zero-padded input, then adds the bias: it is -0.0 exactly when every
product (and the bias, if any) is -0.0, so the OpenCL depthwise kernels start their sums at
-0.0 (the exact additive identity) and count a tap in the padding as `+0.0 * w` (+0.0 for a
positive weight). Every other conv (groups 1, grouped, 1x1), conv2d_transpose and
fully_connected is a matrix product there (BLAS, whose sums start at +0.0) plus the bias: never
-0.0, so the OpenCL kernels start at +0.0 and a -0.0 bias gives +0.0 (docs/semantics.md).

Each case runs on the feeds +0.0 and -0.0 everywhere, with filters whose channels have
weights of one sign each (so some outputs are -0.0 on the reference and some +0.0), on
PoCL's CPU-style kernels and on the GPU-style ones (`IRC_OPENCL_KERNELS=gpu`, shaped for 1
and 132 compute units), and compares sign bits with the reference's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
from opencl_support import needs_device

import irc
from irc.targets.opencl import target as opencl_target

pytestmark = [pytest.mark.private_cache, needs_device]


def _dense(a: np.ndarray) -> str:
    return f"dense<{np.asarray(a, np.float32).tolist()}>"


def _tensor(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _signed_filter(shape: tuple[int, ...], axis: int = 0) -> np.ndarray:
    """Weights 0.5..1.5 whose sign alternates along `axis` (output channels): each channel's
    products with a constant ±0.0 input share one sign."""
    count = int(np.prod(shape))
    w = (0.5 + (np.arange(count) % 7) / 6).astype(np.float32).reshape(shape)
    sign = np.where(np.arange(shape[axis]) % 2 == 0, -1.0, 1.0).astype(np.float32)
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return w * sign.reshape(view)


def _bias(channels: int) -> np.ndarray:
    """-0.0 and +0.0 in turn."""
    return np.where(np.arange(channels) % 3 == 0, 0.0, -0.0).astype(np.float32)


@dataclass(frozen=True)
class Case:
    """One conv (or fully connected layer) on an input `x`, returning `%y ** -1` (+-inf for
    +-0.0; two ops, the least an OpenCL region takes): `body(i)` is its ops on `%x<i>`, the
    result `%r<i>`."""

    x: tuple[int, ...]
    out: tuple[int, ...]
    lines: tuple[str, ...]
    """The ops on `%x`, `%w`, `%b` (and their constants), the result `%y`."""

    def body(self, i: int) -> list[str]:
        t, n = _tensor(self.out), self.out[-1]
        lines = [
            *self.lines,
            f"  %e = nn.constant dense<-1.0> : tensor<{n}xf32>",
            f"  %r = nn.pow %y, %e : {t}, tensor<{n}xf32> -> {t}",
        ]
        return [re.sub(r"%([xwbyer])\b", rf"%\g<1>{i}", line) for line in lines]


def _module(cases: list[Case]) -> str:
    """One function running every case on its own input (arg<i>) to its own result."""
    args = ", ".join(f"%x{i}: {_tensor(c.x)}" for i, c in enumerate(cases))
    outs = ", ".join(_tensor(c.out) for c in cases)
    lines = [f"func.func @main({args}) -> ({outs}) {{"]
    for i, case in enumerate(cases):
        lines += case.body(i)
    results = ", ".join(f"%r{i}" for i in range(len(cases)))
    return "\n".join([*lines, f"  func.return {results} : {outs}", "}"])


def _conv(
    x: tuple[int, ...],
    w: np.ndarray,
    out: tuple[int, ...],
    bias: bool,
    attrs: str,
    op: str = "conv2d",
) -> Case:
    operands = "%x, %w, %b" if bias else "%x, %w"
    types = [_tensor(x), _tensor(w.shape)] + ([_tensor((out[-1],))] if bias else [])
    lines = [f"  %w = nn.constant {_dense(w)} : {_tensor(w.shape)}"]
    if bias:
        lines.append(f"  %b = nn.constant {_dense(_bias(out[-1]))} : {_tensor((out[-1],))}")
    lines += [
        f'  %y = nn.{op} {operands} {attrs} layout = "NHWC" : {", ".join(types)} -> {_tensor(out)}',
    ]
    return Case(x, out, tuple(lines))


def _fully_connected(rows: int, k: int, n_out: int) -> Case:
    w = _signed_filter((n_out, k))
    x, out = _tensor((rows, k)), _tensor((rows, n_out))
    lines = (
        f"  %w = nn.constant {_dense(w)} : {_tensor(w.shape)}",
        f"  %b = nn.constant {_dense(_bias(n_out))} : {_tensor((n_out,))}",
        f"  %y = nn.fully_connected %x, %w, %b : {x}, {_tensor(w.shape)}, {_tensor((n_out,))}"
        f" -> {out}",
    )
    return Case((rows, k), (rows, n_out), lines)


PADS = "strides = [1, 1] pads = [1, 1, 1, 1]"
CASES = {
    # depthwise: tiled (float8 / float4 / float2 channel vectors), untiled (3 channels, a depth
    # multiplier), strided, with and without bias
    "depthwise_x8": _conv(
        (1, 5, 9, 8), _signed_filter((8, 3, 3, 1)), (1, 5, 9, 8), False, f"{PADS} groups = 8"
    ),
    "depthwise_x4_bias": _conv(
        (1, 4, 6, 4), _signed_filter((4, 3, 3, 1)), (1, 4, 6, 4), True, f"{PADS} groups = 4"
    ),
    "depthwise_x2_s2": _conv(
        (1, 7, 7, 2),
        _signed_filter((2, 3, 3, 1)),
        (1, 4, 4, 2),
        False,
        "strides = [2, 2] pads = [1, 1, 1, 1] groups = 2",
    ),
    "depthwise_c3": _conv(
        (1, 4, 5, 3), _signed_filter((3, 3, 3, 1)), (1, 4, 5, 3), False, f"{PADS} groups = 3"
    ),
    "depthwise_c3_bias": _conv(
        (1, 4, 5, 3), _signed_filter((3, 3, 3, 1)), (1, 4, 5, 3), True, f"{PADS} groups = 3"
    ),
    "depthwise_multiplier": _conv(
        (1, 4, 4, 4), _signed_filter((8, 3, 3, 1)), (1, 4, 4, 8), False, f"{PADS} groups = 4"
    ),
    # matrix-product convs: direct (tiled and not), 1x1, grouped, transposed, fully_connected
    "direct_bias": _conv((1, 5, 6, 4), _signed_filter((8, 3, 3, 4)), (1, 5, 6, 8), True, PADS),
    "direct_c5_bias": _conv((1, 4, 4, 2), _signed_filter((5, 3, 3, 2)), (1, 4, 4, 5), True, PADS),
    "pointwise_bias": _conv(
        (1, 3, 5, 8), _signed_filter((16, 1, 1, 8)), (1, 3, 5, 16), True, "strides = [1, 1]"
    ),
    "grouped_bias": _conv(
        (1, 4, 4, 4), _signed_filter((6, 3, 3, 2)), (1, 4, 4, 6), True, f"{PADS} groups = 2"
    ),
    "transpose_bias": _conv(
        (1, 3, 3, 4),
        _signed_filter((8, 2, 2, 4)),
        (1, 6, 6, 8),
        True,
        "strides = [2, 2]",
        op="conv2d_transpose",
    ),
    "transpose_s1_bias": _conv(
        (1, 3, 3, 2),
        _signed_filter((3, 3, 3, 2)),
        (1, 5, 5, 3),
        True,
        "strides = [1, 1]",
        op="conv2d_transpose",
    ),
    "fully_connected_bias": _fully_connected(3, 16, 16),
    "fully_connected_small_bias": _fully_connected(2, 3, 5),
}

STYLES = {
    "cpu": {},
    "gpu1": {opencl_target.KERNELS_ENV: "gpu", opencl_target.COMPUTE_UNITS_ENV: "1"},
    "gpu132": {opencl_target.KERNELS_ENV: "gpu", opencl_target.COMPUTE_UNITS_ENV: "132"},
}


NAMES = sorted(CASES)


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str], list[tuple[float, np.ndarray, np.ndarray]]]:
    """(case, style) -> (feed value, reference output, OpenCL output) for the feeds +0.0 and
    -0.0: every case in ONE model per kernel style (one OpenCL program to build), each case
    on its own input and output."""
    text = _module([CASES[name] for name in NAMES])
    reference = irc.compile(irc.parse_module(text), targets=["reference"])
    out: dict[tuple[str, str], list[tuple[float, np.ndarray, np.ndarray]]] = {}
    for style, settings in STYLES.items():
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv(opencl_target.KERNELS_ENV, raising=False)
            mp.delenv(opencl_target.COMPUTE_UNITS_ENV, raising=False)
            for name, value in settings.items():
                mp.setenv(name, value)
            compiled = irc.compile(irc.parse_module(text), targets=["opencl"])
            assert "host: 0 ops" in compiled.summary, compiled.summary
            for zero in (0.0, -0.0):
                feed = {
                    f"arg{i}": np.full(CASES[name].x, zero, np.float32)
                    for i, name in enumerate(NAMES)
                }
                want, have = reference.run(feed), compiled.run(feed)
                for i, name in enumerate(NAMES):
                    result = f"result{i}"
                    rows = out.setdefault((name, style), [])
                    rows.append((zero, np.asarray(want[result]), np.asarray(have[result])))
    return out


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("case", NAMES)
def test_zero_sum_sign_matches_the_reference(runs, case: str, style: str) -> None:
    signs_seen = set()
    for zero, want, have in runs[case, style]:
        assert want.shape == CASES[case].out
        np.testing.assert_array_equal(have, want)
        np.testing.assert_array_equal(np.signbit(have), np.signbit(want), err_msg=f"{zero}")
        signs_seen |= set(np.signbit(want).ravel().tolist())
    if case.startswith("depthwise"):
        assert signs_seen == {False, True}  # the case holds -0.0 and +0.0 results
