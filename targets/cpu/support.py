"""What the CPU target runs: the one capability check shared by `supports()` and `lower-cpu`.

This slice runs float32 tensors of static shape. Quantized ops are refused (code
`quantized`): native int8 kernels on the `lower-quantized` form come later. NCHW ops are
accepted: inside the target's regions `convert-layout` gives them NHWC, and `lower-cpu`
wraps any NCHW op it still meets in transposes.
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation

from irc.dialects import nn
from irc.dialects.quant import UniformQuantizedType
from irc.targets.base import Support

BINARY_OPS: dict[type[nn.NNOp], str] = {
    nn.AddOp: "a + b",
    nn.SubOp: "a - b",
    nn.MulOp: "a * b",
    nn.DivOp: "a / b",
    nn.MaximumOp: "irc_maxf(a, b)",
    nn.MinimumOp: "irc_minf(a, b)",
    nn.PowOp: "powf(a, b)",
    nn.SquaredDifferenceOp: "(a - b) * (a - b)",
    nn.PReluOp: "a >= 0.0f ? a : a * b",
}
"""Elementwise binary ops and their C expression of `a` and `b` (float)."""

UNARY_OPS: frozenset[type[nn.NNOp]] = frozenset(
    {
        nn.ReluOp,
        nn.Relu6Op,
        nn.ClipOp,
        nn.SigmoidOp,
        nn.TanhOp,
        nn.HardSwishOp,
        nn.LeakyReluOp,
        nn.HardSigmoidOp,
        nn.ExpOp,
        nn.LogOp,
        nn.SqrtOp,
        nn.RsqrtOp,
        nn.AbsOp,
        nn.NegOp,
        nn.ErfOp,
        nn.GeluOp,
    }
)

OTHER_OPS: frozenset[type[Operation]] = frozenset(
    {
        nn.ConstantOp,
        nn.Conv2DOp,
        nn.FullyConnectedOp,
        nn.MaxPool2DOp,
        nn.AvgPool2DOp,
        nn.ReduceOp,
        nn.SoftmaxOp,
        nn.LogSoftmaxOp,
        nn.ReshapeOp,
        nn.TransposeOp,
        nn.ConcatOp,
        nn.SplitOp,
        nn.SliceOp,
        nn.PadOp,
        nn.BroadcastToOp,
        nn.ResizeOp,
    }
)

SUPPORTED_OPS: frozenset[type[Operation]] = frozenset(BINARY_OPS) | UNARY_OPS | OTHER_OPS
"""Every op class the CPU target has a kernel for (attributes permitting)."""


def _tensor_types(op: Operation) -> list[TensorType]:
    return [t for t in (*op.operand_types, *op.result_types) if isinstance(t, TensorType)]


def check_op(op: Operation) -> Support:
    """Whether the CPU target runs `op`, or the reason code and text why not."""
    if type(op) not in SUPPORTED_OPS:
        return Support.no("op", f"cpu: no kernel for '{op.name}'")
    types = [*op.operand_types, *op.result_types]
    if any(not isinstance(t, TensorType) for t in types):
        return Support.no("op", f"cpu: '{op.name}' has non-tensor operands or results")
    tensors = _tensor_types(op)
    if any(isinstance(t.element_type, UniformQuantizedType) for t in tensors):
        return Support.no(
            "quantized",
            f"cpu: quantized '{op.name}' is not supported yet (float32 kernels only; native "
            "int8 kernels come later)",
        )
    for t in tensors:
        if not isinstance(t.element_type, Float32Type):
            return Support.no(
                "dtype", f"cpu: '{op.name}' on {t.element_type} tensors (float32 only)"
            )
    for t in tensors:
        if any(d < 0 for d in t.get_shape()):
            return Support.no("dynamic", f"cpu: '{op.name}' has a dynamic shape ({t})")
    return _check_attributes(op)


def _check_attributes(op: Operation) -> Support:
    if isinstance(op, nn.PadOp) and op.mode.data != "constant":
        return Support.no(
            "attribute", f"cpu: '{op.name}' with mode '{op.mode.data}' (constant padding only)"
        )
    if isinstance(op, nn.ResizeOp) and op.mode.data not in ("nearest", "bilinear"):
        return Support.no("attribute", f"cpu: '{op.name}' with mode '{op.mode.data}'")
    return Support.yes()
