"""The CPU target's op -> lowering registry (targets/cpu/lowerings/registry.py).

`supports()` follows the registry (an op type with no lowering is refused); `lower` tries an
op's lowerings in registration order, skipping those that answer None (a float kernel
declines integer tensors, which the integer form's variant takes); an op with no lowering
that answers is a `LoweringError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.test_value import create_ssa_value

from irc.dialects import cpu, nn, quant
from irc.targets.cpu import lowerings, support
from irc.targets.cpu.lowerings import registry
from irc.targets.cpu.lowerings.registry import Emitter, LoweringContext
from irc.targets.cpu.support import SUPPORTED_OPS, check_op
from irc.targets.op_registry import OpRegistry

F32 = Float32Type()
I32 = IntegerType(32)


class _Constants:
    def add(self, key: SSAValue, packing_name: str, make: Callable[[], np.ndarray]) -> int:
        return 0


class _Function:
    """A `FunctionState` without constants: every value is `in0`."""

    constants = _Constants()

    def constant_array(self, value: SSAValue) -> np.ndarray | None:
        return None

    def constant_splat(self, value: SSAValue) -> float | None:
        return None

    def base(self, value: SSAValue) -> SSAValue:
        return value

    def pointer(self, value: SSAValue) -> str:
        return "in0"


def _unary(op_type: type[nn.NNOp], element: Attribute) -> Operation:
    t = TensorType(element, [2, 3])
    return op_type.build(operands=[create_ssa_value(t)], result_types=[t])


def _binary(op_type: type[nn.NNOp], element: Attribute) -> Operation:
    t = TensorType(element, [2, 3])
    operands = [create_ssa_value(t), create_ssa_value(t)]
    return op_type.build(operands=operands, result_types=[t])


def _emitted(op: Operation) -> str:
    function = _Function()
    lowered = lowerings.lower(op, LoweringContext(function))
    return "\n".join(lowered.emit(Emitter(function), ["out0"], []))


def test_supported_ops_are_the_registered_ones_and_constants() -> None:
    assert SUPPORTED_OPS == lowerings.registered_ops() | {nn.ConstantOp}
    for op_type in (
        nn.Conv2DOp,
        nn.Conv2DTransposeOp,
        nn.FullyConnectedOp,
        nn.BatchMatmulOp,
        nn.AddOp,
        nn.ReluOp,
        nn.GeluOp,
        nn.CompareOp,
        nn.LayerNormOp,
        nn.AttentionOp,
        nn.MaxPool2DOp,
        nn.ReduceOp,
        nn.SoftmaxOp,
        nn.LogSoftmaxOp,
        nn.SplitOp,
        nn.PadOp,
        nn.GatherOp,
        nn.ResizeOp,
        nn.CastOp,
        quant.QCastOp,
        quant.DCastOp,
        quant.SCastOp,
        quant.RescaleOp,
        cpu.FusionOp,
    ):
        assert lowerings.lowerings_of(op_type), op_type.__name__


@pytest.mark.parametrize(
    ("op_type", "names"),
    [
        (
            nn.CastOp,
            ["half_cast", "wide_cast", "integer_to_float", "widening_alias", "integer_cast"],
        ),
        (nn.SubOp, ["half_binary", "zero_point_folded", "integer_binary", "binary"]),
        (nn.ReluOp, ["half_unary", "integer_unary_op", "unary"]),
        (nn.Conv2DOp, ["half_conv2d", "integer_conv2d", "float_conv2d"]),
        (nn.SoftmaxOp, ["quantized_softmax", "softmax"]),
        (nn.GeluOp, ["gelu", "integer_table"]),
        (
            cpu.FusionOp,
            [
                "table_chain",
                "quantized_mul",
                "quantized_sum",
                "qconv",
                "qadd",
                "conv_add",
                "attention",
                "dynamic_quantized",
                "unmatched",
            ],
        ),
    ],
)
def test_variants_are_tried_in_priority_order(op_type: type[Operation], names: list[str]) -> None:
    assert [f.__name__ for f in lowerings.lowerings_of(op_type)] == names


def test_lower_skips_lowerings_answering_none(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    accepted = registry.alias()

    def refuse(op: Operation, ctx: LoweringContext) -> None:
        calls.append("refuse")

    def accept(op: Operation, ctx: LoweringContext) -> registry.Lowered:
        calls.append("accept")
        return accepted

    monkeypatch.setattr(registry, "_LOWERINGS", _registry_of(nn.ReluOp, refuse, accept, refuse))
    assert registry.lower(_unary(nn.ReluOp, F32), LoweringContext(_Function())) is accepted
    assert calls == ["refuse", "accept"]


def test_an_op_whose_lowerings_all_decline_is_a_lowering_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry, "_LOWERINGS", _registry_of(nn.ReluOp, lambda op, ctx: None))
    with pytest.raises(registry.LoweringError, match=r"no kernel for 'nn\.relu'"):
        registry.lower(_unary(nn.ReluOp, F32), LoweringContext(_Function()))
    assert registry.registered_ops() == frozenset({nn.ReluOp})


def test_supports_refuses_an_op_type_without_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    op = _unary(nn.ReluOp, F32)
    assert check_op(op)
    monkeypatch.setattr(support, "SUPPORTED_OPS", SUPPORTED_OPS - {nn.ReluOp})
    answer = check_op(op)
    assert not answer
    assert "no kernel for 'nn.relu'" in answer.reason


def test_lowering_needs_an_op_type() -> None:
    with pytest.raises(ValueError, match="at least one op type"):
        registry.lowering()


def test_float_and_integer_relu_take_their_own_variant() -> None:
    assert "po[i0] = x < 0.0f ? 0.0f : x;" in _emitted(_unary(nn.ReluOp, F32))
    assert "po[i0] = (int32_t)(x < 0 ? 0 : x);" in _emitted(_unary(nn.ReluOp, I32))


def test_a_float_kernel_declines_integer_tensors() -> None:
    assert "(int32_t)((uint32_t)a + (uint32_t)b)" in _emitted(_binary(nn.AddOp, I32))
    assert "po[i0] = (a / b);" in _emitted(_binary(nn.DivOp, F32))
    with pytest.raises(registry.LoweringError, match=r"no kernel for 'nn\.div'"):
        _emitted(_binary(nn.DivOp, I32))


def _registry_of(op_type: type[Operation], *functions: Callable[..., Any]) -> OpRegistry[Any]:
    """A registry holding `functions` for `op_type`, in that order."""
    found: OpRegistry[Any] = OpRegistry()
    for function in functions:
        found.register(op_type)(function)
    return found
