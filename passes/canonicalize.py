"""Canonicalize: structural `nn` simplifications plus xDSL's own canonicalizations.

The greedy driver applies, until nothing changes:

* the canonicalization patterns that xDSL ops declare (`HasCanonicalizationPatternsTrait`,
  e.g. `arith`), collected by xDSL's own `CanonicalizationRewritePattern`, and their folders;
* the `nn` patterns of this file (`canonicalization_patterns()`): transpose and reshape chains
  collapse into one op, data-movement ops that provably do nothing are removed, a batch norm
  folds into the conv before it, or else into the conv after it or into a per-channel
  multiply-add (`batch_norm_patterns.py`);
* dead code elimination of side-effect-free ops, as in xDSL's `canonicalize`.

Every rewrite keeps the result types of the IR exactly: a value is only replaced by one of
the same type (an op whose input is `tensor<?x4xf32>` and whose result is `tensor<2x4xf32>`
stays, even when it moves no data). Constant folding of `nn` ops is not done here yet; its
patterns will join the list returned by `canonicalization_patterns()`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from irc.dialects import nn, quant
from irc.dialects.nn.base import floats_of, ints_attr, ints_of, product, shape_of
from irc.passes.batch_norm_patterns import batch_norm_patterns, replace_with_conv
from irc.passes.transformer_patterns import transformer_patterns
from irc.targets import reference

# ---- Helpers -----------------------------------------------------------------------------------


def _replace_by(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace the single result of `op` by `value` when the types match exactly."""
    if value.type != op.results[0].type:
        return  # e.g. a dynamic input for a static result: the IR would change its types
    rewriter.replace(op, [], [value])


# ---- Transpose ---------------------------------------------------------------------------------


class FoldTransposePair(RewritePattern):
    """transpose(transpose(x, p1), p2) -> transpose(x, p1[p2]), or x when that is the identity.

    Replacing the pair by x fires whatever the inner transpose's other users (one op fewer)
    but needs x to have the result's type; otherwise the pair becomes one transpose with the
    outer result type, when the outer op is the inner one's only user.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, nn.TransposeOp):
            return
        first, second = ints_of(inner.perm), ints_of(op.perm)
        composed = [first[p] for p in second]
        if composed == list(range(len(composed))) and inner.input.type == op.output.type:
            rewriter.replace(op, [], [inner.input])
            return
        if not inner.output.has_one_use():
            return  # the inner transpose stays for its other users: no op would be saved
        fused = nn.TransposeOp.build(
            operands=[inner.input],
            result_types=[op.output.type],
            properties={"perm": ints_attr(composed)},
            attributes=dict(op.attributes),
        )
        rewriter.replace(op, fused)


class RemoveIdentityTranspose(RewritePattern):
    """transpose(x, [0, 1, ..., n-1]) -> x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        perm = ints_of(op.perm)
        if list(perm) != list(range(len(perm))):
            return
        _replace_by(op, op.input, rewriter)


# ---- Reshape -----------------------------------------------------------------------------------


class FoldReshapePair(RewritePattern):
    """reshape(reshape(x, s1), s2) -> reshape(x, s2) when the inner reshape has no other user."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, nn.ReshapeOp):
            return
        if not inner.output.has_one_use():
            return  # keep the inner reshape alive for its other users; no gain
        fused = nn.ReshapeOp.build(
            operands=[inner.input],
            result_types=[op.output.type],
            properties={"shape": op.shape},
            attributes=dict(op.attributes),
        )
        rewriter.replace(op, fused)


def _reshape_is_identity(source: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether reshaping a tensor of shape `source` to the `shape` property `target` keeps
    every dimension, for every runtime size of the dynamic dimensions.

    A static source is kept when the target spells it out; a source with one dynamic
    dimension when the target has -1 exactly there (it resolves to the same size).
    `tensor<?x?xf32>` reshaped with `shape = [4, -1]` may really move dimensions.
    """
    if len(source) != len(target):
        return False
    dynamic = [d for d, size in enumerate(source) if size < 0]
    if not dynamic:
        return all(t in (s, -1) for s, t in zip(source, target)) and target.count(-1) <= 1
    if len(dynamic) > 1 or target[dynamic[0]] != -1:
        return False
    others = [s for d, s in enumerate(source) if d != dynamic[0]]
    known = [t for d, t in enumerate(target) if d != dynamic[0]]
    # With a zero-sized static dimension, -1 could resolve to anything.
    return known == others and product(others) > 0


class RemoveIdentityReshape(RewritePattern):
    """reshape(x, shape(x)) -> x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReshapeOp, rewriter: PatternRewriter) -> None:
        if not _reshape_is_identity(shape_of(op.input), ints_of(op.shape)):
            return
        _replace_by(op, op.input, rewriter)


# ---- Other identity data movement --------------------------------------------------------------


class RemoveIdentitySlice(RewritePattern):
    """slice(x, begin = 0, end = shape(x), strides = 1) -> x (needs static sizes)"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.SliceOp, rewriter: PatternRewriter) -> None:
        shape = shape_of(op.input)
        begin, end, strides = ints_of(op.begin), ints_of(op.end), ints_of(op.strides)
        if any(b != 0 for b in begin) or any(s != 1 for s in strides):
            return
        if any(size < 0 or e != size for size, e in zip(shape, end, strict=True)):
            return
        _replace_by(op, op.input, rewriter)


class RemoveIdentityPad(RewritePattern):
    """pad(x, pads = [0, ...]) -> x (any mode)"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.PadOp, rewriter: PatternRewriter) -> None:
        if any(ints_of(op.pads)):
            return
        _replace_by(op, op.input, rewriter)


class RemoveIdentityCast(RewritePattern):
    """cast(x) : T -> T  ->  x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.CastOp, rewriter: PatternRewriter) -> None:
        _replace_by(op, op.input, rewriter)


class RemoveUnboundedClip(RewritePattern):
    """clip(x) with neither `min` nor `max` -> x (same type: no requantization either)"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ClipOp, rewriter: PatternRewriter) -> None:
        if op.min is not None or op.max is not None:
            return
        _replace_by(op, op.input, rewriter)


class RemoveSingleInputConcat(RewritePattern):
    """concat(x) -> x when there is no fused activation (and no requantization)"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ConcatOp, rewriter: PatternRewriter) -> None:
        if len(op.inputs) != 1 or op.activation.data != "none":
            return
        _replace_by(op, op.inputs[0], rewriter)


class RemoveSinglePieceSplit(RewritePattern):
    """split(x, sizes = [n]) -> x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.SplitOp, rewriter: PatternRewriter) -> None:
        if len(op.outputs) != 1:
            return
        _replace_by(op, op.input, rewriter)


_EXACT_NEAREST_COORDINATES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
"""Coordinate modes mapping output index i to input index exactly i at scale 1."""

_FLOOR_ROUNDINGS = ("round_prefer_floor", "floor")
"""`tf_half_pixel_for_nn` maps i to i + 0.5 at scale 1; only these round it back to i."""


class RemoveIdentityResize(RewritePattern):
    """resize(x, size = spatial(x)) -> x for nearest-neighbour resizes at scale 1.

    Only nearest-neighbour: at scale 1 every coordinate mode but `tf_half_pixel_for_nn`
    samples input pixel i for output pixel i, and `tf_half_pixel_for_nn` does so when its
    rounding goes down. Bilinear resizes stay: their zero weights still multiply the
    neighbour (0 * inf is nan), so they are not an exact identity.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ResizeOp, rewriter: PatternRewriter) -> None:
        if op.mode.data != "nearest":
            return
        if op.scales is not None and any(s != 1.0 for s in floats_of(op.scales)):
            return
        coordinates = op.coordinate_mode.data
        if coordinates not in _EXACT_NEAREST_COORDINATES and not (
            coordinates == "tf_half_pixel_for_nn" and op.nearest_mode.data in _FLOOR_ROUNDINGS
        ):
            return
        _replace_by(op, op.input, rewriter)


# ---- Constant folding --------------------------------------------------------------------------

_FOLD_GROWTH_LIMIT = 1 << 16
"""Folding may grow constants (a broadcast) only up to this many result elements."""

_FOLDABLE = (nn.NNOp, quant.QCastOp, quant.DCastOp, quant.SCastOp, quant.RescaleOp)


def _static_size(type_: Attribute) -> int | None:
    if not isinstance(type_, TensorType) or any(d < 0 for d in type_.get_shape()):
        return None
    return product(type_.get_shape())


def _stored_elements(constant: nn.ConstantOp) -> int:
    """Distinct elements a constant needs (a splat needs one)."""
    array = constant.to_array()
    if array.size and np.all(array == array.flat[0]):
        return 1
    return array.size


class FoldConstantOperands(RewritePattern):
    """op(constant, ...) -> constant, evaluated with the reference kernels.

    The reference target is the definition of every op's semantics, so folding uses its
    kernels: one source of semantics. Covers elementwise ops, data movement (transpose,
    reshape, ...), casts, and quantized weights (quant.dcast / qcast of a constant). Ops the
    reference cannot evaluate on their own (quantized arithmetic before `lower-quantized`)
    are left alone, and folding never grows constants past a limit.
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, _FOLDABLE) or isinstance(op, nn.ConstantOp) or not op.operands:
            return
        producers = [p for p in (v.owner for v in op.operands) if isinstance(p, nn.ConstantOp)]
        if len(producers) != len(op.operands):
            return
        sizes = [s for s in (_static_size(t) for t in op.result_types) if s is not None]
        if len(sizes) != len(op.result_types):
            return
        operand_size = sum(_stored_elements(p) for p in producers)
        if sum(sizes) > max(operand_size, _FOLD_GROWTH_LIMIT):
            return
        try:
            values = reference.evaluate(op, *(p.to_array() for p in producers))
        except reference.UnsupportedOpError:
            return
        constants = [
            nn.ConstantOp(nn.dense_from_array(np.ascontiguousarray(value)), result_type)
            for value, result_type in zip(values, op.result_types, strict=True)
        ]
        for constant in constants:
            constant.location = op.location
        rewriter.replace(op, constants, [c.output for c in constants])


class FoldBatchNormIntoConv(RewritePattern):
    """batch_norm(conv2d(x, w, b)) -> conv2d(x, w * k, (b - mean) * k + offset),
    k = scale / sqrt(variance + epsilon), for constant float parameters.

    The conv must have no other user and no fused activation, and share the batch norm's
    layout (its output channels are then the normalised channels).
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.BatchNormOp, rewriter: PatternRewriter) -> None:
        conv = op.input.owner
        if not isinstance(conv, nn.Conv2DOp) or not conv.output.has_one_use():
            return
        if conv.activation.data != "none" or conv.layout.data != op.layout.data:
            return
        values = [conv.filter, op.scale, op.offset, op.mean, op.variance]
        if conv.bias is not None:
            values.append(conv.bias)
        constants = [v.owner for v in values if isinstance(v.owner, nn.ConstantOp)]
        if len(constants) != len(values):
            return
        filter_type = conv.filter.type
        if not isinstance(filter_type, TensorType) or not isinstance(
            filter_type.element_type, AnyFloat
        ):
            return
        w, scale, offset, mean, variance, *bias = (
            c.to_array().astype(np.float64) for c in constants
        )
        k = scale / np.sqrt(variance + op.epsilon.value.data)
        dtype = constants[0].to_array().dtype  # conv.filter's
        new_filter = nn.ConstantOp.from_array((w * k.reshape(-1, 1, 1, 1)).astype(dtype))
        b = bias[0] if bias else np.zeros_like(k)
        new_bias = nn.ConstantOp.from_array(((b - mean) * k + offset).astype(dtype))
        replace_with_conv(rewriter, op, conv, conv.input, new_filter, new_bias)


# ---- Pattern list and pass ---------------------------------------------------------------------


def canonicalization_patterns() -> list[RewritePattern]:
    """The `nn` patterns of this pass, exposed for reuse by pipelines and tests.

    Constant folding evaluates ops with the reference kernels (`irc.targets.reference`).
    """
    return [
        FoldConstantOperands(),
        FoldBatchNormIntoConv(),
        *batch_norm_patterns(),
        *transformer_patterns(),
        FoldTransposePair(),
        RemoveIdentityTranspose(),
        FoldReshapePair(),
        RemoveIdentityReshape(),
        RemoveIdentitySlice(),
        RemoveIdentityPad(),
        RemoveIdentityCast(),
        RemoveUnboundedClip(),
        RemoveSingleInputConcat(),
        RemoveSinglePieceSplit(),
        RemoveIdentityResize(),
    ]


@dataclass(frozen=True)
class CanonicalizePass(ModulePass):
    """Simplify the IR with irc's `nn` patterns and xDSL's canonicalizations, then DCE."""

    name = "canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        applier = GreedyRewritePatternApplier(
            [CanonicalizationRewritePattern(), *canonicalization_patterns()],
            ctx=ctx,
            folding_enabled=True,
        )
        PatternRewriteWalker(applier, post_walk_func=region_dce).rewrite_module(op)
