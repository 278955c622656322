"""fuse-qdq on QDQ models written by onnxruntime's quantizer, against onnxruntime.

Each test builds a small float model with `onnx.helper`, quantizes it with
`onnxruntime.quantization.quantize_static` (QDQ format, per-channel int8 weights, random
calibration data), imports it, runs `fuse-qdq` and checks that

* the island became integer ops: no `quant.qcast`/`quant.dcast` is left but at the edges
  (the graph input's qcast and the output's dcast);
* the fused module, run on the reference target (integer arithmetic by `lower-quantized`),
  stays within one quantization step of onnxruntime's unfused run (graph optimisations
  off: float ops between QuantizeLinear/DequantizeLinear, rounding half to even), and half a
  step on average. The kernels requantize with TFLite's fixed-point multipliers instead of a
  float multiply, so single elements may differ by one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp

import irc
from irc.context import make_context
from irc.dialects import nn, quant
from irc.importers import import_model
from irc.passes.fuse_qdq import FuseQDQPass
from irc.pipelines import default_pipeline
from irc.targets import get_target

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")


# ---- Helpers -----------------------------------------------------------------------------------


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def weights(shape: Sequence[int], seed: int, scale: float = 0.3) -> np.ndarray:
    return np.asarray(rng(seed).normal(0, scale, shape), np.float32)


class RandomReader(quantization.CalibrationDataReader):
    """Seeded random calibration batches."""

    def __init__(self, shape: Sequence[int], count: int = 8) -> None:
        self.shape, self.count, self.index = tuple(shape), count, 0

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self.index == self.count:
            return None
        self.index += 1
        return {"X": np.asarray(rng(100 + self.index).normal(0, 1, self.shape), np.float32)}


def quantized_model(
    tmp_path: Path,
    nodes: Sequence[onnx.NodeProto],
    x_shape: Sequence[int],
    y_shape: Sequence[int],
    initializers: dict[str, np.ndarray],
) -> Path:
    """The float graph X -> nodes -> Y, quantized to QDQ by onnxruntime."""
    graph = helper.make_graph(
        list(nodes),
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(y_shape))],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    float_path, qdq_path = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save_model(model, str(float_path))
    quantization.quantize_static(
        str(float_path),
        str(qdq_path),
        RandomReader(x_shape),
        quant_format=quantization.QuantFormat.QDQ,
        per_channel=True,
        activation_type=quantization.QuantType.QInt8,
        weight_type=quantization.QuantType.QInt8,
    )
    return qdq_path


def run_unfused_ort(path: Path, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"X": x})[0]


def output_step(path: Path) -> float:
    """The scale of the DequantizeLinear that writes the graph output."""
    model = onnx.load(str(path))
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    (last,) = [n for n in model.graph.node if "Y" in n.output]
    assert last.op_type == "DequantizeLinear"
    return float(consts[last.input[1]].reshape(-1)[0])


def fuse_and_check(path: Path, x_shape: Sequence[int], fused_op: type) -> ModuleOp:
    module = import_model(path)
    FuseQDQPass().apply(make_context(), module)
    casts = [op for op in module.walk() if isinstance(op, quant.QCastOp | quant.DCastOp)]
    assert [type(op) for op in casts] == [quant.QCastOp, quant.DCastOp], [op.name for op in casts]
    quantized = [op for op in module.walk() if isinstance(op, fused_op)]
    assert quantized
    assert all(quant.quantized_element(op.results[0].type) is not None for op in quantized)
    step = output_step(path)
    for seed in range(3):
        x = np.asarray(rng(seed).normal(0, 1, x_shape), np.float32)
        want = run_unfused_ort(path, x)
        (got,) = irc.run(module, {"X": x}).values()
        steps = np.abs(got.astype(np.float64) - want) / step
        assert steps.max() <= 1.0 + 1e-3, f"{steps.max():.2f} steps off"
        assert steps.mean() <= 0.5, f"{steps.mean():.2f} steps off on average"
    return module


# ---- Islands -----------------------------------------------------------------------------------


@pytest.mark.parametrize("group", [1, 4], ids=["conv", "depthwise"])
def test_conv_island(tmp_path: Path, group: int) -> None:
    w = weights((4, 4 // group, 3, 3), 1)
    nodes = [
        helper.make_node("Conv", ["X", "W", "B"], ["c"], pads=[1, 1, 1, 1], group=group),
        helper.make_node("Relu", ["c"], ["Y"]),
    ]
    path = quantized_model(
        tmp_path, nodes, (1, 4, 6, 6), (1, 4, 6, 6), {"W": w, "B": weights((4,), 2)}
    )
    module = fuse_and_check(path, (1, 4, 6, 6), nn.Conv2DOp)
    # As imported (NCHW), the CPU target takes the quantized conv: convert-layout gives it
    # NHWC inside the target's region before lower-quantized expresses it in integers.
    (conv,) = [op for op in module.walk() if isinstance(op, nn.Conv2DOp)]
    assert get_target("cpu").supports(conv), get_target("cpu").supports(conv).reason


def test_gemm_island(tmp_path: Path) -> None:
    nodes = [helper.make_node("Gemm", ["X", "W", "B"], ["Y"], transB=1)]
    consts = {"W": weights((5, 12), 3), "B": weights((5,), 4)}
    path = quantized_model(tmp_path, nodes, (2, 12), (2, 5), consts)
    fuse_and_check(path, (2, 12), nn.FullyConnectedOp)


def test_matmul_island(tmp_path: Path) -> None:
    nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"])]
    path = quantized_model(tmp_path, nodes, (3, 16), (3, 6), {"W": weights((16, 6), 5)})
    fuse_and_check(path, (3, 16), nn.FullyConnectedOp)


def test_residual_add_island(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Conv", ["X", "W"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["X", "c"], ["Y"]),
    ]
    path = quantized_model(
        tmp_path, nodes, (1, 3, 5, 5), (1, 3, 5, 5), {"W": weights((3, 3, 3, 3), 6)}
    )
    fuse_and_check(path, (1, 3, 5, 5), nn.AddOp)


def test_concat_island(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Conv", ["X", "W"], ["c"]),
        helper.make_node("Concat", ["X", "c"], ["Y"], axis=1),
    ]
    path = quantized_model(
        tmp_path, nodes, (1, 2, 4, 4), (1, 5, 4, 4), {"W": weights((3, 2, 1, 1), 7)}
    )
    fuse_and_check(path, (1, 2, 4, 4), nn.ConcatOp)


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool", "GlobalAveragePool"])
def test_pool_island(tmp_path: Path, op_type: str) -> None:
    attrs = {} if op_type == "GlobalAveragePool" else {"kernel_shape": [2, 2], "strides": [2, 2]}
    out = (1, 4, 1, 1) if op_type == "GlobalAveragePool" else (1, 4, 3, 3)
    nodes = [
        helper.make_node("Conv", ["X", "W"], ["c"]),
        helper.make_node(op_type, ["c"], ["Y"], **attrs),
    ]
    path = quantized_model(tmp_path, nodes, (1, 4, 6, 6), out, {"W": weights((4, 4, 1, 1), 8)})
    fused = nn.ReduceOp if op_type == "GlobalAveragePool" else nn.MaxPool2DOp
    if op_type == "AveragePool":
        fused = nn.AvgPool2DOp
    fuse_and_check(path, (1, 4, 6, 6), fused)


# ---- The default pipeline ----------------------------------------------------------------------


def test_the_default_pipeline_fuses_for_native_int8_targets_only() -> None:
    assert default_pipeline(["cpu"]).startswith("fuse-qdq,canonicalize,")
    assert "fuse-qdq" not in default_pipeline(["reference"])
    assert "fuse-qdq" not in default_pipeline(["opencl"])
