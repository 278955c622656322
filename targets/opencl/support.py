"""What the OpenCL target runs: the capability check behind `supports()`.

An op runs when its type has a lowering (`irc.targets.opencl.lowerings.registered_ops()`)
on float32 tensors of static shape, with the pad modes and reduce kinds the lowerings
cover. Besides float32, `i1`, i32 and i64 tensors (`lowerings/typed.py`) are data of the
movement ops of `TYPED_OPS` (reshape, transpose, concat, slice, split, broadcast_to,
gather, select), operands of comparisons, logic (`i1`) and casts, and gather indices; an
integer or `i1` constant is accepted where all its readers take that type. NCHW ops are
accepted (inside the target's regions `convert-layout` gives them NHWC, the target's
preferred layout); quantized ops arrive as float through
`insert-qdq` (`runs_quantized` is False): its quant.dcast / quant.qcast and the data
movement it keeps on stored integers run on 8-bit storage (char/uchar buffers). Split writes
all its pieces in one launch.
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType
from irc.targets.base import Support
from irc.targets.opencl.lowerings import registered_ops
from irc.targets.opencl.lowerings.logic import BOOL_OPS
from irc.targets.opencl.lowerings.typed import is_bool, typed_element

MOVEMENT_OPS = (
    nn.ReshapeOp,
    nn.TransposeOp,
    nn.ConcatOp,
    nn.PadOp,
    nn.SelectOp,
    nn.SliceOp,
    nn.BroadcastToOp,
    nn.GatherOp,
    nn.ResizeOp,
    nn.SplitOp,
)
"""Ops `insert-qdq` may leave on stored integers: kernels on char/uchar buffers."""

TYPED_MOVEMENT_OPS = (
    nn.ReshapeOp,
    nn.TransposeOp,
    nn.ConcatOp,
    nn.SliceOp,
    nn.SplitOp,
    nn.BroadcastToOp,
    nn.GatherOp,
    nn.SelectOp,
)
"""Data movement whose data may be `i1`, i32 or i64 (`convert-layout` inserts transposes
and reshapes of masks inside the target's regions; shapes and token ids are i64)."""

TYPED_OPS: tuple[type[Operation], ...] = (*TYPED_MOVEMENT_OPS, *BOOL_OPS, nn.CastOp)
"""Ops whose lowerings take `i1` / i32 / i64 operands (constants uploaded as bytes)."""

SUPPORTED_OPS: frozenset[type[Operation]] = registered_ops() | {nn.ConstantOp}
"""Op types with a lowering, and constants (uploaded by `opencl-bufferize`, no kernel)."""
REDUCE_KINDS = ("mean", "sum", "max", "min", "prod")
PAD_MODES = ("constant", "reflect", "edge")


def _typed_elsewhere(op: Operation, value: SSAValue) -> bool:
    """Whether `value` (an operand or result of `op`) is one of the non-float tensors a
    kernel takes: data of the typed movement ops, operands of comparisons and casts, `i1`
    masks of logic and select, int32/int64 gather indices."""
    t = value.type
    assert isinstance(t, TensorType)
    element = t.element_type
    if isinstance(op, nn.GatherOp) and value is op.indices and isinstance(element, IntegerType):
        return element.width.data in (32, 64)
    if not typed_element(element):
        return False
    if isinstance(op, (*TYPED_MOVEMENT_OPS, nn.CompareOp, nn.CastOp)):
        return True
    if isinstance(op, BOOL_OPS):  # logic: i1 only
        return is_bool(element)
    if isinstance(op, nn.ConstantOp) and value.uses:
        # uploaded in the form its readers take (lowerings/typed.py), so only for those
        return all(
            isinstance(u.operation, TYPED_OPS)
            or (isinstance(u.operation, nn.GatherOp) and u.index == 1)
            for u in value.uses
        )
    return False


def check_op(op: Operation) -> Support:
    """Whether the OpenCL target runs `op`, or the reason code and text why not."""
    if type(op) not in SUPPORTED_OPS:
        return Support.no("op", f"opencl: no kernel for '{op.name}'")
    types = [*op.operand_types, *op.result_types]
    if any(not isinstance(t, TensorType) for t in types):
        return Support.no("op", f"opencl: '{op.name}' has non-tensor operands or results")
    for value in [*op.operands, *op.results]:
        t = value.type
        assert isinstance(t, TensorType)
        if any(d < 0 for d in t.get_shape()):
            return Support.no("dynamic", f"opencl: '{op.name}' has a dynamic shape ({t})")
        if _typed_elsewhere(op, value):
            continue
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
    if isinstance(op, nn.PadOp) and op.mode.data not in PAD_MODES:
        return Support.no("attribute", f"opencl: '{op.name}' with mode '{op.mode.data}'")
    if isinstance(op, nn.ReduceOp) and op.kind.data not in REDUCE_KINDS:
        return Support.no("attribute", f"opencl: '{op.name}' of kind '{op.kind.data}'")
    return Support.yes()
