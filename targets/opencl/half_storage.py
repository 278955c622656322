"""16-bit storage of float tensors without cl_khr_fp16 (program.py's `fp16` precision).

OpenCL C has no `half` values without the cl_khr_fp16 extension; its buffers can still hold
IEEE half bits. `half_storage` rewrites a kernel template whose conversions are resolved
(`WIDEN`/`NARROW` removed: every value is float) and whose float tensors are still
`REAL<n>`:

* every pointer declared or cast as `REAL<n>*` becomes `ushort<n>*` (the size of `half<n>`:
  pointer arithmetic and vector accesses are those of the native half scheme);
* every element read `p[i]` through such a pointer `p` (a declared name, or a parenthesised
  cast `((__global const REAL4*)x)`) becomes `irc_h2f<n>(p[i])`, and an assignment
  `p[i] = v;` becomes `p[i] = irc_f2h<n>(v);` (a compound `p[i] *= v;` stores
  `irc_f2h<n>(irc_h2f<n>(p[i]) * (v))`, rounded again, as a half buffer would be);
* every other `REAL<n>` (locals, casts, `convert_REAL<n>`) becomes `float<n>`.

`HEADER` (the program's, `opencl-codegen` puts it first) defines the conversions for every
width with core OpenCL's `vload_half<n>` / `vstore_half<n>_rte` (OpenCL 1.0, no extension) on
a private copy: half to float exactly, float to half rounded to nearest, ties to even
(numpy's `astype(float16)`: overflow to infinity, subnormals, signed zeros, NaN kept). A GPU
converts in hardware. On PoCL's CPU device the builtins are calls (not inlined): MobileNetV2
ran 2.3-2.8x the float32 time with them, and 2.5-4.0x with the conversions written in integer
arithmetic and selects instead (benchmarks/opencl_fp16_storage.py; Xeon @ 2.50GHz,
AVX-512, same process), so the builtins are used everywhere.

A 3-wide vector of `REAL`, a pointer without an address space or one declared with two types
is refused (`ValueError`): no template has one, and each would need its own rewrite.
"""

from __future__ import annotations

import re

__all__ = ["HEADER", "half_storage"]

_POINTER_DECL = re.compile(
    r"(__global|__local|__constant)\s+(?:const\s+)?REAL([0-9]*)\s*\*\s*(?:const\s+)?"
    r"(?:restrict\s+)?([A-Za-z_][A-Za-z0-9_]*)"
)
_POINTER_CAST = re.compile(
    r"\(\s*(__global|__local|__constant)\s+(?:const\s+)?REAL([0-9]*)\s*\*\s*\)"
)
_REAL_POINTER = re.compile(r"(?<![A-Za-z0-9_])REAL([0-9]*)(\s*\*)")
_REAL_VALUE = re.compile(r"(?<![A-Za-z0-9])REAL([0-9]*)(?![A-Za-z0-9_])")
_IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")
_WIDTHS = ("", "2", "4", "8", "16")


def _matching_open(text: str, close: int) -> int:
    """The index of the `(` matching the `)` at `close`."""
    depth = 0
    for i in range(close, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise ValueError(f"unbalanced parentheses before: {text[close : close + 40]!r}")


def _matching_close(text: str, start: int, open_: str, close: str) -> int:
    """The index of the `close` matching the `open_` at `start`."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced '{open_}' in: {text[start : start + 40]!r}")


def _statement_end(text: str, start: int) -> int:
    """The index of the `;` ending the expression that starts at `start` (depth 0)."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth == 0:
            return i
    raise ValueError(f"no ';' after: {text[start : start + 40]!r}")


def _base(text: str, bracket: int, pointers: dict[str, str]) -> tuple[int, str] | None:
    """(start, vector width) of the `REAL` pointer subscripted at `bracket`, or None when
    the subscripted expression is not one."""
    end = bracket
    while end > 0 and text[end - 1].isspace():
        end -= 1
    if end == 0:
        return None
    if text[end - 1] == ")":
        start = _matching_open(text, end - 1)
        cast = _POINTER_CAST.match(text, start + 1)
        if cast is None:
            return None
        return start, cast.group(2)
    start = end
    while start > 0 and _IDENT_CHAR.match(text[start - 1]):
        start -= 1
    name = text[start:end]
    if name not in pointers or text[max(0, start - 2) : start].endswith((".", "->")):
        return None
    return start, pointers[name]


def half_storage(text: str) -> str:
    """A kernel template (conversions resolved, `REAL<n>` left) on 16-bit storage: see the
    module docstring."""
    pointers: dict[str, str] = {}
    for m in _POINTER_DECL.finditer(text):
        _, width, name = m.groups()
        if pointers.get(name, width) != width:
            raise ValueError(f"half storage: pointer '{name}' is declared with two types")
        pointers[name] = width
    if "REAL" not in text:
        return text
    spaced = len(_POINTER_DECL.findall(text)) + len(_POINTER_CAST.findall(text))
    if spaced != len(_REAL_POINTER.findall(text)):
        raise ValueError("half storage: a REAL pointer without an address space")
    brackets = [i for i, c in enumerate(text) if c == "["]
    for bracket in reversed(brackets):  # right to left: what follows is rewritten already
        found = _base(text, bracket, pointers)
        if found is None:
            continue
        start, width = found
        if width not in _WIDTHS:
            raise ValueError(f"half storage: no {width}-wide access through a REAL pointer")
        close = _matching_close(text, bracket, "[", "]")
        element = f"{text[start:bracket].strip()}[{text[bracket + 1 : close]}]"
        after = close + 1
        while after < len(text) and text[after].isspace():
            after += 1
        compound = text.startswith(("+=", "-=", "*=", "/="), after)
        if compound or (text[after : after + 1] == "=" and text[after + 1 : after + 2] != "="):
            skip = 2 if compound else 1
            end = _statement_end(text, after + skip)
            value = text[after + skip : end].strip()
            if compound:  # p[i] op= v: the stored value, widened, op v
                value = f"irc_h2f{width}({element}) {text[after]} ({value})"
            text = f"{text[:start]}{element} = irc_f2h{width}({value}){text[end:]}"
        else:
            text = f"{text[:start]}irc_h2f{width}({element}){text[close + 1 :]}"
    text = _REAL_POINTER.sub(lambda m: f"ushort{m.group(1)}{m.group(2)}", text)
    return _REAL_VALUE.sub(lambda m: f"float{m.group(1)}", text)


def _builtin(width: str) -> str:
    """The conversions of one width through core OpenCL's half builtins."""
    f, us = f"float{width}", f"ushort{width}"
    return (
        f"{f} irc_h2f{width}({us} h) {{ return vload_half{width}(0, (const half*)&h); }}\n"
        f"{us} irc_f2h{width}({f} v) {{\n"
        f"    {us} h;\n"
        f"    vstore_half{width}_rte(v, 0, (half*)&h);\n"
        "    return h;\n"
        "}\n"
    )


HEADER = (
    "/* precision=fp16: float tensors stored as IEEE half bits (ushort), float in registers:"
    " irc_h2f<n> widens exactly, irc_f2h<n> rounds to nearest even (core OpenCL builtins). */\n"
    + "".join(_builtin(w) for w in _WIDTHS)
)
"""The conversions every `fp16` program's kernels call (module docstring)."""
