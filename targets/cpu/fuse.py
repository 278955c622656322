"""`cpu-fuse`: wrap the op chains the CPU target runs as one C kernel in `cpu.fusion` ops.

In every entry of a CPU executable not lowered yet (after `lower-quantized`'s integer form,
which this pass applies first when it has not run), each chain becomes one `cpu.fusion`
placed where its last op was, its `kind` naming the kernel `cpu-codegen` emits for it:

* `"qconv"`: an int8 `nn.cast -> nn.sub zp -> nn.conv2d / nn.fully_connected ->
  quant.rescale [-> quant.scast -> nn.clip]` chain (`qfusion.match_chains`), run as one
  kernel reading the int8 input and writing the int8 result (no int32 tensor in memory);
* `"qadd"`: `lower-quantized`'s int8 add, both inputs widened, shifted and rescaled, summed
  and rescaled (`qfusion.match_add_chains`), one elementwise kernel;
* `"qtable"`: an elementwise integer chain of one 8-bit value (`lower-quantized`'s swish,
  ``mul(x, sigmoid(x))``) as one 256-entry lookup (`qtable.match_table_chains`);
* `"qmul"`: `lower-quantized`'s int8 mul, one input repeating along leading dimensions
  (squeeze-excitation), one kernel (`qmul.match_mul_chains`);
* `"qsum"`: `lower-quantized`'s int8 sum (mean, global average pool: widen, zero point,
  sum over contiguous axes) reading the bytes once (`qsum.match_sum_chains`);
* `"conv_add"`: a float NHWC, non-depthwise `nn.conv2d` whose only use is an `nn.add` with
  a same-shaped tensor (a residual): the add (and its activation, or an `nn.relu` that is
  the only use of an add without one) in the conv's epilogue.
* `"attention"`: an `nn.attention` with the head transposes whose only use it is, and the
  transpose that is its result's only use, that `irc_attention` reads / writes through
  strides instead (`attention_layout.match_attention`; `IRC_CPU_FUSE_ATTENTION=0` turns
  it off).
* `"dynamic_fc"`: a dynamically quantized fully connected layer (ONNX DynamicQuantizeLinear
  -> MatMulInteger -> scales [-> bias]) with its own copy of its input's quantization
  (`dynamic_quant.fuse_chains`; `IRC_CPU_FUSE_DYNAMIC=0` turns it off).

Constants and the chain's inputs stay above the fusion (its region reads them). A buffer
plan recorded earlier (`cpu-plan-memory`) is dropped from an entry in which a fusion is made.
`IRC_CPU_FUSE_INT8=0` / `IRC_CPU_FUSE_RESIDUAL=0` turn the int8 or the residual fusions
off (the ops then run one kernel each; for comparisons and tests).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.rewriter import InsertPoint, Rewriter

from irc.dialects import cpu, delegate, nn
from irc.dtypes import numpy_dtype
from irc.targets.cpu.attention_layout import KIND as ATTENTION_KIND
from irc.targets.cpu.attention_layout import fuse_attention_enabled, match_attention_chains
from irc.targets.cpu.dynamic_quant import fuse_chains as fuse_dynamic_chains
from irc.targets.cpu.qfusion import match_add_chains, match_chains
from irc.targets.cpu.qmul import KIND as QMUL_KIND
from irc.targets.cpu.qmul import match_mul_chains
from irc.targets.cpu.qsum import KIND as QSUM_KIND
from irc.targets.cpu.qsum import match_sum_chains
from irc.targets.cpu.qtable import KIND as TABLE_KIND
from irc.targets.cpu.qtable import match_table_chains
from irc.targets.cpu.support import C_TYPES

TARGET = "cpu"

FUSE_INT8_ENV = "IRC_CPU_FUSE_INT8"
"""Set to 0 to run the int8 convolution chains op by op (for comparisons and tests)."""
FUSE_RESIDUAL_ENV = "IRC_CPU_FUSE_RESIDUAL"
"""Set to 0 to run float residual adds as separate ops (for comparisons and tests)."""


def fuse_int8_enabled() -> bool:
    """Whether int8 convolution / add chains run as one fused kernel; default yes."""
    return os.environ.get(FUSE_INT8_ENV, "1").strip() != "0"


def fuse_residual_enabled() -> bool:
    """Whether a float residual add runs in its convolution's epilogue; default yes."""
    return os.environ.get(FUSE_RESIDUAL_ENV, "1").strip() != "0"


def _shape(value: SSAValue) -> tuple[int, ...]:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def _is_float(value: SSAValue) -> bool:
    return C_TYPES.get(numpy_dtype(value.type)) == "float"


def is_depthwise(op: nn.Conv2DOp) -> bool:
    """A conv2d with one group per input and output channel."""
    groups = op.groups.value.data
    c, oc = _shape(op.input)[-1], _shape(op.output)[-1]
    return groups > 1 and groups == c == oc


def residual_adds(ops: Sequence[Operation]) -> dict[Operation, nn.Conv2DOp]:
    """Float `nn.add` ops (no broadcasting) one of whose operands is the only use of an
    NHWC, non-depthwise conv2d: add -> conv, the add computed in the conv's epilogue.

    A fully_connected's residual add stays a separate kernel: in irc_conv2d's epilogue it
    cost more than it saved (BERT-base 2 layers seq 128 1.03x, DeiT-tiny 1.02x the time at
    2 threads, 1.01-1.02x at 1 thread CPU time, same process, Xeon @ 2.50GHz avx512vnni)."""
    found: dict[Operation, nn.Conv2DOp] = {}
    for op in ops:
        if not isinstance(op, nn.AddOp) or not _is_float(op.output):
            continue
        if _shape(op.lhs) != _shape(op.output) or _shape(op.rhs) != _shape(op.output):
            continue
        for value in (op.lhs, op.rhs):
            conv = value.owner
            if (
                isinstance(conv, nn.Conv2DOp)
                and conv not in found.values()
                and value.has_one_use()
                and op.lhs is not op.rhs
                and conv.layout.data == "NHWC"
                and _is_float(conv.output)
                and not is_depthwise(conv)
            ):
                found[op] = conv
                break
    return found


def trailing_relu(add: Operation) -> nn.ReluOp | None:
    """The float `nn.relu` that is the only use of `add`'s result when the add has no
    activation of its own: it joins the `conv_add` fusion (the add's activation becomes
    relu)."""
    activation = add.properties.get("activation")
    if activation is not None and activation.data != "none":  # type: ignore[attr-defined]  # an nn op's `activation` property is an ActivationAttr
        return None
    result = add.results[0]
    if not result.has_one_use():
        return None
    user = result.get_user_of_unique_use()
    if isinstance(user, nn.ReluOp) and _is_float(user.results[0]):
        return user
    return None


def lower_quantized(executable: delegate.ExecutableOp) -> None:
    """Express the executable's quantized arithmetic in the integer form (`lower-quantized`'s
    patterns; nothing happens when the pass already ran): the C kernels run that form."""
    from irc.passes.lower_quantized import lower_quantized_patterns

    walker = PatternRewriteWalker(
        GreedyRewritePatternApplier(lower_quantized_patterns(), dce_enabled=False)
    )
    walker.rewrite_region(executable.body)


def wrap_in_fusion(kind: str, members: Sequence[Operation]) -> cpu.FusionOp:
    """Move `members` (single-result ops; the last one's result is the kernel's) into a new
    `cpu.fusion` of `kind` placed before the last one, in their block order."""
    block = members[-1].parent_block()
    assert block is not None
    position = {op: i for i, op in enumerate(block.ops)}
    ordered = sorted(members, key=position.__getitem__)
    last = members[-1]
    fusion = cpu.FusionOp(kind, [last.results[0].type], [])
    Rewriter.insert_op(fusion, InsertPoint.before(last))
    last.results[0].replace_all_uses_with(fusion.outputs[0])
    for member in ordered:
        member.detach()
        fusion.body.block.add_op(member)
    fusion.body.block.add_op(cpu.YieldOp(last.results[0]))
    return fusion


def fuse_function(func: FuncOp) -> int:
    """Wrap every fusable chain of an entry; returns the number of fusions made."""
    dynamic = fuse_dynamic_chains(list(func.body.block.ops))
    ops = list(func.body.block.ops)
    groups: list[tuple[str, list[Operation]]] = []
    if fuse_int8_enabled():
        groups += [("qconv", [*c.skipped, c.final]) for c in match_chains(ops)]
        groups += [("qadd", [*c.skipped, c.final]) for c in match_add_chains(ops)]
        claimed = {op for _, members in groups for op in members}
        groups += [(TABLE_KIND, t.members) for t in match_table_chains(ops, claimed)]
        claimed = {op for _, members in groups for op in members}
        groups += [(QMUL_KIND, [*c.skipped, c.final]) for c in match_mul_chains(ops, claimed)]
        claimed = {op for _, members in groups for op in members}
        groups += [(QSUM_KIND, [*c.skipped, c.reduce]) for c in match_sum_chains(ops, claimed)]
    if fuse_attention_enabled():
        groups += [(ATTENTION_KIND, c.members) for c in match_attention_chains(ops)]
    if fuse_residual_enabled():
        for add, conv in residual_adds(ops).items():
            relu = trailing_relu(add)
            groups.append(("conv_add", [conv, add] if relu is None else [conv, add, relu]))
    for kind, members in groups:
        wrap_in_fusion(kind, members)
    if groups or dynamic:
        drop_plan(func)
    return len(groups) + dynamic


def drop_plan(func: FuncOp) -> None:
    """Remove a buffer plan `cpu-plan-memory` recorded on `func` (fusing invalidates it)."""
    func.attributes.pop(cpu.PLAN_WORKSPACE, None)
    for op in func.walk():
        for name in (cpu.PLAN_OFFSETS, cpu.PLAN_SCRATCH, cpu.PLAN_ALIAS):
            op.attributes.pop(name, None)


def is_lowered(executable: delegate.ExecutableOp) -> bool:
    """Whether `cpu-codegen` already ran on this executable (it has its `cpu.module`)."""
    return any(isinstance(op, cpu.CModuleOp) for op in executable.body.block.ops)


def cpu_executables(module: ModuleOp) -> list[delegate.ExecutableOp]:
    """The module's CPU executables not lowered to C yet."""
    return [
        e
        for e in module.walk()
        if isinstance(e, delegate.ExecutableOp) and e.target.data == TARGET and not is_lowered(e)
    ]


def fuse_executable(executable: delegate.ExecutableOp) -> int:
    """Fuse the chains of every entry of one executable; returns the fusions made."""
    lower_quantized(executable)
    return sum(fuse_function(f) for f in executable.body.block.ops if isinstance(f, FuncOp))


@dataclass(frozen=True)
class CpuFusePass(ModulePass):
    """Wrap the chains the CPU target runs as one kernel in `cpu.fusion` ops."""

    name = "cpu-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in cpu_executables(op):
            fuse_executable(executable)
