"""The C types of the values the CPU target's generated C holds (a leaf module).

numpy dtype -> C type: float32 tensors are `float`, quantized tensors hold their storage
integers, `i1` masks are `_Bool`, float16 tensors their IEEE bits (`uint16_t`; only the
casts to and from float32 read or write them, `support.check_op`).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Attribute

from irc.dtypes import numpy_dtype

C_TYPES: dict[np.dtype, str] = {
    np.dtype(np.float32): "float",
    np.dtype(np.float16): "uint16_t",
    np.dtype(np.int8): "int8_t",
    np.dtype(np.uint8): "uint8_t",
    np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t",
    np.dtype(np.int64): "int64_t",
    np.dtype(np.bool_): "_Bool",
}
"""numpy dtypes of the values the generated C holds, and their C types (quantized tensors
hold their storage integers)."""


def c_type(element: Attribute) -> str | None:
    """The C type holding values of `element` (quantized: its storage), None if none does."""
    try:
        return C_TYPES.get(numpy_dtype(element))
    except TypeError:
        return None
