"""Dynamically quantized fully connected layers on the CPU target: one native int8 kernel.

onnxruntime's `quantize_dynamic` writes, per MatMul with constant weights,
``DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul (x_scale * w_scale) [-> Add bias]``.
The ONNX importer (`irc/importers/onnx/quantized.py`) expresses it as

    %lo = nn.minimum (nn.reduce %x min, all axes), 0   %hi = nn.maximum (nn.reduce max), 0
    %s = nn.div (nn.sub %hi, %lo), 255
    %zp = quant.rescale (quant.scast (quant.qcast (nn.div (nn.neg %lo), %s))) by 1 -> ui8
    %q = quant.rescale (nn.add (quant.scast (quant.qcast (nn.div %x, %s))), nn.cast %zp) by 1
    %a = nn.fully_connected (nn.sub (nn.cast %q), (nn.cast %zp)), %w(i32 constant) -> i32
    %y = nn.mul (nn.cast %a -> f32), (nn.mul %s, %w_scale)  [%z = nn.add %y, %bias]

(qcasts to ``!quant.uniform<i32:f32, 1.0>`` rounding half to even, rescales by exactly 1
to ui8; one quantization of `%x` often feeds several products, e.g. Q, K and V).

`match_chains(ops)` finds such chains; `fuse_chains(ops)` (run by `cpu-fuse`) gives each
product its own copy of the quantization ops of its input and wraps them with the product's
ops in a `cpu.fusion` of kind ``"dynamic_fc"`` (the shared originals are erased once no
longer used); `lower_fusion` runs the fusion as one call of `irc_qgemm_dynamic`
(kernels/common/qgemm_dynamic.c): min/max and quantization of `%x` into u8, a u8 x s8 GEMM
(vpdpbusd on AVX512-VNNI, vpmaddwd on AVX2, C otherwise) and the scale and bias epilogue,
bit-exact with the reference's evaluation of the ops it replaces. The weights (their zero
point already subtracted by the importer; they must fit int8) are packed at compile time as
``[N/16][K/4][16][4]`` int8 with their column sums (the zero-point correction).
`IRC_CPU_FUSE_DYNAMIC=0` leaves the chains op by op (comparisons and tests).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from irc.dialects import cpu, nn, quant
from irc.dialects.nn.base import ints_of
from irc.dialects.quant import quantized_element
from irc.targets.cpu import csrc

if TYPE_CHECKING:
    from irc.targets.cpu.codegen import Lowered, OpLowering

_Op = TypeVar("_Op", bound=Operation)

KIND = "dynamic_fc"
"""The `cpu.fusion` kind of a dynamically quantized fully connected chain."""

FUSE_ENV = "IRC_CPU_FUSE_DYNAMIC"
"""Set to 0 to run dynamically quantized products op by op."""

SNIPPET = "qgemm_dynamic"
csrc.define_snippet(SNIPPET, csrc.kernel_file("common/qgemm_dynamic.c"), ("common",))

_UNIT_RESCALE = ((1 << 30,), (1,))
"""(multiplier, shift) of a `quant.rescale` by exactly 1."""


def fuse_enabled() -> bool:
    """Whether dynamically quantized products run as one kernel; default yes."""
    return os.environ.get(FUSE_ENV, "1").strip() != "0"


@dataclass(frozen=True)
class DynamicQuantize:
    """The ops quantizing `source` (DynamicQuantizeLinear) and the values they give."""

    source: SSAValue
    scale: SSAValue
    zero_point: SSAValue
    quantized: SSAValue
    ops: tuple[Operation, ...]
    """Every op computing the three values, in dependence order."""


@dataclass(frozen=True)
class DynamicChain:
    """A dynamically quantized product (see the module docstring)."""

    quantize: DynamicQuantize
    fc: nn.FullyConnectedOp
    weights: np.ndarray
    """[N, K] int32 constant, zero point subtracted; values in int8's range."""
    w_scale: np.ndarray
    """float32, one value or one per output column."""
    bias: np.ndarray | None
    """float32 [N], or None."""
    own: tuple[Operation, ...]
    """The product's private ops from the widening casts to the final op, in order."""
    final: Operation


# ---- Matching ----------------------------------------------------------------------------------


def _owner(value: SSAValue, kind: type[_Op]) -> _Op | None:
    owner = value.owner if isinstance(value, OpResult) else None
    return owner if isinstance(owner, kind) else None


def _shape(value: SSAValue) -> tuple[int, ...]:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def _element(value: SSAValue) -> object:
    type_ = value.type
    return type_.element_type if isinstance(type_, TensorType) else None


def _is_f32(value: SSAValue) -> bool:
    return isinstance(_element(value), Float32Type)


def _is_int(value: SSAValue, width: int, signed: bool | None = None) -> bool:
    element = _element(value)
    if not isinstance(element, IntegerType) or element.width.data != width:
        return False
    unsigned = element.signedness.data.name == "UNSIGNED"
    return signed is None or unsigned != signed


def _constant(value: SSAValue) -> np.ndarray | None:
    op = _owner(value, nn.ConstantOp)
    return None if op is None else np.asarray(op.to_array())


def _is_splat(value: SSAValue, number: float) -> bool:
    array = _constant(value)
    return array is not None and array.size == 1 and _is_f32(value) and float(array) == number


def _either(op: Operation, test: Callable[[SSAValue], bool]) -> tuple[SSAValue, SSAValue] | None:
    """(matching operand, other operand) of a commutative binary op, or None."""
    lhs, rhs = op.operands
    if test(lhs):
        return lhs, rhs
    if test(rhs):
        return rhs, lhs
    return None


def _unit_rescale(value: SSAValue) -> SSAValue | None:
    """The i32 input of a `quant.rescale` by exactly 1 to plain ui8 giving `value`."""
    op = _owner(value, quant.RescaleOp)
    if op is None or op.axis is not None or not _is_int(op.output, 8, signed=False):
        return None
    if (op.multiplier_values, tuple(int(s) for s in op.shift.get_values())) != _UNIT_RESCALE:
        return None
    if quantized_element(op.output.type) is not None or not _is_int(op.input, 32, signed=None):
        return None
    return op.input


def _rounded_i32(value: SSAValue) -> tuple[SSAValue, list[Operation]] | None:
    """The float input of ``quant.scast (quant.qcast %f to !quant.uniform<i32:f32, 1.0>
    rounding half_to_even)``, and those two ops."""
    scast = _owner(value, quant.SCastOp)
    if scast is None or quantized_element(scast.results[0].type) is not None:
        return None
    qcast = _owner(scast.operands[0], quant.QCastOp)
    if qcast is None or qcast.rounding.data != "half_to_even":
        return None
    qtype = quantized_element(qcast.results[0].type)
    if (
        qtype is None
        or qtype.storage_width != 32
        or list(qtype.scale_values) != [1.0]
        or list(qtype.zero_point_values) != [0]
        or not _is_f32(qcast.operands[0])
    ):
        return None
    return qcast.operands[0], [qcast, scast]


def _bound(value: SSAValue, kind: str, binary: type[Operation]) -> tuple[SSAValue, list] | None:
    """`value` = binary(nn.reduce %x kind over all axes, 0.0): (%x, [reduce, binary])."""
    op = _owner(value, binary)
    if op is None:
        return None
    found = _either(op, lambda v: _owner(v, nn.ReduceOp) is not None)
    if found is None or not _is_splat(found[1], 0.0):
        return None
    reduce = _owner(found[0], nn.ReduceOp)
    assert reduce is not None
    x = reduce.operands[0]
    rank = len(_shape(x))
    if reduce.properties["kind"].data != kind or _shape(reduce.results[0]) != ():  # type: ignore[attr-defined]  # nn.reduce's `kind` property is a string-backed enum attribute
        return None
    axes = sorted(a % rank for a in ints_of(reduce.properties["axes"]))
    if axes != list(range(rank)) or not _is_f32(x):
        return None
    return x, [reduce, op]


def match_quantize(quantized: SSAValue, zero_point: SSAValue) -> DynamicQuantize | None:
    """The DynamicQuantizeLinear expansion (module docstring) giving `quantized` and
    `zero_point`, or None."""
    ops: list[Operation] = []
    # %q = rescale(add(round(div(%x, %s)), cast(%zp)))
    q_sum = _unit_rescale(quantized)
    add = None if q_sum is None else _owner(q_sum, nn.AddOp)
    if add is None:
        return None
    zp_cast_found = _either(
        add, lambda v: (c := _owner(v, nn.CastOp)) is not None and c.operands[0] is zero_point
    )
    if zp_cast_found is None:
        return None
    zp_cast, stored = zp_cast_found
    rounded = _rounded_i32(stored)
    if rounded is None or not _is_int(zp_cast, 32):
        return None
    div_x = _owner(rounded[0], nn.DivOp)
    if div_x is None:
        return None
    x, scale = div_x.operands
    # %s = div(sub(%hi, %lo), 255)
    div_s = _owner(scale, nn.DivOp)
    if div_s is None or not _is_splat(div_s.operands[1], 255.0) or _shape(scale) != ():
        return None
    span = _owner(div_s.operands[0], nn.SubOp)
    if span is None:
        return None
    high = _bound(span.operands[0], "max", nn.MaximumOp)
    low = _bound(span.operands[1], "min", nn.MinimumOp)
    if high is None or low is None or high[0] is not x or low[0] is not x:
        return None
    # %zp = rescale(round(div(neg(%lo), %s)))
    zp_in = _unit_rescale(zero_point)
    zp_rounded = None if zp_in is None else _rounded_i32(zp_in)
    zp_div = None if zp_rounded is None else _owner(zp_rounded[0], nn.DivOp)
    if zp_div is None or zp_div.operands[1] is not scale or _shape(zero_point) != ():
        return None
    neg = _owner(zp_div.operands[0], nn.NegOp)
    if neg is None or neg.operands[0] is not span.operands[1]:
        return None
    assert zp_rounded is not None
    ops = [*low[1], *high[1], span, div_s, neg, zp_div, *zp_rounded[1]]
    ops += [_owner(zero_point, quant.RescaleOp), zp_cast.owner, div_x, *rounded[1], add]
    last = _owner(quantized, quant.RescaleOp)
    assert last is not None
    ops.append(last)
    return DynamicQuantize(x, scale, zero_point, quantized, tuple(ops))


def _single_user(value: SSAValue) -> Operation | None:
    return value.get_user_of_unique_use() if value.has_one_use() else None


def _weights(fc: nn.FullyConnectedOp) -> np.ndarray | None:
    array = _constant(fc.operands[1])
    if array is None or array.ndim != 2 or not _is_int(fc.operands[1], 32):
        return None
    if array.size and (array.min() < -128 or array.max() > 127):
        return None
    return array.astype(np.int32)


def match_chain(fc: Operation) -> DynamicChain | None:
    """The dynamically quantized product around the i32 `fc`, or None."""
    if not isinstance(fc, nn.FullyConnectedOp) or len(fc.operands) != 2:
        return None
    activation = fc.properties.get("activation")
    if activation is not None and activation.data != "none":  # type: ignore[attr-defined]  # an nn op's `activation` property is an ActivationAttr
        return None
    if not _is_int(fc.results[0], 32) or not _is_int(fc.operands[0], 32):
        return None
    weights = _weights(fc)
    sub = _owner(fc.operands[0], nn.SubOp)
    if weights is None or sub is None or not sub.results[0].has_one_use():
        return None
    q_cast, zp_cast = (_owner(v, nn.CastOp) for v in sub.operands)
    if q_cast is None or zp_cast is None:
        return None
    if not (q_cast.results[0].has_one_use() and zp_cast.results[0].has_one_use()):
        return None
    quantize = match_quantize(q_cast.operands[0], zp_cast.operands[0])
    if quantize is None or _shape(quantize.source)[-1:] != (weights.shape[1],):
        return None
    # %y = mul(cast(%a), mul(%s, %w_scale)) [+ %bias]
    to_float = _single_user(fc.results[0])
    if not isinstance(to_float, nn.CastOp) or not _is_f32(to_float.results[0]):
        return None
    mul = _single_user(to_float.results[0])
    if not isinstance(mul, nn.MulOp) or _shape(mul.results[0]) != _shape(fc.results[0]):
        return None
    other = mul.operands[1] if mul.operands[0] is to_float.results[0] else mul.operands[0]
    scales = _owner(other, nn.MulOp)
    if scales is None or not other.has_one_use() or other is to_float.results[0]:
        return None
    found = _either(scales, lambda v: v is quantize.scale)
    w_scale = None if found is None else _constant(found[1])
    n = weights.shape[0]
    if w_scale is None or not _is_f32(found[1]) or w_scale.size not in (1, n):  # type: ignore[index]  # found is not None here: w_scale is None otherwise
        return None
    if w_scale.size == n and n > 1 and w_scale.shape[-1:] != (n,):
        return None
    own: list[Operation] = [q_cast, zp_cast, sub, fc, to_float, scales, mul]
    final: Operation = mul
    bias = None
    add = _single_user(mul.results[0])
    if isinstance(add, nn.AddOp) and _shape(add.results[0]) == _shape(mul.results[0]):
        found_bias = _either(add, lambda v: v is not mul.results[0])
        array = None if found_bias is None else _constant(found_bias[0])
        if array is not None and _is_f32(found_bias[0]) and array.shape in ((n,), (1, n)):  # type: ignore[index]  # found_bias is not None here: array is None otherwise
            bias = np.asarray(array, np.float32).reshape(n)
            own.append(add)
            final = add
    w_scales = np.asarray(w_scale, np.float32).reshape(-1)
    return DynamicChain(quantize, fc, weights, w_scales, bias, tuple(own), final)


def match_chains(ops: Sequence[Operation]) -> list[DynamicChain]:
    """Every dynamically quantized product among `ops`."""
    if not fuse_enabled():
        return []
    found = []
    for op in ops:
        if isinstance(op, nn.FullyConnectedOp) and (chain := match_chain(op)) is not None:
            found.append(chain)
    return found


# ---- Fusing ------------------------------------------------------------------------------------


def fuse_chains(ops: Sequence[Operation]) -> int:
    """Wrap every dynamically quantized product among `ops` (one block's ops) in a
    `cpu.fusion` of kind `KIND` with its own copy of its input's quantization; erase the
    original quantization ops no longer used. Returns the number of fusions."""
    from irc.targets.cpu.fuse import wrap_in_fusion

    chains = match_chains(ops)
    originals: dict[Operation, None] = {}
    for chain in chains:
        mapping: dict[SSAValue, SSAValue] = {}
        block = chain.fc.parent_block()
        assert block is not None
        position = {op: i for i, op in enumerate(block.ops)}
        first = min(chain.own, key=position.__getitem__)
        for op in chain.quantize.ops:
            originals[op] = None
            clone = op.clone(value_mapper=mapping)
            Rewriter.insert_op(clone, InsertPoint.before(first))
            for old, new in zip(op.results, clone.results, strict=True):
                mapping[old] = new
        for op in chain.own:
            for i, operand in enumerate(op.operands):
                if operand in mapping:
                    op.operands[i] = mapping[operand]
        clones = [mapping[v].owner for v in _results(chain.quantize.ops)]
        wrap_in_fusion(KIND, [*dict.fromkeys(clones), *chain.own])  # type: ignore[list-item]  # every mapped value is an op result, so its owner is an Operation
    for op in reversed(list(originals)):
        if all(not r.uses for r in op.results):
            Rewriter.erase_op(op)
    return len(chains)


def _results(ops: Sequence[Operation]) -> list[SSAValue]:
    return [r for op in ops for r in op.results]


# ---- Code generation ---------------------------------------------------------------------------


def _pack(weights: np.ndarray) -> np.ndarray:
    """[N, K] int32 -> [N/16][K/4][16][4] int8, zero padded."""
    n, k = weights.shape
    nb, k4 = -(-n // 16), -(-k // 4)
    padded = np.zeros((nb * 16, k4 * 4), np.int8)
    padded[:n, :k] = weights
    return np.ascontiguousarray(padded.reshape(nb, 16, k4, 4).transpose(0, 2, 1, 3))


def _column_sums(weights: np.ndarray) -> np.ndarray:
    n = weights.shape[0]
    sums = np.zeros(-(-n // 16) * 16, np.int32)
    sums[:n] = weights.astype(np.int64).sum(axis=1).astype(np.int32)
    return sums


def scratch_floats(m: int, k: int, n: int) -> int:
    """The kernel's scratch in floats: the quantized rows (up to 2 bytes an element) and the
    per-column scales, each 64-byte aligned."""
    kp = -(-k // 4) * 4
    return -(-(m * kp * 2) // 64) * 16 + -(-n // 16) * 16 + 16


def lower_fusion(lowering: OpLowering, fusion: cpu.FusionOp) -> Lowered:
    """A `KIND` fusion as one `irc_qgemm_dynamic` call."""
    from irc.targets.cpu.codegen import (
        Emitter,
        Lowered,
        LoweringError,
        block,
        c_call,
        describe,
        fusion_inputs,
    )

    members = list(fusion.members)
    fc = next((op for op in members if isinstance(op, nn.FullyConnectedOp)), None)
    chain = None if fc is None else match_chain(fc)
    yielded = fusion.body.block.last_op
    final = yielded.operands[0].owner if yielded is not None and yielded.operands else None
    if (
        chain is None
        or final is not chain.final
        or set(members) != {*chain.quantize.ops, *chain.own}
        or len(members) != len(chain.quantize.ops) + len(chain.own)
    ):
        raise LoweringError(fusion, f"the '{KIND}' fusion does not hold a chain of its kind")
    x = chain.quantize.source
    n, k = chain.weights.shape
    m = int(np.prod(_shape(x)[:-1], dtype=np.int64))
    weights_value = chain.fc.operands[1]
    per_column = int(chain.w_scale.size > 1)

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> list[str]:
        def table(tag: str, array: np.ndarray) -> str:
            index = lowering.codegen.constants.add(fusion.outputs[0], tag, lambda: array)
            return f"K[{index}]"

        packed = em.packed(weights_value, "qgemm_dynamic_s8 [N/16][K/4][16][4]", _pack)
        sums = em.packed(weights_value, "qgemm_dynamic_colsum_i32 [N/16*16]", _column_sums)
        scales = table("qgemm_dynamic_w_scale_f32", chain.w_scale)
        bias = "NULL" if chain.bias is None else f"(const float *){table('bias_f32', chain.bias)}"
        call = c_call(
            "irc_qgemm_dynamic",
            em.ptr(x),
            m,
            k,
            n,
            f"(const int8_t *){packed}",
            f"(const int32_t *){sums}",
            f"(const float *){scales}",
            per_column,
            bias,
            res[0],
            f"(void *){tmp[0]}",
        )
        return block(describe(chain.fc) + " (dynamically quantized)", [], [call])

    reads = fusion_inputs(fusion)
    return Lowered(emit, [scratch_floats(m, k, n)], (SNIPPET,), False, reads, (chain.fc, (x,)))
