"""String-literal syntax for the enum attributes of irc's dialects.

An irc enum is a `StrEnum` held by an xDSL `EnumAttribute` (``layout``, ``activation``,
``rounding``). Its value reads and prints as a string literal, so an op's custom syntax keeps
the form it had when these were plain strings (``layout = "NHWC"``, ``rounding =
"half_to_even"``); the generic form names the attribute (``#nn<layout "NHWC">``)::

    class Layout(StrEnum):
        NHWC = "NHWC"
        NCHW = "NCHW"

    @irdl_attr_definition
    class LayoutAttr(StringEnumSyntax[Layout], EnumAttribute[Layout], SpacedOpaqueSyntaxAttribute):
        name = "nn.layout"
        label = "layout"

A value outside the enum is refused where it is read or built, with the message the
verifiers gave: ``layout must be one of NHWC, NCHW, got 'NWHC'``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Self, TypeVar, cast

from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

__all__ = ["StringEnumSyntax"]

EnumT = TypeVar("EnumT", bound=StrEnum)


class StringEnumSyntax(Generic[EnumT]):
    """Mixin for an `EnumAttribute[E]` subclass, listed first among its bases as
    `StringEnumSyntax[E]`: its value is a string literal, and `from_str` builds it from a
    Python string."""

    label: ClassVar[str]
    """What the value is, for messages (`layout`, `rounding`)."""

    enum_type: ClassVar[type[StrEnum]]
    data: EnumT

    @classmethod
    def allowed(cls) -> tuple[str, ...]:
        """The values, in declaration order."""
        return tuple(member.value for member in cls.enum_type)

    @classmethod
    def refusal(cls, value: str) -> str:
        """The message for a value outside the enum."""
        return f"{cls.label} must be one of {', '.join(cls.allowed())}, got '{value}'"

    @classmethod
    def _of(cls, member: EnumT) -> Self:
        # The EnumAttribute (a Data attribute) this mixin is combined with takes the member.
        return cast(Any, cls)(member)

    @classmethod
    def _member(cls, value: str) -> EnumT:
        return cast(EnumT, cls.enum_type(value))

    @classmethod
    def from_str(cls, value: str) -> Self:
        """The attribute of a value; `VerifyException` when it is not one of the enum's."""
        try:
            member = cls._member(value)
        except ValueError:
            raise VerifyException(cls.refusal(str(value))) from None
        return cls._of(member)

    @classmethod
    def parse_value(cls, parser: AttrParser) -> Self:
        """The attribute, read unqualified (its string literal), as op syntax writes it."""
        return cls._of(cls.parse_parameter(parser))

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string_literal(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> EnumT:
        start = parser.pos
        value = parser.parse_str_literal()
        try:
            return cls._member(value)
        except ValueError:
            parser.raise_error(cls.refusal(value), start, parser.pos)
