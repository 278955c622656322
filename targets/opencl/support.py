"""What the OpenCL target runs: the capability check behind `supports()`.

Slice 1: float32 tensors of static shape. NCHW ops are accepted (inside the target's regions
`convert-layout` gives them NHWC, the target's preferred layout); quantized ops arrive as
float through `insert-qdq` (`runs_quantized` is False): its quant.dcast / quant.qcast and
the data movement it keeps on stored integers run on 8-bit storage (char/uchar buffers).
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation

from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType
from irc.targets.base import Support
from irc.targets.opencl.codegen import BINARY_EXPR, UNARY_OPS

OTHER_OPS: frozenset[type[Operation]] = frozenset(
    {
        nn.ConstantOp,
        nn.Conv2DOp,
        nn.FullyConnectedOp,
        nn.BatchMatmulOp,
        nn.MaxPool2DOp,
        nn.AvgPool2DOp,
        nn.ReduceOp,
        nn.SoftmaxOp,
        nn.ReshapeOp,
        nn.TransposeOp,
        nn.ConcatOp,
        nn.PadOp,
        quant.DCastOp,
        quant.QCastOp,
    }
)
MOVEMENT_OPS = (nn.ReshapeOp, nn.TransposeOp, nn.ConcatOp, nn.PadOp)
"""Ops `insert-qdq` may leave on stored integers: kernels on char/uchar buffers."""

SUPPORTED_OPS: frozenset[type[Operation]] = (
    frozenset(BINARY_EXPR) | frozenset(UNARY_OPS) | OTHER_OPS
)
REDUCE_KINDS = ("mean", "sum", "max", "min")


def check_op(op: Operation) -> Support:
    """Whether the OpenCL target runs `op`, or the reason code and text why not."""
    if type(op) not in SUPPORTED_OPS:
        return Support.no("op", f"opencl: no kernel for '{op.name}'")
    types = [*op.operand_types, *op.result_types]
    if any(not isinstance(t, TensorType) for t in types):
        return Support.no("op", f"opencl: '{op.name}' has non-tensor operands or results")
    for t in types:
        assert isinstance(t, TensorType)
        element = t.element_type
        if isinstance(element, UniformQuantizedType) and element.storage_width != 8:
            if isinstance(op, (quant.DCastOp, quant.QCastOp, *MOVEMENT_OPS)):
                return Support.no(
                    "quantized", f"opencl: '{op.name}' on {element.storage_width}-bit storage"
                )
        if isinstance(element, UniformQuantizedType):
            # insert-qdq gives this target the float form (runs_quantized is False): judge it.
            if element.storage_width == 32 and t in op.result_types:
                return Support.no("quantized", f"opencl: '{op.name}' with 32-bit quantized results")
            element = element.expressed_type
        if not isinstance(element, Float32Type):
            return Support.no(
                "dtype", f"opencl: '{op.name}' on {t.element_type} tensors (float32 only)"
            )
        if any(d < 0 for d in t.get_shape()):
            return Support.no("dynamic", f"opencl: '{op.name}' has a dynamic shape ({t})")
    if isinstance(op, nn.PadOp) and op.mode.data != "constant":
        return Support.no(
            "attribute", f"opencl: '{op.name}' with mode '{op.mode.data}' (constant only)"
        )
    if isinstance(op, nn.ReduceOp) and op.kind.data not in REDUCE_KINDS:
        return Support.no("attribute", f"opencl: '{op.name}' of kind '{op.kind.data}'")
    if isinstance(op, nn.SoftmaxOp):
        rank = len(op.input.type.get_shape())  # type: ignore[union-attr]
        if op.axis.value.data % rank != rank - 1:
            return Support.no("attribute", "opencl: softmax over another axis than the last")
    return Support.yes()
