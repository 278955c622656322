"""The op -> lowering registry of the OpenCL target (a leaf: imports no lowering).

A lowering is a function `(op, epilogue, program) -> [(kernel name, inputs, global size)]`
(the output buffers, one per result, appended by the caller) or None: "not this variant",
so the next lowering registered for the op type is tried. `@lowering(nn.XOp, ...)` registers
one for op types, in priority order (a module registers an op's special variants — the `gpu`
kernel style, `cpu` vectorised forms — before its generic kernel). `emit` dispatches on the
op's exact type; `registered_ops()` is what `supports()` asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from xdsl.ir import Operation, SSAValue

from irc.targets.op_registry import OpRegistry

if TYPE_CHECKING:
    from irc.targets.opencl.program import Program

KernelRun = tuple[str, list[SSAValue | str], list[int]]
"""(kernel name, input values or constant names, global size): one launch of an op."""
Emitted = list[KernelRun]

Lowering = Callable[[Any, list[Operation], "Program"], Emitted | None]
"""`(op, epilogue, program)`: the op's launches, or None (try the next lowering)."""

_LOWERINGS: OpRegistry[Lowering] = OpRegistry()

F = TypeVar("F", bound=Lowering)


class LoweringError(Exception):
    """An op the OpenCL target cannot generate a kernel for (`op`: where, `message`: why)."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


def lowering(*op_types: type[Operation]) -> Callable[[F], F]:
    """Register the decorated function as the next lowering of each of `op_types`."""
    return _LOWERINGS.register(*op_types)


def lowerings_of(op_type: type[Operation]) -> tuple[Lowering, ...]:
    """The lowerings registered for `op_type`, in the order `emit` tries them."""
    return _LOWERINGS.functions_of(op_type)


def registered_ops() -> frozenset[type[Operation]]:
    """Every op type with at least one lowering."""
    return _LOWERINGS.op_types()


def emit(op: Operation, epilogue: list[Operation], program: Program) -> Emitted:
    """The launches of `op` (with its fused `epilogue`) from the first of its lowerings that
    gives some; `LoweringError` when none does."""
    for function in _LOWERINGS.functions_of(type(op)):
        emitted = function(op, epilogue, program)
        if emitted is not None:
            return emitted
    raise LoweringError(op, f"no OpenCL kernel for '{op.name}'")
