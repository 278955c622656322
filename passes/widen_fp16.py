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

Modules without `f16` tensors are left unchanged, and so are modules compiled for targets
that all compute float16 themselves (`widen-fp16{targets=a,b}`: each answers
`Target.computes_float16`; the ops none of them takes run on the host, whose reference
target computes float16 too). Run before `partition` (the default
pipeline runs it after `canonicalize` when a target other than the host's takes part), so
that targets judge the float32 ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Float16Type, Float32Type, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_remark
from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.targets.base import get_target

__all__ = ["WidenFp16Pass", "widen_fp16", "widened"]


FLOAT16_MODEL = "irc.float16_model"
"""The module attribute `widen_fp16` sets when it widened something: the float32 tensors
hold a float16 model's values. `irc.pipelines.lower_executables` then lowers each executable
with its target's `float16_lowering_passes()` (the OpenCL target keeps such tensors as half
on the device), so a target stores them 16-bit without a pass reading its internals."""


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


def widen_fp16(module: ModuleOp) -> int:
    """Widen `module`'s float16 tensors to float32 (see the module docstring) and mark it
    `FLOAT16_MODEL`. Returns the number of ops whose types changed."""
    if not _has_half(module):
        return 0
    module.attributes[FLOAT16_MODEL] = UnitAttr()
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


@dataclass(frozen=True)
class WidenFp16Pass(ModulePass):
    """Compute float16 models in float32 with their float16 values (constants widened,
    values retyped, casts at an `f16` signature)."""

    name = "widen-fp16"

    targets: tuple[str, ...] = ()
    """The targets the module is compiled for: nothing is widened when every one of them
    computes float16 (`Target.computes_float16`); empty: widen."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.targets and all(get_target(name).computes_float16 for name in self.targets):
            return
        widen_fp16(op)
