"""The `nn` transformer ops (layer_norm, silu, attention): verifier cases beyond the dialect
table, reference kernels against onnxruntime, and canonicalize folding exported transformer
graphs into them with unchanged results."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_support import make_onnx_model, run_onnx
from transformer_graphs import bert_inputs, bert_like, gpt2_inputs, gpt2_like
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from irc.dialects import nn
from irc.dtypes import element_type
from irc.importers import import_model
from irc.pipelines import parse_pipeline, run_passes
from irc.targets.reference import kernel_for

RTOL, ATOL = 1e-4, 1e-5


def args(*arrays: np.ndarray) -> tuple[SSAValue, ...]:
    block = Block(arg_types=[TensorType(element_type(a.dtype), a.shape) for a in arrays])
    return tuple(block.args)


def run(op: nn.NNOp, *arrays: np.ndarray) -> np.ndarray:
    (result,) = kernel_for(op)(*arrays)
    assert result.shape == tuple(op.results[0].type.get_shape())
    assert result.dtype == np.float32
    return result


def normal(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


# ---- Reference kernels against onnxruntime ------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "axis", "with_bias", "epsilon"),
    [((2, 5, 32), -1, True, 1e-12), ((3, 4, 8), 1, False, 1e-5), ((7, 768), -1, True, 1e-5)],
)
def test_layer_norm_matches_onnx(
    shape: tuple[int, ...], axis: int, with_bias: bool, epsilon: float
) -> None:
    x = normal(*shape, scale=3.0) + 2.0
    normalized = shape[axis % len(shape) :]
    scale, bias = normal(*normalized, seed=1), normal(*normalized, seed=2)
    inputs = ["X", "S", "B"] if with_bias else ["X", "S"]
    node = helper.make_node("LayerNormalization", inputs, ["Y"], axis=axis, epsilon=epsilon)
    feeds = {"X": x, "S": scale} | ({"B": bias} if with_bias else {})
    (want,) = run_onnx(node, feeds, opset=17)
    values = args(x, scale, *([bias] if with_bias else []))
    op = nn.LayerNormOp.make(
        *values[:2], values[2] if with_bias else None, axis=axis, epsilon=epsilon
    )
    np.testing.assert_allclose(run(op, *feeds.values()), want, rtol=RTOL, atol=ATOL)


def test_silu_matches_onnx() -> None:
    x = np.concatenate([normal(1000, scale=4.0), np.array([-100.0, -88.0, 0.0, 88.0], np.float32)])
    nodes = [helper.make_node("Sigmoid", ["X"], ["S"]), helper.make_node("Mul", ["X", "S"], ["Y"])]
    (want,) = run_onnx(nodes, {"X": x})
    np.testing.assert_allclose(run(nn.SiluOp.make(*args(x)), x), want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("key_transposed", [True, False])
@pytest.mark.parametrize("mask_shape", [None, (1, 1, 1, 12), (2, 1, 10, 12)])
def test_attention_matches_onnx(key_transposed: bool, mask_shape: tuple[int, ...] | None) -> None:
    q, v = normal(2, 3, 10, 16, seed=1), normal(2, 3, 12, 8, seed=3)
    k = normal(2, 3, 12, 16, seed=2)
    key = np.ascontiguousarray(np.swapaxes(k, -1, -2)) if key_transposed else k
    scale = 0.25
    feeds = {"Q": q, "K": key, "V": v}
    nodes = [
        helper.make_node("MatMul", ["Q", "KT" if not key_transposed else "K"], ["S"]),
        helper.make_node("Mul", ["S", "C"], ["SC"]),
    ]
    if not key_transposed:
        nodes.insert(0, helper.make_node("Transpose", ["K"], ["KT"], perm=[0, 1, 3, 2]))
    scores = "SC"
    mask = None
    if mask_shape is not None:
        mask = np.where(normal(*mask_shape, seed=4) > 0.8, -1e9, 0.0).astype(np.float32)
        feeds["M"] = mask
        nodes.append(helper.make_node("Add", ["SC", "M"], ["SM"]))
        scores = "SM"
    nodes += [
        helper.make_node("Softmax", [scores], ["P"], axis=-1),
        helper.make_node("MatMul", ["P", "V"], ["Y"]),
    ]
    (want,) = run_onnx(nodes, feeds, constants={"C": np.array(scale, np.float32)})
    values = args(*feeds.values())
    op = nn.AttentionOp.make(
        *values[:3],
        values[3] if mask is not None else None,
        scale=scale,
        key_transposed=key_transposed,
    )
    np.testing.assert_allclose(run(op, *feeds.values()), want, rtol=RTOL, atol=ATOL)


# ---- Verifier ----------------------------------------------------------------------------------


def test_layer_norm_scale_must_have_the_normalised_shape() -> None:
    x, g = args(normal(2, 8), normal(1, 8))
    with pytest.raises(VerifyException, match=re.escape("expected scale of the normalised shape")):
        nn.LayerNormOp.make(x, g, None)


def test_attention_result_follows_value_depth() -> None:
    q, k, v = args(normal(4, 6), normal(5, 6), normal(5, 3))
    op = nn.AttentionOp.make(q, k, v, None)
    assert op.output.type == TensorType(element_type(np.dtype(np.float32)), (4, 3))


# ---- canonicalize on exported graphs -------------------------------------------------------------


def _canonicalized(path: Path, shapes: dict[str, tuple[int, ...]]) -> str:
    module = import_model(path, input_shapes=shapes)
    run_passes(module, parse_pipeline("canonicalize"))
    return str(module)


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_canonicalize_folds_layer_norm_and_attention(tmp_path: Path, which: str) -> None:
    """BERT: five decomposed LayerNorms (torch before opset 17) and both attentions fold;
    GPT-2: five LayerNormalization nodes and both attentions (layer 1 adds its mask to the
    scores, layer 0 selects with Where: an additive mask, folded to a constant here)."""
    path = tmp_path / f"{which}.onnx"
    onnx.save(bert_like() if which == "bert" else gpt2_like(), path)
    shapes = {"input_ids": (1, 16)}
    if which == "bert":
        shapes |= {"attention_mask": (1, 16), "token_type_ids": (1, 16)}
    text = _canonicalized(path, shapes)
    assert text.count("nn.layer_norm ") == 5
    assert text.count("nn.attention ") == 2
    assert "nn.reduce" not in text
    assert "nn.softmax" not in text
    # every Linear (MatMul by a constant, then Add; the pooler's Gemm; GPT-2's tied head)
    assert text.count("nn.fully_connected ") == (6 * 2 + 1 if which == "bert" else 4 * 2 + 1)


def test_canonicalize_folds_silu(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 8])
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "x"], ["y"])]
    model = make_onnx_model(helper.make_graph(nodes, "silu", [x], [y]), 17)
    path = tmp_path / "silu.onnx"
    onnx.save(model, path)
    text = _canonicalized(path, {})
    assert "nn.silu" in text
    assert "nn.sigmoid" not in text


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_fused_graph_matches_onnxruntime_on_reference(tmp_path: Path, which: str) -> None:
    import onnxruntime

    import irc

    build, inputs = (bert_like, bert_inputs) if which == "bert" else (gpt2_like, gpt2_inputs)
    path = tmp_path / f"{which}.onnx"
    onnx.save(build(), path)
    feeds = inputs(2, 24)
    compiled = irc.compile(path, ["reference"], input_shapes={k: v.shape for k, v in feeds.items()})
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    for name, want in zip(compiled.output_names, session.run(None, feeds), strict=True):
        got = compiled.run(feeds)[name]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
