"""Tests of irc.diagnostics: locations, emission, verification and -verify-diagnostics."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Operation
from xdsl.parser import ParseError
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from irc.context import make_context
from irc.diagnostics import (
    Diagnostic,
    DiagnosticVerifier,
    IrcDiagnosticError,
    Severity,
    SourceLocation,
    capture_diagnostics,
    diagnostic_from_exception,
    diagnostic_handler,
    emit_error,
    emit_remark,
    emit_warning,
    location_from_attr,
    location_of,
    make_note,
    parse_with_locations,
    verify_module,
)

GOOD = """\
func.func @f(%a: i32) -> i32 {
  %s = arith.addi %a, %a : i32
  func.return %s : i32
}
"""


def _loc(file: str, line: int, col: int) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(col))


def _parse(text: str, *, line_offset: int = 0) -> ModuleOp:
    return parse_with_locations(make_context(), text, "t.mlir", line_offset=line_offset)


def _ops(module: ModuleOp, name: str) -> list[Operation]:
    return [op for op in module.walk() if op.name == name]


# ---- Locations ---------------------------------------------------------------


def test_parsed_ops_are_located_at_their_first_token() -> None:
    module = _parse(GOOD)
    assert location_of(_ops(module, "func.func")[0]) == ("t.mlir", 1, 1)
    assert location_of(_ops(module, "arith.addi")[0]) == ("t.mlir", 2, 3)
    assert location_of(_ops(module, "func.return")[0]) == ("t.mlir", 3, 3)
    # The implicit module is located at the first token of the input.
    assert location_of(module) == ("t.mlir", 1, 1)


def test_line_offset_makes_lines_file_absolute() -> None:
    module = _parse(GOOD, line_offset=10)
    assert location_of(_ops(module, "func.return")[0]) == ("t.mlir", 13, 3)


def test_explicit_locations_are_kept() -> None:
    text = 'func.func @f() {\n  func.return loc("x.py":7:8)\n} loc(unknown)\n'
    module = _parse(text)
    assert location_of(_ops(module, "func.return")[0]) == ("x.py", 7, 8)
    func_op = _ops(module, "func.func")[0]
    assert isinstance(func_op.location, UnknownLoc)
    # An op with an explicit unknown location reports at its parent (the module).
    assert location_of(func_op) == ("t.mlir", 1, 1)


def test_location_of_walks_up_to_the_nearest_located_parent() -> None:
    module = _parse(GOOD)
    addi = _ops(module, "arith.addi")[0]
    created = arith.AddiOp(addi.results[0], addi.results[0])  # as a pass would build it
    assert isinstance(created.location, UnknownLoc)
    addi.parent_block().insert_op_after(created, addi)  # type: ignore[union-attr]
    assert location_of(created) == ("t.mlir", 1, 1)  # the enclosing func.func


def test_location_of_detached_unlocated_op_is_none() -> None:
    assert location_of(func.ReturnOp()) is None


def test_location_from_attr_unwraps_wrappers() -> None:
    inner = _loc("a.mlir", 4, 2)
    assert location_from_attr(inner) == SourceLocation("a.mlir", 4, 2)
    assert location_from_attr(NameLoc(StringAttr("conv1"), inner)) == ("a.mlir", 4, 2)
    assert location_from_attr(NameLoc(StringAttr("conv1"), NoneAttr())) is None
    callsite = CallSiteLoc(UnknownLoc(), _loc("b.mlir", 9, 1))
    assert location_from_attr(callsite) == ("b.mlir", 9, 1)
    assert location_from_attr(CallSiteLoc(inner, _loc("b.mlir", 9, 1))) == ("a.mlir", 4, 2)
    fused = FusedLoc((UnknownLoc(), NameLoc(StringAttr("x"), inner)), NoneAttr())
    assert location_from_attr(fused) == ("a.mlir", 4, 2)
    assert location_from_attr(UnknownLoc()) is None


# ---- Emission ----------------------------------------------------------------


def test_default_handler_prints_mlir_style_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    module = _parse(GOOD)
    emit_warning(_ops(module, "arith.addi")[0], "addition of a value to itself")
    emit_remark(None, "no location")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "t.mlir:2:3: warning: addition of a value to itself\n<unknown>:0: remark: no location\n"
    )


def test_capture_diagnostics_collects_instead_of_printing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = _parse(GOOD)
    addi = _ops(module, "arith.addi")[0]
    with capture_diagnostics() as diagnostics:
        returned = emit_warning(addi, "w", notes=[make_note(module, "n")])
        emit_remark(addi, "r")
        with capture_diagnostics() as inner:
            emit_remark(addi, "inner")
    assert [(d.severity, d.message) for d in diagnostics] == [
        (Severity.WARNING, "w"),
        (Severity.REMARK, "r"),
    ]
    assert diagnostics[0] is returned
    assert diagnostics[0].op is addi
    assert diagnostics[0].location == ("t.mlir", 2, 3)
    assert diagnostics[0].notes[0].severity is Severity.NOTE
    assert str(diagnostics[0]) == "t.mlir:2:3: warning: w\nt.mlir:1:1: note: n"
    assert [d.message for d in inner] == ["inner"]
    assert capsys.readouterr().err == ""
    emit_remark(addi, "after")  # the default handler is back
    assert capsys.readouterr().err == "t.mlir:2:3: remark: after\n"


def test_diagnostic_handler_installs_a_custom_handler() -> None:
    seen: list[str] = []
    with diagnostic_handler(lambda d: seen.append(d.header())):
        emit_warning(None, "x")
    assert seen == ["<unknown>:0: warning: x"]


def test_emit_error_raises_with_the_op_and_is_not_sent_to_the_handler() -> None:
    module = _parse(GOOD)
    ret = _ops(module, "func.return")[0]
    with capture_diagnostics() as diagnostics, pytest.raises(IrcDiagnosticError) as info:
        emit_error(ret, "bad return")
    assert diagnostics == []
    assert isinstance(info.value, PassFailedException)
    assert info.value.op is ret
    assert info.value.location == ("t.mlir", 3, 3)
    assert info.value.diagnostic.severity is Severity.ERROR
    assert str(info.value) == "bad return"
    assert diagnostic_from_exception(info.value) is info.value.diagnostic


def test_irc_diagnostic_error_location_is_computed_at_creation() -> None:
    module = _parse(GOOD)
    addi = _ops(module, "arith.addi")[0]
    error = IrcDiagnosticError("x", arith.AddiOp(addi.results[0], addi.results[0]))
    assert error.location is None  # detached, unlocated op
    inserted = arith.AddiOp(addi.results[0], addi.results[0])
    addi.parent_block().insert_op_after(inserted, addi)  # type: ignore[union-attr]
    error = IrcDiagnosticError("x", inserted)
    inserted.detach()
    assert error.location == ("t.mlir", 1, 1)


class _RejectAddi(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
        emit_error(op, "addi is not supported here")


def test_emit_error_survives_the_pattern_rewriter() -> None:
    module = _parse(GOOD)
    with pytest.raises(IrcDiagnosticError) as info:
        PatternRewriteWalker(_RejectAddi()).rewrite_module(module)
    assert info.value.op is _ops(module, "arith.addi")[0]
    assert info.value.location == ("t.mlir", 2, 3)
    assert info.value.diagnostic.message == "addi is not supported here"


# ---- Verification ------------------------------------------------------------

TWO_ERRORS = """\
func.func @f(%a: i32, %b: i64) -> i64 {
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  func.return %c : i32
}
"""


def test_verify_module_reports_the_first_failing_op() -> None:
    module = _parse(TWO_ERRORS, line_offset=5)
    with pytest.raises(IrcDiagnosticError) as info:
        verify_module(module)
    assert info.value.op is _ops(module, "arith.addi")[0]
    assert info.value.location == ("t.mlir", 7, 3)
    # One line, without xDSL's prefix and IR dump.
    assert info.value.diagnostic.message == (
        "operand 'rhs' at position 1 does not verify: "
        "attribute i32 expected from variable 'T', but got i64"
    )


def test_verify_module_passes_good_ir() -> None:
    verify_module(_parse(GOOD))


def test_verify_module_reports_an_empty_block_at_its_parent() -> None:
    module = _parse(GOOD)
    for op in reversed(_ops(module, "func.func")[0].body.block.ops):
        op.detach()
        op.erase()
    with pytest.raises(IrcDiagnosticError) as info:
        verify_module(module)
    assert info.value.op is _ops(module, "func.func")[0]
    assert "contains empty block" in info.value.diagnostic.message


# ---- Parse errors ------------------------------------------------------------


def test_parse_errors_get_file_absolute_lines() -> None:
    text = "func.func @f(%a: i32) -> i32 {\n  %s = arith.addi %a : i32\n}\n"
    with pytest.raises(ParseError) as info:
        _parse(text, line_offset=20)
    diagnostic = diagnostic_from_exception(info.value)
    assert diagnostic.location == ("t.mlir", 22, 22)
    assert diagnostic.message == "Expected ','"


def test_lexer_error_on_the_first_token_gets_the_offset_too() -> None:
    with pytest.raises(ParseError) as info:
        _parse("` nonsense\n", line_offset=7)
    assert diagnostic_from_exception(info.value).location == ("t.mlir", 8, 1)


def test_attribute_verification_during_parsing_is_located_at_the_op() -> None:
    with pytest.raises(ParseError) as info:
        _parse("\n  %c = arith.constant 300 : i8\n", line_offset=1)
    diagnostic = diagnostic_from_exception(info.value)
    assert diagnostic.location == ("t.mlir", 3, 3)
    assert diagnostic.message.startswith("Integer value 300 is out of range")


def test_other_exceptions_are_reported_at_the_fallback_op() -> None:
    module = _parse(GOOD)
    diagnostic = diagnostic_from_exception(
        PassFailedException("line one\nline two"), fallback_op=module
    )
    assert diagnostic.header() == "t.mlir:1:1: error: line one line two"


# ---- DiagnosticVerifier ------------------------------------------------------


def _diag(severity: Severity, line: int, message: str, file: str = "v.mlir") -> Diagnostic:
    return Diagnostic(severity, message, SourceLocation(file, line, 1))


ANNOTATED = """\
// expected-error @+1 {{plus one}}
op
op // expected-warning {{same line}}
// expected-remark@-1 {{minus one}}
op
// expected-error@above {{above}}
// expected-note@below {{below}}
op
// expected-error-re @+1 {{value {{[0-9]+}} is {{(odd|even)}}}}
op
"""


def test_verifier_offsets_and_regexes() -> None:
    verifier = DiagnosticVerifier(ANNOTATED, "v.mlir", line_offset=100)
    assert [(e.severity, e.line) for e in verifier.expectations] == [
        (Severity.ERROR, 102),
        (Severity.WARNING, 103),
        (Severity.REMARK, 103),
        (Severity.ERROR, 105),
        (Severity.NOTE, 108),
        (Severity.ERROR, 110),
    ]
    failures = verifier.check(
        [
            _diag(Severity.ERROR, 102, "xx plus one xx"),
            _diag(Severity.WARNING, 103, "same line"),
            _diag(Severity.REMARK, 103, "minus one"),
            Diagnostic(
                Severity.ERROR,
                "above",
                SourceLocation("v.mlir", 105, 1),
                notes=[_diag(Severity.NOTE, 108, "below")],
            ),
            _diag(Severity.ERROR, 110, "value 42 is even"),
        ]
    )
    assert failures == []


def test_verifier_reports_unexpected_and_unmatched() -> None:
    verifier = DiagnosticVerifier(ANNOTATED, "v.mlir")
    failures = verifier.check(
        [
            _diag(Severity.WARNING, 2, "plus one"),  # wrong severity
            _diag(Severity.WARNING, 3, "same line", file="other.mlir"),  # wrong file
            _diag(Severity.REMARK, 4, "minus one"),  # wrong line
            Diagnostic(Severity.ERROR, "above"),  # no location
            _diag(Severity.ERROR, 10, "value x is even"),  # regex does not match
        ]
    )
    assert [str(f) for f in failures] == [
        "v.mlir:2:1: error: unexpected warning: plus one",
        "other.mlir:3:1: error: unexpected warning: same line",
        "v.mlir:4:1: error: unexpected remark: minus one",
        "<unknown>:0: error: unexpected error: above",
        "v.mlir:10:1: error: unexpected error: value x is even",
        'v.mlir:1:4: error: expected error "plus one" was not produced',
        'v.mlir:3:7: error: expected warning "same line" was not produced',
        'v.mlir:4:4: error: expected remark "minus one" was not produced',
        'v.mlir:6:4: error: expected error "above" was not produced',
        'v.mlir:7:4: error: expected note "below" was not produced',
        'v.mlir:9:4: error: expected error "value {{[0-9]+}} is {{(odd|even)}}" was not produced',
    ]


def test_verifier_matches_each_expectation_once() -> None:
    verifier = DiagnosticVerifier("op // expected-error {{twice}}\n", "v.mlir")
    failures = verifier.check(
        [_diag(Severity.ERROR, 1, "twice"), _diag(Severity.ERROR, 1, "twice")]
    )
    assert [f.message for f in failures] == ["unexpected error: twice"]


def test_verifier_rejects_malformed_annotations() -> None:
    text = '// expected-error @+1 "no braces"\n// expected-warning-re {{bad {{(}}}}\n'
    verifier = DiagnosticVerifier(text, "v.mlir")
    assert verifier.expectations == []
    failures = verifier.check([])
    assert [f.location for f in failures] == [("v.mlir", 1, 4), ("v.mlir", 2, 4)]
    assert failures[0].message.startswith("invalid expected-error annotation")
    assert failures[1].message.startswith("invalid regex in annotation")


def test_input_without_operations_is_an_empty_module() -> None:
    module = _parse("// only a comment\n\n", line_offset=3)
    assert list(module.ops) == []
    assert location_of(module) == ("t.mlir", 6, 1)
