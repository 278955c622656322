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
converts in hardware. PoCL's CPU device calls the builtins out of line, and the scalar loads
of the register-tiled kernels' inner loops (one activation per row and step) pay for it:
built with `-D IRC_HALF_TABLES` (build.py, on CPU devices) a scalar load widens through three
small `__constant` tables instead (exact for all 65536 halves; on a GPU a divergent
`__constant` lookup would serialise), and a scalar store rounds in integer arithmetic
(`_integer_store`: PoCL compiles its inlined `vstore_half_rte` slowly, at every lane of a
tiled kernel's edge stores; GPUs compile the header's builtins as before). MobileNetV2 in
fp16 against fp32, same process, Xeon @ 2.50GHz AVX-512, PoCL, shared machine: builtins
everywhere 1.85-2.4x the fp32 time, with scalar tables 1.45-1.7x; the conversions in integer
arithmetic and selects 3.3-4.0x, every vector load through tables 7.7x.

A 3-wide vector of `REAL`, a pointer without an address space or one declared with two types
is refused (`ValueError`): no template has one, and each would need its own rewrite.
"""

from __future__ import annotations

import re

__all__ = ["HALF_TABLES_MACRO", "HEADER", "half_storage"]

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
    """The conversions of one width through core OpenCL's half builtins; on a CPU device
    (`HALF_TABLES_MACRO`) the scalar store is `_integer_store()` instead."""
    f, us = f"float{width}", f"ushort{width}"
    store = (
        f"{us} irc_f2h{width}({f} v) {{\n"
        f"    {us} h;\n"
        f"    vstore_half{width}_rte(v, 0, (half*)&h);\n"
        "    return h;\n"
        "}\n"
    )
    if not width:
        store = f"#ifdef {HALF_TABLES_MACRO}\n{_integer_store()}#else\n{store}#endif\n"
    load = f"{f} irc_h2f{width}({us} h) {{ return vload_half{width}(0, (const half*)&h); }}\n"
    return load + store


def _integer_store() -> str:
    """`irc_f2h` in integer arithmetic and selects, no branch (Giesen's
    float_to_half_fast3_rtne): bit for bit `vstore_half_rte` and numpy's `astype(float16)`
    for every float (checked on all 2^32; nearest, ties to even, overflow to infinity,
    subnormal halves rounded by one float addition of 0.5, exact in the default
    round-to-nearest; NaN stays NaN). PoCL inlines its `vstore_half_rte` at every scalar
    store and compiles it slowly: a register-tiled fp16 GEMM kernel storing its 7 x 16
    outputs lane by lane took 1.17 s to compile with it, 0.51 s with this, a test program of
    14 fp16 conv kernels 3.2 -> 1.9 CPU s (Xeon @ 2.50GHz). The vector stores keep the
    builtins (on PoCL as fast to compile, and faster to run, than integer code)."""
    return (
        "ushort irc_f2h(float v) {\n"
        "    const uint a = as_uint(v) & 0x7fffffffu;\n"
        "    const uint normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;\n"
        "    const uint tiny = as_uint(as_float(a) + 0.5f) - 0x3f000000u;\n"
        "    const uint special = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : 0x7c00u;\n"
        "    const uint h = a >= 0x47800000u ? special : a < 0x38800000u ? tiny : normal;\n"
        "    return (ushort)(h | ((as_uint(v) >> 16) & 0x8000u));\n"
        "}\n"
    )


HALF_TABLES_MACRO = "IRC_HALF_TABLES"
"""Defined (`-D`, build.py on CPU devices): scalar half loads through `_tables()`."""


def _tables() -> str:
    """`__constant` tables widening a half's bits exactly by lookups (van der Zijp's
    method: mantissa of 2048 entries, exponent and offset of 64), and `irc_h2f` on them."""
    mantissa = [0]
    for i in range(1, 1024):  # subnormal halves: normalised
        m, e = i << 13, 0
        while not m & 0x00800000:
            e -= 0x00800000
            m <<= 1
        mantissa.append(((m & ~0x00800000) | (e + 0x38800000)) & 0xFFFFFFFF)
    mantissa += [0x38000000 + (i << 13) for i in range(1024)]
    exponent = [0, *(i << 23 for i in range(1, 31)), 0x47800000, 0x80000000]
    exponent += [0x80000000 + (i << 23) for i in range(1, 31)] + [0xC7800000]
    offset = [0 if i in (0, 32) else 1024 for i in range(64)]

    def table(name: str, values: list[int]) -> str:
        return f"__constant uint {name}[{len(values)}] = {{{','.join(map(str, values))}}};\n"

    return (
        table("irc_half_mantissa", mantissa)
        + table("irc_half_exponent", exponent)
        + table("irc_half_offset", offset)
        + "float irc_h2f(ushort h) {\n"
        "    const uint e = h >> 10;\n"
        "    return as_float(irc_half_mantissa[irc_half_offset[e] + (h & 0x3ffu)]"
        " + irc_half_exponent[e]);\n"
        "}\n"
    )


_SCALAR_LOAD = _builtin("").split("\n", 1)
"""The builtin `irc_h2f` line, and the rest of the scalar conversions."""

HEADER = (
    "/* precision=fp16: float tensors stored as IEEE half bits (ushort), float in registers:"
    " irc_h2f<n> widens exactly, irc_f2h<n> rounds to nearest even (core OpenCL builtins;"
    " scalar loads through tables on CPU devices). */\n"
    f"#ifdef {HALF_TABLES_MACRO}\n"
    + _tables()
    + "#else\n"
    + _SCALAR_LOAD[0]
    + "\n#endif\n"
    + _SCALAR_LOAD[1]
    + "".join(_builtin(w) for w in _WIDTHS[1:])
)
"""The conversions every `fp16` program's kernels call (module docstring)."""
