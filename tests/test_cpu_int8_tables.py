"""Quantized 8-bit unary ops on the CPU target as 256-entry lookup tables (`tables.py`).

Every case is one quantized unary op (sigmoid, tanh, gelu, exp, log, sqrt, rsqrt,
hard_swish) on int8 or uint8 tensors of odd sizes; the inputs hold every byte value. All
cases go into ONE `cpu` executable (the C compiles once) and must be bit-exact with the
reference target (TFLite's algorithms). Ops without a table form are refused clearly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from cpu_support import (
    needs_compiler,
    one_op_per_argument,
    qtype,
    run_lowered_and_reference,
)
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, SSAValue

from irc.dialects import delegate, nn
from irc.targets.base import Support
from irc.targets.cpu.target import CpuTarget
from irc.targets.cpu.toolchain import uses_openmp

pytestmark = [needs_compiler, pytest.mark.private_cache]

rng = np.random.default_rng(20251122)


def every_byte(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """An array of `shape` holding every value of `dtype` (then random ones), shuffled."""
    info = np.iinfo(dtype)
    count = int(np.prod(shape))
    values = np.arange(int(info.min), int(info.max) + 1)
    values = np.concatenate([values, rng.integers(info.min, int(info.max) + 1, count)])[:count]
    return rng.permutation(values).astype(dtype).reshape(shape)


@dataclass
class TableCase:
    id: str
    op: type[nn.NNOp]
    dtype: str
    source: tuple[float, int]
    result: tuple[float, int]
    shape: tuple[int, ...] = (3, 7, 13)
    props: dict[str, object] = field(default_factory=dict)


CASES = [
    TableCase("sigmoid_i8", nn.SigmoidOp, "int8", (0.08, -3), (1 / 256, -128)),
    TableCase("sigmoid_u8", nn.SigmoidOp, "uint8", (0.06, 131), (1 / 256, 0), (257,)),
    TableCase("tanh_i8", nn.TanhOp, "int8", (0.03, 5), (1 / 128, 0), (5, 53)),
    TableCase("tanh_u8", nn.TanhOp, "uint8", (0.05, 120), (1 / 128, 128)),
    TableCase("gelu_i8", nn.GeluOp, "int8", (0.04, 2), (0.03, -20)),
    TableCase(
        "gelu_tanh_u8", nn.GeluOp, "uint8", (0.04, 127), (0.03, 10), props={"approximate": "tanh"}
    ),
    TableCase("exp_i8", nn.ExpOp, "int8", (0.02, 0), (0.05, -128), (259,)),
    TableCase("log_i8", nn.LogOp, "int8", (0.05, -100), (0.04, 30)),
    TableCase("sqrt_i8", nn.SqrtOp, "int8", (0.1, -128), (0.02, -128), (2, 131)),
    TableCase("rsqrt_i8", nn.RsqrtOp, "int8", (0.2, -128), (0.01, -128)),
    TableCase("hard_swish_i8", nn.HardSwishOp, "int8", (0.05, 3), (0.04, -10)),
    TableCase("hard_swish_u8", nn.HardSwishOp, "uint8", (0.05, 128), (0.04, 20), (1, 1, 1, 301)),
    TableCase("sigmoid_i8_large", nn.SigmoidOp, "int8", (0.1, 0), (1 / 256, -128), (4, 32771)),
]
"""Sizes are odd; the large case runs the parallel loop."""


def build_op(case: TableCase, source: SSAValue) -> nn.NNOp:
    out_el = qtype(case.dtype, *case.result)
    return case.op.make(source, result_elements=out_el, **case.props)


def executable() -> tuple[ModuleOp, delegate.ExecutableOp, list[np.ndarray]]:
    types = [TensorType(qtype(c.dtype, *c.source), list(c.shape)) for c in CASES]
    module, exe = one_op_per_argument(
        "test_cpu_int8_tables", types, lambda i, arg: build_op(CASES[i], arg)
    )
    feed = [every_byte(c.shape, c.dtype) for c in CASES]
    return module, exe, feed


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], str]:
    actual, expected, source = run_lowered_and_reference(*executable())
    pairs = {c.id: (a, e) for c, a, e in zip(CASES, actual, expected, strict=True)}
    return pairs, source


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_table_op_bit_exact(
    results: tuple[dict[str, tuple[np.ndarray, np.ndarray]], str], case_id: str
) -> None:
    actual, expected = results[0][case_id]
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_source_indexes_tables(
    results: tuple[dict[str, tuple[np.ndarray, np.ndarray]], str],
) -> None:
    source = results[1]
    assert source.count("irc_lut8(px, ") == len(CASES)
    # every case, the 131,084-element one included, is one irc_lut8 call: no OpenMP loop
    # (the prelude's `#define IRC_PARFOR` made the old `"IRC_PARFOR" in source` always true)
    assert not uses_openmp(source)
    assert "expf" not in source


def _support(
    op_type: type[nn.NNOp], dtype: str, source: tuple[float, int], result_dtype: str
) -> Support:
    block = Block(arg_types=[TensorType(qtype(dtype, *source), [3, 5])])
    op = op_type.make(block.args[0], result_elements=qtype(result_dtype, 0.01, 0))
    block.add_op(op)
    return CpuTarget().supports(op)


def test_every_case_supported() -> None:
    _, exe, _ = executable()
    for op in exe.walk():
        if isinstance(op, nn.NNOp):
            support = CpuTarget().supports(op)
            assert support, support.reason


@pytest.mark.parametrize(
    ("op_type", "dtype", "source", "result_dtype", "message"),
    [
        (nn.SqrtOp, "int8", (0.1, 0), "int8", "refuses some stored inputs"),
        (nn.RsqrtOp, "int8", (0.1, 3), "int8", "refuses some stored inputs"),
        (nn.ExpOp, "uint8", (0.1, 128), "uint8", "nn.exp"),
        (nn.SigmoidOp, "int16", (0.001, 0), "int16", "8-bit only"),
        (nn.SigmoidOp, "int8", (0.1, 0), "int16", "8-bit only"),
    ],
)
def test_refusals_are_clear(
    op_type: type[nn.NNOp], dtype: str, source: tuple[float, int], result_dtype: str, message: str
) -> None:
    support = _support(op_type, dtype, source, result_dtype)
    assert not support
    assert support.code == "quantized"
    assert message in support.reason
    assert "reference target runs it" in support.reason
