"""`brokenrelu`: a deliberately wrong plugin target, for the `irc-run --check` tests.

It takes `nn.relu` and `nn.add` (float32, static shapes) like a real delegate would, runs
`nn.add` correctly and gets `nn.relu` wrong (it returns its input unchanged, as a delegate with
a missing clamp would). `irc-run --check` must point at the dispatch that holds the relu.

    irc-run model.mlir --plugin tests.plugins.brokenplugin:BrokenReluTarget \\
        --targets brokenrelu,reference --check
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from irc.dialects import delegate, nn
from irc.targets import Availability, LoadedExecutable, Support, Target, TargetRuntime

__all__ = ["BrokenReluTarget"]


class BrokenReluTarget(Target):
    """Takes relu and add; its relu is the identity (a wrong kernel)."""

    name: ClassVar[str] = "brokenrelu"
    preferred_layout = "NHWC"
    runs_quantized = False

    def available(self) -> Availability:
        return Availability(True)

    def supports(self, op: Operation) -> Support:
        if not isinstance(op, (nn.ReluOp, nn.AddOp)):
            return Support.no("op", f"brokenrelu: '{op.name}' is not supported")
        types = [*op.operand_types, *op.result_types]
        if not all(isinstance(t, TensorType) and t.element_type == f32 for t in types):
            return Support.no("dtype", "brokenrelu: float32 tensors only")
        return Support.yes()

    def runtime(self) -> TargetRuntime:
        return _BrokenRuntime()


class _BrokenRuntime(TargetRuntime):
    def load(self, executable: Operation) -> LoadedExecutable:
        assert isinstance(executable, delegate.ExecutableOp)
        entries = {
            op.sym_name.data: op for op in executable.body.block.ops if isinstance(op, FuncOp)
        }
        return _BrokenExecutable(entries)


class _BrokenExecutable(LoadedExecutable):
    def __init__(self, entries: dict[str, FuncOp]) -> None:
        self.entries = entries

    def execute(self, entry: str, args: Sequence[Any]) -> list[np.ndarray]:
        func = self.entries[entry]
        values: dict[SSAValue, np.ndarray] = {
            arg: np.asarray(value) for arg, value in zip(func.body.block.args, args, strict=True)
        }
        results: list[np.ndarray] = []
        for op in func.body.block.ops:
            if isinstance(op, nn.AddOp):
                values[op.results[0]] = values[op.lhs] + values[op.rhs]
            elif isinstance(op, nn.ReluOp):
                values[op.results[0]] = values[op.input].copy()  # the bug: no clamp at 0
            elif isinstance(op, ReturnOp):
                results = [values[v] for v in op.arguments]
            else:
                raise NotImplementedError(f"brokenrelu: cannot run '{op.name}'")
        return results
