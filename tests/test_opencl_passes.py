"""The OpenCL lowering's passes: fusion numerics (residual adds, activation chains) against
the reference kernels, buffer reuse by liveness, per-kernel profile rows from OpenCL events,
the local-size rule and the tuning cache.

All fusion cases share ONE executable (one program build). Tolerances: rtol 1e-4 / atol
1e-5 (float32 accumulation in a different order from numpy's).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np
import pytest
from cpu_support import Case, build_executable, reference_outputs
from opencl_support import needs_device
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import SSAValue
from xdsl.parser import Parser

from irc.context import make_context
from irc.dialects import nn, ocl
from irc.runtime.profiling import Profile, kernel_profiling
from irc.targets.opencl import tuning
from irc.targets.opencl.bufferize import OpenCLBufferizePass
from irc.targets.opencl.fuse import OpenCLFusePass
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.memory_plan import plan_buffers
from irc.targets.opencl.runtime import OpenCLRuntime
from irc.targets.opencl.target import OpenCLTarget

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "cache"))
    tuning.clear_memory()
    return tmp_path / "cache"


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _conv_residual(tiled: bool, activation: str | None) -> Case:
    channels = 8 if tiled else 3

    def build(x: SSAValue, w: SSAValue, b: SSAValue, r: SSAValue):
        props = {"activation": activation} if activation else {}
        conv = nn.Conv2DOp.make(x, w, b, layout="NHWC", pads=[1, 1, 1, 1], **props)
        add = nn.AddOp.make(conv.output, r)
        return [conv, add, nn.Relu6Op.make(add.output)]

    arrays = [rand(1, 5, 4, 6), rand(channels, 3, 3, 6), rand(channels), rand(1, 5, 4, channels)]
    return Case(f"conv_res_{channels}_{activation}", build, arrays, frozenset({1, 2}))


def _depthwise_residual() -> Case:
    def build(x: SSAValue, w: SSAValue, r: SSAValue):
        conv = nn.Conv2DOp.make(x, w, None, layout="NHWC", pads=[1, 1, 1, 1], groups=16)
        return [conv, nn.SubOp.make(r, conv.output)]

    return Case(
        "dw_res_left",
        build,
        [rand(1, 4, 4, 16), rand(16, 3, 3, 1), rand(1, 4, 4, 16)],
        frozenset({1}),
    )


def _fc_chain() -> Case:
    def build(x: SSAValue, w: SSAValue, r: SSAValue, s: SSAValue):
        fc = nn.FullyConnectedOp.make(x, w, None)
        add = nn.AddOp.make(fc.output, r, activation="relu")
        mul = nn.MulOp.make(s, add.output)
        return [fc, add, mul, nn.SigmoidOp.make(mul.output)]

    return Case(
        "fc_chain", build, [rand(3, 10), rand(5, 10), rand(3, 5), rand(3, 5)], frozenset({1})
    )


def _matmul_and_elementwise() -> Case:
    def build(a: SSAValue, b: SSAValue, r: SSAValue):
        mm = nn.BatchMatmulOp.make(a, b)
        tanh = nn.TanhOp.make(mm.output)
        res = nn.MaximumOp.make(tanh.output, r)
        neg = nn.MulOp.make(res.output, r)
        return [mm, tanh, res, neg, nn.HardSwishOp.make(neg.output)]

    return Case("bmm_chain", build, [rand(2, 3, 4), rand(2, 4, 5), rand(2, 3, 5)])


def _hard_swish_decomposed() -> Case:
    """ONNX-style x * relu6(x + 3) / 6: the add produces, the constants are literals."""

    def build(x: SSAValue, three: SSAValue, six: SSAValue):
        add = nn.AddOp.make(x, three)
        clip = nn.Relu6Op.make(add.output)
        mul = nn.MulOp.make(x, clip.output)
        return [add, clip, mul, nn.DivOp.make(mul.output, six)]

    arrays = [rand(1, 4, 4, 8), np.full((1,), 3, np.float32), np.full((1, 1, 1, 1), 6, np.float32)]
    return Case("hswish_parts", build, arrays, frozenset({1, 2}))


def _tiled_conv_scalar_left() -> Case:
    """A one-element constant on the left of maximum/sub after a float8-tiled conv."""

    def build(x: SSAValue, w: SSAValue, floor: SSAValue):
        conv = nn.Conv2DOp.make(x, w, None, layout="NHWC")
        top = nn.MaximumOp.make(floor, conv.output)
        return [conv, top, nn.SubOp.make(floor, top.output)]

    arrays = [rand(1, 3, 3, 4), rand(8, 1, 1, 4), np.full((1,), 0.25, np.float32)]
    return Case("tiled_scalar_left", build, arrays, frozenset({1, 2}))


def _per_channel_scale() -> Case:
    """A float16-tiled conv times a per-channel scale (squeeze-excite)."""

    def build(x: SSAValue, w: SSAValue, scale: SSAValue):
        conv = nn.Conv2DOp.make(x, w, None, layout="NHWC")
        return [conv, nn.MulOp.make(scale, conv.output)]

    arrays = [rand(1, 2, 3, 16), rand(32, 1, 1, 16), rand(1, 1, 1, 32)]
    return Case("per_channel_scale", build, arrays, frozenset({1}))


def _per_channel_bias() -> Case:
    """A matmul plus a bias vector (ONNX MatMul + Add) with a fused relu."""

    def build(a: SSAValue, b: SSAValue, bias: SSAValue):
        mm = nn.BatchMatmulOp.make(a, b)
        return [mm, nn.AddOp.make(mm.output, bias, activation="relu")]

    return Case("per_channel_bias", build, [rand(2, 4, 5), rand(2, 5, 6), rand(6)])


CASES = [
    _conv_residual(True, None),
    _conv_residual(True, "relu"),
    _conv_residual(False, "relu6"),
    _depthwise_residual(),
    _fc_chain(),
    _matmul_and_elementwise(),
    _hard_swish_decomposed(),
    _tiled_conv_scalar_left(),
    _per_channel_scale(),
    _per_channel_bias(),
]


def _module(cases: list[Case]) -> tuple[ModuleOp, object, list]:
    module, executable, built = build_executable(cases, "test_opencl_passes_0")
    executable.properties["target"] = StringAttr("opencl")
    return module, executable, built


def test_fuse_makes_one_fusion_per_chain() -> None:
    module, _, _ = _module(CASES)
    OpenCLFusePass().apply(make_context(), module)
    module.verify()
    fusions = [op for op in module.walk() if isinstance(op, ocl.FusionOp)]
    assert [len(f.epilogue) for f in fusions] == [2, 2, 2, 1, 3, 4, 3, 2, 1, 1]
    assert [f.producer.name for f in fusions] == [
        "nn.conv2d",
        "nn.conv2d",
        "nn.conv2d",
        "nn.conv2d",
        "nn.fully_connected",
        "nn.batch_matmul",
        "nn.add",
        "nn.conv2d",
        "nn.conv2d",
        "nn.batch_matmul",
    ]


@needs_device
def test_fused_epilogues_match_the_reference() -> None:
    module, executable, built = _module(CASES)
    expected = [reference_outputs(b) for b in built]
    LowerOpenCLPass().apply(make_context(), module)
    module.verify()
    (execute,) = [op for op in module.walk() if isinstance(op, ocl.ExecuteOp)]
    launches = [op for op in execute.body.block.ops if isinstance(op, ocl.LaunchOp)]
    assert len(launches) == len(CASES)  # one kernel per case: everything fused
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    assert "(tiled x8)" in program.source.data
    assert "(tiled x16)" in program.source.data
    loaded = OpenCLRuntime().load(executable)
    outs = iter(loaded.execute("entry", [a for b in built for a in b.args]))
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            got = next(outs).to_host()
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg=b.case.id)


def test_plan_reuses_dead_buffers_and_never_aliases_a_launch() -> None:
    # buffers 0..4 of 10, 20, 10, 40, 10 bytes, live over launches [0,1], [1,2], [2,3], [3,4], [4,4]
    sizes = {0: 10, 1: 20, 2: 10, 3: 40, 4: 10}
    first = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}
    last = {0: 1, 1: 2, 2: 3, 3: 4, 4: 4}
    plan = plan_buffers(sizes, first, last)
    assert plan.peak_bytes < sum(sizes.values())
    assert len(plan.sizes) == 2
    for a in sizes:
        assert plan.sizes[plan.assignment[a]] >= sizes[a]
        for b in sizes:
            overlap = first[a] <= last[b] and first[b] <= last[a]
            if a != b and overlap:
                assert plan.assignment[a] != plan.assignment[b]


CHAIN = """
delegate.executable private @chain target("opencl") {
  func.func @entry(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %a = nn.transpose %x perm = [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32>
    %b = nn.transpose %a perm = [1, 0] : tensor<8x2xf32> -> tensor<2x8xf32>
    %c = nn.transpose %b perm = [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32>
    %d = nn.transpose %c perm = [1, 0] : tensor<8x2xf32> -> tensor<2x8xf32>
    %e = nn.relu %d : tensor<2x8xf32> -> tensor<2x8xf32>
    func.return %e : tensor<2x8xf32>
  }
}
"""


def _parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text, "test.mlir").parse_module()
    module.verify()
    return module


def _execute(module: ModuleOp) -> ocl.ExecuteOp:
    (execute,) = [op for op in module.walk() if isinstance(op, ocl.ExecuteOp)]
    return execute


def test_lowering_reports_the_reused_peak() -> None:
    module = _parse(CHAIN)
    LowerOpenCLPass().apply(make_context(), module)
    execute = _execute(module)
    # four intermediates of 64 bytes (a transpose is no producer: the relu is a launch of
    # its own), each dead after its reader: two pool buffers suffice
    assert execute.peak_bytes.value.data == 2 * 64
    allocs = [op for op in execute.body.block.ops if isinstance(op, ocl.AllocOp)]
    assert [a.bytes.value.data for a in allocs] == [64, 64]


@needs_device
def test_profile_has_one_row_per_kernel_launch_only_when_profiling() -> None:
    module = _parse(CHAIN)
    (executable,) = [op for op in module.walk() if op.name == "delegate.executable"]
    loaded = OpenCLRuntime().load(executable)
    x = rand(2, 8)
    expected = np.maximum(x, 0)
    profile = Profile()
    with kernel_profiling(profile):
        for _ in range(3):
            (out,) = loaded.execute("entry", [x])
            np.testing.assert_allclose(out.to_host(), expected)
    (out,) = loaded.execute("entry", [x])  # not profiled: no rows added
    rows = profile.kernel_rows()
    assert [(r.dispatch, r.index, r.kernel, r.calls) for r in rows] == [
        ("@chain::@entry", i, k, 3) for i, k in enumerate(["k0", "k1", "k0", "k1", "k2"])
    ]
    assert rows[0].description == "nn.transpose 2x8 -> 8x2"
    assert all(r.total_ms > 0 for r in rows)
    text = profile.format()
    assert "device time per kernel launch" in text
    assert "nn.relu 2x8 -> 2x8" in text


@needs_device
def test_profile_names_the_op_of_each_launch_of_a_shared_kernel() -> None:
    module = _parse(
        'delegate.executable private @two target("opencl") {\n'
        "  func.func @entry(%x: tensor<4x8xf32>, %y: tensor<2x3xf32>) -> "
        "(tensor<4x8xf32>, tensor<2x3xf32>) {\n"
        "    %a = nn.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>\n"
        "    %b = nn.tanh %y : tensor<2x3xf32> -> tensor<2x3xf32>\n"
        "    func.return %a, %b : tensor<4x8xf32>, tensor<2x3xf32>\n  }\n}\n"
    )
    (executable,) = [op for op in module.walk() if op.name == "delegate.executable"]
    loaded = OpenCLRuntime().load(executable)
    profile = Profile()
    with kernel_profiling(profile):
        outs = loaded.execute("entry", [rand(4, 8), rand(2, 3)])
    assert [o.to_host().shape for o in outs] == [(4, 8), (2, 3)]
    rows = profile.kernel_rows()
    assert [(r.kernel, r.description) for r in rows] == [
        ("k0", "nn.tanh 4x8 -> 4x8"),
        ("k0", "nn.tanh 2x3 -> 2x3"),
    ]


@needs_device
def test_compiled_model_profile_shows_opencl_kernels() -> None:
    import irc

    module = _parse(
        "func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes "
        '{irc.input_names = ["x"], irc.output_names = ["y"]} {\n'
        "  %a = nn.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>\n"
        "  %b = nn.sigmoid %a : tensor<4x8xf32> -> tensor<4x8xf32>\n"
        "  %c = nn.add %b, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>\n"
        "  func.return %c : tensor<4x8xf32>\n}\n"
    )
    compiled = irc.compile(module, targets=["opencl"])
    profile = Profile()
    x = rand(4, 8)
    out = compiled.run({"x": x}, profile=profile)["y"]
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-np.maximum(x, 0))) + x, rtol=1e-4, atol=1e-5)
    (row,) = profile.kernel_rows()  # relu, sigmoid and the residual add: one fused kernel
    assert row.target == "opencl"
    assert row.description == "nn.relu 4x8 -> 4x8 + fused nn.sigmoid, nn.add"


def test_rule_local_size() -> None:
    assert tuning.rule_local_size([128]) == [64]
    assert tuning.rule_local_size([48]) == [16]
    assert tuning.rule_local_size([12]) == []
    assert tuning.rule_local_size([4, 4]) == []


@needs_device
def test_tuning_measures_once_and_caches_on_disk(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = CHAIN.replace("2x8", "4x64").replace("8x2", "64x4")
    module = _parse(text)
    LowerOpenCLPass(tune=True).apply(make_context(), module)
    launches = [op for op in _execute(module).body.block.ops if isinstance(op, ocl.LaunchOp)]
    candidates = tuning.candidates([256], 4096)
    for launch in launches:
        local = [v.value.data for v in launch.local_size.data]
        assert local in candidates
    directory = cache_dir / "opencl-tuning"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    files = sorted(directory.glob("*.json"))
    assert len(files) == 3  # two transposes and the relu: three distinct kernels
    for path in files:
        data = json.loads(path.read_text())
        assert data["key"] == path.stem
        assert len(data["ns"]) >= 2
    assert not list(directory.glob(".tmp-*"))

    # a second lowering (fresh process memory) reads the disk cache: nothing is measured
    tuning.clear_memory()

    def no_measuring(*args: object) -> int:
        raise AssertionError("measured again")

    monkeypatch.setattr(tuning, "_time_ns", no_measuring)
    again = _parse(text)
    LowerOpenCLPass(tune=True).apply(make_context(), again)
    locals_again = [
        [v.value.data for v in op.local_size.data]
        for op in _execute(again).body.block.ops
        if isinstance(op, ocl.LaunchOp)
    ]
    assert locals_again == [[v.value.data for v in op.local_size.data] for op in launches]

    # a corrupt cache file is measured again and replaced
    files[0].write_text("{not json")
    tuning.clear_memory()
    monkeypatch.undo()
    monkeypatch.setenv("IRC_CACHE_DIR", str(cache_dir))
    LowerOpenCLPass(tune=True).apply(make_context(), _parse(text))
    assert json.loads(files[0].read_text())["key"] == files[0].stem


def test_target_asks_for_tuning_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IRC_OPENCL_TUNE", raising=False)
    monkeypatch.setenv("IRC_OPENCL_KERNELS", "cpu")  # a GPU device would add kernels=gpu
    assert OpenCLTarget().lowering_passes() == "lower-opencl"
    monkeypatch.setenv("IRC_OPENCL_TUNE", "1")
    assert OpenCLTarget().lowering_passes() == "lower-opencl{tune=true}"


@needs_device
def test_runtime_finishes_a_partly_lowered_executable() -> None:
    module = _parse(CHAIN)
    ctx = make_context()
    OpenCLFusePass().apply(ctx, module)
    OpenCLBufferizePass().apply(ctx, module)
    (executable,) = [op for op in module.walk() if op.name == "delegate.executable"]
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    assert program.kernels  # not generated yet: the runtime runs opencl-codegen at load
    x = rand(2, 8)
    (out,) = OpenCLRuntime().load(executable).execute("entry", [x])
    np.testing.assert_allclose(out.to_host(), np.maximum(x, 0))
