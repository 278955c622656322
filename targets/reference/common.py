"""Helpers shared by the reference kernels: property reading, fused activations, dtypes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Operation, SSAValue

from irc.targets.reference.registry import numpy_dtype

ArrayFn = Callable[[np.ndarray], np.ndarray]


def activation_name(op: Operation) -> str:
    """The op's fused activation (`none` when it has no such property)."""
    attr = op.properties.get("activation")
    return str(attr.data) if isinstance(attr, StringAttr | EnumAttribute) else "none"


def float_activation(name: str) -> ArrayFn | None:
    """The float function of a TFLite fused activation; None for `none`."""
    match name:
        case "none":
            return None
        case "relu":
            # -0.0 stays -0.0, as relu6/clip and the cpu/opencl targets keep it; NaN stays NaN
            return lambda x: np.where(x < 0, 0, x)
        case "relu6":
            return lambda x: np.clip(x, 0, 6)
        case "relu_n1_to_1":
            return lambda x: np.clip(x, -1, 1)
        case "tanh":
            return np.tanh
    raise ValueError(f"unknown activation '{name}'")


def apply_float_activation(op: Operation, x: np.ndarray) -> np.ndarray:
    """Apply the op's fused activation to a float (or integer) result."""
    fn = float_activation(activation_name(op))
    return x if fn is None else fn(x).astype(x.dtype, copy=False)


def result_dtype(value: SSAValue) -> np.dtype:
    """The numpy dtype that carries a value of this SSA value's type."""
    return numpy_dtype(value.type)
