"""An entry of many ops is emitted as step functions (targets/cpu/steps.py): the same bits as
the one-function form, the reference's values, and the shape of the C."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from cpu_support import cases_executable, generated_source, lower, needs_compiler
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.targets.cpu import steps
from irc.targets.cpu.runtime import CpuRuntime
from irc.targets.reference.target import ReferenceRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache]


@dataclass
class ChainCase:
    """x -> tanh -> add x -> max_pool (3 ops) on one entry argument."""

    id: str
    in_type: TensorType
    x: np.ndarray

    def build(self, ops: list[Operation], x: SSAValue) -> SSAValue:
        tanh = nn.TanhOp.make(x)
        add = nn.AddOp.make(tanh.results[0], x, activation="relu")
        pool = nn.MaxPool2DOp.make(add.results[0], kernel=[2, 2], strides=[2, 2], layout="NHWC")
        ops += [tanh, add, pool]
        return pool.results[0]


def chain_cases(count: int) -> list[ChainCase]:
    rng = np.random.default_rng(15)
    shape = (1, 34, 36, 40)  # 48960 elements: the add is outlined into a pool task
    return [
        ChainCase(f"chain{i}", TensorType(f32, shape), rng.uniform(-3, 3, shape).astype(np.float32))
        for i in range(count)
    ]


def run(count: int) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    module, executable, inputs = cases_executable("steps_0", chain_cases(count))
    expected = ReferenceRuntime().load(executable).execute("entry", inputs)
    lower(module)
    actual = CpuRuntime().load(executable).execute("entry", inputs)
    return list(actual), list(expected), generated_source(executable)


def test_many_ops_run_as_steps_with_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = 7  # 21 ops: steps of 8, 8 and 5
    split, expected, source = run(cases)
    assert "static void irc_fn_0_step2(" in source
    assert "irc_fn_0_step3" not in source
    assert source.count("irc_fn_0_step0(in0, in1, in2, in3, in4, in5, in6, out0,") == 1
    monkeypatch.setattr(steps, "OPS_PER_STEP", 1000)
    whole, _, one_function = run(cases)
    assert "_step" not in one_function
    assert len(split) == len(whole) == cases
    for a, b, ref in zip(split, whole, expected, strict=True):
        assert np.array_equal(a, b)
        np.testing.assert_allclose(a, ref, rtol=1e-4, atol=1e-5)


def test_a_small_entry_keeps_its_statements() -> None:
    actual, expected, source = run(2)  # 6 ops
    assert "_step" not in source
    for a, ref in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, ref, rtol=1e-4, atol=1e-5)
