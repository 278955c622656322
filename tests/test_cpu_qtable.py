"""The CPU target's table chains (targets/cpu/qtable.py, `cpu.fusion` kind "qtable").

A quantized swish ``mul(x, sigmoid(x))`` (QDQ EfficientNets' SiLU) is, after
`lower-quantized`, a sigmoid table and five int32 ops whose result depends on x's byte
alone: `cpu-fuse` runs it as ONE 256-entry lookup computed by the reference kernels. Every
case must be bit-exact with the reference target with every ISA profile the host runs; the
cases cover int8 and uint8 storage, zero points, double (TFLite) and single (ONNX) rounding,
a fused relu6 (clamp after the rescale), a left-shifting rescale, the element count split
across threads. Kept apart (a sigmoid table, then the mul): a sigmoid whose result has
another use, and a mul of two different values. A quantized mul whose second input repeats
along leading dimensions (squeeze-excitation) is one "qmul" kernel (`qmul.py`): 8 lanes at
a time, the rows split over the threads when large.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from cpu_support import (
    assert_each_equal,
    isa_params,
    load_with_isa,
    lower,
    needs_compiler,
    qtype,
    random_storage,
)
from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from irc.dialects import cpu, delegate, nn
from irc.dialects.quant import RESCALE_ROUNDING
from irc.targets.reference.target import ReferenceRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache(unset=["IRC_CPU_FUSE_INT8"])]

rng = np.random.default_rng(17)

Add = Callable[[Operation], SSAValue]


class SwishCase:
    """``mul(x, sigmoid(x))`` on one entry argument (or, `other`, on two: x * sigmoid(y))."""

    def __init__(
        self,
        id: str,
        shape: tuple[int, ...],
        *,
        dtype: str = "int8",
        zp_in: int = 0,
        zp_out: int = 0,
        scale_in: float = 0.05,
        scale_out: float = 0.03,
        act: str = "none",
        single: bool = False,
        sigmoid_used: bool = False,
        other: bool = False,
    ):
        self.id = id
        self.single = single
        self.in_type = TensorType(qtype(dtype, scale_in, zp_in), list(shape))
        low = -128 if dtype == "int8" else 0
        self.sig_el = qtype(dtype, 1 / 256, low)
        self.out_el = qtype(dtype, scale_out, zp_out)
        self.act = act
        self.sigmoid_used = sigmoid_used
        self.other = other
        count = 2 if other else 1
        self.types = [self.in_type] * count
        self.feeds = [random_storage(rng, shape, dtype) for _ in range(count)]
        self.fused = not (sigmoid_used or other)

    def _mark(self, op: Operation) -> Operation:
        if self.single:
            op.attributes[RESCALE_ROUNDING] = StringAttr("single_round")
        return op

    def build(self, add: Add, args: Sequence[SSAValue]) -> list[SSAValue]:
        x = args[0]
        s = add(self._mark(nn.SigmoidOp.make(args[-1], result_elements=self.sig_el)))
        mul = nn.MulOp.make(x, s, activation=self.act, result_elements=self.out_el)
        y = add(self._mark(mul))
        return [y, s] if self.sigmoid_used else [y]


class MulCase:
    """A quantized mul of two entry arguments, the second repeating along leading dims."""

    def __init__(
        self,
        id: str,
        shape: tuple[int, ...],
        small: tuple[int, ...],
        *,
        dtype: str = "int8",
        zps: tuple[int, int, int] = (-5, -128, 7),
        act: str = "none",
        single: bool = False,
    ):
        self.id = id
        self.single = single
        self.types = [
            TensorType(qtype(dtype, 0.05, zps[0]), list(shape)),
            TensorType(qtype(dtype, 1 / 256, zps[1]), list(small)),
        ]
        self.feeds = [random_storage(rng, shape, dtype), random_storage(rng, small, dtype)]
        self.out_el = qtype(dtype, 0.02, zps[2])
        self.act = act
        self.sigmoid_used = False
        self.fused = False

    def build(self, add: Add, args: Sequence[SSAValue]) -> list[SSAValue]:
        mul = nn.MulOp.make(*args, activation=self.act, result_elements=self.out_el)
        if self.single:
            mul.attributes[RESCALE_ROUNDING] = StringAttr("single_round")
        return [add(mul)]


MULS = [
    MulCase("se_tables", (1, 40, 40, 16), (1, 1, 1, 16), single=True),
    MulCase("se_direct", (1, 7, 7, 96), (1, 1, 1, 96), zps=(3, -100, -20), act="relu6"),
    MulCase("se_uint8_tables", (2, 20, 20, 8), (8,), dtype="uint8", zps=(130, 0, 120)),
    MulCase("se_double_round", (1, 30, 30, 24), (1, 1, 1, 24), zps=(-128, -128, -128)),
    MulCase("se_threads_tail", (1, 64, 64, 20), (1, 1, 1, 20), zps=(-111, -128, -9), single=True),
]

CASES: list[SwishCase | MulCase] = [
    SwishCase("int8", (1, 7, 9, 16), zp_in=-5, zp_out=-100),
    SwishCase("int8_single", (1, 7, 9, 16), zp_in=3, zp_out=-90, single=True),
    SwishCase("uint8", (2, 5, 33), dtype="uint8", zp_in=130, zp_out=20, single=True),
    SwishCase("relu6", (3, 11), zp_in=-20, zp_out=-128, scale_out=0.02, act="relu6"),
    SwishCase("left_shift", (5, 7), scale_in=0.5, scale_out=1e-3, zp_out=7),
    SwishCase("threads", (1, 64, 64, 24), zp_in=-7, zp_out=-110, single=True),
    SwishCase("sigmoid_used", (2, 3, 17), zp_in=-5, sigmoid_used=True),
    SwishCase("two_values", (2, 3, 17), zp_in=4, other=True, single=True),
    *MULS,
]


def _kinds(executable: delegate.ExecutableOp) -> list[str]:
    return [op.kind.data for op in executable.walk() if isinstance(op, cpu.FusionOp)]


def _executable() -> tuple[ModuleOp, delegate.ExecutableOp, list[np.ndarray]]:
    types = [t for c in CASES for t in c.types]
    block = Block(arg_types=types)
    args = iter(block.args)
    results: list[SSAValue] = []
    for case in CASES:
        ops: list[Operation] = []

        def add(op: Operation, ops: list[Operation] = ops) -> SSAValue:
            ops.append(op)
            return op.results[0]

        results += case.build(add, [next(args) for _ in case.types])
        block.add_ops(ops)
    block.add_op(ReturnOp(*results))
    func = FuncOp("entry", FunctionType.from_lists(types, [r.type for r in results]), Region(block))
    executable = delegate.ExecutableOp("test_cpu_qtable", "cpu", [func])
    module = ModuleOp([executable])
    module.verify()
    return module, executable, [f for c in CASES for f in c.feeds]


@pytest.fixture(scope="module")
def lowered() -> tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray], list[str]]:
    module, executable, feed = _executable()
    expected = ReferenceRuntime().load(executable).execute("entry", feed)
    from irc.targets.cpu.fuse import fuse_executable

    fuse_executable(executable)
    kinds = _kinds(executable)
    lower(module)
    return executable, feed, list(expected), kinds


def test_each_swish_is_one_table(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray], list[str]],
) -> None:
    assert lowered[3].count("qtable") == sum(c.fused for c in CASES)
    # every other mul (x * sigmoid(y), a sigmoid used twice, squeeze-excitation) is one
    # "qmul" kernel
    assert lowered[3].count("qmul") == len(CASES) - sum(c.fused for c in CASES)
    (source,) = [op.source.data for op in lowered[0].walk() if hasattr(op, "source")]
    assert source.count("/* table of ") == sum(c.fused for c in CASES)


@pytest.mark.parametrize("name", isa_params(("avx512vnni", "avx512", "avx2", "generic")))
def test_table_bit_exact(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray], list[str]], name: str
) -> None:
    executable, feed, expected, _ = lowered
    actual = load_with_isa(executable, name).execute("entry", feed)
    ids = [c for c in CASES for _ in range(2 if c.sigmoid_used else 1)]
    assert_each_equal(ids, actual, expected)  # type: ignore[arg-type]  # ids: each has .id


def test_table_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_INT8", "0")
    module, executable, _ = _executable()
    lower(module)
    (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
    assert "/* table of " not in source
