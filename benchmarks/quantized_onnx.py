#!/usr/bin/env python3
"""Quantized ONNX models (QDQ, QOperator, dynamic) on irc's CPU target beside onnxruntime.

Builds, with `onnx.helper` and seeded weights, three CNNs in the style of torchvision's
(a MobileNetV2-style net, `examples/build_mobilenet.py`; a ResNet-style net of basic blocks;
an EfficientNet-style net of MBConv blocks with squeeze-excitation and swish) and a small
BERT-style encoder. The CNNs are quantized by `onnxruntime.quantization.quantize_static`
(after onnxruntime's basic graph optimisations, which fold the batch norms, and
`quant_pre_process`; random calibration data, per-channel int8 weights, int8 activations)
in both QDQ and QOperator format; the encoder by
`quantize_dynamic` (DynamicQuantizeLinear + MatMulInteger). Then, per quantized model:

* accuracy: irc (`targets=["cpu"]`) against onnxruntime's unfused run (graph optimisations
  off): the share of output elements within one quantization step (the output's
  DequantizeLinear scale), the mean difference in steps, whether the arg-max agrees, and
  onnxruntime's own fused-vs-unfused spread for scale. Float outputs of dynamic quantization
  have no step: the largest difference is set beside onnxruntime's fused-vs-unfused one;
* coverage: the share of the model's ops inside CPU regions and the number of regions (the
  partition report of `irc.compile`);
* latency: median of `CompiledModel.run` against onnxruntime's default (fused int8) session
  with 2 intra-op threads (thread spinning off, so that neither runtime's idle pool takes the
  cores from the other), interleaved in this process, and irc's run of the float model
  (`irc/ort` and `irc/flt`: the quantized model's time over each).

`OMP_NUM_THREADS` is set to the thread count before irc's runtime loads libgomp. Timings on
this shared machine move 1.5-2x between runs: compare the ratios of one run
(PERF_NOTES.md). Prints tables; asserts nothing (tests/test_quantized_onnx_models.py checks
the accuracy part at small sizes).

The encoder is small by default (32 tokens, width 128, 2 layers: overhead-bound);
`--bert 128,768,12,2` gives tokens, width, heads and layers (BERT-base: 128,768,12,12).

usage: python benchmarks/quantized_onnx.py [--size 96] [--repeat 30] [--only NAME ...]
                                           [--threads 2] [--no-latency] [--bert T,W,H,L]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
OPSET = 17

# ---- Model builders ----------------------------------------------------------------------------


class Net:
    """Accumulates nodes and seeded initializers of a float model."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, kind: str) -> str:
        self.count += 1
        return f"{kind}_{self.count}"

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def node(self, op_type: str, inputs: Sequence[str], **attrs: object) -> str:
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def conv_bn(
        self, x: str, cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1
    ) -> str:
        """Conv (no bias) + BatchNormalization, He-initialised."""
        name = self.name("conv")
        fan_in = cin // groups * kernel * kernel
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin // groups, kernel, kernel))
        pad = kernel // 2
        y = self.node(
            "Conv",
            [x, self.const(f"{name}.w", w)],
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[pad] * 4,
            group=groups,
        )
        bn = [
            self.const(f"{name}.scale", self.rng.uniform(0.5, 1.0, cout)),
            self.const(f"{name}.bias", self.rng.normal(0.0, 0.1, cout)),
            self.const(f"{name}.mean", self.rng.normal(0.0, 0.1, cout)),
            self.const(f"{name}.var", self.rng.uniform(0.8, 1.5, cout)),
        ]
        return self.node("BatchNormalization", [y, *bn])

    def act(self, x: str, kind: str) -> str:
        if kind == "relu":
            return self.node("Relu", [x])
        if kind == "swish":
            return self.node("Mul", [x, self.node("Sigmoid", [x])])
        return x

    def head(self, x: str, channels: int, classes: int) -> str:
        """GlobalAveragePool, Flatten, Gemm (logits)."""
        flat = self.node("Flatten", [self.node("GlobalAveragePool", [x])])
        w = self.rng.normal(0.0, 1.0 / np.sqrt(channels), (classes, channels))
        b = self.rng.normal(0.0, 0.01, classes)
        name = self.name("fc")
        return self.node(
            "Gemm", [flat, self.const(f"{name}.w", w), self.const(f"{name}.b", b)], transB=1
        )

    def model(
        self, name: str, inputs: dict[str, list[int]], output: str, out_shape: list[int]
    ) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, out_shape)],
            initializer=self.initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


CLASSES = 100
"""Outputs of the CNNs (enough elements for per-element statistics)."""


def mobilenet(size: int, seed: int = 0) -> onnx.ModelProto:
    """examples/build_mobilenet.py's MobileNetV2-style classifier (ends in Softmax)."""
    spec = importlib.util.spec_from_file_location(
        "build_mobilenet", ROOT / "examples" / "build_mobilenet.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_model(size=size, classes=CLASSES, seed=seed)


def resnet(size: int, seed: int = 1, widths: Sequence[int] = (16, 32, 64, 128)) -> onnx.ModelProto:
    """ResNet-18-style: 7x7/2 stem, 3x3/2 max pool, two basic blocks per stage, logits."""
    net = Net(seed)
    x = net.act(net.conv_bn("image", 3, widths[0], 7, 2), "relu")
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = widths[0]
    for stage, width in enumerate(widths):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = net.act(net.conv_bn(x, channels, width, 3, stride), "relu")
            y = net.conv_bn(y, width, width, 3)
            skip = (
                x
                if stride == 1 and channels == width
                else net.conv_bn(x, channels, width, 1, stride)
            )
            x = net.act(net.node("Add", [y, skip]), "relu")
            channels = width
    logits = net.head(x, channels, CLASSES)
    return net.model("resnet_ish", {"image": [1, 3, size, size]}, logits, [1, CLASSES])


EFFICIENT_BLOCKS = ((1, 16, 1, 3), (4, 24, 2, 3), (4, 24, 1, 3), (4, 40, 2, 5), (4, 40, 1, 5))
EFFICIENT_BLOCKS += ((4, 80, 2, 3), (4, 80, 1, 3), (4, 96, 1, 5))
"""MBConv stages: (expansion, output channels, stride, kernel), EfficientNet-B0 slimmed."""


def efficientnet(size: int, seed: int = 2) -> onnx.ModelProto:
    """EfficientNet-style: MBConv blocks (expand, depthwise, squeeze-excite, project) with swish."""
    net = Net(seed)
    x = net.act(net.conv_bn("image", 3, 16, 3, 2), "swish")
    channels = 16
    for expansion, width, stride, kernel in EFFICIENT_BLOCKS:
        hidden = channels * expansion
        y = x if expansion == 1 else net.act(net.conv_bn(x, channels, hidden, 1), "swish")
        y = net.act(net.conv_bn(y, hidden, hidden, kernel, stride, groups=hidden), "swish")
        squeezed = max(1, channels // 4)
        s = net.node("GlobalAveragePool", [y])
        name = net.name("se")
        w1 = net.rng.normal(0, np.sqrt(2.0 / hidden), (squeezed, hidden, 1, 1))
        w2 = net.rng.normal(0, np.sqrt(1.0 / squeezed), (hidden, squeezed, 1, 1))
        s = net.node(
            "Conv",
            [s, net.const(f"{name}.w1", w1), net.const(f"{name}.b1", np.zeros(squeezed))],
        )
        s = net.act(s, "swish")
        s = net.node(
            "Conv", [s, net.const(f"{name}.w2", w2), net.const(f"{name}.b2", np.zeros(hidden))]
        )
        y = net.node("Mul", [y, net.node("Sigmoid", [s])])
        y = net.conv_bn(y, hidden, width, 1)
        if stride == 1 and channels == width:
            y = net.node("Add", [x, y])
        x, channels = y, width
    x = net.act(net.conv_bn(x, channels, 128, 1), "swish")
    logits = net.head(x, 128, CLASSES)
    return net.model("efficientnet_ish", {"image": [1, 3, size, size]}, logits, [1, CLASSES])


def bert(seq: int = 32, hidden: int = 128, heads: int = 4, layers: int = 2, seed: int = 3):
    """A BERT-style encoder on embeddings `[1, seq, hidden]`: per layer, multi-head
    self-attention (Q, K, V and output MatMuls, scaled dot product, Softmax) and a GELU (erf)
    feed-forward of 4x width, each with a residual Add and LayerNormalization."""
    net = Net(seed)
    head_dim = hidden // heads

    def dense(x: str, cin: int, cout: int) -> str:
        name = net.name("dense")
        w = net.rng.normal(0, 0.5 / np.sqrt(cin), (cin, cout))
        y = net.node("MatMul", [x, net.const(f"{name}.w", w)])
        return net.node("Add", [y, net.const(f"{name}.b", net.rng.normal(0, 0.02, cout))])

    def layer_norm(x: str) -> str:
        name = net.name("ln")
        return net.node(
            "LayerNormalization",
            [x, net.const(f"{name}.g", np.ones(hidden)), net.const(f"{name}.b", np.zeros(hidden))],
            axis=-1,
        )

    split = "heads_shape"
    net.initializers.append(
        numpy_helper.from_array(np.array([1, seq, heads, head_dim], np.int64), "heads_shape")
    )
    net.initializers.append(
        numpy_helper.from_array(np.array([1, seq, hidden], np.int64), "merged_shape")
    )
    scale = net.const("attention_scale", np.array(1.0 / np.sqrt(head_dim)))
    x = "embeddings"
    for _ in range(layers):
        q, k, v = (
            net.node("Transpose", [net.node("Reshape", [dense(x, hidden, hidden), split])], perm=p)
            for p in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3])
        )
        scores = net.node("Mul", [net.node("MatMul", [q, k]), scale])
        context = net.node("MatMul", [net.node("Softmax", [scores], axis=-1), v])
        context = net.node(
            "Reshape", [net.node("Transpose", [context], perm=[0, 2, 1, 3]), "merged_shape"]
        )
        x = layer_norm(net.node("Add", [x, dense(context, hidden, hidden)]))
        h = dense(x, hidden, 4 * hidden)
        gelu = net.node(
            "Mul",
            [
                net.node("Mul", [h, net.const(net.name("half"), np.array(0.5))]),
                net.node(
                    "Add",
                    [
                        net.node(
                            "Erf",
                            [
                                net.node(
                                    "Mul",
                                    [h, net.const(net.name("s"), np.array(0.7071067811865476))],
                                )
                            ],
                        ),
                        net.const(net.name("one"), np.array(1.0)),
                    ],
                ),
            ],
        )
        x = layer_norm(net.node("Add", [x, dense(gelu, 4 * hidden, hidden)]))
    return net.model("bert_ish", {"embeddings": [1, seq, hidden]}, x, [1, seq, hidden])


# ---- Quantization ------------------------------------------------------------------------------


def _quantization():
    import onnxruntime.quantization as quantization

    return quantization


def random_reader(name: str, shape: Sequence[int], count: int = 8):
    """A CalibrationDataReader of `count` seeded standard-normal batches for input `name`."""
    quantization = _quantization()

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.index = 0

        def get_next(self) -> dict[str, np.ndarray] | None:
            if self.index == count:
                return None
            self.index += 1
            rng = np.random.default_rng(1000 + self.index)
            return {name: np.asarray(rng.normal(0, 1, shape), np.float32)}

    return Reader()


def fold_batch_norms(source: Path, target: Path) -> None:
    """onnxruntime's basic graph optimisations of `source` (constant folding, batch norms
    folded into the convs) saved to `target`: what `quant_pre_process` runs itself, except
    that onnxruntime 1.30's (`skip_symbolic_shape=True`) returns the model unoptimised, and
    `quantize_static` then quantizes the batch norms' parameters in QDQ but not in QOperator
    format (two different integer programs)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.optimized_model_filepath = str(target)
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def quantize_cnn(model: onnx.ModelProto, folder: Path, name: str) -> dict[str, Path]:
    """float, QDQ and QOperator files of a CNN (pre-processed: batch norms folded)."""
    quantization = _quantization()
    from onnxruntime.quantization.shape_inference import quant_pre_process

    paths = {kind: folder / f"{name}_{kind}.onnx" for kind in ("float", "qdq", "qop")}
    raw = folder / f"{name}_raw.onnx"
    onnx.save_model(model, str(raw))
    optimized = folder / f"{name}_optimized.onnx"
    fold_batch_norms(raw, optimized)
    quant_pre_process(
        str(optimized), str(paths["float"]), skip_optimization=True, skip_symbolic_shape=True
    )
    info = model.graph.input[0]
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    for kind, fmt in (
        ("qdq", quantization.QuantFormat.QDQ),
        ("qop", quantization.QuantFormat.QOperator),
    ):
        quantization.quantize_static(
            str(paths["float"]),
            str(paths[kind]),
            random_reader(info.name, shape),
            quant_format=fmt,
            per_channel=True,
            activation_type=quantization.QuantType.QInt8,
            weight_type=quantization.QuantType.QInt8,
        )
    return paths


def quantize_transformer(model: onnx.ModelProto, folder: Path, name: str) -> dict[str, Path]:
    """float and dynamically quantized files of a transformer."""
    quantization = _quantization()
    paths = {"float": folder / f"{name}_float.onnx", "dynamic": folder / f"{name}_dynamic.onnx"}
    onnx.save_model(model, str(paths["float"]))
    quantization.quantize_dynamic(
        str(paths["float"]), str(paths["dynamic"]), weight_type=quantization.QuantType.QInt8
    )
    return paths


# ---- Measuring ---------------------------------------------------------------------------------


def ort_session(path: Path, *, fused: bool, threads: int = 1):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    # Interleaved with irc in one process: spinning pool threads would take the cores from
    # whichever runtime runs next (irc's OpenMP threads spin only briefly).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if not fused:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def input_of(path: Path, seed: int) -> dict[str, np.ndarray]:
    model = onnx.load(str(path), load_external_data=False)
    info = model.graph.input[0]
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    return {info.name: np.asarray(np.random.default_rng(seed).normal(0, 1, shape), np.float32)}


def output_step(path: Path) -> float | None:
    """The scale of the DequantizeLinear writing the (first) graph output, if one does."""
    model = onnx.load(str(path))
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    output = model.graph.output[0].name
    for node in model.graph.node:
        if output in node.output and node.op_type == "DequantizeLinear":
            return float(consts[node.input[1]].reshape(-1)[0])
    return None


@dataclass
class Accuracy:
    within_one: float
    """Share of elements within one step of onnxruntime's unfused run (NaN: float output)."""
    mean_steps: float
    same_argmax: bool
    max_diff: float
    """Largest difference in the output's units."""
    ort_spread: float
    """onnxruntime's fused run against its unfused run, largest difference."""


def accuracy(compiled, path: Path, seeds: Sequence[int] = tuple(range(5))) -> Accuracy:
    """irc's `compiled` model against onnxruntime's unfused run of `path`."""
    unfused, fused = ort_session(path, fused=False), ort_session(path, fused=True)
    step = output_step(path)
    within, means, argmax, worst, spread = [], [], True, 0.0, 0.0
    for seed in seeds:
        feeds = input_of(path, seed)
        want = unfused.run(None, feeds)[0].astype(np.float64)
        got = np.asarray(next(iter(compiled.run(feeds).values())), np.float64)
        other = fused.run(None, feeds)[0].astype(np.float64)
        diff = np.abs(got - want)
        worst = max(worst, float(diff.max()))
        spread = max(spread, float(np.abs(other - want).max()))
        argmax &= bool(np.argmax(got.reshape(-1)) == np.argmax(want.reshape(-1)))
        if step is not None:
            steps = diff / step
            within.append(float(np.mean(steps <= 1.0 + 1e-3)))
            means.append(float(steps.mean()))
    if step is None:
        return Accuracy(float("nan"), float("nan"), argmax, worst, spread)
    return Accuracy(min(within), max(means), argmax, worst, spread)


def coverage(path: Path, report: Path) -> tuple[int, int, int]:
    """(ops in CPU regions, ops, regions) of `irc.compile(path, targets=["cpu"])`."""
    data = json.loads(report.read_text())
    inside = total = regions = 0
    for function in data["functions"]:
        total += function["ops"]
        regions += len(function["regions"])
        inside += sum(len(r["ops"]) for r in function["regions"])
    return inside, total, regions


def interleaved(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median ms of each callable, run in turns (warm-up excluded)."""
    for fn in runs.values():
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


# ---- Main --------------------------------------------------------------------------------------


def build_all(
    folder: Path, size: int, only: Sequence[str] = (), bert_shape: Sequence[int] = (32, 128, 4, 2)
) -> dict[str, dict[str, Path]]:
    """Every model's files by model name (`only`: a subset; `bert_shape`: the encoder's
    tokens, width, heads and layers)."""
    seq, hidden, heads, layers = bert_shape
    builders: dict[str, Callable[[], dict[str, Path]]] = {
        "mobilenet": lambda: quantize_cnn(mobilenet(size), folder, "mobilenet"),
        "resnet": lambda: quantize_cnn(resnet(size), folder, "resnet"),
        "efficientnet": lambda: quantize_cnn(efficientnet(size), folder, "efficientnet"),
        "bert": lambda: quantize_transformer(
            bert(seq=seq, hidden=hidden, heads=heads, layers=layers), folder, "bert"
        ),
    }
    return {name: build() for name, build in builders.items() if not only or name in only}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=96, help="CNN input size (multiple of 32)")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=())
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument(
        "--bert",
        default="32,128,4,2",
        help="the encoder's tokens,width,heads,layers (BERT-base: 128,768,12,12)",
    )
    args = parser.parse_args(argv)
    bert_shape = [int(v) for v in args.bert.split(",")]
    if len(bert_shape) != 4 or bert_shape[1] % bert_shape[2]:
        parser.error("--bert takes tokens,width,heads,layers with heads dividing width")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before libgomp loads

    import logging

    import irc

    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's pre-processing advice
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        models = build_all(folder, args.size, args.only, bert_shape)
        print(
            f"{'model':<22} {'<=1 step':>9} {'mean':>6} {'argmax':>6} {'max diff':>9} "
            f"{'ort spread':>10} {'in cpu':>11} {'regions':>7} {'irc ms':>8} {'ort ms':>8} "
            f"{'irc/ort':>7} {'float ms':>8} {'irc/flt':>7}"
        )
        for name, paths in models.items():
            float_compiled = irc.compile(str(paths["float"]), targets=["cpu"])
            for kind, path in paths.items():
                if kind == "float":
                    continue
                report = folder / f"{name}_{kind}.json"
                compiled = irc.compile(str(path), targets=["cpu"], report=str(report))
                acc = accuracy(compiled, path)
                inside, total, regions = coverage(path, report)
                line = (
                    f"{name + ' ' + kind:<22} {acc.within_one:>9.2%} {acc.mean_steps:>6.3f} "
                    f"{'same' if acc.same_argmax else 'DIFF':>6} {acc.max_diff:>9.4g} "
                    f"{acc.ort_spread:>10.4g} {inside:>4}/{total:<4} ({inside / total:>4.0%}) "
                    f"{regions:>7}"
                )
                if not args.no_latency:
                    feeds = input_of(path, 0)
                    session = ort_session(path, fused=True, threads=args.threads)
                    ms = interleaved(
                        {
                            "irc": lambda c=compiled, f=feeds: c.run(f),
                            "ort": lambda s=session, f=feeds: s.run(None, f),
                            "float": lambda c=float_compiled, f=feeds: c.run(f),
                        },
                        args.repeat,
                    )
                    line += (
                        f" {ms['irc']:>8.3f} {ms['ort']:>8.3f} {ms['irc'] / ms['ort']:>7.2f} "
                        f"{ms['float']:>8.3f} {ms['irc'] / ms['float']:>7.2f}"
                    )
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
