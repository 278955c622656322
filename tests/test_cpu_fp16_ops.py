"""float16 ops on the cpu target (`lowerings/binary16.py`, kernels/common/conv2d_f16.c):
float16 storage, float32 arithmetic, one rounding per op result, against the reference
target's float16 ops (docs/semantics.md: float32 math on the widened inputs, the result
rounded to half once).

One float32 ONNX graph of independent ops (each reads the graph's inputs, each result is a
graph output), converted to float16 as `convert_float_to_float16(keep_io_types=True)` does
(`fp16_graphs.to_float16`), compiled for cpu on every ISA profile the host runs and for the
reference. Shapes hit the kernels' tails: 20 channels (a 16- and 8-lane vector plus a
partial one, a 32-channel block plus a partial one), pixel rows that are not a multiple of
the register tile, padding on every side, strides, dilation, groups, one-row and
several-row fully connected layers. The cpu result may differ from the reference's only
where float32 sums in another order round to the neighbouring half: by at most one unit in
the last place of the half result (most are bit-equal).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from cpu_support import isa_params, needs_compiler
from fp16_graphs import to_float16
from onnx import TensorProto, helper
from onnx_support import make_onnx_model
from transformer_graphs import OnnxGraph

import irc
from irc.dialects import nn
from irc.targets.cpu.lowerings import binary16, elementwise, lowerings_of

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

SHAPES = {
    "a": (1, 20, 9, 11),
    "b": (1, 20, 9, 11),
    "se": (1, 20, 1, 1),
    "m": (3, 50),
    "v": (1, 200),
}


def _graph() -> onnx.ModelProto:
    g = OnnxGraph(np.random.default_rng(7))
    outputs: list[str] = []

    def conv(x: str, cin: int, cout: int, k: int, **attrs: object) -> str:
        groups = int(attrs.get("group", 1))  # type: ignore[call-overload]
        w = g.weight(cout, cin // groups, k, k, scale=0.3)
        return g.op("Conv", x, w, g.weight(cout, scale=0.2), kernel_shape=[k, k], **attrs)  # type: ignore[return-value]

    outputs.append(conv("a", 20, 40, 1))  # pointwise: one row of 99 pixels, 40 = 32 + 8
    outputs.append(conv("a", 20, 24, 3, strides=[2, 2], pads=[1, 1, 1, 1]))
    outputs.append(conv("a", 20, 8, 3, group=2, dilations=[2, 2], pads=[2, 1, 0, 2]))
    outputs.append(conv("a", 20, 20, 3, group=20, pads=[1, 1, 1, 1]))  # depthwise
    outputs.append(conv("a", 20, 20, 5, group=20, strides=[2, 2], pads=[2, 2, 2, 2]))
    outputs.append(g.op("Relu", conv("a", 20, 16, 1)))  # fused into the conv
    outputs.append(g.op("Gemm", "m", g.weight(70, 50), g.weight(70), transB=1))  # type: ignore[arg-type]
    outputs.append(g.op("Gemm", "v", g.weight(37, 200), g.weight(37), transB=1))  # type: ignore[arg-type]
    outputs.append(g.op("Add", "a", "b"))  # type: ignore[arg-type]
    outputs.append(g.op("Mul", "se", "a"))  # type: ignore[arg-type]  # squeeze-excitation
    outputs.append(g.op("Sub", "a", g.weight(20, 1, 1, scale=1.0)))  # type: ignore[arg-type]
    outputs.append(g.op("Mul", "a", g.scalar(0.3)))  # type: ignore[arg-type]  # a splat literal
    outputs.append(g.op("Div", "a", "b"))  # type: ignore[arg-type]
    outputs.append(g.op("Max", "a", "se"))  # type: ignore[arg-type]
    for op_type, attrs in (
        ("HardSwish", {}),
        ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}),
        ("Relu", {}),
        ("Sigmoid", {}),
        ("Tanh", {}),
        ("Abs", {}),
        ("Neg", {}),
        ("Exp", {}),
    ):
        outputs.append(g.op(op_type, "a", **attrs))  # type: ignore[arg-type]
    outputs.append(g.op("Clip", "a", g.scalar(0.0), g.scalar(6.0)))  # type: ignore[arg-type]
    outputs.append(g.op("GlobalAveragePool", "a"))  # type: ignore[arg-type]
    outputs.append(g.op("ReduceMax", "a", axes=[1], keepdims=0))  # type: ignore[arg-type]
    outputs.append(g.op("ReduceSum", "b", g.i64(2, 3), keepdims=1))  # type: ignore[arg-type]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in SHAPES.items()]
    graph = helper.make_graph(g.nodes, "fp16_ops", inputs, [], g.initializers)
    model = make_onnx_model(graph, opset=17)
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    graph = helper.make_graph(
        g.nodes, "fp16_ops", inputs, [inferred[n] for n in outputs], g.initializers
    )
    return to_float16(make_onnx_model(graph, opset=17))


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fp16_ops") / "fp16_ops.onnx"
    onnx.save(_graph(), path)
    return path


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    feeds = {
        n: rng.uniform(-4, 4, s).astype(np.float16).astype(np.float32) for n, s in SHAPES.items()
    }
    feeds["b"] = np.where(np.abs(feeds["b"]) < 0.25, 0.5, feeds["b"]).astype(np.float32)
    return feeds


@pytest.fixture(scope="module")
def reference(model_path: Path) -> dict[str, np.ndarray]:
    return irc.compile(model_path, "reference").run(_feeds())


def _half_ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units in the last place of the half `want`."""
    spacing = np.spacing(np.abs(want).astype(np.float16)).astype(np.float32)
    return np.abs(got - want) / spacing


@needs_compiler
@pytest.mark.parametrize("isa_name", isa_params(("avx512vnni", "avx2", "generic")))
def test_ops_match_the_reference(
    model_path: Path,
    reference: dict[str, np.ndarray],
    isa_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IRC_CPU_ISA", isa_name)
    monkeypatch.delenv("IRC_CPU_PORTABLE", raising=False)
    monkeypatch.setenv("IRC_CPU_PRECISION", "fp16")  # 16-bit storage (the default is fp32)
    compiled = irc.compile(model_path, "cpu")
    assert compiled.summary.splitlines()[-1].endswith("host: 0 ops"), compiled.summary
    got = compiled.run(_feeds())
    assert got.keys() == reference.keys()
    for name, want in reference.items():
        assert got[name].shape == want.shape, name
        assert np.array_equal(got[name], got[name].astype(np.float16).astype(np.float32)), name
        ulps = _half_ulps(got[name], want)
        assert float(np.max(ulps)) <= 1.0, (name, float(np.max(ulps)))
        assert float(np.mean(ulps > 0)) <= 0.05, (name, float(np.mean(ulps > 0)))


@needs_compiler
def test_storage_is_float16(model_path: Path, tmp_path: Path) -> None:
    """The kernels read and write float16 buffers; the weights are float16 constants."""
    from irc.targets import get_target

    assert get_target("cpu").computes_float16
    saved = tmp_path / "fp16_ops.mlir"
    irc.compile(model_path, "cpu", precision="fp16").save(saved)
    text = saved.read_text()
    for kernel in ("irc_conv2d_f16(", "irc_depthwise_f16(", "irc_f16_to_f32(", "irc_f32_to_f16("):
        assert kernel in text, kernel
    assert "irc_conv2d(" not in text
    assert "irc_depthwise(" not in text


@needs_compiler
def test_default_precision_is_float32(
    model_path: Path,
    reference: dict[str, np.ndarray],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unasked, a float16 model computes and stores float32 activations on cpu with its
    float16 weights widened (onnxruntime's CPU provider's way): no float16 kernel, and the
    results are float32 arithmetic on the half weights, not rounded to half."""
    monkeypatch.delenv("IRC_CPU_PRECISION", raising=False)
    compiled = irc.compile(model_path, "cpu")
    assert compiled.summary.splitlines()[-1].endswith("host: 0 ops"), compiled.summary
    saved = tmp_path / "fp16_ops.mlir"
    compiled.save(saved)
    text = saved.read_text()
    assert "irc_conv2d(" in text
    assert "_f16(" not in text
    got = compiled.run(_feeds())
    rounded = 0
    for name, want in reference.items():
        assert got[name].dtype == np.float32
        ulps = _half_ulps(got[name], want)
        assert float(np.max(ulps)) <= 1.0, (name, float(np.max(ulps)))  # one rounding apart
        rounded += int(np.any(got[name] != got[name].astype(np.float16).astype(np.float32)))
    assert rounded >= len(reference) // 2  # float32 results, not halves


def test_lowerings_come_first_and_cover_the_float_families() -> None:
    """The float16 lowerings are tried before the other families' (which would take float16
    tensors for integers), and cover every float elementwise op."""
    assert set(binary16.HALF_BINARY_OPS) == set(elementwise.BINARY_OPS)
    assert set(binary16.HALF_UNARY_OPS) == set(elementwise.UNARY_OPS)
    for op_type in (*binary16.HALF_BINARY_OPS, *binary16.HALF_UNARY_OPS):
        assert lowerings_of(op_type)[0] in (binary16.half_binary, binary16.half_unary)
    assert lowerings_of(nn.Conv2DOp)[0] is binary16.half_conv2d
    assert lowerings_of(nn.FullyConnectedOp)[0] is binary16.half_fully_connected
    assert lowerings_of(nn.ReduceOp)[0] is binary16.half_reduce
