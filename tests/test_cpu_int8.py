"""Native int8 on the CPU target: bit-exact against the reference target, op family by family.

Every case is one quantized `nn` op (or a short chain) on int8/uint8 tensors; all cases of
this file go into ONE `cpu` executable, so the generated C compiles once. The expected
results come from the reference target's runtime on the same executable (it lowers a copy
with `lower-quantized`: docs/design.md §2, the single definition of the int8 semantics); the CPU
runtime runs it after `lower-cpu` (which gives quantized ops the same integer form) and the
stored integers must be identical. Cases cover per-tensor and per-channel requantization,
non-zero zero points (wide i32 inputs) and zero ones (narrow i8 inputs), padding, strides,
dilations, groups, depthwise multipliers, a uint8 filter with a zero point (i16 weights),
fused activations (integer clamps), pools, mean, add/sub/mul with broadcasting, concat with
requantized inputs, and data movement on storage integers. The shared int8 models run
end to end in test_cpu_int8_models.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pytest
from cpu_support import isa_params, load_with_isa, lower, needs_compiler, with_kernels
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.dialects.builtin import f32 as f32_type
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from irc.dialects import delegate, nn
from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import element_type
from irc.targets.cpu.runtime import CpuRuntime
from irc.targets.cpu.target import CpuTarget
from irc.targets.reference.target import ReferenceRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache]

rng = np.random.default_rng(20251122)


# ---- Building quantized cases ------------------------------------------------------------------


def qtype(
    dtype: str, scale: float | Sequence[float], zp: int = 0, axis: int | None = None
) -> UniformQuantizedType:
    storage = element_type(dtype)
    if axis is None:
        return UniformQuantizedType.per_tensor(storage, f32_type, float(np.float32(scale)), zp)  # type: ignore[arg-type]
    scales = [float(np.float32(s)) for s in scale]  # type: ignore[union-attr]
    return UniformQuantizedType.per_axis(storage, f32_type, axis, scales, [zp] * len(scales))  # type: ignore[arg-type]


def qtensor(shape: Sequence[int], element: Attribute) -> TensorType:
    return TensorType(element, list(shape))


def qconst(data: np.ndarray, element: Attribute) -> nn.ConstantOp:
    return nn.ConstantOp.from_array(np.ascontiguousarray(data), qtensor(data.shape, element))


def random_q(shape: Sequence[int], dtype: str = "int8") -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


Add = Callable[[Operation], SSAValue]


@dataclass
class QCase:
    id: str
    types: list[TensorType]
    feed: list[np.ndarray]
    build: Callable[[Add, Sequence[SSAValue]], SSAValue]


CASES: list[QCase] = []


def case(id: str, types: list[TensorType], feed: list[np.ndarray]):
    def register(build: Callable[[Add, Sequence[SSAValue]], SSAValue]) -> None:
        CASES.append(QCase(id, types, feed, build))

    return register


def _conv_case(
    id: str,
    shape: tuple[int, ...],
    out_c: int,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilations: tuple[int, int],
    zp_in: int,
    zp_out: int,
    act: str,
    groups: int = 1,
    per_channel: bool = True,
    dtype: str = "int8",
    w_zp: int = 0,
) -> None:
    kh, kw = kernel
    s_w = list(rng.uniform(0.002, 0.02, out_c)) if per_channel else [0.01]
    w = random_q((out_c, kh, kw, shape[3] // groups), dtype)
    b = rng.integers(-3000, 3000, out_c).astype(np.int32)
    w_el = qtype(dtype, s_w, w_zp, axis=0) if per_channel else qtype(dtype, s_w[0], w_zp)
    in_el, out_el = qtype(dtype, 0.05, zp_in), qtype(dtype, 0.3, zp_out)
    x = random_q(shape, dtype)

    @case(id, [qtensor(shape, in_el)], [x])
    def build(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        return add(
            nn.Conv2DOp.make(
                args[0],
                add(qconst(w, w_el)),
                add(nn.ConstantOp.from_array(b)),
                strides=list(strides),
                pads=list(pads),
                dilations=list(dilations),
                groups=groups,
                layout="NHWC",
                activation=act,
                result_elements=out_el,
            )
        )


_conv_case("conv3x3_same", (1, 9, 9, 5), 20, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), -5, 3, "relu6")
_conv_case(
    "conv_stride_dil", (2, 11, 10, 3), 7, (3, 2), (2, 1), (2, 0, 1, 1), (2, 1), 7, -4, "none"
)
_conv_case("conv1x1_zp0", (1, 6, 6, 33), 17, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 0, 0, "relu")
_conv_case(
    "conv_per_tensor",
    (1, 7, 5, 8),
    4,
    (3, 3),
    (2, 2),
    (1, 1, 1, 1),
    (1, 1),
    -128,
    5,
    "none",
    per_channel=False,
)
_conv_case(
    "conv_groups", (1, 6, 6, 8), 12, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, -1, "none", groups=2
)
_conv_case(
    "depthwise", (1, 10, 9, 24), 24, (3, 3), (2, 2), (0, 0, 1, 1), (1, 1), -3, 4, "relu6", groups=24
)
_conv_case(
    "depthwise_mult2", (1, 6, 6, 3), 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 9, 0, "none", groups=3
)
_conv_case(
    "conv_uint8_wzp",
    (1, 5, 5, 4),
    6,
    (3, 3),
    (1, 1),
    (1, 1, 1, 1),
    (1, 1),
    128,
    120,
    "none",
    per_channel=False,
    dtype="uint8",
    w_zp=131,
)


def _fc_case(id: str, batch: int, k: int, n: int, zp_in: int, bias: bool, act: str) -> None:
    w = random_q((n, k))
    b = rng.integers(-5000, 5000, n).astype(np.int32)
    x = random_q((batch, k))
    in_el = qtype("int8", 0.04, zp_in)

    @case(id, [qtensor((batch, k), in_el)], [x])
    def build(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        return add(
            nn.FullyConnectedOp.make(
                args[0],
                add(qconst(w, qtype("int8", list(rng.uniform(0.002, 0.01, n)), 0, axis=0))),
                add(nn.ConstantOp.from_array(b)) if bias else None,
                activation=act,
                result_elements=qtype("int8", 0.2, -7),
            )
        )


_fc_case("fc_bias", 3, 40, 21, -9, True, "none")
_fc_case("fc_nobias_zp0", 1, 64, 10, 0, False, "relu")


def _binary_case(
    id: str, cls: type[nn.NNOp], a_shape: tuple[int, ...], b_shape: tuple[int, ...], act: str
) -> None:
    a_el, b_el = qtype("int8", 0.05, -3), qtype("int8", 0.08, 10)
    out_el = qtype("int8", 0.4 if cls is nn.MulOp else 0.1, 2)

    @case(
        id, [qtensor(a_shape, a_el), qtensor(b_shape, b_el)], [random_q(a_shape), random_q(b_shape)]
    )
    def build(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        return add(cls.make(*args, activation=act, result_elements=out_el))  # type: ignore[attr-defined]


_binary_case("add", nn.AddOp, (1, 4, 4, 8), (1, 4, 4, 8), "none")
_binary_case("add_broadcast_relu6", nn.AddOp, (1, 3, 3, 4), (4,), "relu6")
_binary_case("sub", nn.SubOp, (2, 5, 6), (2, 5, 6), "relu")
_binary_case("mul_broadcast", nn.MulOp, (2, 3, 7), (3, 1), "none")


def _pool_case(
    id: str,
    cls: type[nn.NNOp],
    shape: tuple[int, ...],
    kernel,
    strides,
    pads,
    zp: int,
    dtype: str = "int8",
    **extra: object,
) -> None:
    element = qtype(dtype, 0.06, zp)

    @case(id, [qtensor(shape, element)], [random_q(shape, dtype)])
    def build(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        return add(
            cls.make(  # type: ignore[attr-defined]
                args[0],
                kernel=list(kernel),
                strides=list(strides),
                pads=list(pads),
                layout="NHWC",
                result_elements=element,
                **extra,
            )
        )


_pool_case("avg_pool_same", nn.AvgPool2DOp, (1, 7, 7, 5), (3, 3), (2, 2), (1, 1, 1, 1), -4)
_pool_case("avg_pool_valid", nn.AvgPool2DOp, (2, 6, 6, 3), (2, 2), (2, 2), (0, 0, 0, 0), 3)
_pool_case("max_pool_same", nn.MaxPool2DOp, (1, 8, 7, 6), (3, 3), (2, 2), (1, 1, 1, 1), -128)
# channel runs longer than a vector and than the average pool's 64-channel block, with tails
_pool_case("max_pool_c70", nn.MaxPool2DOp, (2, 9, 8, 70), (3, 2), (2, 1), (1, 0, 1, 1), 5)
_pool_case(
    "max_pool_uint8_dilated", nn.MaxPool2DOp, (1, 9, 9, 17), (2, 3), (1, 2), (0, 2, 1, 0), 128,
    "uint8", dilations=[2, 1],
)  # fmt: skip
_pool_case(
    "avg_pool_c70_include_pad", nn.AvgPool2DOp, (1, 7, 6, 70), (3, 3), (2, 2), (1, 1, 1, 1), -9,
    count_include_pad=True,
)  # fmt: skip
_pool_case("avg_pool_uint8", nn.AvgPool2DOp, (1, 6, 6, 33), (2, 2), (1, 1), (0, 1, 0, 1), 130,
           "uint8")  # fmt: skip


def _mean_case(id: str, shape: tuple[int, ...], axes: list[int], qin, qout) -> None:
    @case(id, [qtensor(shape, qtype("int8", *qin))], [random_q(shape)])
    def build(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        return add(
            nn.ReduceOp.make(
                args[0], kind="mean", axes=axes, keepdims=True, result_elements=qtype("int8", *qout)
            )
        )


_mean_case("mean_hw", (1, 7, 7, 8), [1, 2], (0.1, 3), (0.1, 3))
_mean_case("mean_requant", (2, 4, 4, 16), [1, 2], (0.05, -10), (0.03, 4))


def _activation_cases() -> None:
    shape = (2, 3, 10)
    in_el, out_el = qtype("int8", 0.05, -6), qtype("int8", 0.04, 1)

    @case("relu6", [qtensor(shape, in_el)], [random_q(shape)])
    def relu6(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        return add(nn.Relu6Op.make(args[0], result_elements=out_el))

    @case("leaky_relu", [qtensor(shape, in_el)], [random_q(shape)])
    def leaky(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        return add(
            nn.LeakyReluOp.make(args[0], alpha=float(np.float32(0.2)), result_elements=out_el)
        )


_activation_cases()


def _movement_cases() -> None:
    a_el, b_el, out_el = qtype("int8", 0.05, 1), qtype("int8", 0.07, -4), qtype("int8", 0.05, 1)
    a, b = random_q((1, 4, 4, 3)), random_q((1, 4, 4, 5))

    @case("concat_requant", [qtensor(a.shape, a_el), qtensor(b.shape, b_el)], [a, b])
    def concat(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        return add(nn.ConcatOp.make(list(args), axis=3, result_elements=out_el))

    x = random_q((2, 3, 4))
    el = qtype("int8", 0.1, -2)

    @case("transpose_pad_reshape", [qtensor(x.shape, el)], [x])
    def movement(add: Add, args: Sequence[SSAValue]) -> SSAValue:
        t = add(nn.TransposeOp.make(args[0], perm=[2, 0, 1]))
        p = add(nn.PadOp.make(t, pads=[1, 0, 0, 2, 1, 1], value=-2.0))
        return add(nn.ReshapeOp.make(p, shape=[5, -1]))


_movement_cases()


# ---- The family run ---------------------------------------------------------------------------


def _executable() -> tuple[ModuleOp, delegate.ExecutableOp, list[list[np.ndarray]]]:
    """The family as one executable with an entry per case (`entry_<i>`: one C function per
    case, which gcc compiles faster than one function holding them all), and each case's
    inputs."""
    funcs: list[Operation] = []
    for i, c in enumerate(CASES):
        block = Block(arg_types=c.types)
        ops: list[Operation] = []

        def add(op: Operation, ops: list[Operation] = ops) -> SSAValue:
            ops.append(op)
            return op.results[0]

        result = c.build(add, list(block.args))
        block.add_ops(ops)
        block.add_op(ReturnOp(result))
        func_type = FunctionType.from_lists(c.types, [result.type])
        funcs.append(FuncOp(f"entry_{i}", func_type, Region(block)))
    executable = delegate.ExecutableOp("test_cpu_int8", "cpu", funcs)
    module = ModuleOp([executable])
    module.verify()
    return module, executable, [list(c.feed) for c in CASES]


class _Loaded(Protocol):
    def execute(self, entry: str, args: Sequence[Any]) -> Sequence[Any]: ...


def _run(loaded: _Loaded, feeds: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Every case's result, case by case."""
    return [loaded.execute(f"entry_{i}", feed)[0] for i, feed in enumerate(feeds)]


Lowered = tuple[delegate.ExecutableOp, list[list[np.ndarray]], list[np.ndarray]]
"""The lowered family executable, its inputs and the reference's outputs."""


@pytest.fixture(scope="module")
def lowered_family() -> Lowered:
    module, executable, feed = _executable()
    expected = _run(ReferenceRuntime().load(executable), feed)
    lower(module)
    return executable, feed, expected


@pytest.fixture(scope="module")
def family(lowered_family: Lowered) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    executable, feed, expected = lowered_family
    actual = _run(CpuRuntime().load(executable), feed)
    return {c.id: (a, e) for c, a, e in zip(CASES, actual, expected, strict=True)}


@pytest.mark.parametrize("name", isa_params(("avx512", "avx2", "generic")))
def test_int8_family_bit_exact_per_isa(lowered_family: Lowered, name: str) -> None:
    """The other ISA profiles' builds (the native one: test_int8_family_bit_exact)."""
    executable, feed, expected = lowered_family
    actual = _run(load_with_isa(executable, name), feed)
    for c, got, want in zip(CASES, actual, expected, strict=True):
        assert got.dtype == want.dtype, c.id
        np.testing.assert_array_equal(got, want, err_msg=c.id)


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_int8_family_bit_exact(
    family: dict[str, tuple[np.ndarray, np.ndarray]], case_id: str
) -> None:
    actual, expected = family[case_id]
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_supports_every_case_op() -> None:
    _, executable, _ = _executable()
    for op in executable.walk():
        if isinstance(op, nn.NNOp):
            support = CpuTarget().supports(op)
            assert support, support.reason


def test_lowered_source_has_integer_kernels() -> None:
    module, executable, _ = _executable()
    lower(module)
    (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
    source = with_kernels(source)  # and its kernel library's
    for name in ("irc_mbqm", "irc_conv2d_i32", "irc_depthwise_i32", "irc_pool2d_int8_t"):
        assert name in source
