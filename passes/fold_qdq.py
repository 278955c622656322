"""Fold chains of quantization casts: ``qcast(dcast(x))`` and casts of constants.

* ``qcast(dcast(x))`` whose result has x's type is x: the dequantized values lie on x's grid,
  so quantizing them again gives back the stored values exactly (no rounding mode matters).
* ``qcast(dcast(x))`` into other per-tensor parameters with the same storage type is
  TFLite's requantize: one `quant.rescale` by ``s_in / s_out``
  (`irc.quantization.quantize_multiplier`), rounding with MultiplyByQuantizedMultiplier.
  Only for `half_away_from_zero` qcasts: TFLite's rounding is that one, while a
  `half_to_even` qcast (ONNX QuantizeLinear) would round its ties differently. Per-axis
  types, different storage and factors too large for a 32-bit rescale are left alone.
* ``dcast(qcast(x))`` is not folded: it rounds x onto the grid (and saturates). Only
  `insert-qdq{emulate-rounding=false}` passes unrounded values between the ops it converts.
* ``qcast`` / ``dcast`` of an `nn.constant` is evaluated with the reference kernels into a new
  constant (as `canonicalize`'s constant folding does).

A dcast left without users by a fold is erased with it: no dead casts stay behind.
`qdq_canonicalization_patterns()` are the chain patterns, for `canonicalize` to include.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from irc.dialects import nn, quant
from irc.dialects.quant import quantized_element
from irc.dtypes import numpy_dtype
from irc.quantization import quantize_multiplier
from irc.targets import reference

TFLITE_ROUNDING = "half_away_from_zero"
"""The qcast rounding that TFLite's requantization matches."""


def _erase_if_unused(op: Operation, rewriter: PatternRewriter) -> None:
    if all(not result.uses for result in op.results):
        rewriter.erase(op)


class RemoveQCastOfDCast(RewritePattern):
    """qcast(dcast(x : T)) : T -> x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: quant.QCastOp, rewriter: PatternRewriter) -> None:
        dcast = op.input.owner
        if not isinstance(dcast, quant.DCastOp):
            return
        if dcast.input.type != op.output.type:
            return
        rewriter.replace(op, [], [dcast.input])
        _erase_if_unused(dcast, rewriter)


class RequantizeQCastOfDCast(RewritePattern):
    """qcast(dcast(x : Q1)) : Q2 -> quant.rescale(x) by s1 / s2 (per-tensor, one storage type)"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: quant.QCastOp, rewriter: PatternRewriter) -> None:
        dcast = op.input.owner
        if not isinstance(dcast, quant.DCastOp) or op.rounding.data != TFLITE_ROUNDING:
            return
        source, result = quantized_element(dcast.input.type), quantized_element(op.output.type)
        if source is None or result is None or source == result:
            return
        if source.is_per_axis or result.is_per_axis:
            return
        if source.storage_type != result.storage_type:
            return
        try:
            multiplier, shift = quantize_multiplier(source.scale_values[0] / result.scale_values[0])
        except ValueError:
            return  # the factor does not fit a 32-bit rescale: keep the float round trip
        rescale = quant.RescaleOp(dcast.input, op.output.type, [multiplier], [shift])
        rescale.location = op.location
        rewriter.replace(op, rescale)
        _erase_if_unused(dcast, rewriter)


class FoldCastOfConstant(RewritePattern):
    """qcast(nn.constant) / dcast(nn.constant) -> nn.constant (reference kernels)"""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, quant.QCastOp | quant.DCastOp):
            return
        constant = op.input.owner
        if not isinstance(constant, nn.ConstantOp):
            return
        source = op.input.type
        assert isinstance(source, TensorType)
        if any(d < 0 for d in source.get_shape()):
            return
        array = constant.to_array()
        if quantized_element(source) is not None:
            array = array.view(numpy_dtype(source))  # i8 data of a u8 type holds u8 bits
        try:
            (value,) = reference.evaluate(op, array)
        except (reference.UnsupportedOpError, TypeError):
            return  # e.g. bf16: no numpy dtype to fold into
        folded = nn.ConstantOp.from_array(np.asarray(value, order="C"), op.output.type)
        folded.location = op.location
        rewriter.replace(op, folded)
        _erase_if_unused(constant, rewriter)


# ---- Pattern lists and pass --------------------------------------------------------------------


def qdq_canonicalization_patterns() -> list[RewritePattern]:
    """The cast-chain patterns, exposed for `canonicalize` and tests (constant casts are
    already folded there by `FoldConstantOperands`)."""
    return [RemoveQCastOfDCast(), RequantizeQCastOfDCast()]


def fold_qdq_patterns() -> list[RewritePattern]:
    """Every pattern of `fold-qdq`: the chain patterns and the folding of constant casts."""
    return [*qdq_canonicalization_patterns(), FoldCastOfConstant()]


@dataclass(frozen=True)
class FoldQDQPass(ModulePass):
    """Fold ``qcast(dcast(x))`` chains into x or a requantize, and casts of constants."""

    name = "fold-qdq"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(fold_qdq_patterns(), dce_enabled=False)
        )
        walker.rewrite_module(op)
