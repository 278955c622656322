"""Build `text_detection.onnx`: a DBNet-style OCR text-detection CNN with seeded weights.

```sh
python examples/build_detection_net.py -o text_detection.onnx
irc-compile text_detection.onnx --targets cpu -o text_detection.irc.mlir
```

The network has the shape and size of PaddleOCR's mobile detector (PP-OCR det: a
MobileNetV3-style backbone, a DB feature pyramid and a DB head) at 640x640, built from the
ops such detectors export to: Conv, BatchNormalization, Relu, Resize (nearest, x2), Add,
Concat, ConvTranspose and Sigmoid.

* backbone (half width, as PP-OCR's): a 3x3 stride-2 stem, then inverted residual
  blocks (1x1 expansion, 3x3 or 5x5 depthwise, 1x1 linear projection, each with batch
  norm; a residual add where the stride is 1 and the width is kept) down to 1/32 of the
  input, feature maps taken at 1/4, 1/8,
  1/16 and 1/32;
* neck (DBFPN): a 1x1 lateral conv per level to `FPN` channels, top-down nearest x2
  upsampling and add, a 3x3 conv to `FPN/4` channels per level, upsampled to 1/4 and
  concatenated;
* head (DBHead): 3x3 conv, batch norm, ReLU, 2x2 stride-2 ConvTranspose, batch norm, ReLU,
  2x2 stride-2 ConvTranspose to one channel, Sigmoid: a probability map of the input's size.

At the defaults: 156 nodes, 0.5 M weights, 3.7 GFLOP (multiply-adds counted as two).
`--width` scales every channel count (the tests use a narrow, small-input variant). Input
`image` is `1x3xSxS` (NCHW, S = 640 by default), output `probability` is `1x1xSxS`.
Weights come from `numpy.random.default_rng(seed)`; only numpy and `onnx` are needed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13

STAGES: tuple[tuple[int, int, int, int, int], ...] = (
    # kernel, expansion, output channels, repeats, stride of the first block
    (3, 1, 16, 1, 1),  # 1/2
    (3, 4, 24, 2, 2),  # 1/4  -> C2
    (5, 3, 40, 3, 2),  # 1/8  -> C3
    (3, 4, 80, 4, 2),  # 1/16
    (3, 6, 112, 2, 1),  # 1/16 -> C4
    (5, 6, 160, 3, 2),  # 1/32 -> C5
)
"""Backbone stages (MobileNetV3-large's table without squeeze-excite and hard-swish)."""

FEATURE_STAGES = (1, 2, 4, 5)
"""Indices of the stages whose outputs feed the pyramid (strides 4, 8, 16, 32)."""

BACKBONE_SCALE = 0.5
"""PP-OCR's mobile detector runs MobileNetV3-large at half width."""

STEM = 16
FPN = 96


def _scaled(channels: int, width: float) -> int:
    return max(4, round(channels * width / 4) * 4)


class _GraphBuilder:
    """Accumulates nodes and initializers; names are generated, weights seeded."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._counter = 0

    def name(self, kind: str) -> str:
        self._counter += 1
        return f"{kind}_{self._counter}"

    def constant(self, name: str, array: np.ndarray, dtype: type = np.float32) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def node(self, op_type: str, inputs: Sequence[str], name: str, **attributes: object) -> str:
        output = f"{name}.out"
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [output], name=name, **attributes)
        )
        return output

    def batch_norm(self, x: str, channels: int, gamma: float = 1.0) -> str:
        bn = self.name("bn")
        params = [
            self.constant(f"{bn}.scale", gamma * self.rng.uniform(0.5, 1.5, channels)),
            self.constant(f"{bn}.bias", self.rng.normal(0.0, 0.1, channels)),
            self.constant(f"{bn}.mean", self.rng.normal(0.0, 0.1, channels)),
            self.constant(f"{bn}.var", self.rng.uniform(0.5, 1.5, channels)),
        ]
        return self.node("BatchNormalization", [x, *params], bn)

    def conv(
        self,
        x: str,
        in_channels: int,
        out_channels: int,
        kernel: int,
        *,
        stride: int = 1,
        groups: int = 1,
        bn: bool = True,
        relu: bool = True,
        gain: float = 2.0,
        gamma: float = 1.0,
    ) -> str:
        """Conv [+ BatchNormalization] [+ Relu]; a bias only without batch norm.

        Weights have variance `gain / fan_in`: 2 (He) keeps the scale of post-ReLU inputs, 1
        that of linear ones; `gamma` scales the batch norm's scale.
        """
        name = self.name("conv")
        fan_in = in_channels // groups * kernel * kernel
        weight = self.rng.normal(
            0.0, np.sqrt(gain / fan_in), (out_channels, in_channels // groups, kernel, kernel)
        )
        inputs = [x, self.constant(f"{name}.weight", weight)]
        if not bn:
            inputs.append(self.constant(f"{name}.bias", self.rng.normal(0.0, 0.1, out_channels)))
        pad = kernel // 2
        y = self.node(
            "Conv",
            inputs,
            name,
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[pad, pad, pad, pad],
            group=groups,
        )
        if bn:
            y = self.batch_norm(y, out_channels, gamma)
        return self.node("Relu", [y], self.name("relu")) if relu else y

    def conv_transpose(self, x: str, in_channels: int, out_channels: int, gain: float = 1.0) -> str:
        """A 2x2 stride-2 ConvTranspose with bias (DBHead's upsampling)."""
        name = self.name("deconv")
        std = gain * np.sqrt(2.0 / in_channels)
        weight = self.rng.normal(0.0, std, (in_channels, out_channels, 2, 2))
        w = self.constant(f"{name}.weight", weight)
        b = self.constant(f"{name}.bias", self.rng.normal(0.0, 0.1, out_channels))
        return self.node("ConvTranspose", [x, w, b], name, kernel_shape=[2, 2], strides=[2, 2])

    def upsample(self, x: str, factor: int) -> str:
        """Nearest-neighbour Resize by `factor` (scales input, as PaddleOCR exports it)."""
        name = self.name("upsample")
        scales = self.constant(f"{name}.scales", [1.0, 1.0, factor, factor])
        return self.node("Resize", [x, "", scales], name, mode="nearest")

    def add(self, a: str, b: str) -> str:
        return self.node("Add", [a, b], self.name("add"))

    def inverted_residual(
        self, x: str, in_channels: int, out_channels: int, kernel: int, expansion: int, stride: int
    ) -> str:
        hidden = in_channels * expansion
        residual = stride == 1 and in_channels == out_channels
        y = x
        if expansion != 1:
            y = self.conv(y, in_channels, hidden, 1, gain=1.0)
        y = self.conv(y, hidden, hidden, kernel, stride=stride, groups=hidden)
        # A small last batch-norm scale on residual branches (torchvision's
        # zero_init_residual, softened) keeps the sums from growing block after block.
        y = self.conv(y, hidden, out_channels, 1, relu=False, gamma=0.2 if residual else 1.0)
        return self.add(x, y) if residual else y


def build_model(size: int = 640, width: float = 1.0, seed: int = 0) -> onnx.ModelProto:
    """The detection network as an `onnx.ModelProto` (checked)."""
    if size < 32 or size % 32:
        raise ValueError(f"input size must be a positive multiple of 32, got {size}")
    if not width > 0:
        raise ValueError(f"width must be positive, got {width}")
    b = _GraphBuilder(seed)
    channels = _scaled(STEM, width * BACKBONE_SCALE)
    x = b.conv("image", 3, channels, 3, stride=2)
    features: list[tuple[str, int]] = []
    for index, (kernel, expansion, out, repeats, stride) in enumerate(STAGES):
        out = _scaled(out, width * BACKBONE_SCALE)
        for i in range(repeats):
            x = b.inverted_residual(x, channels, out, kernel, expansion, stride if i == 0 else 1)
            channels = out
        if index in FEATURE_STAGES:
            features.append((x, channels))
    fpn = _scaled(FPN, width)
    laterals = [b.conv(f, c, fpn, 1, bn=False, relu=False, gain=1.0) for f, c in features]
    for level in range(len(laterals) - 2, -1, -1):  # top-down: upsample the coarser, add
        laterals[level] = b.add(laterals[level], b.upsample(laterals[level + 1], 2))
    outputs = []
    for level, lateral in enumerate(laterals):
        y = b.conv(lateral, fpn, fpn // 4, 3, bn=False, relu=False, gain=0.5)
        outputs.append(b.upsample(y, 2**level) if level else y)
    fused = b.node("Concat", outputs, b.name("concat"), axis=1)
    y = b.conv(fused, fpn, fpn // 4, 3, gain=1.0)
    y = b.node("Relu", [b.batch_norm(b.conv_transpose(y, fpn // 4, fpn // 4), fpn // 4)], "head")
    # A small gain keeps the logits in the sigmoid's sensitive range (random weights would
    # saturate it, and a saturated map would hide numerical differences).
    y = b.conv_transpose(y, fpn // 4, 1, gain=0.2)
    b.nodes.append(helper.make_node("Sigmoid", [y], ["probability"], name="probability"))
    graph = helper.make_graph(
        b.nodes,
        "text_detection",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("probability", TensorProto.FLOAT, [1, 1, size, size])],
        initializer=b.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="irc examples/build_detection_net.py",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(argv: Sequence[str] | None = None) -> int:
    """Write the model to `-o PATH`; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default="text_detection.onnx", help="model file")
    parser.add_argument(
        "--size", type=int, default=640, help="input height and width (%(default)s)"
    )
    parser.add_argument("--width", type=float, default=1.0, help="channel multiplier (%(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (%(default)s)")
    args = parser.parse_args(argv)
    try:
        model = build_model(args.size, args.width, args.seed)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        onnx.save(model, args.output)
    except OSError as exc:
        sys.stderr.write(
            f"build_detection_net: error: could not write '{args.output}': {exc.strerror}\n"
        )
        return 1
    ops = len(model.graph.node)
    weights = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"wrote {args.output}: {ops} nodes, {weights} weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
