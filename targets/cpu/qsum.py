"""`lower-quantized`'s int8 sum over contiguous axes, run by the CPU target as one kernel
(`cpu.fusion` "qsum").

A quantized global average pool (QDQ EfficientNets' squeeze-excitation, every classifier's
head) is, after `lower-quantized`,

    %a = nn.sub (nn.cast %x), zp_x                     (i32, the whole feature map)
    %s = nn.reduce %a kind = "sum" axes = [1, 2]       (i32, one value per channel)
    -> quant.rescale %s ...

`match_sum` finds the cast, the zero point's sub (none for a zero point of 0) and the sum
when the reduced axes are contiguous and the int32 intermediates have no other use. The
kernel reads the 8-bit input once, sums it per output element in 32-bit arithmetic and
subtracts ``count * zp``: the same int32 values, wrap-around included, as the separate int32
sub and sum (the rescale after it stays its own small kernel), without the int32 copy of
the feature map.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.dtypes import numpy_dtype
from irc.targets.cpu.qfusion import BYTE_TYPES, _source, shape_of

KIND = "qsum"
"""The `cpu.fusion` kind of a quantized sum."""


@dataclass
class QuantSumChain:
    """One sum: `source` viewed as ``[outer][count][inner]``, summed over `count`."""

    reduce: nn.ReduceOp
    source: SSAValue
    zero_point: int
    outer: int
    count: int
    inner: int
    skipped: list[Operation] = field(default_factory=list)
    """The widening ops (cast, sub) that run inside the sum's kernel."""


def _widened(value: SSAValue) -> tuple[SSAValue, int, list[Operation]] | None:
    """(8-bit source, zero point, widening ops) of the sum's int32 input:
    ``sub(cast(x), zp)`` or, for a zero point of 0, ``cast(x)`` used by the sum alone."""
    cast = value.owner
    if isinstance(cast, nn.CastOp) and value.has_one_use():
        source = cast.operands[0]
        return (source, 0, [cast]) if numpy_dtype(source.type) in BYTE_TYPES else None
    found = _source(value)
    return found if found is not None and found[2] else None


def match_sum(op: Operation) -> QuantSumChain | None:
    """The fusable sum chain whose `nn.reduce` is `op`, or None."""
    if not isinstance(op, nn.ReduceOp) or op.kind.data != "sum":
        return None
    if numpy_dtype(op.output.type) != np.dtype(np.int32):
        return None
    found = _widened(op.operands[0])
    if found is None:
        return None
    source, zp, widening = found
    dims = shape_of(source)
    axes = sorted(a % len(dims) for a in ints_of(op.axes)) if dims else []
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        return None  # not one contiguous run of axes
    count = int(np.prod(dims[axes[0] : axes[-1] + 1], dtype=np.int64))
    if count >= 1 << 23:
        return None  # |sum| stays below 2^31 for fewer terms: no wrap-around to mirror
    outer = int(np.prod(dims[: axes[0]], dtype=np.int64))
    inner = int(np.prod(dims[axes[-1] + 1 :], dtype=np.int64))
    return QuantSumChain(op, source, zp, outer, count, inner, widening)


def match_sum_chains(ops: list[Operation], claimed: set[Operation]) -> list[QuantSumChain]:
    """The fusable int8 sums among `ops` (an entry's ops) that use none of `claimed`."""
    chains = []
    for op in ops:
        chain = match_sum(op)
        if chain is not None and not claimed.intersection([*chain.skipped, chain.reduce]):
            chains.append(chain)
    return chains
