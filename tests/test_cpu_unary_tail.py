"""silu and gelu give an element the same bits in the vector body and in the tail.

`irc_silu` and `irc_gelu` run IRC_VL elements at a time and then the last `n % IRC_VL`; that
tail is one masked vector step of the same function (a scalar `expf` there, as `irc_silu`
had, made an element's bits depend on where it sits, so on the ISA's vector width). Each
case runs an array whose length leaves a tail on every ISA (61 = 3 * 16 + 13 = 7 * 8 + 5 =
15 * 4 + 1) and the same values tiled 16 times (no tail anywhere): the first 61 outputs of
the tiled run are the short run's, bit for bit, on every ISA profile this host runs; and
every profile with fused multiply-add (avx2, avx512, avx512vnni: the same `-ffp-contract=fast`
contractions) gives the same bits, except gelu's erf form, whose erfc divides on avx2 and
takes AVX-512's reciprocal estimate and a Newton step on avx512 (commit 7d327a6: 10 % of
65,536 values differ, up to 64 ulp at x = -8.4). The generic profile (no FMA at the
baseline `-march`) rounds exp's polynomial step by step: measured on an AVX-512 Xeon, silu
within 2 ulp of avx512vnni, gelu's tiny far-tail results up to 126 ulp. The float elementwise ops of
`lowerings/elementwise.py` (sigmoid, tanh, exp, erf, log) are one scalar libm call per
element on every ISA, so they have no tail of their own.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import (
    RUNNABLE_ISAS,
    build_executable,
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
)

from irc.dialects import nn

pytestmark = [needs_compiler, pytest.mark.private_cache]

LENGTH = 61
TILES = 16


def _values() -> np.ndarray:
    rng = np.random.default_rng(58)
    x = (rng.standard_normal(LENGTH) * 6).astype(np.float32)
    # the far tails of each function and the specials among the tail positions
    x[-13:] = [-100.0, -87.5, -30.0, -12.0, -0.0, 1e-30, 17.0, 88.7, 100.0, np.inf, -np.inf,
               np.nan, -9.9]  # fmt: skip
    return x


UNARY = [
    pytest.param(nn.SiluOp, {}, id="silu"),
    pytest.param(nn.GeluOp, {"approximate": "none"}, id="gelu-erf"),
    pytest.param(nn.GeluOp, {"approximate": "tanh"}, id="gelu-tanh"),
]


@pytest.mark.parametrize(("op_type", "props"), UNARY)
@pytest.mark.parametrize("isa_name", RUNNABLE_ISAS)
def test_an_element_has_the_same_bits_in_the_body_and_the_tail(
    op_type: type[nn.NNOp], props: dict[str, object], isa_name: str
) -> None:
    x = _values()
    cases = [
        op_case("short", op_type, [x], **props),
        op_case("tiled", op_type, [np.tile(x, TILES)], **props),
    ]
    module, executable, built = build_executable(cases, "test_cpu_unary_tail")
    lower(module)
    loaded = load_with_isa(executable, isa_name)
    short, tiled = loaded.execute("entry", [a for b in built for a in b.args])
    np.testing.assert_array_equal(short.view(np.uint32), tiled[:LENGTH].view(np.uint32))


FMA_ISAS = tuple(name for name in RUNNABLE_ISAS if name != "generic")


@pytest.mark.skipif(
    len(FMA_ISAS) < 2,
    reason="needs two vector ISA profiles this CPU runs to compare "
    f"(runs: {', '.join(FMA_ISAS) or 'none'})",
)
@pytest.mark.parametrize(("op_type", "props"), [UNARY[0], UNARY[2]])  # gelu-erf: below
def test_every_fma_profile_gives_the_same_bits(
    op_type: type[nn.NNOp], props: dict[str, object]
) -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([(rng.standard_normal(4093) * 8).astype(np.float32), _values()])
    module, executable, _ = build_executable([op_case("x", op_type, [x], **props)], "t")
    lower(module)
    runs = {name: load_with_isa(executable, name).execute("entry", [x])[0] for name in FMA_ISAS}
    first = runs[FMA_ISAS[0]].view(np.uint32)
    for name, y in runs.items():
        assert np.array_equal(y.view(np.uint32), first), f"{name} differs from {FMA_ISAS[0]}"
