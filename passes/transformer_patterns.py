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
rounding).

The other transformer blocks become the ops of `irc.dialects.nn.transformer`:

* `FuseLayerNorm`: ``mean = reduce_mean(x)``, ``c = x - mean``, ``var = reduce_mean(c^2)``
  (``pow(c, 2)`` or ``c * c``), ``c / sqrt(var + eps)`` or ``c * rsqrt(var + eps)``, then
  an optional ``* scale`` and ``+ bias`` -> ``nn.layer_norm`` (torch's export before opset
  17, and the ONNX importer's form of LayerNormalization). Both means reduce the same
  trailing axes with `keepdims`; scale and bias have the normalised shape (a missing scale
  becomes a constant of ones).
* `FuseSilu`: ``x * sigmoid(x)`` (either order) -> ``nn.silu x``.
* `FuseAttention`: ``softmax(q @ k * s [+ mask], axis=-1) @ v`` -> ``nn.attention`` (the
  scale as a multiply by a splat or a divide by one, or absent; the mask added either way
  round, or GPT-2's ``select(keep, scores, finfo.min)``, which becomes the additive mask
  ``select(keep, 0, finfo.min)``; ``k`` as ``[..., D, Lk]`` (`key_transposed`) or read
  through `adj_y`). A query or key multiplied by a splat before the product, through
  reshapes and transposes (Whisper's pre-scaled queries, torch's export of
  `scaled_dot_product_attention`), has the factor moved into the scale.
* `MatmulToFullyConnected`: ``x @ W [+ b]`` with a constant 2-D ``W`` (torch's Linear as
  exported: MatMul, Add) -> ``nn.fully_connected x, W^T, b``, the op every target runs as
  its blocked GEMM with the bias in the epilogue (the weights transposed once, here).

Every intermediate value of a matched form has one use.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.utils.exceptions import VerifyException

from irc.dialects import nn
from irc.dialects.nn.base import ints_of, is_float
from irc.dtypes import numpy_dtype

__all__ = [
    "FuseAttention",
    "FuseErfGelu",
    "FuseLayerNorm",
    "FuseSilu",
    "FuseTanhGelu",
    "MatmulToFullyConnected",
    "transformer_patterns",
]

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715


# ---- Matching helpers --------------------------------------------------------------------------


def _splat(value: SSAValue | None) -> float | None:
    """The one value of a constant whose elements are all equal, else None (also for no
    value)."""
    if value is None:
        return None
    owner = value.owner
    if not isinstance(owner, nn.ConstantOp):
        return None
    array = owner.to_array()
    if array.size == 0 or array.dtype.kind != "f":
        return None
    first = array.reshape(-1)[0]
    return float(first) if np.all(array == first) else None


def _close(value: float | None, exact: float) -> bool:
    """`value` is `exact` in float32, or `exact` rounded to float16 (a float16 model's)."""
    if value is None:
        return False
    return abs(value - exact) <= 1e-6 * abs(exact) or value == float(np.float16(exact))


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
        if isinstance(root, nn.MulOp) and _close(_splat(_other(root, user.results[0])), 0.5):
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
    if isinstance(add, nn.AddOp) and _close(_splat(_other(add, value)), 1.0):
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


def _trailing_mean_axes(op: Operation, rank: int) -> int | None:
    """The first axis when `op` is a keepdims mean over the trailing axes axis..rank-1."""
    if not isinstance(op, nn.ReduceOp) or op.kind.data != "mean" or not op.keepdims.value.data:
        return None
    axes = sorted({a % rank for a in ints_of(op.axes)})
    if not axes or axes != list(range(axes[0], rank)):
        return None
    return axes[0]


def _squared(value: SSAValue, c: SSAValue) -> bool:
    """Whether `value` is ``pow(c, 2)`` or ``c * c``, used once."""
    op = value.owner
    if not value.has_one_use():
        return False
    if isinstance(op, nn.PowOp):
        return op.operands[0] == c and _close(_splat(op.operands[1]), 2.0)
    return isinstance(op, nn.MulOp) and op.operands[0] == op.operands[1] == c


def _normalized_shape_operand(value: SSAValue | None, normalized: tuple[int, ...]) -> bool:
    return (
        value is not None
        and isinstance(value.type, TensorType)
        and tuple(value.type.get_shape()) == normalized
    )


class FuseLayerNorm(RewritePattern):
    """``(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale] [+ bias]`` ->
    ``nn.layer_norm``, matched from the first `nn.reduce`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReduceOp, rewriter: PatternRewriter) -> None:
        x = op.input
        if not _is_float_tensor(x) or not isinstance(x.type, TensorType):
            return
        x_shape = tuple(x.type.get_shape())
        axis = _trailing_mean_axes(op, len(x_shape))
        center = _only_user(op.output)
        if (
            axis is None
            or not isinstance(center, nn.SubOp)
            or tuple(center.operands) != (x, op.output)
        ):
            return
        c = center.results[0]
        users = list(dict.fromkeys(use.operation for use in c.uses))  # c * c uses c twice
        if len(users) != 2:
            return
        square = next((u for u in users if _squared(u.results[0], c)), None)
        divide = next((u for u in users if u is not square), None)
        if square is None or divide is None:
            return
        variance = _only_user(square.results[0])
        if variance is None or _trailing_mean_axes(variance, len(x_shape)) != axis:
            return
        plus = _only_user(variance.results[0])
        if not isinstance(plus, nn.AddOp):
            return
        epsilon = _splat(_other(plus, variance.results[0]))
        root = _only_user(plus.results[0])
        if epsilon is None or epsilon < 0 or root is None:
            return
        if isinstance(root, nn.SqrtOp):
            if not (
                isinstance(divide, nn.DivOp) and tuple(divide.operands) == (c, root.results[0])
            ):
                return
        elif isinstance(root, nn.RsqrtOp):
            if not (isinstance(divide, nn.MulOp) and _other(divide, c) == root.results[0]):
                return
        else:
            return
        if not root.results[0].has_one_use():
            return
        self._rewrite(x, axis, epsilon, divide, rewriter)

    @staticmethod
    def _rewrite(
        x: SSAValue, axis: int, epsilon: float, normalized: Operation, rewriter: PatternRewriter
    ) -> None:
        """Absorb the affine ``* scale + bias`` that follows `normalized` and replace it."""
        assert isinstance(x.type, TensorType)
        shape = tuple(x.type.get_shape())[axis:]
        last, scale, bias = normalized, None, None
        user = _only_user(last.results[0])
        if isinstance(user, nn.MulOp):
            candidate = _other(user, last.results[0])
            if _normalized_shape_operand(candidate, shape) and candidate != last.results[0]:
                last, scale = user, candidate
                user = _only_user(last.results[0])
        if isinstance(user, nn.AddOp):
            candidate = _other(user, last.results[0])
            if _normalized_shape_operand(candidate, shape) and candidate != last.results[0]:
                last, bias = user, candidate
        if last.results[0].type != x.type or any(d < 0 for d in shape):
            return
        new_ops: list[Operation] = []
        if scale is None:
            ones = nn.ConstantOp.from_array(np.ones(shape, numpy_dtype(x.type.element_type)))
            new_ops.append(ones)
            scale = ones.results[0]
        # The axis counted from the end reads alike at every rank; the epsilon is the float32
        # constant's shortest decimal (1e-12, not 9.99999996e-13).
        norm = nn.LayerNormOp.make(
            x,
            scale,
            bias,
            axis=axis - len(x.type.get_shape()),
            epsilon=float(str(np.float32(epsilon))),
        )
        norm.location = last.location
        rewriter.replace(last, [*new_ops, norm])


class FuseSilu(RewritePattern):
    """``x * sigmoid(x)`` -> ``nn.silu x``, matched from the `nn.sigmoid`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.SigmoidOp, rewriter: PatternRewriter) -> None:
        x = op.input
        if not _is_float_tensor(x):
            return
        mul = _only_user(op.output)
        if not isinstance(mul, nn.MulOp) or _other(mul, op.output) != x:
            return
        if mul.results[0].type != x.type or mul.activation.data != "none":
            return
        silu = nn.SiluOp.make(x)
        silu.location = mul.location
        rewriter.replace(mul, [silu])


def _scale_of(value: SSAValue) -> tuple[SSAValue, float]:
    """(product, scale) when `value` is ``product * s``, ``s * product`` or
    ``product / d`` (s = 1 / d) of a splat, else (value, 1.0)."""
    op = value.owner
    if isinstance(op, nn.DivOp):
        d = _splat(op.rhs)
        if d is not None and d != 0.0 and op.activation.data == "none":
            return op.lhs, 1.0 / d
    if isinstance(op, nn.MulOp) and op.activation.data == "none":
        for product, factor in (op.operands, reversed(op.operands)):
            s = _splat(factor)
            if s is not None and isinstance(product.owner, nn.BatchMatmulOp):
                return product, s
    return value, 1.0


def _prescaled(value: SSAValue) -> tuple[nn.MulOp, SSAValue, float] | None:
    """(the multiply, x, s) when `value` is ``x * s`` (either order) of a splat `s`, seen
    through a chain of reshapes and transposes (each with one use; scaling commutes with
    them), and the multiply broadcasts nothing: Whisper's ``q_proj(x) * scaling`` before the
    heads are split, or `scaled_dot_product_attention`'s export, ``(q * sqrt(s)) @ (k^T *
    sqrt(s))``."""
    while isinstance(value.owner, nn.ReshapeOp | nn.TransposeOp) and value.has_one_use():
        value = value.owner.operands[0]
    mul = value.owner
    if not isinstance(mul, nn.MulOp) or mul.activation.data != "none" or not value.has_one_use():
        return None
    for x, factor in (mul.operands, reversed(mul.operands)):
        s = _splat(factor)
        if s is not None and x.type == mul.output.type and _is_float_tensor(x):
            return mul, x, s
    return None


class FuseAttention(RewritePattern):
    """``softmax(q @ k * scale [+ mask]) @ v`` -> ``nn.attention``, matched from the
    `nn.softmax` over the last axis."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.SoftmaxOp, rewriter: PatternRewriter) -> None:
        scores = op.input
        if not _is_float_tensor(scores) or not isinstance(scores.type, TensorType):
            return
        rank = len(scores.type.get_shape())
        if op.axis.value.data % rank != rank - 1 or op.beta.value.data != 1.0:
            return
        pv = _only_user(op.output)
        if (
            not isinstance(pv, nn.BatchMatmulOp)
            or pv.lhs != op.output
            or pv.adj_x.value.data
            or pv.adj_y.value.data
        ):
            return
        mask = None
        inner = scores
        add = scores.owner
        if isinstance(add, nn.AddOp) and add.activation.data == "none" and scores.has_one_use():
            for candidate, other in (add.operands, reversed(add.operands)):
                scaled = _scale_of(candidate)
                if (
                    candidate.has_one_use()
                    and scaled is not None
                    and isinstance(scaled[0].owner, nn.BatchMatmulOp)
                ):
                    inner, mask = candidate, other
                    break
        new_ops: list[Operation] = []
        if isinstance(add, nn.SelectOp) and scores.has_one_use():
            masked = self._select_as_mask(add)
            if masked is None:
                return
            inner, new_ops = masked
            mask = new_ops[-1].results[0]
        if not inner.has_one_use():
            return
        product, scale = _scale_of(inner)
        qk = product.owner
        if (
            not isinstance(qk, nn.BatchMatmulOp)
            or qk.adj_x.value.data
            or (product != inner and not product.has_one_use())
        ):
            return
        key_transposed = not qk.adj_y.value.data
        prescaled = [m for m in (_prescaled(qk.lhs), _prescaled(qk.rhs)) if m is not None]
        for _, _, factor in prescaled:
            scale *= factor
        try:
            attention = nn.AttentionOp.make(
                qk.lhs, qk.rhs, pv.rhs, mask, scale=scale, key_transposed=key_transposed
            )
        except VerifyException:
            return  # broadcast batch dimensions or a mask of another shape: keep the graph
        if attention.output.type != pv.output.type:
            attention.erase()
            return
        for mul, x, _ in prescaled:  # the attention's operands follow
            rewriter.replace(mul, [], [x])
        attention.location = pv.location
        rewriter.replace(pv, [*new_ops, attention])

    @staticmethod
    def _select_as_mask(select: nn.SelectOp) -> tuple[SSAValue, list[Operation]] | None:
        """``select(keep, scores, low)`` with a splat ``low <= -1e30`` (GPT-2's causal mask,
        torch.finfo.min) as (scores, the ops of the additive mask ``select(keep, 0, low)``):
        ``scores + low`` rounds to ``low`` for any score below 1e22 in magnitude, so the
        softmax sees the same values. In a float16 model `low` is half's lowest, -65504
        (float16 conversions clip finfo.min to it), and ``scores + low`` is far enough below
        every unmasked score that its exponential is 0 as well."""
        low = _splat(select.on_false)
        scores = select.on_true
        if low is None or not isinstance(scores.type, TensorType):
            return None
        element = scores.type.element_type
        dtype = numpy_dtype(element)
        if low > (-65504.0 if dtype == np.float16 else -1e30):
            return None
        if not isinstance(_scale_of(scores)[0].owner, nn.BatchMatmulOp):
            return None
        zero = nn.ConstantOp.from_array(np.zeros((), dtype))
        floor = nn.ConstantOp.from_array(np.full((), low, dtype))
        mask = nn.SelectOp.make(
            select.condition, zero.output, floor.output, result_elements=element
        )
        return scores, [zero, floor, mask]


class MatmulToFullyConnected(RewritePattern):
    """``batch_matmul(x, W) [+ b]`` with a constant matrix ``W`` -> ``fully_connected(x,
    W^T, b)``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.BatchMatmulOp, rewriter: PatternRewriter) -> None:
        weights = op.rhs.owner
        if (
            not isinstance(weights, nn.ConstantOp)
            or op.adj_x.value.data
            or not _is_float_tensor(op.lhs)
            or not _is_float_tensor(op.rhs)
            or not isinstance(op.lhs.type, TensorType)
        ):
            return
        matrix = weights.to_array()
        if matrix.ndim != 2 or len(op.lhs.type.get_shape()) < 2:
            return
        if not op.adj_y.value.data:
            matrix = matrix.T
        last: Operation = op
        bias = None
        add = _only_user(op.output)
        if isinstance(add, nn.AddOp) and add.activation.data == "none":
            other = _other(add, op.output)
            if (
                other is not None
                and isinstance(other.type, TensorType)
                and tuple(other.type.get_shape()) == (matrix.shape[0],)
                and other != op.output
            ):
                last, bias = add, other
        constant = nn.ConstantOp.from_array(np.ascontiguousarray(matrix))
        linear = nn.FullyConnectedOp.make(op.lhs, constant.output, bias)
        if linear.output.type != last.results[0].type:
            return
        linear.location = last.location
        rewriter.replace(last, [constant, linear])


def transformer_patterns() -> list[RewritePattern]:
    """The patterns of this module, in the order `canonicalize` tries them."""
    return [
        FuseErfGelu(),
        FuseTanhGelu(),
        FuseLayerNorm(),
        FuseSilu(),
        FuseAttention(),
        MatmulToFullyConnected(),
    ]
