"""What the CPU target runs: the one capability check shared by `supports()` and `lower-cpu`.

Tensors of static shape. Float ops run on float32. Quantized ops run natively on their
`lower-quantized` form (DESIGN.md §2): a quantized op is accepted when the pass expresses
it in integer ops that all have C kernels here (checked on a lowered copy of the op, as the
reference target does), or when it is data movement on storage integers (reshape, transpose,
concat, split, slice, constant pad, broadcast_to). Quantized unary ops with their own
integer algorithm (logistic, tanh, gelu, exp, log, sqrt, rsqrt, hard_swish) run as exact
256-entry tables of the reference kernel when their input and result are per-tensor 8-bit
(`tables.py`); quantized softmax, log_softmax and resize run native kernels bit-exact with
the reference (`quant_kernels.py`, which says which cases it refuses); other quantized ops
with their own algorithm are refused with code `quantized`; `quant.qcast`/`quant.dcast`
and integer-to-float `nn.cast` run the kernels of `quant_casts.py`. NCHW
float ops are accepted: inside the target's regions `convert-layout` gives them NHWC, and
`lower-cpu` wraps any NCHW op it still meets in transposes; integer convolutions and pools
run NHWC only.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Attribute, Operation

from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import numpy_dtype
from irc.targets.base import Support
from irc.targets.cpu import quant_casts
from irc.targets.cpu.quant_kernels import NATIVE_OPS, check_native
from irc.targets.cpu.tables import TABLE_OPS, TableError, lookup_table

C_TYPES: dict[np.dtype, str] = {
    np.dtype(np.float32): "float",
    np.dtype(np.int8): "int8_t",
    np.dtype(np.uint8): "uint8_t",
    np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t",
    np.dtype(np.int64): "int64_t",
    np.dtype(np.bool_): "_Bool",
}
"""numpy dtypes of the values the generated C holds, and their C types (quantized tensors
hold their storage integers)."""

BINARY_OPS: dict[type[nn.NNOp], str] = {
    nn.AddOp: "a + b",
    nn.SubOp: "a - b",
    nn.MulOp: "a * b",
    nn.DivOp: "a / b",
    nn.MaximumOp: "irc_maxf(a, b)",
    nn.MinimumOp: "irc_minf(a, b)",
    # a negative base (-inf included) with a non-integral exponent is NaN everywhere
    # (docs/semantics.md): powf gives +inf for (-inf)^0.5, its vector variant NaN
    nn.PowOp: "((a < 0.0f && b != rintf(b)) ? NAN : powf(a, b))",
    nn.SquaredDifferenceOp: "(a - b) * (a - b)",
    nn.PReluOp: "a >= 0.0f ? a : a * b",
}
"""Elementwise binary ops and their C expression of `a` and `b` (float)."""

UNARY_OPS: frozenset[type[nn.NNOp]] = frozenset(
    {
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
        nn.GeluOp,
    }
)

OTHER_OPS: frozenset[type[Operation]] = frozenset(
    {
        nn.ConstantOp,
        nn.Conv2DOp,
        nn.Conv2DTransposeOp,
        nn.FullyConnectedOp,
        nn.BatchMatmulOp,
        nn.MaxPool2DOp,
        nn.AvgPool2DOp,
        nn.ReduceOp,
        nn.SoftmaxOp,
        nn.LogSoftmaxOp,
        nn.ReshapeOp,
        nn.TransposeOp,
        nn.ConcatOp,
        nn.SplitOp,
        nn.SliceOp,
        nn.PadOp,
        nn.BroadcastToOp,
        nn.ResizeOp,
    }
)

QUANT_OPS: frozenset[type[Operation]] = frozenset({quant.SCastOp, quant.RescaleOp, nn.CastOp})
"""Ops of the integer form that `lower-quantized` produces (besides integer `nn` ops)."""

SUPPORTED_OPS: frozenset[type[Operation]] = (
    frozenset(BINARY_OPS) | UNARY_OPS | OTHER_OPS | QUANT_OPS
)
"""Every op class the CPU target has a kernel for (types and attributes permitting)."""

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
"""Ops that move values without arithmetic: any C type, storage integers included."""

INTEGER_BINARY_OPS: dict[type[nn.NNOp], str] = {
    nn.AddOp: "(int32_t)((uint32_t)a + (uint32_t)b)",
    nn.SubOp: "(int32_t)((uint32_t)a - (uint32_t)b)",
    nn.MulOp: "(int32_t)((uint32_t)a * (uint32_t)b)",
    nn.MaximumOp: "(a > b ? a : b)",
    nn.MinimumOp: "(a < b ? a : b)",
}
"""i32 elementwise ops of the integer form and their C expression (wrapping, as numpy's)."""


def _tensor_types(op: Operation) -> list[TensorType]:
    return [t for t in (*op.operand_types, *op.result_types) if isinstance(t, TensorType)]


def c_type(element: Attribute) -> str | None:
    """The C type holding values of `element` (quantized: its storage), None if none does."""
    try:
        return C_TYPES.get(numpy_dtype(element))
    except TypeError:
        return None


def check_op(op: Operation, *, converts_layout: bool = False) -> Support:
    """Whether the CPU target runs `op`, or the reason code and text why not.

    `converts_layout`: `op` is the integer form of a quantized op as imported, which
    `convert-layout` gives NHWC inside the target's regions before it is lowered."""
    from irc.targets.cpu import transformer_kernels  # it imports this module

    if transformer_kernels.handles(op):
        return transformer_kernels.check_op(op)
    if quant_casts.handles(op):
        return quant_casts.check_cast(op)
    if type(op) not in SUPPORTED_OPS:
        return Support.no("op", f"cpu: no kernel for '{op.name}'")
    types = [*op.operand_types, *op.result_types]
    if any(not isinstance(t, TensorType) for t in types):
        return Support.no("op", f"cpu: '{op.name}' has non-tensor operands or results")
    tensors = _tensor_types(op)
    for t in tensors:
        if any(d < 0 for d in t.get_shape()):
            return Support.no("dynamic", f"cpu: '{op.name}' has a dynamic shape ({t})")
    if any(isinstance(t.element_type, UniformQuantizedType) for t in tensors):
        return _check_quantized(op, tensors)
    if all(isinstance(t.element_type, Float32Type) for t in tensors):
        if type(op) in QUANT_OPS:
            return Support.no("dtype", f"cpu: '{op.name}' on float32 tensors")
        return _check_attributes(op)
    for t in tensors:
        if not isinstance(t.element_type, IntegerType | Float32Type):
            return Support.no(
                "dtype", f"cpu: '{op.name}' on {t.element_type} tensors (float32 only)"
            )
    return _check_integer(op, tensors, converts_layout)


def _check_quantized(op: Operation, tensors: list[TensorType]) -> Support:
    """Quantized ops: data movement and scast/rescale directly, the rest on the integer form
    `lower-quantized` gives them."""
    for t in tensors:
        if c_type(t.element_type) is None:
            return Support.no("dtype", f"cpu: '{op.name}' on {t.element_type} tensors")
    if type(op) in DATA_MOVEMENT_OPS or isinstance(op, quant.SCastOp | quant.RescaleOp):
        return _check_attributes(op)
    if type(op) in TABLE_OPS:
        return _check_table(op)
    if type(op) in NATIVE_OPS:
        attributes = _check_attributes(op)
        return check_native(op) if attributes else attributes
    return _lowered_support(op)


def _check_table(op: Operation) -> Support:
    """Quantized unary ops with their own 8-bit algorithm: a lookup table when it exists."""
    try:
        lookup_table(op)
    except TableError as exc:
        return Support.no("quantized", f"cpu: {exc} (the reference target runs it)")
    return Support.yes()


def _lowered_support(op: Operation) -> Support:
    from irc.diagnostics import IrcDiagnosticError
    from irc.targets.reference.target import _isolated_copy, _lower_quantized

    module, clone = _isolated_copy(op)
    try:
        _lower_quantized(module)
    except IrcDiagnosticError as exc:
        return Support.no("quantized", f"cpu: {exc.diagnostic.message}")
    if clone.parent is not None:
        return Support.no(
            "quantized",
            f"cpu: quantized '{op.name}' has no integer form and no native int8 kernel here "
            "(the reference target runs it)",
        )
    for lowered in module.walk():
        if isinstance(lowered, nn.NNOp | quant.SCastOp | quant.RescaleOp):
            answer = check_op(lowered, converts_layout=True)
            if not answer:
                return Support.no(
                    "quantized",
                    f"cpu: quantized '{op.name}' lowers to {answer.reason.removeprefix('cpu: ')}",
                )
    return Support.yes()


def _int_types(op: Operation) -> list[str | None]:
    return [c_type(t.element_type) for t in _tensor_types(op)]


def _no_activation(op: Operation) -> Support:
    attr = op.properties.get("activation")
    if attr is not None and attr.data != "none":  # type: ignore[attr-defined]
        return Support.no("attribute", f"cpu: integer '{op.name}' with a fused activation")
    return Support.yes()


def _check_integer(
    op: Operation, tensors: list[TensorType], converts_layout: bool = False
) -> Support:
    """Integer (non-float32) tensors: the ops of the `lower-quantized` form."""
    ctypes = _int_types(op)
    if any(t is None or t == "float" for t in ctypes):
        types = ", ".join(sorted({str(t.element_type) for t in tensors}))
        return Support.no("dtype", f"cpu: integer '{op.name}' on {types} tensors")
    if type(op) in DATA_MOVEMENT_OPS or isinstance(op, quant.SCastOp | quant.RescaleOp):
        return _check_attributes(op)
    if isinstance(op, nn.ReluOp | nn.NegOp | nn.AbsOp):
        if ctypes[0] != ctypes[1]:
            return Support.no("dtype", f"cpu: integer '{op.name}' changing the element type")
        return Support.yes()
    if isinstance(op, nn.CastOp):
        if ctypes[1] != "int32_t":
            return Support.no("dtype", f"cpu: '{op.name}' to {ctypes[1]} (widening to i32 only)")
        return Support.yes()
    if type(op) in INTEGER_BINARY_OPS or isinstance(op, nn.ClipOp):
        if any(t != "int32_t" for t in ctypes) and not isinstance(op, nn.ClipOp):
            return Support.no("dtype", f"cpu: integer '{op.name}' on non-i32 tensors")
        if isinstance(op, nn.ClipOp):
            bounds = [b.value.data for b in (op.min, op.max) if b is not None]
            if ctypes[0] != ctypes[1] or any(b != int(b) for b in bounds):
                return Support.no("attribute", f"cpu: integer '{op.name}' with these bounds")
        return _no_activation(op)
    if isinstance(op, nn.Conv2DOp | nn.Conv2DTransposeOp | nn.FullyConnectedOp):
        if ctypes[-1] != "int32_t":
            return Support.no("dtype", f"cpu: integer '{op.name}' must accumulate into i32")
        nchw = isinstance(op, nn.Conv2DOp | nn.Conv2DTransposeOp) and op.layout.data != "NHWC"
        if nchw and not converts_layout:
            return Support.no("attribute", f"cpu: integer '{op.name}' in NCHW (NHWC only)")
        if not isinstance(op.operands[1].owner, nn.ConstantOp):
            return Support.no("attribute", f"cpu: integer '{op.name}' with non-constant weights")
        return _no_activation(op)
    if isinstance(op, nn.MaxPool2DOp | nn.AvgPool2DOp):
        if op.layout.data != "NHWC" and not converts_layout:
            return Support.no("attribute", f"cpu: integer '{op.name}' in NCHW (NHWC only)")
        if ctypes[0] != ctypes[1]:
            return Support.no("dtype", f"cpu: integer '{op.name}' changing the element type")
        return _no_activation(op)
    if isinstance(op, nn.ReduceOp):
        kind = op.kind.data
        if kind not in ("sum", "max", "min") or (kind == "sum" and ctypes[0] != "int32_t"):
            return Support.no("attribute", f"cpu: integer '{op.name}' of kind '{kind}'")
        if ctypes[0] != ctypes[1]:
            return Support.no("dtype", f"cpu: integer '{op.name}' changing the element type")
        return Support.yes()
    return Support.no("dtype", f"cpu: no integer kernel for '{op.name}'")


def _check_attributes(op: Operation) -> Support:
    if isinstance(op, nn.PadOp) and op.mode.data != "constant":
        return Support.no(
            "attribute", f"cpu: '{op.name}' with mode '{op.mode.data}' (constant padding only)"
        )
    if isinstance(op, nn.ResizeOp) and op.mode.data not in ("nearest", "bilinear"):
        return Support.no("attribute", f"cpu: '{op.name}' with mode '{op.mode.data}'")
    return Support.yes()
