"""Convert layout: rewrite layout-sensitive `nn` ops to NCHW or NHWC, transposes at the edges.

`convert-layout{to=NCHW}` rewrites every conv2d (grouped and depthwise included),
conv2d_transpose, max/avg pool, resize and rank-4 batch_norm whose `layout` is the other one.
`nn.transpose` ops are left only where a value crosses a layout boundary: graph (or region)
inputs and outputs, reshapes that mix channel and spatial dimensions, and ops the pass does
not understand (batch_matmul, a func.call, ...).

The algorithm is MLIR's: make every op locally right, then clean up with patterns.

1. `ConvertLayoutSensitiveOp`: an op in the wrong layout becomes the same op in the
   requested layout between two transposes, ``op(x) -> T_from(op'(T_to(x)))``. Its filter
   is converted too (conv2d OHWI <-> OIHW; conv2d_transpose OHWI <-> IOHW, regrouped when
   `groups > 1`). Constants are transposed at compile time, directly in numpy, and a
   per-axis quantized dimension moves with the data (`UniformQuantizedType.with_axis`).
   Each conversion of a value is made once, next to its definition, and shared.
2. `SinkTranspose`, run to a fixpoint by the greedy driver together with canonicalize's
   `FoldTransposePair`, `RemoveIdentityTranspose` and constant folding: an op whose
   layout-carrying operands are transposes with one permutation P, ``op(T_P(a), T_P(b))``,
   becomes ``T_R(op'(a, b))`` (`plan_for` says how, per op):

   * elementwise ops (unary, binary and select, the quant casts) keep R = P. A constant
     operand is transposed at compile time; a lower-rank broadcast operand is padded to
     full rank first, so the [C] bias of NHWC data becomes [C, 1, 1] for NCHW data (a
     constant, or a reshape of a runtime value, as no data moves); a one-element operand
     stays as it is. Any other operand would need a transpose of its own: the op stays.
   * axis-carrying ops (concat, split, slice, pad, reduce, softmax, log_softmax, gather,
     broadcast_to, fully_connected when the feature dim stays last) get their axes or
     per-dimension values remapped; a reduction without `keepdims` and a gather compute
     the R that is left (often the identity: [N, H, W, C] reduced over H and W is [N, C]).
   * a reshape moves when it keeps the grouping of dimensions (it only drops or adds
     size-1 dims, or merges or splits dims that stay adjacent in the data), with an R of
     its own; one that merges C with H or W really reorders data and keeps the transpose.

   A transpose with other users stays for them, so sinking a copy past one user only
   happens when the copy is absorbed further down (`absorbs`: it meets another transpose,
   an output, or vanishes in turn); a single-use transpose always moves. Transposes thus
   travel to their users until they meet their inverse (the next converted op's input
   transpose), a graph output, or an op they cannot cross.
3. `HoistTransposeToInput`, once nothing sinks any more: a transpose right after a chain
   of single-use ops fed by a function or region argument moves up onto the argument
   (a pad after the input then runs in the new layout), and a transpose that only moves
   size-1 dims becomes a reshape.

With `targets=a,b`, only ops inside `delegate.region "a"` / `"b"` are converted and the
patterns only run inside those regions: region signatures keep the model's layout, the
transposes sit inside each region at its captures and yield, and nothing moves across a
region boundary (a pair split between two regions stays). A target that names no region
is not an error: partitioning may have given that target nothing.

With `keep-signature=false` (whole-graph only), the rank-4 arguments (filters excepted)
and results of each function with ops to convert take the requested layout, so the
boundary transposes cancel too. A function that some symbol refers to (a `func.call`, a
dispatch) cannot change its signature: that is an error at the function.

A grouped conv2d_transpose with a per-axis quantized filter stays in its layout when the
other layout cannot express its scales (IOHW quantizes only `C_out / groups` outputs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error
from irc.dialects import delegate, nn, quant
from irc.dialects.nn.base import ints_attr, ints_of, product
from irc.dialects.quant import UniformQuantizedType
from irc.passes.canonicalize import (
    FoldConstantOperands,
    FoldTransposePair,
    RemoveIdentityTranspose,
)

Perm = tuple[int, ...]

TO_NCHW: Perm = (0, 3, 1, 2)
"""``x_nchw = transpose(x_nhwc, TO_NCHW)``; also OHWI -> OIHW for conv2d filters."""

TO_NHWC: Perm = (0, 2, 3, 1)
"""``x_nhwc = transpose(x_nchw, TO_NHWC)``; also OIHW -> OHWI for conv2d filters."""

_LAYOUT_OPS = (
    nn.Conv2DOp,
    nn.Conv2DTransposeOp,
    nn.MaxPool2DOp,
    nn.AvgPool2DOp,
    nn.ResizeOp,
    nn.BatchNormOp,
)
"""Ops whose meaning depends on their `layout` property."""

# ---- Permutations and types --------------------------------------------------------------------


def inverse(perm: Sequence[int]) -> Perm:
    """The permutation q with ``q[perm[i]] == i``: transpose(transpose(x, p), q) == x."""
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return tuple(result)


def compose(first: Sequence[int], second: Sequence[int]) -> Perm:
    """transpose(transpose(x, first), second) == transpose(x, compose(first, second))."""
    return tuple(first[p] for p in second)


def is_identity(perm: Sequence[int]) -> bool:
    return all(i == p for i, p in enumerate(perm))


def layout_perm(to: str) -> Perm:
    """The activation permutation from the other layout into `to`."""
    return TO_NCHW if to == "NCHW" else TO_NHWC


def _element_with_axis(element: Attribute, axis_map: Callable[[int], int]) -> Attribute:
    """A per-axis quantized element type with its dimension moved; others unchanged."""
    if isinstance(element, UniformQuantizedType) and (axis := element.axis) is not None:
        return element.with_axis(axis_map(axis))
    return element


def transposed_type(type_: Attribute, perm: Sequence[int]) -> TensorType:
    """The type of ``transpose(x, perm)`` for x of `type_`; a quantized dimension moves along."""
    assert isinstance(type_, TensorType)  # every nn value is a ranked tensor
    shape = type_.get_shape()
    back = inverse(perm)
    element = _element_with_axis(type_.element_type, lambda axis: back[axis])
    return TensorType(element, [shape[p] for p in perm])


def _shape(value: SSAValue) -> tuple[int, ...]:
    type_ = value.type
    assert isinstance(type_, TensorType)  # every nn value is a ranked tensor
    return type_.get_shape()


def _is_static(shape: Sequence[int]) -> bool:
    return all(d >= 0 for d in shape)


def _is_per_axis(type_: Attribute) -> bool:
    element = type_.element_type if isinstance(type_, TensorType) else type_
    return isinstance(element, UniformQuantizedType) and element.is_per_axis


# ---- Building ops ------------------------------------------------------------------------------


def _transpose_op(value: SSAValue, perm: Sequence[int], like: Operation) -> nn.TransposeOp:
    op = nn.TransposeOp.build(
        operands=[value],
        result_types=[transposed_type(value.type, perm)],
        properties={"perm": ints_attr(perm)},
    )
    op.location = like.location
    return op


def _reshape_op(value: SSAValue, type_: TensorType, like: Operation) -> nn.ReshapeOp:
    op = nn.ReshapeOp.build(
        operands=[value],
        result_types=[type_],
        properties={"shape": ints_attr(type_.get_shape())},
    )
    op.location = like.location
    return op


def _constant(value: SSAValue) -> nn.ConstantOp | None:
    owner = value.owner
    return owner if isinstance(owner, nn.ConstantOp) else None


def _new_constant(
    source: nn.ConstantOp, transform: Callable[[np.ndarray], np.ndarray], type_: TensorType
) -> nn.ConstantOp:
    """A constant of `type_` holding `transform` of `source`'s data (storage integers when
    quantized); the numpy data is moved directly, no folding needed. A splat stays one."""
    array = source.to_array()
    stored = source.value.data.data
    if array.size > 1 and len(stored) == array.itemsize:  # a splat: its one element as is
        storage = source.value.get_type().element_type
        dense = DenseIntOrFPElementsAttr(TensorType(storage, type_.get_shape()), BytesAttr(stored))
    else:
        dense = nn.dense_from_array(np.ascontiguousarray(transform(array)))
    op = nn.ConstantOp(dense, None if dense.get_type() == type_ else type_)
    op.location = source.location
    return op


def _transposed_value(
    value: SSAValue, perm: Sequence[int], like: Operation, new_ops: list[Operation]
) -> SSAValue:
    """``transpose(value, perm)``: a new constant for a constant, else an `nn.transpose`."""
    constant = _constant(value)
    new_type = transposed_type(value.type, perm)
    op: Operation = (
        _new_constant(constant, lambda a: a.transpose(perm), new_type)
        if constant is not None
        else _transpose_op(value, perm, like)
    )
    new_ops.append(op)
    return op.results[0]


# ---- Moving an operand to the untransposed frame ------------------------------------------------


@dataclass
class _Move:
    """How a layout-carrying operand reaches the frame of the rewritten op.

    `kind`: `source` (the operand is ``T_P(value)``), `same` (a one-element broadcast
    operand, used as it is), `constant` (transposed now), `reshape` (only size-1 dims move).
    """

    kind: Literal["source", "same", "constant", "reshape"]
    value: SSAValue
    type: TensorType | None = None


def _moved_shape(shape: Sequence[int], perm: Perm) -> tuple[int, ...]:
    """The shape a broadcast operand of ``T_perm`` data takes before the transpose.

    The operand is padded with leading 1s to the rank of `perm`, permuted back, and
    stripped of leading 1s down to its own rank: an NHWC `[C]` becomes `[C, 1, 1]` for NCHW.
    """
    padded = (1,) * (len(perm) - len(shape)) + tuple(shape)
    moved = [padded[q] for q in inverse(perm)]
    while len(moved) > len(shape) and moved[0] == 1:
        moved.pop(0)
    return tuple(moved)


def _plan_move(value: SSAValue, perm: Perm, *, free_only: bool = False) -> _Move | None:
    """How `value`, an operand beside ``T_perm`` data, moves to the frame before the
    transpose; None when it would need a transpose of its own (or, with `free_only`, any
    new op but a constant)."""
    owner = value.owner
    if isinstance(owner, nn.TransposeOp) and ints_of(owner.perm) == perm:
        return _Move("source", owner.input)
    shape = _shape(value)
    rank = len(perm)
    if len(shape) > rank or not _is_static(shape):
        return None
    if product(shape) == 1:
        return _Move("same", value)
    moved = _moved_shape(shape, perm)
    lead, stripped = rank - len(shape), rank - len(moved)
    assert isinstance(value.type, TensorType)
    element = _element_with_axis(value.type.element_type, lambda axis: perm[axis + lead] - stripped)
    new_type = TensorType(element, list(moved))
    if _constant(value) is not None:
        return _Move("constant", value, new_type)
    padded = (1,) * lead + tuple(shape)
    kept = [q for q in inverse(perm) if padded[q] != 1]
    if free_only or kept != sorted(kept) or _is_per_axis(new_type):
        return None  # a real transpose, or a reshape that would move a quantized dimension
    return _Move("reshape", value, new_type)


def _materialize(move: _Move, perm: Perm, like: Operation, new_ops: list[Operation]) -> SSAValue:
    """The operand in the untransposed frame, creating a constant or a reshape."""
    if move.kind in ("source", "same"):
        return move.value
    new_type = move.type
    assert new_type is not None  # set for the other kinds
    constant = _constant(move.value)
    if constant is None:
        op: Operation = _reshape_op(move.value, new_type, like)
    else:
        rank = len(perm)

        def transform(array: np.ndarray) -> np.ndarray:
            padded = array.reshape((1,) * (rank - array.ndim) + array.shape)
            return padded.transpose(inverse(perm)).reshape(new_type.get_shape())

        op = _new_constant(constant, transform, new_type)
    new_ops.append(op)
    return op.results[0]


# ---- What an op becomes over untransposed data ---------------------------------------------------


@dataclass
class _Plan:
    """An op rewritten to read untransposed operands.

    `data` are the indices of the layout-carrying operands; result k of the original op is
    ``transpose(result k of the new op, result_perms[k])``.
    """

    properties: dict[str, Attribute]
    data: list[int]
    result_perms: list[Perm]


def _axis_prop(op: Operation, name: str) -> IntegerAttr:
    attr = op.properties[name]
    assert isinstance(attr, IntegerAttr)  # the op's property definition
    return attr


def _ints_prop(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.properties[name]
    assert isinstance(attr, DenseArrayBase)  # the op's property definition
    return ints_of(attr)


def _plan_elementwise(op: Operation, perm: Perm) -> _Plan | None:
    if any(len(_shape(r)) != len(perm) for r in op.results):
        return None  # broadcasting to a higher rank than the transposed operand
    properties = dict(op.properties)
    if isinstance(op, quant.RescaleOp) and op.axis is not None:
        properties["axis"] = IntegerAttr(perm[op.axis.value.data], i32)
    return _Plan(properties, list(range(len(op.operands))), [perm] * len(op.results))


def _plan_axis_op(op: Operation, perm: Perm) -> _Plan:
    """concat, split, softmax, log_softmax: one `axis` property."""
    axis = _axis_prop(op, "axis")
    properties = dict(op.properties)
    properties["axis"] = IntegerAttr(perm[axis.value.data % len(perm)], axis.type)
    return _Plan(properties, list(range(len(op.operands))), [perm] * len(op.results))


def _plan_per_dim(op: Operation, perm: Perm, names: Sequence[str], width: int) -> _Plan:
    """slice (`begin`, `end`, `strides`) and pad (`pads`): `width` values per dimension."""
    properties = dict(op.properties)
    for name in names:
        values = _ints_prop(op, name)
        properties[name] = ints_attr(
            [values[width * q + k] for q in inverse(perm) for k in range(width)]
        )
    return _Plan(properties, [0], [perm])


def _plan_reduce(op: nn.ReduceOp, perm: Perm) -> _Plan:
    axes = [perm[a % len(perm)] for a in ints_of(op.axes)]
    properties = dict(op.properties)
    properties["axes"] = ints_attr(axes)
    if op.keepdims.value.data:
        return _Plan(properties, [0], [perm])
    kept = sorted(d for d in range(len(perm)) if d not in axes)
    position = {d: k for k, d in enumerate(kept)}
    return _Plan(properties, [0], [tuple(position[p] for p in perm if p not in axes)])


def _plan_gather(op: nn.GatherOp, perm: Perm) -> _Plan | None:
    if op.batch_dims.value.data != 0:
        return None
    axis = op.axis.value.data % len(perm)
    source_axis = perm[axis]
    count = len(_shape(op.indices))

    def position(d: int) -> int:
        return d if d < source_axis else d - 1 + count

    result_perm = (
        *(position(perm[k]) for k in range(axis)),
        *range(source_axis, source_axis + count),
        *(position(perm[k]) for k in range(axis + 1, len(perm))),
    )
    properties = dict(op.properties)
    properties["axis"] = IntegerAttr(source_axis, op.axis.type)
    return _Plan(properties, [0], [result_perm])


def _plan_broadcast_to(op: nn.BroadcastToOp, perm: Perm) -> _Plan | None:
    shape = ints_of(op.shape)
    if len(shape) != len(perm):
        return None
    properties = dict(op.properties)
    properties["shape"] = ints_attr([shape[q] for q in inverse(perm)])
    return _Plan(properties, [0], [perm])


def _plan_fully_connected(op: nn.FullyConnectedOp, perm: Perm) -> _Plan | None:
    if perm[-1] != len(perm) - 1:
        return None  # the feature dimension must stay last
    return _Plan(dict(op.properties), [0], [perm])


def reshape_through_transpose(
    source: Sequence[int], perm: Sequence[int], target: Sequence[int]
) -> tuple[tuple[int, ...], Perm] | None:
    """`shape` and `result_perm` with ``reshape(transpose(a, perm), target) ==
    transpose(reshape(a, shape), result_perm)`` for `a` of shape `source`, or None.

    The reshape must keep the grouping of dimensions: every group of dims that it merges
    (or splits into) comes from dims that are adjacent and in order in `a` (size-1 dims
    aside). Only dropping or adding size-1 dims always qualifies; folding H and W of an
    NHWC view of NCHW data does too; merging C with H or W does not. Needs static shapes.
    """
    if not (_is_static(source) and _is_static(target)) or 0 in source or 0 in target:
        return None
    xs = [(source[p], p) for p in perm if source[p] != 1]
    ys = [(j, size) for j, size in enumerate(target) if size != 1]
    rank_in_source = {d: k for k, d in enumerate(sorted(p for _, p in xs))}
    groups: list[tuple[int, list[int]]] = []  # (first rank in `a`, members in `ys`)
    i = j = 0
    while i < len(xs) and j < len(ys):
        gx, gy = [i], [j]
        px, py = xs[i][0], ys[j][1]
        i, j = i + 1, j + 1
        while px != py:
            if px < py and i < len(xs):
                px *= xs[i][0]
                gx.append(i)
                i += 1
            elif py < px and j < len(ys):
                py *= ys[j][1]
                gy.append(j)
                j += 1
            else:
                return None
        ranks = [rank_in_source[xs[k][1]] for k in gx]
        if ranks != list(range(ranks[0], ranks[0] + len(ranks))):
            return None  # the group is not contiguous in `a`: the data really moves
        groups.append((ranks[0], gy))
    if i != len(xs) or j != len(ys):
        return None
    slots = [position for position, _ in ys]
    shape = list(target)
    result_perm = list(range(len(target)))
    k = 0
    for _, members in sorted(groups):
        for member in members:
            position, size = ys[member]
            shape[slots[k]] = size
            result_perm[position] = slots[k]
            k += 1
    return tuple(shape), tuple(result_perm)


def _plan_reshape(op: nn.ReshapeOp, perm: Perm) -> _Plan | None:
    if _is_per_axis(op.input.type):
        return None
    viewed = _shape(op.input)
    source = [viewed[q] for q in inverse(perm)]
    found = reshape_through_transpose(source, perm, _shape(op.output))
    if found is None:
        return None
    shape, result_perm = found
    properties = dict(op.properties)
    properties["shape"] = ints_attr(shape)
    return _Plan(properties, [0], [result_perm])


_ELEMENTWISE = (
    nn.ElementwiseUnaryOp,
    nn.ElementwiseBinaryOp,
    nn.SelectOp,
    nn.SiluOp,  # canonicalize's x * sigmoid(x)
    quant.QCastOp,
    quant.DCastOp,
    quant.SCastOp,
    quant.RescaleOp,
)


def plan_for(op: Operation, perm: Perm) -> _Plan | None:
    """How `op` reads untransposed data when its data operands are ``T_perm`` values."""
    if isinstance(op, _ELEMENTWISE):
        return _plan_elementwise(op, perm)
    match op:
        case nn.ConcatOp() | nn.SplitOp() | nn.SoftmaxOp() | nn.LogSoftmaxOp():
            return _plan_axis_op(op, perm)
        case nn.SliceOp():
            return _plan_per_dim(op, perm, ("begin", "end", "strides"), 1)
        case nn.PadOp():
            return _plan_per_dim(op, perm, ("pads",), 2)
        case nn.ReduceOp():
            return _plan_reduce(op, perm)
        case nn.GatherOp():
            return _plan_gather(op, perm)
        case nn.BroadcastToOp():
            return _plan_broadcast_to(op, perm)
        case nn.FullyConnectedOp():
            return _plan_fully_connected(op, perm)
        case nn.ReshapeOp():
            return _plan_reshape(op, perm)
        case _:
            return None


def _rebuilt(op: Operation, plan: _Plan, operands: Sequence[SSAValue]) -> Operation:
    """`op` with the plan's properties over untransposed `operands`."""
    result_types = [
        transposed_type(r.type, inverse(p)) for r, p in zip(op.results, plan.result_perms)
    ]
    new_op = type(op).create(
        operands=list(operands),
        result_types=result_types,
        properties=plan.properties,
        attributes=dict(op.attributes),
    )
    new_op.location = op.location
    return new_op


def _result_transposes(
    new_op: Operation, plan: _Plan, like: Operation
) -> tuple[list[Operation], list[SSAValue]]:
    """Transposes that give `new_op`'s results the original types, and the values."""
    transposes: list[Operation] = []
    values: list[SSAValue] = []
    for result, perm in zip(new_op.results, plan.result_perms):
        if is_identity(perm):
            values.append(result)
            continue
        transpose = _transpose_op(result, perm, like)
        transposes.append(transpose)
        values.append(transpose.output)
    return transposes, values


def _replace(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Sequence[Operation],
    new_op: Operation,
    values: Sequence[SSAValue],
) -> None:
    """Replace `op` by `new_ops`, its results by `values`; `new_op` takes its name hints.

    `PatternRewriter.replace` would give every new result the name of a single replaced
    result, and xDSL's printer then prints some values with one name (`%x_1` twice). The
    transposes after `new_op` stay unnamed: they are meant to cancel.
    """
    for old, new in zip(op.results, new_op.results, strict=True):
        new.name_hint = old.name_hint
    rewriter.insert(list(new_ops), InsertPoint.before(op))
    for old, new in zip(op.results, values, strict=True):
        hint = new.name_hint
        rewriter.replace_all_uses_with(old, new)
        new.name_hint = hint  # replace_all_uses_with carries the old name over
    rewriter.erase(op)


# ---- Conversion of the layout ops ----------------------------------------------------------------


def _regrouped_filter_element(element: Attribute, groups: int, to_nchw: bool) -> Attribute | None:
    """The filter element type of a grouped conv2d_transpose in the other layout, or None.

    Per axis, OHWI quantizes its `G * Og` output channels (dim 0) and IOHW its `Og` (dim 1):
    going to IOHW needs the scales to repeat per group, coming back repeats them.
    """
    if not (isinstance(element, UniformQuantizedType) and element.is_per_axis):
        return element
    scales, zero_points = list(element.scales.data), list(element.zero_points.data)
    if to_nchw:
        count = len(scales) // groups
        if scales != scales[:count] * groups or zero_points != zero_points[:count] * groups:
            return None
        scales, zero_points, axis = scales[:count], zero_points[:count], 1
    else:
        scales, zero_points, axis = scales * groups, zero_points * groups, 0
    return UniformQuantizedType(
        element.storage_type,
        element.expressed_type,
        element.quantized_dimension,
        ArrayAttr(scales),
        ArrayAttr(zero_points),
        element.storage_min,
        element.storage_max,
    ).with_axis(axis)


def needs_conversion(op: Operation, to: str) -> bool:
    """Whether `op` is a layout op in the other layout that `to` can express."""
    if not isinstance(op, _LAYOUT_OPS) or op.layout.data == to:
        return False
    if len(_shape(op.operands[0])) != 4:
        return False  # a batch_norm of another rank has no NHWC/NCHW to convert
    if isinstance(op, nn.Conv2DTransposeOp) and op.groups.value.data > 1:
        if _is_per_axis(op.filter.type):
            assert isinstance(op.filter.type, TensorType)
            element = op.filter.type.element_type
            regrouped = _regrouped_filter_element(element, op.groups.value.data, to == "NCHW")
            return regrouped is not None and _constant(op.filter) is not None
    return True


def _converted_filter(
    op: nn.Conv2DOp | nn.Conv2DTransposeOp, to: str, new_ops: list[Operation]
) -> SSAValue:
    """The filter in the layout that goes with `to` (see the module docstring)."""
    to_nchw = to == "NCHW"
    if isinstance(op, nn.Conv2DOp):
        return _transposed_value(op.filter, layout_perm(to), op, new_ops)
    groups = op.groups.value.data
    if groups == 1:  # OHWI <-> IOHW
        return _transposed_value(op.filter, (3, 0, 1, 2) if to_nchw else (1, 2, 3, 0), op, new_ops)
    filter_type = op.filter.type
    assert isinstance(filter_type, TensorType)  # the op verifier
    if to_nchw:  # OHWI [G*Og, H, W, Ig] -> [G, Og, H, W, Ig] -> [G, Ig, Og, H, W]
        o, h, w, i = filter_type.get_shape()
        grouped, perm, final = (
            (groups, o // groups, h, w, i),
            (0, 4, 1, 2, 3),
            (groups * i, o // groups, h, w),
        )
    else:  # IOHW [G*Ig, Og, H, W] -> [G, Ig, Og, H, W] -> [G, Og, H, W, Ig]
        i, o, h, w = filter_type.get_shape()
        grouped, perm, final = (
            (groups, i // groups, o, h, w),
            (0, 2, 3, 4, 1),
            (groups * o, h, w, i // groups),
        )
    element = _regrouped_filter_element(filter_type.element_type, groups, to_nchw)
    assert element is not None  # checked by needs_conversion
    final_type = TensorType(element, list(final))
    constant = _constant(op.filter)
    if constant is not None:
        new = _new_constant(
            constant, lambda a: a.reshape(grouped).transpose(perm).reshape(final), final_type
        )
        new_ops.append(new)
        return new.output
    reshaped = _reshape_op(op.filter, TensorType(element, list(grouped)), op)
    transposed = _transpose_op(reshaped.output, perm, op)
    regrouped = _reshape_op(transposed.output, final_type, op)
    new_ops.extend([reshaped, transposed, regrouped])
    return regrouped.output


# ---- Patterns ----------------------------------------------------------------------------------


class ConvertLayoutSensitiveOp(RewritePattern):
    """op{layout=L}(x, w) -> T_from(op{layout=to}(T_to(x), w')) for the layout ops.

    The input and filter conversions go right after the definition of the value they
    convert and are shared by every op that needs the same conversion of it (one
    transpose of a graph input that feeds two convolutions, one copy of a shared filter).
    """

    def __init__(self, to: str):
        self.to = to
        self.converted: dict[tuple[SSAValue, object], SSAValue] = {}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not needs_conversion(op, self.to):
            return
        assert isinstance(op, _LAYOUT_OPS)
        perm = layout_perm(self.to)
        operands = list(op.operands)
        operands[0] = self._shared(
            rewriter, op.operands[0], perm, lambda ops: _transposed_value(op.input, perm, op, ops)
        )
        if isinstance(op, nn.Conv2DOp | nn.Conv2DTransposeOp):
            key = (op.name, op.groups.value.data)
            operands[1] = self._shared(
                rewriter, op.filter, key, lambda ops: _converted_filter(op, self.to, ops)
            )
        properties = dict(op.properties)
        properties["layout"] = nn.LayoutAttr.from_str(self.to)
        plan = _Plan(properties, [0], [inverse(perm)])
        new_op = _rebuilt(op, plan, operands)
        transposes, values = _result_transposes(new_op, plan, op)
        _replace(rewriter, op, [new_op, *transposes], new_op, values)

    def _shared(
        self,
        rewriter: PatternRewriter,
        value: SSAValue,
        key: object,
        build: Callable[[list[Operation]], SSAValue],
    ) -> SSAValue:
        """`build`'s conversion of `value`, made once and placed after its definition."""
        cached = self.converted.get((value, key))
        if cached is not None and isinstance(cached.owner, Operation) and cached.owner.parent:
            return cached
        new_ops: list[Operation] = []
        converted = build(new_ops)
        if isinstance(value, BlockArgument):
            point = InsertPoint.at_start(value.block)
        else:
            assert isinstance(value.owner, Operation)
            point = InsertPoint.after(value.owner)
        rewriter.insert(new_ops, point)
        self.converted[(value, key)] = converted
        return converted


class SinkTranspose(RewritePattern):
    """op(T_P(a), T_P(b), c) -> T_R(op'(a, b, c')) for the ops `plan_for` understands.

    Every layout-carrying operand must come for free: a transpose with the same P, a
    constant (transposed now), a one-element operand, or a lower-rank operand whose
    non-unit dims keep their order (reshaped). A transpose that other ops use stays for
    them, so the op only takes its own copy past it when the copy is absorbed further
    down (`absorbs`): otherwise the rewrite would add a transpose.
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        found = _sink_plan(op)
        if found is None:
            return
        perm, plan, moves = found
        shared = any(
            move.kind == "source" and any(use.operation is not op for use in op.operands[i].uses)
            for i, move in moves.items()
        )
        if shared and not all(
            is_identity(r) or absorbs(result, r) for result, r in zip(op.results, plan.result_perms)
        ):
            return
        new_ops: list[Operation] = []
        operands = [
            _materialize(moves[i], perm, op, new_ops) if i in moves else operand
            for i, operand in enumerate(op.operands)
        ]
        new_op = _rebuilt(op, plan, operands)
        transposes, values = _result_transposes(new_op, plan, op)
        _replace(rewriter, op, [*new_ops, new_op, *transposes], new_op, values)


def _sink_plan(
    op: Operation, pending: SSAValue | None = None, pending_perm: Perm | None = None
) -> tuple[Perm, _Plan, dict[int, _Move]] | None:
    """The permutation, plan and operand moves that sink a transpose through `op`.

    `pending` is an operand that is not transposed yet but would be ``T_pending_perm``
    (for `absorbs`' look-ahead); otherwise the permutation comes from the first data
    operand made by a transpose.
    """
    if pending is not None:
        candidates = [(pending, pending_perm)]
    else:
        candidates = [
            (o, ints_of(o.owner.perm)) for o in op.operands if isinstance(o.owner, nn.TransposeOp)
        ]
    for trigger, perm in candidates:
        assert perm is not None
        plan = plan_for(op, perm)
        if plan is None or not any(op.operands[i] is trigger for i in plan.data):
            continue
        moves: dict[int, _Move] = {}
        for index in plan.data:
            operand = op.operands[index]
            move = _Move("source", operand) if operand is pending else _plan_move(operand, perm)
            if move is None:
                break
            moves[index] = move
        else:
            return perm, plan, moves
    return None


_LOOKAHEAD = 8
"""How many ops `absorbs` looks down the graph."""


def absorbs(value: SSAValue, perm: Perm, depth: int = _LOOKAHEAD) -> bool:
    """Whether a transpose ``T_perm`` put after `value` would vanish down the graph.

    Each user must merge it (a transpose), take it as a graph or region output (a
    boundary transpose is expected there), or let it sink through with results whose
    transposes vanish in turn.
    """
    for use in value.uses:
        user = use.operation
        if isinstance(user, nn.TransposeOp | func.ReturnOp | delegate.YieldOp):
            continue
        found = _sink_plan(user, value, perm) if depth > 0 else None
        if found is None:
            return False
        _, plan, _ = found
        for result, result_perm in zip(user.results, plan.result_perms):
            if not (is_identity(result_perm) or absorbs(result, result_perm, depth - 1)):
                return False
    return True


class ComposeTransposes(RewritePattern):
    """T_Q(T_P(a)) -> T_{P.Q}(a) when T_P has other users (it stays for them); the
    single-use case is canonicalize's `FoldTransposePair`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, nn.TransposeOp) or inner.output.has_one_use():
            return
        composed = compose(ints_of(inner.perm), ints_of(op.perm))
        if transposed_type(inner.input.type, composed) != op.output.type:
            return  # e.g. a dynamic input for a static result
        rewriter.replace(op, _transpose_op(inner.input, composed, op))


class FoldConstantTranspose(RewritePattern):
    """T_P(constant) -> constant, by canonicalize's reference-kernel constant folding."""

    def __init__(self) -> None:
        self.fold = FoldConstantOperands()

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        self.fold.match_and_rewrite(op, rewriter)


class EraseUnusedDataMovement(RewritePattern):
    """Erase transposes, reshapes and constants that the rewrites left without users."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, nn.TransposeOp | nn.ReshapeOp | nn.ConstantOp) and not op.results[0].uses:
            rewriter.erase(op)


def _varying_operands(op: Operation) -> list[SSAValue]:
    """Operands that are neither constants nor one-element tensors."""
    return [o for o in op.operands if _constant(o) is None and product(_shape(o)) != 1]


def _on_input_chain(value: SSAValue) -> bool:
    """Whether `value` comes from a chain of single-use ops, each with one varying
    operand, that starts at a function or region argument (or a transpose of one)."""
    while True:
        producer = value.owner
        if not isinstance(producer, Operation) or not value.has_one_use():
            return False
        if (
            isinstance(producer, nn.ReshapeOp)
            or plan_for(producer, tuple(range(len(_shape(value))))) is None
        ):
            return False
        varying = _varying_operands(producer)
        if len(varying) != 1:
            return False
        value = varying[0]
        owner = value.owner
        if isinstance(value, BlockArgument) or (
            isinstance(owner, nn.TransposeOp) and isinstance(owner.input, BlockArgument)
        ):
            return True


class HoistTransposeToInput(RewritePattern):
    """T_P(op(v, constants)) -> op'(T_P(v), constants') when `v` comes from an argument.

    Only along chains of single-use ops with one varying operand that start at a
    function or region argument, so the boundary transpose ends on the input itself.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        producer = op.input.owner
        if not isinstance(producer, Operation) or not _on_input_chain(op.input):
            return
        perm = ints_of(op.perm)
        back = inverse(perm)
        plan = plan_for(producer, back)
        if plan is None or plan.result_perms != [back]:
            return
        (chain,) = _varying_operands(producer)
        if len(_shape(chain)) != len(perm):
            return  # the op broadcasts `v` to a higher rank: T_P does not apply to it
        moves: dict[int, _Move] = {}
        for index in plan.data:
            operand = producer.operands[index]
            if operand is chain:
                continue
            if (move := _plan_move(operand, back, free_only=True)) is None:
                return
            moves[index] = move
        new_ops: list[Operation] = []
        operands = list(producer.operands)
        for index in plan.data:
            if index in moves:
                operands[index] = _materialize(moves[index], back, producer, new_ops)
            else:
                transpose = _transpose_op(operands[index], perm, op)
                new_ops.append(transpose)
                operands[index] = transpose.output
        new_op = _rebuilt(producer, plan, operands)
        new_op.results[0].name_hint = producer.results[0].name_hint
        rewriter.insert([*new_ops, new_op], InsertPoint.before(producer))
        rewriter.replace_all_uses_with(op.output, new_op.results[0])
        rewriter.erase(op)
        rewriter.erase(producer)


class TransposeOfUnitDimsToReshape(RewritePattern):
    """T_P(x) -> reshape(x) when P only moves size-1 dims: the data keeps its order.

    Runs last, with the hoisting, so that it never hides a transpose from its inverse.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        shape = _shape(op.input)
        if not _is_static(shape) or _is_per_axis(op.input.type):
            return
        kept = [p for p in ints_of(op.perm) if shape[p] != 1]
        if kept != sorted(kept):
            return
        output_type = op.output.type
        assert isinstance(output_type, TensorType)
        rewriter.replace(op, _reshape_op(op.input, output_type, op))


def layout_patterns(to: str) -> list[RewritePattern]:
    """Conversion and sinking patterns of this pass, exposed for reuse by pipelines and tests."""
    return [
        ConvertLayoutSensitiveOp(to),
        FoldTransposePair(),
        ComposeTransposes(),
        RemoveIdentityTranspose(),
        FoldConstantTranspose(),
        SinkTranspose(),
        EraseUnusedDataMovement(),
    ]


def hoisting_patterns() -> list[RewritePattern]:
    """The patterns that move input transposes onto the arguments (run after sinking)."""
    return [
        FoldTransposePair(),
        ComposeTransposes(),
        RemoveIdentityTranspose(),
        FoldConstantTranspose(),
        HoistTransposeToInput(),
        TransposeOfUnitDimsToReshape(),
        EraseUnusedDataMovement(),
    ]


# ---- Function signatures -----------------------------------------------------------------------


def _referencing_op(module: ModuleOp, name: str) -> Operation | None:
    """The first op whose properties or attributes refer to the symbol `@name`."""

    def refers(attr: Attribute) -> bool:
        if isinstance(attr, SymbolRefAttr):
            return attr.root_reference.data == name
        if isinstance(attr, ArrayAttr):
            return any(refers(a) for a in attr.data)
        return False

    for op in module.walk():
        if any(refers(a) for a in (*op.properties.values(), *op.attributes.values())):
            return op
    return None


def _is_activation(type_: Attribute) -> bool:
    return isinstance(type_, TensorType) and len(type_.get_shape()) == 4


def _is_filter(value: SSAValue) -> bool:
    """Whether `value` is a convolution filter (its layout follows the op, not the graph)."""
    return any(
        isinstance(use.operation, nn.Conv2DOp | nn.Conv2DTransposeOp) and use.index == 1
        for use in value.uses
    )


def change_signature(function: func.FuncOp, to: str) -> None:
    """Give the rank-4 arguments (but filters) and results of `function` the layout `to`.

    The body still sees the old layout through transposes after the entry and before each
    return; the patterns then cancel them against the converted ops.
    """
    perm = layout_perm(to)
    entry = function.body.blocks[0]
    for arg in list(entry.args):
        if not _is_activation(arg.type) or _is_filter(arg):
            continue
        new_arg = Rewriter.replace_value_with_new_type(arg, transposed_type(arg.type, perm))
        transpose = _transpose_op(new_arg, inverse(perm), function)
        Rewriter.insert_op(transpose, InsertPoint.at_start(entry))
        new_arg.replace_uses_with_if(
            transpose.output, lambda use, t=transpose: use.operation is not t
        )
    outputs = list(function.function_type.outputs.data)
    for block in function.body.blocks:
        ret = block.last_op
        if not isinstance(ret, func.ReturnOp):
            continue
        for index, value in enumerate(ret.arguments):
            if _is_activation(value.type):
                transpose = _transpose_op(value, perm, ret)
                Rewriter.insert_op(transpose, InsertPoint.before(ret))
                ret.operands[index] = transpose.output
                outputs[index] = transpose.output.type
    inputs = [a.type for a in entry.args]
    function.properties["function_type"] = FunctionType.from_lists(inputs, outputs)


# ---- Pass --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertLayoutPass(ModulePass):
    """Rewrite layout-sensitive `nn` ops to one layout, with transposes only at boundaries."""

    name = "convert-layout"

    to: Literal["NCHW", "NHWC"] = "NCHW"
    """The layout that layout-sensitive ops get."""

    targets: tuple[str, ...] = ()
    """Convert only inside `delegate.region`s of these targets (empty: the whole graph)."""

    keep_signature: bool = True
    """Keep function signatures; false gives rank-4 arguments and results the layout `to`."""

    def __post_init__(self) -> None:
        if self.targets and not self.keep_signature:
            raise ValueError(
                "keep-signature=false cannot be combined with targets: delegate regions keep "
                "the model's layout at their boundaries"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        scopes = self._scopes(op)
        if not self.keep_signature:
            for function in self._functions_to_change(op):
                change_signature(function, self.to)
        for patterns in (layout_patterns(self.to), hoisting_patterns()):
            applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
            for region in scopes:
                PatternRewriteWalker(applier).rewrite_region(region)

    def _scopes(self, module: ModuleOp) -> list[Region]:
        """The regions whose ops the pass converts: the module, or the targets' regions."""
        if not self.targets:
            return [module.body]
        return [
            region.body
            for region in module.walk()
            if isinstance(region, delegate.RegionOp) and region.target.data in self.targets
        ]

    def _functions_to_change(self, module: ModuleOp) -> list[func.FuncOp]:
        """Functions with ops to convert and rank-4 values in their signature (checked to
        have no symbol users: their callers would see the change)."""
        functions: list[func.FuncOp] = []
        for function in module.walk():
            if not isinstance(function, func.FuncOp) or not function.body.blocks:
                continue
            signature = function.function_type
            if not any(
                _is_activation(t) for t in (*signature.inputs.data, *signature.outputs.data)
            ):
                continue
            if not any(needs_conversion(o, self.to) for o in function.walk()):
                continue
            if (user := _referencing_op(module, function.sym_name.data)) is not None:
                emit_error(
                    function,
                    f"keep-signature=false cannot change the signature of "
                    f"'@{function.sym_name.data}': '{user.name}' refers to it",
                )
            functions.append(function)
        return functions
