"""A padded conv of few input channels (an image's first conv) reads its input through
`irc_conv2d_pad`'s per-task windows (kernels/common/conv2d.c: each task copies its input
window with its zero padding; no padded copy of the whole input): the same sums bit for
bit as the direct conv on a zero-padded copy of the input, and the reference's values
within float tolerance.

Each case runs twice: padded by the op (windowed: `windowed_padding` holds) and unpadded
on the input that numpy zero-padded (the direct tile walk on a padded input, as
`irc_pad_nhwc` + `irc_conv2d` compute it). Shapes: the RGB 3x3/2 conv with TFLite's
bottom-right padding, a 7x7/2 conv, a one-channel 5x5 conv, a dilated strided conv with
uneven pads wider than the kernel's reach (rows and columns of only padding), two groups,
a batch of two; output channels off the vector width (partial slices); the epilogues in
registers (bias, relu, relu6) and in scalar code (tanh); 1 and 2 threads, every ISA
profile this host runs whose C differs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from cpu_support import (
    Case,
    build_executable,
    execute_cases,
    generated_source,
    isas_with_distinct_code,
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
    reference_outputs,
)

from irc.dialects import nn
from irc.targets.cpu.lowerings.conv import windowed_padding

pytestmark = [needs_compiler, pytest.mark.private_cache]

RTOL, ATOL = 1e-4, 1e-5
_RNG = np.random.default_rng(20261127)

# (name, input NHWC, filter OHWI, groups, strides, dilations, pads [t, l, b, r], activation)
SHAPES = [
    ("rgb_3x3s2", (1, 33, 31, 3), (32, 3, 3, 3), 1, [2, 2], [1, 1], [0, 0, 1, 1], "relu6"),
    ("rgb_7x7s2", (1, 24, 22, 3), (20, 7, 7, 3), 1, [2, 2], [1, 1], [3, 3, 3, 3], "relu"),
    ("grey_5x5", (2, 12, 9, 1), (8, 5, 5, 1), 1, [1, 1], [1, 1], [2, 2, 2, 2], "none"),
    ("dilated", (1, 11, 13, 4), (17, 3, 3, 4), 1, [2, 1], [2, 3], [5, 1, 0, 7], "tanh"),
    ("grouped", (1, 10, 10, 4), (6, 3, 3, 2), 2, [1, 2], [1, 1], [1, 0, 2, 1], "relu6"),
]


def _cases(
    name: str,
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    groups: int,
    strides: list[int],
    dilations: list[int],
    pads: list[int],
    act: str,
) -> list[Case]:
    """The conv padded by the op (windowed) and unpadded on numpy's padded input."""
    x = _RNG.uniform(-1, 1, x_shape).astype(np.float32)
    w = _RNG.uniform(-0.5, 0.5, w_shape).astype(np.float32)
    b = _RNG.uniform(-1, 1, w_shape[0]).astype(np.float32)
    t, left, bottom, r = pads
    padded_x = np.pad(x, ((0, 0), (t, bottom), (left, r), (0, 0)))
    props = {"groups": groups, "strides": strides, "dilations": dilations, "layout": "NHWC"}
    windowed = op_case(
        f"{name}/windowed", nn.Conv2DOp, [x, w, b], [1, 2], pads=pads, activation=act, **props
    )
    direct = op_case(
        f"{name}/direct", nn.Conv2DOp, [padded_x, w, b], [1, 2], activation=act, **props
    )
    return [windowed, direct]


CASES = [case for shape in SHAPES for case in _cases(*shape)]
NAMES = [shape[0] for shape in SHAPES]


@pytest.fixture(scope="module")
def results() -> dict[str, list[tuple[str, int, np.ndarray]]]:
    """Case id -> (ISA, threads, output) for every run, and ("reference", 0, output)."""
    module, executable, built = build_executable(CASES, name="test_cpu_conv_window", per_case=True)
    expected = [reference_outputs(b)[0] for b in built]
    lower(module)
    out: dict[str, list[tuple[str, int, np.ndarray]]] = {b.case.id: [] for b in built}
    for name in isas_with_distinct_code(executable):
        loaded = load_with_isa(executable, name)
        for threads in (1, 2):
            loaded.set_threads(threads)
            got = execute_cases(loaded, built)
            for b, value in zip(built, got, strict=True):
                out[b.case.id].append((name, threads, np.asarray(value)))
    for b, value in zip(built, expected, strict=True):
        out[b.case.id].append(("reference", 0, np.asarray(value)))
    return out


def test_the_cases_take_the_windowed_path() -> None:
    for _, x_shape, w_shape, _, strides, dilations, _, _ in SHAPES:
        assert windowed_padding(x_shape[3], w_shape[1], w_shape[2], strides[1], dilations[1])
    assert not windowed_padding(16, 3, 3, 1, 1)  # many channels: a padded copy


@pytest.mark.parametrize("name", NAMES)
def test_windowed_padding_gives_the_padded_sums_bit_for_bit(results, name: str) -> None:
    *runs, (_, _, want) = results[f"{name}/windowed"]
    *direct_runs, (_, _, direct_want) = results[f"{name}/direct"]
    np.testing.assert_allclose(direct_want, want, rtol=RTOL, atol=ATOL)
    for (isa, threads, got), (_, _, direct) in zip(runs, direct_runs, strict=True):
        where = f"{isa}, {threads} thread(s)"
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=where)
        np.testing.assert_array_equal(got, direct, err_msg=where)


def test_the_windowed_conv_reads_no_padded_copy() -> None:
    module, executable, _ = build_executable(CASES[:2], name="test_cpu_conv_window_source")
    lower(module)
    source = generated_source(executable)
    assert len(re.findall(r"irc_conv2d_pad\(\d, in\d+, ", source)) == 1  # the call
    assert "irc_pad_nhwc((" not in source  # no call of the padded copy
