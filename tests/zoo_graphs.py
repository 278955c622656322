"""DeiT-, Whisper-encoder-, MobileViT- and YOLOv8-like ONNX graphs with the op patterns their
usual exporters write (test-support module, beside `transformer_graphs`).

Built with `onnx.helper` (torch, transformers and ultralytics are not installed), seeded, at
any size. The patterns mimic `torch.onnx.export` of torch 2.1 (the TorchScript exporter,
`do_constant_folding=True`, eval mode, so BatchNorm is folded into the convolutions) applied
to transformers 4.36 models, and ultralytics 8.0's `model.export(format="onnx", opset=17)`:

* DeiT (`DeiTForImageClassificationWithTeacher`, opset 14, dynamic batch): Conv patch
  embedding, ``flatten(2)`` as Shape -> Slice -> Concat(-1) -> Reshape and
  ``transpose(1, 2)``, the cls and distillation tokens through ``expand(batch, -1, -1)``
  (ConstantOfShape, Mul, Equal, Where, Expand) and Concat, the position-embedding Add,
  pre-LN blocks with the decomposed LayerNorm (opset < 17), heads split through
  Shape -> Gather -> Unsqueeze -> Concat -> Reshape and Transpose, ``q @ k^T / sqrt(d)``,
  Softmax, erf GELU; the two heads read tokens 0 and 1 (Gather axis 1 -> Gemm) and are
  averaged. With `sdpa=True` the attention is torch's export of
  `scaled_dot_product_attention` (transformers >= 4.41): q and k^T each times sqrt(scale).
* Whisper encoder (`WhisperEncoder`, eager attention, opset 17, dynamic batch): two Conv1d
  with erf GELU, the permute, the sinusoidal position table added, pre-LN blocks with
  LayerNormalization, queries scaled before the product (``q_proj(x) * scaling``), heads
  folded into the batch for ``torch.bmm`` (``[batch * heads, -1, head_dim]`` from
  Shape -> Gather -> Mul), ``k_proj`` without bias, final LayerNormalization.
* MobileViT (`MobileViTForImageClassification`, opset 17, static shapes): SiLU as Sigmoid
  and Mul, MobileNetV2 inverted residuals (depthwise convs), a MobileViT block (local 3x3 and
  1x1 convs, unfolding into 2x2 patches by constant Reshape/Transpose, LayerNormalization
  transformer layers with SiLU FFNs, folding, projection, Concat with the input, fusion
  conv), ReduceMean pooling and a Gemm classifier.
* YOLOv8 (`DetectionModel`, opset 17, static shapes): Conv + SiLU, C2f (Split into two
  halves, bottlenecks with residuals, Concat), SPPF (three MaxPool 5x5 stride 1, Concat),
  Resize (nearest, asymmetric, floor) upsampling with Concat of the neck, and the Detect
  head: per level box / class convs, Reshape to ``[batch, no, -1]``, Concat, Split, DFL
  (Reshape, Transpose, Softmax over the 16 bins, the constant 1x1 Conv of 0..15),
  ``dist2bbox`` (Split, Sub, Add, Div, Concat, Mul by the strides) and Sigmoid.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper
from transformer_graphs import OnnxGraph

__all__ = [
    "deit_inputs",
    "deit_like",
    "image_inputs",
    "mobilevit_like",
    "whisper_encoder_like",
    "whisper_inputs",
    "yolov8_like",
]


def _gelu(g: OnnxGraph, x: str) -> str:
    """`torch.nn.functional.gelu` before opset 20: ``x * (1 + erf(x / sqrt 2)) * 0.5``."""
    erf = g.op("Erf", g.op("Div", x, g.scalar(1.4142135381698608)))
    return g.op("Mul", g.op("Mul", x, g.op("Add", erf, g.scalar(1.0))), g.scalar(0.5))  # type: ignore[return-value]


def _silu(g: OnnxGraph, x: str) -> str:
    """`torch.nn.SiLU` before opset ... (no SiLU op in ONNX): ``x * sigmoid(x)``."""
    return g.op("Mul", x, g.op("Sigmoid", x))  # type: ignore[return-value]


def _conv(
    g: OnnxGraph,
    x: str,
    cin: int,
    cout: int,
    kernel: int,
    stride: int = 1,
    *,
    groups: int = 1,
    pad: int | None = None,
    act: bool = True,
    bias: bool = True,
    rank: int = 2,
) -> str:
    """A convolution (BatchNorm folded in, as the exporter does in eval mode), SiLU after."""
    fan_in = cin // groups * kernel**rank
    shape = (cout, cin // groups) + (kernel,) * rank
    w = g.const((g.rng.standard_normal(shape) * math.sqrt(2.0 / fan_in)).astype(np.float32), "w")
    inputs = [x, w] + ([g.weight(cout, scale=0.1)] if bias else [])
    p = kernel // 2 if pad is None else pad
    y = g.op(
        "Conv",
        *inputs,
        dilations=[1] * rank,
        group=groups,
        kernel_shape=[kernel] * rank,
        pads=[p] * (2 * rank),
        strides=[stride] * rank,
    )
    return _silu(g, y) if act else y  # type: ignore[arg-type]


def _linear(g: OnnxGraph, x: str, n_in: int, n_out: int, bias: bool = True) -> str:
    """`nn.Linear` on a rank-3 tensor: MatMul with the transposed weight, Add of the bias."""
    y = g.op("MatMul", x, g.weight(n_in, n_out, scale=1 / math.sqrt(n_in)))
    return g.op("Add", y, g.weight(n_out, scale=0.05)) if bias else y  # type: ignore[return-value]


def _dims(g: OnnxGraph, x: str, *indices: int) -> list[str]:
    """``x.size(i)`` as traced: Shape -> Gather(i) -> Unsqueeze, one [1] int64 per index."""
    return [g.dim(x, i) for i in indices]


def _expand_minus_one(g: OnnxGraph, token: str, batch: str) -> str:
    """``token.expand(batch, -1, -1)`` as torch's symbolic writes it: the -1s replaced by 1s
    through ConstantOfShape, Mul, Equal and Where before the Expand."""
    size = g.op("Concat", batch, g.i64(-1), g.i64(-1), axis=0)
    ones = g.op(
        "ConstantOfShape",
        g.op("Shape", size),
        value=helper.make_tensor("v", TensorProto.INT64, [1], [1]),
    )
    minus = g.op("Mul", ones, g.scalar(-1, np.int64))
    fixed = g.op("Where", g.op("Equal", size, minus), ones, size)
    return g.op("Expand", token, fixed)  # type: ignore[return-value]


def _sdpa(g: OnnxGraph, q: str, k: str, v: str) -> str:
    """torch 2.1's ONNX symbolic of `scaled_dot_product_attention` without a mask (opset 14):
    the scale ``1 / sqrt(q.size(-1))`` from Shape -> Slice -> Cast -> Sqrt -> Div, and its
    square root multiplied into q and into the transposed k before the MatMul."""
    size = g.op("Slice", g.op("Shape", q), g.i64(-1), g.i64(2**63 - 1))
    root = g.op("Sqrt", g.op("Cast", size, to=TensorProto.FLOAT))
    scale = g.op("Div", g.const(np.array(1.0, np.float32)), root)
    half = g.op("Sqrt", scale)
    q_scaled = g.op("Mul", q, half)
    k_scaled = g.op("Mul", g.op("Transpose", k, perm=[0, 1, 3, 2]), half)
    probs = g.op("Softmax", g.op("MatMul", q_scaled, k_scaled), axis=-1)
    return g.op("MatMul", probs, v)  # type: ignore[return-value]


# ---- DeiT --------------------------------------------------------------------------------------


def deit_like(
    *,
    image: int = 224,
    patch: int = 16,
    hidden: int = 192,
    heads: int = 3,
    layers: int = 12,
    classes: int = 1000,
    sdpa: bool = False,
) -> onnx.ModelProto:
    """DeiT-tiny with the exporter's patterns (module docstring; the defaults are DeiT-tiny's
    sizes). Input `pixel_values` [batch, 3, image, image], output `logits` [batch, classes].
    `sdpa`: the attention as torch exports `scaled_dot_product_attention` (transformers >=
    4.41's default), `_sdpa`."""
    g = OnnxGraph(np.random.default_rng(224))
    tokens = (image // patch) ** 2
    head = hidden // heads
    conv = _conv(g, "pixel_values", 3, hidden, patch, patch, pad=0, act=False)
    shape = g.op("Shape", conv)
    leading = g.op("Slice", shape, g.i64(0), g.i64(2), g.i64(0))
    flat = g.op("Reshape", conv, g.op("Concat", leading, g.i64(-1), axis=0))
    patches = g.op("Transpose", flat, perm=[0, 2, 1])
    batch = g.dim(patches, 0)  # type: ignore[arg-type]
    cls = _expand_minus_one(g, g.weight(1, 1, hidden, scale=0.02), batch)
    distill = _expand_minus_one(g, g.weight(1, 1, hidden, scale=0.02), batch)
    embedded = g.op("Concat", cls, distill, patches, axis=1)
    h = g.op("Add", embedded, g.weight(1, tokens + 2, hidden, scale=0.02))
    for _ in range(layers):
        x = g.layer_norm_decomposed(h, hidden)  # type: ignore[arg-type]
        b, s = _dims(g, x, 0, 1)
        q = g.heads(_linear(g, x, hidden, hidden), b, s, heads, [0, 2, 1, 3])
        k = g.heads(_linear(g, x, hidden, hidden), b, s, heads, [0, 2, 1, 3])
        v = g.heads(_linear(g, x, hidden, hidden), b, s, heads, [0, 2, 1, 3])
        if sdpa:
            context = _sdpa(g, q, k, v)  # type: ignore[arg-type]
        else:
            scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2]))
            scores = g.op("Div", scores, g.scalar(float(math.sqrt(head))))
            context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Transpose", context, perm=[0, 2, 1, 3])
        cb, cs = _dims(g, context, 0, 1)  # type: ignore[arg-type]
        context = g.op("Reshape", context, g.op("Concat", cb, cs, g.i64(hidden), axis=0))
        h = g.op("Add", _linear(g, context, hidden, hidden), h)  # type: ignore[arg-type]
        x = g.layer_norm_decomposed(h, hidden)  # type: ignore[arg-type]
        up = _gelu(g, _linear(g, x, hidden, 4 * hidden))
        h = g.op("Add", _linear(g, up, 4 * hidden, hidden), h)
    out = g.layer_norm_decomposed(h, hidden)  # type: ignore[arg-type]
    logits = []
    for token in (0, 1):
        picked = g.op("Gather", out, g.scalar(token, np.int64), axis=1)
        weight = g.weight(classes, hidden, scale=1 / math.sqrt(hidden))
        logits.append(g.op("Gemm", picked, weight, g.weight(classes, scale=0.05), transB=1))
    g.nodes.append(
        helper.make_node("Div", [g.op("Add", *logits), g.scalar(2.0)], ["logits"])  # type: ignore[arg-type]
    )
    inputs = [
        helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, image, image])
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes])]
    return g.model("deit_like", inputs, outputs, 14)


def image_inputs(name: str, batch: int, image: int, seed: int = 0) -> dict[str, np.ndarray]:
    """A normalised image batch `name` [batch, 3, image, image]."""
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal((batch, 3, image, image)).astype(np.float32)}


def deit_inputs(batch: int, image: int = 224, seed: int = 0) -> dict[str, np.ndarray]:
    return image_inputs("pixel_values", batch, image, seed)


# ---- Whisper encoder ---------------------------------------------------------------------------


def _sinusoids(length: int, channels: int) -> np.ndarray:
    """Whisper's `sinusoids(length, channels)`: sin then cos of geometric time scales."""
    increment = math.log(10000) / (channels // 2 - 1)
    inverse = np.exp(-increment * np.arange(channels // 2))
    scaled = np.arange(length)[:, None] * inverse[None, :]
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1).astype(np.float32)


def _fold_heads(
    g: OnnxGraph, x: str, batch: str, length: str, heads: tuple[int, int], proj: str
) -> str:
    """WhisperAttention's ``_shape(x, length, bsz).view(bsz * heads, -1, head_dim)``: view as
    [batch, length, heads, head_dim] (`heads`: both), transpose(1, 2), reshape to `proj`."""
    shape = g.op("Concat", batch, length, g.i64(heads[0]), g.i64(heads[1]), axis=0)
    moved = g.op("Transpose", g.op("Reshape", x, shape), perm=[0, 2, 1, 3])
    return g.op("Reshape", moved, proj)  # type: ignore[return-value]


def whisper_encoder_like(
    *, mels: int = 80, frames: int = 3000, hidden: int = 384, heads: int = 6, layers: int = 4
) -> onnx.ModelProto:
    """Whisper-tiny's encoder with the exporter's patterns (module docstring; the defaults are
    whisper-tiny's sizes). Input `input_features` [batch, mels, frames], output
    `last_hidden_state` [batch, frames / 2, hidden]."""
    g = OnnxGraph(np.random.default_rng(1500))
    head = hidden // heads
    x = _gelu(g, _conv(g, "input_features", mels, hidden, 3, act=False, rank=1))
    x = _gelu(g, _conv(g, x, hidden, hidden, 3, 2, act=False, rank=1))
    x = g.op("Transpose", x, perm=[0, 2, 1])
    h = g.op("Add", x, g.const(_sinusoids(frames // 2, hidden), "embed_positions"))
    for _ in range(layers):
        x = g.layer_norm(h, hidden)  # type: ignore[arg-type]
        size = g.op("Shape", x)
        bsz = g.op("Gather", size, g.scalar(0, np.int64), axis=0)
        tgt = g.op("Gather", size, g.scalar(1, np.int64), axis=0)
        b1, t1 = (g.op("Unsqueeze", d, g.i64(0)) for d in (bsz, tgt))
        proj = g.op(
            "Concat",
            g.op("Unsqueeze", g.op("Mul", bsz, g.scalar(heads, np.int64)), g.i64(0)),
            g.i64(-1),
            g.i64(head),
            axis=0,
        )

        q = g.op("Mul", _linear(g, x, hidden, hidden), g.scalar(head**-0.5))
        q = _fold_heads(g, q, b1, t1, (heads, head), proj)  # type: ignore[arg-type]
        k = _fold_heads(
            g, _linear(g, x, hidden, hidden, bias=False), b1, g.i64(-1), (heads, head), proj
        )
        v = _fold_heads(g, _linear(g, x, hidden, hidden), b1, g.i64(-1), (heads, head), proj)
        scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 2, 1]))
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op(
            "Reshape", context, g.op("Concat", b1, g.i64(heads), t1, g.i64(head), axis=0)
        )
        context = g.op("Transpose", context, perm=[0, 2, 1, 3])
        context = g.op("Reshape", context, g.op("Concat", b1, t1, g.i64(hidden), axis=0))
        h = g.op("Add", h, _linear(g, context, hidden, hidden))  # type: ignore[arg-type]
        x = g.layer_norm(h, hidden)  # type: ignore[arg-type]
        up = _gelu(g, _linear(g, x, hidden, 4 * hidden))
        h = g.op("Add", h, _linear(g, up, 4 * hidden, hidden))
    final = g.layer_norm(h, hidden)  # type: ignore[arg-type]
    g.nodes.append(helper.make_node("Identity", [final], ["last_hidden_state"]))
    inputs = [
        helper.make_tensor_value_info("input_features", TensorProto.FLOAT, ["batch", mels, frames])
    ]
    outputs = [
        helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", frames // 2, hidden]
        )
    ]
    return g.model("whisper_encoder_like", inputs, outputs, 17)


def whisper_inputs(
    batch: int, mels: int = 80, frames: int = 3000, seed: int = 0
) -> dict[str, np.ndarray]:
    """A log-mel-like batch: values in about [-1, 1.5] as Whisper's feature extractor gives."""
    rng = np.random.default_rng(seed)
    features = rng.uniform(-1.0, 1.5, (batch, mels, frames)).astype(np.float32)
    return {"input_features": features}


# ---- MobileViT ---------------------------------------------------------------------------------


def _inverted_residual(g: OnnxGraph, x: str, cin: int, cout: int, stride: int, expand: int) -> str:
    mid = cin * expand
    y = _conv(g, x, cin, mid, 1)
    y = _conv(g, y, mid, mid, 3, stride, groups=mid)
    y = _conv(g, y, mid, cout, 1, act=False)
    return g.op("Add", x, y) if stride == 1 and cin == cout else y  # type: ignore[return-value]


def _mobilevit_block(
    g: OnnxGraph, x: str, channels: int, hidden: int, size: int, heads: int, layers: int
) -> str:
    """MobileViTLayer at batch 1: local convs, unfold into 2x2 patches, transformer, fold,
    project, fuse with the input."""
    residual = x
    y = _conv(g, x, channels, channels, 3)
    y = _conv(g, y, channels, hidden, 1, act=False, bias=False)
    ph = pw = 2
    nh, nw = size // ph, size // pw
    area, count = ph * pw, nh * nw
    patches = g.op("Reshape", y, g.i64(hidden * nh, ph, nw, pw))
    patches = g.op("Transpose", patches, perm=[0, 2, 1, 3])
    patches = g.op("Reshape", patches, g.i64(1, hidden, count, area))
    patches = g.op("Transpose", patches, perm=[0, 3, 2, 1])
    h = g.op("Reshape", patches, g.i64(area, count, -1))
    head = hidden // heads
    for _ in range(layers):
        t = g.layer_norm(h, hidden)  # type: ignore[arg-type]
        q, k, v = (
            g.op(
                "Transpose",
                g.op("Reshape", _linear(g, t, hidden, hidden), g.i64(area, count, heads, head)),
                perm=[0, 2, 1, 3],
            )
            for _ in range(3)
        )
        scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2]))
        scores = g.op("Div", scores, g.scalar(float(math.sqrt(head))))
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op(
            "Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), g.i64(area, count, hidden)
        )
        h = g.op("Add", _linear(g, context, hidden, hidden), h)  # type: ignore[arg-type]
        t = g.layer_norm(h, hidden)  # type: ignore[arg-type]
        up = _silu(g, _linear(g, t, hidden, 2 * hidden))
        h = g.op("Add", _linear(g, up, 2 * hidden, hidden), h)
    h = g.layer_norm(h, hidden)  # type: ignore[arg-type]
    folded = g.op("Reshape", h, g.i64(1, area, count, -1))
    folded = g.op("Transpose", folded, perm=[0, 3, 2, 1])
    folded = g.op("Reshape", folded, g.i64(hidden * nh, nw, ph, pw))
    folded = g.op("Transpose", folded, perm=[0, 2, 1, 3])
    folded = g.op("Reshape", folded, g.i64(1, hidden, nh * ph, nw * pw))
    y = _conv(g, folded, hidden, channels, 1)  # type: ignore[arg-type]
    fused = g.op("Concat", residual, y, axis=1)
    return _conv(g, fused, 2 * channels, channels, 3)  # type: ignore[arg-type]


def mobilevit_like(*, image: int = 64, classes: int = 100) -> onnx.ModelProto:
    """A small MobileViT (xx-small's structure, narrower) with the exporter's patterns (module
    docstring). Input `pixel_values` [1, 3, image, image], output `logits` [1, classes]."""
    g = OnnxGraph(np.random.default_rng(7))
    x = _conv(g, "pixel_values", 3, 16, 3, 2)
    x = _inverted_residual(g, x, 16, 16, 1, 2)
    x = _inverted_residual(g, x, 16, 24, 2, 2)
    x = _inverted_residual(g, x, 24, 24, 1, 2)
    x = _inverted_residual(g, x, 24, 32, 2, 2)
    x = _mobilevit_block(g, x, 32, 48, image // 8, heads=2, layers=2)
    x = _inverted_residual(g, x, 32, 48, 2, 2)
    x = _mobilevit_block(g, x, 48, 64, image // 16, heads=4, layers=2)
    x = _conv(g, x, 48, 96, 1)
    pooled = g.op("ReduceMean", x, axes=[-2, -1], keepdims=0)
    weight = g.weight(classes, 96, scale=1 / math.sqrt(96))
    g.nodes.append(
        helper.make_node("Gemm", [pooled, weight, g.weight(classes)], ["logits"], transB=1)  # type: ignore[list-item]
    )
    inputs = [
        helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [1, 3, image, image])
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])]
    return g.model("mobilevit_like", inputs, outputs, 17)


# ---- YOLOv8 ------------------------------------------------------------------------------------


def _c2f(g: OnnxGraph, x: str, cin: int, cout: int, n: int, shortcut: bool) -> str:
    c = cout // 2
    halves = g.op("Split", _conv(g, x, cin, 2 * c, 1), g.i64(c, c), axis=1, outputs=2)
    ys = list(halves)
    for _ in range(n):
        y = _conv(g, _conv(g, ys[-1], c, c, 3), c, c, 3)
        ys.append(g.op("Add", ys[-1], y) if shortcut else y)  # type: ignore[arg-type]
    return _conv(g, g.op("Concat", *ys, axis=1), (2 + n) * c, cout, 1)  # type: ignore[arg-type]


def _sppf(g: OnnxGraph, x: str, cin: int, cout: int) -> str:
    c = cin // 2
    y = [_conv(g, x, cin, c, 1)]
    for _ in range(3):
        y.append(g.op("MaxPool", y[-1], kernel_shape=[5, 5], pads=[2, 2, 2, 2], strides=[1, 1]))  # type: ignore[arg-type]
    return _conv(g, g.op("Concat", *y, axis=1), 4 * c, cout, 1)  # type: ignore[arg-type]


def _upsample(g: OnnxGraph, x: str) -> str:
    return g.op(  # type: ignore[return-value]
        "Resize",
        x,
        "",
        g.const(np.array([1, 1, 2, 2], np.float32), "scales"),
        coordinate_transformation_mode="asymmetric",
        cubic_coeff_a=-0.75,
        mode="nearest",
        nearest_mode="floor",
    )


def _anchors(sizes: list[int], strides: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """ultralytics' `make_anchors(feats, strides, 0.5)`, transposed: [2, A] and [1, A]."""
    points, stride_rows = [], []
    for size, stride in zip(sizes, strides, strict=True):
        sy, sx = np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5, indexing="ij")
        points.append(np.stack([sx, sy], -1).reshape(-1, 2))
        stride_rows.append(np.full((size * size, 1), stride))
    return (
        np.concatenate(points).T.astype(np.float32),
        np.concatenate(stride_rows).T.astype(np.float32),
    )


def yolov8_like(
    *, image: int = 64, classes: int = 8, width: int = 8, reg_max: int = 16
) -> onnx.ModelProto:
    """YOLOv8 (yolov8n's structure at `width` channels for the first level; yolov8n is 16)
    with the exporter's patterns (module docstring). Input `images` [1, 3, image, image],
    output `output0` [1, 4 + classes, anchors]."""
    g = OnnxGraph(np.random.default_rng(8))
    w = width
    x = _conv(g, "images", 3, w, 3, 2)
    x = _conv(g, x, w, 2 * w, 3, 2)
    x = _c2f(g, x, 2 * w, 2 * w, 1, True)
    x = _conv(g, x, 2 * w, 4 * w, 3, 2)
    p3 = _c2f(g, x, 4 * w, 4 * w, 2, True)
    x = _conv(g, p3, 4 * w, 8 * w, 3, 2)
    p4 = _c2f(g, x, 8 * w, 8 * w, 2, True)
    x = _conv(g, p4, 8 * w, 16 * w, 3, 2)
    x = _c2f(g, x, 16 * w, 16 * w, 1, True)
    p5 = _sppf(g, x, 16 * w, 16 * w)
    n4 = _c2f(g, g.op("Concat", _upsample(g, p5), p4, axis=1), 24 * w, 8 * w, 1, False)  # type: ignore[arg-type]
    out3 = _c2f(g, g.op("Concat", _upsample(g, n4), p3, axis=1), 12 * w, 4 * w, 1, False)  # type: ignore[arg-type]
    down = g.op("Concat", _conv(g, out3, 4 * w, 4 * w, 3, 2), n4, axis=1)
    out4 = _c2f(g, down, 12 * w, 8 * w, 1, False)  # type: ignore[arg-type]
    down = g.op("Concat", _conv(g, out4, 8 * w, 8 * w, 3, 2), p5, axis=1)
    out5 = _c2f(g, down, 24 * w, 16 * w, 1, False)  # type: ignore[arg-type]

    levels = [(out3, 4 * w), (out4, 8 * w), (out5, 16 * w)]
    no = 4 * reg_max + classes
    c2, c3 = max(16, 4 * w // 4, 4 * reg_max), max(4 * w, min(classes, 100))
    flat = []
    for feature, channels in levels:
        box = _conv(
            g,
            _conv(g, _conv(g, feature, channels, c2, 3), c2, c2, 3),
            c2,
            4 * reg_max,
            1,
            act=False,
        )
        cls = _conv(
            g, _conv(g, _conv(g, feature, channels, c3, 3), c3, c3, 3), c3, classes, 1, act=False
        )
        level = g.op("Concat", box, cls, axis=1)
        flat.append(g.op("Reshape", level, g.i64(1, no, -1)))
    x_cat = g.op("Concat", *flat, axis=2)
    box, cls = g.op("Split", x_cat, g.i64(4 * reg_max, classes), axis=1, outputs=2)
    sizes = [image // 8, image // 16, image // 32]
    anchors = sum(s * s for s in sizes)
    bins = g.op("Reshape", box, g.i64(1, 4, reg_max, anchors))
    bins = g.op("Softmax", g.op("Transpose", bins, perm=[0, 2, 1, 3]), axis=1)
    dfl_weight = g.const(np.arange(reg_max, dtype=np.float32).reshape(1, reg_max, 1, 1), "dfl")
    expected = g.op(
        "Conv",
        bins,
        dfl_weight,
        dilations=[1, 1],
        group=1,
        kernel_shape=[1, 1],
        pads=[0, 0, 0, 0],
        strides=[1, 1],
    )
    distance = g.op("Reshape", expected, g.i64(1, 4, anchors))
    points, strides = _anchors(sizes, [8, 16, 32])
    anchor_points = g.const(points[None], "anchors")
    lt, rb = g.op("Split", distance, g.i64(2, 2), axis=1, outputs=2)
    x1y1 = g.op("Sub", anchor_points, lt)
    x2y2 = g.op("Add", anchor_points, rb)
    c_xy = g.op("Div", g.op("Add", x1y1, x2y2), g.scalar(2.0))
    wh = g.op("Sub", x2y2, x1y1)
    dbox = g.op("Mul", g.op("Concat", c_xy, wh, axis=1), g.const(strides, "strides"))
    g.nodes.append(helper.make_node("Concat", [dbox, g.op("Sigmoid", cls)], ["output0"], axis=1))  # type: ignore[list-item]
    inputs = [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, image, image])]
    outputs = [
        helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 4 + classes, anchors])
    ]
    return g.model("yolov8_like", inputs, outputs, 17)
