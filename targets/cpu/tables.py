"""Quantized 8-bit unary ops of the CPU target as exact 256-entry lookup tables.

The unary ops that `lower-quantized` leaves quantized (sigmoid, tanh, gelu, exp, log, sqrt,
rsqrt, hard_swish: TFLite defines them by algorithms of their own) are, with a per-tensor
8-bit input and result, pure functions of the input byte. `lower-cpu` evaluates the reference
target's kernel (bit-exact with TFLite) on every possible byte once, at compile time, and the
generated C only indexes the table with the stored byte read as `uint8_t`.

Bytes outside the input's storage range (a narrowed range never holds them) map to the result
of the nearest stored value. An op whose reference kernel refuses some stored inputs at run
time (sqrt, rsqrt below the zero point) has no table: the reference target runs it.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from irc.dialects import nn
from irc.dialects.quant import quantized_element
from irc.dtypes import numpy_dtype

TABLE_OPS: frozenset[type[Operation]] = frozenset(
    {
        nn.SigmoidOp,
        nn.TanhOp,
        nn.GeluOp,
        nn.ExpOp,
        nn.LogOp,
        nn.SqrtOp,
        nn.RsqrtOp,
        nn.HardSwishOp,
    }
)
"""Quantized unary ops run as a lookup table of the reference target's int8/uint8 kernel."""

TABLE_SIZE = 256
"""Entries of one table: one per input byte."""

_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))


class TableError(Exception):
    """`op` has no lookup-table form on the CPU target; the message says why."""


def lookup_table(op: Operation) -> np.ndarray:
    """The results of quantized unary `op` for every input byte (index: the stored byte read
    as uint8), in the result's storage dtype; raises TableError when it has none."""
    from irc.targets.reference.registry import UnsupportedOpError, kernel_for

    if type(op) not in TABLE_OPS or len(op.operands) != 1 or len(op.results) != 1:
        raise TableError(f"no lookup-table kernel for '{op.name}'")
    source, result = op.operands[0], op.results[0]
    qtypes = []
    for value, what in ((source, "input"), (result, "result")):
        qtype = quantized_element(value.type) if isinstance(value.type, TensorType) else None
        if qtype is None:
            raise TableError(f"quantized '{op.name}' with a non-quantized {what}")
        if qtype.is_per_axis:
            raise TableError(f"quantized '{op.name}' with a per-axis quantized {what}")
        if numpy_dtype(value.type.element_type) not in _EIGHT_BIT:  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)
            raise TableError(f"quantized '{op.name}' with a {qtype} {what} (8-bit only)")
        qtypes.append(qtype)
    source_dtype = numpy_dtype(source.type.element_type)  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)
    low, high = qtypes[0].storage_range
    stored = np.arange(TABLE_SIZE, dtype=np.uint8).view(source_dtype)
    stored = np.clip(stored, low, high).astype(source_dtype)
    try:
        (table,) = kernel_for(op)(stored)
    except UnsupportedOpError as exc:
        raise TableError(exc.reason) from None
    except ValueError as exc:
        raise TableError(
            f"quantized '{op.name}' refuses some stored inputs at run time ({exc})"
        ) from None
    return np.ascontiguousarray(table, dtype=numpy_dtype(result.type.element_type))  # type: ignore[attr-defined]  # nn op operands and results are TensorTypes (their operand/result definitions)
