"""Fuse activations into the conv before them: ``relu(conv2d(...))`` -> ``conv2d(...)
activation = "relu"``.

ONNX and PyTorch exports spell TFLite's fused activations as separate ops (Conv ->
BatchNormalization -> Relu; the batch norm folds into the conv in `canonicalize`). A separate
activation is one more pass over a conv's output, the largest tensors of a CNN (a DBNet-style
640x640 detector spends 11 % of its CPU time in 32 such relus). This pass gives them to the
conv's epilogue, where every target applies its `activation` property:

* ``nn.relu`` -> ``relu``; ``nn.relu6`` and ``nn.clip`` with bounds [0, 6] -> ``relu6``;
  ``nn.clip`` with bounds [-1, 1] -> ``relu_n1_to_1``. Each computes the same values, NaN and
  -0.0 included (the fused forms are ``x < lo ? lo : x`` and ``x > hi ? hi : x``, as these
  ops; docs/semantics.md).
* Producers: a float `nn.conv2d` or `nn.conv2d_transpose` without a fused activation whose
  result has no other user and the activation's exact type. Quantized ops are left to
  `fuse-qdq` and `lower-quantized`.
* Scope: with `targets`, only ops inside `delegate.region`s of those targets, and only where
  the region's target supports the fused op (the Target protocol's `supports`); a refusal
  leaves both ops and emits a remark at the activation. Without `targets`, every function
  and region of the module (the reference runs every fused activation).

It runs after `partition` in the default pipeline, so partition's `min-ops` counts the ops as
the model wrote them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from irc.diagnostics import emit_remark
from irc.dialects import delegate, nn
from irc.dialects.nn.attrs import Activation, ActivationAttr
from irc.targets.base import get_target

PRODUCERS = (nn.Conv2DOp, nn.Conv2DTransposeOp)
"""Float ops whose fused `activation` saves a pass over a large tensor."""


def fusable_activation(op: Operation) -> Activation | None:
    """The fused activation that computes `op` exactly, or None."""
    if isinstance(op, nn.ReluOp):
        return Activation.RELU
    if isinstance(op, nn.Relu6Op):
        return Activation.RELU6
    if isinstance(op, nn.ClipOp) and op.min is not None and op.max is not None:
        bounds = (op.min.value.data, op.max.value.data)
        if bounds == (0.0, 6.0):
            return Activation.RELU6
        if bounds == (-1.0, 1.0):
            return Activation.RELU_N1_TO_1
    return None


def _fused(activation_op: Operation) -> Operation | None:
    """A detached copy of the activation's producer with the activation fused, or None when
    the pair does not qualify."""
    activation = fusable_activation(activation_op)
    if activation is None:
        return None
    producer = activation_op.operands[0].owner
    if not isinstance(producer, PRODUCERS):
        return None
    result = producer.results[0]
    if not result.has_one_use() or result.type != activation_op.results[0].type:
        return None
    if not isinstance(result.type, TensorType) or not isinstance(
        result.type.element_type, AnyFloat
    ):
        return None
    current = producer.properties.get("activation")
    if not isinstance(current, ActivationAttr) or current.data != Activation.NONE:
        return None
    fused = producer.clone()
    fused.properties["activation"] = ActivationAttr(activation)
    return fused


def _scopes(module: ModuleOp, targets: Sequence[str]) -> Iterator[tuple[Operation, str | None]]:
    """(op holding the ops to rewrite, its target or None for whole-graph mode)."""
    if not targets:
        yield module, None
        return
    for op in module.walk():
        if isinstance(op, delegate.RegionOp) and op.target.data in targets:
            yield op, op.target.data


def fuse_activations(module: ModuleOp, targets: Sequence[str] = ()) -> int:
    """Fuse every qualifying activation (see the module docstring); returns how many."""
    count = 0
    for scope, target_name in _scopes(module, targets):
        target = None if target_name is None else get_target(target_name)
        for op in list(scope.walk()):
            if op.parent is None:
                continue  # erased as a producer earlier in this walk
            fused = _fused(op)
            if fused is None:
                continue
            if target is not None:
                support = target.supports(fused)
                if not support:
                    emit_remark(
                        op, f"fuse-activations: kept apart: {support.reason or 'not supported'}"
                    )
                    continue
            producer = op.operands[0].owner
            assert isinstance(producer, Operation)
            Rewriter.replace_op(op, fused)
            Rewriter.erase_op(producer)
            count += 1
    return count


@dataclass(frozen=True)
class FuseActivationsPass(ModulePass):
    """Fuse relu / relu6 / clip activations into the float conv before them.

    Options: ``fuse-activations{targets=cpu,opencl}``.
    """

    name = "fuse-activations"

    targets: tuple[str, ...] = ()
    """Fuse only inside `delegate.region`s of these targets, where the target supports the
    fused op; empty: the whole module."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_activations(op, self.targets)
