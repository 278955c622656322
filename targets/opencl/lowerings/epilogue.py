"""Activations and fused epilogues as C expressions of `v`, shared by the lowerings.

A producer's kernel applies its fused `activation` attribute, then the epilogue of its
`ocl.fusion` (`opencl-fuse`): unary activations and binary ops with a residual tensor, read
as an extra kernel input (`RESIDUAL<j>` in templates, a `floatVW` load in the
register-tiled conv), all in registers before the store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from irc.dialects import nn, ocl, quant
from irc.dialects.nn import array_from_dense
from irc.dialects.nn.base import get_float, get_ints, get_str
from irc.dialects.quant import UniformQuantizedType
from irc.targets.opencl.build import BUILD_OPTIONS, FAST_MATH_BUILD_OPTIONS
from irc.targets.opencl.lowerings.helpers import (
    RESIDUAL_LOAD,
    LoweringError,
    _describe,
    _f,
    _numel,
    _shape,
    real_literals,
)
from irc.targets.opencl.lowerings.requantize import (
    ROUNDING_MAGIC,
    activation_subsumed,
    fused_bounds,
    is_round_trip,
    round_trip_exprs,
    unary_bounds,
)
from irc.targets.opencl.residuals import padded_residual

BINARY_EXPR: dict[type[Operation], str] = {
    nn.AddOp: "a + b",
    nn.SubOp: "a - b",
    nn.MulOp: "a * b",
    nn.DivOp: "a / b",
    nn.MaximumOp: "(a > b || isnan(a) ? a : b)",
    nn.MinimumOp: "(a < b || isnan(a) ? a : b)",
}
"""Elementwise binary ops as expressions of `a` and `b`. maximum / minimum propagate NaN
(the reference's np.maximum / np.minimum; OpenCL's fmax / fmin would return the other
operand): written as comparisons, which also work on vectors and a vector `a` with a
scalar `b` (docs/semantics.md)."""


FUSED_ACTIVATION: dict[str, str] = {
    "none": "v",
    "relu": "(v < 0.0f ? 0.0f : v)",
    "relu6": "(v < 0.0f ? 0.0f : v > 6.0f ? 6.0f : v)",
    "relu_n1_to_1": "(v < -1.0f ? -1.0f : v > 1.0f ? 1.0f : v)",
    "tanh": "tanh(v)",
}
"""Fused activations of `v`; NaN passes through (comparisons with NaN are false), as in the
reference (np.maximum / np.clip), where fmax / fmin would turn it into the bound."""


UNARY_OPS: tuple[type[Operation], ...] = (
    nn.ReluOp,
    nn.Relu6Op,
    nn.ClipOp,
    nn.SigmoidOp,
    nn.TanhOp,
    nn.HardSwishOp,
    nn.LeakyReluOp,
    nn.HardSigmoidOp,
)


def properties_of(op: Operation) -> dict[str, Attribute]:
    """An op's properties: an nn op's `all_properties()` (its attr-dict included), else
    its attributes and properties."""
    if isinstance(op, nn.NNOp):
        return op.all_properties()
    return {**op.attributes, **op.properties}


def unary_expr(op: Operation) -> str:
    """The activation of a unary op as an expression of `v`."""
    if isinstance(op, nn.ReluOp):
        return FUSED_ACTIVATION["relu"]
    if isinstance(op, nn.Relu6Op):
        return FUSED_ACTIVATION["relu6"]
    if isinstance(op, nn.ClipOp):
        e = "v"
        low = get_float(op.all_properties(), "min")
        high = get_float(op.all_properties(), "max")
        if low is not None:
            e = f"({e} < {_f(low)} ? {_f(low)} : {e})"
        if high is not None:
            e = f"({e} > {_f(high)} ? {_f(high)} : {e})"
        return e
    if isinstance(op, nn.SigmoidOp):
        return "(1.0f / (1.0f + exp(-v)))"
    if isinstance(op, nn.TanhOp):
        return "tanh(v)"
    if isinstance(op, nn.HardSwishOp):
        return "(v * (fmin(fmax(v + 3.0f, 0.0f), 6.0f) / 6.0f))"  # no overflow near FLT_MAX
    if isinstance(op, nn.LeakyReluOp):
        return f"(v >= 0.0f ? v : v * {_f(get_float(op.all_properties(), 'alpha') or 0.0)})"
    if isinstance(op, nn.HardSigmoidOp):
        props = op.all_properties()
        alpha, beta = _f(get_float(props, "alpha") or 0.0), _f(get_float(props, "beta") or 0.0)
        t = f"(v * {alpha} + {beta})"
        return f"({t} < 0.0f ? 0.0f : {t} > 1.0f ? 1.0f : {t})"
    raise LoweringError(op, f"no OpenCL activation for '{op.name}'")


def _binary_expr(op: Operation, a: str, b: str) -> str:
    """The binary op's expression with `a` and `b` replaced by the given operands."""
    expr = BINARY_EXPR[type(op)]
    return "(" + re.sub(r"\b[ab]\b", lambda m: a if m.group(0) == "a" else b, expr) + ")"


def _is_chain_binary(op: Operation, chain: SSAValue) -> bool:
    return type(op) in BINARY_EXPR and chain in op.operands


def scalar_constant(value: SSAValue) -> float | None:
    """The value of a one-element float32 `nn.constant` (inlined into an epilogue as a
    literal, whatever its broadcast shape), else None."""
    owner = value.owner
    if not isinstance(owner, nn.ConstantOp):
        return None
    t = value.type
    if not isinstance(t, TensorType) or not isinstance(t.element_type, Float32Type):
        return None
    if _numel(tuple(t.get_shape())) != 1:
        return None
    return float(array_from_dense(owner.value).reshape(-1)[0])


def is_channel_vector(shape: Sequence[int], out_shape: Sequence[int]) -> bool:
    """Whether a tensor of `shape` broadcasts along the last axis of `out_shape` only: a
    per-channel vector (`[C]`, `[1, 1, 1, C]`), read at `gid % C` by an epilogue."""
    inner = list(shape)
    while inner and inner[0] == 1 and len(inner) > 1:
        inner.pop(0)
    return bool(out_shape) and len(shape) <= len(out_shape) and inner == [out_shape[-1]]


def channel_pad_view(value: SSAValue) -> tuple[SSAValue, int] | None:
    """(unpadded tensor, its channels `Cin`) when `value` is an `nn.pad` of the last axis
    only — zeros (+0.0) after the channels, float32 — read once, as the residual of a fused
    epilogue op of an `ocl.fusion` (not its producer): the epilogue reads the unpadded tensor
    below `Cin` channels and +0.0 above (residuals.py), and `opencl-bufferize` launches no
    kernel for the pad. None otherwise."""
    pad = value.owner
    if not isinstance(pad, nn.PadOp) or not value.has_one_use():
        return None
    props = properties_of(pad)
    fill = get_float(props, "value")
    if get_str(props, "mode") != "constant" or fill != 0.0 or np.signbit(fill or 0.0):
        return None
    source = pad.operands[0]
    if not isinstance(source.type, TensorType) or not isinstance(value.type, TensorType):
        return None
    if not all(isinstance(t.element_type, Float32Type) for t in (source.type, value.type)):
        return None
    in_shape, out_shape = _shape(source), _shape(value)
    pads = list(get_ints(props, "pads"))
    if not in_shape or in_shape[-1] == 0 or any(pads[:-1]) or out_shape[:-1] != in_shape[:-1]:
        return None
    user = value.get_user_of_unique_use()
    fusion = user.parent_op() if user is not None else None
    if not isinstance(fusion, ocl.FusionOp) or user is fusion.producer:
        return None
    if type(user) not in BINARY_EXPR:
        return None
    return source, in_shape[-1]


def _other_operand(op: Operation, chain: SSAValue) -> SSAValue:
    a, b = op.operands
    return b if a is chain else a


def qcast_exprs(op: quant.QCastOp) -> list[str]:
    """A per-tensor qcast of `v` as expressions (the stored integer, as a float): the
    reference's float32 division, its rounding and saturation. Exact where the build divides
    correctly rounded (build.py's CORRECT_DIVISION); a multiply-add that the compiler
    contracts across the chain may move a value off a rounding tie (one step).

    In a strict build, operators only: NaN becomes 0 and the quotient is saturated to the
    storage range *before* rounding (rounding is monotonic and the bounds are integers, so
    this equals saturating after it), then `ROUNDING_MAGIC` rounds ties to even; half away
    from zero moves a tie (`v - r` is exactly +-0.5, computed exactly) to `v +- 0.5`, which is
    exact too. Under fast math (which may fold the magic addition) the builtin forms."""
    element = op.output.type.element_type
    assert isinstance(element, UniformQuantizedType)
    scale = _f(float(np.float32(element.scale_values[0])))
    zp = int(element.zero_point_values[0])
    low, high = element.storage_range
    lo, hi = _f(low - zp), _f(high - zp)
    if BUILD_OPTIONS == FAST_MATH_BUILD_OPTIONS:
        if op.rounding.data == "half_to_even":
            rounding = "rint(v)"
        else:
            rounding = (
                "copysign(floor(fabs(v)) + (fabs(v) - floor(fabs(v)) >= 0.5f ? 1.0f : 0.0f), v)"
            )
        clamp = f"(isnan(v) ? 0.0f : fmin(fmax(v, {lo}), {hi})) + {_f(zp)}"
        return [f"v / {scale}", rounding, clamp]
    saturate = f"(v != v ? 0.0f : v < {lo} ? {lo} : v > {hi} ? {hi} : v)"
    even = f"((v + {ROUNDING_MAGIC}) - {ROUNDING_MAGIC})"
    if op.rounding.data == "half_to_even":
        rounding = even
    else:
        rounding = (
            f"(v - {even} == 0.5f || v - {even} == -0.5f ? (v < 0.0f ? v - 0.5f : v + 0.5f)"
            f" : {even})"
        )
    return [f"v / {scale}", saturate, rounding, f"v + {_f(zp)}"]


def dcast_expr(op: quant.DCastOp) -> str:
    """A per-tensor dcast of the stored integer `v` (a float): `scale * (v - zp)`, one
    correctly rounded float product (the reference's double product rounded to float). The
    `+ 0.0f` keeps `-cl-mad-enable` from contracting the product with a following residual
    add into one fma (one rounding instead of the reference's two: values moved off
    rounding ties, MobileNetV2 int8 went from 3 to 8 steps max); it changes no value (the
    product is +0.0, never -0.0, when v == zp)."""
    element = op.input.type.element_type  # type: ignore[union-attr]  # verified quantized
    assert isinstance(element, UniformQuantizedType)
    scale = _f(float(np.float32(element.scale_values[0])))
    return f"({scale} * (v - {_f(int(element.zero_point_values[0]))}) + 0.0f)"


def epilogue_inputs(producer: Operation, epilogue: Sequence[Operation]) -> list[SSAValue]:
    """The extra tensors an epilogue reads (a residual add's other operand), in order;
    one-element constants are inlined, not read."""
    chain = producer.results[0]
    out: list[SSAValue] = []
    for op in epilogue:
        if _is_chain_binary(op, chain):
            other = _other_operand(op, chain)
            if (view := channel_pad_view(other)) is not None:
                out.append(view[0])
            elif scalar_constant(other) is None:
                out.append(other)
        chain = op.results[0]
    return out


def folds_round_trips() -> bool:
    """Whether qcast -> dcast pairs become requantize.py's round trip (strict builds)."""
    return BUILD_OPTIONS != FAST_MATH_BUILD_OPTIONS


def _clamp_dropped(
    bounds: tuple[float, float] | None, epilogue: Sequence[Operation], i: int
) -> bool:
    """Whether a clamp to `bounds` just before `epilogue[i]` is subsumed by a round trip
    starting there."""
    return (
        bounds is not None
        and folds_round_trips()
        and is_round_trip(epilogue, i)
        and activation_subsumed(bounds, epilogue[i])  # type: ignore[arg-type]  # a qcast
    )


def epilogue_exprs(producer: Operation, epilogue: Sequence[Operation]) -> list[str]:
    """The epilogue as expressions of `v` applied in order: unary activations, and binary
    ops with the chain value and either a residual tensor read at the output's index
    (`RESIDUAL<j>[gid]`), a per-channel vector (`RESIDUAL<j>[gid % C]`) or a one-element
    constant as a literal, each followed by its own fused `activation`; a per-tensor qcast
    -> dcast pair as one round trip (requantize.py), which also drops a clamp just before it
    that it subsumes."""
    chain = producer.results[0]
    exprs: list[str] = []
    residual = 0
    index = 0
    while index < len(epilogue):
        op = epilogue[index]
        if _is_chain_binary(op, chain):
            other_value = _other_operand(op, chain)
            literal = scalar_constant(other_value)
            view = channel_pad_view(other_value)
            if literal is not None:
                other = _f(literal)
            elif view is not None and _shape(other_value) == _shape(chain):
                other = f"RESIDUAL{residual}[gid pad {view[1]} {_shape(chain)[-1]}]"
                residual += 1
            elif _shape(other_value) == _shape(chain):
                other = f"RESIDUAL{residual}[gid]"
                residual += 1
            elif is_channel_vector(_shape(other_value), _shape(chain)):
                other = f"RESIDUAL{residual}[gid % {_shape(chain)[-1]}]"
                residual += 1
            else:
                raise LoweringError(op, f"'{op.name}' epilogue with a broadcast operand")
            # fmax/fmin take a scalar second only: keep v (maybe a vector) first
            v_first = op.operands[0] is chain or isinstance(op, nn.MaximumOp | nn.MinimumOp)
            exprs.append(_binary_expr(op, "v", other) if v_first else _binary_expr(op, other, "v"))
            props = properties_of(op)
            if props.get("activation") is not None and not _clamp_dropped(
                fused_bounds(props), epilogue, index + 1
            ):
                exprs.append(FUSED_ACTIVATION[get_str(props, "activation")])
        elif folds_round_trips() and is_round_trip(epilogue, index):
            exprs += round_trip_exprs(
                op,  # type: ignore[arg-type]  # is_round_trip: a qcast
                last=index + 2 == len(epilogue),
            )
            index += 1
        elif isinstance(op, quant.QCastOp):
            exprs += qcast_exprs(op)
        elif isinstance(op, quant.DCastOp):
            exprs.append(dcast_expr(op))
        elif not _clamp_dropped(unary_bounds(op), epilogue, index + 1):
            exprs.append(unary_expr(op))
        chain = epilogue[index].results[0]
        index += 1
    return exprs


def compose(exprs: list[str], real: bool = False) -> str:
    """Statements applying activation expressions of `v` in order. `v` is `REAL` with `real`
    (its literals become `REAL`), else float (an accumulator: residual reads are widened)."""

    def load(m: re.Match[str]) -> str:
        if m.group(3) is not None:  # a channel-padded residual
            return padded_residual(m, "gid", f"gid % {m.group(4)}", widen=not real)
        return m.group(0) if real else f"WIDEN({m.group(0)})"

    if real:
        exprs = [real_literals(e) for e in exprs]
    exprs = [RESIDUAL_LOAD.sub(load, e) for e in exprs]
    lines = "".join(f"    v = {e};\n" for e in exprs if e != "v")
    return lines


def _activations(op: Operation, epilogue: list[Operation]) -> list[str]:
    """The op's fused activation then its fused unary epilogue, as expressions of `v`."""
    props = properties_of(op)
    exprs = [FUSED_ACTIVATION[get_str(props, "activation")]] if "activation" in props else []
    return exprs + [unary_expr(e) for e in epilogue]


class Prelude(NamedTuple):
    """What a generic lowering reads first: its description, properties, the fused
    activation and epilogue expressions, the output shape and its element count."""

    desc: str
    props: dict
    act: list[str]
    out_shape: tuple[int, ...]
    n_out: int


def prelude(op: Operation, epilogue: list[Operation]) -> Prelude:
    """`op`'s description, properties, activation + epilogue expressions (`act`) and the
    shape and size of the fused output."""
    desc = _describe(op)
    props = properties_of(op)
    fused = props.get("activation")
    act = []
    if fused is not None and not _clamp_dropped(fused_bounds(props), epilogue, 0):
        act.append(FUSED_ACTIVATION[get_str(props, "activation")])
    act += epilogue_exprs(op, epilogue)
    out_shape = _shape(epilogue[-1].results[0] if epilogue else op.results[0])
    n_out = _numel(out_shape)
    return Prelude(desc, props, act, out_shape, n_out)
