"""The OpenCL target: availability, `supports()`, the `lower-opencl` IR, per-op-family numerics
against the reference kernels, the program cache, and device values kept between dispatches.

Every family's cases share ONE executable (one program build); programs stay cached in memory
for the whole session. Tolerances: rtol 1e-4 / atol 1e-5 everywhere (float32 accumulation in
a different order from numpy's).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from cpu_support import SHARED_MODELS, Case, build_executable, op_case, reference_outputs
from opencl_support import needs_device
from xdsl.dialects.builtin import ModuleOp, Signedness, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue
from xdsl.parser import Parser

from irc.context import make_context
from irc.diagnostics import IrcDiagnosticError
from irc.dialects import delegate, nn, ocl, quant
from irc.targets import get_target
from irc.targets.opencl import runtime as ocl_runtime
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.runtime import OpenCLRuntime, OpenCLValue
from irc.targets.opencl.target import OpenCLTarget

pytestmark = pytest.mark.private_cache

RNG = np.random.default_rng(1234)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def lower(module: ModuleOp) -> ModuleOp:
    LowerOpenCLPass().apply(make_context(), module)
    module.verify()
    return module


def run_cases(cases: Sequence[Case], rtol: float = 1e-4, atol: float = 1e-5) -> str:
    """Lower `cases` as one executable, run it, compare with the reference; returns the
    program's OpenCL C source."""
    module, executable, built = build_executable(cases, "test_opencl_0")
    executable.properties["target"] = StringAttr("opencl")
    expected = [reference_outputs(b) for b in built]
    lower(module)
    loaded = OpenCLRuntime().load(executable)
    outs = iter(loaded.execute("entry", [a for b in built for a in b.args]))
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            got = next(outs)
            assert isinstance(got, OpenCLValue)
            np.testing.assert_allclose(got.to_host(), ref, rtol=rtol, atol=atol, err_msg=b.case.id)
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    return program.source.data


# ---- Registration, availability, supports -------------------------------------------------------


def test_registered_through_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_OPENCL_KERNELS", "cpu")  # a GPU device would add kernels=gpu
    target = get_target("opencl")
    assert isinstance(target, OpenCLTarget)
    assert target.preferred_layout == "NHWC"
    assert not target.runs_quantized
    assert target.lowering_passes() == "lower-opencl"


@pytest.mark.parametrize("spec", ["no-such-platform:nothing", "7:9", "justonepart"])
def test_bogus_device_makes_target_unavailable(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setenv("IRC_OPENCL_DEVICE", spec)
    answer = OpenCLTarget().available()
    assert not answer
    assert answer.reason.startswith("opencl: ")
    assert "IRC_OPENCL_DEVICE" in answer.reason or "no OpenCL" in answer.reason


def _op(text: str) -> nn.NNOp:
    module = Parser(make_context(), text, "t.mlir").parse_module()
    func = next(iter(module.ops))
    return next(op for op in func.walk() if isinstance(op, nn.NNOp))  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("%y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>", ""),
        ("%y = nn.cast %x : tensor<4xf32> -> tensor<4xi32>", ""),
        ("%y = nn.cast %x : tensor<4xf32> -> tensor<4xi16>", "dtype"),
        ("%y = nn.relu %x : tensor<?xf32> -> tensor<?xf32>", "dynamic"),
        ("%y = nn.softmax %x axis = 0 : tensor<4xf32> -> tensor<4xf32>", ""),
        (
            '%y = nn.pad %x pads = [1, 1] mode = "edge" : tensor<4xf32> -> tensor<6xf32>',
            "",
        ),
        ('%y = nn.reduce %x kind = "prod" axes = [0] : tensor<4xf32> -> tensor<f32>', ""),
    ],
)
def test_supports_answers_with_reason_codes(body: str, code: str) -> None:
    arg = "tensor<?xf32>" if "?" in body else "tensor<4xf32>"
    answer = OpenCLTarget().supports(_op(f"func.func @f(%x: {arg}) {{\n {body}\n func.return\n}}"))
    assert answer.code == code
    assert bool(answer) == (code == "")


def test_softmax_over_another_axis_is_supported() -> None:
    op = _op(
        "func.func @f(%x: tensor<2x4xf32>) {\n"
        "%y = nn.softmax %x axis = 0 : tensor<2x4xf32> -> tensor<2x4xf32>\nfunc.return\n}"
    )
    answer = OpenCLTarget().supports(op)
    assert answer, answer.reason


# ---- Lowering (no device needed) ----------------------------------------------------------------

CONV_RELU = """
delegate.executable private @main_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<1x6x6x3xf32>) -> tensor<1x6x6x4xf32> {
    %w = nn.constant dense<0.5> : tensor<4x3x3x3xf32>
    %b = nn.constant dense<0.25> : tensor<4xf32>
    %c = nn.conv2d %x, %w, %b pads = [1, 1, 1, 1] layout = "NHWC"
        : tensor<1x6x6x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x6x6x4xf32>
    %r = nn.relu %c : tensor<1x6x6x4xf32> -> tensor<1x6x6x4xf32>
    %s = nn.sigmoid %r : tensor<1x6x6x4xf32> -> tensor<1x6x6x4xf32>
    %t = nn.transpose %s perm = [0, 3, 1, 2] : tensor<1x6x6x4xf32> -> tensor<1x4x6x6xf32>
    %u = nn.transpose %t perm = [0, 2, 3, 1] : tensor<1x4x6x6xf32> -> tensor<1x6x6x4xf32>
    func.return %u : tensor<1x6x6x4xf32>
  }
}
"""


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text, "test.mlir").parse_module()
    module.verify()
    return module


def test_lowering_fuses_epilogues_and_plans_buffers() -> None:
    module = lower(parse(CONV_RELU))
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    (execute,) = [op for op in module.walk() if isinstance(op, ocl.ExecuteOp)]
    launches = [op for op in execute.body.block.ops if isinstance(op, ocl.LaunchOp)]
    allocs = [op for op in execute.body.block.ops if isinstance(op, ocl.AllocOp)]
    # conv + relu + sigmoid fused: one conv launch, then the two transposes
    assert len(launches) == 3
    assert [a.data for a in launches[0].args.data] == ["in0", "c0", "c1", "b0"]
    assert [a.data for a in launches[1].args.data] == ["b0", "b1"]
    assert [a.data for a in launches[2].args.data] == ["b1", "out0"]
    assert len(allocs) == 2
    assert execute.peak_bytes.value.data == 2 * 4 * 144
    assert "1.0f / (1.0f + exp(-v))" in program.source.data
    assert len(program.uploads) == 2


def test_lowering_refuses_unsupported_op_at_the_op() -> None:
    module = parse(
        'delegate.executable private @e target("opencl") {\n'
        "  func.func @entry(%x: tensor<1x2x2x2xf32>, %s: tensor<2xf32>) -> tensor<1x2x2x2xf32> {\n"
        '    %y = nn.batch_norm %x, %s, %s, %s, %s layout = "NHWC" : tensor<1x2x2x2xf32>,'
        " tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>\n"
        "    func.return %y : tensor<1x2x2x2xf32>\n  }\n}\n"
    )
    with pytest.raises(
        IrcDiagnosticError, match=r"lower-opencl: opencl: no kernel for 'nn\.batch_norm'"
    ):
        lower(module)


def test_lowering_leaves_other_targets_alone() -> None:
    module = parse(CONV_RELU.replace('target("opencl")', 'target("cpu")'))
    lower(module)
    assert not [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]


# ---- Numerics per op family ---------------------------------------------------------------------


def _conv(case_id: str, x, w, b, **props) -> Case:
    arrays = [x, w, b]
    return op_case(
        case_id,
        nn.Conv2DOp,
        arrays,
        constants=[1, 2] if b is not None else [1],
        layout="NHWC",
        **props,
    )


@needs_device
def test_conv2d_family() -> None:
    cases = [
        _conv("1x1", rand(1, 5, 7, 6), rand(9, 1, 1, 6), rand(9)),
        _conv(
            "3x3_s2_pad",
            rand(2, 9, 8, 5),
            rand(7, 3, 3, 5),
            rand(7),
            strides=[2, 2],
            pads=[1, 0, 1, 1],
            activation="relu6",
        ),
        _conv(
            "dilated",
            rand(1, 11, 10, 3),
            rand(4, 3, 3, 3),
            None,
            dilations=[2, 3],
            pads=[2, 2, 2, 2],
        ),
        _conv(
            "depthwise",
            rand(1, 8, 9, 6),
            rand(6, 3, 3, 1),
            rand(6),
            groups=6,
            pads=[1, 1, 1, 1],
            activation="relu",
        ),
        _conv(
            "depthwise_m2_s2",
            rand(1, 7, 7, 3),
            rand(6, 3, 3, 1),
            rand(6),
            groups=3,
            strides=[2, 2],
            pads=[1, 1, 1, 1],
        ),
        _conv("grouped", rand(1, 5, 5, 8), rand(6, 3, 3, 4), rand(6), groups=2, strides=[1, 2]),
        _conv("5x5_long", rand(1, 6, 6, 64), rand(3, 5, 5, 64), rand(3), pads=[2, 2, 2, 2]),
    ]
    # register-tiled kernels (constant filters, channels divisible by 8 or 16)
    cases += [
        _conv("tiled_1x1", rand(1, 5, 3, 16), rand(16, 1, 1, 16), rand(16)),
        _conv(
            "tiled_3x3_s2",
            rand(1, 9, 7, 5),
            rand(24, 3, 3, 5),
            None,
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            dilations=[1, 2],
            activation="relu6",
        ),
        _conv(
            "tiled_dw16",
            rand(2, 7, 6, 16),
            rand(16, 3, 3, 1),
            rand(16),
            groups=16,
            pads=[1, 1, 1, 1],
        ),
        _conv(
            "tiled_dw24_s2",
            rand(1, 9, 9, 24),
            rand(24, 3, 3, 1),
            rand(24),
            groups=24,
            strides=[2, 2],
            pads=[0, 0, 1, 1],
            activation="relu",
        ),
        op_case(
            "filter_arg_16", nn.Conv2DOp, [rand(1, 4, 4, 3), rand(16, 3, 3, 3), None], layout="NHWC"
        ),
    ]

    def conv_leaky(x: SSAValue, wv: SSAValue, bv: SSAValue):
        conv = nn.Conv2DOp.make(x, wv, bv, layout="NHWC")
        leaky = nn.LeakyReluOp.make(conv.output, alpha=0.1)
        return [conv, leaky, nn.SigmoidOp.make(leaky.output)]

    cases.append(
        Case(
            "tiled_leaky",
            conv_leaky,
            [rand(1, 3, 3, 8), rand(8, 1, 1, 8), rand(8)],
            frozenset({1, 2}),
        )
    )
    w = rand(16, 3, 3, 4)
    b = rand(16)

    def conv_hswish(x: SSAValue, wv: SSAValue, bv: SSAValue):
        conv = nn.Conv2DOp.make(x, wv, bv, layout="NHWC", pads=[1, 1, 1, 1])
        return [conv, nn.HardSwishOp.make(conv.output)]

    cases.append(Case("fused_hswish", conv_hswish, [rand(1, 6, 5, 4), w, b], frozenset({1, 2})))
    run_cases(cases)


@needs_device
def test_fully_connected_family() -> None:
    run_cases(
        [
            op_case("fc", nn.FullyConnectedOp, [rand(1, 64), rand(10, 64), rand(10)], [1, 2]),
            op_case(
                "fc_nobias",
                nn.FullyConnectedOp,
                [rand(3, 5, 17), rand(7, 17), None],
                [1],
                activation="relu",
            ),
            op_case("fc_arg_weights", nn.FullyConnectedOp, [rand(4, 9), rand(3, 9), rand(3)]),
        ]
    )


@needs_device
def test_batch_matmul_family() -> None:
    bmm = nn.BatchMatmulOp
    run_cases(
        [
            op_case("bmm", bmm, [rand(2, 3, 4), rand(2, 4, 5)]),
            op_case("bmm_adj_x", bmm, [rand(2, 4, 3), rand(2, 4, 5)], adj_x=True),
            op_case("bmm_adj_y", bmm, [rand(2, 3, 4), rand(2, 5, 4)], adj_y=True),
            op_case("bmm_adj_xy", bmm, [rand(3, 7, 2), rand(3, 6, 7)], adj_x=True, adj_y=True),
            op_case("bmm_bcast", bmm, [rand(2, 1, 3, 8), rand(4, 8, 5)]),
            op_case("bmm_bcast_lhs", bmm, [rand(1, 6, 9), rand(3, 2, 9, 4)]),
            op_case("bmm_rank2", bmm, [rand(5, 33), rand(33, 6)]),
            op_case("bmm_const_rhs", bmm, [rand(2, 3, 16), rand(16, 8)], [1], adj_y=False),
        ]
    )


@needs_device
def test_binary_broadcasting_family() -> None:
    shapes = [
        ((2, 3, 4), (4,)),
        ((2, 1, 4), (1, 3, 1)),
        ((5,), ()),
        ((3, 1), (3, 7)),
        ((2, 3), (2, 3)),
        # per-channel vectors (read at gid % C), first or second
        ((1, 1, 1, 6), (1, 2, 5, 6)),
        ((1, 2, 5, 6), (1, 1, 6)),
    ]
    cases = []
    for op in (nn.AddOp, nn.SubOp, nn.MulOp, nn.DivOp, nn.MaximumOp, nn.MinimumOp):
        for i, (sa, sb) in enumerate(shapes):
            a, b = rand(*sa), rand(*sb)
            if op is nn.DivOp:
                b = np.asarray(np.abs(b) + 0.5, dtype=np.float32)
            cases.append(op_case(f"{op.name}{i}", op, [a, b]))
    cases.append(op_case("add_relu", nn.AddOp, [rand(3, 4), rand(4)], [1], activation="relu"))
    run_cases(cases)


@needs_device
def test_unary_family() -> None:
    x = rand(3, 5, 7) * 4
    run_cases(
        [
            op_case("relu", nn.ReluOp, [x]),
            op_case("relu6", nn.Relu6Op, [x]),
            op_case("clip", nn.ClipOp, [x], min=-1.5, max=2.0),
            op_case("clip_min", nn.ClipOp, [x], min=0.5),
            op_case("sigmoid", nn.SigmoidOp, [x]),
            op_case("tanh", nn.TanhOp, [x]),
            op_case("hard_swish", nn.HardSwishOp, [x]),
            op_case("leaky_relu", nn.LeakyReluOp, [x], alpha=0.2),
            op_case("hard_sigmoid", nn.HardSigmoidOp, [x], alpha=0.25, beta=0.375),
        ]
    )


@needs_device
def test_pool_family() -> None:
    x = rand(2, 9, 8, 3)
    run_cases(
        [
            op_case("max2", nn.MaxPool2DOp, [x], kernel=[2, 2], strides=[2, 2], layout="NHWC"),
            op_case(
                "max3_pad",
                nn.MaxPool2DOp,
                [x],
                kernel=[3, 3],
                pads=[1, 1, 1, 1],
                strides=[2, 1],
                layout="NHWC",
                activation="relu",
            ),
            op_case("max_dil", nn.MaxPool2DOp, [x], kernel=[2, 3], dilations=[2, 2], layout="NHWC"),
            op_case(
                "avg3_pad", nn.AvgPool2DOp, [x], kernel=[3, 3], pads=[1, 1, 1, 1], layout="NHWC"
            ),
            op_case(
                "avg3_incl",
                nn.AvgPool2DOp,
                [x],
                kernel=[3, 3],
                pads=[1, 0, 1, 2],
                strides=[2, 2],
                count_include_pad=True,
                layout="NHWC",
            ),
            op_case("avg_global", nn.AvgPool2DOp, [x], kernel=[9, 8], layout="NHWC"),
        ]
    )


@needs_device
def test_vectorised_pools_and_channel_pads() -> None:
    """kernels=cpu: pools over float8 / float4 / float2 channel vectors (NaN through max,
    both average divisors, a fused activation) and last-axis constant pads as row copies
    (float4 rows, scalar rows for other counts)."""
    x8, x4, x2 = rand(2, 9, 8, 16), rand(1, 7, 6, 12), rand(1, 5, 5, 6)
    x8[0, 1, 1, 3] = np.nan
    cases = []
    for name, x in (("v8", x8), ("v4", x4), ("v2", x2)):
        cases += [
            op_case(
                f"max2_{name}", nn.MaxPool2DOp, [x], kernel=[2, 2], strides=[2, 2], layout="NHWC"
            ),
            op_case(
                f"max3_{name}",
                nn.MaxPool2DOp,
                [x],
                kernel=[3, 3],
                pads=[1, 1, 1, 1],
                strides=[2, 1],
                layout="NHWC",
                activation="relu6",
            ),
            op_case(
                f"avg3_{name}", nn.AvgPool2DOp, [x], kernel=[3, 3], pads=[1] * 4, layout="NHWC"
            ),
            op_case(
                f"avg_incl_{name}",
                nn.AvgPool2DOp,
                [x],
                kernel=[3, 3],
                pads=[1, 0, 1, 2],
                strides=[2, 2],
                count_include_pad=True,
                layout="NHWC",
            ),
            op_case(f"pad_{name}", nn.PadOp, [x], pads=[0, 0, 0, 0, 0, 0, 4, 8]),
            op_case(f"pad_odd_{name}", nn.PadOp, [x], pads=[0, 0, 0, 0, 0, 0, 1, 2], value=1.5),
        ]
    source = run_cases(cases)
    for marker in ("(x8) */", "(x4) */", "(x2) */", "(rows x4) */", "(rows) */"):
        assert marker in source, marker


@needs_device
def test_qdq_pairs_fused_into_conv_epilogues_are_bit_exact() -> None:
    """conv -> qcast -> dcast -> residual add -> qcast (half to even, uint8) -> dcast, fused
    into one kernel (opencl-fuse), on values whose conv sums are exact in float whatever the
    order (multiples of 1/8 times 0.5 / 0.25): the quantization in registers equals the
    reference's qcast / dcast kernels bit for bit, ties and saturation included."""
    from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType

    i8 = quant.UniformQuantizedType.per_tensor(IntegerType(8), Float32Type(), 0.5, 3)
    u8 = quant.UniformQuantizedType.per_tensor(
        IntegerType(8, signedness=Signedness.UNSIGNED), Float32Type(), 0.125, 128
    )

    def build(xv: SSAValue, wv: SSAValue, rv: SSAValue):
        conv = nn.Conv2DOp.make(xv, wv, None, layout="NHWC", pads=[1, 1, 1, 1])
        shape = conv.output.type.get_shape()  # type: ignore[union-attr]  # a TensorType
        q1 = quant.QCastOp(conv.output, TensorType(i8, shape))
        d1 = quant.DCastOp(q1.output)
        add = nn.AddOp.make(d1.output, rv)
        q2 = quant.QCastOp(add.output, TensorType(u8, shape), rounding="half_to_even")
        return [conv, q1, d1, add, q2, quant.DCastOp(q2.output)]

    grid = np.random.default_rng(5)
    x = (grid.integers(-80, 80, (1, 6, 5, 8)) / 8).astype(np.float32)
    w = (grid.choice([-0.5, -0.25, 0.25, 0.5], (16, 3, 3, 8))).astype(np.float32)
    r = (grid.integers(-40, 40, (1, 6, 5, 16)) / 16).astype(np.float32)
    source = run_cases([Case("qdq_chain", build, [x, w, r], frozenset({1}))], rtol=0, atol=0)
    assert "fused quant.qcast, quant.dcast, nn.add, quant.qcast, quant.dcast" in source
    assert "quant.qcast 1x6x5x16" not in source.replace("fused quant.qcast", "")


@needs_device
@pytest.mark.parametrize("rounding", ["half_away_from_zero", "half_to_even"])
def test_qdq_epilogue_rounds_ties_nan_and_infinities_as_the_reference(rounding: str) -> None:
    """The fused qcast's operator-only rounding (lowerings/epilogue.py's `ROUNDING_MAGIC`):
    a depthwise 1x1 conv of ones passes quotients through unchanged, so every tie of both
    signs, the largest float below 0.5, -0.0, values past the storage range, +-inf and NaN
    reach the epilogue; the result equals the reference's qcast / dcast bit for bit."""
    from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType

    signed = rounding == "half_away_from_zero"
    storage = IntegerType(8) if signed else IntegerType(8, signedness=Signedness.UNSIGNED)
    zp = 3 if signed else 128
    element = quant.UniformQuantizedType.per_tensor(storage, Float32Type(), 0.5, zp)
    below_half = float(np.nextafter(np.float32(0.5), np.float32(0)))
    special = [below_half, -below_half, -0.0, 0.0, 1e30, -1e30, np.inf, -np.inf, np.nan]
    special += [130.5, -130.5, 124.5, -131.5, 127.5, -128.5, 255.5, -255.5, 2.0**22 + 0.5]
    ties = [k + 0.5 for k in range(-140, 140)]
    quotients = np.array(special + ties + list(np.linspace(-300, 300, 99)), np.float32)
    quotients = np.resize(quotients, 4 * 8 * 16)
    x = (quotients * np.float32(0.5)).reshape(1, 4, 8, 16)
    w = np.ones((16, 1, 1, 1), np.float32)

    def build(xv: SSAValue, wv: SSAValue):
        conv = nn.Conv2DOp.make(xv, wv, None, layout="NHWC", groups=16)
        shape = conv.output.type.get_shape()  # type: ignore[union-attr]  # a TensorType
        q = quant.QCastOp(conv.output, TensorType(element, shape), rounding=rounding)
        return [conv, q, quant.DCastOp(q.output)]

    source = run_cases([Case(f"qdq_{rounding}", build, [x, w], frozenset({1}))], rtol=0, atol=0)
    assert "fused quant.qcast, quant.dcast" in source
    assert "rint(" not in source
    assert "floor(" not in source


@needs_device
def test_pad_with_negative_zero_fills_negative_zero() -> None:
    """`value = -0.0` is a fill value (fuzz seed 304210: it was written as +0.0), for the
    generic constant pad and the row copy of a channel pad."""
    x = rand(1, 3, 4, 8)
    cases = [
        op_case("pad_hw", nn.PadOp, [x], pads=[0, 0, 1, 1, 0, 2, 0, 0], value=-0.0),
        op_case("pad_rows", nn.PadOp, [x], pads=[0, 0, 0, 0, 0, 0, 4, 4], value=-0.0),
    ]
    module, executable, built = build_executable(cases, "test_opencl_pad_zero")
    executable.properties["target"] = StringAttr("opencl")
    lower(module)
    outs = OpenCLRuntime().load(executable).execute("entry", [a for b in built for a in b.args])
    for case, out in zip(cases, outs, strict=True):
        host = out.to_host()
        fill = host[host == 0]
        assert fill.size, case.id
        assert np.all(np.signbit(fill)), case.id


@needs_device
def test_reduce_and_softmax_family() -> None:
    x = rand(2, 7, 5, 6)
    run_cases(
        [
            op_case("mean12", nn.ReduceOp, [x], kind="mean", axes=[1, 2], keepdims=True),
            op_case("mean_last", nn.ReduceOp, [x], kind="mean", axes=[-1]),
            op_case("sum0", nn.ReduceOp, [x], kind="sum", axes=[0, 3]),
            op_case("max1", nn.ReduceOp, [x], kind="max", axes=[1]),
            op_case("min_all", nn.ReduceOp, [x], kind="min", axes=[0, 1, 2, 3]),
            op_case("softmax", nn.SoftmaxOp, [rand(3, 10) * 5]),
            op_case("softmax_beta", nn.SoftmaxOp, [rand(2, 4, 33)], beta=0.5),
            op_case("softmax_long", nn.SoftmaxOp, [rand(1, 1001)]),
        ]
    )


@needs_device
def test_shape_family() -> None:
    x = rand(2, 3, 4, 5)
    run_cases(
        [
            op_case("reshape", nn.ReshapeOp, [x], shape=[6, 20]),
            op_case("transpose", nn.TransposeOp, [x], perm=[0, 3, 1, 2]),
            op_case("transpose2", nn.TransposeOp, [x], perm=[3, 2, 1, 0]),
            op_case("concat_c", nn.ConcatOp, [[x, rand(2, 3, 4, 2)]], axis=3),
            op_case("concat_0", nn.ConcatOp, [[x, rand(1, 3, 4, 5), x]], axis=0),
            op_case("concat_neg", nn.ConcatOp, [[rand(2, 1, 4, 5), x]], axis=-3),
            op_case("pad", nn.PadOp, [x], pads=[0, 0, 1, 2, 0, 1, 3, 0], value=0.75),
        ]
    )


# ---- Runtime: cache, device values --------------------------------------------------------------


@needs_device
def test_second_load_uses_the_cache(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_OPENCL_BINARY_CACHE", "on")  # PoCL's own kernel cache aside
    text = CONV_RELU.replace("dense<0.25>", "dense<0.125>").replace("0.5>", "0.375>")
    module = lower(parse(text.replace("sigmoid", "tanh")))
    executable = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    start = time.perf_counter()
    first = OpenCLRuntime().load(executable)
    first_s = time.perf_counter() - start
    assert not first.from_cache
    x = rand(1, 6, 6, 3)
    key = first.built.key  # the binary was saved at load, after the kernels first ran
    assert (fresh_cache / "opencl" / f"{key}.bin").exists()
    (a,) = first.execute("entry", [x])
    ocl_runtime._programs.pop(key)  # forget the in-memory copy: load from disk
    start = time.perf_counter()
    second = OpenCLRuntime().load(executable)
    second_s = time.perf_counter() - start
    assert second.from_cache
    assert second_s < first_s
    (b,) = second.execute("entry", [x])
    np.testing.assert_array_equal(a.to_host(), b.to_host())
    # a tampered binary is rebuilt, not loaded
    (fresh_cache / "opencl" / f"{key}.bin").write_bytes(b"garbage")
    ocl_runtime._programs.pop(key)
    third = OpenCLRuntime().load(executable)
    assert not third.from_cache
    (c,) = third.execute("entry", [x])
    np.testing.assert_array_equal(a.to_host(), c.to_host())


TWO_DISPATCHES = """
builtin.module {
  delegate.executable private @first target("opencl") {
    func.func @entry(%x: tensor<2x8xf32>, %y: tensor<8xf32>) -> tensor<2x8xf32> {
      %s = nn.add %x, %y : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
      func.return %s : tensor<2x8xf32>
    }
  }
  delegate.executable private @second target("opencl") {
    func.func @entry(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
      %r = nn.relu %x : tensor<2x8xf32> -> tensor<2x8xf32>
      func.return %r : tensor<2x8xf32>
    }
  }
  func.func @main(%x: tensor<2x8xf32>, %y: tensor<8xf32>) -> tensor<2x8xf32> {
    %a = delegate.dispatch @first::@entry(%x, %y)
        : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %b = delegate.dispatch @second::@entry(%a) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    func.return %b : tensor<2x8xf32>
  }
}
"""


@needs_device
def test_device_values_stay_on_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from irc.runtime import compile_function

    downloads: list[tuple[int, ...]] = []
    real = OpenCLValue.to_host

    def counting(self: OpenCLValue) -> np.ndarray:
        downloads.append(self.shape)
        return real(self)

    monkeypatch.setattr(OpenCLValue, "to_host", counting)
    module = lower(parse(TWO_DISPATCHES))
    program = compile_function(module, "main")
    x, y = rand(2, 8), rand(8)
    (out,) = program.run_positional([x, y])
    np.testing.assert_allclose(np.asarray(out), np.maximum(x + y, 0), rtol=1e-6)
    assert downloads == [(2, 8)]  # only the graph output came back to the host


# ---- Shared models ------------------------------------------------------------------------------

MODELS = SHARED_MODELS
MODEL_FILES = {
    "small_cnn_float32": ("small_cnn_float32.tflite", None),
    "mobilenet_v2_float32": ("mobilenet_v2_float32.tflite", None),
    "face_detection_short_range": ("face_detection_short_range.tflite", None),
    "ppocr_mobile_v2_cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": [1, 3, 48, 192]}),
}


@needs_device
@pytest.mark.filterwarnings("ignore:.*dynamic dimension")  # the models' batch size
@pytest.mark.parametrize("name", sorted(MODEL_FILES))
def test_shared_float_models_match_the_reference(name: str) -> None:
    from irc.compiler import compile as irc_compile

    file, shapes = MODEL_FILES[name]
    path = MODELS / name / file
    if not path.exists():
        pytest.skip(f"{path} is not available")
    kwargs = {"input_shapes": shapes} if shapes else {}
    model = irc_compile(path, targets=["opencl", "reference"], **kwargs)
    reference = irc_compile(path, targets=["reference"], **kwargs)
    executables = [op for op in model.module.walk() if isinstance(op, delegate.ExecutableOp)]
    assert any(e.target.data == "opencl" for e in executables)
    inputs = dict(np.load(MODELS / name / "inputs_0.npz"))
    got, want = model.run(inputs), reference.run(inputs)
    for key, ref in want.items():
        diff = float(np.abs(got[key] - ref).max())
        assert diff <= 2e-3 * float(np.abs(ref).max()), (key, diff)


@needs_device
def test_build_failure_reports_the_log_and_the_op() -> None:
    from irc.targets.opencl.device import get_device

    source = (
        "/* nn.relu 4 -> 4 */\n"
        "__kernel void k0(__global const float* restrict x0, __global float* restrict y) {\n"
        "    y[get_global_id(0)] = undefined_identifier;\n}\n"
    )
    with pytest.raises(ocl_runtime.OpenCLBuildError, match=r"kernels of: nn\.relu 4 -> 4") as info:
        ocl_runtime.build_program(get_device(), source)
    assert "undefined_identifier" in str(info.value)


@needs_device
def test_arguments_are_checked() -> None:
    from irc.runtime.errors import InputError

    module = lower(parse(CONV_RELU))
    executable = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    loaded = OpenCLRuntime().load(executable)
    with pytest.raises(InputError, match="shape"):
        loaded.execute("entry", [rand(1, 6, 6, 4)])
    with pytest.raises(InputError, match="float32"):
        loaded.execute("entry", [np.zeros((1, 6, 6, 3))])
    with pytest.raises(InputError, match="takes 1 arguments"):
        loaded.execute("entry", [])


ALIASED_OUTPUTS = """
delegate.executable private @e target("opencl") {
  func.func @entry(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
                                          tensor<3xf32>) {
    %c = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %r = nn.relu %x : tensor<3xf32> -> tensor<3xf32>
    func.return %x, %c, %r, %r : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  }
}
"""


@needs_device
def test_outputs_that_alias_arguments_constants_and_each_other() -> None:
    module = lower(parse(ALIASED_OUTPUTS))
    executable = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    loaded = OpenCLRuntime().load(executable)
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    outs = [v.to_host() for v in loaded.execute("entry", [x])]
    np.testing.assert_array_equal(outs[0], x)
    np.testing.assert_array_equal(outs[1], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(outs[2], np.maximum(x, 0))
    np.testing.assert_array_equal(outs[3], np.maximum(x, 0))
    # results are fresh buffers: a second call does not overwrite the first call's values
    first = loaded.execute("entry", [x])
    loaded.execute("entry", [-x])
    np.testing.assert_array_equal(first[2].to_host(), np.maximum(x, 0))


@needs_device
def test_resize_row_kernels_match_the_reference() -> None:
    """kernels=cpu resizes an even channel count one output row per work-item, pixels as
    channel vectors (16, 8, 4 and 2 wide): nearest (float and int8 storage) and bilinear in
    every coordinate mode, up and down, batch 2."""
    from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType

    from irc.dialects.nn.shape import COORDINATE_MODES

    def resize(case_id: str, x: np.ndarray, size: list[int], **props: object) -> Case:
        return op_case(case_id, nn.ResizeOp, [x], size=size, layout="NHWC", **props)

    i8 = quant.UniformQuantizedType.per_tensor(IntegerType(8), Float32Type(), 0.05, 3)

    def nearest_i8(xv: SSAValue):
        q = quant.QCastOp(xv, TensorType(i8, xv.type.get_shape()))  # type: ignore[attr-defined]
        moved = nn.ResizeOp.make(q.output, size=[8, 6], layout="NHWC")
        return [q, moved, quant.DCastOp(moved.results[0])]

    cases = [
        resize("nearest_x2_c96", rand(1, 4, 5, 96), [8, 10]),
        resize("nearest_x4_c24", rand(2, 3, 2, 24), [12, 8]),
        resize("nearest_down_c12", rand(1, 7, 9, 12), [3, 4], nearest_mode="floor"),
        resize("nearest_c6_half_pixel", rand(1, 5, 4, 6), [9, 7], coordinate_mode="half_pixel"),
        Case("nearest_i8_c16", nearest_i8, [rand(1, 4, 3, 16)]),
    ]
    for cm in COORDINATE_MODES:
        cases.append(
            resize(f"bilinear_{cm}", rand(2, 5, 7, 8), [9, 12], mode="bilinear", coordinate_mode=cm)
        )
    cases.append(resize("bilinear_down_c4", rand(1, 9, 8, 4), [4, 3], mode="bilinear"))
    source = run_cases(cases)
    for width in (16, 8, 4, 2):
        assert f"(rows x{width}) */" in source, width


# ---- Quantized: dcast / qcast and data movement on int8 / uint8 storage ------------------------

QI = "!quant.uniform<i8:f32, 0.5:3>"
QU = "!quant.uniform<u8:f32, 0.0235:128>"
QIA = "!quant.uniform<i8:f32:1, {0.5:3, 0.1:-128, 0.037:127}>"
QUA = "!quant.uniform<u8:f32:1, {0.25:0, 0.013:255, 3.0:7}>"
QNARROW = "!quant.uniform<i8<-127:127>:f32, 0.02>"
T = "tensor<2x3xINNERx{}>"

QUANT_CASTS = f"""
delegate.executable private @q target("opencl") {{
  func.func @entry(%x: {T.format("f32")}, %qi: {T.format(QIA)}, %qu: {T.format(QU)})
      -> ({T.format(QI)}, {T.format(QI)}, {T.format(QU)}, {T.format(QIA)}, {T.format(QUA)},
          {T.format(QUA)}, {T.format(QNARROW)}, {T.format("f32")}, {T.format("f32")}) {{
    %a = quant.qcast %x : {T.format("f32")} to {T.format(QI)}
    %b = quant.qcast %x rounding = "half_to_even" : {T.format("f32")} to {T.format(QI)}
    %c = quant.qcast %x : {T.format("f32")} to {T.format(QU)}
    %d = quant.qcast %x : {T.format("f32")} to {T.format(QIA)}
    %e = quant.qcast %x : {T.format("f32")} to {T.format(QUA)}
    %f = quant.qcast %x rounding = "half_to_even" : {T.format("f32")} to {T.format(QUA)}
    %g = quant.qcast %x : {T.format("f32")} to {T.format(QNARROW)}
    %h = quant.dcast %qi : {T.format(QIA)} to {T.format("f32")}
    %i = quant.dcast %qu : {T.format(QU)} to {T.format("f32")}
    func.return %a, %b, %c, %d, %e, %f, %g, %h, %i : {T.format(QI)}, {T.format(QI)},
        {T.format(QU)}, {T.format(QIA)}, {T.format(QUA)}, {T.format(QUA)}, {T.format(QNARROW)},
        {T.format("f32")}, {T.format("f32")}
  }}
}}
"""


def _reference_quant(module: ModuleOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """Run each cast of the entry through the reference target's kernels."""
    from irc.targets.reference import quant as ref_quant

    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    env: dict[SSAValue, np.ndarray] = dict(zip(func.body.block.args, args, strict=True))
    for op in func.body.block.ops:
        if isinstance(op, quant.QCastOp | quant.DCastOp):
            run = (ref_quant.qcast if isinstance(op, quant.QCastOp) else ref_quant.dcast)(op)
            env[op.results[0]] = run(env[op.operands[0]])[0]
        elif isinstance(op, ReturnOp):
            return [env[v] for v in op.operands]
    raise AssertionError("no func.return")


@needs_device
@pytest.mark.parametrize("inner", [64, 7])  # 384 values: 16-lane kernels; 42: one per work-item
def test_qcast_and_dcast_are_bit_exact_with_the_reference(inner: int) -> None:
    module = parse(QUANT_CASTS.replace("INNER", str(inner)))
    casts = [op for op in module.walk() if isinstance(op, quant.QCastOp | quant.DCastOp)]
    assert casts
    assert all(OpenCLTarget().supports(op) for op in casts)
    shape = (2, 3, inner)
    n = int(np.prod(shape))
    # ties of every scale (k + 0.5 steps), random values, and values far outside the range
    k = RNG.integers(-300, 300, n).astype(np.float32) + 0.5
    x = np.where(
        np.arange(n) % 3 == 0,
        k * 0.5,
        np.where(np.arange(n) % 3 == 1, k * 0.0235, RNG.standard_normal(n) * 4.0),
    ).astype(np.float32)
    x[:8] = [1e9, -1e9, 0.0, -0.0, 0.25, -0.25, 0.75, -0.75]
    x = x.reshape(shape)
    channel_ties = (RNG.integers(-200, 200, shape) + 0.5) * np.array([0.25, 0.013, 3.0])[
        None, :, None
    ]
    x[1] = channel_ties[1].astype(np.float32)
    qi = RNG.integers(-128, 128, shape).astype(np.int8)
    qu = RNG.integers(0, 256, shape).astype(np.uint8)
    qi.flat[:2], qu.flat[:2] = [-128, 127], [0, 255]
    expected = _reference_quant(module, [x, qi, qu])
    lower(module)
    executable = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    loaded = OpenCLRuntime().load(executable)
    got = [v.to_host() for v in loaded.execute("entry", [x, qi, qu])]
    vector_kernels = "convert_double16" in str(module)
    assert vector_kernels == (n % 16 == 0)
    for j, (g, want) in enumerate(zip(got, expected, strict=True)):
        assert g.dtype == want.dtype, (j, g.dtype, want.dtype)
        np.testing.assert_array_equal(g, want, err_msg=f"result #{j}")
    # saturation and ties are really exercised
    assert {-128, 127} <= set(np.unique(got[0]).tolist())
    assert not np.array_equal(got[0], got[1])  # half away from zero vs half to even differ
    from irc.runtime.errors import InputError

    with pytest.raises(InputError, match="int8"):
        loaded.execute("entry", [x, qi.astype(np.uint8), qu])


QMOVE = f"""
delegate.executable private @m target("opencl") {{
  func.func @entry(%x: tensor<2x3x4x{QU}>, %y: tensor<2x3x2x{QU}>, %s: tensor<2x3x4x{QI}>)
      -> (tensor<6x4x{QU}>, tensor<4x3x2x{QU}>, tensor<2x3x6x{QU}>, tensor<2x5x7x{QI}>,
          tensor<8x{QI}>, tensor<4xf32>) {{
    %k = nn.constant dense<[-128, 0, 5, 127]> : tensor<4xi8> -> tensor<4x{QI}>
    %kc = nn.concat %k, %k axis = 0 : tensor<4x{QI}>, tensor<4x{QI}> -> tensor<8x{QI}>
    %kd = quant.dcast %k : tensor<4x{QI}> to tensor<4xf32>
    %r = nn.reshape %x shape = [6, 4] : tensor<2x3x4x{QU}> -> tensor<6x4x{QU}>
    %t = nn.transpose %x perm = [2, 1, 0] : tensor<2x3x4x{QU}> -> tensor<4x3x2x{QU}>
    %c = nn.concat %x, %y axis = 2 : tensor<2x3x4x{QU}>, tensor<2x3x2x{QU}>
        -> tensor<2x3x6x{QU}>
    %p = nn.pad %s pads = [0, 0, 1, 1, 2, 1] value = 3.0 : tensor<2x3x4x{QI}>
        -> tensor<2x5x7x{QI}>
    func.return %r, %t, %c, %p, %kc, %kd : tensor<6x4x{QU}>, tensor<4x3x2x{QU}>,
        tensor<2x3x6x{QU}>, tensor<2x5x7x{QI}>, tensor<8x{QI}>, tensor<4xf32>
  }}
}}
"""


@needs_device
def test_data_movement_and_constants_on_int8_and_uint8_storage() -> None:
    x = RNG.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    y = RNG.integers(0, 256, (2, 3, 2)).astype(np.uint8)
    s = RNG.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    module = parse(QMOVE)
    assert all(OpenCLTarget().supports(op) for op in module.walk() if isinstance(op, nn.NNOp))
    module = lower(module)
    executable = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    got = [v.to_host() for v in OpenCLRuntime().load(executable).execute("entry", [x, y, s])]
    want = [
        x.reshape(6, 4),
        x.transpose(2, 1, 0),
        np.concatenate([x, y], axis=2),
        np.pad(s, [(0, 0), (1, 1), (2, 1)], constant_values=3),
        np.array([-128, 0, 5, 127] * 2, np.int8),  # a quantized constant uploaded as int8
        np.array([-65.5, -1.5, 1.0, 62.0], np.float32),
    ]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


INT8_MODELS = {
    "small_cnn_int8": "small_cnn_int8.tflite",
    "mobilenet_v2_int8": "mobilenet_v2_int8.tflite",
}


@needs_device
@pytest.mark.filterwarnings("ignore:.*dynamic dimension")  # the models' batch size
@pytest.mark.parametrize("name", sorted(INT8_MODELS))
def test_shared_int8_models_run_on_opencl(name: str) -> None:
    """insert-qdq gives the target the float form; outputs stay within one quantization step
    of the reference int8 run (>= 98 % of elements, mean <= 0.5 step, same arg-max)."""
    from irc.compiler import compile as irc_compile

    path = MODELS / name / INT8_MODELS[name]
    if not path.exists():
        pytest.skip(f"{path} is not available")
    model = irc_compile(path, targets=["opencl", "reference"])
    reference = irc_compile(path, targets=["reference"])
    counts: dict[str, int] = {}
    for executable in model.module.walk():
        if isinstance(executable, delegate.ExecutableOp):
            n = sum(1 for op in executable.walk() if isinstance(op, nn.NNOp | ocl.LaunchOp))
            counts[executable.target.data] = counts.get(executable.target.data, 0) + n
    share = counts.get("opencl", 0) / max(1, sum(counts.values()))
    print(f"\n{name}: nn ops on opencl {counts} ({share:.0%})\n{model.summary}")
    assert counts.get("opencl", 0) > 0
    inputs = dict(np.load(MODELS / name / "inputs_0.npz"))
    got, want = model.run(inputs), reference.run(inputs)
    for key, ref in want.items():
        assert got[key].dtype == ref.dtype
        steps = np.abs(got[key].astype(np.int64) - ref.astype(np.int64))
        assert float(np.mean(steps <= 1)) >= 0.98, (key, np.mean(steps <= 1))
        assert float(steps.mean()) <= 0.5, (key, steps.mean())
        assert np.argmax(got[key]) == np.argmax(ref), key
