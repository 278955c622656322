"""Run quantized `nn` ops in float: dcast their inputs, compute in float, qcast their results.

This is how TFLite's GPU delegate runs an int8 model on a device that computes in float: a
quantized op becomes ``quant.dcast`` of its inputs -> the same op on the expressed (float)
type -> ``quant.qcast`` back to its result's quantized type. Values keep their quantized
types wherever they leave the converted ops (graph outputs, ops of other targets, region
results), so the rest of the program does not change.

* Scope: with `targets`, only ops inside `delegate.region`s of those targets are converted;
  the boundary casts go inside the region, so its captures and results keep their quantized
  types (docs/design.md §3: the pass runs after `partition`). Without `targets`, every op in every
  function (and region) is converted: whole-graph mode.
* Constants: quantized weights consumed by converted ops become float constants at compile
  time (the dequantization formula of the reference `quant.dcast` kernel, in float64 then
  rounded to the expressed type); the quantized constant is erased when nothing else uses it.
  A quantized constant captured by a target region is folded inside the region and the
  capture dropped.
* Biases: a conv2d / conv2d_transpose / fully_connected bias is an integer added to the
  i32 accumulator, so its real value is ``bias * s_in * s_w[c]`` whatever scale its own type
  records (TFLite's int8 kernels and `lower-quantized` ignore it too). Constant biases fold
  to float constants; others go through ``quant.scast`` to an i32 type with those scales,
  then ``quant.dcast``.
* Fused activations stay on the float op; ops with quantized-only TFLite semantics (softmax
  with its fixed output scale, logistic, tanh, ...) become their float op and a qcast onto
  the fixed output grid.
* Rounding of the inserted qcasts: the model's own convention when it is recorded, i.e. when
  the function's existing `quant.qcast` ops all agree on one rounding (an ONNX QDQ model says
  `half_to_even`); otherwise `half_away_from_zero`, TFLite's (QUANTIZE rounds with
  std::round, and its int8 kernels' fixed-point requantization also rounds ties away from
  zero).
* `emulate-rounding=true` keeps ``qcast -> dcast`` between converted ops: every
  intermediate result is rounded onto its quantized grid (and saturated) as an int8
  runtime's would be. `emulate-rounding=false` passes the unrounded float value on instead;
  a qcast is kept only where a quantized value leaves the converted ops. The pairs are never
  built rather than built and cancelled; the statistics count them as cancelled. Existing
  casts of the model (its input qcast, its output dcast) are never removed.
* Data movement (reshape, transpose, slice, split, pad, gather, broadcast_to, select, nearest
  resize, concat of equally quantized inputs) moves values without changing them, so it
  commutes exactly with dcast and may run on either side of it. Each such op takes the side
  that needs fewer casts, counted when the pass reaches it: converting costs a dcast per
  input without a float form at hand (a converted producer, a folded constant, a dcast made
  for another user are at hand) and a qcast per result read by an op that stays quantized;
  keeping costs a dcast per result read by a converted op and, without rounding emulation,
  a qcast per unrounded input. Ties convert, so the float target runs the op. (A concat of
  two converted results keeps its stored integers under emulation: one dcast after it
  instead of two before; a transpose whose only user is the graph output stays quantized.)
  A converted data-movement op's result is its inputs' values moved, so its users take it
  directly: no qcast -> dcast pair, whatever `emulate-rounding` says.

Refused with a located error, before anything changes (the float form would not compute
what the quantized op does): 32-bit quantized activations (a float32 cannot hold every i32
value), operands and results that express different float types, an integer bias with a
per-axis quantized input (no single input scale) or with per-channel weight scales that do
not match the output channels, and a non-i32 bias known only at run time.

`insert_qdq()` applies the rewrite and returns its `QDQStatistics` (tests and benchmarks
print them; the pass itself prints nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error
from irc.dialects import delegate, nn, quant
from irc.dialects.nn.base import float_attr, shape_of
from irc.dialects.quant import UniformQuantizedType, quantized_element
from irc.dtypes import numpy_dtype

DEFAULT_ROUNDING = "half_away_from_zero"
"""Rounding of inserted qcasts when the model records none (TFLite's)."""

_CONV_LIKE = (nn.Conv2DOp, nn.Conv2DTransposeOp, nn.FullyConnectedOp)
_MOVEMENT = (
    nn.ReshapeOp,
    nn.TransposeOp,
    nn.SliceOp,
    nn.SplitOp,
    nn.PadOp,
    nn.GatherOp,
    nn.BroadcastToOp,
    nn.SelectOp,
)


# ---- Statistics --------------------------------------------------------------------------------


@dataclass
class QDQStatistics:
    """What one application of the pass did (tests and benchmarks print it)."""

    converted: int = 0
    """Quantized ops replaced by their float form."""

    kept_quantized: int = 0
    """Data-movement ops left on stored integers."""

    folded_constants: int = 0
    """Quantized constants (weights, biases) turned into float constants."""

    dcasts: int = 0
    """`quant.dcast` ops inserted."""

    qcasts: int = 0
    """`quant.qcast` ops inserted."""

    cancelled: int = 0
    """Results of converted ops passed on unrounded (`emulate-rounding=false`): each is a
    ``qcast -> dcast`` pair that `emulate-rounding=true` would have inserted."""

    def __str__(self) -> str:
        return (
            f"converted {self.converted}, kept quantized {self.kept_quantized}, "
            f"folded constants {self.folded_constants}, dcast {self.dcasts}, "
            f"qcast {self.qcasts}, cancelled pairs {self.cancelled}"
        )


# ---- Op classification -------------------------------------------------------------------------


def _is_quantized(value: SSAValue) -> bool:
    return quantized_element(value.type) is not None


def _is_candidate(op: Operation) -> bool:
    """A quantized `nn` op the pass rewrites (constants are folded into their users instead)."""
    if not isinstance(op, nn.NNOp) or isinstance(op, nn.ConstantOp):
        return False
    return any(_is_quantized(v) for v in (*op.operands, *op.results))


def _is_movement(op: Operation) -> bool:
    """Whether `op` only moves stored values, so that it commutes exactly with dcast."""
    if isinstance(op, _MOVEMENT):
        return True
    if isinstance(op, nn.ResizeOp):
        return op.mode.data == "nearest"
    if isinstance(op, nn.ConcatOp):
        result = _element(op.output)
        return op.activation.data == "none" and all(_element(v) == result for v in op.inputs)
    return False


def _element(value: SSAValue) -> Attribute:
    type_ = value.type
    assert isinstance(type_, TensorType), "nn ops verify that their operands are tensors"
    return type_.element_type


def _float_type(value: SSAValue) -> Attribute:
    """The type of `value` with a quantized element replaced by its expressed type."""
    type_ = value.type
    qtype = quantized_element(type_)
    if qtype is None:
        return type_
    assert isinstance(type_, TensorType)
    return TensorType(qtype.expressed_type, type_.get_shape())


def _bias(op: Operation) -> SSAValue | None:
    if isinstance(op, _CONV_LIKE) and op.bias is not None:
        return op.bias
    return None


def _channel_axis(op: Operation) -> int:
    """The output-channel dimension of a conv-like op's result."""
    rank = len(shape_of(op.results[0]))
    if isinstance(op, nn.FullyConnectedOp):
        return rank - 1
    assert isinstance(op, nn.Conv2DOp | nn.Conv2DTransposeOp), "only conv-like ops have a bias"
    return 3 if op.layout.data == "NHWC" else 1


def _bias_scales(op: Operation) -> list[float]:
    """``s_in * s_w[c]``: the real value of one unit of a conv-like op's integer bias."""
    qx, qw = quantized_element(op.operands[0].type), quantized_element(op.operands[1].type)
    assert qx is not None
    assert qw is not None
    s_in = qx.scale_values[0]
    return [s_in * s_w for s_w in qw.scale_values]


def _validate(op: Operation) -> None:
    """Fail, at `op`, when its float form would not compute what the quantized op does."""
    bias = _bias(op)
    values = [v for v in (*op.operands, *op.results) if v is not bias]
    expressed: list[Attribute] = []
    for value in values:
        element = _element(value)
        if isinstance(element, UniformQuantizedType):
            if element.storage_width > 16:
                emit_error(
                    op,
                    f"insert-qdq: {element.storage_width}-bit quantized values do not fit a "
                    f"float computation exactly, got {element}",
                )
            expressed.append(element.expressed_type)
    if len(set(expressed)) > 1:
        names = ", ".join(dict.fromkeys(str(e) for e in expressed))
        emit_error(op, f"insert-qdq: quantized values express different float types ({names})")
    if bias is None:
        return
    qx, qw = quantized_element(op.operands[0].type), quantized_element(op.operands[1].type)
    assert qx is not None, "a bias of a candidate op: the input is quantized"
    assert qw is not None, "verified: quantized inputs come with quantized weights"
    if qx.is_per_axis:
        emit_error(op, f"insert-qdq: an integer bias needs a per-tensor quantized input, got {qx}")
    channels = shape_of(op.results[0])[_channel_axis(op)]
    scales = len(qw.scale_values)
    if scales != 1 and channels >= 0 and scales != channels:
        emit_error(
            op,
            f"insert-qdq: weights have {scales} per-channel scales for {channels} output channels",
        )
    bias_element = _element(bias)
    storage = (
        bias_element.storage_type
        if isinstance(bias_element, UniformQuantizedType)
        else bias_element
    )
    folds = _constant_behind(bias) is not None and _float_dtype(qx.expressed_type) is not None
    if not folds and (not isinstance(storage, IntegerType) or storage.width.data != 32):
        emit_error(
            op,
            f"insert-qdq: a bias computed at run time must be i32 to be dequantized, "
            f"got {bias_element}",
        )


# ---- Constants ---------------------------------------------------------------------------------


def _constant_behind(value: SSAValue) -> nn.ConstantOp | None:
    """The constant `value` is: its defining op, or the capture of a region argument."""
    if isinstance(value, BlockArgument):
        region = value.block.parent_op()
        if isinstance(region, delegate.RegionOp):
            value = region.captures[value.index]
    owner = value.owner
    return owner if isinstance(owner, nn.ConstantOp) else None


def _stored_array(constant: nn.ConstantOp) -> np.ndarray:
    """A constant's data as its storage integers (i8 data of a u8 type is viewed as u8)."""
    array = constant.to_array()
    qtype = quantized_element(constant.output.type)
    if qtype is not None:
        dtype = numpy_dtype(qtype)
        if array.dtype != dtype:
            array = array.view(dtype)
    return array


def dequantize_array(
    stored: np.ndarray,
    scales: Sequence[float],
    zero_points: Sequence[int],
    axis: int | None,
    dtype: np.dtype,
) -> np.ndarray:
    """``scale * (stored - zero_point)`` in float64, rounded to `dtype`: the formula of the
    reference `quant.dcast` kernel, so a folded constant equals what the dcast would give."""
    scale = np.asarray(scales, np.float64)
    zero_point = np.asarray(zero_points, np.int64)
    if axis is not None and scale.size > 1:
        shape = [1] * stored.ndim
        shape[axis] = scale.size
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    else:
        scale, zero_point = scale.reshape(()), zero_point.reshape(())
    return np.asarray(scale * (stored.astype(np.int64) - zero_point)).astype(dtype)


def _float_dtype(element: Attribute) -> np.dtype | None:
    """The numpy dtype of a float element type, None where numpy has none (bf16)."""
    try:
        return numpy_dtype(element)
    except TypeError:
        return None


def _model_rounding(func: Operation) -> str:
    """The rounding the model's own qcasts use when they agree, else TFLite's."""
    roundings = {op.rounding.data for op in func.walk() if isinstance(op, quant.QCastOp)}
    return roundings.pop() if len(roundings) == 1 else DEFAULT_ROUNDING


# ---- The rewrite of one block ------------------------------------------------------------------


@dataclass
class _BlockRewriter:
    """Converts the candidate ops of one block (a function body or a region body) in order.

    Keeps, for quantized values, the float values that stand for them: `exact` holds values
    equal to their dequantization (a dcast, a folded constant, data movement of such values);
    `unrounded` the float results of converted ops before their qcast, used instead of
    ``dcast(qcast(...))`` when rounding is not emulated.
    """

    block: Block
    rounding: str
    emulate_rounding: bool
    stats: QDQStatistics
    exact: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    unrounded: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    computed: set[SSAValue] = field(default_factory=set[SSAValue])
    """qcast results of converted ops that compute (not data movement)."""
    cancelled: set[SSAValue] = field(default_factory=set[SSAValue])
    qcasts: list[quant.QCastOp] = field(default_factory=list[quant.QCastOp])
    folded: dict[nn.ConstantOp, None] = field(default_factory=dict[nn.ConstantOp, None])
    candidates: set[Operation] = field(default_factory=set[Operation])

    def run(self, ops: Sequence[Operation]) -> None:
        self.candidates = set(ops)
        for op in ops:
            if _is_movement(op) and not self._movement_pays(op):
                self.stats.kept_quantized += 1
                continue
            self._convert(op)
        self._clean_up()

    # ---- Float forms of quantized values ----

    def _has_free_float(self, value: SSAValue) -> bool:
        if value in self.exact or (not self.emulate_rounding and value in self.unrounded):
            return True
        qtype = quantized_element(value.type)
        assert qtype is not None
        return (
            _constant_behind(value) is not None and _float_dtype(qtype.expressed_type) is not None
        )

    def _float_of(self, value: SSAValue, before: Operation) -> SSAValue:
        """A float value standing for quantized `value`, created before `before` if needed."""
        if not self.emulate_rounding and value in self.unrounded:
            if value in self.computed:
                self.cancelled.add(value)  # a rounding step skipped (not just data moved on)
            return self.unrounded[value]
        if value in self.exact:
            return self.exact[value]
        constant = _constant_behind(value)
        qtype = quantized_element(value.type)
        assert qtype is not None
        dtype = _float_dtype(qtype.expressed_type)
        if constant is not None and dtype is not None:
            array = dequantize_array(
                _stored_array(constant),
                qtype.scale_values,
                qtype.zero_point_values,
                qtype.axis,
                dtype,
            )
            result = self._insert(nn.ConstantOp.from_array(array), before, constant)
            self.folded[constant] = None
        else:
            result = self._insert(quant.DCastOp(value), before, before)
            self.stats.dcasts += 1
        self.exact[value] = result
        return result

    def _float_bias(self, op: Operation, bias: SSAValue) -> SSAValue:
        """The real bias ``stored * s_in * s_w[c]`` of a conv-like op, as a float value."""
        scales = _bias_scales(op)
        axis = None if len(scales) == 1 else 0
        quantized_input = quantized_element(op.operands[0].type)
        assert quantized_input is not None, "a bias of a candidate op: the input is quantized"
        expressed = quantized_input.expressed_type
        dtype = _float_dtype(expressed)
        constant = _constant_behind(bias)
        if constant is not None and dtype is not None:
            stored = _stored_array(constant)
            array = dequantize_array(stored, scales, [0] * len(scales), axis, dtype)
            self.folded[constant] = None
            return self._insert(nn.ConstantOp.from_array(array), op, constant)
        shape = shape_of(bias)
        element = _element(bias)
        storage = element.storage_type if isinstance(element, UniformQuantizedType) else element
        assert isinstance(storage, IntegerType)
        if axis is None:
            qtype = UniformQuantizedType.per_tensor(storage, expressed, scales[0])
        else:
            qtype = UniformQuantizedType.per_axis(storage, expressed, axis, scales)
        value = bias
        if isinstance(element, UniformQuantizedType) and element != qtype:
            value = self._insert(quant.SCastOp(value, TensorType(storage, shape)), op, op)
        if element != qtype:
            value = self._insert(quant.SCastOp(value, TensorType(qtype, shape)), op, op)
        self.stats.dcasts += 1
        return self._insert(quant.DCastOp(value), op, op)

    def _insert(self, new_op: Operation, before: Operation, located: Operation) -> SSAValue:
        new_op.location = located.location
        Rewriter.insert_op(new_op, InsertPoint.before(before))
        return new_op.results[0]

    # ---- Ops ----

    def _movement_pays(self, op: Operation) -> bool:
        """Convert a data-movement op unless that needs more casts than keeping it quantized.

        Converting needs a dcast per input without a free float form and a qcast per result
        that a non-converted op reads; keeping needs a qcast per unrounded input that nothing
        else keeps quantized and a dcast per result that a converted op reads. Ties convert:
        the float target then runs the op itself.
        """
        if isinstance(op, nn.PadOp) and _pad_value(op) is None:
            return False
        inputs = [v for v in op.operands if _is_quantized(v)]
        results = [r for r in op.results if _is_quantized(r)]

        def read_by(value: SSAValue, converted: bool) -> bool:
            users = (use.operation for use in value.uses if use.operation is not op)
            return any((user in self.candidates) == converted for user in users)

        convert = sum(not self._has_free_float(v) for v in inputs)
        convert += sum(read_by(r, converted=False) for r in results)
        keep = sum(
            not self.emulate_rounding and v in self.unrounded and not read_by(v, converted=False)
            for v in inputs
        )
        keep += sum(read_by(r, converted=True) for r in results)
        return convert <= keep

    def _convert(self, op: Operation) -> None:
        bias = _bias(op)
        # Data movement of dequantized values gives dequantized values; of unrounded ones,
        # unrounded values.
        exact = _is_movement(op) and not (
            not self.emulate_rounding and any(v in self.unrounded for v in op.operands)
        )
        operands = [
            self._float_bias(op, v)
            if v is bias
            else self._float_of(v, op)
            if _is_quantized(v)
            else v
            for v in op.operands
        ]
        properties = dict(op.properties)
        if isinstance(op, nn.PadOp) and _is_quantized(op.input) and op.mode.data == "constant":
            value = _pad_value(op)
            assert value is not None, "checked by _movement_pays"
            properties["value"] = float_attr(value)
        new_op = type(op).create(
            operands=operands,
            result_types=[_float_type(r) for r in op.results],
            properties=properties,
            attributes=dict(op.attributes),
        )
        new_op.location = op.location
        Rewriter.insert_op(new_op, InsertPoint.before(op))
        point = InsertPoint.after(new_op)
        for old, new in zip(op.results, new_op.results, strict=True):
            if not _is_quantized(old):
                old.replace_all_uses_with(new)
                continue
            qcast = quant.QCastOp(new, old.type, self.rounding)
            qcast.location = op.location
            Rewriter.insert_op(qcast, point)
            point = InsertPoint.after(qcast)
            self.qcasts.append(qcast)
            old.replace_all_uses_with(qcast.output)
            if exact:
                self.exact[qcast.output] = new
            else:
                self.unrounded[qcast.output] = new
            if not _is_movement(op):
                self.computed.add(qcast.output)
        Rewriter.erase_op(op)
        self.stats.converted += 1

    def _clean_up(self) -> None:
        """Drop qcasts nobody reads and quantized constants folded away."""
        for qcast in self.qcasts:
            if qcast.output.uses:
                self.stats.qcasts += 1
            else:
                Rewriter.erase_op(qcast)
        self.stats.cancelled += len(self.cancelled)
        self.stats.folded_constants += len(self.folded)
        region = self.block.parent_op()
        for constant in self.folded:
            if constant.parent_block() is self.block:
                if not constant.output.uses:
                    Rewriter.erase_op(constant)
            elif isinstance(region, delegate.RegionOp):
                _drop_folded_capture(region, constant)


def _pad_value(op: nn.PadOp) -> float | None:
    """The real value a quantized pad writes (its `value` is a stored integer), or None when
    the channels of a per-axis type disagree on it: the pad then stays quantized."""
    qtype = quantized_element(op.input.type)
    stored = op.value.value.data
    if qtype is None or op.mode.data != "constant":
        return stored  # other modes ignore the value
    dtype = _float_dtype(qtype.expressed_type) or np.dtype(np.float64)
    values = {
        float(dequantize_array(np.array(stored), [scale], [zero_point], None, dtype))
        for scale, zero_point in zip(qtype.scale_values, qtype.zero_point_values)
    }
    return values.pop() if len(values) == 1 else None


def _drop_folded_capture(region: delegate.RegionOp, constant: nn.ConstantOp) -> None:
    """Remove the captures of `constant` whose block arguments are unused after folding."""
    block = region.body.block
    keep: list[SSAValue] = []
    for arg, capture in zip(list(block.args), list(region.captures), strict=True):
        if capture.owner is constant and not arg.uses:
            block.erase_arg(arg)
        else:
            keep.append(capture)
    region.operands = keep
    if not constant.output.uses:
        Rewriter.erase_op(constant)


# ---- The pass ----------------------------------------------------------------------------------


def _scopes(module: ModuleOp, targets: Sequence[str]) -> list[tuple[Block, str]]:
    """Blocks whose ops are converted, each with the rounding of its function's model."""
    scopes: list[tuple[Block, str]] = []
    for func in (op for op in module.walk() if isinstance(op, FuncOp)):
        rounding = _model_rounding(func)
        if not targets:
            scopes += [(block, rounding) for block in func.body.blocks]
        for region in (op for op in func.walk() if isinstance(op, delegate.RegionOp)):
            if not targets or region.target.data in targets:
                scopes.append((region.body.block, rounding))
    return scopes


def insert_qdq(
    module: ModuleOp, targets: Sequence[str] = (), emulate_rounding: bool = True
) -> QDQStatistics:
    """Apply the rewrite of `InsertQDQPass` to `module`; returns what it did."""
    plan = [
        (block, rounding, [op for op in block.ops if _is_candidate(op)])
        for block, rounding in _scopes(module, targets)
    ]
    for _, _, ops in plan:
        for op in ops:
            if not _is_movement(op):
                _validate(op)
    stats = QDQStatistics()
    for block, rounding, ops in plan:
        _BlockRewriter(block, rounding, emulate_rounding, stats).run(ops)
    return stats


@dataclass(frozen=True)
class InsertQDQPass(ModulePass):
    """Rewrite quantized `nn` ops into ``dcast -> float op -> qcast`` for float-only targets.

    Options: ``insert-qdq{targets=opencl emulate-rounding=false}``.
    """

    name = "insert-qdq"

    targets: tuple[str, ...] = ()
    """Convert only ops inside `delegate.region`s of these targets; empty: the whole graph."""

    emulate_rounding: bool = True
    """Keep ``qcast -> dcast`` between converted ops, so intermediate results stay on their
    quantized grid; false passes unrounded float values between converted ops."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        insert_qdq(op, self.targets, self.emulate_rounding)
