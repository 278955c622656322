"""A float conv's or fully connected layer's filter packed in blocks of 16 output channels
(NV = 1: the AVX2 and other profiles' packing, `packing.float_vectors_per_block`) or of 32
(NV = 2: AVX-512's) gives the same sums bit for bit with every ISA profile this host runs:
AVX-512's 32-channel tile reads two 16-channel blocks side by side (IRC_CONV_PAIRS in
kernels/common/conv2d.c), AVX2's reads one 32-channel block in two slices, so a lowered
executable loaded with another profile than the one that packed it only runs at another
speed. Shapes: output channels that fill pairs, leave a last odd block, or a partial
vector; 1x1 (one row of pixels), padded 3x3 with a stride, two groups, a fully connected
layer (one pixel: the matrix-vector form); 1 and 2 threads (channel ranges split over them).
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
from irc.targets.cpu import packing

pytestmark = [needs_compiler, pytest.mark.private_cache]

RTOL, ATOL = 1e-4, 1e-5
_RNG = np.random.default_rng(20261128)


def _conv(name: str, x_shape, w_shape, groups: int = 1, **props: object) -> Case:
    x = _RNG.uniform(-1, 1, x_shape).astype(np.float32)
    w = _RNG.uniform(-0.5, 0.5, w_shape).astype(np.float32)
    b = _RNG.uniform(-1, 1, w_shape[0]).astype(np.float32)
    return op_case(name, nn.Conv2DOp, [x, w, b], [1, 2], groups=groups, layout="NHWC", **props)


def _fc(name: str, m: int, k: int, n: int) -> Case:
    x = _RNG.uniform(-1, 1, (m, k)).astype(np.float32)
    w = _RNG.uniform(-0.5, 0.5, (n, k)).astype(np.float32)
    b = _RNG.uniform(-1, 1, n).astype(np.float32)
    return op_case(name, nn.FullyConnectedOp, [x, w, b], [1, 2], activation="relu6")


CASES = [
    _conv("pointwise_oc96", (1, 7, 9, 40), (96, 1, 1, 40), activation="relu6"),
    _conv("pointwise_oc40", (1, 5, 5, 24), (40, 1, 1, 24), activation="none"),
    _conv("pointwise_oc17", (1, 3, 11, 300), (17, 1, 1, 300), activation="relu"),
    _conv(
        "padded_3x3s2_oc72",
        (1, 11, 10, 8),
        (72, 3, 3, 8),
        strides=[2, 2],
        pads=[1, 1, 1, 1],
        activation="tanh",
    ),
    _conv("grouped_oc48", (1, 6, 6, 16), (48, 3, 3, 8), groups=2, pads=[1, 1, 1, 1]),
    _fc("fc_1x640_to_100", 1, 640, 100),
    _fc("fc_5x64_to_56", 5, 64, 56),
]


@pytest.fixture(scope="module")
def results() -> dict[int, dict[str, list[tuple[str, int, np.ndarray]]]]:
    """NV -> case id -> (ISA, threads, output) per run, and ("reference", 0, output)."""
    out: dict[int, dict[str, list[tuple[str, int, np.ndarray]]]] = {}
    patch = pytest.MonkeyPatch()
    try:
        for nv in (1, 2):
            patch.setattr(
                packing,
                "float_vectors_per_block",
                lambda ocg, nv=nv: packing.vectors_per_block(ocg) if nv == 2 else 1,
            )
            module, executable, built = build_executable(
                CASES, name=f"test_cpu_conv_packing_nv{nv}", per_case=True
            )
            expected = [reference_outputs(b)[0] for b in built]
            lower(module)
            runs: dict[str, list[tuple[str, int, np.ndarray]]] = {b.case.id: [] for b in built}
            for name in isas_with_distinct_code(executable):
                loaded = load_with_isa(executable, name)
                for threads in (1, 2):
                    loaded.set_threads(threads)
                    got = execute_cases(loaded, built)
                    for b, value in zip(built, got, strict=True):
                        runs[b.case.id].append((name, threads, np.asarray(value)))
            for b, value in zip(built, expected, strict=True):
                runs[b.case.id].append(("reference", 0, np.asarray(value)))
            out[nv] = runs
    finally:
        patch.undo()
    return out


@pytest.mark.parametrize("case", [c.id for c in CASES])
def test_both_packings_give_the_same_sums_with_every_profile(results, case: str) -> None:
    *one, (_, _, want) = results[1][case]
    *two, _ = results[2][case]
    assert one, "no ISA profile ran"
    for (isa, threads, got1), (_, _, got2) in zip(one, two, strict=True):
        where = f"{isa}, {threads} thread(s)"
        np.testing.assert_allclose(got1, want, rtol=RTOL, atol=ATOL, err_msg=where)
        np.testing.assert_array_equal(got1, got2, err_msg=where)


def test_the_packing_follows_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    from irc.targets.cpu import isa

    monkeypatch.setattr(isa, "select", lambda: isa.PROFILES["avx512vnni"])
    assert packing.float_vectors_per_block(96) == 2
    assert packing.float_vectors_per_block(16) == 1
    monkeypatch.setattr(isa, "select", lambda: isa.PROFILES["avx2"])
    assert packing.float_vectors_per_block(96) == 1
