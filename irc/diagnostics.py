"""irc's diagnostic engine: located errors, warnings, remarks and notes.

xDSL reports problems as exceptions whose text embeds a dump of the whole module;
MLIR reports them as diagnostics attached to a source location. This module gives
irc the MLIR model on top of xDSL:

* ops parsed with `LocatingParser` (what `irc-opt` uses) carry a `FileLineColLoc`,
  and `location_of` finds the nearest located op for ops that passes created;
* passes call `emit_warning` / `emit_remark`, which go to the current handler
  (stderr by default, a list inside `capture_diagnostics()`), and fail with
  `emit_error`, which raises `IrcDiagnosticError` carrying the op;
* `verify_module` verifies op by op so that the first verifier failure is reported
  at the failing op, as MLIR's verifier does;
* `DiagnosticVerifier` implements MLIR's `-verify-diagnostics`: it reads
  `// expected-error@+1 {{...}}` annotations and matches emitted diagnostics.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import IO, NamedTuple, NoReturn, cast

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    UNKNOWN_LOC,
    AnyFloat,
    ArrayAttr,
    CallSiteLoc,
    ComplexType,
    FileLineColLoc,
    FusedLoc,
    IndexType,
    IntAttr,
    IntegerType,
    LocationAttr,
    ModuleOp,
    NameLoc,
    RankedStructure,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation, TypeAttribute
from xdsl.irdl import AttrConstraint, base
from xdsl.parser import (
    MLIRTokenKind,
    MultipleSpansParseError,
    ParseError,
    Parser,
    Position,
    Span,
)
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, StringLiteral

from irc.artifact import ExternalWeights, dense_from_weights, parse_external_resources

# xDSL 0.74 lexes string literals with `"(?:[^"...]+|\\...)*"`, whose nested repetition
# backtracks exponentially on an unterminated string (a few hundred bytes take minutes).
# Possessive repetitions (Python 3.11) never backtrack into a run, so the same language
# matches in linear time, and a run of plain characters is still matched in one step (one
# alternation per character made a 28 MB artifact's hex strings lex 20x slower).
MLIRLexer._unescaped_characters_regex = re.compile(
    r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
)

_ESCAPE = re.compile(rb'\\(["nt\\]|[0-9A-Fa-f]{2})?')
_KNOWN_ESCAPES = {b"n": b"\n", b"t": b"\t", b"\\": b"\\", b'"': b'"'}


def _string_literal_bytes(self: StringLiteral) -> bytes:
    """`StringLiteral.bytes_contents` in one regex substitution: the same bytes and the
    same error as xDSL 0.74's loop, which costs a Python step per escape (an artifact's
    kernel sources hold thousands of `\\n`)."""
    raw = self.text[1:-1].encode()
    if b"\\" not in raw:
        return raw

    def unescape(match: re.Match[bytes]) -> bytes:
        escape = match.group(1)
        if escape is None:
            if match.end() >= len(raw):
                raise ParseError(self, "Incomplete escape sequence at end of string.")
            at = len(raw[: match.start()].decode())
            raise ParseError(self, f"Invalid escape sequence: {self.text[1 + at : 3 + at]}")
        return _KNOWN_ESCAPES.get(escape) or bytes((int(escape, 16),))

    return _ESCAPE.sub(unescape, raw)


# The patch replaces xDSL's read-only property on the class (a setter it does not have).
StringLiteral.bytes_contents = property(_string_literal_bytes)  # pyright: ignore[reportAttributeAccessIssue]

__all__ = [
    "Diagnostic",
    "DiagnosticHandler",
    "DiagnosticVerifier",
    "Expectation",
    "IrcDiagnosticError",
    "LocatingParser",
    "Severity",
    "SourceLocation",
    "capture_diagnostics",
    "diagnostic_from_exception",
    "diagnostic_handler",
    "emit",
    "emit_error",
    "emit_remark",
    "emit_warning",
    "location_from_attr",
    "location_of",
    "make_note",
    "parse_with_locations",
    "print_diagnostic",
    "verify_module",
]


# ---- Diagnostics -------------------------------------------------------------


class Severity(StrEnum):
    """How serious a diagnostic is; the value is the word MLIR prints."""

    ERROR = "error"
    WARNING = "warning"
    REMARK = "remark"
    NOTE = "note"
    """Only attached to another diagnostic, never emitted alone."""


class SourceLocation(NamedTuple):
    """A position in a source file; lines and columns are one-based."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


_UNKNOWN_LOCATION_TEXT = "<unknown>:0"


@dataclass
class Diagnostic:
    """One message about the IR, MLIR style: `file:line:col: severity: message`."""

    severity: Severity
    message: str
    location: SourceLocation | None = None
    """Where the diagnostic points; `None` when nothing in the IR is located."""
    op: Operation | None = None
    """The operation the diagnostic is about, when there is one."""
    notes: list[Diagnostic] = field(default_factory=list)
    """Attached `Severity.NOTE` diagnostics, printed after this one."""

    def header(self) -> str:
        """The first line: `file:line:col: severity: message`."""
        where = _UNKNOWN_LOCATION_TEXT if self.location is None else str(self.location)
        return f"{where}: {self.severity}: {self.message}"

    def format(self) -> str:
        """This diagnostic and its notes, one line each, without a trailing newline."""
        return "\n".join([self.header(), *(note.header() for note in self.notes)])

    def __str__(self) -> str:
        return self.format()


class IrcDiagnosticError(PassFailedException):
    """An error diagnostic raised as an exception, so that a pass fails at a located op.

    It derives from xDSL's `PassFailedException`, so everything that handles pass
    failures handles it; xDSL's pattern rewriter re-raises exceptions from patterns
    with their type, so the op survives the trip through a `PatternRewriteWalker`.
    The location is computed when the error is created, before the op can be erased.
    """

    diagnostic: Diagnostic
    """The error, with its location and notes."""

    def __init__(
        self,
        message: str,
        op: Operation | None = None,
        *,
        location: SourceLocation | None = None,
        notes: Iterable[Diagnostic] = (),
    ) -> None:
        super().__init__(message)
        if location is None and op is not None:
            location = location_of(op)
        self.diagnostic = Diagnostic(Severity.ERROR, message, location, op, list(notes))

    @classmethod
    def from_diagnostic(cls, diagnostic: Diagnostic) -> IrcDiagnosticError:
        """Wrap an existing error diagnostic (its severity is forced to error)."""
        return cls(
            diagnostic.message,
            diagnostic.op,
            location=diagnostic.location,
            notes=diagnostic.notes,
        )

    @property
    def op(self) -> Operation | None:
        """The operation the error is about, if any."""
        return self.diagnostic.op

    @property
    def location(self) -> SourceLocation | None:
        """Where the error points, if known."""
        return self.diagnostic.location


# ---- Locations ---------------------------------------------------------------


def location_from_attr(loc: Attribute) -> SourceLocation | None:
    """The file/line/column inside a location attribute, if it holds one.

    `NameLoc` and `CallSiteLoc` are unwrapped (callee before caller, as MLIR's
    handlers do); for a `FusedLoc` the first located member wins.
    """
    match loc:
        case FileLineColLoc():
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
        case NameLoc():
            return location_from_attr(loc.location)
        case CallSiteLoc():
            return location_from_attr(loc.callee) or location_from_attr(loc.caller)
        case FusedLoc(locations=ArrayAttr() as members):
            for member in members.data:
                if (found := location_from_attr(member)) is not None:
                    return found
            return None
        case _:
            return None


def location_of(op: Operation) -> SourceLocation | None:
    """The source location of `op`, or of its nearest located ancestor.

    Ops created by passes usually have no location; reporting them at the enclosing
    op (a function, a region op) is more useful than reporting nothing.
    """
    current: Operation | None = op
    while current is not None:
        if (found := location_from_attr(current.location)) is not None:
            return found
        current = current.parent_op()
    return None


# ---- Handlers and emission ---------------------------------------------------

DiagnosticHandler = Callable[[Diagnostic], None]
"""Receives every emitted diagnostic (warnings, remarks, non-fatal errors)."""


def print_diagnostic(diagnostic: Diagnostic, stream: IO[str] | None = None) -> None:
    """The default handler: print `file:line:col: severity: message` to stderr."""
    print(diagnostic.format(), file=sys.stderr if stream is None else stream)


_current_handler: ContextVar[DiagnosticHandler] = ContextVar(
    "irc_diagnostic_handler", default=print_diagnostic
)


@contextmanager
def diagnostic_handler(handler: DiagnosticHandler) -> Iterator[None]:
    """Send diagnostics emitted inside the `with` block to `handler`."""
    token = _current_handler.set(handler)
    try:
        yield
    finally:
        _current_handler.reset(token)


@contextmanager
def capture_diagnostics() -> Iterator[list[Diagnostic]]:
    """Collect the diagnostics emitted inside the `with` block instead of printing them.

    ```python
    with capture_diagnostics() as diagnostics:
        MyPass().apply(ctx, module)
    assert [d.message for d in diagnostics] == ["layout converted"]
    ```
    """
    collected: list[Diagnostic] = []
    with diagnostic_handler(collected.append):
        yield collected


def emit(diagnostic: Diagnostic) -> None:
    """Send an already built diagnostic to the current handler."""
    _current_handler.get()(diagnostic)


def make_note(op: Operation | None, message: str) -> Diagnostic:
    """A note to attach to another diagnostic (`notes=[make_note(op, "...")]`)."""
    return Diagnostic(Severity.NOTE, message, None if op is None else location_of(op), op)


def _emit(
    severity: Severity, op: Operation | None, message: str, notes: Iterable[Diagnostic]
) -> Diagnostic:
    location = None if op is None else location_of(op)
    diagnostic = Diagnostic(severity, message, location, op, list(notes))
    emit(diagnostic)
    return diagnostic


def emit_warning(
    op: Operation | None, message: str, *, notes: Iterable[Diagnostic] = ()
) -> Diagnostic:
    """Emit a warning about `op` to the current handler and return it."""
    return _emit(Severity.WARNING, op, message, notes)


def emit_remark(
    op: Operation | None, message: str, *, notes: Iterable[Diagnostic] = ()
) -> Diagnostic:
    """Emit a remark (an informational message) about `op` and return it."""
    return _emit(Severity.REMARK, op, message, notes)


def emit_error(op: Operation | None, message: str, *, notes: Iterable[Diagnostic] = ()) -> NoReturn:
    """Fail with an error located at `op`: raises `IrcDiagnosticError`.

    The error is not sent to the handler here; whoever catches the exception
    (`irc-opt`, a pass manager) reports `exc.diagnostic` exactly once.
    """
    raise IrcDiagnosticError(message, op, notes=notes)


def _clean_message(text: str) -> str:
    """One line of text from an xDSL exception message.

    xDSL prefixes verifier failures with "Operation does not verify: " and splits
    nested constraint failures over several lines; MLIR diagnostics are one line.
    """
    text = text.strip().removeprefix("Operation does not verify: ")
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _span_location(span: Span[str] | Span[bytes]) -> SourceLocation:
    loc = span.get_location()
    return SourceLocation(loc.file, loc.line, loc.col)


def diagnostic_from_exception(
    exc: Exception, *, fallback_op: Operation | None = None
) -> Diagnostic:
    """An error diagnostic for an exception raised by the parser, verifier or a pass.

    `IrcDiagnosticError` keeps its own diagnostic; a `ParseError` is located at its
    span (including the span's line offset); any other exception is reported at
    `fallback_op` (for instance the module a pass ran on), without xDSL's notes.
    """
    if isinstance(exc, IrcDiagnosticError):
        return exc.diagnostic
    if isinstance(exc, ParseError):
        notes: list[Diagnostic] = []
        if isinstance(exc, MultipleSpansParseError):
            for span, ref_msg in exc.refs:
                text = (ref_msg or exc.ref_text or "see here").strip().rstrip(":")
                notes.append(Diagnostic(Severity.NOTE, text, _span_location(span)))
        return Diagnostic(
            Severity.ERROR, _clean_message(exc.msg), _span_location(exc.span), notes=notes
        )
    location = None if fallback_op is None else location_of(fallback_op)
    return Diagnostic(Severity.ERROR, _clean_message(str(exc)), location, fallback_op)


# ---- Verification ------------------------------------------------------------


def _verify_blocks(op: Operation) -> None:
    """The block-level checks that `Block.verify` does and `verify_nested_ops=False` skips."""
    for region in op.regions:
        if len(region.blocks) != 1 or op.has_trait(NoTerminator):
            continue
        if region.block.first_op is None:
            raise VerifyException(
                f"Operation {op.name} contains empty block in single-block region "
                "that expects at least a terminator"
            )


def verify_module(root: Operation) -> None:
    """Verify `root` and everything nested in it, reporting the first failing op.

    Ops are verified in pre-order, one at a time, so the failure is attributed to the
    op whose verifier failed (xDSL's `verify()` only says which op in a module dump).
    Raises `IrcDiagnosticError` located at that op, with xDSL's
    "Operation does not verify: " prefix and its IR dump removed from the message.
    """
    for op in root.walk():
        try:
            op.verify(verify_nested_ops=False)
            _verify_blocks(op)
        except DiagnosticException as exc:
            raise IrcDiagnosticError(_clean_message(str(exc)), op) from exc
        except ValueError as exc:  # xDSL: an operand that was used but never defined
            raise IrcDiagnosticError(_clean_message(str(exc)), op) from exc
        except KeyError as exc:  # a verifier reading a property the generic form left out
            raise IrcDiagnosticError(f"missing property {exc.args[0]!r}", op) from exc


# ---- Parsing with locations --------------------------------------------------


MAX_INTEGER_WIDTH = 16_777_215
"""The widest integer type the parser accepts (MLIR's limit)."""


_DenseLiteralType = RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType]
"""The type of a `dense<...>` literal (as xDSL requires it)."""


class LocatingParser(Parser):
    """A `Parser` that gives every parsed op a `FileLineColLoc` of its first token.

    Ops with an explicit `loc(...)` keep it. `line_offset` is added to every line,
    so that a chunk of a `--split-input-file` input gets file-absolute lines, in op
    locations and in `ParseError` spans alike. Verifier failures of attributes and
    types raised while parsing become `ParseError`s at the op being parsed.

    An artifact's `{-# external_resources: {irc_weights: ...} #-}` section is read with
    the weights file it names (looked up in the folder of `name`), and its
    `dense_resource<wN>` constants become ordinary dense attributes (`irc.artifact`).
    """

    def __init__(
        self,
        ctx: Context,
        input: str | bytes,
        name: str = "<unknown>",
        *,
        line_offset: int = 0,
    ) -> None:
        self.line_offset = line_offset
        """Added to every line number this parser reports."""
        try:
            if isinstance(input, bytes):
                input = _decode_source(input, name)
            super().__init__(ctx, input, name)  # lexes the first token: may raise
        except ParseError as exc:
            self._offset_error(exc)
            raise
        text = self.lexer.input.content
        self._line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
        self._filename = StringAttr(name)
        self._last_parsed_location: Attribute | None = None
        self._weights: ExternalWeights | None = None

    def _parse_optional_integer_or_float_type(self) -> TypeAttribute | None:
        """`i<N>` types as xDSL parses them, with MLIR's limit on the width (xDSL has none,
        and computing the range of an `i2147483648` takes minutes)."""
        token = self._current_token
        if token.kind == MLIRTokenKind.BARE_IDENT:
            match = self._builtin_integer_type_regex.match(token.text)
            digits = match.group(1) if match is not None else ""
            if digits and (len(digits) > 8 or int(digits) > MAX_INTEGER_WIDTH):
                raise ParseError(
                    token.span, f"integer type width exceeds the limit of {MAX_INTEGER_WIDTH} bits"
                )
        return super()._parse_optional_integer_or_float_type()

    def _parse_dense_literal_type(self) -> _DenseLiteralType:
        """The type of a `dense<...>` literal, checked as xDSL checks it, with the type
        constraint built once (xDSL builds it for every literal: ~10 ms each)."""
        type_ = self.expect(self.parse_optional_type, "Dense attribute must be typed!")
        if not _dense_literal_types().verifies(type_):
            self.raise_error(
                "Expected memref, vector or tensor type of integer, index, float, or complex type"
            )
        literal_type = cast(_DenseLiteralType, type_)  # what the constraint just verified
        if DYNAMIC_INDEX in literal_type.get_shape():
            self.raise_error("Dense literal attribute should have a static shape.")
        return literal_type

    def _parse_external_resources(self) -> None:
        """`external_resources: {irc_weights: {...}}`: an artifact's weights file."""
        weights = parse_external_resources(self, os.path.dirname(self._filename.data))
        if weights is not None:
            self._weights = weights
            self._weights_span = Span(*weights.where, self.lexer.input)

    def _check_weights(self) -> None:
        """The weights' SHA-256 (hashed while the rest was parsed): a `ParseError` at the
        `external_resources` section when the file does not match."""
        if self._weights is not None and (error := self._weights.verify()) is not None:
            raise ParseError(self._weights_span, error)

    # An artifact's weights parse to the dense constant itself, not to a DenseResourceAttr.
    def _parse_builtin_dense_resource_attr(self) -> Attribute:  # pyright: ignore[reportIncompatibleMethodOverride]
        """`dense_resource<wN> : type` from the artifact's weights; any other handle as
        xDSL parses it (a `DenseResourceAttr` of its blob store)."""
        if self._weights is None:
            return super()._parse_builtin_dense_resource_attr()
        start = self.pos
        self.parse_characters("<", " in dense_resource attribute")
        handle = self.parse_identifier(" for resource handle")
        self.parse_characters(">", " in dense_resource attribute")
        self.parse_characters(":", " in dense_resource attribute")
        type_ = self.parse_type()
        return dense_from_weights(self, self._weights, handle, type_, (start, self.pos))

    def _offset_error(self, exc: ParseError) -> None:
        """Apply `line_offset` to the spans of `exc` (file-absolute lines)."""
        if self.line_offset:
            exc.span = replace(exc.span, line_offset=self.line_offset)
            if isinstance(exc, MultipleSpansParseError):
                exc.refs = [
                    (replace(span, line_offset=self.line_offset), msg) for span, msg in exc.refs
                ]

    def _location_at(self, pos: Position) -> FileLineColLoc:
        index = bisect.bisect_right(self._line_starts, pos) - 1
        col = pos - self._line_starts[index] + 1
        return FileLineColLoc(self._filename, IntAttr(index + 1 + self.line_offset), IntAttr(col))

    def parse_optional_location(self) -> LocationAttr | None:
        """Parse `loc(...)`, remembering it so an explicit location is never overwritten."""
        loc = super().parse_optional_location()
        self._last_parsed_location = loc
        return loc

    def parse_operation(self) -> Operation:
        """Parse an operation and locate it at its first token (its first result)."""
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as exc:
            raise ParseError(start, _clean_message(str(exc))) from exc
        if isinstance(op.location, UnknownLoc) and op.location is not self._last_parsed_location:
            op.location = self._location_at(start.start)
        return op

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """Parse a module; an implicit module is located at the first token of the input.

        Unlike xDSL's parser, and like MLIR's, an input without operations (only
        comments, e.g. a `--split-input-file` chunk) is an empty module.
        """
        start = self.pos
        if allow_implicit_module and self._current_token.kind == MLIRTokenKind.EOF:
            module = ModuleOp([])
            module.location = self._location_at(start)
            return module
        try:
            try:
                module = super().parse_module(allow_implicit_module)
                self._check_weights()
            except VerifyException as exc:  # e.g. a type alias whose type does not verify
                raise ParseError(self._current_token.span, _clean_message(str(exc))) from exc
            except RecursionError:  # untrusted input: nesting deeper than Python's stack
                raise ParseError(self._current_token.span, "nesting too deep to parse") from None
            except (ValueError, OverflowError, MemoryError, NotImplementedError) as exc:
                # xDSL's attribute constructors on out-of-range values (an i64 of 10^23, a
                # dimension over 2^63, dense data of an i65536 it cannot pack).
                message = _clean_message(str(exc)) or "value out of range"
                raise ParseError(self._current_token.span, message) from None
        except ParseError as exc:
            if self._weights is not None and (message := self._weights.verify()) is not None:
                error = ParseError(self._weights_span, message)  # altered weights come first
                self._offset_error(error)
                raise error from None
            self._offset_error(exc)
            raise
        if module.location is UNKNOWN_LOC:
            module.location = self._location_at(start)
        return module


@functools.cache
def _dense_literal_types() -> AttrConstraint:
    """The types a `dense<...>` literal may have (xDSL's check)."""
    return base(_DenseLiteralType)


def _decode_source(data: bytes, name: str) -> str:
    """IR bytes as text; invalid UTF-8 is a `ParseError` at the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        start = len(data[: exc.start].decode("utf-8", "replace"))
        span = Span(start, start + 1, Input(text, name))
        raise ParseError(span, f"invalid UTF-8 byte 0x{data[exc.start]:02x}") from None


def parse_with_locations(
    ctx: Context,
    text: str | bytes,
    filename: str = "<unknown>",
    *,
    line_offset: int = 0,
    allow_implicit_module: bool = True,
) -> ModuleOp:
    """Parse `text` with `LocatingParser`; raises `ParseError` on bad input."""
    parser = LocatingParser(ctx, text, filename, line_offset=line_offset)
    return parser.parse_module(allow_implicit_module)


# ---- MLIR's -verify-diagnostics ----------------------------------------------

_ANNOTATION_RE = re.compile(
    r"expected-(?P<kind>error|warning|remark|note)(?P<re>-re)?"
    r"[ \t]*(?:@(?P<offset>[+-][0-9]+|above|below))?[ \t]*\{\{(?P<text>.*)\}\}"
)
_ANNOTATION_START_RE = re.compile(r"expected-(?:error|warning|remark|note)(?:-re)?\b")
_REGEX_PART_RE = re.compile(r"\{\{(.*?)\}\}")


@dataclass
class Expectation:
    """One `// expected-<severity>[-re][@offset] {{text}}` annotation."""

    severity: Severity
    text: str
    """The text between the outer `{{` and `}}`."""
    line: int
    """The (file-absolute) line the diagnostic is expected on."""
    location: SourceLocation
    """Where the annotation itself is written."""
    regex: re.Pattern[str] | None = None
    """For `-re` annotations: literal text with `{{regex}}` parts, compiled."""
    matched: bool = False

    def matches(self, diagnostic: Diagnostic) -> bool:
        """Same severity, same line, and the text is a substring (or the regex matches)."""
        loc = diagnostic.location
        if self.matched or loc is None or diagnostic.severity is not self.severity:
            return False
        if loc.file != self.location.file or loc.line != self.line:
            return False
        if self.regex is not None:
            return self.regex.search(diagnostic.message) is not None
        return self.text in diagnostic.message


def _compile_re_annotation(text: str) -> re.Pattern[str]:
    parts: list[str] = []
    last = 0
    for m in _REGEX_PART_RE.finditer(text):
        parts.append(re.escape(text[last : m.start()]))
        parts.append(f"(?:{m.group(1)})")
        last = m.end()
    parts.append(re.escape(text[last:]))
    return re.compile("".join(parts))


class DiagnosticVerifier:
    """MLIR's `-verify-diagnostics` for one input (or one `--split-input-file` chunk).

    Annotations are written in comments; a bare one refers to its own line,
    `@+N`/`@-N` to a line relative to it, `@above`/`@below` to the previous/next line:

    ```mlir
    // expected-error @+1 {{expected a 4-D filter, got rank 3}}
    %y = nn.conv2d ...
    ```

    `{{text}}` is matched as a substring of the message; `expected-error-re`
    treats `{{...}}` groups inside the text as regular expressions.
    """

    def __init__(self, text: str, filename: str, *, line_offset: int = 0) -> None:
        self.filename = filename
        self.expectations: list[Expectation] = []
        """Annotations found in the text, in source order."""
        self.problems: list[Diagnostic] = []
        """Malformed annotations (reported as errors by `check`)."""
        for index, line_text in enumerate(text.splitlines()):
            line = index + 1 + line_offset
            self._parse_line(line_text, line)

    def _parse_line(self, line_text: str, line: int) -> None:
        for start in _ANNOTATION_START_RE.finditer(line_text):
            location = SourceLocation(self.filename, line, start.start() + 1)
            m = _ANNOTATION_RE.match(line_text, start.start())
            if m is None:
                self.problems.append(
                    Diagnostic(
                        Severity.ERROR,
                        f"invalid {start.group(0)} annotation: expected "
                        "'{{' message '}}' after the optional @offset",
                        location,
                    )
                )
                continue
            offset = m.group("offset")
            if offset is None:
                target = line
            elif offset == "above":
                target = line - 1
            elif offset == "below":
                target = line + 1
            else:
                target = line + int(offset)
            text = m.group("text")
            regex: re.Pattern[str] | None = None
            if m.group("re"):
                try:
                    regex = _compile_re_annotation(text)
                except re.error as exc:
                    self.problems.append(
                        Diagnostic(Severity.ERROR, f"invalid regex in annotation: {exc}", location)
                    )
                    continue
            self.expectations.append(
                Expectation(Severity(m.group("kind")), text, target, location, regex)
            )
            # `.*` in the pattern is greedy: one annotation per line, as in MLIR.
            return

    def check(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """Match emitted diagnostics (and their notes) against the annotations.

        Returns the failures as error diagnostics, in MLIR's wording: malformed
        annotations, `unexpected <severity>: <message>` at each unmatched diagnostic,
        and `expected <severity> "<text>" was not produced` at each unmatched
        annotation. An empty list means the input passed.
        """
        failures = list(self.problems)
        for diagnostic in _flatten(diagnostics):
            for expectation in self.expectations:
                if expectation.matches(diagnostic):
                    expectation.matched = True
                    break
            else:
                failures.append(
                    Diagnostic(
                        Severity.ERROR,
                        f"unexpected {diagnostic.severity}: {diagnostic.message}",
                        diagnostic.location,
                        diagnostic.op,
                    )
                )
        for expectation in self.expectations:
            if not expectation.matched:
                failures.append(
                    Diagnostic(
                        Severity.ERROR,
                        f'expected {expectation.severity} "{expectation.text}" was not produced',
                        expectation.location,
                    )
                )
        return failures


def _flatten(diagnostics: Iterable[Diagnostic]) -> Iterator[Diagnostic]:
    """Diagnostics followed by their notes; a note without a location takes its parent's."""
    for diagnostic in diagnostics:
        yield diagnostic
        for note in diagnostic.notes:
            yield note if note.location is not None else replace(note, location=diagnostic.location)


def format_with_source(diagnostic: Diagnostic, filename: str, source_lines: Sequence[str]) -> str:
    """A diagnostic as tools print it: `file:L:C: severity: message`, then the source line
    and a caret under the column (as MLIR does), then its notes the same way."""

    def excerpt(d: Diagnostic) -> list[str]:
        loc = d.location
        if loc is None or loc.file != filename or not 1 <= loc.line <= len(source_lines):
            return []
        return [source_lines[loc.line - 1].rstrip("\r"), " " * max(loc.col - 1, 0) + "^"]

    lines = [diagnostic.header(), *excerpt(diagnostic)]
    for note in diagnostic.notes:
        lines += [note.header(), *excerpt(note)]
    return "\n".join(lines)
