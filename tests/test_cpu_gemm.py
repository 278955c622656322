"""The CPU target's matrix-product forms of irc_conv2d (an unpadded pointwise conv, whose
pixels run as one row, and a fully connected layer) give the direct conv's sums bit for bit.

The same 1x1 conv padded by one pixel on every side runs through the direct path
(`irc_pad_nhwc`, then the tile walk per output row): its interior must equal the unpadded
conv bit for bit, and a fully connected layer on the same rows too (the same sums in the
same order). Shapes: K short and long (up to 1030 channels), output channels off the
vector width (a partial slice), row counts with full tiles, a half tile and single rows;
the epilogues in registers (bias, relu, relu6) and in scalar code (tanh); 1 and 2 threads
(output-channel ranges split over them), with every ISA profile this host runs whose C
differs (`isas_with_distinct_code`; float code reads no VNNI macro): AVX2's 16-channel
slices of 32-channel blocks, the generic 4-lane vectors. A reduction split in
K blocks (measured for BERT-base and DeiT-tiny in-model: no faster at 1 or 2 threads, not
kept) would have to pass it too.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import (
    Case,
    build_executable,
    execute_cases,
    isas_with_distinct_code,
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
    reference_outputs,
)

from irc.dialects import nn

pytestmark = [needs_compiler, pytest.mark.private_cache]

RTOL, ATOL = 1e-4, 1e-5
_RNG = np.random.default_rng(20261126)

# (rows as H x W, K, N, activation)
SHAPES = [
    ((5, 7), 40, 24, "relu6"),
    ((3, 9), 300, 40, "none"),
    ((4, 13), 700, 72, "tanh"),
    ((16, 8), 768, 96, "none"),
    ((1, 13), 1030, 17, "relu"),
]


def _cases(hw: tuple[int, int], k: int, n: int, act: str) -> list[Case]:
    """The direct (padded) conv, the unpadded one and the fully connected layer on the same
    data."""
    name = f"rows{hw[0] * hw[1]}_k{k}_n{n}_{act}"
    x = _RNG.uniform(-1, 1, (1, *hw, k)).astype(np.float32)
    w = _RNG.uniform(-0.5, 0.5, (n, 1, 1, k)).astype(np.float32)
    b = _RNG.uniform(-1, 1, n).astype(np.float32)
    direct = op_case(
        f"{name}/direct",
        nn.Conv2DOp,
        [x, w, b],
        [1, 2],
        pads=[1, 1, 1, 1],
        layout="NHWC",
        activation=act,
    )
    gemm = op_case(f"{name}/gemm", nn.Conv2DOp, [x, w, b], [1, 2], layout="NHWC", activation=act)
    fc = op_case(
        f"{name}/fc",
        nn.FullyConnectedOp,
        [x.reshape(-1, k), w.reshape(n, k), b],
        [1, 2],
        activation=act,
    )
    return [direct, gemm, fc]


CASES = [case for shape in SHAPES for case in _cases(*shape)]
NAMES = [case.id.split("/")[0] for case in CASES[::3]]


@pytest.fixture(scope="module")
def results() -> dict[str, list[tuple[str, int, np.ndarray]]]:
    """Case id -> (ISA, threads, output) for every run, and ("reference", 0, output)."""
    module, executable, built = build_executable(CASES, name="test_cpu_gemm", per_case=True)
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


@pytest.mark.parametrize("name", NAMES)
def test_matrix_product_forms_give_the_direct_sums_bit_for_bit(results, name: str) -> None:
    *runs, (_, _, want) = results[f"{name}/gemm"]
    *fc_runs, _ = results[f"{name}/fc"]
    *direct_runs, _ = results[f"{name}/direct"]
    for (isa, threads, gemm), (_, _, fc), (_, _, direct) in zip(
        runs, fc_runs, direct_runs, strict=True
    ):
        where = f"{isa}, {threads} thread(s)"
        np.testing.assert_allclose(gemm, want, rtol=RTOL, atol=ATOL, err_msg=where)
        np.testing.assert_array_equal(gemm, direct[:, 1:-1, 1:-1], err_msg=where)
        np.testing.assert_array_equal(fc, gemm.reshape(fc.shape), err_msg=where)
