"""What the CPU target runs: the one capability check shared by `supports()` and `lower-cpu`.

Tensors of static shape. Float ops run on float32. Quantized ops run natively on their
`lower-quantized` form (docs/design.md §2): a quantized op is accepted when the pass expresses
it in integer ops that all have C kernels here (checked on a lowered copy of the op, as the
reference target does), or when it is data movement on storage integers (reshape, transpose,
concat, split, slice, constant pad, broadcast_to). Quantized unary ops with their own
integer algorithm (logistic, tanh, gelu, exp, log, sqrt, rsqrt, hard_swish) run as exact
256-entry tables of the reference kernel when their input and result are per-tensor 8-bit
(`tables.py`); quantized softmax, log_softmax and resize run native kernels bit-exact with
the reference (`quant_kernels.py`, which says which cases it refuses); other quantized ops
with their own algorithm are refused with code `quantized`; `quant.qcast`/`quant.dcast`
and integer-to-float `nn.cast` run the kernels of `quant_casts.py`. float16 tensors (a
float16 model: the target `computes_float16`) run the float16 kernels of `binary16.py`
(convolutions, elementwise ops, reductions; float16 constants only as the operands they
pack), `nn.cast` to and from float32 (F16C where present) and data movement of their bits. NCHW
float ops are accepted: inside the target's regions `convert-layout` gives them NHWC, and
`lower-cpu` wraps any NCHW op it still meets in transposes; integer convolutions and pools
run NHWC only.
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, TensorType
from xdsl.ir import Operation

from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType
from irc.targets.base import Support
from irc.targets.cpu.c_types import C_TYPES, c_type
from irc.targets.cpu.lowerings import binary16, quant_casts, registered_ops, transformer
from irc.targets.cpu.lowerings.casts import is_half_cast
from irc.targets.cpu.lowerings.elementwise import INTEGER_BINARY_OPS
from irc.targets.cpu.lowerings.movement import DATA_MOVEMENT_OPS
from irc.targets.cpu.quant_kernels import NATIVE_OPS, check_native
from irc.targets.cpu.tables import TABLE_OPS, TableError, lookup_table

__all__ = ["C_TYPES", "DATA_MOVEMENT_OPS", "SUPPORTED_OPS", "c_type", "check_op"]

SUPPORTED_OPS: frozenset[type[Operation]] = registered_ops() | {nn.ConstantOp}
"""Op types with a lowering (`irc.targets.cpu.lowerings`), and constants (passed in the
constants table, no kernel): the ops the CPU target may run, types and attributes
permitting."""

QUANT_OPS: frozenset[type[Operation]] = frozenset({quant.SCastOp, quant.RescaleOp, nn.CastOp})
"""Ops of the integer form that `lower-quantized` produces (besides integer `nn` ops)."""


def _tensor_types(op: Operation) -> list[TensorType]:
    return [t for t in (*op.operand_types, *op.result_types) if isinstance(t, TensorType)]


def check_op(op: Operation, *, converts_layout: bool = False) -> Support:
    """Whether the CPU target runs `op`, or the reason code and text why not.

    `converts_layout`: `op` is the integer form of a quantized op as imported, which
    `convert-layout` gives NHWC inside the target's regions before it is lowered."""
    if transformer.handles(op):
        return transformer.check_op(op)
    if quant_casts.handles(op):
        return quant_casts.check_cast(op)
    if type(op) not in SUPPORTED_OPS:
        return Support.no("op", f"cpu: no kernel for '{op.name}'")
    if any(isinstance(t.element_type, Float16Type) for t in _tensor_types(op)):
        return _check_half(op)
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


def _check_half(op: Operation) -> Support:
    """float16 tensors: the float16 kernels (`binary16.check`), the casts to and from
    float32 and data movement of their bits."""
    if any(d < 0 for t in _tensor_types(op) for d in t.get_shape()):
        return Support.no("dynamic", f"cpu: '{op.name}' has a dynamic shape")
    computed = binary16.check(op)
    if computed is not None:
        return computed
    if isinstance(op, nn.PadOp) and op.value.value.data != 0:
        return Support.no("attribute", f"cpu: float16 '{op.name}' with a nonzero fill value")
    if any(isinstance(v.owner, nn.ConstantOp) for v in op.operands):
        return Support.no("dtype", f"cpu: '{op.name}' of a float16 constant")
    if type(op) in DATA_MOVEMENT_OPS:
        return _check_attributes(op)
    if not is_half_cast(op):
        return Support.no("dtype", f"cpu: '{op.name}' on f16 tensors (float32 only)")
    return Support.yes()


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
    if attr is not None and attr.data != "none":  # type: ignore[attr-defined]  # an nn op's `activation` property is an ActivationAttr
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
