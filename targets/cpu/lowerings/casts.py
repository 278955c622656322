"""`nn.cast` and `quant.scast`, the variants in the order they are tried.

`nn.cast`: between float16 and float32 (`half_cast`, the F16C kernels of
`kernels/common/f16.c`, numpy's rounding); a cast with an `i64` or `i1` side
(`transformer.lower_cast`); from integers to float32 (`quant_casts.lower_cast`, a dcast of
scale 1); a widening cast to int32 whose only use is an integer binary op, which reads the
narrow input directly (an alias); otherwise the integer form's conversion
(`elementwise.integer_unary`). `quant.scast` is free (an alias of its operand's storage).

Importing this module (the first family `lowerings/__init__.py` imports) imports `binary16`
before any other family, so the float16 kernels are the first lowerings of their op types.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from irc.dialects import nn, quant
from irc.targets.cpu import csrc
from irc.targets.cpu.lowerings import binary16, quant_casts, transformer  # noqa: F401  (binary16 first)
from irc.targets.cpu.lowerings.elementwise import INTEGER_BINARY_OPS, integer_unary
from irc.targets.cpu.lowerings.helpers import (
    block,
    ctype,
    describe,
    dtype,
    integer_result,
    numel,
    shape,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lowered,
    LoweringContext,
    alias,
    lowering,
)

csrc.define_snippet("f16", csrc.kernel_file("common/f16.c"), ("common",))

_HALF_PAIRS = {
    (np.dtype(np.float32), np.dtype(np.float16)): "irc_f32_to_f16",
    (np.dtype(np.float16), np.dtype(np.float32)): "irc_f16_to_f32",
}
"""(source, result) dtypes of the casts between float16 and float32 -> their kernel."""


def is_half_cast(op: Operation) -> bool:
    """An `nn.cast` between float16 and float32 (either way)."""
    return isinstance(op, nn.CastOp) and (dtype(op.input), dtype(op.output)) in _HALF_PAIRS


_WIDENING_SOURCES = ("int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t")


def widening_cast_into_binary(op: nn.CastOp) -> bool:
    """An integer `nn.cast` to int32 from a type it holds exactly, whose only use is an
    integer binary op: that op reads the cast's input directly (the cast is an alias)."""
    result = op.results[0]
    if ctype(result) != "int32_t" or ctype(op.operands[0]) not in _WIDENING_SOURCES:
        return False
    if not result.has_one_use():
        return False
    user = result.get_user_of_unique_use()
    return user is not None and type(user) in INTEGER_BINARY_OPS


@lowering(nn.CastOp)
def half_cast(op: nn.CastOp, ctx: LoweringContext) -> Lowered | None:
    """Between float16 (its bits, `uint16_t`) and float32: a whole-buffer conversion."""
    if not is_half_cast(op):
        return None
    kernel = _HALF_PAIRS[(dtype(op.input), dtype(op.output))]
    count = numel(shape(op.output))

    def emit(em: Emitter, res: list[str], _: list[str]) -> list[str]:
        source = f"(const {ctype(op.input)} *){em.ptr(op.input)}"
        return block(describe(op), [], [f"{kernel}({source}, {res[0]}, {count});"])

    return Lowered(emit, snippets=("f16",))


@lowering(nn.CastOp)
def wide_cast(op: nn.CastOp, ctx: LoweringContext) -> Lowered | None:
    """A cast with an `i64` or `i1` side."""
    return transformer.lower_cast(op) if transformer.handles(op) else None


@lowering(nn.CastOp)
def integer_to_float(op: nn.CastOp, ctx: LoweringContext) -> Lowered | None:
    """From integers to float32: a dcast of scale 1."""
    return quant_casts.lower_cast(op) if quant_casts.handles(op) else None


@lowering(nn.CastOp)
def widening_alias(op: nn.CastOp, ctx: LoweringContext) -> Lowered | None:
    """A widening cast read through by its integer binary user (nothing runs)."""
    return alias() if widening_cast_into_binary(op) else None


@lowering(nn.CastOp)
def integer_cast(op: nn.CastOp, ctx: LoweringContext) -> Lowered | None:
    """Integer to integer, converted as C converts."""
    return integer_unary(op) if integer_result(op) else None


@lowering(quant.SCastOp)
def storage_cast(op: quant.SCastOp, ctx: LoweringContext) -> Lowered:
    """`quant.scast`: the same storage integers under another type (nothing runs)."""
    return alias()
