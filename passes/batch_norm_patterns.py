"""Batch-norm patterns of `canonicalize`: fold into a neighbouring conv, or decompose.

An inference batch norm with constant parameters is the per-channel affine map
``y = x * a + b``, ``a = scale / sqrt(variance + epsilon)``, ``b = offset - mean * a``
(computed here in float64, as the reference kernel does). `canonicalize` first folds it into
the conv before it (`FoldBatchNormIntoConv`, in canonicalize.py); where that is impossible
these patterns, in this order:

* `FoldBatchNormIntoConvTranspose`: ``batch_norm(conv2d_transpose(x, w, bias))`` with the
  conv as the batch norm's only input user and no fused activation -> ``conv2d_transpose(x,
  w * a, bias * a + b)``, `a` along the filter's output-channel axis (IOHW: axis 1 within
  each group; OHWI: axis 0) — DBNet's head, whose ConvTranspose -> BatchNormalization ->
  Relu then becomes one op (`fuse-activations` takes the relu);
* `FoldBatchNormIntoNextConv`: ``conv2d(batch_norm(x))`` with an unpadded conv (a padded
  border would read zeros, not the shifted ``b``) and the batch norm as its input's only
  producer and user -> ``conv2d(x, w * a, bias + sum(w * b))``;
* `DecomposeBatchNorm`: ``batch_norm(x) -> add(mul(x, A), B)``, A and B the constants a
  and b shaped to broadcast along the channel dimension (`[C]` for NHWC, `[C, 1, 1]` for
  rank-4 NCHW), so any target with a broadcasting multiply and add runs it (DenseNet's
  pre-activation batch norms follow a concat).

Both need constant float32 or float64 parameters and data. A batch norm with a runtime
parameter, or on float16 data (where the multiply and the add would each round, unlike the
reference's single rounding), is left as it is.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import Float32Type, Float64Type, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from irc.dialects import nn
from irc.dialects.nn.base import ints_of, shape_of

# ---- Helpers -----------------------------------------------------------------------------------


def _constant_array(value: SSAValue) -> np.ndarray | None:
    """The data of `value` when an `nn.constant` defines it."""
    owner = value.owner
    return owner.to_array() if isinstance(owner, nn.ConstantOp) else None


def _exact_float(value: SSAValue) -> type[np.floating] | None:
    """numpy's type for a float32 / float64 tensor (the types decomposed exactly), else None."""
    t = value.type
    if isinstance(t, TensorType):
        if isinstance(t.element_type, Float32Type):
            return np.float32
        if isinstance(t.element_type, Float64Type):
            return np.float64
    return None


def batch_norm_affine(op: nn.BatchNormOp) -> tuple[np.ndarray, np.ndarray] | None:
    """The per-channel ``(a, b)`` of ``y = x * a + b`` in float64, or None when a parameter
    is not a constant or the data is not float32 / float64."""
    if _exact_float(op.input) is None or _exact_float(op.output) is None:
        return None
    parameters = (op.scale, op.offset, op.mean, op.variance)
    params = [p for p in (_constant_array(v) for v in parameters) if p is not None]
    if len(params) != len(parameters):
        return None
    scale, offset, mean, variance = (p.astype(np.float64) for p in params)
    a = scale / np.sqrt(variance + op.epsilon.value.data)
    return a, offset - mean * a


def channel_axis(op: nn.BatchNormOp) -> int:
    """The dimension of the input that the batch norm normalises."""
    return 1 if op.layout.data == "NCHW" else -1


def replace_with_conv(
    rewriter: PatternRewriter,
    replaced: Operation,
    conv: nn.Conv2DOp,
    data: SSAValue,
    new_filter: nn.ConstantOp,
    new_bias: nn.ConstantOp,
) -> None:
    """Replace `replaced` by `conv` (same properties and attributes) on `data` with the new
    filter and bias constants, all at `conv`'s location."""
    fused = nn.Conv2DOp.build(
        operands=[data, new_filter.output, new_bias.output],
        result_types=[replaced.results[0].type],
        properties=dict(conv.properties),
        attributes=dict(conv.attributes),
    )
    for new_op in (new_filter, new_bias, fused):
        new_op.location = conv.location
    rewriter.replace(replaced, [new_filter, new_bias, fused])


# ---- Fold into the next conv -------------------------------------------------------------------


class FoldBatchNormIntoNextConv(RewritePattern):
    """conv2d(batch_norm(x), w, bias) -> conv2d(x, w * a, bias + sum(w * b)) for an unpadded
    float conv in the batch norm's layout that is the batch norm's only user.

    With groups, output channel o of a group g reads input channels g * C/groups + i, so the
    filter's input-channel slice i of output o is scaled by a[g * C/groups + i].
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.BatchNormOp, rewriter: PatternRewriter) -> None:
        if not op.output.has_one_use():
            return
        conv = next(iter(op.output.uses)).operation
        if not isinstance(conv, nn.Conv2DOp) or conv.input != op.output:
            return
        if conv.layout.data != op.layout.data or any(ints_of(conv.pads)):
            return
        affine = batch_norm_affine(op)
        dtype = _exact_float(conv.filter)
        w = _constant_array(conv.filter)
        bias = None if conv.bias is None else _constant_array(conv.bias)
        if affine is None or dtype is None or w is None or (conv.bias is not None and bias is None):
            return
        a, b = affine
        oihw = w.astype(np.float64)
        if conv.layout.data == "NHWC":
            oihw = oihw.transpose(0, 3, 1, 2)  # OHWI -> OIHW
        out_channels, per_group = oihw.shape[:2]
        groups = conv.groups.value.data
        outputs_per_group = out_channels // groups
        source = (np.arange(out_channels) // outputs_per_group)[:, None] * per_group + np.arange(
            per_group
        )  # [O, C/groups]: the input channel each filter slice reads
        scaled = oihw * a[source][:, :, None, None]
        shift = np.einsum("oihw,oi->o", oihw, b[source])
        if conv.layout.data == "NHWC":
            scaled = scaled.transpose(0, 2, 3, 1)  # OIHW -> OHWI
        new_bias = shift if bias is None else bias.astype(np.float64) + shift
        new_filter = nn.ConstantOp.from_array(scaled.astype(dtype), conv.filter.type)
        new_bias_op = nn.ConstantOp.from_array(new_bias.astype(dtype))
        replace_with_conv(rewriter, conv, conv, op.input, new_filter, new_bias_op)
        rewriter.erase(op)


# ---- Decompose ---------------------------------------------------------------------------------


class FoldBatchNormIntoConvTranspose(RewritePattern):
    """batch_norm(conv2d_transpose(x, w, bias)) -> conv2d_transpose(x, w * a, bias * a + b)
    for constant float parameters, the conv's only user being the batch norm."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.BatchNormOp, rewriter: PatternRewriter) -> None:
        conv = op.input.owner
        if not isinstance(conv, nn.Conv2DTransposeOp) or not conv.output.has_one_use():
            return
        if conv.activation.data != "none" or conv.layout.data != op.layout.data:
            return
        affine = batch_norm_affine(op)
        w = _constant_array(conv.filter)
        bias = None if conv.bias is None else _constant_array(conv.bias)
        dtype = _exact_float(conv.filter)
        if affine is None or w is None or dtype is None or (conv.bias is not None and bias is None):
            return
        a, b = affine
        groups = conv.groups.value.data
        if conv.layout.data == "NCHW":  # IOHW, O = C_out / groups
            cin, o, kh, kw = w.shape
            k = a.reshape(groups, 1, o, 1, 1)
            scaled = (w.astype(np.float64).reshape(groups, cin // groups, o, kh, kw) * k).reshape(
                w.shape
            )
        else:  # OHWI, O = C_out
            scaled = w.astype(np.float64) * a.reshape(-1, 1, 1, 1)
        new_bias = (np.zeros_like(a) if bias is None else bias.astype(np.float64)) * a + b
        new_filter = nn.ConstantOp.from_array(np.ascontiguousarray(scaled.astype(dtype)))
        new_bias_op = nn.ConstantOp.from_array(np.ascontiguousarray(new_bias.astype(dtype)))
        fused = nn.Conv2DTransposeOp.build(
            operands=[conv.input, new_filter.output, new_bias_op.output],
            result_types=[op.output.type],
            properties=dict(conv.properties),
            attributes=dict(conv.attributes),
        )
        for new_op in (new_filter, new_bias_op, fused):
            new_op.location = conv.location
        rewriter.replace(op, [new_filter, new_bias_op, fused])


class DecomposeBatchNorm(RewritePattern):
    """batch_norm(x) -> add(mul(x, A), B), A and B constant per-channel, broadcast along the
    channel dimension of the batch norm's layout."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.BatchNormOp, rewriter: PatternRewriter) -> None:
        affine = batch_norm_affine(op)
        if affine is None:
            return
        dtype = _exact_float(op.output)
        assert dtype is not None  # batch_norm_affine checked it
        rank = len(shape_of(op.input))
        shape = (-1,) if channel_axis(op) == -1 else (-1, *[1] * (rank - 2))
        scale, shift = (
            nn.ConstantOp.from_array(np.ascontiguousarray(v.astype(dtype).reshape(shape)))
            for v in affine
        )
        new_ops: list[Operation] = [scale]
        mul = nn.MulOp.build(operands=[op.input, scale.output], result_types=[op.output.type])
        add = nn.AddOp.build(operands=[mul.output, shift.output], result_types=[op.output.type])
        new_ops += [mul, shift, add]
        for new_op in new_ops:
            new_op.location = op.location
        rewriter.replace(op, new_ops, [add.output])


def batch_norm_patterns() -> list[RewritePattern]:
    """The patterns of this module, in the order `canonicalize` tries them (after
    `FoldBatchNormIntoConv`)."""
    return [FoldBatchNormIntoConvTranspose(), FoldBatchNormIntoNextConv(), DecomposeBatchNorm()]
