"""Tensors that are not float: `i1` masks, i32 / i64 integers (indices, shapes, token ids).

Their device buffers hold the C types `_ctype` gives (uchar 0/1, int, long). A constant
operand of such a type cannot go through the generic constant upload (`opencl-bufferize`
uploads constants as `REAL`): `typed_input` uploads it as its bytes (a uchar constant that
the kernel reads through an `int` / `long` pointer; OpenCL devices are little-endian as the
host here, and buffers are aligned for any type).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerType, Signedness, TensorType
from xdsl.ir import Attribute, SSAValue

from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.targets.opencl.lowerings.helpers import INTEGER_CTYPES
from irc.targets.opencl.program import Program

__all__ = ["is_bool", "is_plain_integer", "typed_element", "typed_input"]

_STORAGE = {1: np.uint8, 32: np.int32, 64: np.int64}
"""The numpy type a constant of each integer width is uploaded as (before its byte view)."""


def is_bool(element: Attribute) -> bool:
    """Whether `element` is `i1`."""
    return isinstance(element, IntegerType) and element.width.data == 1


def is_plain_integer(element: Attribute) -> bool:
    """Whether `element` is a signless or signed i32 / i64 (an `int` / `long` buffer)."""
    return (
        isinstance(element, IntegerType)
        and element.width.data in INTEGER_CTYPES
        and element.signedness.data != Signedness.UNSIGNED
    )


def typed_element(element: Attribute) -> bool:
    """Whether a kernel of this module's families takes `element` natively: i1, i32, i64."""
    return is_bool(element) or is_plain_integer(element)


def typed_input(value: SSAValue, program: Program) -> SSAValue | str:
    """An operand as a kernel input: its value, or a constant `i1` / i32 / i64 tensor
    uploaded as the bytes of its device type (the generic upload would turn it into floats)."""
    owner = value.owner
    t = value.type
    if not isinstance(owner, nn.ConstantOp) or not isinstance(t, TensorType):
        return value
    element = t.element_type
    if not typed_element(element):
        return value
    assert isinstance(element, IntegerType)
    array = array_from_dense(owner.value)
    if is_bool(element):
        array = array != 0
    stored = np.ascontiguousarray(array, _STORAGE[element.width.data]).reshape(-1)
    return program.constant(stored.view(np.uint8))
