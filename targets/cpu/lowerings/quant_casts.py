"""CPU kernels of `quant.qcast` and `quant.dcast`, bit-exact with the reference's.

Also `nn.cast` from integers to float32 (ONNX Cast after MatMulInteger / ConvInteger in
dynamically quantized models), as a dcast of scale 1.

The casts sit at the edges of quantized islands (the graph input's QuantizeLinear, the
output's DequantizeLinear, a float op left between integer ones); with kernels here such an
edge stays inside the CPU region instead of splitting it.

* **qcast** (float32 -> int8/uint8/int16/int32, per tensor or per axis):
  ``x / (float)scale`` in float32 (the reference divides in the input's type), rounded half
  to even (`rintf`, ONNX QuantizeLinear) or half away from zero (`roundf`, TFLite), NaN to
  the zero point, then saturated to the storage range. The rounded value is clamped to
  ``[low - zp, high - zp]`` before the zero point is added, which is the reference's clamp
  after it; in float for storage of up to 16 bits (the bounds are exact there), in double
  for 32-bit storage.
* **dcast** (storage integers -> float32): ``(float)(scale * (double)(q - zp))``, the
  product in double as the reference computes it, then rounded once to float32.

Scales are written as hexadecimal float literals (exact). The generated C is compiled
without `-ffast-math` (`toolchain.BASE_FLAGS`), so the division, `rintf` and the NaN test
keep their IEEE meaning.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType, f32
from xdsl.ir import Operation

from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType, quantized_element
from irc.dtypes import numpy_dtype
from irc.targets.base import Support
from irc.targets.cpu.lowerings.helpers import block, describe
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
    lowering,
)

CAST_OPS: frozenset[type[Operation]] = frozenset({quant.QCastOp, quant.DCastOp})
"""The casts this module lowers."""

_STORAGE_C_TYPES = {
    np.dtype(np.int8): "int8_t",
    np.dtype(np.uint8): "uint8_t",
    np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t",
}


def is_integer_to_float(op: Operation) -> bool:
    """An `nn.cast` from a plain integer tensor to float32."""
    if not isinstance(op, nn.CastOp):
        return False
    source, result = op.operands[0].type, op.results[0].type
    return (
        isinstance(source, TensorType)
        and isinstance(result, TensorType)
        and isinstance(source.element_type, IntegerType)
        and isinstance(result.element_type, Float32Type)
    )


def handles(op: Operation) -> bool:
    """Whether `op` is a cast this module lowers (`check_cast` says whether it can)."""
    return type(op) in CAST_OPS or is_integer_to_float(op)


def _sides(op: Operation) -> tuple[TensorType, TensorType]:
    """(float side, quantized or integer side) of a cast."""
    source, result = op.operands[0].type, op.results[0].type
    assert isinstance(source, TensorType)
    assert isinstance(result, TensorType)
    return (source, result) if isinstance(op, quant.QCastOp) else (result, source)


def _quantized_side(op: Operation) -> UniformQuantizedType:
    """The stored side's quantization (scale 1, zero point 0 for an integer `nn.cast`)."""
    _, stored = _sides(op)
    qtype = quantized_element(stored)
    if qtype is not None:
        return qtype
    element = stored.element_type
    assert isinstance(element, IntegerType)
    return UniformQuantizedType.per_tensor(element, f32, 1.0, 0)


def check_cast(op: Operation) -> Support:
    """Whether a cast has a kernel here: static shapes, float32 on the float side, 8- to
    32-bit integers on the other."""
    real, stored = _sides(op)
    if any(d < 0 for d in real.get_shape()):
        return Support.no("dynamic", f"cpu: '{op.name}' has a dynamic shape ({real})")
    if not isinstance(real.element_type, Float32Type):
        return Support.no("dtype", f"cpu: '{op.name}' on {real.element_type} (float32 only)")
    if numpy_dtype(stored) not in _STORAGE_C_TYPES:
        qtype = quantized_element(stored)  # no unit-scale type for i64: name the element
        storage = qtype.storage_type if qtype is not None else stored.element_type
        return Support.no("dtype", f"cpu: '{op.name}' with {storage} storage")
    return Support.yes()


def _hex(value: float) -> str:
    """An exact C hexadecimal floating literal (a double)."""
    return float(value).hex()


def _layout(op: Operation, qtype: UniformQuantizedType) -> tuple[int, int, int]:
    """(outer, channels, inner): the cast as loops over a per-axis dimension (1 channel
    for a per-tensor type)."""
    dims = _sides(op)[0].get_shape()
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    axis = qtype.axis
    if axis is None or len(qtype.scale_values) == 1:
        return 1, 1, count
    outer = int(np.prod(dims[:axis], dtype=np.int64))
    inner = int(np.prod(dims[axis + 1 :], dtype=np.int64))
    return outer, dims[axis], inner


def _parameter_lines(qtype: UniformQuantizedType, channels: int, scale_type: str) -> Lines:
    """The scales (float32 for a qcast, double for a dcast) and zero points, per channel."""
    scales = list(qtype.scale_values)[:channels]
    zero_points = list(qtype.zero_point_values)[:channels]
    if scale_type == "float":
        literals = [f"{_hex(float(np.float32(s)))}f" for s in scales]
    else:
        literals = [_hex(s) for s in scales]
    return [
        f"static const {scale_type} sc[{channels}] = {{{', '.join(literals)}}};",
        f"static const int64_t zp[{channels}] = {{{', '.join(f'{z}LL' for z in zero_points)}}};",
    ]


def _qcast_body(op: quant.QCastOp, qtype: UniformQuantizedType, storage: str) -> Lines:
    round_fn = "rintf" if op.rounding.data == "half_to_even" else "roundf"
    low, high = qtype.storage_range
    wide = qtype.storage_width > 16
    real = "double" if wide else "float"
    suffix = "" if wide else "f"
    return [
        "const float s = sc[c];",
        "const int64_t z = zp[c];",
        f"const {real} lo = ({real})({low}LL - z), hi = ({real})({high}LL - z);",
        "for (long i = 0; i < inner; ++i) {",
        f"  {real} r = ({real}){round_fn}(px[base + i] / s);",
        f"  r = r == r ? r : 0.0{suffix};",
        "  r = r < lo ? lo : (r > hi ? hi : r);",
        f"  po[base + i] = ({storage})((int64_t)r + z);",
        "}",
    ]


def _dcast_body() -> Lines:
    return [
        "const double s = sc[c];",
        "const int64_t z = zp[c];",
        "for (long i = 0; i < inner; ++i)",
        "  po[base + i] = (float)(s * (double)((int64_t)px[base + i] - z));",
    ]


@lowering(quant.QCastOp, quant.DCastOp)
def quant_cast(op: quant.QCastOp | quant.DCastOp, ctx: LoweringContext) -> Lowered:
    """A `quant.qcast` or a `quant.dcast` (`lower_cast`)."""
    return lower_cast(op)


def lower_cast(op: Operation) -> Lowered:
    """The kernel of a `quant.qcast`, a `quant.dcast` or an integer-to-float `nn.cast`."""
    support = check_cast(op)
    if not support:
        raise LoweringError(op, support.reason.removeprefix("cpu: "))
    _, stored = _sides(op)
    qtype = _quantized_side(op)
    storage = _STORAGE_C_TYPES[numpy_dtype(stored)]
    outer, channels, inner = _layout(op, qtype)
    is_qcast = isinstance(op, quant.QCastOp)
    in_type, out_type = ("float", storage) if is_qcast else (storage, "float")
    params = _parameter_lines(qtype, channels, "float" if is_qcast else "double")
    body = _qcast_body(op, qtype, storage) if isinstance(op, quant.QCastOp) else _dcast_body()
    parallel = outer * channels > 1 and outer * channels * inner >= (1 << 16)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [
            *params,
            f"const {in_type} *restrict px = {em.ptr(op.operands[0])};",
            f"{out_type} *restrict po = {res[0]};",
            f"const long inner = {inner};",
        ]
        loop = [
            *(["IRC_PARFOR(schedule(static))"] if parallel else []),
            f"for (long oc = 0; oc < {outer * channels}; ++oc) {{",
            f"  const long c = oc % {channels};",
            "  const long base = oc * inner;",
            *("  " + line for line in body),
            "}",
        ]
        return block(describe(op), decls, loop)

    return Lowered(emit, snippets=("quant",))
