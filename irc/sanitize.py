"""The one sanitiser for text that reaches generated C and OpenCL C source.

Generated kernels are compiled, so any text a model or an IR file can influence (a function or
kernel name, a comment describing an op, a profiling label) must not be able to end a comment,
open a string, start a preprocessor line or splice lines. Code generators never format such text
into source directly; they call one of these three functions at the point of formatting:

* `c_identifier(name)`: a valid C/OpenCL C identifier. A name that already is one (ASCII, not a
  keyword, not reserved) is returned unchanged; any other is mangled deterministically, with a
  hash suffix so that distinct names stay distinct.
* `c_comment(text)`: text safe inside `/* ... */` on one line.
* `c_string_literal(text)`: a quoted C string literal with every unsafe character escaped.
"""

from __future__ import annotations

import re
import zlib

__all__ = ["C_KEYWORDS", "c_comment", "c_identifier", "c_string_literal"]

C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local bool true false half uchar ushort uint ulong
    kernel __kernel global __global local __local constant __constant private __private
    read_only write_only read_write __read_only __write_only __read_write""".split()
)
"""C11 and OpenCL C keywords (and type names) that an identifier may not be."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_IDENTIFIER = 63  # C's guaranteed significant length of an external identifier
_MAX_COMMENT = 240


def _is_safe_identifier(name: str) -> bool:
    return (
        len(name) <= _MAX_IDENTIFIER
        and _IDENTIFIER.fullmatch(name) is not None
        and name not in C_KEYWORDS
        and not name.startswith("__")  # reserved for the implementation
        and not (name.startswith("_") and name[1:2].isupper())
    )


def c_identifier(name: str) -> str:
    """`name` as a C identifier: unchanged when it is a safe one, else mangled (see module)."""
    if _is_safe_identifier(name):
        return name
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    cleaned = cleaned.strip("_")[:40] or "id"
    if cleaned[0].isdigit():
        cleaned = f"n{cleaned}"
    digest = zlib.crc32(name.encode("utf-8", "surrogatepass")) & 0xFFFFFFFF
    return f"{cleaned}_x{digest:08x}"


def c_comment(text: str) -> str:
    """`text` for the inside of a one-line `/* ... */` comment: printable ASCII only, no comment
    delimiters, no line splice, no trigraph, at most 240 characters."""
    out = []
    for c in text:
        out.append(c if c.isascii() and c.isprintable() else "?" if not c.isspace() else " ")
    safe = "".join(out)
    safe = safe.replace("*/", "* /").replace("/*", "/ *").replace("\\", "/")
    safe = re.sub(r"\?{2,}", "?", safe)  # no `??/` (a trigraph backslash) or other trigraphs
    return safe[:_MAX_COMMENT]


def c_string_literal(text: str) -> str:
    """`text` as a double-quoted C string literal: letters, digits, space and harmless
    punctuation as they are; every other byte of its UTF-8 as a three-digit octal escape."""
    out = ['"']
    for byte in text.encode("utf-8", "surrogatepass"):
        c = chr(byte)
        if c.isascii() and (c.isalnum() or c in " ._-,:;()[]<>=+*/%@#!&|^~{}$'"):
            out.append(c)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)
