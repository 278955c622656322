"""A MobileNetV3-small-like ONNX graph and its fp16 conversion (test-support module).

Built with `onnx.helper` (torch and onnxconverter_common are not installed), seeded. The
graph follows `torch.onnx.export` of torchvision's `mobilenet_v3_small` in eval mode at
opset 17: BatchNorm folded into the convolutions, HardSwish, ReLU, squeeze-excitation as
GlobalAveragePool -> Conv -> Relu -> Conv -> HardSigmoid -> Mul, the classifier as
GlobalAveragePool -> Flatten -> Gemm -> HardSwish -> Gemm (Dropout dropped in eval).

`to_float16` (re-exported from `fp16_transformer_graphs`, which documents it) does what
onnxconverter_common's `convert_float_to_float16(model, keep_io_types=True)` does to such a
graph: every float32 initializer becomes float16 (numpy's round-to-nearest-even, clipped to
half's range), every float32 value becomes float16, and the graph's float32 inputs and
outputs stay float32 through a `Cast(to=FLOAT16)` after each input and a `Cast(to=FLOAT)`
before each output.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from fp16_transformer_graphs import to_float16
from onnx import TensorProto, helper
from onnx_support import make_onnx_model
from transformer_graphs import OnnxGraph

__all__ = ["mobilenet_v3_small_like", "to_float16"]

_BLOCKS = [
    # in, kernel, expanded, out, squeeze-excite, hard-swish, stride (torchvision's table)
    (16, 3, 16, 16, True, False, 2),
    (16, 3, 72, 24, False, False, 2),
    (24, 3, 88, 24, False, False, 1),
    (24, 5, 96, 40, True, True, 2),
    (40, 5, 240, 40, True, True, 1),
    (40, 5, 240, 40, True, True, 1),
    (40, 5, 120, 48, True, True, 1),
    (48, 5, 144, 48, True, True, 1),
    (48, 5, 288, 96, True, True, 2),
    (96, 5, 576, 96, True, True, 1),
    (96, 5, 576, 96, True, True, 1),
]


def _divisible(value: float, divisor: int = 8) -> int:
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _conv(
    g: OnnxGraph, x: str, cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1
) -> str:
    fan_in = cin // groups * kernel * kernel
    w = g.rng.standard_normal((cout, cin // groups, kernel, kernel)) * math.sqrt(2.0 / fan_in)
    b = g.rng.standard_normal(cout) * 0.1
    p = (kernel - 1) // 2
    return g.op(  # type: ignore[return-value]
        "Conv",
        x,
        g.const(w.astype(np.float32), "w"),
        g.const(b.astype(np.float32), "b"),
        dilations=[1, 1],
        group=groups,
        kernel_shape=[kernel, kernel],
        pads=[p] * 4,
        strides=[stride, stride],
    )


def _act(g: OnnxGraph, x: str, hard_swish: bool) -> str:
    return g.op("HardSwish" if hard_swish else "Relu", x)  # type: ignore[return-value]


def _squeeze_excite(g: OnnxGraph, x: str, channels: int) -> str:
    squeeze = _divisible(channels // 4)
    s = g.op("GlobalAveragePool", x)
    s = g.op("Relu", _conv(g, s, channels, squeeze, 1))  # type: ignore[arg-type]
    s = g.op("HardSigmoid", _conv(g, s, squeeze, channels, 1), alpha=1 / 6, beta=0.5)  # type: ignore[arg-type]
    return g.op("Mul", s, x)  # type: ignore[return-value, arg-type]


def mobilenet_v3_small_like(
    *, image: int = 96, classes: int = 1000, seed: int = 0
) -> onnx.ModelProto:
    """torchvision's `mobilenet_v3_small` as exported (float32, batch 1, NCHW)."""
    g = OnnxGraph(np.random.default_rng(seed))
    y = _act(g, _conv(g, "input", 3, 16, 3, 2), True)
    for cin, kernel, mid, cout, se, hs, stride in _BLOCKS:
        x = y
        if mid != cin:
            y = _act(g, _conv(g, y, cin, mid, 1), hs)
        y = _act(g, _conv(g, y, mid, mid, kernel, stride, groups=mid), hs)
        if se:
            y = _squeeze_excite(g, y, mid)
        y = _conv(g, y, mid, cout, 1)
        if stride == 1 and cin == cout:
            y = g.op("Add", y, x)  # type: ignore[assignment]
    y = _act(g, _conv(g, y, 96, 576, 1), True)
    y = g.op("Flatten", g.op("GlobalAveragePool", y), axis=1)  # type: ignore[arg-type]
    w1 = g.weight(1024, 576, scale=1 / math.sqrt(576))
    y = g.op("HardSwish", g.op("Gemm", y, w1, g.weight(1024, scale=0.05), transB=1))  # type: ignore[arg-type]
    w2 = g.weight(classes, 1024, scale=1 / math.sqrt(1024))
    g.nodes.append(
        helper.make_node("Gemm", [y, w2, g.weight(classes, scale=0.05)], ["output"], transB=1)  # type: ignore[list-item]
    )
    graph = helper.make_graph(
        g.nodes,
        "mobilenet_v3_small",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, image, image])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, classes])],
        g.initializers,
    )
    model = make_onnx_model(graph, opset=17)  # an IR version every onnxruntime loads
    onnx.checker.check_model(model)
    return model
