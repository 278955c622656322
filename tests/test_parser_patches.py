"""irc's replacements for two xDSL 0.74 lexer pieces (`irc.diagnostics`) accept and produce
exactly what xDSL's own do: the string-literal regex (possessive, linear, one step per run of
plain characters) and `StringLiteral.bytes_contents` (one regex substitution), checked on
random literals against xDSL's originals; and the dense-literal type check built once.
"""

from __future__ import annotations

import random
import re

import pytest
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, StringLiteral

import irc
import irc.diagnostics

XDSL_STRING_REGEX = re.compile(r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')
PIECES = ["a", "Z", " ", "é", "\\n", "\\t", "\\\\", '\\"', "\\0A", "\\ff", "\\", "\\q", '"', "\n"]


def xdsl_bytes_contents(literal: StringLiteral) -> bytes:
    """xDSL 0.74's `StringLiteral.bytes_contents`, as it ships (the property irc replaced)."""
    from string import hexdigits

    known = {"\\n": b"\n", "\\t": b"\t", "\\\\": b"\\", '\\"': b'"'}
    text = literal.text[1:-1]
    out = bytearray()
    last = 0
    while (backslash := text.find("\\", last)) > -1:
        out += text[last:backslash].encode()
        if len(text) <= backslash + 1:
            raise ParseError(literal, "Incomplete escape sequence at end of string.")
        if text[backslash : backslash + 2] in known:
            out += known[text[backslash : backslash + 2]]
            last = backslash + 2
        elif len(text) > backslash + 2 and all(
            c in hexdigits for c in text[backslash + 1 : backslash + 3]
        ):
            out += int(text[backslash + 1 : backslash + 3], 16).to_bytes(1, "big")
            last = backslash + 3
        else:
            raise ParseError(literal, f"Invalid escape sequence: {text[backslash : backslash + 2]}")
    out += text[last:].encode()
    return bytes(out)


def random_literals(count: int) -> list[str]:
    rng = random.Random(1234)
    return ['"' + "".join(rng.choices(PIECES, k=rng.randrange(0, 12))) + '"' for _ in range(count)]


def test_string_regex_matches_what_xdsl_matches() -> None:
    ours = MLIRLexer._unescaped_characters_regex
    for text in random_literals(3000):
        for tail in ("", '"', ' x"'):
            mine, theirs = ours.match(text + tail), XDSL_STRING_REGEX.match(text + tail)
            assert (mine and mine.group()) == (theirs and theirs.group()), text + tail


def _outcome(fn: object, literal: StringLiteral) -> bytes | str:
    try:
        return fn(literal)  # type: ignore[operator]
    except ParseError as exc:
        return "error: " + str(exc).splitlines()[-1]


def test_bytes_contents_equals_xdsl_on_random_literals() -> None:
    errors = 0
    for text in random_literals(3000):
        literal = StringLiteral(0, len(text), Input(text, "<test>"))
        mine, theirs = (
            _outcome(lambda s: s.bytes_contents, literal),
            _outcome(xdsl_bytes_contents, literal),
        )
        assert mine == theirs, text
        errors += isinstance(mine, str)
    assert 100 < errors < 2900  # both kinds of literal were tried


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ('"a\\q"', "Invalid escape sequence: \\q"),
        ('"abc\\"', "Incomplete escape sequence at end of string."),
    ],
)
def test_bad_escapes_keep_xdsls_messages(literal: str, message: str) -> None:
    with pytest.raises(ParseError, match=re.escape(message)):
        StringLiteral(0, len(literal), Input(literal, "<t>")).bytes_contents  # noqa: B018


def test_kernel_source_strings_round_trip() -> None:
    source = '__kernel void k(__global float* y) {\n\ty[0] = 1.0f; /* "q" \\ */\n}\n'
    module = irc.parse_module(
        'builtin.module attributes {s = "'
        + source.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
        + '"} {}'
    )
    assert module.attributes["s"].data == source  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dense<[1, 2]> : tensor<?xf32>", "Dense literal attribute should have a static shape."),
        ("dense<[1, 2]> : !quant.uniform<i8:f32, 0.5>", "Expected memref, vector or tensor type"),
        ("dense<[1.0, 2.0]> : tensor<2xf32>", None),
    ],
)
def test_dense_literal_types_are_checked_as_xdsl_checks_them(
    text: str, message: str | None
) -> None:
    source = f"builtin.module attributes {{c = {text}}} {{}}"
    if message is None:
        assert irc.parse_module(source).attributes["c"].get_values() == (1.0, 2.0)  # type: ignore[attr-defined]
        return
    with pytest.raises(ParseError, match=re.escape(message)):
        irc.parse_module(source)
