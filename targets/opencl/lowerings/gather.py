"""gather of float, `i1`, i32 or i64 data with constant or int32/int64 indices (`batch_dims`)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.dialects.nn.base import get_int
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    KernelRun,
    LoweringError,
    _ctype,
    _decompose,
    _describe,
    _numel,
    _shape,
    _signature,
    _strides,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.lowerings.typed import typed_input
from irc.targets.opencl.program import Program


def _gather(op: nn.GatherOp, program: Program, desc: str) -> KernelRun:
    """Constant indices are checked and made non-negative at lowering (a float table, exact
    below 2^24); run-time int32/int64 indices count from the end when negative and are
    clamped into the dimension, so a bad index cannot read outside the buffer."""
    props = op.all_properties()
    in_shape, idx_shape, out_shape = _shape(op.input), _shape(op.indices), _shape(op.output)
    rank = len(in_shape)
    axis = get_int(props, "axis") % rank
    batch = get_int(props, "batch_dims")
    size = in_shape[axis]
    ct = _ctype(op.output)
    owner = op.indices.owner
    index_input: SSAValue | str
    if isinstance(owner, nn.ConstantOp):
        values = array_from_dense(owner.value).astype(np.int64)
        if values.size and not (-size <= values.min() and values.max() < size):
            raise LoweringError(op, f"gather index out of range for dimension {axis} of {size}")
        index_input = program.constant(np.where(values < 0, values + size, values), table=True)
        index_type, wide, fix = "float", "int", ""
    else:
        index_input = op.indices
        element = op.indices.type.element_type  # type: ignore[union-attr]  # nn op operands and results are TensorTypes (their operand/result definitions)
        assert isinstance(element, IntegerType)
        index_type = wide = "long" if element.width.data == 64 else "int"
        # clamped in the index's own width: a huge int64 index must not wrap into range
        fix = f"    if (w < 0) w += {size};\n    w = clamp(w, ({wide})0, ({wide}){size - 1});\n"
    n_idx = len(idx_shape) - batch
    # output coords: x prefix (axis dims), index dims after batch, x suffix
    names = [f"p{d}" for d in range(axis)] + [f"j{d}" for d in range(n_idx)]
    names += [f"s{d}" for d in range(axis + 1, rank)]
    ist = _strides(idx_shape)
    idx_terms = [f"p{d} * {ist[d]}" for d in range(batch)]
    idx_terms += [f"j{k} * {ist[batch + k]}" for k in range(n_idx)]
    xst = _strides(in_shape)
    src = [f"p{d} * {xst[d]}" for d in range(axis)] + [f"i * {xst[axis]}"]
    src += [f"s{d} * {xst[d]}" for d in range(axis + 1, rank)]
    body = (
        _decompose(out_shape, names)
        + f"    {wide} w = ({wide})x1[{' + '.join(idx_terms) or '0'}];\n"
        + fix
        + "    const int i = (int)w;\n"
        + f"    y[gid] = x0[{' + '.join(src)}];\n"
    )
    kernel = _signature(2, body, [ct, index_type], ct)
    inputs = [typed_input(op.input, program), index_input]
    return program.kernel(kernel, desc), inputs, [_numel(out_shape)]


@lowering(nn.GatherOp)
def gather(op: nn.GatherOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per output element."""
    return [_gather(op, program, _describe(op))]
