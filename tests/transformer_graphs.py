"""BERT-like and GPT-2-like ONNX graphs with the op patterns of `torch.onnx.export` of
Hugging Face models, dynamic batch and sequence axes included (test-support module).

Built with `onnx.helper` (no torch, no transformers), small and seeded:

* BERT (opset 14): Shape -> Gather -> Unsqueeze -> Range for the position ids, word /
  position / token-type embeddings (Gather), LayerNorm decomposed as the exporter writes it
  before opset 17 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add), the
  attention mask expanded to [batch, 1, seq, seq] through Concat of shape pieces, Expand,
  ConstantOfShape, Equal and Where (even layers) or cast to float, ``(1 - m) * min``
  (odd layers), heads split with Reshape (shape from Concat) and
  Transpose, scaled dot-product attention (MatMul, Div, Add, Softmax, MatMul), erf GELU
  (Div, Erf, Add, Mul, Mul), and a tanh pooler (Gather, Gemm).
* GPT-2 without past (opset 17): Range position ids, LayerNormalization, the fused qkv
  projection Split, the scale from Shape -> Gather -> Cast -> Sqrt, the causal mask as a
  Slice of the lower-triangular `bias` buffer with Where (layer 0) and as
  ConstantOfShape -> Trilu added to the scores (layer 1), tanh GELU (Pow, Tanh), and the
  tied lm head (MatMul with the transposed embedding).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["OnnxGraph", "bert_inputs", "bert_like", "gpt2_inputs", "gpt2_like"]

FLOAT_MIN = float(np.finfo(np.float32).min)


class OnnxGraph:
    """Nodes and initializers, with fresh names."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, array: np.ndarray, hint: str = "c") -> str:
        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, *shape: int, scale: float = 0.08) -> str:
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), "w")

    def op(self, op_type: str, *inputs: str, outputs: int = 1, **attrs: object) -> str | list[str]:
        names = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def i64(self, *values: int) -> str:
        return self.const(np.array(values, np.int64), "i")

    def scalar(self, value: float | int, dtype: type = np.float32) -> str:
        return self.const(np.array(value, dtype), "s")

    def dim(self, tensor: str, index: int) -> str:
        """`Shape -> Gather(index) -> Unsqueeze`: a [1] int64 piece of a shape."""
        shape = self.op("Shape", tensor)
        size = self.op("Gather", shape, self.scalar(index, np.int64), axis=0)
        return self.op("Unsqueeze", size, self.i64(0))  # type: ignore[return-value]

    def linear(self, x: str, n_in: int, n_out: int) -> str:
        return self.op("Add", self.op("MatMul", x, self.weight(n_in, n_out)), self.weight(n_out))  # type: ignore[return-value]

    def layer_norm_decomposed(self, x: str, hidden: int) -> str:
        mean = self.op("ReduceMean", x, axes=[-1], keepdims=1)
        centered = self.op("Sub", x, mean)
        var = self.op("ReduceMean", self.op("Pow", centered, self.scalar(2.0)), axes=[-1])
        std = self.op("Sqrt", self.op("Add", var, self.scalar(1e-12)))
        normed = self.op("Div", centered, std)
        gamma = self.const((1 + 0.1 * self.rng.standard_normal(hidden)).astype(np.float32))
        return self.op("Add", self.op("Mul", normed, gamma), self.weight(hidden))  # type: ignore[return-value]

    def layer_norm(self, x: str, hidden: int) -> str:
        gamma = self.const((1 + 0.1 * self.rng.standard_normal(hidden)).astype(np.float32))
        return self.op("LayerNormalization", x, gamma, self.weight(hidden), axis=-1, epsilon=1e-5)  # type: ignore[return-value]

    def heads(self, x: str, batch: str, seq: str, heads: int, perm: list[int]) -> str:
        shape = self.op("Concat", batch, seq, self.i64(heads), self.i64(-1), axis=0)
        return self.op("Transpose", self.op("Reshape", x, shape), perm=perm)  # type: ignore[return-value]

    def merge_heads(self, x: str, batch: str, seq: str, hidden: int) -> str:
        merged = self.op("Transpose", x, perm=[0, 2, 1, 3])
        shape = self.op("Concat", batch, seq, self.i64(hidden), axis=0)
        return self.op("Reshape", merged, shape)  # type: ignore[return-value]

    def model(
        self,
        name: str,
        inputs: list[onnx.ValueInfoProto],
        outputs: list[onnx.ValueInfoProto],
        opset: int,
    ) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def bert_like(
    *, hidden: int = 32, heads: int = 2, layers: int = 2, vocab: int = 60, max_len: int = 128
) -> onnx.ModelProto:
    """A BERT encoder with the exporter's patterns (module docstring); inputs `input_ids`,
    `attention_mask`, `token_type_ids` ([batch, sequence] int64), outputs
    `last_hidden_state` and `pooler_output`."""
    g = OnnxGraph(np.random.default_rng(18))
    ids = "input_ids"
    batch, seq = g.dim(ids, 0), g.dim(ids, 1)
    length = g.op("Gather", g.op("Shape", ids), g.scalar(1, np.int64), axis=0)
    positions = g.op(
        "Unsqueeze", g.op("Range", g.scalar(0, np.int64), length, g.scalar(1, np.int64)), g.i64(0)
    )
    embedded = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", g.weight(vocab, hidden, scale=0.5), ids),
            g.op("Gather", g.weight(2, hidden, scale=0.5), "token_type_ids"),
        ),
        g.op("Gather", g.weight(max_len, hidden, scale=0.5), positions),
    )
    h = g.layer_norm_decomposed(embedded, hidden)  # type: ignore[arg-type]

    # [batch, 1, seq, seq] additive mask: Expand, ConstantOfShape, Equal, Where.
    mask4 = g.op("Unsqueeze", "attention_mask", g.i64(1, 2))
    shape4 = g.op("Concat", batch, g.i64(1), seq, seq, axis=0)
    expanded = g.op("Expand", mask4, shape4)
    zeros = g.op(
        "ConstantOfShape", shape4, value=helper.make_tensor("v", TensorProto.INT64, [1], [0])
    )
    masked = g.op("Equal", expanded, zeros)
    where_bias = g.op("Where", masked, g.scalar(FLOAT_MIN), g.scalar(0.0))
    # The older form: (1 - float(mask[:, None, None, :])) * min, broadcast over the rows.
    as_float = g.op("Cast", mask4, to=TensorProto.FLOAT)
    cast_bias = g.op("Mul", g.op("Sub", g.scalar(1.0), as_float), g.scalar(FLOAT_MIN))

    head = hidden // heads
    for layer in range(layers):
        bias = where_bias if layer % 2 == 0 else cast_bias
        q = g.heads(g.linear(h, hidden, hidden), batch, seq, heads, [0, 2, 1, 3])
        k = g.heads(g.linear(h, hidden, hidden), batch, seq, heads, [0, 2, 3, 1])
        v = g.heads(g.linear(h, hidden, hidden), batch, seq, heads, [0, 2, 1, 3])
        scores = g.op("Div", g.op("MatMul", q, k), g.scalar(float(np.sqrt(head))))
        probs = g.op("Softmax", g.op("Add", scores, bias), axis=-1)
        context = g.merge_heads(g.op("MatMul", probs, v), batch, seq, hidden)  # type: ignore[arg-type]
        attended = g.op("Add", g.linear(context, hidden, hidden), h)
        h = g.layer_norm_decomposed(attended, hidden)  # type: ignore[arg-type]
        up = g.linear(h, hidden, 2 * hidden)
        erf = g.op("Erf", g.op("Div", up, g.scalar(1.4142135381698608)))
        gelu = g.op("Mul", g.op("Mul", up, g.op("Add", erf, g.scalar(1.0))), g.scalar(0.5))
        down = g.op("Add", g.linear(gelu, 2 * hidden, hidden), h)  # type: ignore[arg-type]
        h = g.layer_norm_decomposed(down, hidden)  # type: ignore[arg-type]
    g.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"]))
    first = g.op("Gather", h, g.scalar(0, np.int64), axis=1)
    pooled = g.op("Gemm", first, g.weight(hidden, hidden), g.weight(hidden), transB=1)
    g.nodes.append(helper.make_node("Tanh", [pooled], ["pooler_output"]))
    int_input = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outputs = [
        helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden]
        ),
        helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, ["batch", hidden]),
    ]
    return g.model("bert_like", int_input, outputs, 14)


def bert_inputs(batch: int, seq: int, vocab: int = 60, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - seq // 4 :] = 0  # padding at the end
    return {
        "input_ids": rng.integers(0, vocab, (batch, seq)).astype(np.int64),
        "attention_mask": mask,
        "token_type_ids": (np.arange(seq) >= seq // 2).astype(np.int64)[None].repeat(batch, 0),
    }


def gpt2_like(
    *, hidden: int = 32, heads: int = 2, layers: int = 2, vocab: int = 60, max_len: int = 128
) -> onnx.ModelProto:
    """A GPT-2 without past with the exporter's patterns (module docstring); input
    `input_ids` ([batch, sequence] int64), output `logits`."""
    g = OnnxGraph(np.random.default_rng(2))
    ids = "input_ids"
    batch, seq = g.dim(ids, 0), g.dim(ids, 1)
    length = g.op("Gather", g.op("Shape", ids), g.scalar(1, np.int64), axis=0)
    positions = g.op(
        "Unsqueeze", g.op("Range", g.scalar(0, np.int64), length, g.scalar(1, np.int64)), g.i64(0)
    )
    embedding = (np.random.default_rng(3).standard_normal((vocab, hidden)) * 0.5).astype(np.float32)
    wte = g.const(embedding, "wte")
    h = g.op(
        "Add",
        g.op("Gather", wte, ids),
        g.op("Gather", g.weight(max_len, hidden, scale=0.5), positions),
    )
    causal = g.const(np.tril(np.ones((max_len, max_len), np.bool_))[None, None], "bias")
    for layer in range(layers):
        x = g.layer_norm(h, hidden)  # type: ignore[arg-type]
        qkv = g.linear(x, hidden, 3 * hidden)
        q, k, v = g.op("Split", qkv, g.i64(hidden, hidden, hidden), axis=2, outputs=3)
        q = g.heads(q, batch, seq, heads, [0, 2, 1, 3])
        k = g.heads(k, batch, seq, heads, [0, 2, 3, 1])
        v = g.heads(v, batch, seq, heads, [0, 2, 1, 3])
        size = g.op(
            "Cast",
            g.op("Gather", g.op("Shape", v), g.scalar(3, np.int64), axis=0),
            to=TensorProto.FLOAT,
        )
        scores = g.op("Div", g.op("MatMul", q, k), g.op("Sqrt", size))
        if layer % 2 == 0:  # the sliced `bias` buffer and Where
            key = g.op("Gather", g.op("Shape", k), g.scalar(3, np.int64), axis=0)
            query = g.op("Gather", g.op("Shape", q), g.scalar(2, np.int64), axis=0)
            start = g.op("Unsqueeze", g.op("Sub", key, query), g.i64(0))
            end = g.op("Unsqueeze", key, g.i64(0))
            rows = g.op("Slice", causal, start, end, g.i64(2))
            window = g.op("Slice", rows, g.i64(0), end, g.i64(3))
            scores = g.op("Where", window, scores, g.scalar(FLOAT_MIN))
        else:  # torch.full((s, s), min).triu(1) added to the scores
            square = g.op("Concat", seq, seq, axis=0)
            full = g.op(
                "ConstantOfShape",
                square,
                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [FLOAT_MIN]),
            )
            scores = g.op("Add", scores, g.op("Trilu", full, g.scalar(1, np.int64), upper=1))
        probs = g.op("Softmax", scores, axis=-1)
        context = g.merge_heads(g.op("MatMul", probs, v), batch, seq, hidden)  # type: ignore[arg-type]
        h = g.op("Add", g.linear(context, hidden, hidden), h)
        x = g.layer_norm(h, hidden)  # type: ignore[arg-type]
        up = g.linear(x, hidden, 4 * hidden)
        inner = g.op("Add", up, g.op("Mul", g.op("Pow", up, g.scalar(3.0)), g.scalar(0.044715)))
        tanh = g.op("Tanh", g.op("Mul", inner, g.scalar(0.7978845608028654)))
        gelu = g.op("Mul", g.op("Mul", up, g.scalar(0.5)), g.op("Add", tanh, g.scalar(1.0)))
        h = g.op("Add", g.linear(gelu, 4 * hidden, hidden), h)  # type: ignore[arg-type]
    final = g.layer_norm(h, hidden)  # type: ignore[arg-type]
    head_weight = g.op("Transpose", wte, perm=[1, 0])
    g.nodes.append(helper.make_node("MatMul", [final, head_weight], ["logits"]))
    inputs = [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "sequence"])]
    outputs = [
        helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "sequence", vocab])
    ]
    return g.model("gpt2_like", inputs, outputs, 17)


def gpt2_inputs(batch: int, seq: int, vocab: int = 60, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(0, vocab, (batch, seq)).astype(np.int64)}
