"""Data movement on any C type (storage integers included): reshape (free), transpose,
broadcast_to, concat, split, slice and constant pad, as collapsed loop nests or row copies
(pads up to rank 4: the `irc_pad` kernel).
"""

from __future__ import annotations

from xdsl.ir import Operation

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.targets.cpu.lowerings.helpers import (
    activation_code,
    block,
    broadcast_strides,
    c_float,
    collapse,
    contiguous_strides,
    copy_rows,
    ctype,
    describe,
    loop_nest,
    numel,
    parallel,
    shape,
    transpose_lines,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    alias,
    lowering,
)

DATA_MOVEMENT_OPS: frozenset[type[Operation]] = frozenset(
    {
        nn.ConstantOp,
        nn.ReshapeOp,
        nn.TransposeOp,
        nn.ConcatOp,
        nn.SplitOp,
        nn.SliceOp,
        nn.PadOp,
        nn.BroadcastToOp,
    }
)
"""Ops that move values without arithmetic: any C type, storage integers included
(constants: `codegen` passes them in the constants table)."""


@lowering(nn.ReshapeOp)
def reshape(op: nn.ReshapeOp, ctx: LoweringContext) -> Lowered:
    """Free: the result shares its input's buffer."""
    return alias()


@lowering(nn.TransposeOp)
def transpose(op: nn.TransposeOp, ctx: LoweringContext) -> Lowered:
    """A collapsed loop nest of copies."""
    ct = ctype(op.input)
    dims, perm = shape(op.input), ints_of(op.perm)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            f"const {ct} *restrict px = {em.ptr(op.input)};",
            f"{ct} *restrict po = {res[0]};",
        ]
        return block(describe(op), decls, transpose_lines("px", "po", dims, perm))

    return Lowered(emit)


@lowering(nn.BroadcastToOp)
def broadcast_to(op: nn.BroadcastToOp, ctx: LoweringContext) -> Lowered:
    """Copies read at zero strides along the broadcast dimensions."""
    ct = ctype(op.input)
    out = shape(op.output)
    cdims, (so, sx) = collapse(
        out, [contiguous_strides(out), broadcast_strides(shape(op.input), out)]
    )

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            f"const {ct} *restrict px = {em.ptr(op.input)};",
            f"{ct} *restrict po = {res[0]};",
        ]
        body = loop_nest(cdims, [(0, so), (0, sx)], lambda ix: [f"po[{ix[0]}] = px[{ix[1]}];"])
        return block(describe(op), decls, body)

    return Lowered(emit)


@lowering(nn.ConcatOp)
def concat(op: nn.ConcatOp, ctx: LoweringContext) -> Lowered:
    """Row copies into the result (`memcpy`), then the fused activation."""
    out = shape(op.output)
    axis = op.axis.value.data % len(out)
    outer = numel(out[:axis])
    out_inner = numel(out[axis:])
    act = activation_code(op)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        body: Lines = []
        pieces: list[tuple[str, int, int]] = []  # (source, offset in a result row, count)
        offset = 0
        for value in op.inputs:
            inner = numel(shape(value)[axis:])
            if inner:
                pieces.append((em.ptr(value), offset, inner))
            offset += inner
        if outer > 1 and len(pieces) > 1:
            # Row by row, every piece of a result row in turn: the result is written once,
            # in order (piece by piece over all rows, each pass would fetch every cache line
            # of the result again for a part of it), and rows split across the threads.
            ct = ctype(op.output)
            copies = [
                f"  memcpy({res[0]} + r * {out_inner} + {at}, {src} + r * {count}, "
                f"sizeof({ct}) * {count});"
                for src, at, count in pieces
            ]
            body += parallel(
                [outer, out_inner], [f"for (long r = 0; r < {outer}; ++r) {{", *copies, "}"]
            )
        else:
            for src, at, count in pieces:
                body += copy_rows(
                    res[0], at, out_inner, src, 0, count, outer, count, ctype(op.output)
                )
        if act:
            body += loop_nest(
                [numel(out)],
                [(0, [1])],
                lambda ix: [f"{res[0]}[{ix[0]}] = irc_act({res[0]}[{ix[0]}], {act});"],
            )
        return block(describe(op), [], body)

    return Lowered(emit, snippets=("common",))


@lowering(nn.SplitOp)
def split(op: nn.SplitOp, ctx: LoweringContext) -> Lowered:
    """Row copies out of the input, one result after the other."""
    dims = shape(op.input)
    axis = op.axis.value.data % len(dims)
    outer = numel(dims[:axis])
    in_inner = numel(dims[axis:])

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        body: Lines = []
        offset = 0
        src = em.ptr(op.input)
        for value, dst in zip(op.outputs, res):
            inner = numel(shape(value)[axis:])
            if inner:
                body += copy_rows(
                    dst, 0, inner, src, offset, in_inner, outer, inner, ctype(op.input)
                )
            offset += inner
        return block(describe(op), [], body)

    return Lowered(emit)


@lowering(nn.SliceOp)
def strided_slice(op: nn.SliceOp, ctx: LoweringContext) -> Lowered:
    """A strided loop nest of copies."""
    ct = ctype(op.input)
    dims, out = shape(op.input), shape(op.output)
    begin, steps = ints_of(op.begin), ints_of(op.strides)
    in_strides = contiguous_strides(dims)
    base = sum(b * s for b, s in zip(begin, in_strides))
    cdims, (so, sx) = collapse(
        out, [contiguous_strides(out), [s * st for s, st in zip(in_strides, steps)]]
    )

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            f"const {ct} *restrict px = {em.ptr(op.input)};",
            f"{ct} *restrict po = {res[0]};",
        ]
        body = loop_nest(cdims, [(0, so), (base, sx)], lambda ix: [f"po[{ix[0]}] = px[{ix[1]}];"])
        return block(describe(op), decls, body)

    return Lowered(emit)


PAD_KERNEL_RANK = 4
"""Pads of up to this rank run the `irc_pad` kernel (kernels/common/pad_nhwc.c): every
output element written once, rows split over the threads when big (the channel pads of
BlazeFace's residual branches, spatial pads); higher ranks run loop nests."""


@lowering(nn.PadOp)
def pad(op: nn.PadOp, ctx: LoweringContext) -> Lowered:
    """Constant padding: `irc_pad` up to rank 4 (dimensions 1 in front), else the fill
    value, then the input copied inside, as loop nests."""
    ct = ctype(op.input)
    dims, out = shape(op.input), shape(op.output)
    pads = ints_of(op.pads)
    fill = op.value.value.data
    value = c_float(fill) if ct == "float" else str(int(fill))
    if len(dims) <= PAD_KERNEL_RANK and (ct != "uint16_t" or fill == 0.0):
        front = PAD_KERNEL_RANK - len(dims)
        d4 = [1] * front + list(dims)
        lo4 = [0] * front + [pads[2 * k] for k in range(len(dims))]
        hi4 = [0] * front + [pads[2 * k + 1] for k in range(len(dims))]

        def emit_kernel(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [
                f"static const long d[4] = {{{', '.join(map(str, d4))}}};",
                f"static const long lo[4] = {{{', '.join(map(str, lo4))}}};",
                f"static const long hi[4] = {{{', '.join(map(str, hi4))}}};",
                f"const {ct} fill = {value};",
            ]
            call = f"irc_pad({res[0]}, {em.ptr(op.input)}, sizeof({ct}), d, lo, hi, &fill);"
            return block(describe(op), decls, [call])

        return Lowered(emit_kernel, snippets=("pad_nhwc",))

    out_strides = contiguous_strides(out)
    base = sum(pads[2 * d] * out_strides[d] for d in range(len(dims)))
    cdims, (sx, so) = collapse(dims, [contiguous_strides(dims), out_strides])

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            f"const {ct} *restrict px = {em.ptr(op.input)};",
            f"{ct} *restrict po = {res[0]};",
        ]
        body = loop_nest([numel(out)], [(0, [1])], lambda ix: [f"po[{ix[0]}] = {value};"])
        body += loop_nest(cdims, [(0, sx), (base, so)], lambda ix: [f"po[{ix[1]}] = px[{ix[0]}];"])
        return block(describe(op), decls, body)

    return Lowered(emit)
