"""Data movement: reshape, transpose, concat, slice (negative strides), split (any axis,
uneven and empty pieces: one launch writing every piece) and broadcast_to. Each runs on the
element type of its buffer (`REAL`, the char/uchar storage `insert-qdq` leaves on quantized
tensors, uchar `i1` masks, int / long i32 / i64 tensors); a constant `i1` / integer input is
uploaded as its bytes (`typed.typed_input`).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import get_int, get_ints
from irc.targets.opencl.lowerings.epilogue import compose, prelude
from irc.targets.opencl.lowerings.helpers import (
    REAL,
    Emitted,
    KernelRun,
    LoweringError,
    _broadcasting,
    _ctype,
    _decompose,
    _describe,
    _kernel,
    _numel,
    _shape,
    _strides,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.lowerings.typed import typed_input
from irc.targets.opencl.program import Program


@lowering(nn.ReshapeOp)
def reshape(op: nn.ReshapeOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """A copy."""
    n_out = prelude(op, epilogue).n_out
    ct = _ctype(op.results[0]) if op.results else REAL
    k = program.kernel(_kernel(1, "    y[gid] = x0[gid];\n", ct, ct), f"copy {ct}")
    return [(k, [typed_input(op.input, program)], [n_out])]


@lowering(nn.TransposeOp)
def transpose(op: nn.TransposeOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per output element."""
    pre = prelude(op, epilogue)
    desc, props, out_shape, n_out = pre.desc, pre.props, pre.out_shape, pre.n_out
    ct = _ctype(op.results[0]) if op.results else REAL
    in_shape = _shape(op.input)
    perm = list(get_ints(props, "perm"))
    st = _strides(in_shape)
    rank = len(out_shape)
    src = " + ".join(f"c{d} * {st[perm[d]]}" for d in range(rank)) or "0"
    body = _decompose(out_shape, [f"c{d}" for d in range(rank)]) + f"    y[gid] = x0[{src}];\n"
    return [
        (program.kernel(_kernel(1, body, ct, ct), desc), [typed_input(op.input, program)], [n_out])
    ]


@lowering(nn.ConcatOp)
def concat(op: nn.ConcatOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One launch per non-empty input, writing its slab of the output."""
    pre = prelude(op, epilogue)
    desc, props, act, out_shape = pre.desc, pre.props, pre.act, pre.out_shape
    ct = _ctype(op.results[0]) if op.results else REAL
    rank = len(out_shape)
    axis = get_int(props, "axis") % rank
    inner = _numel(out_shape[axis + 1 :])
    total = out_shape[axis]
    result: list[tuple[str, list[SSAValue | str], list[int]]] = []
    offset = 0
    for v in op.inputs:
        a = _shape(v)[axis]
        chunk = a * inner
        n = _numel(_shape(v))
        if n:
            if ct != REAL and act and act != ["v"]:
                raise LoweringError(op, "quantized concat with a fused activation")
            body = (
                f"    const int o = gid / {chunk}; const int r = gid % {chunk};\n"
                f"    {ct} v = x0[gid];\n"
                + (compose(act, real=True) if ct == REAL else "")
                + f"    y[o * {total * inner} + {offset * inner} + r] = v;\n"
            )
            kernel = program.kernel(_kernel(1, body, ct, ct), desc)
            result.append((kernel, [typed_input(v, program)], [n]))
        offset += a
    return result


def _slice(op: nn.SliceOp, program: Program, desc: str) -> KernelRun:
    props = op.all_properties()
    in_shape, out_shape = _shape(op.input), _shape(op.output)
    begin, steps = get_ints(props, "begin"), get_ints(props, "strides")
    st = _strides(in_shape)
    rank = len(out_shape)
    src = " + ".join(f"({begin[d]} + c{d} * ({steps[d]})) * {st[d]}" for d in range(rank))
    ct = _ctype(op.output)
    body = _decompose(out_shape, [f"c{d}" for d in range(rank)]) + f"    y[gid] = x0[{src or 0}];\n"
    kernel = program.kernel(_kernel(1, body, ct, ct), desc)
    return kernel, [typed_input(op.input, program)], [_numel(out_shape)]


def _split(op: nn.SplitOp, program: Program, desc: str) -> KernelRun:
    """One work-item per input element, copied into the piece its coordinate along the axis
    falls in; the kernel takes the input `x0` and one output `y<j>` per piece (an empty
    piece's buffer is never written)."""
    in_shape = _shape(op.input)
    axis = get_int(op.all_properties(), "axis") % len(in_shape)
    sizes = get_ints(op.all_properties(), "sizes")
    ct = _ctype(op.input)
    inner = _numel(in_shape[axis + 1 :])
    dim = in_shape[axis]
    outs = "".join(f", __global {ct}* restrict y{j}" for j in range(len(sizes)))
    lines = [
        f"    const int inner = gid % {inner};\n",
        f"    const int a = (gid / {inner}) % {dim};\n",
        f"    const int outer = gid / {inner * dim};\n",
    ]
    start = 0
    branch = "if"
    for j, size in enumerate(sizes):
        if size:
            lines.append(
                f"    {branch} (a < {start + size}) "
                f"y{j}[(outer * {size} + a - {start}) * {inner} + inner] = x0[gid];\n"
            )
            branch = "else if"
        start += size
    kernel = (
        f"__kernel void KERNEL_NAME(__global const {ct}* restrict x0{outs}) {{\n"
        "    const int gid = get_global_id(0);\n" + "".join(lines) + "}\n"
    )
    return program.kernel(kernel, desc), [typed_input(op.input, program)], [_numel(in_shape)]


@lowering(nn.SliceOp)
def slice_copy(op: nn.SliceOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per output element."""
    return [_slice(op, program, _describe(op))]


@lowering(nn.SplitOp)
def split(op: nn.SplitOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One launch writing every piece."""
    return [_split(op, program, _describe(op))]


@lowering(nn.BroadcastToOp)
def broadcast_to(
    op: nn.BroadcastToOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """numpy broadcasting, one work-item per output element."""
    desc = _describe(op)
    ct = _ctype(op.output)
    name, _, size = _broadcasting(op, [op.input], "a", program, desc, ct, ct)
    return [(name, [typed_input(op.input, program)], size)]
