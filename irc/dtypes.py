"""The one mapping between xDSL element types and numpy dtypes.

Quantized tensors travel as arrays of their storage type, `i1` as numpy `bool`; signed (`si8`)
and signless (`i8`) integers share a dtype. bf16 has no numpy dtype.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
)
from xdsl.ir import Attribute

from irc.dialects.quant import UniformQuantizedType

_ELEMENT_TYPES: dict[np.dtype, Attribute] = {
    np.dtype(np.float16): f16,
    np.dtype(np.float32): f32,
    np.dtype(np.float64): f64,
    np.dtype(np.bool_): i1,
    **{np.dtype(f"int{width}"): IntegerType(width) for width in (8, 16, 32, 64)},
    **{
        np.dtype(f"uint{width}"): IntegerType(width, Signedness.UNSIGNED)
        for width in (8, 16, 32, 64)
    },
}
_DTYPES: dict[Attribute, np.dtype] = {element: dtype for dtype, element in _ELEMENT_TYPES.items()}


def element_type(dtype: np.dtype | type | str) -> Attribute:
    """The element type of tensors that numpy arrays of `dtype` hold.

    Raises TypeError for dtypes no element type matches (complex, strings, non-native byte
    order, ...).
    """
    element = _ELEMENT_TYPES.get(np.dtype(dtype))
    if element is None:
        raise TypeError(f"no element type for numpy dtype {np.dtype(dtype)}")
    return element


def numpy_dtype(element: Attribute) -> np.dtype:
    """The numpy dtype that carries values of an element type (quantized: its storage).

    A tensor type stands for its element type.
    """
    if isinstance(element, TensorType):
        element = element.element_type
    if isinstance(element, UniformQuantizedType):
        element = element.storage_type
    if isinstance(element, BFloat16Type):
        raise TypeError("bf16 tensors have no numpy dtype in the reference target")
    key = element
    if isinstance(element, IntegerType):
        if element.width.data == 1:
            key = i1  # a bool whatever its signedness
        elif element.signedness.data == Signedness.SIGNED:
            key = IntegerType(element.width)
    dtype = _DTYPES.get(key)
    if dtype is None:
        raise TypeError(f"no numpy dtype for element type {element}")
    return dtype
