"""Numerics of the register-blocked OpenCL conv / fully_connected kernels (conv_kernels.py).

Every tile shape and edge the generator chooses between, against the reference target at
rtol 1e-4 / atol 1e-5: GEMM row tiles that do and do not divide the pixel count, float16 and
float8 channel vectors with one to four vectors per work-item, direct convs with strides,
dilations and asymmetric pads (pixels reading the zero row), depthwise tiles for stride 1
and 2 with ragged row ends, fused activations and residual epilogues (same-shape and
per-channel) on each kernel. All cases share one executable (one PoCL build).
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import Case, build_executable, op_case, reference_outputs
from opencl_support import kernel_style_params, needs_device
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from irc.context import make_context
from irc.dialects import nn, ocl
from irc.targets.opencl.conv_kernels import row_tile, vectors_per_item
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.runtime import OpenCLRuntime

pytestmark = pytest.mark.private_cache

RNG = np.random.default_rng(2024)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _conv(case_id: str, x, w, b, **props) -> Case:
    props.setdefault("layout", "NHWC")
    return op_case(
        case_id, nn.Conv2DOp, [x, w, b], constants=[1, 2] if b is not None else [1], **props
    )


def _conv_residual(case_id: str, x, w, residual, **props) -> Case:
    """conv + residual (same shape or per channel) + relu, fused into the conv's kernel."""

    def build(xv: SSAValue, wv: SSAValue, bv: SSAValue, rv: SSAValue):
        conv = nn.Conv2DOp.make(xv, wv, bv, layout="NHWC", **props)
        add = nn.AddOp.make(rv, conv.output, activation="relu")
        return [conv, add]

    arrays = [x, w, rand(w.shape[0]), residual]
    return Case(case_id, build, arrays, frozenset({1, 2}))


def _fc(case_id: str, x, w, b, residual=None) -> Case:
    if residual is None:
        return op_case(case_id, nn.FullyConnectedOp, [x, w, b], constants=[1, 2])

    def build(xv: SSAValue, wv: SSAValue, bv: SSAValue, rv: SSAValue):
        fc = nn.FullyConnectedOp.make(xv, wv, bv)
        return [fc, nn.SubOp.make(fc.output, rv)]

    return Case(case_id, build, [x, w, b, residual], frozenset({1, 2}))


CASES = [
    # GEMM path (1x1, stride 1, no pads): rows 49 (tile 7), 15 (ragged), 1; NV 1..4
    _conv("gemm_49_x32", rand(1, 7, 7, 20), rand(32, 1, 1, 20), rand(32)),
    _conv("gemm_ragged_x16", rand(1, 5, 3, 9), rand(16, 1, 1, 9), None),
    _conv("gemm_f8_nv3", rand(2, 3, 4, 6), rand(24, 1, 1, 6), rand(24)),
    _conv("gemm_f8_nv4", rand(1, 4, 5, 3), rand(32 + 32, 1, 1, 3), rand(64)),
    _conv("gemm_f8_nv1", rand(1, 3, 3, 5), rand(8, 1, 1, 5), rand(8)),
    _conv_residual("gemm_residual", rand(1, 6, 5, 12), rand(24, 1, 1, 12), rand(1, 6, 5, 24)),
    _conv_residual("gemm_channel_res", rand(1, 3, 5, 7), rand(48, 1, 1, 7), rand(48)),
    _conv_residual("gemm_x96_nv3", rand(1, 4, 4, 10), rand(96, 1, 1, 10), rand(1, 4, 4, 96)),
    _conv("direct_x48_nv3", rand(1, 5, 9, 3), rand(48, 3, 3, 3), rand(48), pads=[1, 1, 1, 1]),
    # direct conv: 1x1 stride 2, 3x3 pads, 5x5 stride 2, dilations, ragged rows
    _conv("pw_stride2", rand(1, 9, 9, 8), rand(16, 1, 1, 8), rand(16), strides=[2, 2]),
    _conv(
        "c3x3_pad_relu6",
        rand(1, 10, 11, 5),
        rand(32, 3, 3, 5),
        rand(32),
        pads=[1, 1, 1, 1],
        activation="relu6",
    ),
    _conv(
        "c5x5_s2_asym",
        rand(1, 13, 17, 3),
        rand(24, 5, 5, 3),
        rand(24),
        strides=[2, 2],
        pads=[1, 2, 2, 1],
    ),
    _conv(
        "c3x3_dilated",
        rand(2, 9, 10, 4),
        rand(16, 3, 3, 4),
        None,
        dilations=[2, 3],
        pads=[2, 3, 2, 3],
    ),
    # rows wide enough for interior tiles (every tap inside the row: no zero pointer)
    _conv("s2_wide", rand(1, 7, 40, 6), rand(16, 3, 3, 6), rand(16), strides=[2, 2], pads=[1] * 4),
    _conv(
        "dilated_wide",
        rand(1, 6, 40, 4),
        rand(24, 3, 3, 4),
        rand(24),
        dilations=[1, 2],
        pads=[1, 2, 1, 2],
    ),
    _conv_residual(
        "direct_residual", rand(1, 6, 9, 4), rand(16, 3, 3, 4), rand(1, 6, 9, 16), pads=[1, 1, 1, 1]
    ),
    # depthwise: float16 / float8, stride 1 and 2, dilation, ragged rows, residual
    _conv("dw16_s1", rand(1, 9, 13, 32), rand(32, 3, 3, 1), rand(32), groups=32, pads=[1, 1, 1, 1]),
    _conv(
        "dw8_s2",
        rand(1, 11, 11, 40),
        rand(40, 3, 3, 1),
        rand(40),
        groups=40,
        strides=[2, 2],
        pads=[0, 0, 1, 1],
        activation="relu",
    ),
    _conv("dw_wide", rand(1, 4, 30, 16), rand(16, 3, 3, 1), None, groups=16, pads=[1] * 4),
    _conv(
        "dw_s2_wide",
        rand(1, 5, 40, 8),
        rand(8, 3, 3, 1),
        rand(8),
        groups=8,
        strides=[2, 2],
        pads=[1] * 4,
        activation="relu6",
    ),
    _conv(
        "dw5x5_dilated",
        rand(1, 12, 12, 16),
        rand(16, 5, 5, 1),
        None,
        groups=16,
        dilations=[2, 2],
        pads=[4, 4, 4, 4],
    ),
    _conv_residual(
        "dw_residual",
        rand(1, 5, 6, 24),
        rand(24, 3, 3, 1),
        rand(1, 5, 6, 24),
        groups=24,
        pads=[1, 1, 1, 1],
    ),
    # fully_connected: one row, several rows, ragged, residual
    _fc("fc_1x40", rand(1, 50), rand(40, 50), rand(40)),
    _fc("fc_9x32", rand(9, 17), rand(32, 17), rand(32)),
    _fc("fc_res", rand(3, 11), rand(16, 11), rand(16), rand(3, 16)),
    # output channels not divisible by 8: zero-padded filter rows, stored in float4 pieces
    # (channels divisible by 4) or lane by lane
    _conv("odd_direct_13", rand(1, 4, 4, 3), rand(13, 3, 3, 3), rand(13), pads=[1, 1, 1, 1]),
    _conv("odd_gemm_28", rand(1, 6, 7, 24), rand(28, 1, 1, 24), rand(28), activation="relu"),
    _conv("odd_gemm_nobias_18", rand(1, 4, 4, 16), rand(18, 1, 1, 16), None),
    _conv_residual("odd_gemm_res_36", rand(1, 5, 5, 8), rand(36, 1, 1, 8), rand(1, 5, 5, 36)),
    _conv_residual(
        "odd_direct_chres_12", rand(1, 5, 6, 4), rand(12, 3, 3, 4), rand(12), strides=[2, 2]
    ),
    _fc("odd_fc_10", rand(2, 33), rand(10, 33), rand(10)),
    # under 8 output channels, or depthwise with an odd channel count: untiled
    _conv("small_oc_6", rand(1, 4, 4, 16), rand(6, 1, 1, 16), rand(6)),
    _fc("odd_fc_res_14", rand(4, 9), rand(14, 9), rand(14), rand(4, 14)),
    _conv("dw_odd_5", rand(1, 5, 5, 5), rand(5, 3, 3, 1), rand(5), groups=5, pads=[1, 1, 1, 1]),
    _conv("dw2_6", rand(1, 5, 7, 6), rand(6, 3, 3, 1), rand(6), groups=6, pads=[1, 1, 1, 1]),
    # depthwise with channels divisible by 4 or 2 only: float4 / float2 vectors
    _conv_residual(
        "dw4_s2_res",
        rand(1, 9, 11, 28),
        rand(28, 3, 3, 1),
        rand(1, 5, 6, 28),
        groups=28,
        strides=[2, 2],
        pads=[1, 1, 1, 1],
    ),
]


def test_tile_choices() -> None:
    assert [row_tile(n) for n in (49, 784, 196, 1, 5, 15)] == [7, 8, 7, 1, 5, 8]
    assert [vectors_per_item(b, 16) for b in (20, 5, 9, 6)] == [2, 1, 3, 3]
    assert [vectors_per_item(b, 8) for b in (3, 8, 5)] == [3, 4, 1]


@needs_device
def test_tiled_kernels_match_the_reference() -> None:
    module, executable, built = build_executable(CASES, "test_conv_perf_0")
    executable.properties["target"] = StringAttr("opencl")
    expected = [reference_outputs(b) for b in built]
    LowerOpenCLPass().apply(make_context(), module)
    module.verify()
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    source = program.source.data
    assert source.count("(tiled ") == len(CASES) - 2  # all but small_oc_6, dw_odd_5
    assert "= acc0_0.s7;" in source  # the lane-by-lane store of padded channels
    assert "float4 v = acc0_0.s4567;" in source  # ... and the float4 pieces (channels % 4 == 0)
    loaded = OpenCLRuntime().load(executable)
    outs = iter(loaded.execute("entry", [a for b in built for a in b.args]))
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            host = next(outs).to_host()
            assert host.shape == ref.shape, b.case.id
            np.testing.assert_allclose(host, ref, rtol=1e-4, atol=1e-5, err_msg=b.case.id)


# ---- conv2d_transpose with stride equal to its kernel: the tiled GEMM (kernels=cpu) ------------


def _tconv(case_id: str, x, w, b, epilogue: str = "", **props) -> Case:
    """conv2d_transpose (constant filter and bias) and an optional fused epilogue: `bn`, a
    batch norm's per-channel multiply-add then relu (DBNet's head), `res`, a same-shape
    residual add, `sigmoid` (DBNet's output), `qdq`, an int8 quantize-dequantize pair."""
    from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType

    from irc.dialects import quant

    props.setdefault("layout", "NHWC")
    oc = w.shape[0]
    arrays = [x, w, b if b is not None else np.zeros(oc, np.float32)]
    scale, shift = rand(1, 1, oc), rand(oc)
    element = quant.UniformQuantizedType.per_tensor(IntegerType(8), Float32Type(), 0.05, -3)

    def build(xv: SSAValue, wv: SSAValue, bv: SSAValue, *extra: SSAValue):
        conv = nn.Conv2DTransposeOp.make(xv, wv, bv if b is not None else None, **props)
        ops: list = [conv]
        if epilogue == "bn":
            mul = nn.MulOp.make(conv.output, extra[0])
            ops += [mul, nn.AddOp.make(mul.output, extra[1], activation="relu")]
        elif epilogue == "res":
            ops.append(nn.AddOp.make(extra[0], conv.output))
        elif epilogue == "sigmoid":
            ops.append(nn.SigmoidOp.make(conv.output))
        elif epilogue == "qdq":
            shape = conv.output.type.get_shape()  # type: ignore[union-attr]  # a TensorType
            q = quant.QCastOp(conv.output, TensorType(element, shape))
            ops += [q, quant.DCastOp(q.output)]
        return ops

    n, h, wd, _ = x.shape
    extra = {"bn": [scale, shift], "res": [rand(n, h * w.shape[1], wd * w.shape[2], oc)]}
    return Case(case_id, build, arrays + extra.get(epilogue, []), frozenset({1, 2}))


TRANSPOSE_CASES = [
    _tconv("t2x2_x24_bn", rand(1, 5, 6, 12), rand(24, 2, 2, 12), rand(24), "bn", strides=[2, 2]),
    _tconv("t2x2_x16_res", rand(2, 3, 5, 7), rand(16, 2, 2, 7), None, "res", strides=[2, 2]),
    _tconv("t2x2_x8_qdq", rand(1, 4, 4, 9), rand(8, 2, 2, 9), rand(8), "qdq", strides=[2, 2]),
    _tconv("t3x2_x32", rand(1, 3, 3, 4), rand(32, 3, 2, 4), rand(32), strides=[3, 2]),
    # under 8 channels: all taps x channels in one vector, stored lane by lane
    _tconv("t2x2_x1_bn", rand(1, 7, 5, 24), rand(1, 2, 2, 24), rand(1), "bn", strides=[2, 2]),
    _tconv("t2x2_x3", rand(1, 3, 3, 5), rand(3, 2, 2, 5), None, strides=[2, 2]),
    _tconv("t2x2_x1_sig", rand(1, 4, 6, 16), rand(1, 2, 2, 16), rand(1), "sigmoid", strides=[2, 2]),
    _tconv("t2x2_x3_sig", rand(1, 3, 5, 8), rand(3, 2, 2, 8), None, "sigmoid", strides=[2, 2]),
    # not tiled: 3x3 taps x 5 channels (45 > 16 lanes); output padding past the input
    _tconv("t3x3_x5", rand(1, 3, 4, 6), rand(5, 3, 3, 6), rand(5), "res", strides=[3, 3]),
    _tconv(
        "t2x2_outpad",
        rand(1, 3, 3, 8),
        rand(8, 2, 2, 8),
        rand(8),
        strides=[2, 2],
        output_padding=[1, 1],
    ),
]


@needs_device
@pytest.mark.parametrize("kernels", kernel_style_params())
def test_transposed_conv_kernels_match_the_reference(kernels: str) -> None:
    """The tiled GEMM of a stride-equals-kernel conv2d_transpose (kernels=cpu) and the direct
    gather of one tap per output pixel (both styles), fused epilogues included."""
    module, executable, built = build_executable(TRANSPOSE_CASES, f"test_tconv_{kernels}")
    executable.properties["target"] = StringAttr("opencl")
    expected = [reference_outputs(b) for b in built]
    LowerOpenCLPass(kernels=kernels).apply(make_context(), module)
    module.verify()
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    source = program.source.data
    assert source.count("nn.conv2d_transpose") == len(TRANSPOSE_CASES)
    assert source.count("(tiled ") == (8 if kernels == "cpu" else 0)
    if kernels == "cpu":  # sigmoid: on the float4 of a row; lane by lane from a float16
        assert "{ float4 v = acc0_0; v = (1.0f / (1.0f + exp(-v)));" in source
        assert "{ float v = acc0_0.sb; v = (1.0f / (1.0f + exp(-v)));" in source
    assert "fused nn.mul, nn.add" in source
    assert "fused quant.qcast, quant.dcast" in source
    loaded = OpenCLRuntime().load(executable)
    outs = iter(loaded.execute("entry", [a for b in built for a in b.args]))
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            host = next(outs).to_host()
            assert host.shape == ref.shape, b.case.id
            tolerance = 0.05 + 1e-6 if b.case.id.endswith("qdq") else 1e-5
            np.testing.assert_allclose(host, ref, rtol=1e-4, atol=tolerance, err_msg=b.case.id)
