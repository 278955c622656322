"""The GPU-shaped OpenCL kernels (gpu_kernels.py, `lower-opencl{kernels=gpu}`).

Their numerics are checked on whatever device is here (PoCL's CPU device in CI runs them as
well as a GPU does): every conv / fully_connected case of test_opencl_conv_perf_kernels.py
plus cases aimed at the GPU kernels' own edges (K split over a work-group with ragged channel
blocks, padded output channels, softmax rows in one work-group with NaN and beta), lowered
twice — for a device wanting one work-item (R = 2-4 pixels per work-item, no split) and a
512-unit one (K split) — against the reference at rtol 1e-4 / atol 1e-5. Also the default
launch-shape rule, the target's choice of kernel style, and the fp16 source type-checked by
libclang (PoCL has no cl_khr_fp16; a lent GPU without it neither).
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import Case, build_executable, op_case, reference_outputs
from opencl_support import needs_device, opencl_c_errors
from test_opencl_conv_perf_kernels import CASES as TILED_CASES
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from irc.context import make_context
from irc.dialects import nn, ocl
from irc.targets.opencl import gpu_kernels
from irc.targets.opencl import target as opencl_target
from irc.targets.opencl.gpu_kernels import GemmShape, gemm_shape, pixels_per_item, target_items
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.runtime import OpenCLRuntime

pytestmark = pytest.mark.private_cache

RNG = np.random.default_rng(77)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _conv(case_id: str, x, w, b, **props) -> Case:
    props.setdefault("layout", "NHWC")
    return op_case(
        case_id, nn.Conv2DOp, [x, w, b], constants=[1, 2] if b is not None else [1], **props
    )


def _fc_relu6_residual(case_id: str, x, w, b, residual) -> Case:
    def build(xv: SSAValue, wv: SSAValue, bv: SSAValue, rv: SSAValue):
        fc = nn.FullyConnectedOp.make(xv, wv, bv, activation="relu6")
        return [fc, nn.AddOp.make(fc.output, rv)]

    return Case(case_id, build, [x, w, b, residual], frozenset({1, 2}))


def _softmax(case_id: str, x: np.ndarray, **props) -> Case:
    return op_case(case_id, nn.SoftmaxOp, [x], axis=x.ndim - 1, **props)


nan_rows = rand(3, 300)
nan_rows[1, 17] = np.nan
GPU_CASES = [
    # deep K, few rows: split K with 5 / 10 channel vectors (ragged blocks of lanes)
    _conv("deep_k_200", rand(1, 3, 3, 200), rand(20, 1, 1, 200), rand(20)),
    _conv("deep_k_odd_n", rand(1, 2, 3, 256), rand(38, 1, 1, 256), rand(38), activation="relu"),
    op_case("fc_1280_to_37", nn.FullyConnectedOp, [rand(1, 300), rand(37, 300), rand(37)], [1, 2]),
    _fc_relu6_residual("fc_res_k_split", rand(2, 320), rand(24, 320), rand(24), rand(2, 24)),
    # direct conv with many input channels, stem-like 3 -> 32 stride 2
    _conv("stem_s2", rand(1, 17, 15, 3), rand(32, 3, 3, 3), rand(32), strides=[2, 2], pads=[1] * 4),
    _conv("direct_c64", rand(1, 6, 7, 64), rand(12, 3, 3, 64), None, pads=[0, 1, 2, 1]),
    # softmax: long rows (one work-group each), NaN row, beta
    _softmax("softmax_1000", rand(2, 1000)),
    _softmax("softmax_nan_beta", nan_rows, beta=0.5),
    _softmax("softmax_rank3", rand(2, 3, 130)),
]


def _lower_and_run(cases: list[Case], units: int, name: str) -> str:
    module, executable, built = build_executable(cases, name)
    executable.properties["target"] = StringAttr("opencl")
    expected = [reference_outputs(b) for b in built]
    LowerOpenCLPass(kernels="gpu", compute_units=units).apply(make_context(), module)
    module.verify()
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    loaded = OpenCLRuntime().load(executable)
    outs = iter(loaded.execute("entry", [a for b in built for a in b.args]))
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            host = next(outs).to_host()
            assert host.shape == ref.shape, b.case.id
            np.testing.assert_allclose(host, ref, rtol=1e-4, atol=1e-5, err_msg=b.case.id)
    return program.source.data


@needs_device
@pytest.mark.parametrize("units", [1, 512])
def test_gpu_kernels_match_the_reference(units: int, monkeypatch: pytest.MonkeyPatch) -> None:
    if units == 1:  # a device asking for one work-item: the largest R everywhere
        monkeypatch.setattr(gpu_kernels, "ITEMS_PER_UNIT", 1)
    source = _lower_and_run(TILED_CASES + GPU_CASES, units, f"test_gpu_kernels_{units}")
    # every conv / fc with a constant filter took a gpu kernel but dw2_6 (depthwise over 6
    # channels: no float4 of channels; conv_kernels.py's float2 tile)
    assert source.count("(tiled ") == 1
    assert "(tiled x2)" in source
    assert source.count("(gpu) [") >= len(TILED_CASES)
    if units == 512:
        assert "K split" in source
        assert "reqd_work_group_size(" in source
    else:
        assert "[4x4 per item]" in source
        assert "[2x4 per item]" in source


def test_gemm_shape_rule() -> None:
    units = 132
    assert target_items(units) == 132 * 512
    # 112x112 pixels x 96 channels: plenty of items, 4 rows each, no split
    assert gemm_shape(12544, 24, 16, units) == GemmShape(4, 1, 1)
    # 14x14 x 96 from K = 576: split K over 16 slices (36 each), 8 lanes dividing 24 vectors
    assert gemm_shape(196, 24, 576, units) == GemmShape(1, 16, 8)
    # 7x7 x 320 from K = 960: 16 slices (K / 32 = 30 < 32), 16 lanes dividing 80 vectors
    assert gemm_shape(49, 80, 960, units) == GemmShape(1, 16, 16)
    # fully_connected 1 x 1280 -> 1000: 32 slices; no power of two >= 8 divides 250 vectors,
    # so 32 lanes, shrunk to 8 for a work-group of at most 256
    assert gemm_shape(1, 250, 1280, units) == GemmShape(1, 32, 8)
    # shallow K is never split below 32 per slice
    assert gemm_shape(1, 4, 40, units) == GemmShape(1, 1, 1)
    # few channel vectors: the lanes shrink to a power of two covering them
    assert gemm_shape(9, 5, 512, units).lanes == 8
    assert pixels_per_item(50176, 24, units) == 2
    assert pixels_per_item(49, 24, units) == 1


def test_target_asks_for_gpu_kernels_on_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(opencl_target.KERNELS_ENV, "gpu")
    choice = opencl_target.kernels_choice()
    if choice.compute_units == 0:
        pytest.skip(f"no OpenCL device: {choice.reason}")
    passes = opencl_target.OpenCLTarget().lowering_passes()
    assert f"kernels=gpu compute-units={choice.compute_units}" in passes
    monkeypatch.setenv(opencl_target.KERNELS_ENV, "cpu")
    assert "kernels" not in opencl_target.OpenCLTarget().lowering_passes()
    monkeypatch.setenv(opencl_target.KERNELS_ENV, "tpu")
    choice = opencl_target.kernels_choice()
    assert "is not cpu/gpu/auto" in choice.reason
    assert choice.kernels == ("gpu" if "gpu device" in choice.reason else "cpu")


def test_compute_units_override_shapes_gpu_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    """`IRC_OPENCL_COMPUTE_UNITS` replaces the device's compute units in the lowering options
    (an H100's 132 on PoCL, for its launch geometry); a bad value is ignored and said."""
    monkeypatch.setenv(opencl_target.KERNELS_ENV, "gpu")
    monkeypatch.delenv(opencl_target.COMPUTE_UNITS_ENV, raising=False)
    device = opencl_target.kernels_choice()
    if device.compute_units == 0:
        pytest.skip(f"no OpenCL device: {device.reason}")
    monkeypatch.setenv(opencl_target.COMPUTE_UNITS_ENV, "132")
    choice = opencl_target.kernels_choice()
    assert choice.compute_units == 132
    assert "IRC_OPENCL_COMPUTE_UNITS=132" in choice.reason
    assert "compute-units=132" in opencl_target.OpenCLTarget().lowering_passes()
    for bad in ("0", "-4", "many"):
        monkeypatch.setenv(opencl_target.COMPUTE_UNITS_ENV, bad)
        choice = opencl_target.kernels_choice()
        assert choice.compute_units == device.compute_units
        assert "not a positive integer" in choice.reason


@pytest.mark.parametrize("units", [1, 512])
def test_gpu_kernels_type_check_in_fp16(units: int, monkeypatch: pytest.MonkeyPatch) -> None:
    if units == 1:
        monkeypatch.setattr(gpu_kernels, "ITEMS_PER_UNIT", 1)
    module, _, _ = build_executable(TILED_CASES + GPU_CASES, f"test_gpu_fp16_{units}")
    for op in module.walk():
        if op.name == "delegate.executable":
            op.properties["target"] = StringAttr("opencl")
    LowerOpenCLPass(kernels="gpu", compute_units=units, precision="fp16").apply(
        make_context(), module
    )
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    source = program.source.data
    assert "(gpu) [" in source
    assert "half4" in source
    assert opencl_c_errors(source) == []
