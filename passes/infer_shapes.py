"""Infer shapes: make tensor result types as static as the ops' shape rules allow.

Every `nn` op carries its shape rule (`NNOp.result_shapes`, the one the verifier uses); the
quant casts and `quant.rescale` keep their input's shape. Walking in program order, each
result whose declared type has a dynamic dimension (`?`) that the rule can compute gets the
static size, so refinements flow downstream. Element types never change, a static dimension
never becomes dynamic, and a declared shape that contradicts the inferred one is an error
located at the op.

A value is only refined when every user accepts the new type: `nn` ops (whose verifiers
accept any compatible shape) and the shape-preserving quant ops, `delegate.region` captures
and `delegate.yield` (the block argument or region result is refined with it), and the
`func.return` of a single-block function that no symbol reference names (the function's
result types are updated at the end). A value also used by anything else, e.g. `func.call`
or `delegate.dispatch`, whose types must match a callee exactly, keeps its declared type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    FunctionType,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from irc.diagnostics import emit_error
from irc.dialects import delegate, nn, quant
from irc.dialects.nn.base import Shape, format_shape

_SAME_SHAPE_OPS = (quant.QCastOp, quant.DCastOp, quant.RescaleOp)
"""Non-`nn` ops whose result must have exactly their input's shape."""


# ---- Shape rules -------------------------------------------------------------------------------


def _inferred_shapes(op: Operation) -> Sequence[Shape] | None:
    """Result shapes from the op's shape rule, or None for ops without one."""
    if isinstance(op, nn.NNOp):
        try:
            return op.infer_shapes()
        except VerifyException as exc:
            emit_error(op, f"cannot infer the result shapes of '{op.name}': {exc}")
    if isinstance(op, _SAME_SHAPE_OPS):
        input_type = op.input.type
        assert isinstance(input_type, TensorType)  # checked by the op verifier
        return [input_type.get_shape()]
    return None


def _merge(op: Operation, index: int, declared: Shape, inferred: Shape) -> Shape:
    """The more static of two shapes, dimension by dimension; an error when they disagree."""
    compatible = len(declared) == len(inferred) and all(
        a < 0 or b < 0 or a == b for a, b in zip(declared, inferred)
    )
    if not compatible:
        label = "result" if len(op.results) == 1 else f"result #{index}"
        emit_error(
            op,
            f"inferred {label} shape {format_shape(inferred)} of '{op.name}' is incompatible "
            f"with declared shape {format_shape(declared)}",
        )
    # Shape rules write -1 for a dynamic size; xDSL's `?` is DYNAMIC_INDEX.
    return tuple(
        a if a >= 0 else b if b >= 0 else DYNAMIC_INDEX for a, b in zip(declared, inferred)
    )


# ---- Refinement --------------------------------------------------------------------------------


def _referenced_symbols(module: ModuleOp) -> set[str]:
    """Every symbol name that some symbol reference in the module mentions, at any level."""
    names: set[str] = set()

    def collect(attr: Attribute) -> None:
        if isinstance(attr, SymbolRefAttr):
            names.add(attr.root_reference.data)
            names.update(ref.data for ref in attr.nested_references.data)
        elif isinstance(attr, ArrayAttr):
            for element in attr.data:
                collect(element)

    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            collect(attr)
    return names


class _Refiner:
    """Refines result types of one module; see the module docstring for the rules."""

    def __init__(self, module: ModuleOp):
        self.referenced = _referenced_symbols(module)
        self.functions: list[func.FuncOp] = []

    def accepts(self, use: Use) -> bool:
        """Whether `use.operation` stays valid (or is updated) when the operand gets refined."""
        user = use.operation
        if isinstance(user, nn.NNOp):
            return True
        if isinstance(user, _SAME_SHAPE_OPS):
            return self.can_refine(user.output)
        if isinstance(user, delegate.RegionOp):
            return self.can_refine(user.body.block.args[use.index])
        if isinstance(user, delegate.YieldOp):
            region = user.parent_op()
            return isinstance(region, delegate.RegionOp) and self.can_refine(
                region.outputs[use.index]
            )
        if isinstance(user, func.ReturnOp):
            function = user.parent_op()
            return (
                isinstance(function, func.FuncOp)
                and len(function.body.blocks) == 1
                and function.sym_name.data not in self.referenced
            )
        return False

    def can_refine(self, value: SSAValue) -> bool:
        return all(self.accepts(use) for use in value.uses)

    def refine(self, value: SSAValue, new_type: Attribute) -> None:
        """Give `value` its new type, and the block arguments and results it flows into."""
        value = Rewriter.replace_value_with_new_type(value, new_type)
        for use in list(value.uses):
            user = use.operation
            if isinstance(user, delegate.RegionOp):
                self.refine(user.body.block.args[use.index], new_type)
            elif isinstance(user, delegate.YieldOp):
                region = user.parent_op()
                assert isinstance(region, delegate.RegionOp)  # delegate.yield's parent
                self.refine(region.outputs[use.index], new_type)
            elif isinstance(user, func.ReturnOp):
                function = user.parent_op()
                assert isinstance(function, func.FuncOp)  # accepted above
                self.functions.append(function)

    def visit(self, op: Operation) -> None:
        shapes = _inferred_shapes(op)
        if shapes is None:
            return
        for index, (result, inferred) in enumerate(zip(op.results, shapes, strict=True)):
            declared = result.type
            assert isinstance(declared, TensorType)  # checked by the op verifier
            shape = _merge(op, index, declared.get_shape(), tuple(inferred))
            if shape != declared.get_shape() and self.can_refine(result):
                self.refine(result, TensorType(declared.element_type, shape, declared.encoding))

    def update_signatures(self) -> None:
        """Make each refined function's result types those of its `func.return`."""
        for function in dict.fromkeys(self.functions):
            ret = function.body.block.last_op
            assert isinstance(ret, func.ReturnOp)  # single-block function
            outputs = [v.type for v in ret.arguments]
            if list(function.function_type.outputs.data) != outputs:
                inputs = function.function_type.inputs.data
                function.properties["function_type"] = FunctionType.from_lists(inputs, outputs)


def refine_result_types(module: ModuleOp) -> None:
    """Refine every result type in `module` that a shape rule makes more static."""
    refiner = _Refiner(module)
    ops = [op for op in module.walk() if isinstance(op, (nn.NNOp, *_SAME_SHAPE_OPS))]
    for op in ops:  # program order: operands are refined before their users
        refiner.visit(op)
    refiner.update_signatures()


@dataclass(frozen=True)
class InferShapesPass(ModulePass):
    """Replace dynamic result dimensions by the static sizes the shape rules imply."""

    name = "infer-shapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        refine_result_types(op)
