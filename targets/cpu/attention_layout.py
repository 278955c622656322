"""The head transposes around an `nn.attention` that the CPU kernel reads through strides.

Exporters split a `[S, hidden]` projection into heads with `reshape [S, H, Dh]` and
`transpose [H, S, Dh]` (the keys `[H, Dh, S]`) before the attention, and merge them after it
with the inverse transpose. `irc_attention` (kernels/common/transformer.c) reads each head's
matrix at an element offset with a row stride (`irc_att_layout`), so those transposes need
not run: `cpu-fuse` puts every such transpose whose only use is the attention (or, after it,
the transpose that is the attention's only use) into one "attention" `cpu.fusion`
(`match_attention`), and the fusion's lowering reads the transposes' inputs in place and
writes the merged layout (`operand_layout`, `output_layout`).

A transpose folds when the operand it makes keeps the kernel's unit stride: the query's and
the value's last axis, one of the key's two matrix axes, the result's last axis.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import ints_of

KIND = "attention"
"""The `cpu.fusion` kind of an attention with its head transposes."""

FUSE_ATTENTION_ENV = "IRC_CPU_FUSE_ATTENTION"
"""Set to 0 to run the head transposes as their own kernels (for comparisons and tests)."""

ROLES = ("query", "key", "value")
"""The attention's operands a transpose may make, in operand order."""


def fuse_attention_enabled() -> bool:
    """Whether head transposes fold into the attention kernel's strides; default yes."""
    return os.environ.get(FUSE_ATTENTION_ENV, "1").strip() != "0"


def _shape(value: SSAValue) -> tuple[int, ...]:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def _contiguous(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * dims[d + 1]
    return strides


def _is_f32(value: SSAValue) -> bool:
    type_ = value.type
    return isinstance(type_, TensorType) and isinstance(type_.element_type, Float32Type)


@dataclass(frozen=True)
class OperandLayout:
    """Where an operand's elements lie in the buffer the kernel reads: `source` (the
    operand itself, or the input of the transpose that made it) and the element stride of
    each of the operand's axes in it."""

    source: SSAValue
    strides: tuple[int, ...]


def transposed_strides(transpose: nn.TransposeOp) -> tuple[int, ...]:
    """The element stride, in the transpose's (contiguous) input, of each result axis."""
    inner = _contiguous(_shape(transpose.input))
    return tuple(inner[p] for p in ints_of(transpose.perm))


def inverse_strides(transpose: nn.TransposeOp) -> tuple[int, ...]:
    """The element stride, in the transpose's (contiguous) result, of each input axis."""
    outer = _contiguous(_shape(transpose.output))
    perm = ints_of(transpose.perm)
    strides = [0] * len(perm)
    for j, p in enumerate(perm):
        strides[p] = outer[j]
    return tuple(strides)


def _kernel_reads(role: str, strides: Sequence[int]) -> bool:
    """Whether the kernel reads an operand with these strides: unit stride along the query's
    and the value's last axis, along one of the key's two matrix axes."""
    if role == "key":
        return 1 in (strides[-1], strides[-2])
    return strides[-1] == 1


def _foldable_input(op: nn.AttentionOp, role: str) -> nn.TransposeOp | None:
    """The transpose making operand `role` of `op` when it folds (its only use, float32)."""
    value: SSAValue = getattr(op, role)
    owner = value.owner
    if not isinstance(owner, nn.TransposeOp) or not value.has_one_use():
        return None
    if not (_is_f32(owner.input) and _is_f32(value)):
        return None
    if sum(operand is value for operand in op.operands) != 1:
        return None
    strides = transposed_strides(owner)
    return owner if _kernel_reads(role, strides) else None


def _foldable_output(op: nn.AttentionOp) -> nn.TransposeOp | None:
    """The transpose that is the only use of `op`'s result when it folds."""
    result = op.output
    if not result.has_one_use():
        return None
    user = result.get_user_of_unique_use()
    if not isinstance(user, nn.TransposeOp) or not _is_f32(user.output):
        return None
    return user if inverse_strides(user)[-1] == 1 else None


@dataclass(frozen=True)
class AttentionChain:
    """An attention with the transposes that fold into it (`inputs` by role)."""

    attention: nn.AttentionOp
    inputs: dict[str, nn.TransposeOp]
    output: nn.TransposeOp | None

    @property
    def members(self) -> list[Operation]:
        """The fusion's ops, the yielded one last."""
        ops: list[Operation] = [self.inputs[r] for r in ROLES if r in self.inputs]
        ops.append(self.attention)
        if self.output is not None:
            ops.append(self.output)
        return ops

    @property
    def final(self) -> Operation:
        return self.output if self.output is not None else self.attention


def match_attention(op: Operation) -> AttentionChain | None:
    """`op` (a float32 `nn.attention`) with the transposes that fold into it, or None when
    none does."""
    if not isinstance(op, nn.AttentionOp) or not _is_f32(op.output):
        return None
    inputs = {r: t for r in ROLES if (t := _foldable_input(op, r)) is not None}
    output = _foldable_output(op)
    if not inputs and output is None:
        return None
    return AttentionChain(op, inputs, output)


def match_attention_chains(ops: Sequence[Operation]) -> list[AttentionChain]:
    """Every attention among `ops` with transposes that fold into it."""
    return [c for op in ops if (c := match_attention(op)) is not None]


def operand_layout(chain: AttentionChain, role: str) -> OperandLayout:
    """Where operand `role` of the chain's attention lies: the transpose's input read in
    place, else the operand itself (contiguous)."""
    transpose = chain.inputs.get(role)
    if transpose is not None:
        return OperandLayout(transpose.input, transposed_strides(transpose))
    value: SSAValue = getattr(chain.attention, role)
    return OperandLayout(value, tuple(_contiguous(_shape(value))))


def output_layout(chain: AttentionChain) -> tuple[int, ...]:
    """The element stride of each axis of the attention's result in the buffer the fusion
    yields (the merging transpose's result, else the result itself)."""
    if chain.output is not None:
        return inverse_strides(chain.output)
    return tuple(_contiguous(_shape(chain.attention.output)))


def plain_chain(op: nn.AttentionOp) -> AttentionChain:
    """An attention on its own (every operand and the result contiguous)."""
    return AttentionChain(op, {}, None)
