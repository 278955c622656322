"""An op type -> functions registry in priority order: what each target's lowering registry
(`targets/cpu/lowerings/registry.py`, `targets/opencl/lowerings/registry.py`) is built on.

A leaf: it imports only xDSL. Each target keeps its own instance, its own function signature
and its own dispatch (`lower` / `emit`), which tries `functions_of(type(op))` in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

from xdsl.ir import Operation

L = TypeVar("L", bound=Callable[..., Any])
F = TypeVar("F", bound=Callable[..., Any])


class OpRegistry(Generic[L]):
    """Per op type, the functions registered for it, in registration order."""

    def __init__(self) -> None:
        self._functions: dict[type[Operation], list[L]] = {}

    def register(self, *op_types: type[Operation]) -> Callable[[F], F]:
        """A decorator registering its function as the next one of each of `op_types`."""
        if not op_types:
            raise ValueError("@lowering needs at least one op type")

        def register(function: F) -> F:
            for op_type in op_types:
                self._functions.setdefault(op_type, []).append(cast(L, function))
            return function

        return register

    def functions_of(self, op_type: type[Operation]) -> tuple[L, ...]:
        """The functions registered for `op_type`, in the order they are tried."""
        return tuple(self._functions.get(op_type, ()))

    def op_types(self) -> frozenset[type[Operation]]:
        """Every op type with at least one function."""
        return frozenset(t for t, found in self._functions.items() if found)
