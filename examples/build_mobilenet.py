"""Build `mobilenet_mini.onnx`: a small MobileNetV2-style classifier with seeded weights.

```sh
python examples/build_mobilenet.py -o mobilenet_mini.onnx
irc-compile mobilenet_mini.onnx --targets opencl,cpu -o mobilenet_mini.irc.mlir
```

The network follows MobileNetV2's shape at a fraction of its size, so the README's quick
start runs in seconds: a stride-2 3x3 stem (conv, batch norm, ReLU6), inverted residual
blocks (1x1 expansion, 3x3 depthwise, 1x1 linear projection, each with batch norm; a
residual add where the stride is 1 and the width is kept), a 1x1 head, global average
pooling, a fully connected layer and softmax. Input `image` is `1x3xSxS` (NCHW, S = 96 by
default), output `probabilities` is `1xCLASSES`.

Weights come from `numpy.random.default_rng(seed)`, so the same seed writes the same bytes.
Only numpy and the `onnx` package (an irc dependency) are needed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13

BLOCKS: tuple[tuple[int, int, int, int], ...] = (
    # expansion factor, output channels, repeats, first stride (MobileNetV2's table, slimmed)
    (1, 8, 1, 1),
    (4, 12, 2, 2),
    (4, 16, 2, 2),
    (4, 24, 2, 2),
)
"""The inverted residual stages: (expansion, channels, repeats, stride of the first)."""

STEM_CHANNELS = 8
HEAD_CHANNELS = 64


class _GraphBuilder:
    """Accumulates nodes and initializers; names are generated, weights seeded."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._counter = 0

    def _name(self, kind: str) -> str:
        self._counter += 1
        return f"{kind}_{self._counter}"

    def _constant(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv_bn(
        self,
        x: str,
        in_channels: int,
        out_channels: int,
        *,
        kernel: int,
        stride: int = 1,
        groups: int = 1,
        relu6: bool = True,
    ) -> str:
        """Conv (no bias) + BatchNormalization (+ ReLU6 as Clip(0, 6))."""
        name = self._name("conv")
        fan_in = in_channels // groups * kernel * kernel
        weight = self.rng.normal(
            0.0, np.sqrt(2.0 / fan_in), (out_channels, in_channels // groups, kernel, kernel)
        )
        w = self._constant(f"{name}.weight", weight)
        pad = kernel // 2
        conv_out = f"{name}.out"
        self.nodes.append(
            helper.make_node(
                "Conv",
                [x, w],
                [conv_out],
                name=name,
                kernel_shape=[kernel, kernel],
                strides=[stride, stride],
                pads=[pad, pad, pad, pad],
                group=groups,
            )
        )
        bn = f"{name}.bn"
        params = [
            self._constant(f"{bn}.scale", self.rng.uniform(0.5, 1.5, out_channels)),
            self._constant(f"{bn}.bias", self.rng.normal(0.0, 0.1, out_channels)),
            self._constant(f"{bn}.mean", self.rng.normal(0.0, 0.1, out_channels)),
            self._constant(f"{bn}.var", self.rng.uniform(0.5, 1.5, out_channels)),
        ]
        bn_out = f"{bn}.out"
        self.nodes.append(
            helper.make_node("BatchNormalization", [conv_out, *params], [bn_out], name=bn)
        )
        if not relu6:
            return bn_out
        relu = f"{name}.relu6"
        low = self._constant(f"{relu}.min", np.array(0.0))
        high = self._constant(f"{relu}.max", np.array(6.0))
        self.nodes.append(helper.make_node("Clip", [bn_out, low, high], [f"{relu}.out"], name=relu))
        return f"{relu}.out"

    def inverted_residual(
        self, x: str, in_channels: int, out_channels: int, *, expansion: int, stride: int
    ) -> str:
        """MobileNetV2's block: expand (1x1), depthwise (3x3), project (1x1, linear)."""
        hidden = in_channels * expansion
        y = x
        if expansion != 1:
            y = self.conv_bn(y, in_channels, hidden, kernel=1)
        y = self.conv_bn(y, hidden, hidden, kernel=3, stride=stride, groups=hidden)
        y = self.conv_bn(y, hidden, out_channels, kernel=1, relu6=False)
        if stride == 1 and in_channels == out_channels:
            name = self._name("add")
            self.nodes.append(helper.make_node("Add", [x, y], [f"{name}.out"], name=name))
            y = f"{name}.out"
        return y

    def classifier(self, x: str, channels: int, classes: int) -> str:
        """GlobalAveragePool, Flatten, Gemm, Softmax."""
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool.out"], name="pool"))
        self.nodes.append(helper.make_node("Flatten", ["pool.out"], ["flat.out"], name="flat"))
        w = self._constant(
            "fc.weight", self.rng.normal(0.0, 1.0 / np.sqrt(channels), (classes, channels))
        )
        b = self._constant("fc.bias", self.rng.normal(0.0, 0.01, classes))
        self.nodes.append(
            helper.make_node("Gemm", ["flat.out", w, b], ["fc.out"], name="fc", transB=1)
        )
        self.nodes.append(
            helper.make_node("Softmax", ["fc.out"], ["probabilities"], name="softmax", axis=1)
        )
        return "probabilities"


def build_model(size: int = 96, classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """The MobileNetV2-style model as an `onnx.ModelProto` (checked)."""
    if size < 16 or size % 16:
        raise ValueError(f"input size must be a positive multiple of 16, got {size}")
    if classes < 1:
        raise ValueError(f"need at least one class, got {classes}")
    builder = _GraphBuilder(seed)
    x = builder.conv_bn("image", 3, STEM_CHANNELS, kernel=3, stride=2)
    channels = STEM_CHANNELS
    for expansion, out_channels, repeats, stride in BLOCKS:
        for i in range(repeats):
            x = builder.inverted_residual(
                x, channels, out_channels, expansion=expansion, stride=stride if i == 0 else 1
            )
            channels = out_channels
    x = builder.conv_bn(x, channels, HEAD_CHANNELS, kernel=1)
    output = builder.classifier(x, HEAD_CHANNELS, classes)
    graph = helper.make_graph(
        builder.nodes,
        "mobilenet_mini",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, classes])],
        initializer=builder.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="irc examples/build_mobilenet.py",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(argv: Sequence[str] | None = None) -> int:
    """Write the model to `-o PATH`; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default="mobilenet_mini.onnx", help="model file")
    parser.add_argument("--size", type=int, default=96, help="input height and width (%(default)s)")
    parser.add_argument("--classes", type=int, default=10, help="output classes (%(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (%(default)s)")
    args = parser.parse_args(argv)
    try:
        model = build_model(args.size, args.classes, args.seed)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        onnx.save(model, args.output)
    except OSError as exc:
        sys.stderr.write(
            f"build_mobilenet: error: could not write '{args.output}': {exc.strerror}\n"
        )
        return 1
    ops = len(model.graph.node)
    weights = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"wrote {args.output}: {ops} nodes, {weights} weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
