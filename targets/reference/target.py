"""The reference target as an irc `Target`: numpy kernels, the fallback and the golden model.

Registered through the `irc.targets` entry point (`reference =
"irc.targets.reference.target:ReferenceTarget"`), like any third-party target; importing
this module registers nothing.

* `supports(op)`: every `nn` / `quant` op that a reference kernel runs, directly or once
  `lower-quantized` has expressed it in integer arithmetic (docs/design.md §2: quantized
  semantics are defined once, by that pass). Ops of other dialects (`func.call`, ...) are
  refused with the reason code "op"; quantized ops the pass cannot express (16-bit storage,
  per-axis activations, ...) with "quantized" and the pass's own message.
* `lowering_passes()`: `lower-quantized`.
* `runtime().load(executable)`: compiles each public `func.func` of the executable once into
  a `Program` (reference kernels). An executable that has not been lowered yet (it still has
  quantized arithmetic) is lowered on a clone first, so `load` takes both forms; the
  executable itself is never modified. `execute(entry, args)` runs the entry positionally
  and returns numpy arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import ConstantLike

from irc.runtime.errors import CompileError
from irc.runtime.executor import Program, compile_function
from irc.targets.base import LoadedExecutable, Support, Target, TargetRuntime
from irc.targets.reference.registry import (
    UnsupportedOpError,
    is_quantized_op,
    kernel_for,
    registered_ops,
)

__all__ = [
    "ReferenceExecutable",
    "ReferenceRuntime",
    "ReferenceTarget",
    "reference_support",
]

_DIALECTS = ("nn", "quant")
"""The dialects whose ops have reference kernels."""


class ReferenceTarget(Target):
    """numpy kernels for every `nn` and `quant` op, float and TFLite-exact int8."""

    name = "reference"
    preferred_layout = None
    runs_quantized = True

    def supports(self, op: Operation) -> Support:
        return reference_support(op)

    def lowering_passes(self) -> str:
        return "lower-quantized"

    def runtime(self) -> ReferenceRuntime:
        return ReferenceRuntime()


# ---- Capability ----------------------------------------------------------------------------


def reference_support(op: Operation) -> Support:
    """Whether a reference kernel runs `op` (after `lower-quantized` for quantized ops)."""
    dialect = op.name.partition(".")[0]
    if dialect not in _DIALECTS:
        return Support.no("op", f"reference: '{op.name}' is not an nn or quant op")
    if not is_quantized_op(op):
        if type(op) not in registered_ops():
            return Support.no("op", f"reference: no kernel for '{op.name}'")
        return _prepares(op, "attribute")
    direct = _prepares(op, "quantized")
    if direct:
        return direct
    return _lowering_support(op, direct)


def _prepares(op: Operation, code: str) -> Support:
    """Whether `kernel_for(op)` accepts the op's types and attributes."""
    if op.has_trait(ConstantLike) and type(op) in registered_ops(quantized=is_quantized_op(op)):
        return Support.yes()  # preparing a constant would decode its data: not worth it here
    try:
        kernel_for(op)
    except UnsupportedOpError as exc:
        return Support.no(code, str(exc))
    except Exception as exc:  # a kernel factory rejecting an attribute value
        return Support.no(code, f"reference: '{op.name}': {type(exc).__name__}: {exc}")
    return Support.yes()


def _lowering_support(op: Operation, direct: Support) -> Support:
    """Lower a copy of `op`, alone in a function, with `lower-quantized`; every op of the
    result must have a kernel. `direct` is the answer when the pass leaves the op as it is."""
    from irc.diagnostics import IrcDiagnosticError

    module, clone = _isolated_copy(op)
    try:
        _lower_quantized(module)
    except IrcDiagnosticError as exc:
        return Support.no("quantized", exc.diagnostic.message)
    if clone.parent is not None:
        return direct  # the pass does not express this op
    func = module.body.block.first_op
    assert isinstance(func, FuncOp)
    for lowered in func.body.block.ops:
        if isinstance(lowered, ReturnOp):
            continue
        answer = _prepares(lowered, "quantized")
        if not answer:
            return Support.no(
                "quantized",
                f"reference: '{op.name}' lowers to {answer.reason.removeprefix('reference: ')}",
            )
    return Support.yes()


def _isolated_copy(op: Operation) -> tuple[ModuleOp, Operation]:
    """A module with one function running a copy of `op`: operands made by constant ops are
    copied with it (the pass folds quantized constants), the others become arguments."""
    block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    ops: list[Operation] = []
    for operand in op.operands:
        if operand in mapping:
            continue
        owner = operand.owner
        if isinstance(owner, Operation) and owner.has_trait(ConstantLike) and not owner.operands:
            constant = owner.clone()
            ops.append(constant)
            for old, new in zip(owner.results, constant.results, strict=True):
                mapping[old] = new
        else:
            mapping[operand] = block.insert_arg(operand.type, len(block.args))
    clone = op.clone(value_mapper=dict(mapping), clone_operands=True)
    block.add_ops([*ops, clone, ReturnOp(*clone.results)])
    func = FuncOp(
        "isolated",
        ([a.type for a in block.args], [r.type for r in clone.results]),
        Region(block),
    )
    return ModuleOp([func]), clone


def _lower_quantized(module: ModuleOp) -> None:
    from irc.context import get_all_passes
    from irc.pipelines import LOWER_QUANTIZED

    get_all_passes()[LOWER_QUANTIZED]()().apply(_context(), module)


@cache
def _context() -> Context:
    from irc.context import make_context

    return make_context()


# ---- Runtime -------------------------------------------------------------------------------


class ReferenceRuntime(TargetRuntime):
    """Loads executables into `Program`s of reference kernels."""

    def load(self, executable: Operation) -> ReferenceExecutable:
        """Compile every public function of `executable` (a `delegate.executable`, or a
        module of functions) once; quantized arithmetic is lowered on a clone first."""
        functions = _functions(executable)
        if any(is_quantized_op(op) for func in functions for op in func.walk()):
            from irc.diagnostics import IrcDiagnosticError
            from irc.pipelines import prepare_for_reference

            clone = ModuleOp([func.clone() for func in functions])
            try:
                prepare_for_reference(clone, _context())
            except IrcDiagnosticError as exc:  # located at the op (its clone keeps the location)
                diagnostic = exc.diagnostic
                raise CompileError(
                    diagnostic.message, diagnostic.op, location=diagnostic.location
                ) from None
            functions = [op for op in clone.body.block.ops if isinstance(op, FuncOp)]
        programs = {
            func.sym_name.data: compile_function(func)
            for func in functions
            if func.sym_visibility is None or func.sym_visibility.data == "public"
        }
        if not programs:
            raise ValueError(f"{_describe(executable)} has no public func.func to run")
        return ReferenceExecutable(_describe(executable), programs)


class ReferenceExecutable(LoadedExecutable):
    """The programs of one executable, by entry name; `execute` takes and returns arrays."""

    def __init__(self, name: str, programs: Mapping[str, Program]) -> None:
        self.name = name
        self.programs = dict(programs)

    def execute(self, entry: str, args: Sequence[Any]) -> list[np.ndarray]:
        program = self.programs.get(entry)
        if program is None:
            known = ", ".join(f"@{name}" for name in self.programs)
            raise KeyError(f"no entry @{entry} in {self.name} (entries: {known})")
        return program.run_positional(args)

    def __repr__(self) -> str:
        return f"<ReferenceExecutable {self.name}: {', '.join(self.programs)}>"


def _functions(executable: Operation) -> list[FuncOp]:
    if len(executable.regions) != 1 or len(executable.regions[0].blocks) != 1:
        raise TypeError(f"expected a delegate.executable or a module, got '{executable.name}'")
    return [op for op in executable.regions[0].block.ops if isinstance(op, FuncOp)]


def _describe(executable: Operation) -> str:
    sym_name = executable.properties.get("sym_name") or executable.attributes.get("sym_name")
    name = getattr(sym_name, "data", None)
    return f"executable @{name}" if name else f"'{executable.name}'"
