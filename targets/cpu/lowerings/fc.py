"""The float fully connected kernel: a blocked matrix product (`irc_fc`,
kernels/common/fc.c) with its epilogue on the register tile: the bias, the layer's
activation or a GELU that follows it, and a residual add (with its activation).

`fc_product(...)` builds the lowering: of a fully connected layer alone
(`conv.fully_connected` when `fc_kernel_applies`), and of the "fc" fusion of `cpu-fuse`
(`lowerings/fusion.py` checks the fusion's ops). `IRC_CPU_FUSE_FC=0` (`FC_KERNEL_ENV`)
turns both off: the layers then run the convolutions' kernel (`irc_conv2d`), the gelu and
the add after them separately (for comparisons and tests).

The weights are a constant packed at compile time in the convolutions' panel layout
(`packing.pack_filter`, under the packing name of `conv.fully_connected`'s); the packed
rows of x are scratch of M x K floats.
"""

from __future__ import annotations

import os

from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.targets.cpu import csrc, packing
from irc.targets.cpu.lowerings.helpers import (
    activation_code,
    block,
    c_call,
    describe,
    integer_result,
    numel,
    shape,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
)

csrc.define_snippet("fc", csrc.kernel_file("common/fc.c"), ("common", "transformer"))

FC_KERNEL_ENV = "IRC_CPU_FUSE_FC"
"""Set to 0 to run float fully connected layers on the convolutions' kernel, unfused."""

GELU_CODES = {"none": 16, "tanh": 17}
"""`nn.gelu`'s `approximate` -> the epilogue codes IRC_FC_GELU / IRC_FC_GELU_TANH (fc.c)."""


def fc_kernel_enabled() -> bool:
    """Whether float fully connected layers run `irc_fc` (and fuse); default yes."""
    return os.environ.get(FC_KERNEL_ENV, "1").strip() != "0"


def fc_kernel_applies(op: nn.FullyConnectedOp, ctx: LoweringContext) -> bool:
    """Whether `irc_fc` runs this layer: enabled, float, constant weights, and an
    activation its epilogue has (not tanh)."""
    return (
        fc_kernel_enabled()
        and not integer_result(op)
        and ctx.codegen.constant_array(op.weights) is not None
        and activation_code(op) != csrc.ACTIVATION_CODES["tanh"]
    )


def _bias(em: Emitter, bias: SSAValue | None) -> str:
    """The bias pointer, NULL without one (the sums start at +0.0 either way)."""
    return "NULL" if bias is None else em.ptr(bias)


def fc_product(
    op: nn.FullyConnectedOp,
    ctx: LoweringContext,
    gelu: nn.GeluOp | None = None,
    residual: tuple[SSAValue, int] | None = None,
) -> Lowered:
    """`op` as `irc_fc`; with `gelu` the result is gelu(x w^T + b) (the layer has no
    activation), with `residual` = (value, activation code) act(act_fc(x w^T + b) + value)."""
    x_shape, (oc, k) = shape(op.input), shape(op.weights)
    m = numel(x_shape[:-1])
    if ctx.codegen.constant_array(op.weights) is None:
        raise LoweringError(op, "the fc kernel needs constant weights")
    act = activation_code(op)
    if act == csrc.ACTIVATION_CODES["tanh"]:
        raise LoweringError(op, "the fc kernel's epilogue has no tanh")
    if gelu is not None:
        act = GELU_CODES[gelu.approximate.data]
    nv = packing.vectors_per_block(oc)

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        wk = em.packed(
            op.weights,
            f"conv2d_filter [1][N/{16 * nv}][1][1][K][{16 * nv}]",
            lambda a: packing.pack_filter(a.reshape(oc, 1, 1, k), 1, nv),
        )
        if not m:
            return block(describe(op), [], [])
        extra = ("NULL", 0) if residual is None else (em.ptr(residual[0]), residual[1])
        args = (em.ptr(op.input), m, k, wk, 16 * nv, _bias(em, op.bias), res[0], oc, act)
        call = c_call("irc_fc", *args, *extra, tmp[0])
        return block(describe(op), [], [call])

    return Lowered(emit, [max(m * k, 1)], ("fc",))
