"""Elementwise integer chains of ONE 8-bit value, run by the CPU target as a 256-entry table.

After `lower-quantized`, a quantized swish (``mul(x, sigmoid(x))``, how QDQ EfficientNets
spell SiLU) is the chain

    %s = nn.sigmoid %x                  (quantized: the 8-bit table of `tables.py`)
    %a = nn.sub (nn.cast (quant.scast %x)), zp_x        %b = the same of %s
    %p = nn.mul %a, %b  ->  %r = quant.rescale %p  [-> quant.scast -> nn.clip -> quant.scast]

whose result, element by element, depends on the byte of `%x` alone. `match_table_chains`
finds every such chain: elementwise ops (integer arithmetic, casts, clamps, the unary table
ops and exactly one rescale), scalar constants, one 8-bit input of the result's shape, an
8-bit result, intermediate values used only inside the chain. `chain_table` evaluates the reference
target's kernels of the chain's ops, in order, on all 256 input bytes at compile time, so the
table holds exactly what the reference computes, and `cpu-fuse` runs the chain as one
lookup per element (kind "qtable") instead of a table and about five int32 kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn, quant
from irc.dialects.quant import quantized_element
from irc.dtypes import numpy_dtype
from irc.targets.cpu.tables import TABLE_OPS, TABLE_SIZE

KIND = "qtable"
"""The `cpu.fusion` kind of a table chain."""

_ELEMENTWISE: tuple[type[Operation], ...] = (
    quant.SCastOp,
    quant.RescaleOp,
    nn.CastOp,
    nn.SubOp,
    nn.AddOp,
    nn.MulOp,
    nn.ClipOp,
    nn.MaximumOp,
    nn.MinimumOp,
    *TABLE_OPS,
)
"""Ops computed element by element from same-shaped operands and scalar constants."""

_CASTS = (quant.SCastOp, nn.CastOp)

_BYTES = (np.dtype(np.int8), np.dtype(np.uint8))


@dataclass
class TableChain:
    """One chain: `members` in block order, the last one's result is the table's."""

    source: SSAValue
    """The 8-bit value whose byte indexes the table."""
    members: list[Operation]

    @property
    def final(self) -> Operation:
        return self.members[-1]


def _shape(value: SSAValue) -> tuple[int, ...] | None:
    type_ = value.type
    return tuple(type_.get_shape()) if isinstance(type_, TensorType) else None


def _dtype(value: SSAValue) -> np.dtype | None:
    type_ = value.type
    return numpy_dtype(type_) if isinstance(type_, TensorType) else None


def _scalar_constant(value: SSAValue) -> bool:
    owner = value.owner
    if not isinstance(owner, nn.ConstantOp) or quantized_element(owner.output.type) is not None:
        return False
    dims = _shape(value)
    return dims is not None and int(np.prod(dims, dtype=np.int64)) == 1


def _elementwise(op: Operation, dims: tuple[int, ...]) -> bool:
    if not isinstance(op, _ELEMENTWISE) or len(op.results) != 1:
        return False
    if isinstance(op, quant.RescaleOp) and len(op.multiplier_values) != 1:
        return False  # per-channel multipliers: not one function of the byte
    if type(op) in TABLE_OPS and quantized_element(op.results[0].type) is None:
        return False  # a float sigmoid etc.: no table
    return _shape(op.results[0]) == dims


def match_table_chain(final: Operation, claimed: set[Operation]) -> TableChain | None:
    """The table chain whose result is `final`'s, or None."""
    dims = _shape(final.results[0]) if len(final.results) == 1 else None
    if dims is None or _dtype(final.results[0]) not in _BYTES:
        return None
    if final in claimed or not _elementwise(final, dims):
        return None
    block = final.parent_block()
    members: set[Operation] = set()
    leaves: set[SSAValue] = set()
    work = [final]
    while work:
        op = work.pop()
        if op in members:
            continue
        members.add(op)
        for value in op.operands:
            owner = value.owner
            if _scalar_constant(value):
                continue
            if (
                isinstance(owner, Operation)
                and owner.parent_block() is block
                and owner not in claimed
                and _elementwise(owner, dims)
            ):
                work.append(owner)
            else:
                leaves.add(value)
    if len(leaves) != 1:
        return None
    (source,) = leaves
    if _dtype(source) not in _BYTES or _shape(source) != dims:
        return None
    for op in members:
        if op is not final and any(use.operation not in members for use in op.results[0].uses):
            return None
    if sum(not isinstance(op, _CASTS) for op in members) < 2:
        return None  # a lone table op or rescale: its own kernel already
    if sum(isinstance(op, quant.RescaleOp) for op in members) != 1:
        return None  # the fusion is named after its one rescale (`cpu.FUSION_KINDS`)
    assert block is not None
    position = {op: i for i, op in enumerate(block.ops)}
    return TableChain(source, sorted(members, key=position.__getitem__))


def match_table_chains(ops: list[Operation], claimed: set[Operation]) -> list[TableChain]:
    """The table chains among `ops` (an entry's ops, in order) that use none of `claimed`
    (ops already in other fusions), longest first from the end."""
    taken = set(claimed)
    chains: list[TableChain] = []
    for op in reversed(ops):
        chain = match_table_chain(op, taken)
        if chain is not None and chain_table(chain) is not None:
            chains.append(chain)
            taken.update(chain.members)
    return chains[::-1]


def chain_table(chain: TableChain) -> np.ndarray | None:
    """The chain's result for every byte of its source (index: the byte read as uint8), in
    the result's storage dtype, from the reference target's kernels; None when one of them
    cannot run on it."""
    from irc.targets.reference.registry import UnsupportedOpError, kernel_for

    source_dtype = _dtype(chain.source)
    assert source_dtype is not None
    stored = np.arange(TABLE_SIZE, dtype=np.uint8).view(source_dtype)
    qtype = quantized_element(chain.source.type)
    if qtype is not None:
        low, high = qtype.storage_range
        stored = np.clip(stored, low, high).astype(source_dtype)
    values: dict[SSAValue, np.ndarray] = {chain.source: stored}
    try:
        for op in chain.members:
            inputs = []
            for value in op.operands:
                if value not in values:
                    owner = value.owner
                    assert isinstance(owner, nn.ConstantOp)
                    values[value] = owner.to_array().reshape(())
                inputs.append(values[value])
            (result,) = kernel_for(op)(*inputs)
            values[op.results[0]] = np.asarray(result).reshape(-1)
    except (UnsupportedOpError, ValueError, TypeError, IndexError):
        return None
    table = values[chain.final.results[0]]
    out_dtype = _dtype(chain.final.results[0])
    if table.shape != (TABLE_SIZE,) or table.dtype != out_dtype:
        return None
    return np.ascontiguousarray(table)
