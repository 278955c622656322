"""Reads of a channel-padded residual in fused epilogues (`epilogue.channel_pad_view`).

A residual add whose other operand is an `nn.pad` of the last axis only (zeros after the
`Cin` channels, to `C`) reads the unpadded tensor instead, the pad never launched: an
epilogue writes `RESIDUAL<j>[gid pad Cin C]` (lowerings/helpers.py's `RESIDUAL_LOAD`), and
each kernel form turns it into loads below `Cin` and +0.0 above (face detection's 11
channel pads feeding BlazeFace residual adds).
"""

from __future__ import annotations

import re


def padded_residual(
    m: re.Match[str], element: str, channel: str, widen: bool = True, pixel: str | None = None
) -> str:
    """The element `element` (channel `channel`, of pixel `pixel` if known: no division) of a
    channel-padded residual read `m` (`RESIDUAL<j>[gid pad Cin C]`): the unpadded tensor's
    value below `Cin` channels, +0.0 (the pad's value) from there, as a float (`widen`) or a
    `REAL`."""
    j, cin, c = m.group(1), int(m.group(3)), int(m.group(4))
    row = f"({element}) / {c}" if pixel is None else f"({pixel})"
    load = f"RESIDUAL{j}[{row} * {cin} + ({channel})]"
    value = f"WIDEN({load})" if widen else load
    return f"(({channel}) < {cin} ? {value} : {'0.0f' if widen else '(REAL)0.0f'})"


def padded_residual_vector(m: re.Match[str], vw: int, pixel: str, c0: str) -> str:
    """Channels `c0 .. c0 + vw - 1` (`c0` a multiple of `vw`) of pixel `pixel` of a
    channel-padded residual read `m`, as a `floatVW`: pieces of the widest vector dividing
    both `vw` and `Cin` (each wholly below `Cin`, loaded, or wholly in the padding, +0.0)."""
    j, cin = m.group(1), int(m.group(3))
    g = next(g for g in (16, 8, 4, 2, 1) if g <= vw and vw % g == 0 and cin % g == 0)
    pieces = []
    for k in range(vw // g):
        start = f"({c0}) + {k * g}"
        if g == 1:
            load, zero = f"WIDEN(RESIDUAL{j}[({pixel}) * {cin} + {start}])", "0.0f"
        else:
            index = f"({pixel}) * {cin // g} + ({c0}) / {g} + {k}"
            load = f"WIDEN{g}(((__global const REAL{g}*)RESIDUAL{j})[{index}])"
            zero = f"(float{g})(0.0f)"
        pieces.append(f"({start} < {cin} ? {load} : {zero})")
    return pieces[0] if len(pieces) == 1 else f"(float{vw})({', '.join(pieces)})"


QDIV = "\x1fqdiv"
"""Marks an epilogue step `epilogue.qcast_exprs` writes as one statement block (a quantizing
division by multiplication, checked; `statements` expands it for the value's type)."""

NEAR_HALF = 0.5 - 2.0**-13
"""A product `v * (1/scale)` whose saturated value lies within `0.5 - NEAR_HALF` of a
half-integer may round differently from the quotient `v / scale`: those divide."""


def qdiv_marker(recip: str, scale: str, saturate: str, rounding: str) -> str:
    """The epilogue step `v = rounding(saturate(v / scale))` computed as
    `rounding(saturate(v * recip))` where that is provably the same integer (see
    `statements`), by the correctly rounded division elsewhere."""
    return "\x1f".join((QDIV, recip, scale, saturate, rounding))


def _any_lane(mask: str, lanes: int) -> str:
    """Statements setting `int any_` to whether the int mask `mask` (of `lanes` lanes, 1 for
    a scalar) has a nonzero lane: operators only (PoCL does not inline `any` on wide
    vectors)."""
    if lanes == 1:
        return f"const int any_ = {mask};"
    code = [f"const int{lanes} m{lanes}_ = {mask};"]
    while lanes > 2:
        code.append(f"const int{lanes // 2} m{lanes // 2}_ = m{lanes}_.lo | m{lanes}_.hi;")
        lanes //= 2
    code.append("const int any_ = m2_.x | m2_.y;")
    return " ".join(code)


def statements(exprs: list[str], vec: str, lanes: int, indent: str = " ") -> str:
    """C statements applying epilogue expressions of `v` (a `vec` of `lanes` lanes) in order;
    a `qdiv_marker` step becomes a block:

    `t = v * recip` differs from the float quotient `q = v / scale` by less than 2**-13 where
    |v / scale| < 512 (each of `recip` and the product rounds by at most 2**-24 relatively),
    and saturation (1-Lipschitz, bounds below 512 in magnitude) keeps that; so unless the
    saturated `t` lies within 2**-13 of a half-integer, `t` and `q` round to the same integer
    (beyond 512 both saturate). Where any lane does, the vector divides instead. NaN and inf
    take the fast path with the same result (0, or the bound)."""
    out = []
    for e in exprs:
        if e == "v":
            continue
        if not e.startswith(QDIV):
            out.append(f"{indent}v = {e};")
            continue
        recip, scale, saturate, rounding = e[len(QDIV) + 1 :].split("\x1f")
        limit = f"{NEAR_HALF!r}f"
        out.append(
            f"{indent}{{ const {vec} u_ = v; v = u_ * {recip}; v = {saturate};"
            f" const {vec} s_ = v; v = {rounding}; const {vec} d_ = s_ - v;"
            f" {_any_lane(f'd_ > {limit} || d_ < -{limit}', lanes)} if (any_) {{"
            f" v = u_ / {scale}; v = {saturate}; v = {rounding}; }} }}"
        )
    return "\n".join(out) + ("\n" if out else "")
