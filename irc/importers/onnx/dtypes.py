"""Element types of the ONNX importer: ONNX `TensorProto` types, numpy dtypes and xDSL types.

irc's element types are float32, float16, float64, int8, int16, int32, int64, uint8 and bool
(`i1`); `dtype_for_element` reads the storage type of a `!quant.uniform` element.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import onnx
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerType, Signedness
from xdsl.ir import Attribute

__all__ = ["dtype_for_element", "dtype_for_onnx", "element_for_dtype", "onnx_type_name"]

_ONNX_DTYPES: dict[int, np.dtype] = {
    onnx.TensorProto.FLOAT: np.dtype(np.float32),
    onnx.TensorProto.FLOAT16: np.dtype(np.float16),
    onnx.TensorProto.DOUBLE: np.dtype(np.float64),
    onnx.TensorProto.INT8: np.dtype(np.int8),
    onnx.TensorProto.INT16: np.dtype(np.int16),
    onnx.TensorProto.INT32: np.dtype(np.int32),
    onnx.TensorProto.INT64: np.dtype(np.int64),
    onnx.TensorProto.UINT8: np.dtype(np.uint8),
    onnx.TensorProto.BOOL: np.dtype(np.bool_),
}


def onnx_type_name(elem_type: int) -> str:
    """The name of an ONNX element type for messages (`float`, `int64`, ...)."""
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type {elem_type}"


def dtype_for_onnx(elem_type: int) -> np.dtype | None:
    """The numpy dtype of an ONNX element type, or None when irc has no such element type."""
    return _ONNX_DTYPES.get(elem_type)


def element_for_dtype(dtype: npt.DTypeLike) -> Attribute:
    """The xDSL element type of a numpy dtype (ValueError when irc has none)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return Float32Type()
    if dtype == np.float16:
        return Float16Type()
    if dtype == np.float64:
        return Float64Type()
    if dtype == np.bool_:
        return IntegerType(1)
    if dtype == np.uint8:
        return IntegerType(8, Signedness.UNSIGNED)
    if dtype.kind == "i" and dtype.itemsize in (1, 2, 4, 8):
        return IntegerType(dtype.itemsize * 8)
    raise ValueError(f"unsupported element type {dtype}")


def dtype_for_element(element: Attribute) -> np.dtype:
    """The numpy dtype of an xDSL element type (the storage type for quantized ones)."""
    storage = getattr(element, "storage_type", element)
    if isinstance(storage, Float32Type):
        return np.dtype(np.float32)
    if isinstance(storage, Float16Type):
        return np.dtype(np.float16)
    if isinstance(storage, Float64Type):
        return np.dtype(np.float64)
    if isinstance(storage, IntegerType):
        width = storage.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if storage.signedness.data == Signedness.UNSIGNED:
            return np.dtype(f"uint{width}")
        return np.dtype(f"int{width}")
    raise ValueError(f"no numpy dtype for {element}")
