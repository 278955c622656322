"""float16 (IEEE binary16) ops on the CPU target: float16 storage, float32 arithmetic.

A float16 model (`Target.computes_float16`: `widen-fp16` leaves its tensors as they are)
runs here with float16 tensors between kernels and float16 weights in the constants table;
every op computes what docs/semantics.md defines for float16: float32 arithmetic on the
widened inputs and one rounding to float16 (nearest even) per result.

* **conv2d** (grouped, depthwise, pointwise) and **fully_connected** with a constant
  filter: `irc_conv2d_f16` / `irc_depthwise_f16` (kernels/common/conv2d_f16.c), filters
  packed as float16 at compile time, the bias as float32, the fused activation applied in
  float32 before the rounding;
* **elementwise binary and unary ops** (`elementwise.BINARY_OPS` / `UNARY_OPS`: add, mul,
  hard_swish, hard_sigmoid, relu, ...): numpy broadcasting on collapsed dimensions, the
  innermost run widened in chunks of `CHUNK` values (F16C's 8-value conversions), computed
  with the float32 expressions of `elementwise.py` and rounded back in chunks; a splat
  constant is a literal, another constant operand is packed as float16 bits;
* **reduce** (sum, mean, prod, max, min): the input widened into a float32 scratch buffer,
  reduced by `reduce.reduction`'s float32 loop nests, the result rounded to float16.

Data movement of float16 bits and the casts to and from float32 are `movement.py` and
`casts.py`. `check(op)` is what the target's `supports()` asks first for an op on float16
tensors (None: not one of these). The lowerings are registered before every other family
(`casts.py` imports this module first): the general kernels of these op types would take
float16 tensors for integers. This module therefore imports no other lowering family at
import time; the expressions it shares with `elementwise.py` and `reduce.py` are fetched
when an op is lowered, and `tests/test_cpu_fp16_ops.py` checks the op lists agree.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import Float16Type, TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.targets.base import Support
from irc.targets.cpu import csrc, packing
from irc.targets.cpu.lowerings.helpers import (
    activation_code,
    block,
    broadcast_strides,
    c_call,
    c_float,
    collapse,
    contiguous_strides,
    describe,
    index_expr,
    numel,
    parallel,
    shape,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
    lowering,
)

csrc.define_snippet("conv2d_f16", csrc.kernel_file("common/conv2d_f16.c"), ("f16",))

CHUNK = 64
"""Values an elementwise loop widens, computes and rounds back at a time."""

HALF_BINARY_OPS: tuple[type[nn.NNOp], ...] = (
    nn.AddOp,
    nn.SubOp,
    nn.MulOp,
    nn.DivOp,
    nn.MaximumOp,
    nn.MinimumOp,
    nn.PowOp,
    nn.SquaredDifferenceOp,
    nn.PReluOp,
)
"""The binary ops of `elementwise.BINARY_OPS`, registered here first for float16."""

HALF_UNARY_OPS: tuple[type[nn.NNOp], ...] = (
    nn.ReluOp,
    nn.Relu6Op,
    nn.ClipOp,
    nn.SigmoidOp,
    nn.TanhOp,
    nn.HardSwishOp,
    nn.LeakyReluOp,
    nn.HardSigmoidOp,
    nn.ExpOp,
    nn.LogOp,
    nn.SqrtOp,
    nn.RsqrtOp,
    nn.AbsOp,
    nn.NegOp,
    nn.ErfOp,
)
"""The unary ops of `elementwise.UNARY_OPS`, registered here first for float16."""

_ELEMENTWISE = (*HALF_BINARY_OPS, *HALF_UNARY_OPS)

REDUCE_KINDS = ("sum", "mean", "prod", "max", "min")


# ---- What runs here ---------------------------------------------------------------------------


def is_half(value: SSAValue) -> bool:
    """A tensor of float16 elements."""
    t = value.type
    return isinstance(t, TensorType) and isinstance(t.element_type, Float16Type)


def _all_half(op: Operation) -> bool:
    values = [*op.operands, *op.results]
    return bool(values) and all(is_half(v) for v in values)


def _is_constant(value: SSAValue | None) -> bool:
    return value is not None and isinstance(value.owner, nn.ConstantOp)


def _packs_constant(op: Operation, index: int) -> bool:
    """Whether the lowering here of `op` reads its float16 operand `index` packed (a
    filter, a bias, a binary op's operand) when it is a constant."""
    if isinstance(op, nn.Conv2DOp | nn.FullyConnectedOp):
        return index > 0
    return isinstance(op, HALF_BINARY_OPS)


def _activation(op: Operation) -> Support:
    attr = op.properties.get("activation")
    name = "none" if attr is None else attr.data  # type: ignore[attr-defined]  # an nn op's `activation` property is an ActivationAttr
    if name not in csrc.ACTIVATION_CODES:
        return Support.no("attribute", f"cpu: float16 '{op.name}' with activation '{name}'")
    return Support.yes()


def check(op: Operation) -> Support | None:
    """Whether the float16 kernels here run `op` (its tensors float16), or why not; None
    for ops they do not cover (the casts and data movement: `support.py`)."""
    if isinstance(op, nn.ConstantOp):
        if not is_half(op.output):
            return None
        if all(_packs_constant(use.operation, use.index) for use in op.output.uses):
            return Support.yes()
        return Support.no("dtype", "cpu: a float16 constant read by an op that does not pack it")
    if not isinstance(op, (nn.Conv2DOp, nn.FullyConnectedOp, nn.ReduceOp, *_ELEMENTWISE)):
        return None
    if not _all_half(op):
        return Support.no("dtype", f"cpu: '{op.name}' mixing float16 with other types")
    if any(d < 0 for v in (*op.operands, *op.results) for d in shape(v)):
        return Support.no("dynamic", f"cpu: '{op.name}' has a dynamic shape")
    if isinstance(op, nn.Conv2DOp | nn.FullyConnectedOp):
        if not _is_constant(op.operands[1]):
            return Support.no("attribute", f"cpu: float16 '{op.name}' with non-constant weights")
        bias = op.bias
        if bias is not None and not _is_constant(bias):
            return Support.no("attribute", f"cpu: float16 '{op.name}' with a non-constant bias")
        return _activation(op)
    if isinstance(op, nn.ReduceOp):
        if op.kind.data not in REDUCE_KINDS:
            return Support.no("attribute", f"cpu: float16 '{op.name}' of kind '{op.kind.data}'")
        return Support.yes()
    if isinstance(op, HALF_BINARY_OPS):
        return _activation(op)
    return Support.yes()


def computes_float16(op: Operation) -> bool:
    """Whether the cpu target computes `op`, an op on float16 tensors, in float16
    (`CpuTarget.computes_float16_op` at `precision=fp16`): the target takes it (`supports`),
    and it is one of the kernels here, a cast between float16 and float32 or data movement
    of float16 bits, none of its float16 operands a constant it does not pack. Everything
    else (softmax, layer norm, attention, pooling, gather of a float16 table, casts from or to
    integers...) `widen-fp16` computes in float32 between casts."""
    from irc.targets.cpu.lowerings.casts import is_half_cast
    from irc.targets.cpu.lowerings.movement import DATA_MOVEMENT_OPS
    from irc.targets.cpu.support import check_op

    if isinstance(op, nn.ConstantOp) or not any(is_half(v) for v in (*op.operands, *op.results)):
        return False
    if isinstance(op, nn.CastOp):
        covered = is_half_cast(op)
    else:
        covered = check(op) is not None or type(op) in DATA_MOVEMENT_OPS
    if not covered:
        return False
    for index, operand in enumerate(op.operands):
        if is_half(operand) and _is_constant(operand) and not _packs_constant(op, index):
            return False
    return bool(check_op(op))


# ---- Convolutions -------------------------------------------------------------------------------


def _half_bits(array: np.ndarray) -> np.ndarray:
    """float16 values as their bits, in int16 (the constants table, whose IR holds int16,
    keeps integers as they are and makes float arrays float32)."""
    return np.ascontiguousarray(array.astype(np.float16)).view(np.int16)


def _bias(em: Emitter, ctx: LoweringContext, op: nn.Conv2DOp | nn.FullyConnectedOp) -> str:
    """The float32 bias (the float16 values, exact), NULL when absent or all -0.0 (adding it
    changes no sum, as conv.py's `_bias`)."""
    bias = op.bias
    if bias is None:
        return "NULL"
    values = ctx.codegen.constant_array(bias)
    if values is None:
        raise LoweringError(op, f"float16 '{op.name}' needs a constant bias")
    if np.all(np.signbit(values) & (values == 0)):
        return "NULL"
    return em.packed(bias, "bias_f32", lambda a: a.astype(np.float32))


@lowering(nn.Conv2DOp)
def half_conv2d(op: nn.Conv2DOp, ctx: LoweringContext) -> Lowered | None:
    """A float16 NHWC conv2d with a constant filter (depthwise: `irc_depthwise_f16`, else
    `irc_conv2d_f16`)."""
    if not _all_half(op):
        return None
    if op.layout.data != "NHWC":
        raise LoweringError(op, "float16 conv2d runs NHWC only (convert-layout gives it NHWC)")
    props = op.all_properties()
    groups = op.groups.value.data
    sh, sw = ints_of(props["strides"])
    dh, dw = ints_of(props["dilations"])
    pt, pl, _, _ = ints_of(props["pads"])
    (n, h, w, c), (oc, kh, kw, cg) = shape(op.input), shape(op.filter)
    _, oh, ow, _ = shape(op.output)
    ocg = oc // groups
    depthwise = groups > 1 and groups == c and oc == c
    nv = packing.vectors_per_block(ocg)
    act = activation_code(op)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        x, bias = em.ptr(op.input), _bias(em, ctx, op)
        if depthwise:
            wk = em.packed(
                op.filter,
                "depthwise_filter_f16 [KH][KW][C]",
                lambda a: _half_bits(packing.pack_depthwise(a)),
            )
            args = (x, n, h, w, c, f"(const uint16_t *){wk}", bias, res[0], oh, ow, kh, kw)
            call = c_call("irc_depthwise_f16", *args, sh, sw, dh, dw, pt, pl, act)
        else:
            wk = em.packed(
                op.filter,
                f"conv2d_filter_f16 [G][OCg/{16 * nv}][KH][KW][Cg][{16 * nv}]",
                lambda a: _half_bits(packing.pack_filter(a, groups, nv)),
            )
            args = (nv, x, n, h, w, c, f"(const uint16_t *){wk}", bias, res[0], oh, ow, oc)
            args += (kh, kw, sh, sw, dh, dw, pt, pl, groups, cg, ocg, act)
            call = c_call("irc_conv2d_f16", *args)
        return block(describe(op), [], [call])

    return Lowered(emit, snippets=("conv2d_f16",))


@lowering(nn.FullyConnectedOp)
def half_fully_connected(op: nn.FullyConnectedOp, ctx: LoweringContext) -> Lowered | None:
    """A float16 fully_connected with constant weights: `irc_conv2d_f16` on one row."""
    if not _all_half(op):
        return None
    x_shape, (oc, k) = shape(op.input), shape(op.weights)
    m = numel(x_shape[:-1])
    nv = packing.vectors_per_block(oc)
    act = activation_code(op)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        wk = em.packed(
            op.weights,
            f"conv2d_filter_f16 [1][N/{16 * nv}][1][1][K][{16 * nv}]",
            lambda a: _half_bits(packing.pack_filter(a.reshape(oc, 1, 1, k), 1, nv)),
        )
        if not m:
            return block(describe(op), [], [])
        args = (nv, em.ptr(op.input), 1, 1, m, k, f"(const uint16_t *){wk}")
        args += (_bias(em, ctx, op), res[0], 1, m, oc, 1, 1, 1, 1, 1, 1, 0, 0, 1, k, oc)
        return block(describe(op), [], [c_call("irc_conv2d_f16", *args, act)])

    return Lowered(emit, snippets=("conv2d_f16",))


# ---- Elementwise --------------------------------------------------------------------------------


def _chunked(
    op: Operation,
    ctx: LoweringContext,
    operands: list[tuple[str, SSAValue]],
    expr: str,
) -> Lowered:
    """`po = f16(expr)` over the result's elements with numpy broadcasting of `operands`
    (C name, value): float32 `name` is each operand's value, widened CHUNK values at a
    time along the innermost collapsed dimension (a broadcast operand: once per run)."""
    out = shape(op.results[0])
    splats = [ctx.codegen.constant_splat(v) for _, v in operands]
    strides = [contiguous_strides(out)]
    strides += [
        broadcast_strides(() if s is not None else shape(v), out)
        for (_, v), s in zip(operands, splats, strict=True)
    ]
    dims, cstrides = collapse(out, strides)
    if not dims:
        dims, cstrides = [1], [[1] for _ in strides]
    outer, inner = dims[:-1], dims[-1]

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [f"uint16_t *restrict po = {res[0]};"]
        for (name, value), splat in zip(operands, splats, strict=True):
            if splat is None:
                if _is_constant(value):
                    src = f"(const uint16_t *){em.packed(value, 'float16', _half_bits)}"
                else:
                    src = em.ptr(value)
                decls.append(f"const uint16_t *restrict p{name} = {src};")
        loops = [f"for (long i{k} = 0; i{k} < {d}; ++i{k})" for k, d in enumerate(outer)]
        starts = [index_expr(0, st[:-1]) if outer else "0" for st in cstrides]
        chunks = -(-inner // CHUNK)
        body = [f"for (long jc = 0; jc < {chunks}; ++jc) {{", f"  const long j = jc * {CHUNK};"]
        body.append(f"  const int nj = {inner} - j < {CHUNK} ? (int)({inner} - j) : {CHUNK};")
        body.append(f"  float r[{CHUNK}];")
        lanes = []
        for k, ((name, _value), splat) in enumerate(zip(operands, splats, strict=True)):
            if splat is not None:
                body.append(f"  const float s{name} = {c_float(splat)};")
                lanes.append((name, f"s{name}"))
            elif cstrides[k + 1][-1] == 0:
                body.append(f"  const float s{name} = irc_h2f(p{name}[{starts[k + 1]}]);")
                lanes.append((name, f"s{name}"))
            else:
                body.append(f"  float t{name}[{CHUNK}];")
                body.append(f"  irc_f16_to_f32(p{name} + {starts[k + 1]} + j, t{name}, nj);")
                lanes.append((name, f"t{name}[q]"))
        reads = [f"const float {name} = {src};" for name, src in lanes]
        body.append("  for (int q = 0; q < nj; ++q) {")
        body += [f"    {line}" for line in reads]
        body.append(f"    r[q] = {expr};")
        body.append("  }")
        body.append(f"  irc_f32_to_f16(r, po + {starts[0]} + j, nj);")
        body.append("}")
        indent = "  " * len(outer)
        nest = [("  " * k) + line for k, line in enumerate(loops)]
        if loops:
            nest[-1] += " {"
            nest += [indent + line for line in body]
            nest.append("  " * (len(outer) - 1) + "}")
        else:
            nest = body
        return block(describe(op), decls, parallel(dims if outer else [inner], nest))

    return Lowered(emit, snippets=("f16",))


@lowering(*HALF_BINARY_OPS)
def half_binary(op: nn.ElementwiseBinaryOp, ctx: LoweringContext) -> Lowered | None:
    """A float16 binary op (numpy broadcasting; `elementwise.BINARY_OPS`' expression and
    the fused activation in float32)."""
    if not _all_half(op):
        return None
    from irc.targets.cpu.lowerings.elementwise import BINARY_OPS
    from irc.targets.cpu.lowerings.helpers import wrap_activation

    expr = wrap_activation(f"({BINARY_OPS[type(op)]})", activation_code(op))
    return _chunked(op, ctx, [("a", op.lhs), ("b", op.rhs)], expr)


@lowering(*HALF_UNARY_OPS)
def half_unary(op: nn.NNOp, ctx: LoweringContext) -> Lowered | None:
    """A float16 unary op (`elementwise.unary_expr` in float32)."""
    if not _all_half(op):
        return None
    from irc.targets.cpu.lowerings.elementwise import unary_expr

    return _chunked(op, ctx, [("x", op.operands[0])], unary_expr(op))


# ---- Reductions ---------------------------------------------------------------------------------


class _Redirected(Emitter):
    """An emitter whose pointers of some values are float32 scratch buffers instead."""

    def __init__(self, ctx: LoweringContext, em: Emitter, redirect: dict[SSAValue, str]):
        super().__init__(ctx.codegen)
        self._em = em
        self._redirect = redirect

    def ptr(self, value: SSAValue) -> str:
        return self._redirect.get(value) or self._em.ptr(value)


@lowering(nn.ReduceOp)
def half_reduce(op: nn.ReduceOp, ctx: LoweringContext) -> Lowered | None:
    """A float16 reduce: the input widened to float32 scratch, `reduce.py`'s float32 loop
    nests into float32 scratch, the result rounded to float16."""
    if not _all_half(op):
        return None
    from irc.targets.cpu.lowerings import reduce

    inner = reduce.float_reduction(op)
    count_in, count_out = numel(shape(op.input)), numel(shape(op.output))

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        x32, y32 = tmp
        body = [c_call("irc_f16_to_f32", em.ptr(op.input), x32, count_in)]
        body += inner.emit(_Redirected(ctx, em, {op.input: x32}), [y32], [])
        body.append(c_call("irc_f32_to_f16", y32, res[0], count_out))
        return block(describe(op), [], body)

    return Lowered(emit, [count_in, count_out], ("f16", *inner.snippets))
