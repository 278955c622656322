"""Which tensors `opencl-bufferize` offers 8-bit storage (int8_storage.py), op by op.

A fused op's result is offered `Int8Storage` when its epilogue ends in a qcast -> dcast round
trip (lowerings/requantize.py, strict builds; stored as `q` itself where it fits a byte,
else as `q + zp`), it is not an entry result, and every op
reading it is one whose kernel generator dequantizes 8-bit loads (`likely_int8_reader`: the
input of a conv with a constant filter, groups 1 or depthwise, or of a fully_connected with
constant weights; a same-shape residual read by such a kernel's epilogue). An input is offered
when it is stored 8-bit. A prediction only: an unclaimed offer stays float or is dequantized
by `dequantize_kernel`'s launch. A standalone `quant.dcast` whose readers are all such is not
launched (`elided_dcast`): they read its 8-bit input (an int8 model's input image, MobileNetV2's
pooled features), unless its scale is not a float32.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

import numpy as np
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn, ocl, quant
from irc.dialects.nn.base import get_int
from irc.dialects.quant import UniformQuantizedType
from irc.targets.opencl.int8_storage import Int8Storage, Offer
from irc.targets.opencl.lowerings.epilogue import BINARY_EXPR, folds_round_trips
from irc.targets.opencl.lowerings.helpers import _kernel, _shape
from irc.targets.opencl.lowerings.requantize import is_round_trip, round_trip_exprs
from irc.targets.opencl.program import Program

TILED_READERS = (nn.Conv2DOp, nn.FullyConnectedOp)
"""Producers whose kernel generators (conv_kernels.py, gpu_kernels.py) read 8-bit inputs."""


def _tiled_reader(op: Operation) -> bool:
    """Whether `op` is lowered by a generator that claims 8-bit inputs (constant filter; a
    conv of groups 1 or depthwise)."""
    if isinstance(op, nn.FullyConnectedOp):
        return isinstance(op.weights.owner, nn.ConstantOp)
    if not isinstance(op, nn.Conv2DOp) or not isinstance(op.filter.owner, nn.ConstantOp):
        return False
    groups = get_int(op.all_properties(), "groups")
    channels = _shape(op.input)[-1]
    oc, _, _, icg = _shape(op.filter)
    return groups == 1 or (groups == channels and icg == 1 and oc == channels)


def _producer(op: Operation) -> Operation:
    """The op whose kernel runs `op` (an `ocl.fusion`'s producer, else `op`)."""
    fusion = op.parent_op()
    return fusion.producer if isinstance(fusion, ocl.FusionOp) else op


def likely_int8_reader(use_op: Operation, index: int, value: SSAValue) -> bool:
    """Whether operand `index` (`value`) of `use_op` will be read by a kernel that claims
    8-bit storage: a tiled conv's or fully_connected's input, or a same-shape residual of
    a binary op in such a kernel's fused epilogue."""
    producer = _producer(use_op)
    if use_op is producer:
        return index == 0 and isinstance(use_op, TILED_READERS) and _tiled_reader(use_op)
    if type(use_op) not in BINARY_EXPR or not _tiled_reader(producer):
        return False
    return _shape(value) == _shape(use_op.results[0])


def result_storage(epilogue: Sequence[Operation]) -> tuple[Int8Storage, str] | None:
    """The 8-bit storage of a fusion ending in a qcast -> dcast round trip, and the round
    trip's final product expression (left out of the epilogue when stored 8-bit)."""
    if (
        len(epilogue) < 2
        or not folds_round_trips()
        or not is_round_trip(epilogue, len(epilogue) - 2)
    ):
        return None
    qcast = epilogue[-2]
    assert isinstance(qcast, quant.QCastOp)
    element = qcast.output.type.element_type
    assert isinstance(element, UniformQuantizedType)
    storage = _per_tensor_storage(element)
    assert storage is not None  # is_round_trip: per-tensor 8-bit
    return _unshifted(storage, element), round_trip_exprs(qcast, last=True)[-1]


def _unshifted(storage: Int8Storage, element: UniformQuantizedType) -> Int8Storage:
    """A round trip's storage as the integer `q` itself where it fits a byte: `uchar` for
    `q` in [0, 255] (a zero point at the storage minimum, MobileNetV2's relu6 activations),
    `char` for [-128, 127]; readers then dequantize without subtracting a zero point."""
    low, high = element.storage_range
    zp = storage.zero_point
    if 0 <= low - zp and high - zp <= 255:
        return Int8Storage("uchar", storage.scale, 0)
    if -128 <= low - zp and high - zp <= 127:
        return Int8Storage("char", storage.scale, 0)
    return storage


def _per_tensor_storage(element: UniformQuantizedType) -> Int8Storage | None:
    if element.storage_width != 8 or len(element.scale_values) != 1:
        return None
    ctype = "char" if element.is_signed else "uchar"
    scale = float(np.float32(element.scale_values[0]))
    return Int8Storage(ctype, scale, int(element.zero_point_values[0]))


def _read_by_int8_readers(value: SSAValue, outputs: Container[SSAValue]) -> bool:
    return (
        value not in outputs
        and bool(value.uses)
        and all(likely_int8_reader(u.operation, u.index, value) for u in value.uses)
    )


def elided_dcast(op: Operation, outputs: Container[SSAValue]) -> Int8Storage | None:
    """The storage of a standalone per-tensor 8-bit `quant.dcast` (an int8 model's input)
    whose readers all read 8-bit storage: they read its input instead, no launch; None
    otherwise, or when its scale is not a float32 (the dcast kernel's double product
    rounded to float then differs from the readers' float32 one)."""
    if not isinstance(op, quant.DCastOp) or not folds_round_trips():
        return None
    element = op.input.type.element_type  # type: ignore[union-attr]  # a tensor
    out = op.output.type
    if not isinstance(element, UniformQuantizedType) or not isinstance(out, TensorType):
        return None
    if not isinstance(out.element_type, Float32Type):
        return None
    storage = _per_tensor_storage(element)
    if storage is None or storage.scale != element.scale_values[0]:
        return None  # the dcast multiplies by the double scale: float32's product differs
    if not _read_by_int8_readers(op.output, outputs):
        return None
    return storage


def offer_for(
    op: Operation,
    producer: Operation,
    epilogue: Sequence[Operation],
    residuals: Sequence[SSAValue],
    int8: dict[SSAValue, Int8Storage],
    outputs: Container[SSAValue],
) -> Offer | None:
    """What 8-bit storage to offer `op` (an op or `ocl.fusion`): its inputs stored 8-bit,
    and its result if it may be (module docstring). None: nothing to offer."""
    inputs = {v: int8[v] for v in [*producer.operands, *residuals] if v in int8}
    offer = Offer(inputs, residuals=list(residuals))
    if isinstance(op, ocl.FusionOp) and len(producer.results) == 1:
        final = op.outputs[0]
        found = result_storage(epilogue)
        if found is not None and _read_by_int8_readers(final, outputs):
            offer.result, offer.product = found
    if not offer.inputs and offer.result is None:
        return None
    return offer


def dequantize_kernel(storage: Int8Storage, program: Program) -> str:
    """A kernel dequantizing an 8-bit stored tensor into a float buffer (for a reader that
    did not claim its 8-bit storage)."""
    body = f"    y[gid] = NARROW({storage.dequantize('x0[gid]')});\n"
    desc = f"dequantize 8-bit storage ({storage.ctype}, scale {storage.scale_literal})"
    return program.kernel(_kernel(1, body, in_type=storage.ctype), desc)
