"""Resolve a TFLite STRIDED_SLICE (begin/end/strides with masks) into `nn.slice` + reshape.

TensorFlow's rules: the i-th entry of begin/end/strides is a "sparse" index spec; an ellipsis
bit stands for as many full dimensions as the input has beyond the other specs (an implicit
ellipsis follows the last spec), a new-axis bit inserts a unit dimension, a shrink bit takes
one element and drops the dimension. Begin/end of the remaining dimensions are clamped the
way numpy clamps slice bounds (negative values count from the end; with a negative stride the
end may be -1, "through index 0").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SliceSpec:
    """Per input dimension begin/end/strides for `nn.slice`, and the final output shape."""

    begin: list[int]
    end: list[int]
    strides: list[int]
    output_shape: list[int]

    def is_identity(self, shape: Sequence[int]) -> bool:
        return all(
            b == 0 and e == size and s == 1
            for b, e, s, size in zip(self.begin, self.end, self.strides, shape)
        )


def resolve_strided_slice(
    shape: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int],
    *,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
    offset: bool = False,
) -> SliceSpec:
    """Resolve the masks for a static `shape`; ValueError for an invalid specification."""
    count = len(begin)
    if len(end) != count or len(strides) != count:
        raise ValueError(
            f"begin, end and strides have {len(begin)}, {len(end)} and {len(strides)} values"
        )
    rank = len(shape)
    bit = [1 << i for i in range(count)]
    ellipses = [i for i in range(count) if ellipsis_mask & bit[i]]
    if len(ellipses) > 1:
        raise ValueError(f"more than one ellipsis in mask {ellipsis_mask}")
    if not ellipses:
        ellipses_at = count  # an implicit ellipsis after the last spec
    else:
        ellipses_at = ellipses[0]
    consumed = sum(1 for i in range(count) if i != ellipses_at and not new_axis_mask & bit[i])
    if consumed > rank:
        raise ValueError(f"{consumed} sliced dimensions for a rank-{rank} input")
    full = rank - consumed  # dimensions the ellipsis stands for

    out_begin: list[int] = []
    out_end: list[int] = []
    out_strides: list[int] = []
    output_shape: list[int] = []
    dim = 0

    def take_full() -> None:
        nonlocal dim
        out_begin.append(0)
        out_end.append(shape[dim])
        out_strides.append(1)
        output_shape.append(shape[dim])
        dim += 1

    for i in range(count + (1 if not ellipses else 0)):
        if i == ellipses_at:
            for _ in range(full):
                take_full()
            continue
        if new_axis_mask & bit[i]:
            output_shape.append(1)
            continue
        size, stride = shape[dim], strides[i]
        if stride == 0:
            raise ValueError(f"stride {i} is zero")
        b, e = begin[i], end[i]
        if shrink_axis_mask & bit[i]:
            index = b + size if b < 0 else b
            if begin_mask & bit[i]:
                index = 0 if stride > 0 else size - 1
            if not 0 <= index < size:
                raise ValueError(f"index {b} is out of range for dimension {dim} of size {size}")
            out_begin.append(index)
            out_end.append(index + 1)
            out_strides.append(1)
            dim += 1
            continue
        low, high = (0, size) if stride > 0 else (-1, size - 1)
        if begin_mask & bit[i]:
            b = low if stride > 0 else high
        else:
            b = min(max(b + size if b < 0 else b, low), high)
        if offset:  # TFLite's `offset`: end counts from the resolved begin
            e += b
        if end_mask & bit[i]:
            e = high if stride > 0 else low
        else:
            e = min(max(e + size if e < 0 else e, low), high)
        length = max(0, -(-(e - b) // stride))
        if length == 0:
            b, e = 0, 0  # an empty slice: any in-range bounds describe it
            stride = 1
        out_begin.append(b)
        out_end.append(e)
        out_strides.append(stride)
        output_shape.append(length)
        dim += 1
    while dim < rank:  # only reachable without specs for the trailing dimensions
        take_full()
    return SliceSpec(out_begin, out_end, out_strides, output_shape)
