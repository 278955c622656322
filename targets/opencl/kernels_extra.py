"""OpenCL kernels of the op families beyond codegen.py's core set.

`emit_extra(op, epilogue, program)` returns the launches of one op in the form
`codegen._emit` returns them (`[(kernel name, inputs, global size)]`, the output buffer —
one per result, in order, for split — appended by the caller), or None when the op is not
one of this module's, so `_emit` goes on with its own kernels. Every kernel is a template
with the shapes baked in as literals; nothing taken from the model reaches the source
(numbers only, printed by this module).

Covered here: conv2d_transpose (groups, strides, dilations, pads, output padding), slice
(negative strides), split (any axis, uneven and empty pieces: one launch writing every
piece), broadcast_to, gather (constant or int32/int64 indices), resize (nearest
and bilinear, every coordinate mode: the sampling tables are computed at lowering with the
reference target's own functions), pad modes reflect/edge, the remaining unary ops (abs,
neg, exp, log, sqrt, rsqrt, erf, gelu exact/tanh), pow, squared_difference and prelu with
numpy broadcasting, comparisons, logic and select on `i1` tensors (one byte per element, 0
or 1, as numpy's bool), softmax over any axis (and negative beta), log_softmax, and the
reduce kinds codegen.py lacks (prod). Data movement runs on the element type of its buffer
(`REAL`, or the char/uchar storage `insert-qdq` leaves on quantized tensors).

Precision as in codegen.py: float tensors are `REAL` (half in fp16); elementwise ops compute
in `REAL`, comparisons on float copies of their operands (the NaN test reads float bits),
conv2d_transpose, softmax, log_softmax and prod accumulate in float; gather index and resize
tables stay float32.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.dialects.nn.base import get_float, get_floats, get_int, get_ints, get_str
from irc.targets.opencl.codegen import (
    FUSED_ACTIVATION,
    REAL,
    LoweringError,
    Program,
    _ctype,
    _decompose,
    _describe,
    _dot_product,
    _f,
    _kernel,
    _numel,
    _shape,
    _strides,
    compose,
    nan_max_update,
    softmax_shift,
    unary_expr,
)
from irc.targets.reference.shape import _linear_taps, _nearest_indices, _source_coordinates

KernelRun = tuple[str, list[SSAValue | str], list[int]]
"""(kernel name, input values or constant names, global size): one launch of `_emit`'s list."""
Emitted = list[KernelRun]

SQRT1_2 = 0.7071067811865476
SQRT_2_OVER_PI = 0.7978845608028654

EXTRA_UNARY: dict[type[Operation], str] = {
    nn.AbsOp: "fabs(v)",
    nn.NegOp: "(-v)",
    nn.ExpOp: "exp(v)",
    nn.LogOp: "log(v)",
    nn.SqrtOp: "sqrt(v)",
    nn.RsqrtOp: "(1.0f / sqrt(v))",
    nn.ErfOp: "erf(v)",
}
"""Unary ops as expressions of the float `v` (gelu is built from its approximation)."""

EXTRA_BINARY: dict[type[Operation], str] = {
    # pow of a negative base is defined for integral exponents only (numpy gives NaN
    # otherwise): pown keeps the sign that a relaxed exp2(b * log2(a)) would lose.
    nn.PowOp: "(b == rint(b) && fabs(b) < 16777216.0f) ? pown(a, (int)b) : pow(a, b)",
    nn.SquaredDifferenceOp: "(a - b) * (a - b)",
    nn.PReluOp: "(a >= 0.0f ? a : a * b)",
}
"""Float binary ops as expressions of `a` and `b` (numpy broadcasting)."""

UNORDERED = "((as_uint(a) & 0x7fffffffu) > 0x7f800000u || (as_uint(b) & 0x7fffffffu) > 0x7f800000u)"
"""Whether `a` or `b` is NaN, from the bits: right even where a program is built with
`-cl-fast-relaxed-math` (`IRC_OPENCL_FAST_MATH=1`), which lets the compiler assume float
comparisons never see a NaN."""
COMPARE_EXPR = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
LOGICAL_EXPR: dict[type[Operation], str] = {
    nn.LogicalAndOp: "(a != 0) & (b != 0)",
    nn.LogicalOrOp: "(a != 0) | (b != 0)",
    nn.LogicalXorOp: "(a != 0) ^ (b != 0)",
}
BOOL_OPS: tuple[type[Operation], ...] = (
    nn.CompareOp,
    nn.LogicalAndOp,
    nn.LogicalOrOp,
    nn.LogicalXorOp,
    nn.LogicalNotOp,
    nn.SelectOp,
)
"""Ops on `i1` tensors: uchar buffers holding 0 or 1."""

MOVEMENT_OPS: tuple[type[Operation], ...] = (
    nn.SliceOp,
    nn.BroadcastToOp,
    nn.GatherOp,
    nn.ResizeOp,
    nn.SplitOp,
)
"""Data movement of this module: kernels on the buffer's element type (float, char, uchar)."""

EXTRA_OPS: frozenset[type[Operation]] = frozenset(
    {
        *EXTRA_UNARY,
        nn.GeluOp,
        *EXTRA_BINARY,
        *BOOL_OPS,
        *MOVEMENT_OPS,
        nn.Conv2DTransposeOp,
        nn.LogSoftmaxOp,
    }
)
"""Op types only this module emits (pad, softmax and reduce are shared with codegen.py)."""

EXTRA_PAD_MODES = ("reflect", "edge")
EXTRA_REDUCE_KINDS = ("prod",)


def emit_extra(op: Operation, epilogue: list[Operation], program: Program) -> Emitted | None:
    """This module's launches for `op`, or None when codegen.py's own kernels handle it."""
    desc = _describe(op)
    if type(op) in EXTRA_UNARY or isinstance(op, nn.GeluOp):
        return _unary(op, epilogue, program, desc)
    if type(op) in EXTRA_BINARY:
        return [_broadcasting(op, list(op.operands), EXTRA_BINARY[type(op)], program, desc)]
    if isinstance(op, BOOL_OPS):
        return [_boolean(op, program, desc)]
    if isinstance(op, nn.Conv2DTransposeOp):
        return [_conv2d_transpose(op, epilogue, program, desc)]
    if isinstance(op, nn.SliceOp):
        return [_slice(op, program, desc)]
    if isinstance(op, nn.BroadcastToOp):
        ct = _ctype(op.output)
        return [_broadcasting(op, [op.input], "a", program, desc, ct, ct)]
    if isinstance(op, nn.GatherOp):
        return [_gather(op, program, desc)]
    if isinstance(op, nn.SplitOp):
        return [_split(op, program, desc)]
    if isinstance(op, nn.ResizeOp):
        return [_resize(op, program, desc)]
    if isinstance(op, nn.PadOp) and op.mode.data in EXTRA_PAD_MODES:
        return [_pad(op, program, desc)]
    if isinstance(op, nn.LogSoftmaxOp):
        return [_softmax(op, program, desc, log=True)]
    if isinstance(op, nn.SoftmaxOp):
        rank = len(_shape(op.input))
        beta = get_float(op.all_properties(), "beta")
        if op.axis.value.data % rank != rank - 1 or (beta is not None and beta < 0):
            return [_softmax(op, program, desc, log=False)]
        return None
    if isinstance(op, nn.ReduceOp) and op.kind.data in EXTRA_REDUCE_KINDS:
        return [_reduce(op, program, desc)]
    return None


def _activations(op: Operation, epilogue: list[Operation]) -> list[str]:
    """The op's fused activation then its fused unary epilogue, as expressions of `v`."""
    props = op.all_properties()
    exprs = [FUSED_ACTIVATION[get_str(props, "activation")]] if "activation" in props else []
    return exprs + [unary_expr(e) for e in epilogue]


def _unary(op: Operation, epilogue: list[Operation], program: Program, desc: str) -> Emitted:
    if isinstance(op, nn.GeluOp):
        if op.approximate.data == "tanh":
            # 0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u)): no cancellation where tanh(u) is
            # near -1 (PoCL's tanh(-inf) is -0.99999994, which made gelu(-1e30) -3e22, not -0)
            u2 = _f(2.0 * SQRT_2_OVER_PI)
            expr = f"v / (1.0f + exp(-{u2} * (v + 0.044715f * v * v * v)))"
        else:
            expr = f"0.5f * v * (1.0f + erf(v * {_f(SQRT1_2)}))"
    else:
        expr = EXTRA_UNARY[type(op)]
    body = "    REAL v = x0[gid];\n" + compose([expr, *_activations(op, epilogue)], real=True)
    body += "    y[gid] = v;\n"
    n = _numel(_shape(op.results[0]))
    return [(program.kernel(_kernel(1, body), desc), [op.operands[0]], [n])]


def _broadcast_index(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> str:
    """The flat index into a tensor of `shape` broadcast (numpy's rules) to the output
    coordinates `c0..c{rank-1}`."""
    rank = len(out_shape)
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    st = _strides(padded)
    terms = [f"c{d} * {st[d]}" for d in range(rank) if padded[d] != 1]
    return " + ".join(terms) or "0"


def _signature(n_in: int, body: str, in_types: list[str], out_type: str) -> str:
    """`_kernel` with one C element type per input."""
    text = _kernel(n_in, body, "IN_TYPE", out_type)
    for i, ct in enumerate(in_types):
        text = text.replace(
            f"__global const IN_TYPE* restrict x{i}", f"__global const {ct}* restrict x{i}"
        )
    return text


def _broadcasting(
    op: Operation,
    operands: list[SSAValue],
    expr: str,
    program: Program,
    desc: str,
    in_type: str = REAL,
    out_type: str = REAL,
    in_types: list[str] | None = None,
    local_type: str | None = None,
) -> KernelRun:
    """One work-item per output element: operands `a`, `b`, `c` read with numpy
    broadcasting (into variables of `local_type`, by default their buffers' types), result
    `expr` converted to `out_type`."""
    out_shape = _shape(op.results[0])
    rank = len(out_shape)
    types = in_types or [in_type] * len(operands)
    reads = []
    needs_coords = False
    for i, v in enumerate(operands):
        s = _shape(v)
        index = "gid" if s == out_shape else _broadcast_index(s, out_shape)
        needs_coords |= index != "gid"
        reads.append(f"    const {local_type or types[i]} {'abc'[i]} = x{i}[{index}];\n")
    coords = _decompose(out_shape, [f"c{d}" for d in range(rank)]) if needs_coords else ""
    body = coords + "".join(reads) + f"    y[gid] = ({out_type})({expr});\n"
    kernel = _signature(len(operands), body, types, out_type)
    return program.kernel(kernel, desc), list(operands), [_numel(out_shape)]


def _bool_input(v: SSAValue, program: Program) -> SSAValue | str:
    """An `i1` operand: its value, or a constant uploaded as one byte per element (the
    generic constant upload would turn it into floats)."""
    owner = v.owner
    if isinstance(owner, nn.ConstantOp):
        return program.constant((array_from_dense(owner.value) != 0).astype(np.uint8))
    return v


def _boolean(op: Operation, program: Program, desc: str) -> KernelRun:
    if isinstance(op, nn.CompareOp):
        kind = op.kind.data
        expr = f"a {COMPARE_EXPR[kind]} b"
        expr = f"{UNORDERED} || {expr}" if kind == "ne" else f"!({UNORDERED}) && {expr}"
        return _broadcasting(
            op, list(op.operands), expr, program, desc, out_type="uchar", local_type="float"
        )
    if isinstance(op, nn.LogicalNotOp):
        name, _, size = _broadcasting(op, [op.input], "a == 0", program, desc, "uchar", "uchar")
        return name, [_bool_input(op.input, program)], size
    if isinstance(op, nn.SelectOp):
        ct = _ctype(op.output)
        name, _, size = _broadcasting(
            op,
            [op.condition, op.on_true, op.on_false],
            "a != 0 ? b : c",
            program,
            desc,
            out_type=ct,
            in_types=["uchar", ct, ct],
        )
        return name, [_bool_input(op.condition, program), op.on_true, op.on_false], size
    name, _, size = _broadcasting(
        op, list(op.operands), LOGICAL_EXPR[type(op)], program, desc, "uchar", "uchar"
    )
    return name, [_bool_input(v, program) for v in op.operands], size


def _conv2d_transpose(
    op: nn.Conv2DTransposeOp, epilogue: list[Operation], program: Program, desc: str
) -> KernelRun:
    """NHWC / OHWI: output pixel (oh, ow) gathers input pixel ih where
    `oh + pad_top - kh * dilation == ih * stride` (the scatter of the reference, inverted)."""
    props = op.all_properties()
    _, h, w, c = _shape(op.input)
    oc, kh, kw, cg = _shape(op.filter)
    out_shape = _shape(op.output)
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    pt, pl = get_ints(props, "pads")[:2]
    groups = get_int(props, "groups")
    ocg = oc // groups
    has_bias = op.bias is not None
    body = (
        _decompose(out_shape, ["n", "oh", "ow", "oc"])
        + f"    const int g = oc / {ocg};\n"
        + ("    float acc = x2[oc];\n" if has_bias else "    float acc = 0.0f;\n")
        + f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
        f"        const int th = oh + {pt} - kh * {dh};\n"
        f"        if (th < 0 || th % {sh} != 0) continue;\n"
        f"        const int ih = th / {sh};\n"
        f"        if (ih >= {h}) continue;\n"
        f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
        f"            const int tw = ow + {pl} - kw * {dw};\n"
        f"            if (tw < 0 || tw % {sw} != 0) continue;\n"
        f"            const int iw = tw / {sw};\n"
        f"            if (iw >= {w}) continue;\n"
        f"            __global const REAL* xp = x0 + ((n * {h} + ih) * {w} + iw) * {c}"
        f" + g * {cg};\n"
        f"            __global const REAL* wp = x1 + ((oc * {kh} + kh) * {kw} + kw) * {cg};\n"
        + _dot_product("acc", "xp", "wp", cg)
        + "        }\n    }\n    float v = acc;\n"
        + compose(_activations(op, epilogue))
        + "    y[gid] = v;\n"
    )
    inputs: list[SSAValue | str] = [op.input, op.filter] + ([op.bias] if has_bias else [])
    return program.kernel(_kernel(len(inputs), body), desc), inputs, [_numel(out_shape)]


def _slice(op: nn.SliceOp, program: Program, desc: str) -> KernelRun:
    props = op.all_properties()
    in_shape, out_shape = _shape(op.input), _shape(op.output)
    begin, steps = get_ints(props, "begin"), get_ints(props, "strides")
    st = _strides(in_shape)
    rank = len(out_shape)
    src = " + ".join(f"({begin[d]} + c{d} * ({steps[d]})) * {st[d]}" for d in range(rank))
    ct = _ctype(op.output)
    body = _decompose(out_shape, [f"c{d}" for d in range(rank)]) + f"    y[gid] = x0[{src or 0}];\n"
    return program.kernel(_kernel(1, body, ct, ct), desc), [op.input], [_numel(out_shape)]


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
    return program.kernel(kernel, desc), [op.input], [_numel(in_shape)]


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
        element = op.indices.type.element_type  # type: ignore[union-attr]
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
    return program.kernel(kernel, desc), [op.input, index_input], [_numel(out_shape)]


def _resize(op: nn.ResizeOp, program: Program, desc: str) -> KernelRun:
    """Sampling tables computed at lowering by the reference target's functions (one
    definition of every coordinate and rounding mode): nearest reads `[ih..., iw...]`,
    bilinear `[low_h, high_h, weight_h]` rows then the same for w; the lerp order is the
    reference's (along h, then w)."""
    props = op.all_properties()
    n, h, w, c = _shape(op.input)
    _, oh, ow, _ = _shape(op.output)
    scales = get_floats(props, "scales")
    coordinate_mode = get_str(props, "coordinate_mode")
    mode = get_str(props, "mode")
    ct = _ctype(op.output)
    if mode == "bilinear" and ct != REAL:
        # TFLite interpolates stored integers in fixed point; insert-qdq gives this target
        # the float form instead
        raise LoweringError(op, "bilinear resize on quantized storage (run insert-qdq)")
    tables = []
    for i, (out_len, in_len) in enumerate(((oh, h), (ow, w))):
        scale = (
            np.float32(out_len) / np.float32(in_len) if scales is None else np.float32(scales[i])
        )
        coords = _source_coordinates(out_len, in_len, scale, coordinate_mode)
        if mode == "nearest":
            tables.append(_nearest_indices(coords, in_len, get_str(props, "nearest_mode")))
        else:
            low, high, weight = _linear_taps(coords, in_len)
            tables.append(np.stack([low, high, weight]).astype(np.float32))
    head = _decompose((n, oh, ow, c), ["n", "oh", "ow", "ch"])
    pixel = f"(n * {h} + (HH)) * {w} + (WW)"
    if mode == "nearest":
        table = np.concatenate([t.astype(np.float32) for t in tables])
        body = (
            head
            + f"    const int ih = (int)x1[oh]; const int iw = (int)x1[{oh} + ow];\n"
            + f"    y[gid] = x0[({pixel.replace('HH', 'ih').replace('WW', 'iw')}) * {c} + ch];\n"
        )
    else:
        table = np.concatenate([tables[0].ravel(), tables[1].ravel()])

        def at(hh: str, ww: str) -> str:
            return f"x0[({pixel.replace('HH', hh).replace('WW', ww)}) * {c} + ch]"

        body = (
            head + f"    const int lh = (int)x1[oh]; const int hh = (int)x1[{oh} + oh];"
            f" const float wh = x1[{2 * oh} + oh];\n"
            + f"    __global const float* tw = x1 + {3 * oh};\n"
            + f"    const int lw = (int)tw[ow]; const int hw = (int)tw[{ow} + ow];"
            f" const float ww = tw[{2 * ow} + ow];\n"
            + f"    const float a0 = {at('lh', 'lw')}, b0 = {at('hh', 'lw')};\n"
            + f"    const float a1 = {at('lh', 'hw')}, b1 = {at('hh', 'hw')};\n"
            + "    const float t0 = a0 + (b0 - a0) * wh; const float t1 = a1 + (b1 - a1) * wh;\n"
            + "    y[gid] = t0 + (t1 - t0) * ww;\n"
        )
    kernel = _signature(2, body, [ct, "float"], ct)
    inputs: list[SSAValue | str] = [op.input, program.constant(table, table=True)]
    return program.kernel(kernel, desc), inputs, [_numel((n, oh, ow, c))]


def _pad(op: nn.PadOp, program: Program, desc: str) -> KernelRun:
    """reflect (mirror without repeating the edge) and edge (repeat it), as numpy's."""
    in_shape, out_shape = _shape(op.input), _shape(op.output)
    pads = get_ints(op.all_properties(), "pads")
    rank = len(in_shape)
    st = _strides(in_shape)
    lines = []
    for d in range(rank):
        size, before = in_shape[d], pads[2 * d]
        lines.append(f"    int i{d} = c{d} - {before};\n")
        if op.mode.data == "edge":
            lines.append(f"    i{d} = clamp(i{d}, 0, {size - 1});\n")
        else:
            lines.append(f"    if (i{d} < 0) i{d} = -i{d};\n")
            lines.append(f"    if (i{d} >= {size}) i{d} = {2 * (size - 1)} - i{d};\n")
    src = " + ".join(f"i{d} * {st[d]}" for d in range(rank)) or "0"
    ct = _ctype(op.output)
    body = (
        _decompose(out_shape, [f"c{d}" for d in range(rank)])
        + "".join(lines)
        + f"    y[gid] = x0[{src}];\n"
    )
    return program.kernel(_kernel(1, body, ct, ct), desc), [op.input], [_numel(out_shape)]


def _softmax(op: Operation, program: Program, desc: str, log: bool) -> KernelRun:
    """One work-item per (outer, inner) row along `axis`, stride `inner`:
    `z = beta * x`, `e = exp(z - max z)`, then `e / sum e` or `z - max z - log(sum e)`."""
    shape = _shape(op.operands[0])
    props = op.all_properties()
    axis = get_int(props, "axis") % len(shape)
    size, inner = shape[axis], _numel(shape[axis + 1 :])
    rows = _numel(shape) // size if size else 0
    beta = get_float(props, "beta") if not log else None
    z = "WIDEN(xp[i * INNER])"
    z = z if beta is None or beta == 1.0 else f"{_f(beta)} * {z}"
    z = z.replace("INNER", str(inner))
    body = (
        f"    const int base = (gid / {inner}) * {size * inner} + gid % {inner};\n"
        "    __global const REAL* xp = x0 + base;\n"
        "    __global REAL* yp = y + base;\n"
        "    float m = -INFINITY;\n"
        f"    for (int i = 0; i < {size}; ++i) {{ const float xv = {z};"
        f" m = {nan_max_update('m')}; }}\n"
        "    float s = 0.0f;\n"
    )
    if log:
        body += (
            f"    for (int i = 0; i < {size}; ++i) s += exp({softmax_shift(z)});\n"
            "    const float lse = log(s);\n"
            f"    for (int i = 0; i < {size}; ++i) yp[i * {inner}] = {softmax_shift(z)} - lse;\n"
        )
    else:
        body += (
            f"    for (int i = 0; i < {size}; ++i) {{ const float e = exp({softmax_shift(z)});"
            f" yp[i * {inner}] = e; s += e; }}\n"
            "    const float inv = 1.0f / s;\n"
            f"    for (int i = 0; i < {size}; ++i) yp[i * {inner}] *= inv;\n"
        )
    return program.kernel(_kernel(1, body), desc), [op.operands[0]], [rows]


def _reduce(op: nn.ReduceOp, program: Program, desc: str) -> KernelRun:
    """prod over `axes`: one work-item per kept element, float32 accumulation in order."""
    in_shape = _shape(op.input)
    rank = len(in_shape)
    axes = sorted(a % rank for a in get_ints(op.all_properties(), "axes"))
    kept = [d for d in range(rank) if d not in axes]
    st = _strides(in_shape)
    coords = _decompose(tuple(in_shape[d] for d in kept), [f"c{d}" for d in kept]) if kept else ""
    base = " + ".join(f"c{d} * {st[d]}" for d in kept) or "0"
    loops = "".join(
        "    " * (depth + 1) + f"for (int r{d} = 0; r{d} < {in_shape[d]}; ++r{d})\n"
        for depth, d in enumerate(axes)
    )
    off = " + ".join(f"r{d} * {st[d]}" for d in axes) or "0"
    body = (
        coords
        + f"    const int base = {base};\n    float acc = 1.0f;\n"
        + loops
        + "    " * (len(axes) + 1)
        + f"acc *= x0[base + {off}];\n"
        + "    y[gid] = acc;\n"
    )
    return program.kernel(_kernel(1, body), desc), [op.input], [_numel(_shape(op.output))]
