"""`lower-quantized`'s int8 mul, run by the CPU target as one kernel (`cpu.fusion` "qmul").

A quantized mul (QDQ EfficientNets' squeeze-excitation ``y * sigmoid(s)``, the scale a
``[1, 1, 1, C]`` tensor) is, after `lower-quantized`,

    %a = nn.sub (nn.cast %x), zp_x     %b = nn.sub (nn.cast %s), zp_s     (i32)
    %p = nn.mul %a, %b  ->  quant.rescale %p (per tensor)  [-> quant.scast -> nn.clip]

`match_mul` finds it when one input has the result's shape and the other repeats along the
leading dimensions (its shape is the result's trailing dimensions, ones before). The kernel
reads both 8-bit inputs and writes the 8-bit result (the inputs stored alike): the exact
int32 products of 16 elements at a time requantized by the fused kernels' IRC_RQ_STORE
(kernels/common/qmul.c; `irc_mbqm`, the C mirror of the reference's rescale, exactly).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn, quant
from irc.dialects.quant import quantized_element
from irc.dtypes import numpy_dtype
from irc.targets.cpu import csrc
from irc.targets.cpu.qfusion import BYTE_TYPES, _single_user, _source, chain_output, shape_of

KIND = "qmul"
"""The `cpu.fusion` kind of a quantized mul."""

csrc.define_snippet("qmul", csrc.kernel_file("common/qmul.c"), ("qfused",))


@dataclass
class QuantMulChain:
    """One int8 mul: `large` has the result's shape, `small` repeats `rows` times."""

    mul: nn.MulOp
    large: SSAValue
    small: SSAValue
    zero_points: tuple[int, int]
    """Of `large`, `small`."""
    rows: int
    rescale: quant.RescaleOp
    final: Operation
    low: int
    high: int
    skipped: list[Operation] = field(default_factory=list)


def _repeats(small: tuple[int, ...], large: tuple[int, ...]) -> int | None:
    """How often `small` repeats to fill `large` (leading ones broadcast), or None."""
    if len(small) > len(large):
        return None
    small = (1,) * (len(large) - len(small)) + small
    for k in range(len(large) + 1):
        if small[k:] == large[k:] and all(d == 1 for d in small[:k]):
            return int(np.prod(large[:k], dtype=np.int64))
    return None


def _centered(value: SSAValue) -> tuple[SSAValue, int, list[Operation]] | None:
    """(8-bit source, zero point, widening ops) of an i32 mul operand: ``sub(cast(x), zp)``
    or, for a zero point of 0, ``cast(x)``."""
    cast = value.owner
    if isinstance(cast, nn.CastOp) and value.has_one_use():
        source = cast.operands[0]
        if numpy_dtype(source.type) in BYTE_TYPES:
            return source, 0, [cast]
        return None
    found = _source(value)
    return found if found is not None and found[2] else None


def match_mul(op: Operation) -> QuantMulChain | None:
    """The fusable int8 mul chain whose `nn.mul` is `op`, or None."""
    if not isinstance(op, nn.MulOp) or numpy_dtype(op.output.type) != np.dtype(np.int32):
        return None
    if op.lhs is op.rhs:
        return None
    out = shape_of(op.output)
    first, second = _centered(op.lhs), _centered(op.rhs)
    if first is None or second is None:
        return None
    if shape_of(op.lhs) != out:
        first, second = second, first
    (large, za, oa), (small, zb, ob) = first, second
    if shape_of(large) != out:
        return None
    rows = _repeats(shape_of(small), out)
    if rows is None:
        return None
    rescale = _single_user(op.output)
    if not isinstance(rescale, quant.RescaleOp) or len(rescale.multiplier_values) != 1:
        return None
    if quantized_element(rescale.input.type) is not None:
        return None
    out_dtype = numpy_dtype(rescale.output.type)
    if (
        out_dtype not in BYTE_TYPES
        or not numpy_dtype(large.type) == numpy_dtype(small.type) == out_dtype
    ):
        return None  # the kernel reads and writes one storage type
    shift = rescale.shift_values[0]
    if not (0 <= 31 - shift < 64 if rescale.rounding.data == "single_round" else -63 <= shift < 32):
        return None
    final, low, high, tail = chain_output(rescale, out_dtype)
    if low > high:
        return None
    skipped = [*oa, *ob, op, *tail]
    return QuantMulChain(op, large, small, (za, zb), rows, rescale, final, low, high, skipped)


def match_mul_chains(ops: list[Operation], claimed: set[Operation]) -> list[QuantMulChain]:
    """The fusable int8 muls among `ops` (an entry's ops) that use none of `claimed`."""
    chains = []
    for op in ops:
        chain = match_mul(op)
        if chain is not None and not claimed.intersection([*chain.skipped, chain.final]):
            chains.append(chain)
    return chains
