"""OpenCL kernels of targets/opencl/lowerings/ against the reference target, per op family.

Each family's cases share ONE executable (one PoCL program build). Tolerance rtol 1e-4 /
atol 1e-5 everywhere, transcendental ops included: measured on PoCL under
`-cl-fast-relaxed-math` over 20 000 inputs each, the worst |err| / (atol + rtol |ref|) was
0.002 for exp, log, erf and pow, 0.009 for exact gelu, 0.048 for tanh gelu, 0.02 for
log_softmax, so no looser bound is needed. Comparisons (NaN and inf included), logic,
select and data movement must be exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from cpu_support import Case, build_executable, op_case, reference_outputs
from opencl_support import needs_device
from xdsl.dialects.builtin import IntegerType, Signedness, StringAttr, TensorType, f32, i1, i8
from xdsl.ir import Operation, SSAValue
from xdsl.parser import Parser

from irc.context import make_context
from irc.dialects import nn, quant
from irc.dialects.nn.shape import COORDINATE_MODES, NEAREST_MODES
from irc.dialects.quant import UniformQuantizedType
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.runtime import OpenCLRuntime, OpenCLValue
from irc.targets.opencl.target import OpenCLTarget

pytestmark = pytest.mark.private_cache

RNG = np.random.default_rng(77)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def positive(*shape: int) -> np.ndarray:
    return RNG.uniform(0.1, 4.0, shape).astype(np.float32)


def run_cases(cases: Sequence[Case], rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Build the cases into one opencl executable, lower it, run it, compare each output
    with the reference kernels' (exactly for non-float outputs)."""
    module, executable, built = build_executable(cases, "test_opencl_ops_0")
    executable.properties["target"] = StringAttr("opencl")
    expected = [reference_outputs(b) for b in built]
    LowerOpenCLPass().apply(make_context(), module)
    module.verify()
    loaded = OpenCLRuntime().load(executable)
    outs = iter(loaded.execute("entry", [a for b in built for a in b.args]))
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            got = next(outs)
            assert isinstance(got, OpenCLValue)
            host = got.to_host()
            assert host.shape == ref.shape, b.case.id
            if ref.dtype.kind == "f":
                np.testing.assert_allclose(host, ref, rtol=rtol, atol=atol, err_msg=b.case.id)
            else:
                np.testing.assert_array_equal(host, ref, err_msg=b.case.id)


# ---- Elementwise --------------------------------------------------------------------------------


@needs_device
def test_unary_family() -> None:
    shapes = [(7,), (1, 4, 3, 5)]
    cases = []
    for s in shapes:
        tag = "x".join(map(str, s))
        cases += [
            op_case(f"abs_{tag}", nn.AbsOp, [rand(*s)]),
            op_case(f"neg_{tag}", nn.NegOp, [rand(*s)]),
            op_case(f"exp_{tag}", nn.ExpOp, [rand(*s) * 3]),
            op_case(f"log_{tag}", nn.LogOp, [positive(*s)]),
            op_case(f"sqrt_{tag}", nn.SqrtOp, [positive(*s)]),
            op_case(f"rsqrt_{tag}", nn.RsqrtOp, [positive(*s)]),
            op_case(f"erf_{tag}", nn.ErfOp, [rand(*s) * 2]),
            op_case(f"gelu_{tag}", nn.GeluOp, [rand(*s) * 3]),
            op_case(f"gelu_tanh_{tag}", nn.GeluOp, [rand(*s) * 3], approximate="tanh"),
        ]
    run_cases(cases)


@needs_device
def test_binary_family_with_broadcasting() -> None:
    pairs = [((5,), (5,)), ((3, 1, 5), (4, 5)), ((2, 3, 4), (1,)), ((1, 6), (7, 1)), ((), (2, 3))]
    cases = []
    for sa, sb in pairs:
        tag = f"{'x'.join(map(str, sa))}_{'x'.join(map(str, sb))}"
        cases += [
            op_case(f"pow_{tag}", nn.PowOp, [positive(*sa), rand(*sb)]),
            op_case(f"sqdiff_{tag}", nn.SquaredDifferenceOp, [rand(*sa), rand(*sb)]),
        ]
    integral = np.array([2.0, 3.0, -1.0, 0.0], np.float32)
    cases += [
        op_case("pow_negative_base", nn.PowOp, [rand(3, 4), integral]),
        op_case("pow_constant_exponent", nn.PowOp, [positive(2, 5), np.float32([0.5])], [1]),
        op_case("prelu_channel", nn.PReluOp, [rand(1, 4, 5, 3), rand(3)]),
        op_case("prelu_full", nn.PReluOp, [rand(2, 7), rand(2, 7)]),
        op_case("prelu_hw1", nn.PReluOp, [rand(1, 3, 4, 2), rand(3, 1, 1)]),
    ]
    run_cases(cases)


@needs_device
def test_compare_logic_and_select() -> None:
    a, b = rand(3, 4), rand(4)
    b[1] = a[0, 1]  # equal elements
    a[1, :] = [np.nan, np.inf, -np.inf, 0.0]  # NaN compares unordered (IEEE), inf ordered
    b[2] = np.nan
    cases = [
        op_case(f"compare_{k}", nn.CompareOp, [a, b], kind=k, result_elements=i1)
        for k in ("eq", "ne", "lt", "le", "gt", "ge")
    ]
    m1 = RNG.random((2, 5)) > 0.5
    m2 = RNG.random((5,)) > 0.5
    cases += [
        op_case("and", nn.LogicalAndOp, [m1, m2]),
        op_case("or", nn.LogicalOrOp, [m1, m2]),
        op_case("xor_const", nn.LogicalXorOp, [m1, m2], [1]),
        op_case("not", nn.LogicalNotOp, [m1]),
        op_case(
            "select",
            nn.SelectOp,
            [RNG.random((2, 1)) > 0.5, rand(3), rand(1)],
            result_elements=f32,
        ),
        op_case(
            "select_const_mask",
            nn.SelectOp,
            [RNG.random((4, 3)) > 0.5, rand(4, 3), rand(4, 3)],
            [0],
            result_elements=f32,
        ),
    ]

    def chain(x, y, z):
        less = nn.CompareOp.make(x, y, kind="lt", result_elements=i1)
        pick = nn.SelectOp.make(less.output, x, z, result_elements=f32)
        return [less, pick]

    cases.append(Case("compare_then_select", chain, [rand(2, 6), rand(6), rand(2, 6)]))
    run_cases(cases)


# ---- Softmax and reductions ---------------------------------------------------------------------


@needs_device
def test_softmax_any_axis_log_softmax_and_prod() -> None:
    x = rand(3, 5, 7)
    cases = []
    for axis in (0, 1, -1, -2):
        cases.append(op_case(f"softmax_{axis}", nn.SoftmaxOp, [x], axis=axis))
        cases.append(op_case(f"log_softmax_{axis}", nn.LogSoftmaxOp, [x], axis=axis))
    cases += [
        op_case("softmax_beta_neg", nn.SoftmaxOp, [rand(4, 6)], axis=-1, beta=-0.7),
        op_case("softmax_beta_axis0", nn.SoftmaxOp, [rand(5, 3)], axis=0, beta=2.5),
        op_case("log_softmax_1d", nn.LogSoftmaxOp, [rand(11)], axis=0),
    ]
    p = RNG.uniform(0.6, 1.5, (3, 4, 5)).astype(np.float32)
    cases += [
        op_case("prod_last", nn.ReduceOp, [p], kind="prod", axes=[-1]),
        op_case("prod_0_2_keep", nn.ReduceOp, [p], kind="prod", axes=[0, 2], keepdims=True),
        op_case("prod_all", nn.ReduceOp, [p], kind="prod", axes=[0, 1, 2]),
        op_case("prod_1d", nn.ReduceOp, [p[0, 0]], kind="prod", axes=[0]),
    ]
    run_cases(cases)


# ---- Data movement ------------------------------------------------------------------------------


@needs_device
def test_pad_slice_broadcast_gather() -> None:
    x = rand(3, 4, 5)
    cases = [
        op_case("pad_reflect", nn.PadOp, [x], pads=[1, 2, 0, 3, 2, 1], mode="reflect"),
        op_case("pad_edge", nn.PadOp, [x], pads=[2, 0, 1, 1, 0, 4], mode="edge"),
        op_case("pad_reflect_1d", nn.PadOp, [rand(6)], pads=[5, 5], mode="reflect"),
        op_case(
            "pad_edge_4d", nn.PadOp, [rand(1, 3, 3, 2)], pads=[0, 0, 3, 3, 3, 3, 0, 0], mode="edge"
        ),
        op_case("slice_steps", nn.SliceOp, [x], begin=[0, 1, 0], end=[3, 4, 5], strides=[2, 1, 3]),
        op_case(
            "slice_negative",
            nn.SliceOp,
            [x],
            begin=[2, 3, 4],
            end=[-1, 0, -1],
            strides=[-1, -2, -2],
        ),
        op_case("broadcast_rank_up", nn.BroadcastToOp, [rand(3, 1)], shape=[2, 3, 4]),
        op_case("broadcast_scalar", nn.BroadcastToOp, [rand(1)], shape=[5, 2]),
        op_case(
            "gather_const_neg",
            nn.GatherOp,
            [x, np.array([[0, -1], [2, 1], [-3, 0]], np.int32)],
            [1],
            axis=1,
        ),
        op_case("gather_i32_axis0", nn.GatherOp, [x, np.array([2, 0, -1, 1], np.int32)]),
        op_case(
            "gather_i64_const_last",
            nn.GatherOp,
            [x, np.array([[4, 0], [1, -3]], np.int64)],
            [1],
            axis=-1,
        ),
        op_case("gather_scalar_index", nn.GatherOp, [x, np.array(-2, np.int32)], [1], axis=1),
        # run-time int64 indices: 8-byte argument buffers, negative ones count from the end
        op_case(
            "gather_i64_runtime", nn.GatherOp, [x, np.array([[4, -1], [0, 2]], np.int64)], axis=2
        ),
        op_case(
            "gather_batch",
            nn.GatherOp,
            [rand(2, 3, 6), np.array([[5, 0, 2], [1, 1, 4]], np.int32)],
            axis=2,
            batch_dims=1,
        ),
    ]
    run_cases(cases)


def _resize(case_id: str, x: np.ndarray, size: list[int], **props: object) -> Case:
    return op_case(case_id, nn.ResizeOp, [x], size=size, layout="NHWC", **props)


@needs_device
def test_resize_every_mode() -> None:
    x = rand(2, 5, 7, 3)
    cases = []
    modes = COORDINATE_MODES
    for cm in modes:
        for size in ([9, 12], [3, 4], [1, 7]):
            tag = f"{cm}_{size[0]}x{size[1]}"
            cases.append(_resize(f"bilinear_{tag}", x, size, mode="bilinear", coordinate_mode=cm))
    for cm in modes:
        for nm in NEAREST_MODES:
            cases.append(
                _resize(f"nearest_{cm}_{nm}", x, [10, 14], coordinate_mode=cm, nearest_mode=nm)
            )
    cases += [
        _resize("nearest_down", x, [2, 3], coordinate_mode="asymmetric", nearest_mode="floor"),
        _resize("bilinear_scales", x, [8, 9], mode="bilinear", scales=[1.7, 1.3]),
        _resize("nearest_scales", x, [11, 13], scales=[2.2, 1.9], nearest_mode="ceil"),
    ]
    run_cases(cases)


def _on_storage(
    case_id: str, storage: IntegerType, make: type[nn.NNOp], arrays: list, **props: object
) -> Case:
    """qcast the first array, run the movement op on the stored integers (char / uchar
    buffers), dcast the result: what `insert-qdq` leaves to this target."""
    qtype = UniformQuantizedType.per_tensor(storage, f32, 0.05, 3)

    def build(x: SSAValue, *rest: SSAValue) -> list[Operation]:
        q = quant.QCastOp(x, TensorType(qtype, x.type.get_shape()))  # type: ignore[attr-defined]
        if make is nn.SelectOp:  # mask, then the quantized choice and a second one
            other = quant.QCastOp(rest[1], TensorType(qtype, rest[1].type.get_shape()))  # type: ignore[attr-defined]
            moved = nn.SelectOp.make(rest[0], q.output, other.output, result_elements=qtype)
            return [q, other, moved, quant.DCastOp(moved.output)]
        moved = make.make(q.output, *rest, **props)
        return [q, moved, quant.DCastOp(moved.results[0])]

    return Case(case_id, build, arrays)


@needs_device
def test_data_movement_on_quantized_storage() -> None:
    u8 = IntegerType(8, Signedness.UNSIGNED)
    x = rand(1, 4, 5, 3)
    cases = [
        _on_storage(
            "slice_u8",
            u8,
            nn.SliceOp,
            [x],
            begin=[0, 0, 4, 0],
            end=[1, 4, -1, 3],
            strides=[1, 3, -3, 1],
        ),
        _on_storage("select_u8", u8, nn.SelectOp, [rand(2, 3), RNG.random((2, 1)) > 0.5, rand(3)]),
    ]
    cases += [
        _on_storage(
            "slice_i8",
            i8,
            nn.SliceOp,
            [x],
            begin=[0, 3, 0, 2],
            end=[1, -1, 5, -1],
            strides=[1, -1, 2, -2],
        ),
        _on_storage(
            "pad_reflect_i8", i8, nn.PadOp, [x], pads=[0, 0, 2, 1, 1, 3, 0, 0], mode="reflect"
        ),
        _on_storage("pad_edge_i8", i8, nn.PadOp, [x], pads=[0, 0, 1, 1, 2, 2, 0, 0], mode="edge"),
        _on_storage("broadcast_i8", i8, nn.BroadcastToOp, [rand(3, 1)], shape=[2, 3, 4]),
        _on_storage("gather_i8", i8, nn.GatherOp, [x, np.array([2, 0, 2], np.int32)], axis=3),
        _on_storage("split_i8", i8, nn.SplitOp, [x], axis=2, sizes=[3, 2]),
        _on_storage(
            "resize_i8",
            i8,
            nn.ResizeOp,
            [x],
            size=[7, 9],
            coordinate_mode="asymmetric",
            nearest_mode="floor",
            layout="NHWC",
        ),
    ]
    run_cases(cases)


# ---- Transposed convolution ---------------------------------------------------------------------


def _tconv(case_id: str, x, w, b, constant: bool = True, **props) -> Case:
    consts = ([1] if constant else []) + ([2] if b is not None else [])
    return op_case(
        case_id, nn.Conv2DTransposeOp, [x, w, b], constants=consts, layout="NHWC", **props
    )


@needs_device
def test_conv2d_transpose_family() -> None:
    cases = [
        _tconv("plain", rand(1, 4, 5, 3), rand(6, 3, 3, 3), rand(6)),
        _tconv("s2", rand(1, 4, 4, 8), rand(4, 2, 2, 8), None, strides=[2, 2]),
        # 12 input channels: the dot product in four partial sums (lowerings.helpers._dot_product)
        _tconv("partial_sums", rand(1, 3, 4, 12), rand(5, 3, 3, 12), rand(5), strides=[2, 2]),
        _tconv(
            "s2_pad_outpad",
            rand(2, 5, 3, 4),
            rand(5, 3, 3, 4),
            rand(5),
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            output_padding=[1, 1],
            activation="relu6",
        ),
        _tconv(
            "s3_dil2_asym",
            rand(1, 3, 4, 2),
            rand(3, 3, 2, 2),
            rand(3),
            strides=[3, 2],
            dilations=[2, 3],
            pads=[0, 2, 1, 0],
        ),
        _tconv("groups2", rand(1, 5, 5, 4), rand(6, 3, 3, 2), rand(6), groups=2, strides=[2, 1]),
        _tconv(
            "depthwise",
            rand(1, 6, 5, 3),
            rand(3, 3, 3, 1),
            None,
            groups=3,
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            activation="relu",
        ),
        _tconv(
            "depthwise_m2",
            rand(1, 4, 3, 2),
            rand(4, 2, 3, 1),
            rand(4),
            groups=2,
            strides=[1, 2],
            dilations=[2, 1],
        ),
        _tconv("runtime_filter", rand(1, 3, 3, 5), rand(2, 4, 4, 5), None, False, strides=[2, 2]),
    ]
    run_cases(cases)


@needs_device
def test_split_every_axis_uneven_and_empty_pieces() -> None:
    """One launch writes every piece (`writes` = number of results); returned pieces go
    straight to the entry's output buffers."""
    cases = [
        op_case("split_channels", nn.SplitOp, [rand(1, 3, 3, 8)], axis=3, sizes=[2, 5, 1]),
        op_case("split_outer", nn.SplitOp, [rand(6, 4)], axis=0, sizes=[4, 2]),
        op_case("split_middle_empty", nn.SplitOp, [rand(2, 5, 3)], axis=-2, sizes=[3, 0, 2]),
        op_case("split_one_piece", nn.SplitOp, [rand(7)], axis=0, sizes=[7]),
        op_case("split_1d_uneven", nn.SplitOp, [rand(9)], axis=-1, sizes=[1, 6, 2]),
    ]
    run_cases(cases)


# ---- supports() ---------------------------------------------------------------------------------


def _op(body: str, arg: str) -> nn.NNOp:
    text = f"func.func @f(%x: {arg}) {{\n {body}\n func.return\n}}"
    module = Parser(make_context(), text, "t.mlir").parse_module()
    return next(op for op in module.walk() if isinstance(op, nn.NNOp))  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("body", "arg", "code"),
    [
        ("%y = nn.exp %x : tensor<4xf32> -> tensor<4xf32>", "tensor<4xf32>", ""),
        (
            '%y = nn.pad %x pads = [1, 1] mode = "edge" : tensor<4xf32> -> tensor<6xf32>',
            "tensor<4xf32>",
            "",
        ),
        (
            '%y = nn.reduce %x kind = "prod" axes = [0] : tensor<4xf32> -> tensor<f32>',
            "tensor<4xf32>",
            "",
        ),
        (
            "%y = nn.softmax %x axis = 0 : tensor<2x4xf32> -> tensor<2x4xf32>",
            "tensor<2x4xf32>",
            "",
        ),
        (
            '%y = nn.compare %x, %x kind = "lt" : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>',
            "tensor<4xf32>",
            "",
        ),
        (
            "%i = nn.constant dense<[1, 0]> : tensor<2xi32>\n"
            "%y = nn.gather %x, %i : tensor<4xf32>, tensor<2xi32> -> tensor<2xf32>",
            "tensor<4xf32>",
            "",
        ),
        (
            "%y, %z = nn.split %x axis = 0 sizes = [1, 3] "
            ": tensor<4xf32> -> tensor<1xf32>, tensor<3xf32>",
            "tensor<4xf32>",
            "",
        ),
        (
            "%d = nn.constant dense<1.0> : tensor<4xf32>\n"
            "%y = nn.gather %d, %x : tensor<4xf32>, tensor<2xi64> -> tensor<2xf32>",
            "tensor<2xi64>",
            "",
        ),
        ("%y = nn.cast %x : tensor<4xf32> -> tensor<4xi32>", "tensor<4xf32>", ""),
        ("%y = nn.cast %x : tensor<4xf16> -> tensor<4xf32>", "tensor<4xf16>", "dtype"),
        ("%y = nn.abs %x : tensor<4xi32> -> tensor<4xi32>", "tensor<4xi32>", "dtype"),
        (
            '%y = nn.compare %x, %x kind = "eq" : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>',
            "tensor<4xi32>",
            "",
        ),
        (
            '%y = nn.compare %x, %x kind = "eq" : tensor<4xi16>, tensor<4xi16> -> tensor<4xi1>',
            "tensor<4xi16>",
            "dtype",
        ),
        (
            "%i = nn.constant dense<[1, 0]> : tensor<2xi16>\n"
            "%y = nn.gather %x, %i : tensor<4xf32>, tensor<2xi16> -> tensor<2xf32>",
            "tensor<4xf32>",
            "dtype",
        ),
        ("%y = nn.gelu %x : tensor<?xf32> -> tensor<?xf32>", "tensor<?xf32>", "dynamic"),
    ],
)
def test_supports_extra_families(body: str, arg: str, code: str) -> None:
    op = _op(body, arg)
    if isinstance(op, nn.ConstantOp):
        op = next(o for o in op.parent_block().ops if not isinstance(o, nn.ConstantOp))  # type: ignore[union-attr]
    answer = OpenCLTarget().supports(op)
    assert answer.code == code, answer.reason
    assert bool(answer) == (code == "")
    if code:
        assert answer.reason.startswith("opencl: ")


# ---- Through irc.compile ------------------------------------------------------------------------

NCHW_GRAPH = """
func.func @main(%x: tensor<1x3x5x6xf32>, %w: tensor<3x2x3x3xf32>)
    -> (tensor<1x4x9x11xf32>, tensor<1x3x10x12xf32>) {
  %t = nn.conv2d_transpose %x, %w strides = [2, 2] pads = [1, 1, 1, 1] output_padding = [1, 1]
      layout = "NCHW" : tensor<1x3x5x6xf32>, tensor<3x2x3x3xf32> -> tensor<1x2x10x12xf32>
  %g = nn.gelu %t : tensor<1x2x10x12xf32> -> tensor<1x2x10x12xf32>
  %s = nn.softmax %g axis = 1 : tensor<1x2x10x12xf32> -> tensor<1x2x10x12xf32>
  %p = nn.pad %s pads = [0, 0, 1, 1, 0, 0, 0, 0] mode = "reflect"
      : tensor<1x2x10x12xf32> -> tensor<1x4x10x12xf32>
  %r = nn.resize %p size = [9, 11] mode = "bilinear" coordinate_mode = "align_corners"
      layout = "NCHW" : tensor<1x4x10x12xf32> -> tensor<1x4x9x11xf32>
  %q = nn.resize %x size = [10, 12] layout = "NCHW" : tensor<1x3x5x6xf32> -> tensor<1x3x10x12xf32>
  func.return %r, %q : tensor<1x4x9x11xf32>, tensor<1x3x10x12xf32>
}
"""


@needs_device
def test_nchw_graph_compiles_onto_opencl_whole() -> None:
    """partition → convert-layout (NHWC inside the region) → lower-opencl on the new
    families: every op runs on the device and matches the reference target."""
    from irc.compiler import compile as irc_compile
    from irc.dialects import delegate

    module = Parser(make_context(), NCHW_GRAPH, "graph.mlir").parse_module()
    model = irc_compile(module, targets=["opencl"])
    reference = irc_compile(module, targets=["reference"])
    host = [op.name for op in model.module.walk() if op.name.startswith("nn.")]
    executables = [op for op in model.module.walk() if isinstance(op, delegate.ExecutableOp)]
    assert [e.target.data for e in executables] == ["opencl"]
    assert host == [], host
    inputs = dict(zip(model.input_names, [rand(1, 3, 5, 6), rand(3, 2, 3, 3)], strict=True))
    got, want = model.run(inputs), reference.run(inputs)
    for key, ref in want.items():
        np.testing.assert_allclose(got[key], ref, rtol=1e-4, atol=1e-5, err_msg=key)
