"""Lower quantized `nn` ops to integer arithmetic, `quant.rescale` and clamps (TOSA's way).

docs/design.md §2: quantized semantics are defined once. This pass rewrites every quantized `nn`
op whose TFLite int8 kernel is fixed-point arithmetic into the integer form of the same
computation, so the reference target, and every target running int8 natively, executes
plain integer `nn` ops plus `quant.rescale` (TFLite's MultiplyByQuantizedMultiplier):

* values enter integers with `quant.scast` (quantized -> storage integers), are widened with
  `nn.cast` to i32 and have their zero point subtracted with `nn.sub` of an i32 constant
  where TFLite subtracts it; quantized constants (weights, biases) are folded at compile
  time into new integer constants instead;
* products (conv2d, conv2d_transpose, fully_connected, batch_matmul) accumulate exactly into
  i32 and are requantized by one `quant.rescale` per output channel
  (``s_in * s_w[c] / s_out``); add/sub follow TFLite's general 8-bit algorithm (inputs
  shifted left by 20 bits, rescaled to a common scale, summed, rescaled); mul rescales the
  product of zero-centred inputs by ``s_x * s_y / s_out``;
* pools work on stored values (TFLite's int8 pools); mean is TFLite's QuantizedMeanOrSum
  (sum of zero-centred values, one rescale with the element count folded into the
  multiplier); concat requantizes inputs whose parameters differ from the result's with a
  single-rounding rescale (TFLite requantizes uint8 concat inputs in float, rounding once,
  and rejects int8 inputs whose parameters differ);
* relu/relu6/clip/leaky_relu/prelu/maximum/minimum/abs/neg requantize to the result's
  parameters as TFLite's int8 activation kernels do.

The rescales round as TFLite's MultiplyByQuantizedMultiplier (`double_round`) unless the op
carries `irc.rescale_rounding = "single_round"` (`RESCALE_ROUNDING`: ONNX models).

Fused activations clamp in the integer domain: the final `quant.rescale` writes the result's
quantized type (adding its zero point, saturating to its storage range); when the activation
range (`irc.quantization.activation_range`, TFLite's CalculateActivationRangeQuantized) is
narrower, ``quant.scast -> nn.clip {min, max = stored bounds} -> quant.scast`` follows.
`nn.clip` therefore only ever sees integer tensors here, and no quantized clip kernel is
needed.

Ops with direct quantized kernels (softmax, sigmoid, tanh, hard_swish, gelu, exp, log, ...,
resize) and data-movement ops (reshape, transpose, pad, slice, gather, ...) are left as they
are. Quantized ops the pass cannot express fail with a located error: 16-bit storage, per-axis
quantized activations, mixed storage between an input and its weights, a fused `tanh`, a
negative leaky_relu slope, requantization factors beyond a 32-bit rescale. Quantized
reduce `prod`, div and squared_difference are not lowered yet and stay as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from irc.diagnostics import emit_error
from irc.dialects import nn, quant
from irc.dialects.nn.base import ints_of
from irc.dialects.quant import (
    RESCALE_ROUNDING,
    UniformQuantizedType,
    quantized_element,
    storage_bounds,
    storage_tensor_type,
)
from irc.quantization import (
    activation_range,
    quantize_multiplier,
    round_half_away_from_zero,
)

# ---- Constants ---------------------------------------------------------------------------------

_ADD_LEFT_SHIFT = 20
"""TFLite's `left_shift` for 8-bit ADD/SUB: inputs gain 20 fraction bits before rescaling."""

"""`quant.rescale` requires multipliers in [2^30, 2^31) (or 0)."""

# ---- Small helpers -----------------------------------------------------------------------------


def rescale_rounding(op: Operation) -> str:
    """The `quant.rescale` rounding of `op`'s requantization (`RESCALE_ROUNDING`)."""
    attr = op.attributes.get(RESCALE_ROUNDING)
    return attr.data if isinstance(attr, StringAttr) else "double_round"


def _tensor(value: SSAValue) -> TensorType:
    type_ = value.type
    assert isinstance(type_, TensorType), "nn ops verify that their operands are tensors"
    return type_


def _qtype(value: SSAValue) -> UniformQuantizedType | None:
    return quantized_element(_tensor(value))


def _storage_dtype(qtype: UniformQuantizedType) -> np.dtype:
    unsigned = qtype.storage_type.signedness.data == Signedness.UNSIGNED
    return np.dtype(f"{'u' if unsigned else ''}int{qtype.storage_width}")


def _with_element(type_: TensorType, element: Attribute) -> TensorType:
    return TensorType(element, type_.get_shape())


def _constant_array(value: SSAValue) -> np.ndarray | None:
    """The data of a value defined by `nn.constant` (quantized: its stored integers)."""
    owner = value.owner
    if not isinstance(owner, nn.ConstantOp):
        return None
    array = owner.to_array()
    qtype = _qtype(value)
    if qtype is not None and array.dtype != _storage_dtype(qtype):
        array = array.view(_storage_dtype(qtype))  # i8 data for a u8 type: same bits
    return array


def _per_axis(values: Sequence[float] | Sequence[int], axis: int | None, rank: int) -> np.ndarray:
    """Per-axis parameters shaped to broadcast along `axis` (a scalar when per-tensor)."""
    array = np.asarray(values)
    if axis is None or array.size == 1:
        return array.reshape(())
    shape = [1] * rank
    shape[axis] = array.size
    return array.reshape(shape)


def _fail(op: Operation, message: str) -> NoReturn:
    emit_error(op, f"lower-quantized: {message}")


def _multiplier(op: Operation, real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier, as a located error when the factor does not fit."""
    try:
        return quantize_multiplier(real)
    except ValueError:
        _fail(op, f"requantization factor {real:g} is too large for a 32-bit rescale")


def _channel_multipliers(
    op: Operation, s_in: float, filter_scales: Sequence[float], s_out: float
) -> list[tuple[int, int]]:
    """`_multiplier(op, s_in * s_w / s_out)` for every filter scale `s_w`, vectorised: the
    same float64 operations in the same order, and QuantizeMultiplier's frexp and
    round-half-away-from-zero done exactly in numpy (per-channel convolutions have
    thousands). Any factor the fast path cannot take goes through `_multiplier`."""
    reals = (np.float64(s_in) * np.asarray(filter_scales, dtype=np.float64)) / np.float64(s_out)
    fraction, shift = np.frexp(reals)
    scaled = fraction * float(1 << 31)  # exact: a power-of-two scaling
    fixed = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int64)
    carry = fixed == 1 << 31
    fixed = np.where(carry, fixed // 2, fixed)
    shift = shift.astype(np.int64) + carry
    if not ((reals > 0) & (shift >= -31) & (shift <= 30) & np.isfinite(reals)).all():
        return [_multiplier(op, real) for real in reals.tolist()]
    return list(zip(fixed.tolist(), shift.tolist(), strict=True))


def _require_8bit(op: Operation, *values: SSAValue) -> None:
    for value in values:
        qtype = _qtype(value)
        if qtype is not None and qtype.storage_width != 8:
            _fail(
                op,
                f"only 8-bit quantized tensors are supported, got {qtype.storage_type} storage",
            )


def _require_per_tensor(op: Operation, *values: SSAValue) -> None:
    for value in values:
        qtype = _qtype(value)
        if qtype is not None and qtype.is_per_axis:
            _fail(op, f"expected per-tensor quantization, got {qtype}")


def _activation_bounds(op: Operation, result: TensorType, activation: str) -> tuple[int, int]:
    qtype = quantized_element(result)
    assert qtype is not None
    try:
        return activation_range(
            activation, qtype.scale_values[0], qtype.zero_point_values[0], qtype.storage_range
        )
    except ValueError:
        _fail(op, f"fused activation '{activation}' has no quantized clamp range")


def _str_property(op: Operation, name: str, default: str) -> str:
    attr = op.properties.get(name)
    return str(attr.data) if isinstance(attr, StringAttr | EnumAttribute) else default


def _activation(op: Operation) -> str:
    return _str_property(op, "activation", "none")


def _props_without_activation(op: Operation) -> dict[str, Attribute]:
    return {name: value for name, value in op.properties.items() if name != "activation"}


# ---- IR construction ---------------------------------------------------------------------------


@dataclass
class _Emitter:
    """Builds the replacement of one op; every new op carries the original op's location."""

    anchor: Operation
    ops: list[Operation] = field(default_factory=list[Operation])
    folded: list[nn.ConstantOp] = field(default_factory=list[nn.ConstantOp])
    """Quantized constants read at compile time; erased when the rewrite leaves them unused."""

    def emit(self, op: Operation) -> SSAValue:
        op.location = self.anchor.location
        self.ops.append(op)
        return op.results[0]

    def constant(self, array: np.ndarray) -> SSAValue:
        # np.asarray, not np.ascontiguousarray: the latter makes 0-d arrays 1-d.
        return self.emit(nn.ConstantOp.from_array(np.asarray(array, order="C")))

    def i32_scalar(self, value: int) -> SSAValue:
        return self.constant(np.array(value, dtype=np.int32))

    def storage(self, value: SSAValue) -> SSAValue:
        """The stored integers of a quantized value (`quant.scast`; constants folded)."""
        type_ = _tensor(value)
        if quantized_element(type_) is None:
            return value
        array = self.constant_array(value)
        if array is not None:
            return self.constant(array)
        return self.emit(quant.SCastOp(value, storage_tensor_type(type_)))

    def centered(self, value: SSAValue, *, narrow: bool = False) -> SSAValue:
        """``stored - zero_point`` as integers.

        Wide (default): an i32 tensor, as TFLite's elementwise kernels compute. `narrow`, for
        the operands of an exact integer product: a zero point of 0 keeps the storage type
        (i8 x i8 accumulates exactly into i32), a constant folds to i16.
        """
        qtype = _qtype(value)
        assert qtype is not None
        rank = _tensor(value).get_num_dims()
        zero_points = _per_axis(qtype.zero_point_values, qtype.axis, rank).astype(np.int32)
        array = self.constant_array(value)
        if array is not None:
            if narrow and not zero_points.any():
                return self.constant(array)
            return self.constant(
                (array.astype(np.int32) - zero_points).astype(np.int16 if narrow else np.int32)
            )
        stored = self.storage(value)
        if narrow and not zero_points.any():
            return stored
        wide = self.emit(nn.CastOp.make(stored, result_elements=i32))
        if not zero_points.any():
            return wide
        return self.emit(nn.SubOp.make(wide, self.constant(zero_points)))

    def constant_array(self, value: SSAValue) -> np.ndarray | None:
        """The data of a constant operand, remembering quantized constants for erasure."""
        array = _constant_array(value)
        if array is not None and _qtype(value) is not None:
            assert isinstance(value.owner, nn.ConstantOp)
            self.folded.append(value.owner)
        return array

    def shift_left(self, value: SSAValue, bits: int) -> SSAValue:
        """``value * 2^bits`` in i32 (constants folded)."""
        array = _constant_array(value)
        if array is not None:
            return self.constant(array.astype(np.int32) * np.int32(1 << bits))
        return self.emit(nn.MulOp.make(value, self.i32_scalar(1 << bits)))

    def rescale(
        self,
        value: SSAValue,
        element: Attribute,
        pairs: Sequence[tuple[int, int]],
        axis: int | None = None,
    ) -> SSAValue:
        """`quant.rescale` of `value` to `element` (quantized: zero point added, saturated)."""
        multipliers = [m for m, _ in pairs]
        shifts = [s for _, s in pairs]
        if len(set(pairs)) == 1:
            multipliers, shifts, axis = multipliers[:1], shifts[:1], None
        result = _with_element(_tensor(value), element)
        rounding = rescale_rounding(self.anchor)
        return self.emit(quant.RescaleOp(value, result, multipliers, shifts, axis, rounding))

    def clamp(self, value: SSAValue, low: int, high: int) -> SSAValue:
        """`nn.clip` of an integer tensor to stored bounds (nothing for its full range)."""
        element = _tensor(value).element_type
        assert isinstance(element, IntegerType)
        if (low, high) == storage_bounds(element):
            return value
        return self.emit(nn.ClipOp.make(value, min=float(low), max=float(high)))

    def to_quantized(self, stored: SSAValue, type_: TensorType) -> SSAValue:
        return self.emit(quant.SCastOp(stored, type_))

    def clamp_quantized(self, value: SSAValue, bounds: tuple[int, int]) -> SSAValue:
        """Clamp a quantized value to stored `bounds` (nothing when they are its full range)."""
        type_ = _tensor(value)
        qtype = quantized_element(type_)
        assert qtype is not None
        if bounds == qtype.storage_range:
            return value  # the rescale that produced `value` saturated to this range already
        stored = self.emit(quant.SCastOp(value, storage_tensor_type(type_)))
        return self.to_quantized(self.clamp(stored, *bounds), type_)

    def requantize(
        self, value: SSAValue, element: UniformQuantizedType, rounding: str | None = None
    ) -> SSAValue:
        """A quantized value re-expressed in another per-tensor quantized type (rounding:
        the anchor's, `rescale_rounding`, unless given)."""
        rounding = rescale_rounding(self.anchor) if rounding is None else rounding
        source = _qtype(value)
        assert source is not None
        if source == element:
            return value
        real = source.scale_values[0] / element.scale_values[0]
        pair = _multiplier(self.anchor, real)
        result = _with_element(_tensor(value), element)
        return self.emit(quant.RescaleOp(value, result, [pair[0]], [pair[1]], rounding=rounding))

    def replace(self, rewriter: PatternRewriter, result: SSAValue) -> None:
        """Replace the anchor op; quantized constants folded into integer ones go with it
        when nothing else uses them (no weights are kept twice)."""
        rewriter.replace(self.anchor, self.ops, [result])
        for constant in dict.fromkeys(self.folded):
            if not constant.output.uses:
                rewriter.erase(constant)


# ---- Products: conv2d, conv2d_transpose, fully_connected, batch_matmul ---------------------------


def _result_channel_axis(op: Operation) -> int:
    rank = _tensor(op.results[0]).get_num_dims()
    if isinstance(op, nn.FullyConnectedOp):
        return rank - 1
    return 3 if _str_property(op, "layout", "NHWC") == "NHWC" else 1


def _filter_scales(op: Operation, weights: UniformQuantizedType, channels: int) -> list[float]:
    scales = list(weights.scale_values)
    if len(scales) == 1:
        return scales * channels
    if len(scales) != channels:
        _fail(op, f"weights have {len(scales)} per-channel scales for {channels} output channels")
    return scales


def _check_storage_match(op: Operation, input: SSAValue, weights: SSAValue, what: str) -> None:
    a, b = _qtype(input), _qtype(weights)
    assert a is not None
    assert b is not None
    if a.storage_type != b.storage_type:
        _fail(op, f"{what} storage {b.storage_type} differs from input storage {a.storage_type}")


class LowerQuantizedConvolution(RewritePattern):
    """conv2d / conv2d_transpose / fully_connected on quantized tensors ->
    integer op (x - zp_x, w - zp_w, i32 bias) into i32 -> per-channel quant.rescale ->
    clamp to the fused activation."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: nn.Conv2DOp | nn.Conv2DTransposeOp | nn.FullyConnectedOp,
        rewriter: PatternRewriter,
    ) -> None:
        x, w = op.operands[0], op.operands[1]
        bias = op.operands[2] if len(op.operands) > 2 else None
        qx, qw, qy = _qtype(x), _qtype(w), _qtype(op.results[0])
        if qx is None or qw is None or qy is None:
            return
        _require_8bit(op, x, op.results[0])
        _require_per_tensor(op, x, op.results[0])
        what = "weights" if isinstance(op, nn.FullyConnectedOp) else "filter"
        _check_storage_match(op, x, w, what)
        if bias is not None:
            element = _tensor(bias).element_type
            storage = element.storage_type if isinstance(element, UniformQuantizedType) else element
            if storage != i32:
                _fail(op, f"expected an i32 bias, got {element}")
        result = _tensor(op.results[0])
        axis = _result_channel_axis(op)
        channels = result.get_shape()[axis]
        s_in, s_out = qx.scale_values[0], qy.scale_values[0]
        pairs = _channel_multipliers(op, s_in, _filter_scales(op, qw, channels), s_out)
        bounds = _activation_bounds(op, result, _activation(op))

        e = _Emitter(op)
        operands = [
            e.centered(x, narrow=True),
            e.centered(w, narrow=True),
            None if bias is None else e.storage(bias),
        ]
        acc = e.emit(
            type(op).build(
                operands=operands,
                result_types=[_with_element(result, i32)],
                properties=_props_without_activation(op),
            )
        )
        y = e.rescale(acc, qy, pairs, axis)
        e.replace(rewriter, e.clamp_quantized(y, bounds))


class LowerQuantizedBatchMatmul(RewritePattern):
    """batch_matmul(x, y) -> batch_matmul(x - zp_x, y - zp_y) into i32 -> quant.rescale
    by ``s_x * s_y / s_out``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.BatchMatmulOp, rewriter: PatternRewriter) -> None:
        qa, qb, qy = _qtype(op.lhs), _qtype(op.rhs), _qtype(op.output)
        if qa is None or qb is None or qy is None:
            return
        _require_8bit(op, op.lhs, op.rhs, op.output)
        _require_per_tensor(op, op.lhs, op.rhs, op.output)
        _check_storage_match(op, op.lhs, op.rhs, "rhs")
        pair = _multiplier(op, qa.scale_values[0] * qb.scale_values[0] / qy.scale_values[0])

        e = _Emitter(op)
        acc = e.emit(
            nn.BatchMatmulOp.build(
                operands=[e.centered(op.lhs, narrow=True), e.centered(op.rhs, narrow=True)],
                result_types=[_with_element(_tensor(op.output), i32)],
                properties=dict(op.properties),
            )
        )
        e.replace(rewriter, e.rescale(acc, qy, [pair]))


# ---- Elementwise arithmetic --------------------------------------------------------------------


def _elementwise_params(
    op: Operation, *values: SSAValue
) -> tuple[list[UniformQuantizedType], UniformQuantizedType] | None:
    """Quantized types of the operands and the result, after checking what TFLite requires."""
    types = [t for t in (_qtype(v) for v in values) if t is not None]
    result = _qtype(op.results[0])
    if result is None or len(types) != len(values):
        return None
    _require_8bit(op, *values, op.results[0])
    _require_per_tensor(op, *values, op.results[0])
    return types, result


class LowerQuantizedAddSub(RewritePattern):
    """add/sub -> TFLite's general 8-bit algorithm:
    ``r_i = rescale((x_i - zp_i) << 20, s_i / (2 max(s_1, s_2)))``,
    ``y = rescale(r_1 +/- r_2, 2 max(s_1, s_2) / (2^20 s_out))`` into the result, clamp."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.AddOp | nn.SubOp, rewriter: PatternRewriter) -> None:
        params = _elementwise_params(op, op.lhs, op.rhs)
        if params is None:
            return
        (qa, qb), qy = params
        twice_max = 2 * max(qa.scale_values[0], qb.scale_values[0])
        input_pairs = [_multiplier(op, q.scale_values[0] / twice_max) for q in (qa, qb)]
        output_pair = _multiplier(op, twice_max / ((1 << _ADD_LEFT_SHIFT) * qy.scale_values[0]))
        bounds = _activation_bounds(op, _tensor(op.output), _activation(op))

        e = _Emitter(op)
        scaled = [
            e.rescale(e.shift_left(e.centered(v), _ADD_LEFT_SHIFT), i32, [pair])
            for v, pair in zip((op.lhs, op.rhs), input_pairs, strict=True)
        ]
        total = e.emit(type(op).make(*scaled))
        y = e.rescale(total, qy, [output_pair])
        e.replace(rewriter, e.clamp_quantized(y, bounds))


class LowerQuantizedMul(RewritePattern):
    """mul -> ``rescale((x - zp_x) * (y - zp_y), s_x * s_y / s_out)`` into the result, clamp."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.MulOp, rewriter: PatternRewriter) -> None:
        params = _elementwise_params(op, op.lhs, op.rhs)
        if params is None:
            return
        (qa, qb), qy = params
        pair = _multiplier(op, qa.scale_values[0] * qb.scale_values[0] / qy.scale_values[0])
        bounds = _activation_bounds(op, _tensor(op.output), _activation(op))

        e = _Emitter(op)
        product = e.emit(nn.MulOp.make(e.centered(op.lhs), e.centered(op.rhs)))
        y = e.rescale(product, qy, [pair])
        e.replace(rewriter, e.clamp_quantized(y, bounds))


class LowerQuantizedMaximumMinimum(RewritePattern):
    """maximum/minimum -> the same op on stored integers (inputs first requantized to the
    result's parameters when theirs differ; TFLite's kernel needs them equal)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.MaximumOp | nn.MinimumOp, rewriter: PatternRewriter) -> None:
        params = _elementwise_params(op, op.lhs, op.rhs)
        if params is None:
            return
        _, qy = params
        e = _Emitter(op)
        stored = [e.storage(e.requantize(v, qy)) for v in (op.lhs, op.rhs)]
        result = e.emit(type(op).make(*stored))
        e.replace(rewriter, e.to_quantized(result, _tensor(op.output)))


# ---- Activations -------------------------------------------------------------------------------


def _clip_bounds(op: nn.ClipOp, qtype: UniformQuantizedType) -> tuple[int, int]:
    """Real clip bounds as stored integers: ``zp + round(bound / scale)``, saturated."""
    scale, zero_point = qtype.scale_values[0], qtype.zero_point_values[0]
    low, high = qtype.storage_range

    def stored(real: float) -> int:
        return min(max(zero_point + round_half_away_from_zero(real / scale), low), high)

    lo = low if op.min is None else stored(op.min.value.data)
    hi = high if op.max is None else stored(op.max.value.data)
    return lo, hi


class LowerQuantizedClamp(RewritePattern):
    """relu / relu6 / clip -> requantize to the result's parameters (TFLite ReluX), then
    clamp the stored integers to the activation's bounds."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: nn.ReluOp | nn.Relu6Op | nn.ClipOp, rewriter: PatternRewriter
    ) -> None:
        params = _elementwise_params(op, op.input)
        if params is None:
            return
        _, qy = params
        result = _tensor(op.output)
        if isinstance(op, nn.ClipOp):
            bounds = _clip_bounds(op, qy)
        else:
            activation = "relu" if isinstance(op, nn.ReluOp) else "relu6"
            bounds = _activation_bounds(op, result, activation)

        e = _Emitter(op)
        y = e.requantize(op.input, qy)
        stored = e.clamp(e.storage(y), *bounds)
        e.replace(rewriter, e.to_quantized(stored, result))


class LowerQuantizedLeakyRelu(RewritePattern):
    """leaky_relu -> ``rescale(max(x - zp, 0), s_x / s_y) + rescale(min(x - zp, 0),
    alpha s_x / s_y)`` (TFLite QuantizeLeakyRelu: one of the two terms is zero)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.LeakyReluOp, rewriter: PatternRewriter) -> None:
        params = _elementwise_params(op, op.input)
        if params is None:
            return
        (qx,), qy = params
        alpha = op.alpha.value.data
        if alpha < 0:
            _fail(op, f"a negative leaky_relu slope ({alpha:g}) is not supported")
        ratio = qx.scale_values[0] / qy.scale_values[0]
        identity, slope = _multiplier(op, ratio), _multiplier(op, ratio * alpha)

        e = _Emitter(op)
        x = e.centered(op.input)
        positive = e.rescale(e.emit(nn.ReluOp.make(x)), i32, [identity])
        negative = e.rescale(e.emit(nn.ClipOp.make(x, max=0.0)), i32, [slope])
        total = e.emit(nn.AddOp.make(positive, negative))
        e.replace(rewriter, e.rescale(total, qy, [quantize_multiplier(1.0)]))


class LowerQuantizedPRelu(RewritePattern):
    """prelu -> ``rescale(max(x', 0), s_x / s_y) + rescale(min(x', 0) * (a - zp_a),
    s_x s_a / s_y)`` with ``x' = x - zp_x`` (TFLite's int8 PRELU)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.PReluOp, rewriter: PatternRewriter) -> None:
        params = _elementwise_params(op, op.lhs, op.rhs)
        if params is None:
            return
        (qx, qa), qy = params
        s_x, s_y = qx.scale_values[0], qy.scale_values[0]
        identity = _multiplier(op, s_x / s_y)
        slope = _multiplier(op, s_x * qa.scale_values[0] / s_y)

        e = _Emitter(op)
        x = e.centered(op.lhs)
        positive = e.rescale(e.emit(nn.ReluOp.make(x)), i32, [identity])
        negative_x = e.emit(nn.ClipOp.make(x, max=0.0))
        product = e.emit(nn.MulOp.make(negative_x, e.centered(op.rhs)))
        negative = e.rescale(product, i32, [slope])
        total = e.emit(nn.AddOp.make(positive, negative))
        e.replace(rewriter, e.rescale(total, qy, [quantize_multiplier(1.0)]))


class LowerQuantizedAbsNeg(RewritePattern):
    """abs / neg -> ``rescale(f(x - zp), s_x / s_y)`` into the result.

    abs is TFLite's int8 ABS. For neg this is the real negation; TFLite's int8 NEG negates
    the stored values and ignores the zero points (only right for zero points of 0, where
    the two agree except that -(-128) saturates to 127 instead of wrapping).
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.AbsOp | nn.NegOp, rewriter: PatternRewriter) -> None:
        params = _elementwise_params(op, op.input)
        if params is None:
            return
        (qx,), qy = params
        pair = _multiplier(op, qx.scale_values[0] / qy.scale_values[0])
        e = _Emitter(op)
        value = e.emit(type(op).make(e.centered(op.input)))
        e.replace(rewriter, e.rescale(value, qy, [pair]))


# ---- Pooling and reductions --------------------------------------------------------------------


class LowerQuantizedPool(RewritePattern):
    """max_pool2d / avg_pool2d -> the pool on stored integers (TFLite's int8 pools; the
    integer average rounds half away from zero) -> requantize if the result's parameters
    differ -> clamp to the fused activation."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: nn.MaxPool2DOp | nn.AvgPool2DOp, rewriter: PatternRewriter
    ) -> None:
        params = _elementwise_params(op, op.input)
        if params is None:
            return
        (qx,), qy = params
        result = _tensor(op.output)
        bounds = _activation_bounds(op, result, _activation(op))

        e = _Emitter(op)
        pooled = e.emit(
            type(op).build(
                operands=[e.storage(op.input)],
                result_types=[storage_tensor_type(_with_element(result, qx))],
                properties=_props_without_activation(op),
            )
        )
        if qx == qy:
            y = e.to_quantized(e.clamp(pooled, *bounds), result)
        else:
            y = e.requantize(e.to_quantized(pooled, _with_element(result, qx)), qy)
            y = e.clamp_quantized(y, bounds)
        e.replace(rewriter, y)


def _mean_multiplier(op: Operation, real: float, count: int) -> tuple[int, int]:
    """TFLite's QuantizedMeanOrSum: fold ``1 / count`` into the multiplier of ``real``.

    ``shift' = min(floor(log2 count), 32, 31 + shift)``, ``multiplier' = (multiplier <<
    shift') // count``, ``shift -= shift'``. The folded multiplier may be below 2^30;
    `quant.rescale` takes it as it is, exactly as TFLite does.
    """
    multiplier, shift = _multiplier(op, real)
    if multiplier == 0:
        return 0, 0
    bits = min(count.bit_length() - 1, 32, 31 + shift)
    multiplier = (multiplier << bits) // count
    return multiplier, shift - bits


class LowerQuantizedReduce(RewritePattern):
    """reduce mean/sum -> ``rescale(sum(x - zp), ...)`` (TFLite QuantizedMeanOrSum);
    reduce max/min -> the reduction on stored integers, requantized if parameters differ.
    `prod` stays quantized (TFLite's int8 REDUCE_PROD scales every partial product)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReduceOp, rewriter: PatternRewriter) -> None:
        kind = op.kind.data
        if kind == "prod":
            return
        params = _elementwise_params(op, op.input)
        if params is None:
            return
        (qx,), qy = params
        result = _tensor(op.output)
        shape = _tensor(op.input).get_shape()
        rank = len(shape)
        count = 1
        for axis in ints_of(op.axes):
            count *= shape[axis % rank]
        if count < 1:
            _fail(op, "a quantized mean or sum needs static, non-empty reduced dimensions")

        e = _Emitter(op)
        if kind in ("max", "min"):
            reduced = e.emit(
                nn.ReduceOp.build(
                    operands=[e.storage(op.input)],
                    result_types=[storage_tensor_type(_with_element(result, qx))],
                    properties=dict(op.properties),
                )
            )
            y = e.requantize(e.to_quantized(reduced, _with_element(result, qx)), qy)
            e.replace(rewriter, y)
            return
        real = qx.scale_values[0] / qy.scale_values[0]
        pair = _mean_multiplier(op, real, count) if kind == "mean" else _multiplier(op, real)
        total = e.emit(
            nn.ReduceOp.build(
                operands=[e.centered(op.input)],
                result_types=[_with_element(result, i32)],
                properties={**op.properties, "kind": StringAttr("sum")},
            )
        )
        e.replace(rewriter, e.rescale(total, qy, [pair]))


# ---- Data movement with requantization ---------------------------------------------------------


class LowerQuantizedConcat(RewritePattern):
    """concat of differently quantized inputs -> quant.rescale of each input whose
    parameters differ from the result's, concat of equally quantized values, clamp."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ConcatOp, rewriter: PatternRewriter) -> None:
        qy = _qtype(op.output)
        if qy is None:
            return
        activation = _activation(op)
        if activation == "none" and all(_qtype(v) == qy for v in op.inputs):
            return
        _require_8bit(op, *op.inputs, op.output)
        _require_per_tensor(op, *op.inputs, op.output)
        result = _tensor(op.output)
        bounds = _activation_bounds(op, result, activation)

        e = _Emitter(op)
        # One rounding, as TFLite's float requantization (uint8 ConcatenationWithScaling)
        # rounds once; MultiplyByQuantizedMultiplier's two roundings are off by one on
        # about 1 in 6 values here.
        inputs = [e.requantize(v, qy, "single_round") for v in op.inputs]
        joined = e.emit(
            nn.ConcatOp.build(
                operands=[inputs],
                result_types=[result],
                properties=_props_without_activation(op),
            )
        )
        e.replace(rewriter, e.clamp_quantized(joined, bounds))


# ---- Pattern list and pass ---------------------------------------------------------------------


def lower_quantized_patterns() -> list[RewritePattern]:
    """Patterns of this pass, exposed for reuse by pipelines and tests."""
    return [
        LowerQuantizedConvolution(),
        LowerQuantizedBatchMatmul(),
        LowerQuantizedAddSub(),
        LowerQuantizedMul(),
        LowerQuantizedMaximumMinimum(),
        LowerQuantizedClamp(),
        LowerQuantizedLeakyRelu(),
        LowerQuantizedPRelu(),
        LowerQuantizedAbsNeg(),
        LowerQuantizedPool(),
        LowerQuantizedReduce(),
        LowerQuantizedConcat(),
    ]


@dataclass(frozen=True)
class LowerQuantizedPass(ModulePass):
    """Rewrite quantized `nn` arithmetic into integer `nn` ops, `quant.rescale` and clamps."""

    name = "lower-quantized"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(lower_quantized_patterns(), dce_enabled=False)
        )
        walker.rewrite_module(op)
