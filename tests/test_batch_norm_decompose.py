"""canonicalize's batch-norm patterns (passes/batch_norm_patterns.py): numerics against the
reference batch_norm kernel, the CPU and OpenCL targets taking the result, and the example
DenseNet and text-detection networks against onnxruntime."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import onnxruntime
import pytest
from cpu_support import needs_compiler
from opencl_support import needs_device
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

import irc
from irc.context import make_context
from irc.dialects import nn
from irc.passes.canonicalize import CanonicalizePass
from irc.targets.reference import evaluate

pytestmark = pytest.mark.private_cache

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _params(rng: np.random.Generator, channels: int) -> list[np.ndarray]:
    """scale, offset, mean, variance of a batch norm over `channels` channels."""
    return [
        rng.uniform(0.5, 1.5, channels).astype(np.float32),
        rng.normal(0.0, 0.5, channels).astype(np.float32),
        rng.normal(0.0, 0.5, channels).astype(np.float32),
        rng.uniform(0.2, 2.0, channels).astype(np.float32),
    ]


def _module(
    inputs: Sequence[np.ndarray], build: Callable[[Sequence[SSAValue]], list[Operation]]
) -> ModuleOp:
    """`func.func @main(inputs...)` returning the last op's result."""
    block = Block(arg_types=[TensorType(f32, a.shape) for a in inputs])
    ops = build(block.args)
    result = ops[-1].results[0]
    block.add_ops([*ops, ReturnOp(result)])
    fn = FuncOp("main", ([a.type for a in block.args], [result.type]), Region(block))
    return ModuleOp([fn])


def _batch_norm(x: SSAValue, params: Sequence[np.ndarray], layout: str) -> list[Operation]:
    constants = [nn.ConstantOp.from_array(p) for p in params]
    bn = nn.BatchNormOp.make(x, *(c.output for c in constants), epsilon=1e-3, layout=layout)
    return [*constants, bn]


def _canonicalized(module: ModuleOp) -> list[str]:
    """The op names of the module after `canonicalize` (on a clone)."""
    clone = module.clone()
    CanonicalizePass().apply(make_context(), clone)
    clone.verify()
    return [op.name for op in clone.walk()]


def _run(module: ModuleOp, targets: Sequence[str], feed: dict[str, np.ndarray]) -> np.ndarray:
    compiled = irc.compile(module, targets=list(targets), strict=targets != ["reference"])
    (out,) = compiled.run(feed).values()
    return out


# ---- Decomposition numerics --------------------------------------------------------------------

DECOMPOSE_CASES = {
    "nchw": ((2, 5, 6, 7), "NCHW"),
    "nhwc": ((2, 6, 7, 5), "NHWC"),
    "nchw_rank2": ((3, 5), "NCHW"),
    "nchw_rank3": ((2, 5, 9), "NCHW"),
    "nhwc_rank3": ((2, 9, 5), "NHWC"),
}


@pytest.mark.parametrize(("shape", "layout"), DECOMPOSE_CASES.values(), ids=DECOMPOSE_CASES.keys())
def test_decomposed_batch_norm_matches_the_reference_kernel(
    shape: tuple[int, ...], layout: str
) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32) * 3
    channels = shape[1] if layout == "NCHW" else shape[-1]
    params = _params(rng, channels)
    module = _module([x], lambda args: _batch_norm(args[0], params, layout))
    names = _canonicalized(module)
    assert "nn.batch_norm" not in names
    assert names.count("nn.mul") == 1
    assert names.count("nn.add") == 1
    bn = next(op for op in module.walk() if isinstance(op, nn.BatchNormOp))
    (expected,) = evaluate(bn, x, *params)
    got = _run(module, ["reference"], {"arg0": x})
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# ---- Folding into the next conv ----------------------------------------------------------------

FOLD_CASES = {
    "nchw_strided": ("NCHW", 1, 1, 2, True),
    "nhwc_grouped": ("NHWC", 2, 1, 1, True),
    "nhwc_depthwise": ("NHWC", 6, 3, 1, False),
    "nchw_depthwise_multiplier": ("NCHW", 6, 1, 1, True),
}


@pytest.mark.parametrize(
    ("layout", "groups", "kernel", "stride", "bias"), FOLD_CASES.values(), ids=FOLD_CASES.keys()
)
def test_batch_norm_folded_into_the_next_conv_keeps_the_numbers(
    layout: str, groups: int, kernel: int, stride: int, bias: bool
) -> None:
    rng = np.random.default_rng(1)
    channels, out_channels = 6, 12
    shape = (1, channels, 8, 8) if layout == "NCHW" else (1, 8, 8, channels)
    x = rng.standard_normal(shape).astype(np.float32)
    params = _params(rng, channels)
    oihw = (out_channels, channels // groups, kernel, kernel)
    w = rng.standard_normal(oihw if layout == "NCHW" else (oihw[0], kernel, kernel, oihw[1]))
    w = w.astype(np.float32)
    b = rng.standard_normal(out_channels).astype(np.float32)

    def build(args: Sequence[SSAValue]) -> list[Operation]:
        ops = _batch_norm(args[0], params, layout)
        weights = [nn.ConstantOp.from_array(w)] + ([nn.ConstantOp.from_array(b)] if bias else [])
        conv = nn.Conv2DOp.make(
            ops[-1].results[0],
            weights[0].output,
            weights[1].output if bias else None,
            strides=[stride, stride],
            groups=groups,
            layout=layout,
        )
        return [*ops, *weights, conv]

    module = _module([x], build)
    names = _canonicalized(module)
    assert "nn.batch_norm" not in names
    assert "nn.mul" not in names
    assert names.count("nn.conv2d") == 1
    bn, conv = (op for op in module.walk() if isinstance(op, nn.BatchNormOp | nn.Conv2DOp))
    (normalised,) = evaluate(bn, x, *params)
    (expected,) = evaluate(conv, normalised, w, *([b] if bias else []))
    got = _run(module, ["reference"], {"arg0": x})
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


# ---- Folding into the conv2d_transpose before it ----------------------------------------------

FOLD_TRANSPOSE_CASES = {
    "nchw_bias": ("NCHW", 1, True),
    "nchw_grouped": ("NCHW", 2, False),
    "nhwc_bias": ("NHWC", 1, True),
    "nhwc_grouped": ("NHWC", 2, True),
}


@pytest.mark.parametrize(
    ("layout", "groups", "bias"), FOLD_TRANSPOSE_CASES.values(), ids=FOLD_TRANSPOSE_CASES.keys()
)
@pytest.mark.parametrize(
    "target",
    [
        "reference",
        pytest.param("cpu", marks=needs_compiler),
        pytest.param("opencl", marks=needs_device),
    ],
)
def test_batch_norm_folded_into_conv_transpose_keeps_the_numbers(
    layout: str, groups: int, bias: bool, target: str
) -> None:
    # DBNet's head: conv2d_transpose -> batch_norm -> relu becomes one conv2d_transpose with
    # the relu fused (fuse-activations) on the native targets.
    rng = np.random.default_rng(2)
    channels, out_channels = 4, 6
    shape = (1, channels, 5, 5) if layout == "NCHW" else (1, 5, 5, channels)
    x = rng.standard_normal(shape).astype(np.float32)
    params = _params(rng, out_channels)
    if layout == "NCHW":  # IOHW, O per group
        w_shape = (channels, out_channels // groups, 2, 2)
    else:  # OHWI, I per group
        w_shape = (out_channels, 2, 2, channels // groups)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(out_channels).astype(np.float32)

    def build(args: Sequence[SSAValue]) -> list[Operation]:
        weights = [nn.ConstantOp.from_array(w)] + ([nn.ConstantOp.from_array(b)] if bias else [])
        conv = nn.Conv2DTransposeOp.make(
            args[0],
            weights[0].output,
            weights[1].output if bias else None,
            strides=[2, 2],
            groups=groups,
            layout=layout,
        )
        ops = _batch_norm(conv.output, params, layout)
        relu = nn.ReluOp.make(ops[-1].results[0])
        return [*weights, conv, *ops, relu]

    module = _module([x], build)
    names = _canonicalized(module)
    assert "nn.batch_norm" not in names
    assert "nn.mul" not in names
    assert names.count("nn.conv2d_transpose") == 1
    conv, bn = (op for op in module.walk() if isinstance(op, nn.BatchNormOp | nn.Conv2DTransposeOp))
    (transposed,) = evaluate(conv, x, w, *([b] if bias else []))
    (normalised,) = evaluate(bn, transposed, *params)
    expected = np.maximum(normalised, 0)
    got = _run(module, [target], {"arg0": x})
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


# ---- Targets take the decomposed form ----------------------------------------------------------


def _pre_activation_block(rng: np.random.Generator) -> tuple[ModuleOp, np.ndarray, np.ndarray]:
    """concat -> batch_norm -> relu -> padded 3x3 conv (NCHW): DenseNet's layer; returns the
    module, its two inputs."""
    a = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    b = rng.standard_normal((1, 5, 9, 9)).astype(np.float32)
    params = _params(rng, 8)
    w = rng.standard_normal((4, 8, 3, 3)).astype(np.float32)

    def build(args: Sequence[SSAValue]) -> list[Operation]:
        cat = nn.ConcatOp.make(list(args), axis=1)
        ops = _batch_norm(cat.output, params, "NCHW")
        relu = nn.ReluOp.make(ops[-1].results[0])
        weight = nn.ConstantOp.from_array(w)
        conv = nn.Conv2DOp.make(relu.output, weight.output, None, pads=[1, 1, 1, 1], layout="NCHW")
        return [cat, *ops, relu, weight, conv]

    return _module([a, b], build), a, b


@pytest.mark.parametrize(
    "target",
    [pytest.param("cpu", marks=needs_compiler), pytest.param("opencl", marks=needs_device)],
)
def test_targets_run_the_decomposed_batch_norm(target: str) -> None:
    """With `strict`, compiling fails if any op stays on the host."""
    module, a, b = _pre_activation_block(np.random.default_rng(2))
    feed = {"arg0": a, "arg1": b}
    expected = _run(module, ["reference"], feed)
    got = _run(module, [target], feed)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


# ---- The example networks against onnxruntime --------------------------------------------------


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _onnxruntime(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> np.ndarray:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feed)[0]


def _small_models() -> dict[str, onnx.ModelProto]:
    densenet = _example("build_densenet").build_model(
        growth=8, blocks=(2, 3, 2, 2), stem=16, size=64, classes=10
    )
    detection = _example("build_detection_net").build_model(size=64, width=0.5)
    return {"densenet": densenet, "detection": detection}


@pytest.fixture(scope="module")
def small_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("models")
    paths = {}
    for name, model in _small_models().items():
        paths[name] = folder / f"{name}.onnx"
        onnx.save(model, paths[name])
    return paths


@pytest.mark.parametrize("name", ["densenet", "detection"])
def test_example_network_matches_onnxruntime(small_models: dict[str, Path], name: str) -> None:
    model = onnx.load(small_models[name])
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feed = {"image": np.random.default_rng(3).standard_normal(shape).astype(np.float32)}
    expected = _onnxruntime(model, feed)
    (got,) = irc.compile(str(small_models[name]), targets=["reference"]).run(feed).values()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@needs_compiler
def test_densenet_runs_as_one_cpu_region(small_models: dict[str, Path], tmp_path: Path) -> None:
    """Every pre-activation batch norm runs on the CPU: one region, no host op."""
    report = tmp_path / "report.json"
    path = str(small_models["densenet"])
    compiled = irc.compile(path, targets=["cpu"], report=str(report))
    (function,) = json.loads(report.read_text())["functions"]
    assert len(function["regions"]) == 1, function["summary"]
    assert function["summary"].endswith("host: 0 ops"), function["summary"]
    feed = {"image": np.random.default_rng(4).standard_normal((1, 3, 64, 64)).astype(np.float32)}
    (got,) = compiled.run(feed).values()
    np.testing.assert_allclose(got, _onnxruntime(onnx.load(path), feed), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("build_densenet", ["--growth", "4", "--blocks", "1,1", "--stem", "8", "--size", "32"]),
        ("build_detection_net", ["--size", "32", "--width", "0.25"]),
    ],
)
def test_example_builders_write_checked_models(
    name: str, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o PATH` writes a model that onnx's checker accepts; an unwritable path is one error."""
    builder = _example(name)
    path = tmp_path / "model.onnx"
    assert builder.main([*argv, "-o", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {path}: ")
    onnx.checker.check_model(onnx.load(path))
    assert builder.main([*argv, "-o", str(tmp_path / "missing" / "model.onnx")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{name}: error: could not write ")
    assert "Traceback" not in err


def test_densenet121_has_torchvisions_parameters() -> None:
    """torchvision's densenet121() has 7,978,856 trainable parameters (its batch-norm running
    statistics are buffers, not parameters), 120 convs and 121 batch norms."""
    model = _example("build_densenet").build_model()
    sizes = {t.name: int(np.prod(t.dims)) for t in model.graph.initializer}
    statistics = [n for n in sizes if n.endswith((".running_mean", ".running_var"))]
    assert sum(sizes.values()) - sum(sizes[n] for n in statistics) == 7_978_856
    kinds = [node.op_type for node in model.graph.node]
    assert kinds.count("Conv") == 120
    assert kinds.count("BatchNormalization") == 121
