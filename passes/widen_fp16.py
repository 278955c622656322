"""widen-fp16: float16 models compute in float32 with their float16 values.

ONNX models converted to float16 (onnxconverter_common's
`convert_float_to_float16(keep_io_types=True)`) hold float16 weights and float16
activations. No target here has float16 arithmetic of its own: the cpu target computes in
float32, the OpenCL target's half storage is a build option (`precision=fp16`) for whole
float32 models. This pass gives such a model the form every target runs:

* an `nn.constant` of `f16` becomes the `f32` constant of the same values (every float16 is
  a float32 exactly: the weights are the model's float16 weights, widened once at compile
  time);
* every other `f16` tensor value (op results, block arguments of nested regions) becomes
  `f32`: the op computes and stores in float32 (the accumulation onnxruntime's float16
  kernels do in float32 too, without their rounding of each result to float16);
* an `nn.cast` that thereby converts `f32` to `f32` (the model's casts between its float32
  inputs/outputs and its float16 body) goes away;
* a function whose signature has `f16` tensors keeps it: its `f16` arguments are cast to
  `f32` at the entry and its `f16` results back before the return (a remark says so), so the
  caller feeds and reads float16 as before.

Modules without `f16` tensors are left unchanged.

With `widen-fp16{targets=a,b precision=P}` each op on `f16` tensors is offered to the
targets (`Target.computes_float16_op(op, P)`; `precision` unset: each target's default, on
cpu `IRC_CPU_PRECISION`, else float32). When none of them keeps any op in float16, the
module is widened whole as above. When some are (the cpu target at `precision=fp16` keeps
the ops it has float16 kernels for: convolutions, elementwise ops, reductions, casts, data
movement), the module keeps its `f16` tensors, and every other op on them is **widened
locally**: `nn.cast` f16 -> f32 on each `f16` operand (one cast per value, shared by the
widened ops that read it; an `f16` constant gets an `f32` twin instead), the op on `f32`,
and `nn.cast` f32 -> f16 on each `f16` result. So softmax, layer norm, attention, pooling,
resize, gather... run on a target that computes them in float32 (the cpu target, which has
kernels for those casts) instead of on the host.

Cast pairs f32 -> f16 -> f32 between two widened ops are kept, not collapsed: each op still
rounds its result to half once, which is what the model's float16 semantics say
(docs/semantics.md) and what the reference target computes for the same op on its own
(numpy float16: float32 math on widened inputs, one rounding per result). Collapsing them
would skip roundings and make cpu differ from the reference target's goldens; a model
that wants no activation roundings at all has the default precision (fp32), widened whole.
Run before `partition` (the default pipeline runs it after `canonicalize` when a target
other than the host's takes part), so that targets judge the ops as they will compute them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error, emit_remark
from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.targets.base import get_target

__all__ = ["WidenFp16Pass", "widen_fp16", "widen_locally", "widened"]


FLOAT16_MODEL = "irc.float16_model"
"""The module attribute `widen_fp16` sets when it widened something: the float32 tensors
hold a float16 model's values. `irc.pipelines.lower_executables` then lowers each executable
with its target's `float16_lowering_passes(precision)` (the OpenCL target keeps such tensors
as half on the device), so a target stores them 16-bit without a pass reading its
internals. A unit attribute, or the string `fp16`/`fp32` the pipeline asked for
(`widen-fp16{precision=...}`), which the targets' lowering then follows."""


def _is_half(t: Attribute) -> bool:
    return isinstance(t, TensorType) and isinstance(t.element_type, Float16Type)


def widened(t: Attribute) -> Attribute:
    """`t` with float32 for float16 elements (other types unchanged)."""
    if isinstance(t, TensorType) and isinstance(t.element_type, Float16Type):
        return TensorType(Float32Type(), t.get_shape())
    return t


def _widen_value(value: SSAValue) -> None:
    if _is_half(value.type):
        Rewriter.replace_value_with_new_type(value, widened(value.type))


def _widen_constant(op: nn.ConstantOp) -> None:
    array = array_from_dense(op.value).astype(np.float32)
    Rewriter.replace_op(op, nn.ConstantOp.from_array(array))


def _widen_signature(function: func.FuncOp) -> None:
    """Casts at the entry and before each return where the signature has `f16` tensors."""
    entry = function.body.blocks[0]
    inputs = [i for i, arg in enumerate(entry.args) if _is_half(arg.type)]
    outputs = [i for i, t in enumerate(function.function_type.outputs.data) if _is_half(t)]
    if not inputs and not outputs:
        return
    for i in reversed(inputs):
        arg = entry.args[i]
        cast = nn.CastOp.make(arg, result_elements=Float32Type())
        Rewriter.insert_op(cast, InsertPoint.at_start(entry))
        arg.replace_uses_with_if(cast.results[0], lambda use, c=cast: use.operation is not c)
    returns = [b.last_op for b in function.body.blocks if isinstance(b.last_op, func.ReturnOp)]
    for ret in returns:
        for i in outputs:
            value = ret.operands[i]
            cast = nn.CastOp.make(value, result_elements=Float16Type())
            Rewriter.insert_op(cast, InsertPoint.before(ret))
            ret.operands[i] = cast.results[0]
    emit_remark(
        function,
        f"widen-fp16: @{function.sym_name.data} keeps its float16 signature "
        f"(arguments {inputs}, results {outputs}): cast to float32 at the entry and back "
        "before the return",
    )


def _has_half(module: ModuleOp) -> bool:
    for op in module.walk():
        if any(_is_half(t) for t in op.result_types):
            return True
        if any(_is_half(a.type) for r in op.regions for b in r.blocks for a in b.args):
            return True
    return False


def _skip(op: Operation, kept: set[Operation]) -> bool:
    return op in kept or isinstance(op, func.FuncOp | ModuleOp)


def widen_fp16(module: ModuleOp, precision: str | None = None) -> int:
    """Widen `module`'s float16 tensors to float32 (see the module docstring) and mark it
    `FLOAT16_MODEL` (with `precision`, the storage asked for, when given). Returns the number
    of ops whose types changed."""
    if not _has_half(module):
        return 0
    module.attributes[FLOAT16_MODEL] = UnitAttr() if precision is None else StringAttr(precision)
    kept: set[Operation] = set()
    for function in [op for op in module.walk() if isinstance(op, func.FuncOp)]:
        if function.body.blocks:
            first = function.body.blocks[0].first_op
            _widen_signature(function)
            kept |= _signature_casts(function, first)
    count = 0
    for op in list(module.walk()):
        if _skip(op, kept):
            continue
        if isinstance(op, nn.ConstantOp) and _is_half(op.results[0].type):
            _widen_constant(op)
            count += 1
            continue
        changed = False
        for result in op.results:
            if _is_half(result.type):
                _widen_value(result)
                changed = True
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    if _is_half(arg.type):
                        _widen_value(arg)
                        changed = True
        count += changed
    for op in list(module.walk()):
        if isinstance(op, nn.CastOp) and op not in kept and op.input.type == op.output.type:
            op.output.replace_all_uses_with(op.input)
            Rewriter.erase_op(op)
    return count


def _signature_casts(function: func.FuncOp, first: Operation | None) -> set[Operation]:
    """The casts `_widen_signature` inserted (before the old first op, before returns)."""
    casts: set[Operation] = set()
    entry: Block = function.body.blocks[0]
    for op in entry.ops:
        if op is first:
            break
        casts.add(op)
    for block in function.body.blocks:
        ret = block.last_op
        if not isinstance(ret, func.ReturnOp):
            continue
        for value in ret.operands:
            owner = value.owner
            if isinstance(owner, nn.CastOp) and _is_half(owner.output.type):
                casts.add(owner)
    return casts


def _reads_or_writes_half(op: Operation) -> bool:
    return any(_is_half(t) for t in (*op.operand_types, *op.result_types))


def _computed_ops(module: ModuleOp) -> list[Operation]:
    """The ops on `f16` tensors a target computes: those of the `nn` dialect but constants
    (functions, calls and returns keep their types)."""
    return [
        op
        for op in module.walk()
        if op.name.startswith("nn.")
        and not isinstance(op, nn.ConstantOp)
        and _reads_or_writes_half(op)
    ]


def _half_constant_twin(constant: nn.ConstantOp, twins: dict[nn.ConstantOp, SSAValue]) -> SSAValue:
    """The `f32` constant of `constant`'s float16 values (one per constant)."""
    twin = twins.get(constant)
    if twin is None:
        array = array_from_dense(constant.value).astype(np.float32)
        new = nn.ConstantOp.from_array(array)
        Rewriter.insert_op(new, InsertPoint.after(constant))
        twin = twins[constant] = new.results[0]
    return twin


def _widening_cast(value: SSAValue, casts: dict[SSAValue, SSAValue]) -> SSAValue:
    """`nn.cast` f16 -> f32 of `value`, inserted after its definition (one per value)."""
    cast_result = casts.get(value)
    if cast_result is None:
        cast = nn.CastOp.make(value, result_elements=Float32Type())
        owner = value.owner
        if isinstance(owner, Operation):
            Rewriter.insert_op(cast, InsertPoint.after(owner))
        else:
            assert isinstance(owner, Block)
            Rewriter.insert_op(cast, InsertPoint.at_start(owner))
        cast_result = casts[value] = cast.results[0]
    return cast_result


def widen_locally(module: ModuleOp, keeps: Callable[[Operation], bool]) -> int:
    """Compute every op on `f16` tensors for which `keeps(op)` is false in float32 between
    casts (the module docstring's local widening); `f16` constants left without uses are
    erased. Returns the number of ops widened."""
    casts: dict[SSAValue, SSAValue] = {}
    twins: dict[nn.ConstantOp, SSAValue] = {}
    per_function: dict[func.FuncOp, Counter[str]] = {}
    count = 0
    for op in _computed_ops(module):
        if keeps(op):
            continue
        function = op.parent_op()
        while function is not None and not isinstance(function, func.FuncOp):
            function = function.parent_op()
        if function is not None:
            per_function.setdefault(function, Counter())[op.name] += 1
        for index, operand in enumerate(op.operands):
            if not _is_half(operand.type):
                continue
            owner = operand.owner
            if isinstance(owner, nn.ConstantOp):
                op.operands[index] = _half_constant_twin(owner, twins)
            else:
                op.operands[index] = _widening_cast(operand, casts)
        for result in list(op.results):
            if not _is_half(result.type):
                continue
            wide = Rewriter.replace_value_with_new_type(result, widened(result.type))
            narrowing = nn.CastOp.make(wide, result_elements=Float16Type())
            Rewriter.insert_op(narrowing, InsertPoint.after(op))
            wide.replace_uses_with_if(
                narrowing.results[0], lambda use, c=narrowing: use.operation is not c
            )
        count += 1
    for constant in twins:
        if not constant.results[0].uses:
            Rewriter.erase_op(constant)
    for function, names in per_function.items():
        listed = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(names.items()))
        emit_remark(
            function,
            f"widen-fp16: @{function.sym_name.data} computes {names.total()} float16 "
            f"op{'s' if names.total() > 1 else ''} in float32 between casts (no target keeps "
            f"{'them' if names.total() > 1 else 'it'} in float16): {listed}",
        )
    return count


@dataclass(frozen=True)
class WidenFp16Pass(ModulePass):
    """Compute float16 models in float32 with their float16 values (constants widened,
    values retyped, casts at an `f16` signature), or, where a target computes some of their
    ops in float16, only the other ops, between casts."""

    name = "widen-fp16"

    targets: tuple[str, ...] = ()
    """The targets the module is compiled for, each asked per op
    (`Target.computes_float16_op`); empty: widen everything."""

    precision: str | None = None
    """`fp16` or `fp32`, passed to each target's `computes_float16_op` (None: each target's
    default); a module widened whole records it on `FLOAT16_MODEL`, for the targets'
    `float16_lowering_passes` (the OpenCL target's storage)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.precision not in (None, "fp16", "fp32"):
            emit_error(op, f"widen-fp16: precision must be fp16 or fp32, got '{self.precision}'")
        if not self.targets or not _has_half(op):
            widen_fp16(op, self.precision)
            return
        targets = [get_target(name) for name in self.targets]
        kept = {
            o
            for o in _computed_ops(op)
            if any(t.computes_float16_op(o, self.precision) for t in targets)
        }
        if kept:
            widen_locally(op, kept.__contains__)
        else:
            widen_fp16(op, self.precision)
