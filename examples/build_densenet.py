"""Build `densenet121.onnx`: torchvision's DenseNet-121, with seeded weights, without torch.

```sh
python examples/build_densenet.py -o densenet121.onnx
irc-compile densenet121.onnx --targets cpu -o densenet121.irc.mlir
```

The graph follows torchvision's `densenet121()` layer for layer (the same 7,978,856
trainable parameters plus the batch-norm statistics): a 7x7 stride-2 stem (conv, batch
norm, ReLU) and a 3x3 stride-2 max pool; four dense blocks of 6, 12, 24 and 16 layers,
each layer pre-activation (`Concat` of every earlier feature map of the block,
BatchNormalization, ReLU, 1x1 conv to `bn_size * growth` channels, BatchNormalization,
ReLU, 3x3 conv to `growth` channels); between blocks a transition (BatchNormalization,
ReLU, 1x1 conv halving the channels, 2x2 average pool); then BatchNormalization, ReLU,
global average pooling, flatten and a fully connected layer. Convs have no bias. Growth
32, bn_size 4, 64 stem channels and a 224x224 input by default; `--growth`, `--blocks`,
`--stem` and `--size` give the small variants the tests use. Input `image` is `1x3xSxS`
(NCHW), output `logits` is `1xCLASSES`. At the defaults: 427 nodes, 5.7 GFLOP.

Pre-activation batch norms follow a `Concat`, not a conv, so no compiler can fold them into
one: they are the case `canonicalize` decomposes into a per-channel multiply-add.

Weights come from `numpy.random.default_rng(seed)`, so the same seed writes the same bytes.
Convs are He-initialised and the pre-activation batch norms keep the scale, so the
activations stay in range through all 121 layers. Only numpy and `onnx` are needed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13

DENSENET121_BLOCKS = (6, 12, 24, 16)
"""Layers per dense block of DenseNet-121."""


class _GraphBuilder:
    """Accumulates nodes and initializers; names follow torchvision's module paths."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def _constant(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def node(self, op_type: str, inputs: Sequence[str], name: str, **attributes: object) -> str:
        """Append one node with a single output named `<name>.out`; returns that name."""
        output = f"{name}.out"
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [output], name=name, **attributes)
        )
        return output

    def conv(
        self, x: str, name: str, in_channels: int, out_channels: int, kernel: int, stride: int = 1
    ) -> str:
        """A bias-free conv with He-initialised weights and 'same'-style padding."""
        fan_in = in_channels * kernel * kernel
        weight = self.rng.normal(
            0.0, np.sqrt(2.0 / fan_in), (out_channels, in_channels, kernel, kernel)
        )
        w = self._constant(f"{name}.weight", weight)
        pad = kernel // 2
        return self.node(
            "Conv",
            [x, w],
            name,
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[pad, pad, pad, pad],
        )

    def batch_norm(self, x: str, name: str, channels: int) -> str:
        """BatchNormalization (epsilon 1e-5, as torch) with seeded parameters."""
        params = [
            self._constant(f"{name}.weight", self.rng.uniform(0.5, 1.0, channels)),
            self._constant(f"{name}.bias", self.rng.normal(0.0, 0.1, channels)),
            self._constant(f"{name}.running_mean", self.rng.normal(0.3, 0.1, channels)),
            self._constant(f"{name}.running_var", self.rng.uniform(0.5, 1.5, channels)),
        ]
        return self.node("BatchNormalization", [x, *params], name, epsilon=1e-5)

    def bn_relu(self, x: str, name: str, channels: int) -> str:
        return self.node("Relu", [self.batch_norm(x, name, channels)], f"{name}.relu")

    def dense_layer(
        self, features: list[str], name: str, in_channels: int, growth: int, bn_size: int
    ) -> str:
        """torchvision's `_DenseLayer`: cat, norm1, relu1, conv1 (1x1), norm2, relu2, conv2."""
        x = features[0]
        if len(features) > 1:
            x = self.node("Concat", features, f"{name}.cat", axis=1)
        x = self.bn_relu(x, f"{name}.norm1", in_channels)
        x = self.conv(x, f"{name}.conv1", in_channels, bn_size * growth, 1)
        x = self.bn_relu(x, f"{name}.norm2", bn_size * growth)
        return self.conv(x, f"{name}.conv2", bn_size * growth, growth, 3)

    def transition(self, x: str, name: str, in_channels: int, out_channels: int) -> str:
        """torchvision's `_Transition`: norm, relu, conv (1x1), 2x2 average pool."""
        x = self.bn_relu(x, f"{name}.norm", in_channels)
        x = self.conv(x, f"{name}.conv", in_channels, out_channels, 1)
        return self.node("AveragePool", [x], f"{name}.pool", kernel_shape=[2, 2], strides=[2, 2])


def build_model(
    *,
    growth: int = 32,
    blocks: Sequence[int] = DENSENET121_BLOCKS,
    stem: int = 64,
    bn_size: int = 4,
    size: int = 224,
    classes: int = 1000,
    seed: int = 0,
) -> onnx.ModelProto:
    """DenseNet (DenseNet-121 by default) as an `onnx.ModelProto` (checked)."""
    if size < 32 or size % 32:
        raise ValueError(f"input size must be a positive multiple of 32, got {size}")
    if not blocks or min(blocks) < 1 or len(blocks) > 4:
        raise ValueError(f"need one to four dense blocks of at least one layer, got {blocks}")
    if min(growth, stem, bn_size, classes) < 1:
        raise ValueError("growth, stem channels, bn_size and classes must be positive")
    b = _GraphBuilder(seed)
    x = b.conv("image", "features.conv0", 3, stem, 7, stride=2)
    x = b.bn_relu(x, "features.norm0", stem)
    x = b.node(
        "MaxPool", [x], "features.pool0", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
    )
    channels = stem
    for i, layers in enumerate(blocks):
        features = [x]
        for j in range(layers):
            name = f"features.denseblock{i + 1}.denselayer{j + 1}"
            features.append(b.dense_layer(features, name, channels + j * growth, growth, bn_size))
        x = b.node("Concat", features, f"features.denseblock{i + 1}.cat", axis=1)
        channels += layers * growth
        if i != len(blocks) - 1:
            x = b.transition(x, f"features.transition{i + 1}", channels, channels // 2)
            channels //= 2
    x = b.bn_relu(x, "features.norm5", channels)
    x = b.node("GlobalAveragePool", [x], "pool")
    x = b.node("Flatten", [x], "flatten", axis=1)
    w = b._constant(
        "classifier.weight", b.rng.normal(0.0, 1.0 / np.sqrt(channels), (classes, channels))
    )
    bias = b._constant("classifier.bias", np.zeros(classes))
    b.nodes.append(helper.make_node("Gemm", [x, w, bias], ["logits"], name="classifier", transB=1))
    graph = helper.make_graph(
        b.nodes,
        "densenet",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])],
        initializer=b.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="irc examples/build_densenet.py",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _blocks(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(n) for n in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Write the model to `-o PATH`; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default="densenet121.onnx", help="model file")
    parser.add_argument("--growth", type=int, default=32, help="growth rate (%(default)s)")
    parser.add_argument(
        "--blocks", type=_blocks, default=DENSENET121_BLOCKS, help="layers per block (6,12,24,16)"
    )
    parser.add_argument("--stem", type=int, default=64, help="stem channels (%(default)s)")
    parser.add_argument(
        "--size", type=int, default=224, help="input height and width (%(default)s)"
    )
    parser.add_argument("--classes", type=int, default=1000, help="output classes (%(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (%(default)s)")
    args = parser.parse_args(argv)
    try:
        model = build_model(
            growth=args.growth,
            blocks=args.blocks,
            stem=args.stem,
            size=args.size,
            classes=args.classes,
            seed=args.seed,
        )
    except ValueError as exc:
        parser.error(str(exc))
    try:
        onnx.save(model, args.output)
    except OSError as exc:
        sys.stderr.write(
            f"build_densenet: error: could not write '{args.output}': {exc.strerror}\n"
        )
        return 1
    ops = len(model.graph.node)
    weights = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"wrote {args.output}: {ops} nodes, {weights} weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
