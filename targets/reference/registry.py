"""Kernel registry of the reference target.

A *kernel factory* takes an op, reads its properties and types once, and returns a *kernel*:
a callable taking the op's operand values as numpy arrays (in operand order; an absent
optional operand is simply not passed) and returning a tuple with one array per result.

    @kernel(nn.ReluOp)
    def relu(op: nn.ReluOp) -> Kernel:
        def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
            return (np.maximum(x, 0),)
        return run

An op is *quantized* when any operand or result has a `!quant.uniform` element type. Such ops
use the factories registered with `quantized=True`: data-movement ops whose storage-level
semantics are the same (reshape, transpose, pad, ...) register one factory for both, while
ops with their own integer algorithm (TFLite's int8 softmax, logistic, ...) register a
quantized-only factory. Quantized arithmetic that `lower-quantized` decomposes (conv2d, add,
...) has no quantized factory: run that pass first.

Kernel modules register themselves when imported; `kernel_for` imports them all on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar, cast

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import numpy_dtype as numpy_dtype  # re-exported: kernels import it from here

Kernel = Callable[..., tuple[np.ndarray, ...]]
"""Runs one op on numpy arrays; returns one array per result."""

KernelFactory = Callable[[Operation], Kernel]
"""Prepares a kernel for one op (attributes read once, at schedule-build time)."""

_FACTORIES: dict[type[Operation], KernelFactory] = {}
_QUANTIZED_FACTORIES: dict[type[Operation], KernelFactory] = {}

_KERNEL_MODULES = (
    "irc.targets.reference.conv",
    "irc.targets.reference.elementwise",
    "irc.targets.reference.shape",
    "irc.targets.reference.quant",
    "irc.targets.reference.quant_nn",
    "irc.targets.reference.transformer",
)
_loaded = False

OpT = TypeVar("OpT", bound=Operation)


class UnsupportedOpError(Exception):
    """The reference target has no kernel for an op (or for its types/attributes)."""

    def __init__(self, op: Operation, reason: str):
        super().__init__(f"reference: {reason}")
        self.op = op
        self.reason = reason


def kernel(
    *op_types: type[OpT], plain: bool = True, quantized: bool = False
) -> Callable[[Callable[[OpT], Kernel]], Callable[[OpT], Kernel]]:
    """Register a kernel factory for op classes.

    `plain`: for float/integer tensors; `quantized`: for ops on `!quant.uniform` tensors.
    """

    def register(factory: Callable[[OpT], Kernel]) -> Callable[[OpT], Kernel]:
        # The tables are keyed by op class and `kernel_for` only calls a factory with an
        # instance of its key, which a dict's value type cannot say: hence the cast.
        general = cast(KernelFactory, factory)
        for op_type in op_types:
            for enabled, table in ((plain, _FACTORIES), (quantized, _QUANTIZED_FACTORIES)):
                if not enabled:
                    continue
                if op_type in table:
                    raise ValueError(f"a reference kernel for {op_type.name} is already registered")
                table[op_type] = general
        return factory

    return register


def is_quantized_op(op: Operation) -> bool:
    """Whether any operand or result of `op` has a quantized element type."""
    return any(
        isinstance(t, TensorType) and isinstance(t.element_type, UniformQuantizedType)
        for t in (*op.operand_types, *op.result_types)
    )


def _load_kernel_modules() -> None:
    global _loaded
    if _loaded:
        return
    for module in _KERNEL_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # a missing dependency, not a kernel module not written yet
                raise
    _loaded = True


def registered_ops(*, quantized: bool = False) -> frozenset[type[Operation]]:
    """Op classes with a reference kernel (for plain or for quantized tensors)."""
    _load_kernel_modules()
    return frozenset(_QUANTIZED_FACTORIES if quantized else _FACTORIES)


def kernel_for(op: Operation) -> Kernel:
    """The prepared kernel for `op`; raises UnsupportedOpError when there is none."""
    _load_kernel_modules()
    if is_quantized_op(op):
        factory = _QUANTIZED_FACTORIES.get(type(op))
        if factory is None:
            raise UnsupportedOpError(
                op,
                f"no kernel for quantized '{op.name}': quantized arithmetic runs once "
                "lower-quantized has expressed it in integers, and that pass cannot express "
                "this op (or has not run)",
            )
    else:
        factory = _FACTORIES.get(type(op))
        if factory is None:
            raise UnsupportedOpError(op, f"no kernel for '{op.name}'")
    return factory(op)


def evaluate(op: Operation, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """Run one op on numpy inputs (constant folding, tests)."""
    return kernel_for(op)(*inputs)
