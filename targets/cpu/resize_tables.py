"""Index and weight tables of `nn.resize` for the CPU kernels.

The source coordinates, their rounding and the bilinear taps come from the reference target's
own helpers, evaluated once at compile time: the C kernels only gather with the tables, so
nearest-neighbour ties round exactly as the golden model rounds them.
"""

from __future__ import annotations

import numpy as np

from irc.dialects import nn
from irc.dialects.nn.base import floats_of, ints_of
from irc.targets.reference.shape import (  # the golden model's coordinate rules
    _linear_taps,
    _nearest_indices,
    _source_coordinates,
)

NearestTables = tuple[np.ndarray, np.ndarray]
BilinearTables = tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]


def resize_tables(op: nn.ResizeOp, in_h: int, in_w: int) -> NearestTables | BilinearTables:
    """Nearest: (row indices, column indices); bilinear: (low, high, weight) per axis."""
    out_h, out_w = ints_of(op.size)
    scales = None if op.scales is None else tuple(np.float32(s) for s in floats_of(op.scales))
    axes = []
    for i, (out_len, in_len) in enumerate(((out_h, in_h), (out_w, in_w))):
        scale = np.float32(out_len) / np.float32(in_len) if scales is None else scales[i]
        coords = _source_coordinates(out_len, in_len, scale, op.coordinate_mode.data)
        if op.mode.data == "nearest":
            axes.append(_nearest_indices(coords, in_len, op.nearest_mode.data))
        else:
            axes.append(_linear_taps(coords, in_len))
    return axes[0], axes[1]
