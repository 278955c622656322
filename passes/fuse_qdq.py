"""Fuse QDQ islands into quantized `nn` ops: ``qcast(op(dcast(x), ...))`` -> ``op(x, ...)``.

QDQ models (ONNX QuantizeLinear/DequantizeLinear around float ops, PyTorch/TensorRT-style
exports) express int8 inference as float ops between casts. This pass rewrites each island
whose parameters are all constant (they live in the `!quant.uniform` types) into the quantized
`nn` op that `lower-quantized` defines in integer arithmetic, so a target with int8 kernels runs
it natively (TVM's FakeQuantizationToInteger, onnxruntime's QDQ selectors):

* ``qcast(conv2d | fully_connected(dcast(x), dcast(w_const), dcast(b_const)?))``: quantized
  data (per tensor, 8-bit), constant weights per tensor or per output channel; the bias is
  requantized to i32 at ``s_x * s_w[c]`` (exact when it was stored at that scale, as
  onnxruntime's quantizer stores it). A bias added after a `fully_connected` or a conv
  (``add(fc(...), dcast(b))``, how ONNX Gemm imports) folds into the op.
* ``qcast(batch_matmul | add | mul(dcast(a), dcast(b)))`` and ``qcast(concat(dcast(x)...))``;
  a batch_matmul by a dequantized constant matrix (ONNX MatMul by weights, quantized per
  column) becomes a `fully_connected`.
* one-input ops: ``qcast(op(dcast(x)))`` for pools, mean/max reductions, sigmoid, tanh,
  hard_swish, softmax, leaky_relu, relu/relu6/clip, resize; data movement (reshape,
  transpose, slice, pad) only when the result keeps x's type.
* an activation between the product and the qcast (``qcast(relu(conv(...)))``): the product
  writes the qcast's type and the quantized activation clamps in it (the same values: a
  monotone activation commutes with quantization).

The rewritten op's result has the qcast's type; dcasts left without users are erased, so a
`dcast`/`qcast` stays only at an island's edge. An island closed by a `half_to_even` qcast
(ONNX QuantizeLinear) requantizes with one rounding, as onnxruntime does: the new op carries
`irc.rescale_rounding = "single_round"` (`lower_quantized.RESCALE_ROUNDING`); TFLite-style
qcasts keep TFLite's double rounding. Either agrees with the float island to within one
quantization step (ties and the float island's own float32 rounding aside, one rounding gives
the same integers). Uint8 data with int8 weights moves to int8 first with an exact
`quant.rescale` (zero point - 128) and back.

Islands that match but cannot become integer ops stay as they are, with a remark at the op:
weights only known at run time, per-axis quantized activations, storage other than 8 bits,
a bias that is not a constant, a softmax quantized otherwise than the integer softmax writes
(scale 1/256, zero point at the storage minimum; onnxruntime's quantizer writes 1/255).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp, Signedness, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_remark
from irc.dialects import nn, quant
from irc.dialects.nn.base import tensor_type
from irc.dialects.quant import UniformQuantizedType, quantized_element
from irc.passes.lower_quantized import RESCALE_ROUNDING

_PRODUCTS = (nn.Conv2DOp, nn.FullyConnectedOp)
"""Ops with constant weights and an optional bias."""

_BINARY = (nn.AddOp, nn.MulOp, nn.BatchMatmulOp)
_UNARY = (
    nn.MaxPool2DOp,
    nn.AvgPool2DOp,
    nn.ReduceOp,
    nn.SigmoidOp,
    nn.TanhOp,
    nn.HardSwishOp,
    nn.SoftmaxOp,
    nn.LeakyReluOp,
    nn.ReluOp,
    nn.Relu6Op,
    nn.ClipOp,
    nn.ResizeOp,
)
_SAME_TYPE = (nn.ReshapeOp, nn.TransposeOp, nn.SliceOp, nn.PadOp)
"""Data movement: fused only when the result keeps the input's quantized type."""

_ACTIVATIONS = (nn.ReluOp, nn.Relu6Op, nn.ClipOp)
"""Monotone clamps that may sit between a product and its qcast."""

_REDUCE_KINDS = ("mean", "max", "min", "sum")

_SHIFT = 128
_UNIT_MULTIPLIER, _UNIT_SHIFT = 1 << 30, 1
"""A `quant.rescale` by exactly 1 (``2^30 * 2^(1 - 31)``)."""


class Refused(Exception):
    """An island that matches but cannot become integer ops; the message says why."""


# ---- Reading an island ---------------------------------------------------------------------------


def _is_8bit(qtype: UniformQuantizedType) -> bool:
    return qtype.storage_width == 8


def _source(value: SSAValue) -> SSAValue | None:
    """The quantized value that `value` dequantizes, or None when it is not a dcast."""
    owner = value.owner
    return owner.input if isinstance(owner, quant.DCastOp) else None


def _activation_source(value: SSAValue) -> SSAValue:
    """The quantized, per-tensor, 8-bit value an island input dequantizes (else Refused)."""
    source = _source(value)
    if source is None:
        raise LookupError  # not an island input: nothing to fuse, nothing to report
    qtype = quantized_element(tensor_type(source))
    assert qtype is not None
    if qtype.is_per_axis:
        raise Refused("a per-axis quantized activation has no integer kernel")
    if not _is_8bit(qtype):
        raise Refused(f"{qtype.storage_type} activations (8-bit only)")
    return source


def _constant_source(value: SSAValue, what: str) -> SSAValue:
    """A dequantized constant (weights): the quantized `nn.constant`."""
    source = _source(value)
    if source is None or not isinstance(source.owner, nn.ConstantOp):
        raise Refused(f"{what} only known at run time (integer kernels need constant {what})")
    qtype = quantized_element(tensor_type(source))
    assert qtype is not None
    if not _is_8bit(qtype):
        raise Refused(f"{qtype.storage_type} {what} (8-bit only)")
    return source


def _real_constant(value: SSAValue) -> np.ndarray | None:
    """The real values of a constant (float, or a dcast of a quantized constant)."""
    owner = value.owner
    if isinstance(owner, nn.ConstantOp) and quantized_element(tensor_type(value)) is None:
        return owner.to_array().astype(np.float64)
    source = _source(value)
    if source is None or not isinstance(source.owner, nn.ConstantOp):
        return None
    qtype = quantized_element(tensor_type(source))
    assert qtype is not None
    stored = source.owner.to_array().astype(np.float64)
    shape = [1] * stored.ndim
    if qtype.axis is not None:
        shape[qtype.axis] = len(qtype.scale_values)
    scales = np.asarray(qtype.scale_values, np.float64).reshape(shape)
    zero_points = np.asarray(qtype.zero_point_values, np.float64).reshape(shape)
    return (stored - zero_points) * scales


# ---- Building integer ops ----------------------------------------------------------------------


def _unsigned(qtype: UniformQuantizedType) -> bool:
    return qtype.storage_type.signedness.data == Signedness.UNSIGNED


def _with_storage(qtype: UniformQuantizedType, unsigned: bool) -> UniformQuantizedType:
    """The same real values in uint8 or int8 storage (zero points moved by 128)."""
    if _unsigned(qtype) == unsigned:
        return qtype
    storage = IntegerType(8, Signedness.UNSIGNED if unsigned else Signedness.SIGNLESS)
    delta = _SHIFT if unsigned else -_SHIFT
    zero_points = [z + delta for z in qtype.zero_point_values]
    if qtype.axis is None:
        return UniformQuantizedType.per_tensor(
            storage, qtype.expressed_type, qtype.scale_values[0], zero_points[0]
        )
    return UniformQuantizedType.per_axis(
        storage, qtype.expressed_type, qtype.axis, list(qtype.scale_values), zero_points
    )


class _Builder:
    """Inserts the integer form before the island's qcast."""

    def __init__(self, anchor: quant.QCastOp) -> None:
        self.point = InsertPoint.before(anchor)
        self.onnx = anchor.rounding.data == "half_to_even"
        """An ONNX QuantizeLinear closes the island: requantize with one rounding."""

    def emit(self, op: Operation, like: Operation) -> SSAValue:
        op.location = like.location
        quantized = quantized_element(tensor_type(op.results[0])) is not None
        if (
            self.onnx
            and quantized
            and isinstance(op, nn.NNOp)
            and not isinstance(op, nn.ConstantOp)
        ):
            op.attributes[RESCALE_ROUNDING] = StringAttr("single_round")
        Rewriter.insert_op(op, self.point)
        return op.results[0]

    def in_storage(self, value: SSAValue, unsigned: bool, like: Operation) -> SSAValue:
        """`value` moved exactly to uint8 or int8 storage (none when it already is)."""
        qtype = quantized_element(tensor_type(value))
        assert qtype is not None
        target = _with_storage(qtype, unsigned)
        if target == qtype:
            return value
        result = TensorType(target, tensor_type(value).get_shape())
        rescale = quant.RescaleOp(value, result, [_UNIT_MULTIPLIER], [_UNIT_SHIFT])
        return self.emit(rescale, like)

    def rebuild(
        self,
        op: Operation,
        operands: Sequence[SSAValue | None],
        element: UniformQuantizedType,
    ) -> SSAValue:
        """`op` again, on `operands`, with a result of element type `element`."""
        grouped: list[SSAValue | Sequence[SSAValue]]
        assert isinstance(op, IRDLOperation)
        if isinstance(op, nn.ConcatOp):
            grouped = [[v for v in operands if v is not None]]
        else:
            grouped = [[] if v is None else v for v in operands]  # absent optional operands
        new = type(op).build(
            operands=grouped,
            result_types=[TensorType(element, tensor_type(op.results[0]).get_shape())],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        return self.emit(new, op)


def _bias_operand(
    builder: _Builder,
    real: np.ndarray,
    s_x: float,
    w_type: UniformQuantizedType,
    channels: int,
    like: Operation,
) -> SSAValue:
    """A real bias as i32 at scale ``s_x * s_w[c]`` (rounded half to even, as ONNX does)."""
    if real.size not in (1, channels):
        raise Refused(f"a bias of {real.size} values for {channels} channels")
    scales = np.asarray(w_type.scale_values, np.float64) * s_x
    stored = np.rint(np.broadcast_to(real.reshape(-1), (channels,)) / scales)
    if np.any(np.abs(stored) > 2**31 - 1):
        raise Refused("a bias beyond the i32 range of the accumulator")
    return builder.emit(nn.ConstantOp.from_array(stored.astype(np.int32)), like)


# ---- The island rewrites -----------------------------------------------------------------------


def _fuse_product(
    builder: _Builder,
    op: Operation,
    extra_bias: np.ndarray | None,
    out_type: UniformQuantizedType,
) -> SSAValue:
    x = _activation_source(op.operands[0])
    w = _constant_source(op.operands[1], "weights")
    qx, qw = quantized_element(tensor_type(x)), quantized_element(tensor_type(w))
    assert qx is not None
    assert qw is not None
    if qw.axis not in (None, 0):
        raise Refused(f"weights quantized along dimension {qw.axis} (per output channel only)")
    channels = tensor_type(w).get_shape()[0]
    bias_real = None
    if len(op.operands) > 2:
        bias_real = _real_constant(op.operands[2])
        if bias_real is None:
            raise Refused("a bias only known at run time")
    if extra_bias is not None:
        bias_real = extra_bias if bias_real is None else bias_real + extra_bias
    bias = None
    if bias_real is not None:
        bias = _bias_operand(builder, bias_real, qx.scale_values[0], qw, channels, op)
    unsigned = _unsigned(qw)
    data = builder.in_storage(x, unsigned, op)
    y = builder.rebuild(op, [data, w, bias], _with_storage(out_type, unsigned))
    return builder.in_storage(y, _unsigned(out_type), op)


def _flag(op: Operation, name: str) -> bool:
    attr = op.properties.get(name)
    return bool(getattr(getattr(attr, "value", None), "data", 0))


def _matmul_as_fully_connected(
    builder: _Builder, op: nn.BatchMatmulOp, out_type: UniformQuantizedType
) -> SSAValue | None:
    """``batch_matmul(x, dcast(w_const [K, N]))`` -> fully_connected with `[N, K]` weights
    (per-column scales become per-output-channel ones), as ONNX MatMul by a constant."""
    rhs = _source(op.rhs)
    if rhs is None or not isinstance(rhs.owner, nn.ConstantOp):
        return None
    if tensor_type(rhs).get_num_dims() != 2 or _flag(op, "adj_x") or _flag(op, "adj_y"):
        return None
    x = _activation_source(op.lhs)
    qw = quantized_element(tensor_type(rhs))
    assert qw is not None
    if not _is_8bit(qw):
        raise Refused(f"{qw.storage_type} weights (8-bit only)")
    if qw.axis == 0 and len(qw.scale_values) > 1:
        raise Refused("weights quantized along the reduced dimension")
    if qw.axis is not None:
        qw = UniformQuantizedType.per_axis(
            qw.storage_type,
            qw.expressed_type,
            0,
            list(qw.scale_values),
            list(qw.zero_point_values),
        )
    stored = np.ascontiguousarray(rhs.owner.to_array().T)
    weights = builder.emit(
        nn.ConstantOp.from_array(stored, TensorType(qw, stored.shape)), rhs.owner
    )
    unsigned = _unsigned(qw)
    data = builder.in_storage(x, unsigned, op)
    fc = nn.FullyConnectedOp.make(
        data, weights, None, result_elements=_with_storage(out_type, unsigned)
    )
    y = builder.emit(fc, op)
    return builder.in_storage(y, _unsigned(out_type), op)


def _fuse_binary(builder: _Builder, op: Operation, out_type: UniformQuantizedType) -> SSAValue:
    if isinstance(op, nn.BatchMatmulOp):
        fused = _matmul_as_fully_connected(builder, op, out_type)
        if fused is not None:
            return fused
    a, b = (_activation_source(v) for v in op.operands)
    unsigned = _unsigned(out_type)
    if isinstance(op, nn.BatchMatmulOp):
        qb = quantized_element(tensor_type(b))
        assert qb is not None
        unsigned = _unsigned(qb)
    operands = [builder.in_storage(v, unsigned, op) for v in (a, b)]
    y = builder.rebuild(op, operands, _with_storage(out_type, unsigned))
    return builder.in_storage(y, _unsigned(out_type), op)


def _fuse_concat(builder: _Builder, op: Operation, out_type: UniformQuantizedType) -> SSAValue:
    sources = [_activation_source(v) for v in op.operands]
    unsigned = _unsigned(out_type)
    return builder.rebuild(op, [builder.in_storage(v, unsigned, op) for v in sources], out_type)


def _softmax_output(qtype: UniformQuantizedType) -> bool:
    """Whether `qtype` is what the integer softmax writes (TFLite's fixed output)."""
    low = qtype.storage_range[0]
    return abs(qtype.scale_values[0] * 256 - 1) <= 1e-3 and qtype.zero_point_values[0] == low


def _fuse_unary(builder: _Builder, op: Operation, out_type: UniformQuantizedType) -> SSAValue:
    x = _activation_source(op.operands[0])
    qx = quantized_element(tensor_type(x))
    assert qx is not None
    kind = str(getattr(op.properties.get("kind"), "data", ""))
    if isinstance(op, nn.ReduceOp) and kind not in _REDUCE_KINDS:
        raise Refused(f"a quantized reduce of kind '{kind}'")
    if isinstance(op, nn.SoftmaxOp) and not _softmax_output(out_type):
        raise Refused(
            f"a softmax quantized to scale {out_type.scale_values[0]:.6g} and zero point "
            f"{out_type.zero_point_values[0]} (integer softmax writes scale 1/256 and the "
            "storage minimum)"
        )
    if isinstance(op, _SAME_TYPE):
        if qx != out_type:
            raise LookupError  # requantizing data movement: left to fold-qdq
        return builder.rebuild(op, [x, *op.operands[1:]], out_type)
    unsigned = _unsigned(out_type)
    data = builder.in_storage(x, unsigned, op)
    return builder.rebuild(op, [data, *op.operands[1:]], out_type)


def _fuse(qcast: quant.QCastOp) -> list[Operation] | None:
    """Rewrite the island that `qcast` closes; returns the float ops it replaced (to erase),
    None when there is nothing to fuse. Raises Refused (nothing changed) when it cannot."""
    out_type = quantized_element(tensor_type(qcast.output))
    if out_type is None or out_type.is_per_axis or not _is_8bit(out_type):
        return None
    op = qcast.input.owner
    if not isinstance(op, Operation) or not qcast.input.has_one_use():
        return None
    activation: Operation | None = None
    if isinstance(op, _ACTIVATIONS) and _source(op.operands[0]) is None:
        inner = op.operands[0].owner
        if isinstance(inner, Operation) and op.operands[0].has_one_use():
            activation, op = op, inner
    extra_bias: np.ndarray | None = None
    bias_add: Operation | None = None
    if isinstance(op, nn.AddOp) and _source(op.lhs) is None:
        inner = op.lhs.owner
        if isinstance(inner, _PRODUCTS) and op.lhs.has_one_use() and len(inner.operands) == 2:
            extra_bias = _real_constant(op.rhs)
            if extra_bias is not None:
                bias_add, op = op, inner
    if activation is not None and not isinstance(op, (*_PRODUCTS, *_BINARY)):
        return None
    builder = _Builder(qcast)
    try:
        if isinstance(op, _PRODUCTS):
            y = _fuse_product(builder, op, extra_bias, out_type)
        elif isinstance(op, _BINARY):
            y = _fuse_binary(builder, op, out_type)
        elif isinstance(op, nn.ConcatOp):
            y = _fuse_concat(builder, op, out_type)
        elif isinstance(op, (*_UNARY, *_SAME_TYPE)):
            y = _fuse_unary(builder, op, out_type)
        else:
            return None
    except LookupError:
        return None
    if activation is not None:
        y = builder.rebuild(activation, [y, *activation.operands[1:]], out_type)
    qcast.output.replace_all_uses_with(y)
    return [o for o in (qcast, activation, bias_add, op) if o is not None]


def _erase_dead(ops: Sequence[Operation]) -> None:
    """Erase replaced ops, then dcasts and constants left without users."""
    inputs = [v for op in ops for v in op.operands]
    for op in ops:
        Rewriter.erase_op(op, safe_erase=False)
    for value in inputs:
        owner = value.owner
        if isinstance(owner, quant.DCastOp | nn.ConstantOp) and owner.parent is not None:
            if owner.results[0].first_use is None:
                source = owner.operands[0] if isinstance(owner, quant.DCastOp) else None
                Rewriter.erase_op(owner)
                if source is not None:
                    _erase_if_dead_constant(source)


def _erase_if_dead_constant(value: SSAValue) -> None:
    owner = value.owner
    if isinstance(owner, nn.ConstantOp) and owner.parent is not None and value.first_use is None:
        Rewriter.erase_op(owner)


@dataclass(frozen=True)
class FuseQDQPass(ModulePass):
    """Rewrite ``qcast(op(dcast(x), ...))`` islands into quantized `nn` ops."""

    name = "fuse-qdq"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        qcasts = [o for o in op.walk() if isinstance(o, quant.QCastOp)]
        for qcast in qcasts:
            if qcast.parent is None:
                continue
            try:
                replaced = _fuse(qcast)
            except Refused as exc:
                producer = qcast.input.owner
                at = producer if isinstance(producer, Operation) else qcast
                emit_remark(at, f"fuse-qdq: kept in float: {exc}")
                continue
            if replaced:
                _erase_dead(replaced)
