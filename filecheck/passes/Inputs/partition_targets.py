"""Targets for filecheck/passes/partition.mlir, loaded with `IRC_PLUGINS=partition_targets:...`.

* `fakea`: add, sub, mul, relu, tanh, split, concat, reshape; float only (quantized tensors
  are refused with the code "quantized").
* `fakeb`: add, relu, exp, sigmoid, softmax; float only.
* `fakecost`: what `fakea` takes, with a cost hook that grows faster than the op count, so
  independent clusters are never worth joining.
* `fakeoff`: takes everything, but is never available.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from irc.dialects.quant import UniformQuantizedType
from irc.targets import Availability, Support, Target, TargetRuntime


def _quantized(op: Operation) -> bool:
    return any(
        isinstance(t, TensorType) and isinstance(t.element_type, UniformQuantizedType)
        for t in (*op.operand_types, *op.result_types)
    )


class _FakeTarget(Target):
    OPS: tuple[str, ...] = ()

    def supports(self, op: Operation) -> Support:
        if op.name not in self.OPS:
            return Support.no("op", f"{self.name}: '{op.name}' is not supported")
        if _quantized(op):
            return Support.no("quantized", f"{self.name}: quantized '{op.name}' is not supported")
        return Support.yes()

    def runtime(self) -> TargetRuntime:
        raise NotImplementedError("a partition-test target runs nothing")


class FakeA(_FakeTarget):
    name = "fakea"
    OPS = (
        "nn.add",
        "nn.sub",
        "nn.mul",
        "nn.relu",
        "nn.tanh",
        "nn.split",
        "nn.concat",
        "nn.reshape",
    )


class FakeB(_FakeTarget):
    name = "fakeb"
    OPS = ("nn.add", "nn.relu", "nn.exp", "nn.sigmoid", "nn.softmax")


class FakeCost(_FakeTarget):
    name = "fakecost"
    OPS = FakeA.OPS

    def cost(self, ops: Sequence[Operation]) -> float | None:
        return float(len(ops)) ** 2


class FakeOff(_FakeTarget):
    name = "fakeoff"
    OPS = FakeA.OPS + FakeB.OPS

    def available(self) -> Availability:
        return Availability(False, "no fake device")
