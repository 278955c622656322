"""The CPU target's float fully connected kernel (`irc_fc`, targets/cpu/kernels/common/fc.c)
and its "fc" fusions (cpu-fuse: the gelu, or the residual add and a relu after it, in the
product's epilogue): against the reference target (float32, rtol 1e-4 / atol 1e-5), and the
fused kernel against the same ops unfused (`IRC_CPU_FUSE_FC=0`: the convolutions' kernel and
separate gelu / add / relu kernels) within 1e-6 relative, on every ISA profile this CPU
runs. Shapes cover the register tile's row tail (M not a multiple of the tile's rows, one
row), partial vectors of output channels (N not a multiple of 16 or 32) and K over one K
block (512: partial sums through the output between blocks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from cpu_support import (
    Case,
    build_executable,
    generated_source,
    isa_params,
    load_with_isa,
    lower,
    needs_compiler,
    reference_outputs,
)
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.targets.cpu.lowerings.fc import FC_KERNEL_ENV

pytestmark = needs_compiler

RTOL, ATOL = 1e-4, 1e-5
FUSION_RTOL = 1e-6


def normal(*shape: int, seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


Epilogue = Callable[[nn.FullyConnectedOp, Sequence[SSAValue]], list[Operation]]


def _gelu(approximate: str) -> Epilogue:
    return lambda fc, _: [nn.GeluOp.make(fc.output, approximate=approximate)]


def _residual(activation: str = "none", relu: bool = False, swap: bool = False) -> Epilogue:
    def build(fc: nn.FullyConnectedOp, rest: Sequence[SSAValue]) -> list[Operation]:
        operands = (rest[0], fc.output) if swap else (fc.output, rest[0])
        add = nn.AddOp.make(*operands, activation=activation)
        return [add, nn.ReluOp.make(add.output)] if relu else [add]

    return build


def _alone(fc: nn.FullyConnectedOp, _: Sequence[SSAValue]) -> list[Operation]:
    return []


def fc_case(
    case_id: str,
    m: Sequence[int],
    k: int,
    n: int,
    epilogue: Epilogue,
    *,
    bias: bool = True,
    activation: str = "none",
    residual: bool = False,
    seed: int = 0,
) -> Case:
    """x [*m, k] . w [n, k]^T (+ bias), the layer's `activation`, then `epilogue`'s ops;
    the weights and the bias are constants, x (and the residual) arguments."""
    arrays = [normal(*m, k, seed=seed, scale=0.5), normal(n, k, seed=seed + 1, scale=k**-0.5)]
    if bias:
        arrays.append(normal(n, seed=seed + 2))
    if residual:
        arrays.append(normal(*m, n, seed=seed + 3))

    def build(*values: SSAValue) -> list[Operation]:
        x, w, *rest = values
        b = rest.pop(0) if bias else None
        fc = nn.FullyConnectedOp.make(x, w, b, activation=activation)
        return [fc, *epilogue(fc, rest)]

    return Case(case_id, build, arrays, frozenset({1, 2} if bias else {1}))


def two_heads_case(case_id: str, m: int, k: int, n: int, seed: int) -> Case:
    """head(x) + head2(x) (DeiT's distillation heads): the add joins the first product's
    fusion, the second product runs alone and is its residual."""
    arrays = [normal(m, k, seed=seed), normal(n, k, seed=seed + 1), normal(n, k, seed=seed + 2)]

    def build(x: SSAValue, w1: SSAValue, w2: SSAValue) -> list[Operation]:
        p = nn.FullyConnectedOp.make(x, w1, None)
        q = nn.FullyConnectedOp.make(x, w2, None)
        return [p, q, nn.AddOp.make(p.output, q.output)]

    return Case(case_id, build, arrays, frozenset({1, 2}))


CASES = [
    fc_case("gelu_erf", (2, 5), 24, 40, _gelu("none")),
    fc_case("gelu_tanh", (13,), 37, 33, _gelu("tanh"), seed=10),
    fc_case("gelu_k_blocks", (30,), 600, 70, _gelu("none"), seed=20),
    fc_case("residual", (1, 16), 48, 48, _residual(), residual=True, seed=30),
    fc_case(
        "residual_relu6_swapped",
        (7,),
        20,
        20,
        _residual("relu6", swap=True),
        activation="relu",
        residual=True,
        seed=40,
    ),
    fc_case(
        "residual_then_relu",
        (25,),
        1030,
        17,
        _residual(relu=True),
        bias=False,
        residual=True,
        seed=50,
    ),
    fc_case("alone_one_row", (1,), 64, 200, _alone, seed=60),
    fc_case("alone_relu_n1_to_1", (197,), 16, 8, _alone, activation="relu_n1_to_1", seed=70),
    two_heads_case("two_heads", 1, 192, 100, seed=80),
]
PRODUCTS = len(CASES) + 1
"""Fully connected layers in CASES (two_heads has two)."""


def _lowered(fused: bool, monkeypatch: pytest.MonkeyPatch):
    """The cases' executable lowered with the fc kernel and fusions on or off, and the
    reference outputs."""
    module, executable, built = build_executable(CASES)
    expected = [reference_outputs(b) for b in built]
    with monkeypatch.context() as mp:
        mp.setenv(FC_KERNEL_ENV, "1" if fused else "0")
        lower(module)
    return executable, built, expected


def _split(outputs: list[np.ndarray], built) -> list[list[np.ndarray]]:
    per_case = []
    for b in built:
        per_case.append(outputs[: len(b.outputs)])
        outputs = outputs[len(b.outputs) :]
    return per_case


def test_the_kernel_and_its_fusions_are_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every product runs `irc_fc`, no gelu or add kernel is left; without them every one
    runs `irc_conv2d`."""
    executable, _, _ = _lowered(True, monkeypatch)
    source = generated_source(executable)
    body = source[source.index("irc_fn_0") :]
    assert body.count("irc_fc(") == PRODUCTS
    assert "irc_gelu(" not in body
    assert "irc_conv2d(" not in body
    executable, _, _ = _lowered(False, monkeypatch)
    body = generated_source(executable)
    body = body[body.index("irc_fn_0") :]
    assert "irc_fc(" not in body
    assert body.count("irc_conv2d(") == PRODUCTS


@pytest.mark.parametrize("name", isa_params())
def test_fused_matches_unfused_and_reference(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fused_exe, built, expected = _lowered(True, monkeypatch)
    plain_exe, _, _ = _lowered(False, monkeypatch)
    args = [a for b in built for a in b.args]
    fused = _split(list(load_with_isa(fused_exe, name).execute("entry", args)), built)
    plain = _split(list(load_with_isa(plain_exe, name).execute("entry", args)), built)
    for b, got, unfused, want in zip(built, fused, plain, expected, strict=True):
        for g, u, w in zip(got, unfused, want, strict=True):
            message = f"{name} {b.case.id}"
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=message)
            np.testing.assert_allclose(g, u, rtol=FUSION_RTOL, atol=0, err_msg=message)
