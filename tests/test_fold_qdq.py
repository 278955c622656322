"""`fold-qdq`: the QDQ chain patterns (dcast -> qcast of the same type cancels, a requantizing
chain becomes TFLite's `quant.rescale`), checked against the float round trip they replace.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, f32, i8
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

import irc
from irc.context import get_all_passes, make_context
from irc.diagnostics import verify_module
from irc.dialects.quant import UniformQuantizedType
from irc.passes.fold_qdq import (
    FoldQDQPass,
    RemoveQCastOfDCast,
    RequantizeQCastOfDCast,
    qdq_canonicalization_patterns,
)
from irc.passes.insert_qdq import insert_qdq


def parse(text: str) -> ModuleOp:
    return irc.parse_module(text)


def run(module: ModuleOp, *inputs: np.ndarray) -> list[np.ndarray]:
    """Run @main on the reference target (lower-quantized first, as `irc.run` does)."""
    outputs = irc.run(module, {f"arg{i}": x for i, x in enumerate(inputs)})
    return list(outputs.values())


def ops_named(module: ModuleOp, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


def test_pass_is_registered() -> None:
    assert get_all_passes()["fold-qdq"]() is FoldQDQPass


# ---- fold-qdq patterns -------------------------------------------------------------------------


def _chain(source: UniformQuantizedType, target: UniformQuantizedType, rounding: str) -> str:
    return f"""
    func.func @main(%x: tensor<256x{source}>) -> tensor<256x{target}> {{
      %d = quant.dcast %x : tensor<256x{source}> to tensor<256xf32>
      %q = quant.qcast %d rounding = "{rounding}" : tensor<256xf32> to tensor<256x{target}>
      func.return %q : tensor<256x{target}>
    }}
    """


def _fold(module: ModuleOp) -> ModuleOp:
    FoldQDQPass().apply(make_context(), module)
    verify_module(module)
    return module


ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


@pytest.mark.parametrize("rounding", ["half_away_from_zero", "half_to_even"])
def test_same_type_chain_is_the_identity(rounding: str) -> None:
    element = UniformQuantizedType.per_tensor(i8, f32, 0.0123, -7)
    module = parse(_chain(element, element, rounding))
    (want,) = run(module, ALL_INT8)
    np.testing.assert_array_equal(want, ALL_INT8)  # the float round trip is exact
    folded = _fold(module)
    assert not ops_named(folded, "quant.dcast")
    assert not ops_named(folded, "quant.qcast")


@pytest.mark.parametrize(
    ("source", "target"),
    [((0.05, -4), (0.1, 3)), ((0.1, 0), (0.03, -20)), ((0.00390625, -128), (0.0078125, 0))],
)
def test_requantize_matches_the_float_round_trip(source, target) -> None:
    """The rescale is TFLite's requantize: equal to qcast(dcast(x)) except at (near) ties,
    which the float round trip rounds either way, by one step at most."""
    a = UniformQuantizedType.per_tensor(i8, f32, *source)
    b = UniformQuantizedType.per_tensor(i8, f32, *target)
    module = parse(_chain(a, b, "half_away_from_zero"))
    (want,) = run(module, ALL_INT8)
    folded = _fold(module)
    assert [op.name for op in folded.walk() if op.name.startswith("quant.")] == ["quant.rescale"]
    (got,) = run(folded, ALL_INT8)
    errors = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert errors.max() <= 1
    real = (ALL_INT8.astype(np.float64) - source[1]) * source[0] / target[0]
    near_tie = np.abs(np.abs(real - np.floor(real)) - 0.5) < 1e-4
    assert not (errors & ~near_tie).any()


def test_requantize_does_not_fire_for_onnx_rounding_or_per_axis() -> None:
    a = UniformQuantizedType.per_tensor(i8, f32, 0.05)
    b = UniformQuantizedType.per_tensor(i8, f32, 0.1)
    module = _fold(parse(_chain(a, b, "half_to_even")))
    assert not ops_named(module, "quant.rescale")
    assert len(ops_named(module, "quant.qcast")) == 1


def test_dcast_of_qcast_is_not_folded() -> None:
    """After insert-qdq{emulate-rounding=true} the qcast -> dcast pairs round on purpose:
    fold-qdq keeps every one of them."""
    element = UniformQuantizedType.per_tensor(i8, f32, 0.5, -3)
    t = f"tensor<4x{element}>"
    text = f"""
    func.func @main(%x: {t}) -> {t} {{
      %a = nn.relu %x : {t} -> {t}
      %b = nn.relu %a : {t} -> {t}
      func.return %b : {t}
    }}
    """
    module = parse(text)
    insert_qdq(module)
    counts = (len(ops_named(module, "quant.dcast")), len(ops_named(module, "quant.qcast")))
    _fold(module)
    assert (len(ops_named(module, "quant.dcast")), len(ops_named(module, "quant.qcast"))) == counts


def test_canonicalization_patterns_are_exposed() -> None:
    patterns = qdq_canonicalization_patterns()
    assert {type(p) for p in patterns} == {RemoveQCastOfDCast, RequantizeQCastOfDCast}
    element = UniformQuantizedType.per_tensor(i8, f32, 0.25)
    module = parse(_chain(element, element, "half_away_from_zero"))
    PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(module)
    verify_module(module)
    assert [op.name for op in module.walk() if op.name.startswith("quant.")] == []
