"""The OpenCL target's op -> lowering registry (targets/opencl/lowerings/registry.py).

`supports()` follows the registry (an op type with no lowering is refused, one with a
lowering accepted on float32 static shapes); `emit` tries an op's lowerings in registration
order, skipping those that answer None; an op with no lowering is a `LoweringError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation

from irc.dialects import nn, quant
from irc.targets.op_registry import OpRegistry
from irc.targets.opencl import lowerings
from irc.targets.opencl.lowerings import registry
from irc.targets.opencl.program import Program
from irc.targets.opencl.support import SUPPORTED_OPS, check_op

F32 = Float32Type()


def _relu() -> nn.ReluOp:
    from xdsl.utils.test_value import create_ssa_value

    t = TensorType(F32, [2, 3])
    return nn.ReluOp.build(operands=[create_ssa_value(t)], result_types=[t])


def test_supported_ops_are_the_registered_ones_and_constants() -> None:
    assert SUPPORTED_OPS == lowerings.registered_ops() | {nn.ConstantOp}
    # every op family has its lowerings registered by importing the package
    for op_type in (
        nn.Conv2DOp,
        nn.AddOp,
        nn.GeluOp,
        nn.CompareOp,
        nn.MaxPool2DOp,
        nn.ReduceOp,
        nn.SoftmaxOp,
        nn.LogSoftmaxOp,
        nn.SplitOp,
        nn.PadOp,
        nn.GatherOp,
        nn.ResizeOp,
        nn.Conv2DTransposeOp,
        quant.QCastOp,
    ):
        assert lowerings.lowerings_of(op_type), op_type.__name__


def test_variants_are_registered_before_the_generic_kernel() -> None:
    names = [f.__name__ for f in lowerings.lowerings_of(nn.SoftmaxOp)]
    assert names == ["softmax_gpu", "softmax_any_axis", "softmax"]
    names = [f.__name__ for f in lowerings.lowerings_of(nn.PadOp)]
    assert names == ["pad_mirror", "pad_rows", "pad"]
    names = [f.__name__ for f in lowerings.lowerings_of(nn.Conv2DOp)]
    assert names == ["conv2d_gpu", "conv2d"]


def test_emit_skips_lowerings_answering_none(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def refuse(op: Operation, epilogue: list[Operation], program: Program) -> None:
        calls.append("refuse")
        return None

    def accept(op: Operation, epilogue: list[Operation], program: Program) -> list:
        calls.append("accept")
        return [("k0", [], [1])]

    monkeypatch.setattr(registry, "_LOWERINGS", _registry_of(nn.ReluOp, refuse, accept, refuse))
    assert registry.emit(_relu(), [], Program()) == [("k0", [], [1])]
    assert calls == ["refuse", "accept"]


def test_an_op_without_lowering_is_a_lowering_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_LOWERINGS", _registry_of(nn.ReluOp, lambda op, e, p: None))
    with pytest.raises(registry.LoweringError, match=r"no OpenCL kernel for 'nn\.relu'"):
        registry.emit(_relu(), [], Program())
    assert registry.registered_ops() == frozenset({nn.ReluOp})


def test_supports_refuses_an_op_type_without_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    op = _relu()
    assert check_op(op)
    from irc.targets.opencl import support

    monkeypatch.setattr(support, "SUPPORTED_OPS", SUPPORTED_OPS - {nn.ReluOp})
    answer = check_op(op)
    assert not answer
    assert "no kernel for 'nn.relu'" in answer.reason


def test_lowering_needs_an_op_type() -> None:
    with pytest.raises(ValueError, match="at least one op type"):
        registry.lowering()


def test_relu_lowers_to_one_kernel() -> None:
    program = Program()
    op = _relu()
    ((name, inputs, size),) = lowerings.emit(op, [], program)
    assert inputs == [op.operands[0]]
    assert size == [6]
    assert program.comments[name] == "nn.relu 2x3 -> 2x3"
    assert "(v < 0.0f ? 0.0f : v)" in next(iter(program.kernels))


def _registry_of(op_type: type[Operation], *functions: Callable[..., Any]) -> OpRegistry[Any]:
    """A registry holding `functions` for `op_type`, in that order."""
    found: OpRegistry[Any] = OpRegistry()
    for function in functions:
        found.register(op_type)(function)
    return found
