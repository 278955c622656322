"""`opencl-fuse`: group a producer and its elementwise epilogue into one `ocl.fusion`.

In every entry of an OpenCL executable not bufferized yet, a producer — `nn.conv2d`,
`nn.conv2d_transpose`, `nn.fully_connected`, `nn.batch_matmul` or an elementwise op — whose
only result has one use by an elementwise op is fused with it, and so on down the chain:

* unary activations (relu, relu6, clip, sigmoid, tanh, hard_swish, leaky_relu,
  hard_sigmoid);
* binary elementwise ops (add, sub, mul, div, maximum, minimum) whose other operand is a
  float32 tensor of the same shape — MobileNetV2's residual `nn.add` — read by the kernel at
  the output's index, a per-channel vector (`[C]`, `[1, 1, 1, C]`: a MatMul's bias add, a
  squeeze-excite scale) read at the channel, or a one-element constant (a decomposed
  hard-swish's `+ 3`, `/ 6`) inlined as a literal;
* after a conv, conv2d_transpose, fully_connected or batch_matmul (float accumulators), a
  per-tensor 8-bit `quant.qcast` whose only user is a `quant.dcast` back to float32 — what
  `insert-qdq` leaves between the float kernels of an int8 model: the value is quantized and
  dequantized in registers as one round trip (lowerings/requantize.py's `round_trip_exprs`;
  epilogue.py's `qcast_exprs` / `dcast_expr` under fast math) and the 8-bit tensor is never
  stored.

The chain goes into the region of an `ocl.fusion` placed where its last op was (every
value the chain reads is defined above that point), and `opencl-bufferize` emits one kernel
for it: the producer computes `v`, the epilogue rewrites `v` in registers before the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.dialects import delegate, nn, ocl, quant
from irc.dialects.quant import UniformQuantizedType
from irc.targets.opencl.lowerings.epilogue import (
    BINARY_EXPR,
    UNARY_OPS,
    is_channel_vector,
    scalar_constant,
)

TARGET = "opencl"

PRODUCERS: tuple[type[Operation], ...] = (
    nn.Conv2DOp,
    nn.Conv2DTransposeOp,
    nn.FullyConnectedOp,
    nn.BatchMatmulOp,
    *BINARY_EXPR,
    *UNARY_OPS,
)
"""Ops whose kernels apply an epilogue to their value before storing it."""


def _is_float32(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, TensorType) and isinstance(t.element_type, Float32Type)


def _shape(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _epilogue_user(value: SSAValue) -> Operation | None:
    """The op that can extend a chain ending in `value`, or None."""
    if not value.has_one_use() or not _is_float32(value):
        return None
    user = value.get_user_of_unique_use()
    assert user is not None
    if user.parent is not value.owner.parent or len(user.results) != 1:
        return None
    result = user.results[0]
    if not _is_float32(result) or _shape(result) != _shape(value):
        return None
    if isinstance(user, UNARY_OPS):
        return user
    if type(user) in BINARY_EXPR:
        a, b = user.operands
        other = b if a is value else a
        if other is value or not _is_float32(other):
            return None
        same = _shape(other) == _shape(value)
        if not same and scalar_constant(other) is None:
            if not is_channel_vector(_shape(other), _shape(value)):
                return None
        return user
    return None


QDQ_PRODUCERS: tuple[type[Operation], ...] = (
    nn.Conv2DOp,
    nn.Conv2DTransposeOp,
    nn.FullyConnectedOp,
    nn.BatchMatmulOp,
)
"""Producers whose epilogue runs on a float accumulator in every precision: they may absorb a
`quant.qcast` -> `quant.dcast` pair (in fp16 an elementwise producer's epilogue is half)."""


def _per_tensor_8bit(value: SSAValue) -> bool:
    t = value.type
    if not isinstance(t, TensorType):
        return False
    element = t.element_type
    if not isinstance(element, UniformQuantizedType) or element.storage_width != 8:
        return False
    return element.axis is None or len(element.scale_values) == 1


def _qdq_pair(value: SSAValue) -> tuple[quant.QCastOp, quant.DCastOp] | None:
    """`value -> quant.qcast -> quant.dcast` (per-tensor, 8-bit, the quantized tensor read by
    the dcast only, float32 out): the pair an int8 model's ops leave between float kernels
    (`insert-qdq`), absorbed as a rounding step in registers. None otherwise."""
    if not value.has_one_use() or not _is_float32(value):
        return None
    qcast = value.get_user_of_unique_use()
    if not isinstance(qcast, quant.QCastOp) or qcast.parent is not value.owner.parent:
        return None
    if not _per_tensor_8bit(qcast.output) or not qcast.output.has_one_use():
        return None
    dcast = qcast.output.get_user_of_unique_use()
    if not isinstance(dcast, quant.DCastOp) or dcast.parent is not qcast.parent:
        return None
    if not _is_float32(dcast.output) or _shape(dcast.output) != _shape(value):
        return None
    return qcast, dcast


def fusion_chain(producer: Operation) -> list[Operation]:
    """The epilogue ops `producer` can absorb, in order (empty: nothing to fuse)."""
    if not isinstance(producer, PRODUCERS) or len(producer.results) != 1:
        return []
    chain: list[Operation] = []
    current = producer
    while True:
        value = current.results[0]
        if isinstance(producer, QDQ_PRODUCERS) and (pair := _qdq_pair(value)) is not None:
            chain += pair
            current = pair[1]
            continue
        user = _epilogue_user(value)
        if user is None:
            return chain
        chain.append(user)
        current = user


def fuse_function(func: FuncOp) -> int:
    """Fuse every chain in `func`'s body; returns the number of fusions made."""
    made = 0
    for op in list(func.body.block.ops):
        if op.parent is not func.body.block:  # already moved into a fusion
            continue
        chain = fusion_chain(op)
        if not chain:
            continue
        last = chain[-1]
        fusion = ocl.FusionOp([last.results[0].type], [])
        Rewriter.insert_op(fusion, InsertPoint.before(last))
        last.results[0].replace_all_uses_with(fusion.outputs[0])
        for member in [op, *chain]:
            member.detach()
            fusion.body.block.add_op(member)
        fusion.body.block.add_op(ocl.YieldOp(last.results[0]))
        made += 1
    return made


def is_bufferized(executable: delegate.ExecutableOp) -> bool:
    """Whether `opencl-bufferize` already ran on this executable (it has its program)."""
    return any(isinstance(op, ocl.ProgramOp) for op in executable.body.block.ops)


def opencl_executables(module: ModuleOp) -> list[delegate.ExecutableOp]:
    """The module's OpenCL executables."""
    return [
        e for e in module.walk() if isinstance(e, delegate.ExecutableOp) and e.target.data == TARGET
    ]


def fuse_executable(executable: delegate.ExecutableOp) -> int:
    """Fuse the chains of every entry of one executable; returns the fusions made."""
    return sum(fuse_function(f) for f in executable.body.block.ops if isinstance(f, FuncOp))


@dataclass(frozen=True)
class OpenCLFusePass(ModulePass):
    """Wrap producer + elementwise epilogue chains of OpenCL executables in `ocl.fusion`."""

    name = "opencl-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in opencl_executables(op):
            if not is_bufferized(executable):
                fuse_executable(executable)
