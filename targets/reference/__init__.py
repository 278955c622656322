"""The reference target: numpy kernels for every `nn` and `quant` op.

It is the golden model of the compiler (every other target is tested against it) and the
fallback for ops no accelerator takes. Kernels are registered per op class in `registry`;
`kernel_for(op)` reads the op's attributes once and returns a callable on numpy arrays.
Quantized tensors travel as arrays of their storage type; scales and zero points come from
the op's types (docs/design.md §4).
"""

from irc.targets.reference.registry import (
    Kernel,
    KernelFactory,
    UnsupportedOpError,
    evaluate,
    is_quantized_op,
    kernel,
    kernel_for,
    numpy_dtype,
    registered_ops,
)

__all__ = [
    "Kernel",
    "KernelFactory",
    "UnsupportedOpError",
    "evaluate",
    "is_quantized_op",
    "kernel",
    "kernel_for",
    "numpy_dtype",
    "registered_ops",
]
