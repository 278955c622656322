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
