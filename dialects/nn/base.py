"""Shared machinery of the `nn` dialect: attribute kinds, the common op syntax, type helpers.

Every `nn` op prints in one readable form::

    %r = nn.<op> %a, %b key = value key2 = [1, 2] {extra attrs} : type(%a), type(%b) -> type(%r)

Properties appear as ``name = value`` in declaration order; a property equal to its default
(or an absent optional one) is not printed. How a value reads and prints is the property's
*kind*, declared with the property by the helper that defines it (`ints_prop`, `float_prop`,
`layout_prop`, ... at the end of this module); `layout` and `activation` are enum attributes
(`irc.dialects.nn.attrs`) whose values read as string literals. The parser also accepts the
operand types in parentheses, ``: (t1, t2) -> t3``, the way MLIR's functional types read.
Generic form (``"nn.add"(%a, %b) <{...}> : (...) -> ...``) round-trips as for any xDSL op.

Each op implements `infer_shapes()` (result shapes from operand shapes and properties, with
``-1`` for dynamic dimensions) and `verify_element_types()`; the shared `verify_` checks the
declared result shapes against the inferred ones, so the verifier and `infer-shapes` share one
definition of every shape rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, ClassVar, Literal, Self, TypeGuard, TypeVar, cast
from weakref import WeakKeyDictionary

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    AnyFloat,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    OptOperandDef,
    OptPropertyDef,
    VarOperandDef,
    VarResultDef,
    opt_prop_def,
    prop_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from irc.dialects.nn.attrs import Activation, ActivationAttr, Layout, LayoutAttr
from irc.dialects.quant import UniformQuantizedType, format_float, verify_quantized_axis

Shape = tuple[int, ...]
"""A tensor shape; a negative size (`DYNAMIC`) marks a dynamic dimension."""

DYNAMIC = DYNAMIC_INDEX
"""xDSL's (and MLIR's) encoding of `?` in a shape."""

LAYOUTS = tuple(layout.value for layout in Layout)
ACTIVATIONS = tuple(activation.value for activation in Activation)

# ---- Property kinds ----------------------------------------------------------------------------

EnumKind = type[LayoutAttr] | type[ActivationAttr]
"""An enum property's attribute class: its value is a string literal of the enum."""

PropKind = Literal["ints", "floats", "int", "float", "bool", "str", "attr"] | EnumKind
"""The value syntax of a property, declared with the property (`ints_prop`, `layout_prop`,
...): ``[1, 2]``, ``[0.5]``, ``3``, ``0.5``, ``true``, ``"text"``, an attribute, or an enum."""

_DECLARED_KINDS: WeakKeyDictionary[Any, PropKind] = WeakKeyDictionary()
"""Property field -> its kind, from the helper that declared it until `NNOp` collects it."""

_CLASS_KINDS: WeakKeyDictionary[type, dict[str, PropKind]] = WeakKeyDictionary()
"""`nn` op class -> the kinds of the properties it defines itself."""

_FieldT = TypeVar("_FieldT")


def declare_prop(kind: PropKind, field: _FieldT) -> _FieldT:
    """Declare the kind of a property field (what `prop_def` returns) of an `nn` op.

    The `*_prop` helpers below call it; an `nn` op class collects the kinds of its fields
    when it is defined, so every property of an `nn` op has a declared kind.
    """
    _DECLARED_KINDS[field] = kind
    return field


def print_prop_value(printer: Printer, kind: PropKind, value: Attribute) -> None:
    """Print a property value in the custom syntax of its kind."""
    if not isinstance(kind, str):
        assert isinstance(value, kind)
        value.print_parameter(printer)
        return
    match kind:
        case "ints":
            assert isinstance(value, DenseArrayBase)
            printer.print_string(f"[{', '.join(str(int(v)) for v in value.get_values())}]")
        case "floats":
            assert isinstance(value, DenseArrayBase)
            texts = (_format_prop_float(v) for v in value.get_values())
            printer.print_string(f"[{', '.join(texts)}]")
        case "int":
            assert isinstance(value, IntegerAttr)
            printer.print_string(str(value.value.data))
        case "float":
            assert isinstance(value, FloatAttr)
            printer.print_string(_format_prop_float(value.value.data))
        case "bool":
            assert isinstance(value, IntegerAttr)
            printer.print_string("true" if value.value.data else "false")
        case "str":
            assert isinstance(value, StringAttr)
            printer.print_string_literal(value.data)
        case "attr":
            printer.print_attribute(value)


def _format_prop_float(value: float) -> str:
    """A float property's text: `format_float`, or `inf`, `-inf`, `nan`, which have no MLIR
    float literal (a pad value may be any of them)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return format_float(value)


def _parse_prop_float(parser: Parser) -> float:
    """A float property written by `_format_prop_float`."""
    if parser.parse_optional_keyword("nan") is not None:
        return math.nan
    negative = parser.parse_optional_punctuation("-") is not None
    if parser.parse_optional_keyword("inf") is not None:
        return -math.inf if negative else math.inf
    value = float(parser.parse_number())
    return -value if negative else value


def parse_prop_value(parser: Parser, kind: PropKind) -> Attribute:
    """Parse a property value written in the custom syntax of its kind."""
    if not isinstance(kind, str):
        return kind.parse_value(parser)
    match kind:
        case "ints":
            values = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )
            return DenseArrayBase.from_list(i64, values)
        case "floats":
            values = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: _parse_prop_float(parser)
            )
            return DenseArrayBase.from_list(f64, values)
        case "int":
            return IntegerAttr(parser.parse_integer(allow_boolean=False), i64)
        case "float":
            return FloatAttr(_parse_prop_float(parser), f64)
        case "bool":
            return BoolAttr.from_bool(parser.parse_boolean())
        case "str":
            return StringAttr(parser.parse_str_literal())
        case "attr":
            return parser.parse_attribute()


# ---- Property constructors (Python values -> attributes) ---------------------------------------


def to_prop_attr(kind: PropKind, value: object) -> Attribute:
    """Convert a Python value to the attribute of a property kind (attributes pass through,
    except that a `StringAttr` becomes the enum attribute of an enum property).

    An enum value outside the enum raises `VerifyException`."""
    if not isinstance(kind, str):
        if isinstance(value, StringAttr):
            return kind.from_str(value.data)
        return value if isinstance(value, Attribute) else kind.from_str(str(value))
    if isinstance(value, Attribute):
        return value
    # A builder's keyword argument, whatever its caller passed: the converters check it
    # (int() / float() raise on a value of the wrong kind).
    given: Any = value
    match kind:
        case "ints":
            return ints_attr(given)
        case "floats":
            return floats_attr(given)
        case "int":
            return int_attr(given)
        case "float":
            return float_attr(given)
        case "bool":
            return bool_attr(given)
        case "str":
            return StringAttr(str(value))
        case "attr":
            raise TypeError(f"expected an attribute, got {value!r}")


def _as_list(group: SSAValue | Sequence[SSAValue]) -> list[SSAValue]:
    return [group] if isinstance(group, SSAValue) else list(group)


def ints_attr(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def floats_attr(values: Sequence[float]) -> DenseArrayBase:
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def float_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def bool_attr(value: bool) -> IntegerAttr:
    return BoolAttr.from_bool(bool(value))


def ints_of(attr: Attribute) -> tuple[int, ...]:
    """The values of an integer array property (a `TypeError` for any other attribute: the
    verifier guarantees the kind of a declared property, so this is a programming error)."""
    if not isinstance(attr, DenseArrayBase):
        raise TypeError(f"expected an integer array property, got {attr}")
    return tuple(int(v) for v in cast(DenseArrayBase[IntegerType], attr).get_values())


def floats_of(attr: DenseArrayBase) -> tuple[float, ...]:
    """The values of a float array property."""
    return tuple(float(v) for v in cast(DenseArrayBase[AnyFloat], attr).get_values())


# ---- Type helpers ------------------------------------------------------------------------------


def tensor_type(value: SSAValue | Attribute, what: str = "operand") -> TensorType:
    """The ranked tensor type of a value, or a verify error naming `what`."""
    type_ = value.type if isinstance(value, SSAValue) else value
    if not isinstance(type_, TensorType):
        raise VerifyException(f"expected {what} to be a ranked tensor, got {type_}")
    return type_


def shape_of(value: SSAValue | Attribute, what: str = "operand") -> Shape:
    return tensor_type(value, what).get_shape()


def element_of(value: SSAValue | Attribute) -> Attribute:
    return tensor_type(value).element_type


def is_quantized(element: Attribute) -> TypeGuard[UniformQuantizedType]:
    return isinstance(element, UniformQuantizedType)


def is_float(element: Attribute) -> TypeGuard[AnyFloat]:
    return isinstance(element, AnyFloat)


def is_integer(element: Attribute) -> TypeGuard[IntegerType]:
    return isinstance(element, IntegerType)


def format_shape(shape: Sequence[int]) -> str:
    return "x".join("?" if d < 0 else str(d) for d in shape) or "scalar"


def dims_compatible(a: int, b: int) -> bool:
    return a < 0 or b < 0 or a == b


def merge_dims(a: int, b: int) -> int:
    """The more static of two compatible dimensions."""
    return b if a < 0 else a


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """Numpy broadcasting with dynamic dimensions; raises VerifyException when impossible."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out: list[int] = []
    for da, db in zip(pa, pb):
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da < 0 or db < 0:
            out.append(merge_dims(da, db))
        elif da == db:
            out.append(da)
        else:
            raise VerifyException(
                f"shapes {format_shape(a)} and {format_shape(b)} are not broadcastable"
            )
    return tuple(out)


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """Resolve a negative axis; raise a VerifyException when it is out of range."""
    if not -rank <= axis < rank:
        raise VerifyException(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def product(dims: Sequence[int]) -> int:
    """Number of elements, or -1 when a dimension is dynamic."""
    total = 1
    for d in dims:
        if d < 0:
            return DYNAMIC
        total *= d
    return total


def check_rank(shape: Shape, rank: int, what: str) -> None:
    if len(shape) != rank:
        raise VerifyException(f"expected {what} of rank {rank}, got rank {len(shape)}")


def check_length(values: Sequence[object], length: int, what: str) -> None:
    if len(values) != length:
        raise VerifyException(f"expected {length} values in {what}, got {len(values)}")


def check_positive(values: Sequence[int], what: str) -> None:
    if any(v <= 0 for v in values):
        raise VerifyException(f"{what} must be positive, got {list(values)}")


def check_non_negative(values: Sequence[int], what: str) -> None:
    if any(v < 0 for v in values):
        raise VerifyException(f"{what} must be non-negative, got {list(values)}")


def check_one_of(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise VerifyException(f"{what} must be one of {', '.join(allowed)}, got '{value}'")


def check_same_float_or_quantized(
    values: Sequence[tuple[str, Attribute]], *, allow_quantized: bool, allow_integer: bool = False
) -> None:
    """All elements are one float type, or all quantized with one storage type, or integers.

    `values` pairs a name used in messages with an element type.
    """
    (first_name, first), *rest = values
    if is_quantized(first):
        if not allow_quantized:
            raise VerifyException(f"{first_name} must not be quantized, got {first}")
        assert isinstance(first, UniformQuantizedType)
        for name, element in rest:
            if not isinstance(element, UniformQuantizedType):
                raise VerifyException(f"{name} must be quantized like {first_name}, got {element}")
            if element.storage_type != first.storage_type:
                raise VerifyException(
                    f"{name} stores {element.storage_type} but {first_name} stores "
                    f"{first.storage_type}"
                )
        return
    if is_integer(first) and not allow_integer:
        raise VerifyException(f"{first_name} must be a float or quantized tensor, got {first}")
    if not (is_float(first) or is_integer(first)):
        raise VerifyException(f"{first_name} has unsupported element type {first}")
    for name, element in rest:
        if element != first:
            raise VerifyException(
                f"{name} element type {element} differs from {first_name} element type {first}"
            )


# ---- The base class of every nn op --------------------------------------------------------------


class NNOp(IRDLOperation):
    """Base of `nn` ops: shared custom syntax, shape inference hook and verifier.

    Subclasses implement `infer_shapes()` and, when they differ from "all operands and results
    share one float element type", `verify_element_types()`.
    """

    ACCEPTS_QUANTIZED: ClassVar[bool] = True
    """Whether the op takes quantized tensors (TFLite has an int8 kernel for it)."""

    ACCEPTS_INTEGER: ClassVar[bool] = False
    """Whether the op takes plain integer tensors (shape arithmetic, lowered int8 math)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Collect the declared kinds of the properties this class defines."""
        super().__init_subclass__(**kwargs)
        kinds: dict[str, PropKind] = {}
        for name, field in list(vars(cls).items()):
            try:
                kind = _DECLARED_KINDS.get(field)
            except TypeError:  # not weakly referable, so not a property field
                continue
            if kind is not None:
                kinds[name] = kind
        _CLASS_KINDS[cls] = kinds

    @classmethod
    def property_kinds(cls) -> dict[str, PropKind]:
        """The declared kind of every property of the op (inherited ones included)."""
        kinds: dict[str, PropKind] = {}
        for klass in reversed(cls.__mro__):
            kinds.update(_CLASS_KINDS.get(klass, {}))
        return kinds

    # ---- Hooks ----

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        """Result shapes implied by operand shapes and properties (negative: dynamic).

        Raises VerifyException with a precise message when the operands are inconsistent.
        The single definition of the op's shape rule: used by the verifier, `infer-shapes`
        and the `make` builder.
        """
        raise NotImplementedError(f"{cls.name} does not define its shape rule")

    def infer_shapes(self) -> list[Shape]:
        """Result shapes of this op, from its operands and properties."""
        return self.result_shapes([shape_of(o) for o in self.operands], self.all_properties())

    def all_properties(self) -> dict[str, Attribute]:
        """Properties with the defaults of absent ones filled in."""
        props = dict(self.properties)
        for name, _, default, _ in self._prop_kinds():
            if name not in props and default is not None:
                props[name] = default
        return props

    @classmethod
    def make(
        cls,
        *operands: SSAValue | Sequence[SSAValue] | None,
        result_elements: Sequence[Attribute] | Attribute | None = None,
        **props: object,
    ) -> Self:
        """Build the op with inferred result types (the builder importers and passes use).

        `operands` follow the op's operand definitions (None for an absent optional operand,
        a list for a variadic one); `props` are Python values (lists, ints, floats, bools,
        strings) keyed by property name; `result_elements` defaults to the element type of the
        first operand (quantized results must say theirs).
        """
        kinds: dict[str, PropKind] = {name: kind for name, kind, _, _ in cls._prop_kinds()}
        properties: dict[str, Attribute] = {}
        for name, value in props.items():
            if name not in kinds:
                raise TypeError(f"{cls.name} has no property '{name}'")
            if value is not None:
                properties[name] = to_prop_attr(kinds[name], value)
        flat = [v for group in operands if group is not None for v in _as_list(group)]
        full = dict(properties)
        for name, _, default, _ in cls._prop_kinds():
            if name not in full and default is not None:
                full[name] = default
        shapes = cls.result_shapes([shape_of(v) for v in flat], full)
        if result_elements is None:
            if not flat:
                raise TypeError(f"{cls.name} has no operands: pass result_elements")
            result_elements = element_of(flat[0])
        if isinstance(result_elements, Attribute):
            result_elements = [result_elements] * len(shapes)
        result_types = [
            TensorType(e, [d if d >= 0 else DYNAMIC for d in s])
            for e, s in zip(result_elements, shapes, strict=True)
        ]
        return cls.build(
            operands=list(operands),
            result_types=cls._group_results(result_types),
            properties=properties,
        )

    def verify_element_types(self) -> None:
        """Default: every tensor operand and result has the same float or quantized family."""
        named = [(f"operand #{i}", element_of(v)) for i, v in enumerate(self.operands)]
        named += [(f"result #{i}", element_of(r)) for i, r in enumerate(self.results)]
        check_same_float_or_quantized(
            named, allow_quantized=self.ACCEPTS_QUANTIZED, allow_integer=self.ACCEPTS_INTEGER
        )

    def verify_(self) -> None:
        for i, operand in enumerate(self.operands):
            verify_quantized_axis(tensor_type(operand, f"operand #{i}"), f"operand #{i}")
        for i, result in enumerate(self.results):
            verify_quantized_axis(tensor_type(result, f"result #{i}"), f"result #{i}")
        shapes = self.infer_shapes()
        if len(shapes) != len(self.results):
            raise VerifyException(f"expected {len(shapes)} results, got {len(self.results)}")
        for i, (result, expected) in enumerate(zip(self.results, shapes)):
            declared = shape_of(result)
            if len(declared) != len(expected) or not all(
                dims_compatible(a, b) for a, b in zip(declared, expected)
            ):
                label = "result" if len(self.results) == 1 else f"result #{i}"
                raise VerifyException(
                    f"inferred {label} shape {format_shape(expected)} is incompatible with "
                    f"declared shape {format_shape(declared)}"
                )
        self.verify_element_types()

    # ---- Syntax ----

    @classmethod
    @cache
    def _prop_kinds(cls) -> tuple[tuple[str, PropKind, Attribute | None, bool], ...]:
        """(name, kind, default, optional) of every property, in declaration order."""
        definition = cls.get_irdl_definition()
        kinds = cls.property_kinds()
        undeclared = [name for name in definition.properties if name not in kinds]
        if undeclared:
            raise TypeError(
                f"{cls.name}: properties {undeclared} have no declared kind (define them with "
                "the *_prop helpers of irc.dialects.nn.base)"
            )
        return tuple(
            (
                name,
                kinds[name],
                prop.default_value,
                isinstance(prop, OptPropertyDef),
            )
            for name, prop in definition.properties.items()
        )

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        for name, kind, default, _ in self._prop_kinds():
            value = self.properties.get(name)
            if value is None or value == default:
                continue
            printer.print_string(f" {name} = ")
            print_prop_value(printer, kind, value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if self.operands:
            printer.print_list((v.type for v in self.operands), printer.print_attribute)
            printer.print_string(" -> ")
        printer.print_list(self.result_types, printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> NNOp:
        unresolved: list[UnresolvedOperand] = []
        if (first := parser.parse_optional_unresolved_operand()) is not None:
            unresolved.append(first)
            while parser.parse_optional_punctuation(",") is not None:
                unresolved.append(parser.parse_unresolved_operand())
        kinds: dict[str, PropKind] = {name: kind for name, kind, _, _ in cls._prop_kinds()}
        properties: dict[str, Attribute] = {}
        while True:
            pos = parser.pos
            if (name := parser.parse_optional_identifier()) is None:
                break
            if name not in kinds:
                parser.raise_error(
                    f"'{cls.name}' has no property '{name}' (expected one of: "
                    f"{', '.join(kinds) or 'none'})",
                    pos,
                    parser.pos,
                )
            if name in properties:
                parser.raise_error(f"property '{name}' is given twice", pos, parser.pos)
            parser.parse_punctuation("=")
            properties[name] = parse_prop_value(parser, kinds[name])
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operand_types: list[Attribute] = []
        if unresolved:
            if parser.parse_optional_punctuation("(") is not None:
                operand_types = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, parser.parse_type
                )
                parser.parse_punctuation(")")
            else:
                operand_types = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, parser.parse_type
                )
            parser.parse_punctuation("->")
        types_pos = parser.pos
        result_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        result_defs = [d for _, d in cls.get_irdl_definition().results]
        if not any(isinstance(d, VarResultDef) for d in result_defs) and len(result_types) != len(
            result_defs
        ):
            parser.raise_error(
                f"expected {len(result_defs)} result type{'' if len(result_defs) == 1 else 's'}, "
                f"got {len(result_types)}",
                types_pos,
                parser.pos,
            )
        if len(operand_types) != len(unresolved):
            parser.raise_error(
                f"expected {len(unresolved)} operand types, got {len(operand_types)}",
                types_pos,
                parser.pos,
            )
        operands = parser.resolve_operands(unresolved, operand_types, types_pos)
        op = cls.build(
            operands=cls._group_operands(parser, operands, types_pos),
            result_types=cls._group_results(result_types),
            properties=properties,
        )
        op.attributes |= attributes
        return op

    @classmethod
    def _group_operands(
        cls, parser: Parser, operands: Sequence[SSAValue], pos: int
    ) -> list[SSAValue | Sequence[SSAValue] | None]:
        """Distribute a flat operand list over the op's operand definitions.

        At most one definition may be optional or variadic; it takes what the others leave.
        """
        defs = [d for _, d in cls.get_irdl_definition().operands]
        variable = [i for i, d in enumerate(defs) if isinstance(d, OptOperandDef | VarOperandDef)]
        fixed = len(defs) - len(variable)
        spare = len(operands) - fixed
        if (
            spare < 0
            or (not variable and spare)
            or (variable and isinstance(defs[variable[0]], OptOperandDef) and spare > 1)
        ):
            if not variable:
                expected = f"{fixed}"
            elif isinstance(defs[variable[0]], OptOperandDef):
                expected = f"{fixed} or {fixed + 1}"
            else:
                expected = f"at least {fixed}"
            plural = "" if expected == "1" else "s"
            parser.raise_error(
                f"'{cls.name}' expects {expected} operand{plural}, got {len(operands)}", pos, pos
            )
        grouped: list[SSAValue | Sequence[SSAValue] | None] = []
        it = iter(operands)
        for i, definition in enumerate(defs):
            if i in variable:
                taken = [next(it) for _ in range(spare)]
                if isinstance(definition, OptOperandDef):
                    grouped.append(taken[0] if taken else None)
                else:
                    grouped.append(taken)
            else:
                grouped.append(next(it))
        return grouped

    @classmethod
    def _group_results(
        cls, result_types: Sequence[Attribute]
    ) -> list[Attribute | Sequence[Attribute] | None]:
        defs = [d for _, d in cls.get_irdl_definition().results]
        if len(defs) == 1 and isinstance(defs[0], VarResultDef):
            return [list(result_types)]
        return list(result_types)


# ---- Reading properties in shape rules ---------------------------------------------------------


def get_ints(props: Mapping[str, Attribute], name: str) -> tuple[int, ...]:
    attr = props[name]
    assert isinstance(attr, DenseArrayBase)
    return ints_of(attr)


def get_floats(props: Mapping[str, Attribute], name: str) -> tuple[float, ...] | None:
    attr = props.get(name)
    if attr is None:
        return None
    assert isinstance(attr, DenseArrayBase)
    return floats_of(attr)


def get_int(props: Mapping[str, Attribute], name: str) -> int:
    attr = props[name]
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def get_float(props: Mapping[str, Attribute], name: str) -> float | None:
    attr = props.get(name)
    if attr is None:
        return None
    assert isinstance(attr, FloatAttr)
    return attr.value.data


def get_bool(props: Mapping[str, Attribute], name: str) -> bool:
    attr = props[name]
    assert isinstance(attr, IntegerAttr)
    return bool(attr.value.data)


def get_str(props: Mapping[str, Attribute], name: str) -> str:
    """A string or enum property's value as a plain `str`."""
    attr = props[name]
    if isinstance(attr, EnumAttribute):
        return str(attr.data.value)
    assert isinstance(attr, StringAttr)
    return attr.data


# ---- Property definitions shared by many ops ---------------------------------------------------


def layout_prop() -> LayoutAttr:
    """`layout = "NHWC" | "NCHW"`: required, so the IR always says which one it is."""
    return declare_prop(LayoutAttr, prop_def(LayoutAttr))


def activation_prop() -> ActivationAttr:
    """A fused activation (TFLite style), `none` by default."""
    default = ActivationAttr(Activation.NONE)
    return declare_prop(ActivationAttr, prop_def(ActivationAttr, default_value=default))


def ints_prop(default: Sequence[int] | None = None) -> DenseArrayBase:
    """`name = [1, 2]`: i64 integers."""
    value = None if default is None else ints_attr(default)
    return declare_prop("ints", prop_def(DenseArrayBase.constr(i64), default_value=value))


def int_prop(default: int | None = None) -> IntegerAttr:
    """`name = 3`: an i64 integer."""
    value = None if default is None else int_attr(default)
    return declare_prop("int", prop_def(IntegerAttr[I64], default_value=value))


def float_prop(default: float | None = None) -> FloatAttr:
    """`name = 0.5`: an f64 float."""
    value = None if default is None else float_attr(default)
    return declare_prop("float", prop_def(FloatAttr, default_value=value))


def opt_float_prop() -> FloatAttr | None:
    """An optional `name = 0.5`."""
    return declare_prop("float", opt_prop_def(FloatAttr))


def opt_floats_prop() -> DenseArrayBase | None:
    """An optional `name = [0.5, 2.0]` (f64 floats)."""
    return declare_prop("floats", opt_prop_def(DenseArrayBase.constr(f64)))


def bool_prop(default: bool) -> IntegerAttr:
    """`name = true | false`."""
    return declare_prop("bool", prop_def(BoolAttr, default_value=bool_attr(default)))


def str_prop(default: str | None = None) -> StringAttr:
    """`name = "text"`."""
    value = None if default is None else StringAttr(default)
    return declare_prop("str", prop_def(StringAttr, default_value=value))


def attr_prop(constraint: type[Attribute]) -> Any:
    """A property written as an attribute (`nn.constant`'s `dense<...>` value)."""
    return declare_prop("attr", prop_def(constraint))


def check_layout_and_activation(props: Mapping[str, Attribute]) -> None:
    """Validate the `layout` and `activation` properties when the op has them."""
    if "layout" in props:
        check_one_of(get_str(props, "layout"), LAYOUTS, "layout")
    if "activation" in props:
        check_one_of(get_str(props, "activation"), ACTIVATIONS, "activation")
