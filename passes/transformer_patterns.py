"""Transformer patterns of `canonicalize`: GELU as exporters decompose it becomes one `nn.gelu`.

`torch.onnx.export` writes `torch.nn.functional.gelu` as elementwise arithmetic; every
target runs `nn.gelu` (reference, cpu, opencl), so one op replaces five to eight:

* `FuseErfGelu`: ``x * 0.5 * (1 + erf(x / sqrt(2)))`` -> ``nn.gelu x`` (the divide may be
  a multiply by ``1 / sqrt(2)``);
* `FuseTanhGelu`: ``x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`` ->
  ``nn.gelu x approximate = "tanh"`` (the cube as ``pow(x, 3)`` or ``x * x * x``), the
  form of GPT-2's `gelu_new`.

The half and the ``x`` multiply in any order and association: ``(x * (1 + e)) * 0.5``,
``(x * 0.5) * (1 + e)`` or ``x * ((1 + e) * 0.5)``, each product's operands either way
round. Constants are scalars (or splats) within a relative 1e-6 of their exact values; every
intermediate value has one use, and the result has the type of ``x``, so nothing else
changes. Float tensors only (a quantized `nn.gelu` would be a table lookup of other
rounding). LayerNorm (ReduceMean, Sub, Pow, ...) and SiLU (``x * sigmoid(x)``) have no
single `nn` op that the targets run yet, so they stay decomposed.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from irc.dialects import nn
from irc.dialects.nn.base import is_float

__all__ = ["FuseErfGelu", "FuseTanhGelu", "transformer_patterns"]

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715


# ---- Matching helpers --------------------------------------------------------------------------


def _splat(value: SSAValue) -> float | None:
    """The one value of a constant whose elements are all equal, else None."""
    owner = value.owner
    if not isinstance(owner, nn.ConstantOp):
        return None
    array = owner.to_array()
    if array.size == 0 or array.dtype.kind != "f":
        return None
    first = array.reshape(-1)[0]
    return float(first) if np.all(array == first) else None


def _close(value: float | None, exact: float) -> bool:
    return value is not None and abs(value - exact) <= 1e-6 * abs(exact)


def _only_user(value: SSAValue) -> Operation | None:
    """The op that uses `value`, when exactly one use exists."""
    if not value.has_one_use():
        return None
    return next(iter(value.uses)).operation


def _other(op: Operation, value: SSAValue) -> SSAValue | None:
    """The other operand of a binary `op` that has `value` as one of its operands."""
    lhs, rhs = op.operands
    if lhs == value:
        return rhs
    return lhs if rhs == value else None


def _times_constant(value: SSAValue, exact: float) -> SSAValue | None:
    """`y` when `value` is ``y * c`` (either order) with ``c`` close to `exact`."""
    op = value.owner
    if not isinstance(op, nn.MulOp):
        return None
    lhs, rhs = op.operands
    if _close(_splat(rhs), exact):
        return lhs
    if _close(_splat(lhs), exact):
        return rhs
    return None


def _scaled_by_half_and(x: SSAValue, one_plus: SSAValue) -> Operation | None:
    """The root op of ``x * 0.5 * one_plus`` in any order and association, or None."""
    user = _only_user(one_plus)
    if not isinstance(user, nn.MulOp):
        return None
    factor = _other(user, one_plus)
    if factor is None:
        return None
    if factor == x:  # (x * (1 + e)) * 0.5
        root = _only_user(user.results[0])
        if isinstance(root, nn.MulOp) and _close(_splat(_other(root, user.results[0])), 0.5):  # type: ignore[arg-type]
            return root
        return None
    if _close(_splat(factor), 0.5):  # x * ((1 + e) * 0.5)
        root = _only_user(user.results[0])
        if isinstance(root, nn.MulOp) and _other(root, user.results[0]) == x:
            return root
        return None
    if _times_constant(factor, 0.5) == x and factor.has_one_use():  # (x * 0.5) * (1 + e)
        return user
    return None


def _plus_one(value: SSAValue) -> SSAValue | None:
    """The result of the only user of `value` when it is ``value + 1``."""
    add = _only_user(value)
    if isinstance(add, nn.AddOp) and _close(_splat(_other(add, value)), 1.0):  # type: ignore[arg-type]
        return add.results[0]
    return None


def _is_float_tensor(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, TensorType) and is_float(t.element_type)


def _replace_with_gelu(
    root: Operation, x: SSAValue, approximate: str, rewriter: PatternRewriter
) -> None:
    gelu = nn.GeluOp.make(x, approximate=approximate)
    if gelu.results[0].type != root.results[0].type:
        return  # a broadcasting constant changed the shape: not a plain GELU
    gelu.location = root.location
    rewriter.replace(root, [gelu])


# ---- Patterns ----------------------------------------------------------------------------------


class FuseErfGelu(RewritePattern):
    """``x * 0.5 * (1 + erf(x / sqrt(2)))`` -> ``nn.gelu x``, matched from the `nn.erf`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ErfOp, rewriter: PatternRewriter) -> None:
        scaled = op.operands[0]
        if not _is_float_tensor(scaled) or not scaled.has_one_use():
            return
        inner = scaled.owner
        x: SSAValue | None = None
        if isinstance(inner, nn.DivOp) and _close(_splat(inner.operands[1]), _SQRT2):
            x = inner.operands[0]
        else:
            x = _times_constant(scaled, 1.0 / _SQRT2)
        if x is None:
            return
        one_plus = _plus_one(op.results[0])
        root = None if one_plus is None else _scaled_by_half_and(x, one_plus)
        if root is not None:
            _replace_with_gelu(root, x, "none", rewriter)


def _cube_of(value: SSAValue) -> SSAValue | None:
    """`x` when `value` is ``pow(x, 3)``, ``(x * x) * x`` or ``x * (x * x)``."""
    op = value.owner
    if isinstance(op, nn.PowOp) and _close(_splat(op.operands[1]), 3.0):
        return op.operands[0]
    if isinstance(op, nn.MulOp):
        for square, x in (op.operands, reversed(op.operands)):
            inner = square.owner
            if (
                isinstance(inner, nn.MulOp)
                and square.has_one_use()
                and inner.operands[0] == inner.operands[1] == x
            ):
                return x
    return None


class FuseTanhGelu(RewritePattern):
    """``x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` -> ``nn.gelu x
    approximate = "tanh"``, matched from the `nn.tanh`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TanhOp, rewriter: PatternRewriter) -> None:
        scaled = op.operands[0]
        if not _is_float_tensor(scaled) or not scaled.has_one_use():
            return
        inner = _times_constant(scaled, _SQRT_2_OVER_PI)
        if inner is None or not inner.has_one_use() or not isinstance(inner.owner, nn.AddOp):
            return
        x = None
        for candidate, term in (inner.owner.operands, reversed(inner.owner.operands)):
            cube = _times_constant(term, _CUBIC)
            if term.has_one_use() and cube is not None and cube.has_one_use():
                if _cube_of(cube) == candidate:
                    x = candidate
                    break
        if x is None:
            return
        one_plus = _plus_one(op.results[0])
        root = None if one_plus is None else _scaled_by_half_and(x, one_plus)
        if root is not None:
            _replace_with_gelu(root, x, "tanh", rewriter)


def transformer_patterns() -> list[RewritePattern]:
    """The patterns of this module, in the order `canonicalize` tries them."""
    return [FuseErfGelu(), FuseTanhGelu()]
