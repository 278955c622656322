"""The op -> lowering registry of the CPU target (a leaf: imports no lowering).

A lowering is a function `(op, ctx) -> Lowered | None`: how the op runs in the C function
`ctx.codegen` generates (its scratch, the statements it emits, whether it is a free alias),
or None: "not this variant", so the next lowering registered for the op type is tried.
`@lowering(nn.XOp, ...)` registers one for op types, in priority order (a module registers an
op's special variants — an alias, the integer form, a wide cast — before its general kernel).
`lower` dispatches on the op's exact type; `registered_ops()` is what `supports()` asks.

The other types here are the contract between `codegen.FunctionCodegen` and the lowerings:
`Lowered` (what a lowering returns), `Emitter` (what its emit function may ask at emission
time), `LoweringContext` / `FunctionState` (what it may ask while lowering).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.targets.op_registry import OpRegistry

Lines = list[str]
"""C statements, one per line (indented by the caller)."""


class LoweringError(Exception):
    """An op the CPU code generator cannot lower (with the op, for a located diagnostic)."""

    def __init__(self, op: Operation | None, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


class ConstantPool(Protocol):
    """The constants table of one `cpu.module` (`codegen.ConstantTable`)."""

    def add(self, key: SSAValue, packing_name: str, make: Callable[[], np.ndarray]) -> int:
        """The index of `key`'s constant packed as `packing_name` (packed once)."""
        ...


class FunctionState(Protocol):
    """What a lowering may ask of the C function being generated (`codegen.FunctionCodegen`)."""

    @property
    def constants(self) -> ConstantPool: ...

    def constant_array(self, value: SSAValue) -> np.ndarray | None:
        """The array of a constant value (None for a value computed at run time)."""
        ...

    def constant_splat(self, value: SSAValue) -> float | None:
        """The value of a float constant all of whose elements are equal (None otherwise)."""
        ...

    def base(self, value: SSAValue) -> SSAValue:
        """The value whose buffer `value` shares (through aliases), `value` itself if none."""
        ...

    def pointer(self, value: SSAValue) -> str:
        """The C expression of `value`'s buffer (a constant gets its table entry)."""
        ...


@dataclass(frozen=True)
class LoweringContext:
    """What every lowering gets besides its op: the function being generated."""

    codegen: FunctionState


class Emitter:
    """What emit functions may ask at emission time: pointers to values and packed constants."""

    def __init__(self, codegen: FunctionState):
        self._codegen = codegen

    def ptr(self, value: SSAValue) -> str:
        return self._codegen.pointer(value)

    def packed(
        self, value: SSAValue, packing_name: str, make: Callable[[np.ndarray], np.ndarray]
    ) -> str:
        array = self._codegen.constant_array(value)
        assert array is not None
        index = self._codegen.constants.add(value, packing_name, lambda: make(array))
        return f"K[{index}]"


@dataclass
class Lowered:
    """How one op runs: scratch it needs, how to emit it, and whether it is a free alias."""

    emit: Callable[[Emitter, list[str], list[str]], Lines]
    """(emitter, result pointers, scratch pointers) -> C statements."""
    temps: list[int] = field(default_factory=list)
    """Scratch buffers (floats) the op needs while it runs."""
    snippets: tuple[str, ...] = ()
    """Kernel-library snippets the emitted code calls."""
    alias: bool = False
    """The (single) result shares operand 0's buffer: nothing to run."""
    reads: tuple[SSAValue, ...] = ()
    """Values the emitted code reads besides the op's operands (kept alive until it ran)."""
    timed: tuple[Operation, tuple[SSAValue, ...]] | None = None
    """For a fusion: the op its kernel is profiled as, and the values labelling its type."""


def alias() -> Lowered:
    """The lowering of an op whose result is its operand 0 (nothing runs)."""
    return Lowered(lambda em, res, tmp: [], alias=True)


Lowering = Callable[[Any, LoweringContext], Lowered | None]
"""`(op, ctx)`: how the op runs, or None (try the next lowering)."""

_LOWERINGS: OpRegistry[Lowering] = OpRegistry()

F = TypeVar("F", bound=Lowering)


def lowering(*op_types: type[Operation]) -> Callable[[F], F]:
    """Register the decorated function as the next lowering of each of `op_types`."""
    return _LOWERINGS.register(*op_types)


def lowerings_of(op_type: type[Operation]) -> tuple[Lowering, ...]:
    """The lowerings registered for `op_type`, in the order `lower` tries them."""
    return _LOWERINGS.functions_of(op_type)


def registered_ops() -> frozenset[type[Operation]]:
    """Every op type with at least one lowering."""
    return _LOWERINGS.op_types()


def lower(op: Operation, ctx: LoweringContext) -> Lowered:
    """How `op` runs, from the first of its lowerings that gives it; `LoweringError` when
    none does."""
    for function in _LOWERINGS.functions_of(type(op)):
        lowered = function(op, ctx)
        if lowered is not None:
            return lowered
    raise LoweringError(op, f"no kernel for '{op.name}'")
