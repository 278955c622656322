"""OpenCL C generation for one entry: shape-specialised kernels, buffer plan, launch list.

Every kernel is generated from a template with the shapes baked in as literals and named
`k<n>` (identical kernels are shared); nothing taken from the model reaches the source. One
work-item computes one output element (softmax: one row; global size = element count, local
size set by `opencl-codegen`), except convs (groups 1 or depthwise) and fully_connected with
a constant filter: those are register-blocked by `conv_kernels.py`, one work-item computing
several output pixels x `floatVW` vectors of output channels from a filter packed at
lowering (PERF_NOTES.md's PoCL style: vector pointers, plain `a * b + c`, no vload/fma
builtins).

Tensors are float32 NHWC (the target's preferred layout; half buffers with
`precision=fp16`, below). Quantized tensors (what `insert-qdq` leaves: region inputs/outputs,
data movement on stored integers) live in char/uchar buffers: `quant.dcast` reads a float
table built at lowering, `quant.qcast` rounds and saturates as the reference kernel does, bit
for bit. A producer's kernel applies the fused `activation` attribute, then the epilogue of
its `ocl.fusion` (`opencl-fuse`): unary activations and binary ops with a residual tensor,
read as an extra kernel input (`RESIDUAL<j>` in templates, a `floatVW` load in the
register-tiled conv), all in registers before the store.

`generate_entry` is `opencl-bufferize`'s work per entry: kernels, launches and one buffer
per intermediate tensor; `_emit(op, epilogue, program)` gives the kernel(s) of one op.

Precision (`opencl-bufferize{precision=...}`, recorded on `ocl.program`): templates name the
element type of float tensors `REAL` / `REAL<n>` and mark conversions `WIDEN<n>(x)` (to the
float accumulator type) and `NARROW<n>(x)` (to `REAL<n>`); `specialise` turns them into
`float<n>` and nothing (fp32: the source is exactly what it was before precision existed), or
`half<n>`, `(float)x` / `convert_float<n>(x)` and `(half)x` / `convert_half<n>(x)` (fp16).
fp16 follows TFLite GPU's F32_F16: buffers (activations, weights, constants) hold half;
elementwise arithmetic runs in half (literals of an expression of a half `v` are cast to
half); the dot products of conv, conv2d_transpose, fully_connected and batch_matmul, reduce
sums and means, pooling and softmax accumulate in float (inputs widened before the
multiply), and the fused epilogue of those kernels runs on the float accumulator before one
conversion to half at the store. Lowering tables (dequantization, quantization parameters,
gather indices, resize taps) stay float32 in either precision.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn, ocl, quant
from irc.dialects.nn import array_from_dense
from irc.dialects.nn.base import get_bool, get_float, get_int, get_ints, get_str
from irc.dialects.quant import UniformQuantizedType
from irc.sanitize import c_comment, c_identifier
from irc.targets.opencl.conv_kernels import TiledKernels
from irc.targets.opencl.gpu_kernels import GpuKernels


class LoweringError(Exception):
    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


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


def nan_max_update(acc: str = "acc") -> str:
    """The running maximum `acc` of pools, reductions and softmax updated with `xv`: a NaN
    element makes it NaN (and it stays NaN), as np.max does; fmax would skip the NaN."""
    return f"(xv > {acc} || isnan(xv) ? xv : {acc})"


def nan_min_update(acc: str = "acc") -> str:
    """The running minimum, as `nan_max_update`."""
    return f"(xv < {acc} || isnan(xv) ? xv : {acc})"


def softmax_shift(z: str) -> str:
    """`z - m` of a softmax row (`m` its maximum), exactly 0 where `z` is the finite maximum:
    under `-cl-mad-enable` the compiler may fuse `beta * x - m` into one fma whose unrounded
    residual (~1e28 for x ~ 1e35) made exp() overflow; an infinite maximum keeps the
    reference's NaN (`inf - inf`)."""
    return f"({z} == m && isfinite(m) ? 0.0f : {z} - m)"


def _f(x: float) -> str:
    """A float literal (exact for float32 values)."""
    if np.isnan(x):
        return "NAN"  # repr would print `nanf` (a constant pad value may be NaN)
    if np.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    return f"{np.float32(x)!r}".replace("np.float32(", "").rstrip(")") + "f"


KERNEL_STYLES = ("cpu", "gpu")
"""How conv, fully_connected and softmax kernels are shaped: `cpu` (conv_kernels.py: few
work-items with register tiles) or `gpu` (gpu_kernels.py: one float4 per work-item, K split
over a work-group where the device would idle)."""

PRECISIONS = ("fp32", "fp16")
"""The element storage of float tensors: `float` (default) or `half` (needs cl_khr_fp16)."""

REAL = "REAL"
"""The template name of the element type of float tensors (`specialise` resolves it)."""

FLOAT_LITERAL = re.compile(
    r"(?<![\w.])(?:[0-9]+\.[0-9]*(?:e[-+]?[0-9]+)?|[0-9]+e[-+]?[0-9]+)f\b|INFINITY|NAN\b"
)
"""A float literal as `_f` prints it, or the INFINITY / NAN macro."""
_REAL_TYPE = re.compile(r"(?<![A-Za-z0-9])REAL([0-9]*)(?![A-Za-z0-9_])")
_CONVERSION = re.compile(r"(?<![A-Za-z0-9_])(WIDEN|NARROW)([0-9]*)\(")


def _conversion(kind: str, width: str, arg: str, precision: str) -> str:
    if precision == "fp32":
        return arg  # no conversion: every WIDEN/NARROW argument is a primary expression
    target = "float" if kind == "WIDEN" else "half"
    return f"convert_{target}{width}({arg})" if width else f"({target}){arg}"


def specialise(text: str, precision: str) -> str:
    """A template with `REAL<n>`, `WIDEN<n>(x)` and `NARROW<n>(x)` in the given precision."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be fp32 or fp16, got '{precision}'")
    out: list[str] = []
    pos = 0
    while (m := _CONVERSION.search(text, pos)) is not None:
        depth, end = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        out.append(text[pos : m.start()])
        arg = specialise(text[m.end() : end - 1], precision)
        out.append(_conversion(m.group(1), m.group(2), arg, precision))
        pos = end
    out.append(text[pos:])
    real = "float" if precision == "fp32" else "half"
    return _REAL_TYPE.sub(lambda t: real + t.group(1), "".join(out))


def real_literals(expr: str) -> str:
    """`expr` with its float literals as `REAL` values (`NARROW(...)`), for an expression of
    a `REAL` `v`: a float literal would make an OpenCL builtin call on half ambiguous."""
    return FLOAT_LITERAL.sub(lambda m: f"NARROW({m.group(0)})", expr)


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


RESIDUAL = re.compile(r"RESIDUAL([0-9]+)")
"""An epilogue's extra tensor input in kernel templates: `RESIDUAL<j>[gid]` (or `[gid % C]`
for a per-channel vector), made the kernel parameter after its regular inputs by `_kernel`."""
RESIDUAL_LOAD = re.compile(r"RESIDUAL([0-9]+)\[gid(?: % ([0-9]+))?\]")


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


def _other_operand(op: Operation, chain: SSAValue) -> SSAValue:
    a, b = op.operands
    return b if a is chain else a


def qcast_exprs(op: quant.QCastOp) -> list[str]:
    """A per-tensor qcast of `v` as expressions (the stored integer, as a float): the
    reference's float32 division, its rounding and saturation. Exact where the build divides
    correctly rounded (build.py's CORRECT_DIVISION); a multiply-add that the compiler
    contracts across the chain may move a value off a rounding tie (one step)."""
    element = op.output.type.element_type  # type: ignore[union-attr]  # verified quantized
    assert isinstance(element, UniformQuantizedType)
    scale = _f(float(np.float32(element.scale_values[0])))
    zp = int(element.zero_point_values[0])
    low, high = element.storage_range
    if op.rounding.data == "half_to_even":
        rounding = "rint(v)"
    else:
        rounding = "copysign(floor(fabs(v)) + (fabs(v) - floor(fabs(v)) >= 0.5f ? 1.0f : 0.0f), v)"
    clamp = f"(isnan(v) ? 0.0f : fmin(fmax(v, {_f(low - zp)}), {_f(high - zp)})) + {_f(zp)}"
    return [f"v / {scale}", rounding, clamp]


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
            if scalar_constant(other) is None:
                out.append(other)
        chain = op.results[0]
    return out


def epilogue_exprs(producer: Operation, epilogue: Sequence[Operation]) -> list[str]:
    """The epilogue as expressions of `v` applied in order: unary activations, and binary
    ops with the chain value and either a residual tensor read at the output's index
    (`RESIDUAL<j>[gid]`), a per-channel vector (`RESIDUAL<j>[gid % C]`) or a one-element
    constant as a literal, each followed by its own fused `activation`."""
    chain = producer.results[0]
    exprs: list[str] = []
    residual = 0
    for op in epilogue:
        if _is_chain_binary(op, chain):
            other_value = _other_operand(op, chain)
            literal = scalar_constant(other_value)
            if literal is not None:
                other = _f(literal)
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
            activation = op.all_properties().get("activation")
            if activation is not None:
                exprs.append(FUSED_ACTIVATION[get_str(op.all_properties(), "activation")])
        elif isinstance(op, quant.QCastOp):
            exprs += qcast_exprs(op)
        elif isinstance(op, quant.DCastOp):
            exprs.append(dcast_expr(op))
        else:
            exprs.append(unary_expr(op))
        chain = op.results[0]
    return exprs


def compose(exprs: list[str], real: bool = False) -> str:
    """Statements applying activation expressions of `v` in order. `v` is `REAL` with `real`
    (its literals become `REAL`), else float (an accumulator: residual reads are widened)."""
    if real:
        exprs = [real_literals(e) for e in exprs]
    else:
        exprs = [RESIDUAL_LOAD.sub(lambda m: f"WIDEN({m.group(0)})", e) for e in exprs]
    lines = "".join(f"    v = {e};\n" for e in exprs if e != "v")
    return lines


def _shape(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _numel(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _strides(shape: tuple[int, ...]) -> list[int]:
    out = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        out[d] = out[d + 1] * shape[d + 1]
    return out


def _decompose(shape: tuple[int, ...], names: list[str]) -> str:
    """C statements splitting `gid` into coordinates `names` of `shape` (row-major)."""
    lines = ["    int t = gid;\n"]
    for d in range(len(shape) - 1, -1, -1):
        lines.append(f"    const int {names[d]} = t % {shape[d]}; t /= {shape[d]};\n")
    return "".join(lines)


@dataclass
class Launch:
    kernel: str
    args: list[str]
    global_size: list[int]
    writes: int = 1
    """How many trailing `args` the kernel writes (one per result of the op)."""
    label: str | None = None
    """What this launch computes, when it differs from its kernel's comment (a kernel shared
    by identical ops describes the first of them)."""


@dataclass
class GeneratedEntry:
    source_kernels: dict[str, str]
    """Kernel body -> name (shared across the executable's entries)."""
    launches: list[Launch] = field(default_factory=list)
    allocs: list[int] = field(default_factory=list)
    """Bytes of each planned buffer b<i>."""


class Program:
    """The kernels and constants of one executable, shared by its entries, in one precision
    (`PRECISIONS`)."""

    def __init__(
        self, precision: str = "fp32", kernels: str = "cpu", compute_units: int = 0
    ) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be fp32 or fp16, got '{precision}'")
        if kernels not in KERNEL_STYLES:
            raise ValueError(f"kernels must be cpu or gpu, got '{kernels}'")
        self.precision = precision
        self.kernel_style = kernels
        """`KERNEL_STYLES`: which generator shapes conv/GEMM/softmax kernels."""
        self.compute_units = compute_units
        """The device's compute units for `gpu` launch shapes (0: `GPU_DEFAULT_UNITS`)."""
        self.kernels: dict[str, str] = {}
        self.comments: dict[str, str] = {}
        self.requests: list[tuple[str, str]] = []
        """(kernel name, comment) of every `kernel()` call, shared kernels included."""
        self.constants: list[np.ndarray] = []

    @property
    def real_bytes(self) -> int:
        """Bytes per element of a float tensor's device buffer (4, or 2 in fp16)."""
        return 2 if self.precision == "fp16" else 4

    def kernel(self, signature_and_body: str, comment: str) -> str:
        """The name of the kernel (a template, specialised to the precision here)."""
        signature_and_body = specialise(signature_and_body, self.precision)
        comment = specialise(comment, self.precision)
        name = self.kernels.get(signature_and_body)
        if name is None:
            name = f"k{len(self.kernels)}"
            self.kernels[signature_and_body] = name
            self.comments[name] = comment
        self.requests.append((name, comment))
        return name

    def constant(self, array: np.ndarray, table: bool = False) -> str:
        """A tensor read through `REAL` pointers (float32, or float16 in fp16); a lowering
        `table` read through `float` pointers (always float32: indices and quantization
        parameters must stay exact); int8/uint8 kept as stored (a quantized constant read by
        a char kernel, a mask)."""
        keep = array.dtype in (np.int8, np.uint8)
        real = np.float16 if self.precision == "fp16" and not table else np.float32
        self.constants.append(np.ascontiguousarray(array, None if keep else real))
        return f"c{len(self.constants) - 1}"

    def source(self) -> str:
        return assemble_source(
            [(name, body, self.comments[name]) for body, name in self.kernels.items()],
            self.precision,
        )


FP16_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"


def assemble_source(kernels: Sequence[tuple[str, str, str]], precision: str = "fp32") -> str:
    """The program's OpenCL C source from (name, body with `KERNEL_NAME`, description) of
    every kernel: a header (with the cl_khr_fp16 pragma in fp16), then each kernel after a
    comment with its description."""
    parts = ["/* Generated by irc's OpenCL target (lower-opencl); do not edit. */\n"]
    if precision == "fp16":
        parts.append(FP16_PRAGMA)
    if any("double" in body for _, body, _ in kernels):  # qcast's division
        parts.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n")
    for name, body, comment in kernels:
        parts.append(f"/* {c_comment(comment)} */\n")
        parts.append(body.replace("KERNEL_NAME", c_identifier(name)))
    return "\n".join(parts)


def _params(n_in: int, in_type: str = REAL, out_type: str = REAL) -> str:
    ins = "".join(f"__global const {in_type}* restrict x{i}, " for i in range(n_in))
    return f"({ins}__global {out_type}* restrict y)"


def _kernel(n_in: int, body: str, in_type: str = REAL, out_type: str = REAL) -> str:
    """A kernel of `n_in` inputs of C element type `in_type` and one output of `out_type`;
    the `REAL` residuals `RESIDUAL<j>` of its epilogue become inputs `x<n_in + j>`."""
    residuals = {int(m.group(1)) for m in RESIDUAL.finditer(body)}
    params = _params(n_in, in_type, out_type)
    if residuals:
        count = max(residuals) + 1
        body = RESIDUAL.sub(lambda m: f"x{n_in + int(m.group(1))}", body)
        extra = "".join(f"__global const REAL* restrict x{n_in + j}, " for j in range(count))
        params = params.replace(
            "__global " + out_type + "* restrict y", extra + "__global " + out_type + "* restrict y"
        )
    return (
        f"__kernel void KERNEL_NAME{params} {{\n    const int gid = get_global_id(0);\n{body}}}\n"
    )


def _ctype(value: SSAValue) -> str:
    """The OpenCL C element type of a tensor's device buffer: `REAL` (float or half), the
    8-bit storage (char / uchar) of a quantized tensor, or uchar for an `i1` mask."""
    t = value.type
    assert isinstance(t, TensorType)
    element = t.element_type
    if isinstance(element, IntegerType) and element.width.data == 1:
        return "uchar"  # i1 masks (kernels_extra's boolean ops): one byte per element
    if isinstance(element, UniformQuantizedType):
        if element.storage_width == 8:
            return "char" if element.is_signed else "uchar"
        raise LoweringError(
            value.owner,  # type: ignore[arg-type]
            f"{element.storage_width}-bit quantized storage (8-bit only)",
        )
    return REAL


def _quant_params(qtype: UniformQuantizedType, shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(channels, inner, axis size) of a quantized tensor's parameters: the channel of element
    `gid` is `(gid / inner) % channels` (channels 1: per-tensor)."""
    if qtype.axis is None or len(qtype.scale_values) == 1:
        return 1, 1, 1
    axis = qtype.axis
    return shape[axis], _numel(shape[axis + 1 :]), shape[axis]


def _describe(op: Operation) -> str:
    ins = ", ".join("x".join(map(str, _shape(v))) or "scalar" for v in op.operands)
    outs = ", ".join("x".join(map(str, _shape(v))) or "scalar" for v in op.results)
    return f"{op.name} {ins} -> {outs}"


def _check_layout(op: Operation) -> None:
    if not isinstance(op, nn.NNOp):
        return
    props = op.all_properties()
    if "layout" in props and get_str(props, "layout") != "NHWC":
        layout = get_str(props, "layout")
        raise LoweringError(
            op, f"'{op.name}' is {layout}; opencl runs NHWC: run convert-layout{{to=NHWC}} first"
        )


FUSED_MARK = " + fused "
"""Separates a fused kernel's description from its epilogue ops' names."""


def _fusion_parts(op: Operation) -> tuple[Operation, list[Operation], SSAValue]:
    """(producer, epilogue ops, final value) of an op or an `ocl.fusion`."""
    if isinstance(op, ocl.FusionOp):
        return op.producer, op.epilogue, op.outputs[0]
    return op, [], op.results[0]


def generate_entry(func: FuncOp, program: Program) -> tuple[list[Launch], list[int]]:
    """Kernels (added to `program`), launches and buffer sizes for one entry.

    Every op (or `ocl.fusion`: one kernel for the producer and its epilogue) writes its
    result (each of its results: the last arguments of its launches) to the entry's output
    buffer `out<j>` when the entry returns it, else to a planned buffer `b<i>` of its own
    (`opencl-plan-memory` reuses them by liveness). Constants are uploaded only when a
    launch reads them (a packed filter replaces its raw constant)."""
    ops = list(func.body.block.ops)
    ret = ops[-1] if ops else None
    if not isinstance(ret, ReturnOp):
        raise LoweringError(func, "entry does not end in func.return")
    names: dict[SSAValue, str] = {arg: f"in{i}" for i, arg in enumerate(func.body.block.args)}
    outputs: dict[SSAValue, str] = {}
    for j, v in enumerate(ret.operands):
        if v not in outputs and v not in names:
            outputs[v] = f"out{j}"
    launches: list[Launch] = []
    allocs: list[int] = []
    lazy: dict[SSAValue, nn.ConstantOp] = {}

    def ref(v: SSAValue | str) -> str:
        if isinstance(v, str):
            return v
        if v not in names and v in lazy:
            names[v] = program.constant(array_from_dense(lazy[v].value))
        return names[v]

    for op in ops[:-1]:
        if isinstance(op, nn.ConstantOp):
            lazy[op.output] = op
            continue
        producer, epilogue, final = _fusion_parts(op)
        _check_layout(producer)
        # an op with several results (nn.split) writes all of them in each of its launches
        written = list(producer.results) if len(producer.results) > 1 else [final]
        for value in written:
            if value in outputs:
                names[value] = outputs[value]
            else:
                names[value] = f"b{len(allocs)}"
                allocs.append(_storage_bytes(value, program))
        residuals = epilogue_inputs(producer, epilogue)
        first_request = len(program.requests)
        emitted = _emit(producer, epilogue, program)
        if residuals and len(emitted) != 1:
            raise LoweringError(producer, f"'{producer.name}' cannot fuse a residual epilogue")
        asked = dict(program.requests[first_request:])  # this op's own descriptions
        fused = f"{FUSED_MARK}{', '.join(e.name for e in epilogue)}" if epilogue else ""
        for kernel, inputs, gsize in emitted:
            if epilogue and FUSED_MARK not in program.comments[kernel]:
                program.comments[kernel] += fused
            if min(gsize) == 0:
                continue
            args = [ref(v) for v in [*inputs, *residuals]] + [names[v] for v in written]
            label = asked.get(kernel, program.comments[kernel])
            if epilogue and FUSED_MARK not in label:
                label += fused
            own = label if label != program.comments[kernel] else None
            launches.append(Launch(kernel, args, gsize, len(written), own))

    # results that are entry arguments, constants or repeated: copy into the output buffer
    for j, v in enumerate(ret.operands):
        out = f"out{j}"
        if names.get(v) == out:
            continue
        n = _numel(_shape(v))
        if n == 0:
            continue
        ct = _ctype(v)
        k = program.kernel(_kernel(1, "    y[gid] = x0[gid];\n", ct, ct), f"copy {ct}")
        launches.append(Launch(k, [ref(v), out], [n]))
    return launches, allocs


def _storage_bytes(value: SSAValue, program: Program) -> int:
    """Bytes of a tensor's device buffer (4 per float, 2 in fp16; 1 per 8-bit quantized
    element or `i1` mask)."""
    return (program.real_bytes if _ctype(value) == REAL else 1) * _numel(_shape(value))


def _emit(
    op: Operation, epilogue: list[Operation], program: Program
) -> list[tuple[str, list[SSAValue | str], list[int]]]:
    """[(kernel name, input values, global size)] for one op (output appended by the caller)."""
    from irc.targets.opencl.kernels_extra import emit_extra  # imports this module

    if program.kernel_style == "gpu" and (gpu := _emit_gpu(op, epilogue, program)) is not None:
        return [gpu]
    if (extra := emit_extra(op, epilogue, program)) is not None:
        return extra
    desc = _describe(op)
    if isinstance(op, quant.DCastOp):
        return [_dcast(op, program, desc)]
    if isinstance(op, quant.QCastOp):
        return [_qcast(op, program, desc)]
    props = op.all_properties()
    fused = props.get("activation")
    act = [FUSED_ACTIVATION[get_str(props, "activation")]] if fused is not None else []
    act += epilogue_exprs(op, epilogue)
    out_shape = _shape(epilogue[-1].results[0] if epilogue else op.results[0])
    n_out = _numel(out_shape)

    if isinstance(op, nn.Conv2DOp):
        n, h, w, c = _shape(op.input)
        oc, kh, kw, icg = _shape(op.filter)
        _, oh, ow, _ = out_shape
        sh, sw = get_ints(props, "strides")
        dh, dw = get_ints(props, "dilations")
        pt, pl = get_ints(props, "pads")[:2]
        groups = get_int(props, "groups")
        ocg = oc // groups
        has_bias = op.bias is not None
        tiled = _tiled(program, act).conv(
            op, (n, h, w, c), (oc, kh, kw, icg), out_shape, props, desc
        )
        if tiled is not None:
            return [tiled]
        body = (
            _decompose((n, oh, ow, oc), ["n", "oh", "ow", "oc"])
            + f"    const int g = oc / {ocg};\n"
            + ("    float acc = x2[oc];\n" if has_bias else "    float acc = 0.0f;\n")
            + f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
            f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n"
            f"        if (ih < 0 || ih >= {h}) continue;\n"
            f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
            f"            const int iw = ow * {sw} - {pl} + kw * {dw};\n"
            f"            if (iw < 0 || iw >= {w}) continue;\n"
            f"            __global const REAL* xp = x0 + ((n * {h} + ih) * {w} + iw) * {c}"
            f" + g * {icg};\n"
            f"            __global const REAL* wp = x1 + ((oc * {kh} + kh) * {kw} + kw) * {icg};\n"
            + _dot_product("acc", "xp", "wp", icg)
            + "        }\n    }\n    float v = acc;\n"
            + compose(act)
            + "    y[gid] = v;\n"
        )
        inputs = [op.input, op.filter] + ([op.bias] if op.bias is not None else [])
        return [(program.kernel(_kernel(len(inputs), body), desc), inputs, [n_out])]

    if isinstance(op, nn.FullyConnectedOp):
        nout, k = _shape(op.weights)
        weights = op.weights.owner
        if isinstance(weights, nn.ConstantOp) and k:
            matrix = array_from_dense(weights.value).astype(np.float32).reshape(nout, k)
            rows = _numel(_shape(op.input)) // k
            tiled = _tiled(program, act).gemm(op.input, matrix, op.bias, rows, desc)
            if tiled is not None:
                return [tiled]
        body = (
            f"    const int m = gid / {nout}; const int o = gid % {nout};\n"
            + ("    float acc = x2[o];\n" if op.bias is not None else "    float acc = 0.0f;\n")
            + f"    __global const REAL* xp = x0 + m * {k};\n"
            f"    __global const REAL* wp = x1 + o * {k};\n"
            f"    for (int i = 0; i < {k}; ++i) acc += WIDEN(xp[i]) * wp[i];\n"
            "    float v = acc;\n" + compose(act) + "    y[gid] = v;\n"
        )
        inputs = [op.input, op.weights] + ([op.bias] if op.bias is not None else [])
        return [(program.kernel(_kernel(len(inputs), body), desc), inputs, [n_out])]

    if isinstance(op, nn.BatchMatmulOp):
        a_shape, b_shape = _shape(op.lhs), _shape(op.rhs)
        adj_x, adj_y = get_bool(props, "adj_x"), get_bool(props, "adj_y")
        rank = len(out_shape)
        m_size, n_size = out_shape[-2], out_shape[-1]
        k_size = a_shape[-2] if adj_x else a_shape[-1]
        # element strides of (m, k) in lhs and (k, n) in rhs within one matrix
        sam, sak = (1, m_size) if adj_x else (k_size, 1)
        sbk, sbn = (1, k_size) if adj_y else (n_size, 1)
        bases = []
        for s in (a_shape, b_shape):
            padded = (1,) * (rank - len(s)) + s
            st = _strides(padded)
            terms = [f"c{d} * {st[d]}" for d in range(rank - 2) if padded[d] != 1]
            bases.append(" + ".join(terms) or "0")
        body = (
            _decompose(out_shape, [f"c{d}" for d in range(rank - 2)] + ["m", "n"])
            + f"    __global const REAL* ap = x0 + {bases[0]} + m * {sam};\n"
            + f"    __global const REAL* bp = x1 + {bases[1]} + n * {sbn};\n"
            + "    float acc = 0.0f;\n"
            + f"    for (int k = 0; k < {k_size}; ++k)"
            + f" acc += WIDEN(ap[k * {sak}]) * bp[k * {sbk}];\n"
            + "    float v = acc;\n"
            + compose(act)
            + "    y[gid] = v;\n"
        )
        return [(program.kernel(_kernel(2, body), desc), [op.lhs, op.rhs], [n_out])]

    if type(op) in BINARY_EXPR:
        a_v, b_v = op.operands
        index_code = ""
        idx = []
        rank = len(out_shape)
        for v in (a_v, b_v):
            s = _shape(v)
            if s == out_shape:
                idx.append("gid")
                continue
            padded = (1,) * (rank - len(s)) + s
            st = _strides(padded)
            terms = []
            for d in range(rank):
                if padded[d] != 1:
                    terms.append(f"c{d} * {st[d]}")
            idx.append(" + ".join(terms) or "0")
            index_code = "x"
        coords = _decompose(out_shape, [f"c{d}" for d in range(rank)]) if index_code else ""
        expr = BINARY_EXPR[type(op)]
        body = (
            coords
            + f"    const REAL a = x0[{idx[0]}]; const REAL b = x1[{idx[1]}];\n"
            + f"    REAL v = {expr};\n"
            + compose(act, real=True)
            + "    y[gid] = v;\n"
        )
        return [(program.kernel(_kernel(2, body), desc), [a_v, b_v], [n_out])]

    if isinstance(op, UNARY_OPS):
        body = "    REAL v = x0[gid];\n" + compose([unary_expr(op), *act], real=True)
        body += "    y[gid] = v;\n"
        return [(program.kernel(_kernel(1, body), desc), [op.operands[0]], [n_out])]

    if isinstance(op, nn.MaxPool2DOp | nn.AvgPool2DOp) and program.kernel_style == "cpu":
        vectorised = _pool_vector(op, act, program, desc, out_shape)
        if vectorised is not None:
            return [vectorised]

    if isinstance(op, nn.MaxPool2DOp | nn.AvgPool2DOp):
        n, h, w, c = _shape(op.input)
        _, oh, ow, _ = out_shape
        kh, kw = get_ints(props, "kernel")
        sh, sw = get_ints(props, "strides")
        dh, dw = get_ints(props, "dilations")
        pt, pl = get_ints(props, "pads")[:2]
        is_max = isinstance(op, nn.MaxPool2DOp)
        include_pad = not is_max and get_bool(props, "count_include_pad")
        init = "float acc = -INFINITY; int cnt = 0;" if is_max else "float acc = 0.0f; int cnt = 0;"
        update = f"acc = {nan_max_update()};" if is_max else "acc += xv;"
        if is_max:
            result = "acc"
        elif include_pad:
            result = f"acc / {_f(kh * kw)}"
        else:
            result = "acc / (float)cnt"
        body = (
            _decompose((n, oh, ow, c), ["n", "oh", "ow", "ch"]) + f"    {init}\n"
            f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
            f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n"
            f"        if (ih < 0 || ih >= {h}) continue;\n"
            f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
            f"            const int iw = ow * {sw} - {pl} + kw * {dw};\n"
            f"            if (iw < 0 || iw >= {w}) continue;\n"
            f"            const float xv = x0[((n * {h} + ih) * {w} + iw) * {c} + ch];\n"
            f"            {update} ++cnt;\n"
            "        }\n    }\n"
            f"    float v = {result};\n" + compose(act) + "    y[gid] = v;\n"
        )
        return [(program.kernel(_kernel(1, body), desc), [op.input], [n_out])]

    if isinstance(op, nn.ReduceOp):
        in_shape = _shape(op.input)
        rank = len(in_shape)
        axes = sorted(a % rank for a in get_ints(props, "axes")) if rank else []
        kept = [d for d in range(rank) if d not in axes]
        st = _strides(in_shape)
        kind = get_str(props, "kind")
        init = {"mean": "0.0f", "sum": "0.0f", "max": "-INFINITY", "min": "INFINITY"}
        upd = {"mean": "acc += xv;", "sum": "acc += xv;", "max": f"acc = {nan_max_update()};"}
        upd["min"] = f"acc = {nan_min_update()};"
        kept_shape = tuple(in_shape[d] for d in kept)
        coords = _decompose(kept_shape, [f"c{d}" for d in kept]) if kept else ""
        base = " + ".join(f"c{d} * {st[d]}" for d in kept) or "0"
        loops = ""
        for depth, d in enumerate(axes):
            loops += "    " * (depth + 1) + f"for (int r{d} = 0; r{d} < {in_shape[d]}; ++r{d})\n"
        off = " + ".join(f"r{d} * {st[d]}" for d in axes) or "0"
        count = _numel(tuple(in_shape[d] for d in axes))
        body = (
            coords
            + f"    const int base = {base};\n    float acc = {init[kind]};\n"
            + loops
            + "    " * (len(axes) + 1)
            + f"{{ const float xv = x0[base + {off}]; {upd[kind]} }}\n"
            + (f"    float v = acc / {_f(count)};\n" if kind == "mean" else "    float v = acc;\n")
            + "    y[gid] = v;\n"
        )
        return [(program.kernel(_kernel(1, body), desc), [op.input], [n_out])]

    if isinstance(op, nn.SoftmaxOp):
        shape = _shape(op.input)
        cols = shape[-1]
        rows = _numel(shape) // cols
        beta = get_float(props, "beta")
        z = "WIDEN(xp[i])" if beta is None or beta == 1.0 else f"{_f(beta)} * WIDEN(xp[i])"
        body = (
            f"    __global const REAL* xp = x0 + gid * {cols};\n"
            f"    __global REAL* yp = y + gid * {cols};\n"
            "    float m = -INFINITY;\n"
            f"    for (int i = 0; i < {cols}; ++i) {{ const float xv = {z};"
            f" m = {nan_max_update('m')}; }}\n"
            "    float s = 0.0f;\n"
            f"    for (int i = 0; i < {cols}; ++i) {{ const float e = exp({softmax_shift(z)});"
            " yp[i] = e; s += e; }\n"
            "    const float inv = 1.0f / s;\n"
            f"    for (int i = 0; i < {cols}; ++i) yp[i] *= inv;\n"
        )
        return [(program.kernel(_kernel(1, body), desc), [op.input], [rows])]

    ct = _ctype(op.results[0]) if op.results else REAL
    if isinstance(op, nn.ReshapeOp):
        k = program.kernel(_kernel(1, "    y[gid] = x0[gid];\n", ct, ct), f"copy {ct}")
        return [(k, [op.input], [n_out])]

    if isinstance(op, nn.TransposeOp):
        in_shape = _shape(op.input)
        perm = list(get_ints(props, "perm"))
        st = _strides(in_shape)
        rank = len(out_shape)
        src = " + ".join(f"c{d} * {st[perm[d]]}" for d in range(rank)) or "0"
        body = _decompose(out_shape, [f"c{d}" for d in range(rank)]) + f"    y[gid] = x0[{src}];\n"
        return [(program.kernel(_kernel(1, body, ct, ct), desc), [op.input], [n_out])]

    if isinstance(op, nn.PadOp) and program.kernel_style == "cpu":
        rows = _channel_pad(op, program, desc, ct)
        if rows is not None:
            return [rows]

    if isinstance(op, nn.PadOp):
        in_shape = _shape(op.input)
        pads = list(get_ints(props, "pads"))
        rank = len(in_shape)
        st = _strides(in_shape)
        conds = []
        terms = []
        for d in range(rank):
            before = pads[2 * d]
            conds.append(f"(unsigned)(c{d} - {before}) < {in_shape[d]}u")
            terms.append(f"(c{d} - {before}) * {st[d]}")
        inside = " && ".join(conds) or "1"
        fill = get_float(props, "value") or 0.0
        # quantized storage pads with the value as an integer of its type (reference kernel)
        fill_code = _f(fill) if ct == REAL else f"({ct})({int(fill)})"
        body = (
            _decompose(out_shape, [f"c{d}" for d in range(rank)])
            + f"    y[gid] = ({inside}) ? x0[{' + '.join(terms) or '0'}] : {fill_code};\n"
        )
        return [(program.kernel(_kernel(1, body, ct, ct), desc), [op.input], [n_out])]

    if isinstance(op, nn.ConcatOp):
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
                result.append((program.kernel(_kernel(1, body, ct, ct), desc), [v], [n]))
            offset += a
        return result

    raise LoweringError(op, f"no OpenCL kernel for '{op.name}'")


def _dot_product(acc: str, x: str, w: str, length: int) -> str:
    """C statements adding `sum(WIDEN(x[i]) * w[i] for i < length)` to the float `acc`.

    With 8 or more terms (a multiple of 4) the sum runs in four independent partial sums,
    added pairwise at the end: a strict build (no `-cl-fast-relaxed-math`) may not reassociate
    one serial chain, which made PoCL's untiled conv2d_transpose 2.2x slower. Summation order
    is not part of the float semantics (docs/semantics.md); each partial sum is a plain sum.
    """
    if length < 8 or length % 4:
        return (
            f"            for (int ic = 0; ic < {length}; ++ic)"
            f" {acc} += WIDEN({x}[ic]) * {w}[ic];\n"
        )
    return (
        "            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;\n"
        f"            for (int ic = 0; ic < {length}; ic += 4) {{\n"
        f"                s0 += WIDEN({x}[ic]) * {w}[ic];\n"
        f"                s1 += WIDEN({x}[ic + 1]) * {w}[ic + 1];\n"
        f"                s2 += WIDEN({x}[ic + 2]) * {w}[ic + 2];\n"
        f"                s3 += WIDEN({x}[ic + 3]) * {w}[ic + 3];\n"
        "            }\n"
        f"            {acc} += (s0 + s1) + (s2 + s3);\n"
    )


def _dcast(op: quant.DCastOp, program: Program, desc: str) -> tuple[str, list, list[int]]:
    """Dequantize through a float table built at lowering: `table[ch][q - qmin]` holds
    `float32(scale[ch] * (q - zp[ch]))` computed in double, the reference kernel's formula, for
    every stored 8-bit value, so the kernel is bit-exact with it."""
    shape = _shape(op.input)
    element = op.input.type.element_type  # type: ignore[union-attr]
    assert isinstance(element, UniformQuantizedType)
    ct = _ctype(op.input)
    channels, inner, _ = _quant_params(element, shape)
    qmin = -128 if ct == "char" else 0
    stored = np.arange(qmin, qmin + 256, dtype=np.int64)
    scales = np.array(element.scale_values, np.float64)
    zps = np.array(element.zero_point_values, np.int64)
    if channels == 1:
        scales, zps = scales[:1], zps[:1]
    n = _numel(shape)
    if channels == 1 and n % CAST_VECTOR == 0 and program.kernel_style == "cpu":
        # The table's formula, 16 values per work-item: the double product of one multiply is
        # correctly rounded whatever the build options, then rounded once to float.
        vt, ft = f"{ct}{CAST_VECTOR}", f"REAL{CAST_VECTOR}"
        body = (
            f"    const double{CAST_VECTOR} q = convert_double{CAST_VECTOR}("
            f"convert_int{CAST_VECTOR}(x0[gid]) - {int(zps[0])});\n"
            f"    y[gid] = convert_{ft}(q * {float(scales[0])!r});\n"
        )
        return program.kernel(_kernel(1, body, vt, ft), desc), [op.input], [n // CAST_VECTOR]
    table = (scales[:, None] * (stored[None, :] - zps[:, None])).astype(np.float32)
    table_name = program.constant(table, table=True)
    index = f"(int)x0[gid] - ({qmin})"
    if channels > 1:
        index = f"((gid / {inner}) % {channels}) * 256 + {index}"
    body = f"    y[gid] = x1[{index}];\n"
    kernel = _kernel(2, body, ct, REAL).replace(
        f"__global const {ct}* restrict x1", "__global const float* restrict x1"
    )
    return program.kernel(kernel, desc), [op.input, table_name], [_numel(shape)]


def _qcast(op: quant.QCastOp, program: Program, desc: str) -> tuple[str, list, list[int]]:
    """`clamp(round(x / scale) + zp)` as the reference kernel: the division in float32 (done
    in double and rounded once to float, so `-cl-fast-relaxed-math` cannot make it
    inexact), then rounding half away from zero via floor(|v|) + (frac >= 0.5) with the sign,
    or half to even (rint); saturation to the storage range."""
    shape = _shape(op.output)
    element = op.output.type.element_type  # type: ignore[union-attr]
    assert isinstance(element, UniformQuantizedType)
    ct = _ctype(op.output)
    channels, inner, _ = _quant_params(element, shape)
    low, high = element.storage_range
    scales = np.array(element.scale_values, np.float32)
    zps = np.array(element.zero_point_values, np.int64)
    inputs: list[SSAValue | str] = [op.input]
    if channels == 1:
        params = f"    const double s = {float(scales[0])!r}; const int zp = {int(zps[0])};\n"
    else:
        packed = np.stack([scales.astype(np.float32), zps.astype(np.float32)], axis=1)
        inputs.append(program.constant(packed, table=True))
        params = (
            f"    const int ch = (gid / {inner}) % {channels};\n"
            "    const double s = (double)x1[2 * ch]; const int zp = (int)x1[2 * ch + 1];\n"
        )
    n = _numel(shape)
    if channels == 1 and n % CAST_VECTOR == 0 and program.kernel_style == "cpu":
        return _qcast_vector(op, program, desc, float(scales[0]), int(zps[0]), (low, high), n)
    if op.rounding.data == "half_to_even":
        rounding = "    const float r = rint(v);\n"
    else:
        rounding = (
            "    const float m = fabs(v); float w = floor(m);\n"
            "    if (m - w >= 0.5f) w += 1.0f;\n"
            "    const float r = copysign(w, v);\n"
        )
    body = (
        params
        + "    const float v = (float)((double)x0[gid] / s);\n"
        + rounding
        + "    const float c = isnan(r) ? 0.0f : fmin(fmax(r, (float)("
        + f"{low} - zp)), (float)({high} - zp));\n"
        + f"    y[gid] = ({ct})((int)c + zp);\n"
    )
    kernel = _kernel(len(inputs), body, REAL, ct).replace(
        "__global const REAL* restrict x1", "__global const float* restrict x1"
    )
    return program.kernel(kernel, desc), inputs, [_numel(shape)]


CAST_VECTOR = 16
"""Values per work-item of the per-tensor qcast / dcast kernels with `kernels=cpu` (when the
element count allows): PoCL runs one-value work-items of these 8-bit casts ~15x slower than
`float16` vectors. `kernels=gpu` keeps one value per work-item (a GPU wants the work-items)."""


def _qcast_vector(
    op: quant.QCastOp,
    program: Program,
    desc: str,
    scale: float,
    zp: int,
    storage: tuple[int, int],
    n: int,
) -> tuple[str, list, list[int]]:
    """`_qcast`'s arithmetic on 16 values per work-item (per-tensor parameters): the same
    double division rounded once to float, the same rounding and saturation, lane by lane."""
    w = CAST_VECTOR
    ct = _ctype(op.output)
    low, high = storage
    if op.rounding.data == "half_to_even":
        rounding = f"    const float{w} r = rint(v);\n"
    else:
        rounding = (
            f"    const float{w} m = fabs(v); const float{w} f = floor(m);\n"
            f"    const float{w} r = copysign(f + select((float{w})(0.0f), (float{w})(1.0f),"
            " m - f >= 0.5f), v);\n"
        )
    body = (
        f"    const float{w} v = convert_float{w}(convert_double{w}(x0[gid]) / {scale!r});\n"
        + rounding
        + f"    const float{w} c = select(fmin(fmax(r, (float{w})({float(low - zp)!r}f)),"
        f" (float{w})({float(high - zp)!r}f)), (float{w})(0.0f), isnan(r));\n"
        f"    y[gid] = convert_{ct}{w}(convert_int{w}(c) + {zp});\n"
    )
    kernel = _kernel(1, body, f"REAL{w}", f"{ct}{w}")
    return program.kernel(kernel, desc), [op.input], [n // w]


POOL_VECTORS = (8, 4, 2)
"""Channel vector widths of `kernels=cpu` pools (the widest dividing the channel count)."""


def _pool_vector(
    op: nn.MaxPool2DOp | nn.AvgPool2DOp,
    act: list[str],
    program: Program,
    desc: str,
    out_shape: tuple[int, ...],
) -> tuple[str, list[SSAValue | str], list[int]] | None:
    """A 2-D pool with one `floatVW` of channels per work-item (VW from `POOL_VECTORS`
    dividing C), or None: PoCL runs the one-value-per-work-item pool ~10x slower. Same
    semantics: NaN propagates through max (`select` on `xv > acc || isnan(xv)`), averages
    divide by the window's in-image count or its area (`count_include_pad`)."""
    n, h, w, c = _shape(op.input)
    vw = next((v for v in POOL_VECTORS if c % v == 0), 0)
    if not vw or any("RESIDUAL" in e for e in act):
        return None
    _, oh, ow, _ = out_shape
    props = op.all_properties()
    kh, kw = get_ints(props, "kernel")
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    pt, pl = get_ints(props, "pads")[:2]
    is_max = isinstance(op, nn.MaxPool2DOp)
    vec, real = f"float{vw}", f"REAL{vw}"
    blocks = c // vw
    if is_max:
        init, update, result = (
            f"({vec})(-INFINITY)",
            "acc = select(acc, xv, xv > acc || isnan(xv));",
            "acc",
        )
    else:
        init, update = f"({vec})(0.0f)", "acc += xv;"
        if get_bool(props, "count_include_pad"):
            result = f"acc / {_f(kh * kw)}"
        else:
            result = "acc / (float)cnt"
    body = (
        _decompose((n, oh, ow, blocks), ["n", "oh", "ow", "cb"])
        + f"    __global const {real}* xp = (__global const {real}*)x0;\n"
        + f"    {vec} acc = {init}; int cnt = 0;\n"
        f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
        f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n"
        f"        if (ih < 0 || ih >= {h}) continue;\n"
        f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
        f"            const int iw = ow * {sw} - {pl} + kw * {dw};\n"
        f"            if (iw < 0 || iw >= {w}) continue;\n"
        f"            const {vec} xv ="
        f" WIDEN{vw}(xp[((n * {h} + ih) * {w} + iw) * {blocks} + cb]);\n"
        f"            {update} ++cnt;\n"
        "        }\n    }\n"
        f"    {vec} v = {result};\n"
        + "".join(f"    v = {e};\n" for e in act if e != "v")
        + f"    ((__global {real}*)y)[gid] = NARROW{vw}(v);\n"
    )
    name = program.kernel(_kernel(1, body), f"{desc} (x{vw})")
    return name, [op.input], [n * oh * ow * blocks]


def _channel_pad(
    op: nn.PadOp, program: Program, desc: str, ct: str
) -> tuple[str, list[SSAValue | str], list[int]] | None:
    """A constant pad of the last axis only (BlazeFace's channel pads before a residual
    add) as one work-item per row: the row's values copied, then the fill, in `REAL4`
    vectors when every count divides by 4; None for other pads."""
    in_shape = _shape(op.input)
    props = op.all_properties()
    pads = list(get_ints(props, "pads"))
    rank = len(in_shape)
    if rank == 0 or any(pads[: 2 * (rank - 1)]) or op.mode.data != "constant":
        return None
    before, after = pads[2 * rank - 2], pads[2 * rank - 1]
    if before < 0 or after < 0:
        return None
    cin = in_shape[-1]
    cout = cin + before + after
    rows = _numel(in_shape[:-1])
    fill = get_float(props, "value") or 0.0
    if ct == REAL and cin % 4 == 0 and before % 4 == 0 and after % 4 == 0:
        vin, vout, vb = cin // 4, cout // 4, before // 4
        body = (
            "    __global const REAL4* xp = (__global const REAL4*)x0 + gid * " + str(vin) + ";\n"
            "    __global REAL4* yp = (__global REAL4*)y + gid * " + str(vout) + ";\n"
            f"    for (int j = 0; j < {vb}; ++j) yp[j] = (REAL4)(NARROW({_f(fill)}));\n"
            f"    for (int j = 0; j < {vin}; ++j) yp[{vb} + j] = xp[j];\n"
            f"    for (int j = {vb + vin}; j < {vout}; ++j) yp[j] = (REAL4)(NARROW({_f(fill)}));\n"
        )
        return program.kernel(_kernel(1, body, ct, ct), f"{desc} (rows x4)"), [op.input], [rows]
    fill_code = f"NARROW({_f(fill)})" if ct == REAL else f"({ct})({int(fill)})"
    body = (
        f"    __global const {ct}* xp = x0 + gid * {cin};\n"
        f"    __global {ct}* yp = y + gid * {cout};\n"
        f"    for (int j = 0; j < {before}; ++j) yp[j] = {fill_code};\n"
        f"    for (int j = 0; j < {cin}; ++j) yp[{before} + j] = xp[j];\n"
        f"    for (int j = {before + cin}; j < {cout}; ++j) yp[j] = {fill_code};\n"
    )
    return program.kernel(_kernel(1, body, ct, ct), f"{desc} (rows)"), [op.input], [rows]


GPU_DEFAULT_UNITS = 64
"""Compute units assumed by `kernels=gpu` launch shapes when the lowering is not told."""


def _emit_gpu(
    op: Operation, epilogue: list[Operation], program: Program
) -> tuple[str, list[SSAValue | str], list[int]] | None:
    """The `gpu_kernels.py` kernel of a conv, fully_connected (constant filters) or
    last-axis softmax, or None (the op keeps its other kernel)."""
    if not isinstance(op, nn.Conv2DOp | nn.FullyConnectedOp | nn.SoftmaxOp):
        return None
    props = op.all_properties()
    fused = props.get("activation")
    act = [FUSED_ACTIVATION[get_str(props, "activation")]] if fused is not None else []
    act += epilogue_exprs(op, epilogue)
    gpu = GpuKernels(program, act, _kernel, RESIDUAL_LOAD)
    gpu.compute_units = program.compute_units or GPU_DEFAULT_UNITS
    desc = _describe(op)
    if isinstance(op, nn.Conv2DOp):
        out_shape = _shape(epilogue[-1].results[0] if epilogue else op.results[0])
        return gpu.conv(op, _shape(op.input), _shape(op.filter), out_shape, props, desc)
    if isinstance(op, nn.FullyConnectedOp):
        nout, k = _shape(op.weights)
        weights = op.weights.owner
        if not isinstance(weights, nn.ConstantOp) or not k:
            return None
        matrix = array_from_dense(weights.value).astype(np.float32).reshape(nout, k)
        rows = _numel(_shape(op.input)) // k
        return gpu.gemm(op.input, matrix, op.bias, rows, desc)
    shape = _shape(op.input)
    if op.axis.value.data % max(len(shape), 1) != len(shape) - 1:
        return None
    beta = get_float(props, "beta")
    z = "WIDEN(xp[i])" if beta is None or beta == 1.0 else f"{_f(beta)} * WIDEN(xp[i])"
    return gpu.softmax(op, shape, z, softmax_shift(z), desc)


def _tiled(program: Program, act: list[str]) -> TiledKernels:
    """The register-blocked conv/GEMM kernel generator (conv_kernels.py) for one op."""
    return TiledKernels(program, act, _kernel, RESIDUAL_LOAD)
