"""The CPU target's int8 sums (targets/cpu/qsum.py, `cpu.fusion` kind "qsum").

A quantized mean or sum (a QDQ model's global average pool) is, after `lower-quantized`,
an int32 cast and zero-point sub of the whole input, an int32 sum and a rescale:
`cpu-fuse` runs the widening and the sum as ONE kernel reading the bytes once. Every case
must be bit-exact with the reference target with every ISA profile the host runs: int8 and
uint8 storage, a zero point of 0 (no sub), the reduced axes in the middle (NHWC global
average pool), last (one value per row) and first, a sum as well as means, a large feature
map; axes that are not one contiguous run stay separate ops.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from irc.dialects import cpu, delegate, nn
from irc.targets.reference.target import ReferenceRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache(unset=["IRC_CPU_FUSE_INT8"])]

rng = np.random.default_rng(23)


class SumCase:
    """A quantized `nn.reduce` (mean or sum) of one entry argument."""

    def __init__(
        self,
        id: str,
        shape: tuple[int, ...],
        axes: Sequence[int],
        *,
        kind: str = "mean",
        dtype: str = "int8",
        zp_in: int = -7,
        zp_out: int = 5,
        keepdims: bool = True,
        fused: bool = True,
    ):
        self.id = id
        self.axes = list(axes)
        self.kind = kind
        self.dtype = dtype
        self.keepdims = keepdims
        self.in_type = TensorType(qtype(dtype, 0.05, zp_in), list(shape))
        scale_out = 0.02 if kind == "mean" else 0.05 * 4
        self.out_el = qtype(dtype, scale_out, zp_out)
        self.feed = random_storage(rng, shape, dtype)
        self.fused = fused


CASES = [
    SumCase("gap_int8", (1, 13, 11, 24), [1, 2]),
    SumCase("gap_uint8", (2, 9, 9, 5), [1, 2], dtype="uint8", zp_in=130, zp_out=120),
    SumCase("zero_point_0", (1, 8, 8, 16), [1, 2], zp_in=0),
    SumCase("last_axis_sum", (3, 50), [-1], kind="sum", keepdims=False),
    SumCase("leading_axes", (4, 6, 10), [0, 1], zp_in=100),
    SumCase("large", (1, 112, 112, 16), [1, 2], zp_in=-111, zp_out=-44),
    SumCase("not_contiguous", (2, 5, 3, 7), [1, 3], fused=False),
]


def _executable() -> tuple[ModuleOp, delegate.ExecutableOp, list[np.ndarray]]:
    types = [c.in_type for c in CASES]
    block = Block(arg_types=types)
    results = []
    for case, arg in zip(CASES, block.args, strict=True):
        op = nn.ReduceOp.make(
            arg,
            kind=case.kind,
            axes=case.axes,
            keepdims=case.keepdims,
            result_elements=case.out_el,
        )
        block.add_op(op)
        results.append(op.results[0])
    block.add_op(ReturnOp(*results))
    func = FuncOp("entry", FunctionType.from_lists(types, [r.type for r in results]), Region(block))
    executable = delegate.ExecutableOp("test_cpu_qsum", "cpu", [func])
    module = ModuleOp([executable])
    module.verify()
    return module, executable, [c.feed for c in CASES]


@pytest.fixture(scope="module")
def lowered() -> tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray], list[str]]:
    module, executable, feed = _executable()
    expected = ReferenceRuntime().load(executable).execute("entry", feed)
    from irc.targets.cpu.fuse import fuse_executable

    fuse_executable(executable)
    kinds = [op.kind.data for op in executable.walk() if isinstance(op, cpu.FusionOp)]
    lower(module)
    return executable, feed, list(expected), kinds


def test_each_contiguous_sum_is_one_kernel(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray], list[str]],
) -> None:
    assert lowered[3].count("qsum") == sum(c.fused for c in CASES)
    (source,) = [op.source.data for op in lowered[0].walk() if hasattr(op, "source")]
    for dtype in ("int8", "uint8"):
        calls = source.count(f"irc_qsum_{'u' if dtype == 'uint8' else 's'}8((const {dtype}_t *)")
        assert calls == sum(c.fused and c.dtype == dtype for c in CASES)


@pytest.mark.parametrize("name", isa_params(("avx512vnni", "avx512", "avx2", "generic")))
def test_sum_bit_exact(
    lowered: tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray], list[str]], name: str
) -> None:
    executable, feed, expected, _ = lowered
    actual = load_with_isa(executable, name).execute("entry", feed)
    assert_each_equal(CASES, actual, expected)  # type: ignore[arg-type]  # SumCase has the .id the check names


def test_sum_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_INT8", "0")
    module, executable, _ = _executable()
    lower(module)
    (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
    assert "irc_qsum_s8((" not in source
    assert "irc_qsum_u8((" not in source
