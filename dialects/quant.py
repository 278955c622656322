"""The `quant` dialect: uniform quantized element types and the casts between domains.

Types follow MLIR's `!quant.uniform` syntax:

* per-tensor ``!quant.uniform<i8:f32, 0.5:-3>`` (real = 0.5 * (stored + 3));
* per-axis ``!quant.uniform<i8:f32:0, {0.1, 0.2:4}>`` (one scale:zero-point per slice of
  dimension 0);
* an optional storage range narrows the stored values: ``!quant.uniform<i8<-127:127>:f32, 0.1>``.

Storage is i8, u8, i16 or i32 (`i` signed, `u` unsigned); the expressed type is a float type.

Ops:

* `quant.qcast` quantizes a float tensor with a rounding mode (TFLite rounds half away from
  zero, ONNX QuantizeLinear half to even);
* `quant.dcast` dequantizes;
* `quant.scast` reinterprets quantized values as their storage integers and back;
* `quant.rescale` is the single definition of TFLite's fixed-point requantization
  (docs/design.md §2):
  ``out = clamp(zp_out + round(multiplier * 2^(shift - 31) * (in - zp_in)))``, with TFLite's
  rounding (`double_round`: SaturatingRoundingDoublingHighMul then RoundingDivideByPOT) or the
  single-rounding variant (`single_round`).
"""

from __future__ import annotations

import functools
import math
import re
import struct
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I32,
    AnyFloat,
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    FloatData,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    Signedness,
    TensorType,
    i32,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from irc.dialects.enums import StringEnumSyntax

# ---- Types -------------------------------------------------------------------------------------

_STORAGE_RE = re.compile(r"([iu])([1-9][0-9]*)")
_STORAGE_WIDTHS = (8, 16, 32)


def format_float(value: float) -> str:
    """Print a float so that MLIR's lexer reads it back as a float (always with a `.`)."""
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        raise ValueError(f"{text} has no MLIR float literal")
    mantissa, sep, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{exponent}" if sep else mantissa


def _count(n: int, noun: str) -> str:
    """`1 scale`, `2 scales`: a count with its noun, for messages."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def storage_bounds(storage: IntegerType) -> tuple[int, int]:
    """The full value range of a storage integer type."""
    width = storage.width.data
    if storage.signedness.data == Signedness.UNSIGNED:
        return 0, 2**width - 1
    return -(2 ** (width - 1)), 2 ** (width - 1) - 1


@irdl_attr_definition
class UniformQuantizedType(ParametrizedAttribute, TypeAttribute):
    """A uniform (affine) quantized element type: ``real = scale * (stored - zero_point)``.

    Per-tensor: ``!quant.uniform<i8:f32, 0.5:-3>``. Per-axis:
    ``!quant.uniform<i8:f32:1, {0.5:-3, 0.25}>`` (a zero point of 0 is not printed).
    With a storage range: ``!quant.uniform<i8<-127:127>:f32, 0.02>``.
    """

    name = "quant.uniform"

    storage_type: IntegerType
    expressed_type: AnyFloat
    quantized_dimension: IntAttr | NoneAttr
    scales: ArrayAttr[FloatData]
    zero_points: ArrayAttr[IntAttr]
    storage_min: IntAttr | NoneAttr
    storage_max: IntAttr | NoneAttr

    @staticmethod
    def per_tensor(
        storage: IntegerType,
        expressed: AnyFloat,
        scale: float,
        zero_point: int = 0,
        storage_range: tuple[int, int] | None = None,
    ) -> UniformQuantizedType:
        """A per-tensor type with one scale and zero point."""
        lo, hi = (NoneAttr(), NoneAttr()) if storage_range is None else map(IntAttr, storage_range)
        return UniformQuantizedType(
            storage,
            expressed,
            NoneAttr(),
            ArrayAttr([FloatData(float(scale))]),
            ArrayAttr([IntAttr(int(zero_point))]),
            lo,
            hi,
        )

    @staticmethod
    def per_axis(
        storage: IntegerType,
        expressed: AnyFloat,
        axis: int,
        scales: Sequence[float],
        zero_points: Sequence[int] | None = None,
        storage_range: tuple[int, int] | None = None,
    ) -> UniformQuantizedType:
        """A per-axis type: one scale and zero point per slice along `axis`."""
        if zero_points is None:
            zero_points = [0] * len(scales)
        lo, hi = (NoneAttr(), NoneAttr()) if storage_range is None else map(IntAttr, storage_range)
        import numpy as np  # not at import: irc-opt parses and prints IR without numpy

        return UniformQuantizedType(
            storage,
            expressed,
            IntAttr(axis),
            _scales_attr(np.asarray(scales, dtype=np.float64).tobytes()),
            _zero_points_attr(np.asarray(zero_points, dtype=np.int64).tobytes()),
            lo,
            hi,
        )

    # ---- Accessors ----

    @property
    def is_per_axis(self) -> bool:
        return isinstance(self.quantized_dimension, IntAttr)

    @property
    def axis(self) -> int | None:
        """The quantized dimension of a per-axis type, None for per-tensor."""
        dim = self.quantized_dimension
        return dim.data if isinstance(dim, IntAttr) else None

    @property
    def scale_values(self) -> tuple[float, ...]:
        return tuple(s.data for s in self.scales.data)

    @property
    def zero_point_values(self) -> tuple[int, ...]:
        return tuple(z.data for z in self.zero_points.data)

    @property
    def is_signed(self) -> bool:
        return self.storage_type.signedness.data != Signedness.UNSIGNED

    @property
    def storage_width(self) -> int:
        return self.storage_type.width.data

    @property
    def storage_range(self) -> tuple[int, int]:
        """The range stored values may take: the explicit storage range or the type's."""
        lo, hi = storage_bounds(self.storage_type)
        if isinstance(self.storage_min, IntAttr):
            lo = self.storage_min.data
        if isinstance(self.storage_max, IntAttr):
            hi = self.storage_max.data
        return lo, hi

    def with_axis(self, axis: int) -> UniformQuantizedType:
        """The same per-axis type quantized along another dimension (after a transpose)."""
        return UniformQuantizedType(
            self.storage_type,
            self.expressed_type,
            IntAttr(axis),
            self.scales,
            self.zero_points,
            self.storage_min,
            self.storage_max,
        )

    # ---- Verification ----

    def verify(self) -> None:
        width = self.storage_type.width.data
        if width not in _STORAGE_WIDTHS:
            raise VerifyException(f"storage type must be 8, 16 or 32 bits wide, got {width}")
        if len(self.scales.data) != len(self.zero_points.data):
            raise VerifyException(
                f"got {_count(len(self.scales.data), 'scale')} but "
                f"{_count(len(self.zero_points.data), 'zero point')}"
            )
        if not self.is_per_axis and len(self.scales.data) != 1:
            raise VerifyException(
                f"a per-tensor type needs exactly one scale, got {len(self.scales.data)}"
            )
        if self.is_per_axis and not self.scales.data:
            raise VerifyException("a per-axis type needs at least one scale")
        if (axis := self.axis) is not None and axis < 0:
            raise VerifyException(f"quantized dimension must be non-negative, got {axis}")
        full_lo, full_hi = storage_bounds(self.storage_type)
        lo, hi = self.storage_range
        if not full_lo <= lo <= hi <= full_hi:
            raise VerifyException(
                f"storage range [{lo}, {hi}] is not within [{full_lo}, {full_hi}] of "
                f"{_storage_name(self.storage_type)}"
            )
        for scale in self.scale_values:
            if not (math.isfinite(scale) and scale > 0.0):
                raise VerifyException(f"scale must be positive and finite, got {scale}")
        for zp in self.zero_point_values:
            if not lo <= zp <= hi:
                raise VerifyException(f"zero point {zp} is out of the storage range [{lo}, {hi}]")

    # ---- Syntax ----

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            ident = parser.parse_identifier(" for quantized storage type")
            if (match := _STORAGE_RE.fullmatch(ident)) is None:
                parser.raise_error("expected a storage type such as i8 or u8", pos, parser.pos)
            signedness = Signedness.UNSIGNED if match.group(1) == "u" else Signedness.SIGNLESS
            storage = IntegerType(int(match.group(2)), signedness)
            storage_min: IntAttr | NoneAttr = NoneAttr()
            storage_max: IntAttr | NoneAttr = NoneAttr()
            if parser.parse_optional_punctuation("<") is not None:
                storage_min = IntAttr(parser.parse_integer(allow_boolean=False))
                parser.parse_punctuation(":")
                storage_max = IntAttr(parser.parse_integer(allow_boolean=False))
                parser.parse_punctuation(">")
            parser.parse_punctuation(":")
            expressed = parser.parse_type()
            axis: IntAttr | NoneAttr = NoneAttr()
            if parser.parse_optional_punctuation(":") is not None:
                axis = IntAttr(parser.parse_integer(allow_boolean=False, allow_negative=False))
            parser.parse_punctuation(",")

            def parse_pair() -> tuple[FloatData, IntAttr]:
                scale = parser.parse_number()
                zero_point = 0
                if parser.parse_optional_punctuation(":") is not None:
                    zero_point = parser.parse_integer(allow_boolean=False)
                return FloatData(float(scale)), IntAttr(zero_point)

            if isinstance(axis, IntAttr):
                pairs = parser.parse_comma_separated_list(parser.Delimiter.BRACES, parse_pair)
            else:
                pairs = [parse_pair()]
        return (
            storage,
            expressed,
            axis,
            ArrayAttr([p[0] for p in pairs]),
            ArrayAttr([p[1] for p in pairs]),
            storage_min,
            storage_max,
        )

    def print_parameters(self, printer: Printer) -> None:
        def print_pair(pair: tuple[FloatData, IntAttr]) -> None:
            scale, zero_point = pair
            printer.print_string(format_float(scale.data))
            if zero_point.data != 0:
                printer.print_string(f":{zero_point.data}")

        with printer.in_angle_brackets():
            printer.print_string(_storage_name(self.storage_type))
            if isinstance(self.storage_min, IntAttr) or isinstance(self.storage_max, IntAttr):
                lo, hi = self.storage_range
                printer.print_string(f"<{lo}:{hi}>")
            printer.print_string(":")
            printer.print_attribute(self.expressed_type)
            pairs = list(zip(self.scales.data, self.zero_points.data))
            if (axis := self.axis) is not None:
                printer.print_string(f":{axis}, ")
                with printer.in_braces():
                    printer.print_list(pairs, print_pair)
            else:
                printer.print_string(", ")
                print_pair(pairs[0])


def _storage_name(storage: IntegerType) -> str:
    prefix = "u" if storage.signedness.data == Signedness.UNSIGNED else "i"
    return f"{prefix}{storage.width.data}"


def quantized_element(type_: Attribute) -> UniformQuantizedType | None:
    """The quantized element type of a tensor type, or None when it is not quantized."""
    if isinstance(type_, TensorType) and isinstance(type_.element_type, UniformQuantizedType):
        return type_.element_type
    return None


def verify_quantized_axis(tensor: TensorType, what: str) -> None:
    """Check that a per-axis element type quantizes an existing dimension of matching size."""
    qtype = quantized_element(tensor)
    if qtype is None or (axis := qtype.axis) is None:
        return
    shape = tensor.get_shape()
    if axis >= len(shape):
        raise VerifyException(
            f"{what} is quantized along dimension {axis} but has rank {len(shape)}"
        )
    if shape[axis] >= 0 and shape[axis] != len(qtype.scales.data):
        raise VerifyException(
            f"{what} has {_count(shape[axis], 'slice')} along quantized dimension {axis} but "
            f"its type has {_count(len(qtype.scales.data), 'scale')}"
        )


# ---- Ops ---------------------------------------------------------------------------------------


class Rounding(StrEnum):
    """How `quant.qcast` rounds `real / scale` to an integer."""

    HALF_AWAY_FROM_ZERO = "half_away_from_zero"
    """TFLite's QUANTIZE (the default)."""
    HALF_TO_EVEN = "half_to_even"
    """ONNX QuantizeLinear."""


class RescaleRounding(StrEnum):
    """How `quant.rescale` rounds its fixed-point product."""

    DOUBLE_ROUND = "double_round"
    """TFLite's MultiplyByQuantizedMultiplier (the default)."""
    SINGLE_ROUND = "single_round"
    """TFLITE_SINGLE_ROUNDING."""


@irdl_attr_definition
class RoundingAttr(
    StringEnumSyntax[Rounding], EnumAttribute[Rounding], SpacedOpaqueSyntaxAttribute
):
    """`rounding = "half_to_even"` of `quant.qcast` (generic form `#quant<rounding "...">`)."""

    name = "quant.rounding"
    label = "rounding"


@irdl_attr_definition
class RescaleRoundingAttr(
    StringEnumSyntax[RescaleRounding], EnumAttribute[RescaleRounding], SpacedOpaqueSyntaxAttribute
):
    """`rounding = "single_round"` of `quant.rescale` (`#quant<rescale_rounding "...">`)."""

    name = "quant.rescale_rounding"
    label = "rounding"


ROUNDING_MODES = RoundingAttr.allowed()
RESCALE_ROUNDINGS = RescaleRoundingAttr.allowed()

RESCALE_ROUNDING = "irc.rescale_rounding"
"""Discardable attribute of a quantized op: the rounding of the `quant.rescale`s that
requantize it. Absent: TFLite's `double_round`. ONNX QOperator ops and fused QDQ islands
carry `single_round`: onnxruntime requantizes with one rounding (a float multiply), and
two roundings differ from it by one step on a fraction of the values, which deep networks
amplify."""
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


@functools.lru_cache(maxsize=512)
def _scales_attr(packed: bytes) -> ArrayAttr[FloatData]:
    """The per-axis `scales` parameter of float64 values packed as bytes (bytes, not floats,
    key the cache: -0.0 and NaNs stay distinct). Cached: an importer asks for the type of a
    weight tensor several times, and a type has up to thousands of scales."""
    import numpy as np

    return ArrayAttr([FloatData(s) for s in np.frombuffer(packed, np.float64).tolist()])


@functools.lru_cache(maxsize=512)
def _zero_points_attr(packed: bytes) -> ArrayAttr[IntAttr]:
    """The per-axis `zero_points` parameter of int64 values packed as bytes (cached)."""
    import numpy as np

    return ArrayAttr([IntAttr(z) for z in np.frombuffer(packed, np.int64).tolist()])


def _i32_array(what: str, values: Sequence[int]) -> DenseArrayBase:
    """`array<i32: ...>` of `values`, built from bytes (one `struct.pack`, not one Python
    normalisation per element: per-channel rescales have thousands). Raises `ValueError`
    for a value outside i32, which `DenseArrayBase.from_list` would silently wrap."""
    for value in values:
        if not _I32_MIN <= value <= _I32_MAX:
            raise ValueError(f"{what} {value} does not fit in i32")
    data = struct.pack(f"<{len(values)}i", *(int(value) for value in values))
    return DenseArrayBase(i32, BytesAttr(data))


def _tensor(value: SSAValue | Attribute) -> TensorType:
    type_ = value.type if isinstance(value, SSAValue) else value
    if not isinstance(type_, TensorType):
        raise VerifyException(f"expected a ranked tensor, got {type_}")
    return type_


def _shape_text(shape: Sequence[int]) -> str:
    """`[?, 4]`: dynamic dimensions as `?` rather than xDSL's internal marker value."""
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def _verify_same_shape(source: TensorType, result: TensorType) -> None:
    if source.get_shape() != result.get_shape():
        raise VerifyException(
            f"result shape {_shape_text(result.get_shape())} differs from input shape "
            f"{_shape_text(source.get_shape())}"
        )


@irdl_custom_directive
class I32Array(CustomDirective):
    """`[1, -2]`: an `array<i32: ...>` property written as a list; a value outside i32 is a
    parse error naming the property (`multiplier 2147483648 does not fit in i32`)."""

    values: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        def parse_i32() -> int:
            start = parser.pos
            value = parser.parse_integer(allow_boolean=False)
            if not _I32_MIN <= value <= _I32_MAX:
                parser.raise_error(
                    f"{self.values.name} {value} does not fit in i32", start, parser.pos
                )
            return value

        values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_i32)
        self.values.set(state, _i32_array(self.values.name, values))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.values.get(op)
        assert isinstance(attr, DenseArrayBase)
        state.print_whitespace(printer)
        printer.print_string(f"[{', '.join(str(int(v)) for v in attr.get_values())}]")


class _CastOp(IRDLOperation):
    """Shared syntax of the casts: ``%r = quant.xcast %x : tensor<..> to tensor<..>``."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input) `to` type($output)"


@irdl_op_definition
class QCastOp(_CastOp):
    """Quantize a float tensor: ``stored = clamp(round(real / scale) + zero_point)``.

    `rounding` is `half_away_from_zero` (TFLite's QUANTIZE, the default) or `half_to_even`
    (ONNX QuantizeLinear). Values saturate to the storage range of the result type.

    Example:
    ```mlir
    %q = quant.qcast %x : tensor<1x4xf32> to tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>>
    %r = quant.qcast %x rounding = "half_to_even"
        : tensor<1x4xf32> to tensor<1x4x!quant.uniform<u8:f32, 0.1:128>>
    ```
    """

    name = "quant.qcast"

    rounding = prop_def(RoundingAttr, default_value=RoundingAttr(Rounding.HALF_AWAY_FROM_ZERO))

    assembly_format = (
        "$input (`rounding` `=` $rounding^)? attr-dict `:` type($input) `to` type($output)"
    )

    def __init__(
        self,
        input: SSAValue,
        result_type: Attribute,
        rounding: str = Rounding.HALF_AWAY_FROM_ZERO,
    ):
        """`rounding` outside `Rounding` raises `VerifyException`."""
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"rounding": RoundingAttr.from_str(rounding)},
        )

    def verify_(self) -> None:
        source, result = _tensor(self.input), _tensor(self.output)
        if quantized_element(source) is not None or not isinstance(source.element_type, AnyFloat):
            raise VerifyException(f"expected a float input, got {source.element_type}")
        qtype = quantized_element(result)
        if qtype is None:
            raise VerifyException(f"expected a quantized result, got {result.element_type}")
        if qtype.expressed_type != source.element_type:
            raise VerifyException(
                f"result expresses {qtype.expressed_type} but the input is {source.element_type}"
            )
        _verify_same_shape(source, result)
        verify_quantized_axis(result, "result")


@irdl_op_definition
class DCastOp(_CastOp):
    """Dequantize: ``real = scale * (stored - zero_point)`` in the expressed type.

    Example:
    ```mlir
    %d = quant.dcast %q : tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x4xf32>
    ```
    """

    name = "quant.dcast"

    def __init__(self, input: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            source = _tensor(input)
            qtype = quantized_element(source)
            if qtype is None:
                raise ValueError("dcast needs a quantized input to infer its result type")
            result_type = TensorType(qtype.expressed_type, source.get_shape())
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        source, result = _tensor(self.input), _tensor(self.output)
        qtype = quantized_element(source)
        if qtype is None:
            raise VerifyException(f"expected a quantized input, got {source.element_type}")
        if result.element_type != qtype.expressed_type:
            raise VerifyException(
                f"result element type must be the expressed type {qtype.expressed_type}, "
                f"got {result.element_type}"
            )
        _verify_same_shape(source, result)
        verify_quantized_axis(source, "input")


@irdl_op_definition
class SCastOp(_CastOp):
    """Storage cast: reinterpret quantized values as their storage integers, or back.

    No value changes: ``stored`` is carried as is. The integer side must be the storage
    type of the quantized side (`i8` for `!quant.uniform<i8:...>`, `ui8` or `i8` for `u8`
    storage). `lower-quantized` uses it to enter and leave integer arithmetic (MLIR's
    `quant.scast`).

    Example:
    ```mlir
    %s = quant.scast %q : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4xi8>
    %q2 = quant.scast %s : tensor<4xi8> to tensor<4x!quant.uniform<i8:f32, 0.25>>
    ```
    """

    name = "quant.scast"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        source, result = _tensor(self.input), _tensor(self.output)
        _verify_same_shape(source, result)
        qsource, qresult = quantized_element(source), quantized_element(result)
        if (qsource is None) == (qresult is None):
            raise VerifyException(
                f"expected one quantized and one integer side, got {source.element_type} "
                f"and {result.element_type}"
            )
        qtype = qsource or qresult
        other = result.element_type if qsource is not None else source.element_type
        assert qtype is not None
        if not isinstance(other, IntegerType) or other.width != qtype.storage_type.width:
            raise VerifyException(
                f"integer side must be the {qtype.storage_width}-bit storage type of "
                f"{qtype}, got {other}"
            )
        verify_quantized_axis(source if qsource is not None else result, "quantized side")


def storage_tensor_type(type_: TensorType) -> TensorType:
    """The integer tensor type that stores a quantized tensor type (itself if not quantized)."""
    qtype = quantized_element(type_)
    if qtype is None:
        return type_
    return TensorType(qtype.storage_type, type_.get_shape())


def _integer_storage(type_: TensorType, what: str) -> tuple[int, tuple[int, int]]:
    """Zero point and value range of a rescale operand: quantized, or a plain integer tensor."""
    element = type_.element_type
    if isinstance(element, UniformQuantizedType):
        if element.is_per_axis:
            raise VerifyException(f"{what} must be per-tensor quantized")
        return element.zero_point_values[0], element.storage_range
    if isinstance(element, IntegerType):
        return 0, storage_bounds(element)
    raise VerifyException(f"{what} must be an integer or quantized tensor, got {element}")


@irdl_op_definition
class RescaleOp(IRDLOperation):
    """Requantize integers with TFLite's fixed-point arithmetic (TOSA's `rescale`).

    ``out = clamp(zp_out + apply(multiplier, shift, in - zp_in))`` where `apply` multiplies by
    ``multiplier * 2^(shift - 31)`` with 32-bit `multiplier` in [0, 2^31) (normally [2^30, 2^31)
    as QuantizeMultiplier makes it; TFLite's folded mean multipliers are smaller) and `shift`
    in [-31, 30]. Zero points come from the operand and result types (0 for plain integer
    tensors such as i32 accumulators); the clamp is the result's storage range.

    `rounding`: `double_round` is TFLite's MultiplyByQuantizedMultiplier (rounding doubling
    high multiply, then rounding right shift, ties away from zero); `single_round` is the
    single-rounding variant (TFLITE_SINGLE_ROUNDING: one rounding, ties upward).
    Per-channel rescale gives one multiplier/shift per slice along `axis`.

    Example:
    ```mlir
    %r = quant.rescale %acc multiplier = [1518500250] shift = [-7]
        : tensor<1x8xi32> to tensor<1x8x!quant.uniform<i8:f32, 0.05:-4>>
    ```
    """

    name = "quant.rescale"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    multiplier = prop_def(DenseArrayBase.constr(i32))
    shift = prop_def(DenseArrayBase.constr(i32))
    axis = opt_prop_def(IntegerAttr[I32])
    rounding = prop_def(
        RescaleRoundingAttr, default_value=RescaleRoundingAttr(RescaleRounding.DOUBLE_ROUND)
    )
    traits = traits_def(Pure())

    custom_directives = (I32Array,)
    assembly_format = (
        "$input `multiplier` `=` custom<I32Array>($multiplier) `shift` `=` "
        "custom<I32Array>($shift) (`axis` `=` $axis^)? (`rounding` `=` $rounding^)? attr-dict "
        "`:` type($input) `to` type($output)"
    )

    def __init__(
        self,
        input: SSAValue,
        result_type: Attribute,
        multiplier: Sequence[int],
        shift: Sequence[int],
        axis: int | None = None,
        rounding: str = RescaleRounding.DOUBLE_ROUND,
    ):
        """`rounding` outside `RescaleRounding` raises `VerifyException`; a multiplier or
        shift outside i32 raises `ValueError`."""
        properties: dict[str, Attribute] = {
            "multiplier": _i32_array("multiplier", multiplier),
            "shift": _i32_array("shift", shift),
            "rounding": RescaleRoundingAttr.from_str(rounding),
        }
        if axis is not None:
            properties["axis"] = IntegerAttr(axis, i32)
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    @property
    def multiplier_values(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.multiplier.get_values())

    @property
    def shift_values(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.shift.get_values())

    def verify_(self) -> None:
        source, result = _tensor(self.input), _tensor(self.output)
        _integer_storage(source, "input")
        _integer_storage(result, "result")
        _verify_same_shape(source, result)
        multipliers, shifts = self.multiplier_values, self.shift_values
        if len(multipliers) != len(shifts):
            raise VerifyException(
                f"got {_count(len(multipliers), 'multiplier')} but {_count(len(shifts), 'shift')}"
            )
        if not multipliers:
            raise VerifyException("expected at least one multiplier")
        for m in multipliers:
            if not 0 <= m < 2**31:
                raise VerifyException(f"multiplier {m} is not in [0, 2^31)")
        for s in shifts:
            if not -31 <= s <= 30:
                raise VerifyException(f"shift {s} is out of range [-31, 30]")
        if self.axis is None:
            if len(multipliers) != 1:
                raise VerifyException(
                    f"per-channel rescale needs an axis, got {len(multipliers)} multipliers"
                )
            return
        axis = self.axis.value.data
        shape = source.get_shape()
        if not 0 <= axis < len(shape):
            raise VerifyException(f"axis {axis} is out of range for rank {len(shape)}")
        if shape[axis] >= 0 and len(multipliers) not in (1, shape[axis]):
            expected = "1 multiplier" if shape[axis] == 1 else f"1 or {shape[axis]} multipliers"
            raise VerifyException(
                f"expected {expected} along axis {axis} of size {shape[axis]}, "
                f"got {len(multipliers)}"
            )


Quant = Dialect(
    "quant",
    [QCastOp, DCastOp, SCastOp, RescaleOp],
    [UniformQuantizedType, RoundingAttr, RescaleRoundingAttr],
)
