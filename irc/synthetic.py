"""Synthetic `nn` modules for benchmarks and tests: realistic size, seeded random weights.

`mobilenet_v2_like()` builds a MobileNetV2-shaped graph (NHWC, inverted residual blocks with
expansion, depthwise and projection convolutions, residual adds, global pooling and a
classifier): about 150 ops and 3.5 M float weights, the size of the real model, built with
the `nn` builders exactly as an importer would.
"""

from __future__ import annotations

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects import nn
from irc.dialects.nn.base import shape_of

# (expansion, output channels, repeats, first stride) of MobileNetV2's bottleneck stages.
_MOBILENET_V2_STAGES = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


class _GraphBuilder:
    """Appends nn ops with random weights to a block."""

    def __init__(self, block: Block, seed: int):
        self.builder = Builder(InsertPoint.at_end(block))
        self.rng = np.random.default_rng(seed)
        self.weight_count = 0

    def constant(self, shape: tuple[int, ...]) -> SSAValue:
        data = (self.rng.standard_normal(shape) * 0.1).astype(np.float32)
        self.weight_count += data.size
        return self.builder.insert(nn.ConstantOp.from_array(data)).output

    def conv(
        self, x: SSAValue, out_c: int, kernel: int, stride: int, groups: int = 1, act: str = "relu6"
    ) -> SSAValue:
        in_c = shape_of(x)[3]
        weights = self.constant((out_c, kernel, kernel, in_c // groups))
        bias = self.constant((out_c,))
        pad = kernel // 2
        h = shape_of(x)[1]
        # TFLite SAME padding: extra padding goes to the bottom/right.
        total = max((-(-h // stride) - 1) * stride + kernel - h, 0)
        pads = [total // 2, total // 2, total - total // 2, total - total // 2] if pad else [0] * 4
        op = nn.Conv2DOp.make(
            x,
            weights,
            bias,
            strides=[stride, stride],
            pads=pads,
            groups=groups,
            layout="NHWC",
            activation=act,
        )
        return self.builder.insert(op).output


def mobilenet_v2_like(seed: int = 0, resolution: int = 224, classes: int = 1000) -> ModuleOp:
    """A MobileNetV2-sized `nn` module (NHWC float32) with seeded random weights."""
    input_type = TensorType(f32, (1, resolution, resolution, 3))
    block = Block(arg_types=[input_type])
    g = _GraphBuilder(block, seed)
    x = g.conv(block.args[0], 32, 3, 2)
    channels = 32
    for expansion, out_c, repeats, first_stride in _MOBILENET_V2_STAGES:
        for i in range(repeats):
            stride = first_stride if i == 0 else 1
            inner = x
            if expansion != 1:
                inner = g.conv(inner, channels * expansion, 1, 1)
            hidden = channels * expansion
            inner = g.conv(inner, hidden, 3, stride, groups=hidden)
            inner = g.conv(inner, out_c, 1, 1, act="none")
            if stride == 1 and channels == out_c:
                inner = g.builder.insert(nn.AddOp.make(x, inner)).output
            x, channels = inner, out_c
    x = g.conv(x, 1280, 1, 1)
    x = g.builder.insert(nn.ReduceOp.make(x, kind="mean", axes=[1, 2], keepdims=False)).output
    weights = g.constant((classes, 1280))
    bias = g.constant((classes,))
    x = g.builder.insert(nn.FullyConnectedOp.make(x, weights, bias)).output
    x = g.builder.insert(nn.SoftmaxOp.make(x, axis=-1)).output
    g.builder.insert(ReturnOp(x))
    func = FuncOp("main", ([input_type], [x.type]), Region(block))
    func.attributes["irc.input_names"] = ArrayAttr([StringAttr("input")])
    func.attributes["irc.output_names"] = ArrayAttr([StringAttr("probabilities")])
    return ModuleOp([func])
