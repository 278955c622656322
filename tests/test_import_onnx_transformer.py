"""The converters of irc.importers.onnx.transformer (Range, Trilu, CumSum, Mod, LRN, Einsum) against
onnxruntime, and BERT-like / GPT-2-like graphs with the exporters' dynamic-axis patterns
(tests/transformer_graphs.py) compiled without shapes and run at sequence lengths 16, 32
and 128 on the reference, cpu and opencl targets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from cpu_support import needs_compiler
from onnx import helper, numpy_helper
from opencl_support import needs_device
from transformer_graphs import bert_inputs, bert_like, gpt2_inputs, gpt2_like

import irc
from irc.dialects import nn
from irc.importers import ModelImportError, import_model

RTOL, ATOL = 1e-4, 1e-5


pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 18,
    typed: Sequence[np.ndarray] | None = None,
) -> onnx.ModelProto:
    """A model of `nodes`; outputs typed like `typed` (untyped without it: onnxruntime
    accepts that, the importer's checker does not)."""
    out_infos = [
        helper.make_empty_tensor_value_info(name)
        if typed is None
        else helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
        )
        for name, a in zip(outputs, typed or [None] * len(outputs), strict=True)
    ]
    graph = helper.make_graph(
        list(nodes),
        "g",
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
            )
            for name, a in inputs.items()
        ],
        out_infos,
        initializer=[numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def run_ort(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, dict(feeds))


def check(
    tmp_path: Path,
    nodes: Sequence[onnx.NodeProto],
    feeds: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    initializers: Mapping[str, np.ndarray] | None = None,
    targets: str = "reference",
) -> str:
    """Import, run and compare every output with onnxruntime; returns the module's text."""
    expected = run_ort(make_model(nodes, feeds, outputs, initializers), feeds)
    model = make_model(nodes, feeds, outputs, initializers, typed=expected)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    got = irc.compile(path, targets).run(dict(feeds))
    for name, want in zip(outputs, expected, strict=True):
        assert got[name].dtype == want.dtype, name
        assert got[name].shape == want.shape, name
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got[name], want, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], want, rtol=RTOL, atol=ATOL, err_msg=name)
    return str(import_model(path))


def scalar(value: float | int, dtype: type) -> np.ndarray:
    return np.array(value, dtype)


# ---- Range -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "delta", "dtype"),
    [(0, 1, np.int64), (7, -2, np.int32), (0.5, 0.25, np.float32), (3, 5, np.int64)],
)
def test_range_from_a_shape(tmp_path: Path, start: float, delta: float, dtype: type) -> None:
    """`arange` with the limit from Shape -> Gather (folds once the shapes are static)."""
    x = np.zeros((2, 9), np.float32)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node(
            "Cast", ["n"], ["limit"], to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        ),
        helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
    ]
    if delta < 0:
        nodes[-1] = helper.make_node("Range", ["start", "zero", "delta"], ["r"])
    constants = {
        "one": scalar(1, np.int64),
        "start": scalar(start, dtype),
        "delta": scalar(delta, dtype),
        "zero": scalar(0, dtype),
    }
    text = check(tmp_path, nodes, {"x": x}, ["r"], constants)
    assert "nn.constant" in text


def test_range_of_run_time_values(tmp_path: Path) -> None:
    model = make_model(
        [helper.make_node("Range", ["n", "limit", "delta"], ["r"])],
        {"n": scalar(0, np.int64)},
        ["r"],
        {"limit": scalar(5, np.int64), "delta": scalar(1, np.int64)},
        typed=[np.zeros(5, np.int64)],
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(ModelImportError, match="Range with a start only known at run time"):
        import_model(path)


# ---- Trilu -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("upper", "k"), [(1, 0), (1, 1), (0, 0), (0, -1), (1, -2), (0, 3)])
def test_trilu(tmp_path: Path, upper: int, k: int) -> None:
    x = np.random.default_rng(1).standard_normal((2, 5, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper),  # run time: nn.select
        helper.make_node("Trilu", ["c", "k"], ["z"], upper=upper),  # folded
    ]
    constants = {"k": scalar(k, np.int64), "c": x[0] + 1}
    text = check(tmp_path, nodes, {"x": x}, ["y", "z"], constants)
    assert nn.SelectOp.name in text


def test_trilu_without_k(tmp_path: Path) -> None:
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    check(tmp_path, [helper.make_node("Trilu", ["x"], ["y"], upper=0)], {"x": x}, ["y"])


# ---- CumSum ------------------------------------------------------------------------------------


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [1, -1])
def test_cumsum(tmp_path: Path, exclusive: int, reverse: int, axis: int) -> None:
    x = np.random.default_rng(3).standard_normal((2, 5, 3)).astype(np.float32)
    mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1]], np.int64)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    nodes = [
        helper.make_node("CumSum", ["x", "axis"], ["y"], **attrs),  # a matmul
        helper.make_node("CumSum", ["mask", "one"], ["ids"], **attrs),  # folded
    ]
    constants = {"axis": scalar(axis, np.int64), "one": scalar(1, np.int32), "mask": mask}
    check(tmp_path, nodes, {"x": x}, ["y", "ids"], constants)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize(("exclusive", "reverse", "axis"), [(0, 0, 1), (1, 0, 0), (0, 1, -1)])
def test_cumsum_of_run_time_integers(
    tmp_path: Path, dtype: type, exclusive: int, reverse: int, axis: int
) -> None:
    m = np.random.default_rng(4).integers(-1000, 1000, (3, 6)).astype(dtype)
    node = helper.make_node("CumSum", ["m", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    text = check(tmp_path, [node], {"m": m}, ["y"], {"axis": scalar(axis, np.int64)})
    assert 'kind = "sum"' in text


def test_roberta_position_ids(tmp_path: Path) -> None:
    """RoBERTa's `create_position_ids_from_input_ids`: cumsum(ids != pad) * mask + pad."""
    ids = np.array([[5, 7, 9, 1, 1], [4, 1, 1, 1, 1]], np.int64)
    nodes = [
        helper.make_node("Equal", ["ids", "pad"], ["is_pad"]),
        helper.make_node("Not", ["is_pad"], ["keep"]),
        helper.make_node("Cast", ["keep"], ["mask"], to=onnx.TensorProto.INT32),
        helper.make_node("CumSum", ["mask", "one"], ["count"]),
        helper.make_node("Mul", ["count", "mask"], ["kept"]),
        helper.make_node("Cast", ["kept"], ["kept64"], to=onnx.TensorProto.INT64),
        helper.make_node("Add", ["kept64", "pad"], ["positions"]),
        helper.make_node("Gather", ["table", "positions"], ["y"]),
    ]
    table = np.random.default_rng(6).standard_normal((8, 4)).astype(np.float32)
    constants = {"pad": scalar(1, np.int64), "one": scalar(1, np.int64), "table": table}
    check(tmp_path, nodes, {"ids": ids}, ["y"], constants)


# ---- Mod ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "fmod"),
    [
        (np.array([-7, 7, 5, -5], np.int64), np.array([3, -3, 2, 2], np.int64), 0),
        (np.array([-7.5, 7.25, 5.0], np.float32), np.array([2.0, -3.0, 1.5], np.float32), 1),
        (np.array([-7, 7, 5], np.int32), np.array([3, -3, 2], np.int32), 1),
    ],
)
def test_mod_folds(tmp_path: Path, a: np.ndarray, b: np.ndarray, fmod: int) -> None:
    nodes = [
        helper.make_node("Mod", ["a", "b"], ["m"], fmod=fmod),
        helper.make_node("Add", ["m", "x"], ["y"]),
    ]
    check(tmp_path, nodes, {"x": np.zeros_like(a)}, ["y"], {"a": a, "b": b})


# ---- LRN ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "attrs"),
    [
        (5, {"alpha": 1e-4, "beta": 0.75, "bias": 1.0}),
        (3, {"alpha": 0.5, "beta": 0.5, "bias": 2.0}),
        (7, {"alpha": 0.1, "beta": 1.0, "bias": 1.0}),
        (1, {}),
        (9, {"alpha": 0.01}),
    ],
)
def test_lrn(tmp_path: Path, size: int, attrs: dict[str, float]) -> None:
    x = np.random.default_rng(size).standard_normal((2, 7, 4, 5)).astype(np.float32) * 3
    nodes = [
        helper.make_node("LRN", ["x"], ["y"], size=size, **attrs),
        helper.make_node("LRN", ["c"], ["z"], size=size, **attrs),  # folded
    ]
    check(tmp_path, nodes, {"x": x}, ["y", "z"], {"c": x[:1] + 1})


@needs_compiler
def test_lrn_on_cpu(tmp_path: Path) -> None:
    x = np.random.default_rng(5).standard_normal((1, 16, 6, 6)).astype(np.float32)
    node = helper.make_node("LRN", ["x"], ["y"], size=5, alpha=1e-3, beta=0.75, bias=2.0)
    check(tmp_path, [node], {"x": x}, ["y"], targets="cpu")


def test_lrn_needs_a_size(tmp_path: Path) -> None:
    model = make_model(
        [helper.make_node("LRN", ["x"], ["y"], size=0)],
        {"x": np.zeros((1, 2, 2, 2), np.float32)},
        ["y"],
        typed=[np.zeros((1, 2, 2, 2), np.float32)],
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(ModelImportError, match="LRN needs a positive size, got 0"):
        import_model(path)


# ---- Einsum ------------------------------------------------------------------------------------

EINSUM_CASES = {
    "bhqd,bhkd->bhqk": [(2, 3, 5, 4), (2, 3, 6, 4)],  # attention scores
    "bhqk,bhkd->bhqd": [(2, 3, 5, 6), (2, 3, 6, 4)],  # probabilities times values
    "bij,bjk->bik": [(2, 3, 4), (2, 4, 5)],
    "bij,jk->bki": [(2, 3, 4), (4, 5)],  # weights without the batch, permuted output
    "i,j->ij": [(3,), (4,)],  # outer product (rotary frequencies)
    "bi,bi->b": [(3, 7), (3, 7)],  # row dot products
    "...ij,...jk->...ik": [(2, 3, 4, 5), (2, 3, 5, 2)],  # ellipsis
    "bij,bkj": [(2, 3, 4), (2, 5, 4)],  # implicit output: bik
    "abc,cd->ad": [(2, 3, 4), (4, 5)],  # b summed on one side first
    "bxj,xjk->bk": [(1, 3, 4), (3, 4, 2)],  # two contracted indices
    "bij,bjk->bik ": [(1, 3, 4), (5, 4, 2)],  # the batch broadcasts (1 against 5)
    "ij->ji": [(3, 4)],
    "bij->bj": [(2, 3, 4)],
    "ijk": [(2, 3, 4)],  # implicit: identity
}


@pytest.mark.parametrize("equation", list(EINSUM_CASES))
def test_einsum(tmp_path: Path, equation: str) -> None:
    rng = np.random.default_rng(len(equation))
    shapes = EINSUM_CASES[equation]
    feeds = {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    node = helper.make_node("Einsum", list(feeds), ["y"], equation=equation)
    text = check(tmp_path, [node], feeds, ["y"])
    assert "nn.batch_matmul" in text or len(shapes) == 1


@needs_compiler
def test_einsum_on_cpu(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    feeds = {
        "q": rng.standard_normal((1, 2, 8, 16)).astype(np.float32),
        "k": rng.standard_normal((1, 2, 8, 16)).astype(np.float32),
    }
    node = helper.make_node("Einsum", ["q", "k"], ["y"], equation="bhqd,bhkd->bhqk")
    check(tmp_path, [node], feeds, ["y"], targets="cpu")


def test_einsum_folds_constants(tmp_path: Path) -> None:
    """`torch.einsum("i,j->ij", positions, inv_freq)` of constants: folded at import."""
    positions = np.arange(6, dtype=np.float32)
    inverse = (1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)
    nodes = [
        helper.make_node("Einsum", ["p", "f"], ["freqs"], equation="i,j->ij"),
        helper.make_node("Add", ["freqs", "x"], ["y"]),
    ]
    x = np.zeros((6, 4), np.float32)
    text = check(tmp_path, nodes, {"x": x}, ["y"], {"p": positions, "f": inverse})
    assert "nn.batch_matmul" not in text


@pytest.mark.parametrize(
    ("equation", "shapes", "message"),
    [
        ("ii->i", [(3, 3)], "an index repeated in one term"),
        ("ij,jk,kl->il", [(2, 2), (2, 2), (2, 2)], "Einsum of 3 operands"),
        ("ij,jk->ik", [(2, 3), (4, 5)], "index 'j' has sizes 3 and 4"),
        ("ijk,jk->ik", [(2, 3), (3, 4)], "term 'ijk' does not fit an input of rank 2"),
        ("ij,jk->iz", [(2, 3), (3, 4)], "has an index no input has"),
    ],
)
def test_einsum_refusals(
    tmp_path: Path, equation: str, shapes: list[tuple[int, ...]], message: str
) -> None:
    feeds = {f"x{i}": np.zeros(s, np.float32) for i, s in enumerate(shapes)}
    model = make_model(
        [helper.make_node("Einsum", list(feeds), ["y"], equation=equation)],
        feeds,
        ["y"],
        typed=[np.zeros((2, 2), np.float32)],
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(ModelImportError, match=message):
        import_model(path)


# ---- Transformer graphs with dynamic axes ------------------------------------------------------

SEQUENCES = (16, 32, 128)


def _transformer_case(tmp_path: Path, which: str, target: str) -> None:
    build, inputs = (bert_like, bert_inputs) if which == "bert" else (gpt2_like, gpt2_inputs)
    model = build()
    path = tmp_path / f"{which}.onnx"
    onnx.save(model, path)
    compiled = irc.compile(path, target)  # no shapes: specialised per sequence length
    assert compiled.unspecialised
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    for seq in SEQUENCES:
        feeds = inputs(2, seq)
        expected = session.run(None, feeds)
        got = compiled.run(feeds)
        for name, want in zip(compiled.output_names, expected, strict=True):
            assert got[name].shape == want.shape
            error = float(np.max(np.abs(got[name] - want)) / np.max(np.abs(want)))
            assert error <= 2e-3, f"{which} {target} seq {seq} {name}: {error:.3g}"
    assert compiled.specializations == len(SEQUENCES)


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_transformer_reference(tmp_path: Path, which: str) -> None:
    _transformer_case(tmp_path, which, "reference")


@needs_compiler
@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_transformer_cpu(tmp_path: Path, which: str) -> None:
    _transformer_case(tmp_path, which, "cpu")


@needs_device
@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_transformer_opencl(tmp_path: Path, which: str) -> None:
    _transformer_case(tmp_path, which, "opencl")


def test_bert_imports_with_static_shapes(tmp_path: Path) -> None:
    """With static shapes every shape chain (Range included) folds: no shape op reaches
    the IR, only the run-time mask and embedding lookups."""
    path = tmp_path / "bert.onnx"
    onnx.save(bert_like(), path)
    shapes = {name: (1, 16) for name in ("input_ids", "attention_mask", "token_type_ids")}
    text = str(import_model(path, input_shapes=shapes))
    assert "tensor<?" not in text
    # word and token-type embeddings, the pooler's first token (position embeddings fold)
    assert text.count("nn.gather") == 3
    assert "nn.select" in text
    assert "nn.compare" in text


@pytest.mark.parametrize(("which", "approximate"), [("bert", "none"), ("gpt2", "tanh")])
def test_canonicalize_fuses_exported_gelu(tmp_path: Path, which: str, approximate: str) -> None:
    """The exporters' GELU arithmetic becomes one `nn.gelu` per layer (transformer_patterns),
    and the model still matches onnxruntime (the transformer tests above)."""
    from irc.pipelines import parse_pipeline, run_passes

    path = tmp_path / f"{which}.onnx"
    onnx.save(bert_like() if which == "bert" else gpt2_like(), path)
    shapes = {"input_ids": (1, 16)}
    if which == "bert":
        shapes |= {"attention_mask": (1, 16), "token_type_ids": (1, 16)}
    module = import_model(path, input_shapes=shapes)
    assert "nn.gelu" not in str(module)
    run_passes(module, parse_pipeline("canonicalize"))
    text = str(module)
    assert text.count("nn.gelu") == 2, text
    assert text.count(f'approximate = "{approximate}"') == (2 if approximate == "tanh" else 0)
    assert "nn.erf" not in text
    assert "nn.pow" not in text or which == "bert"  # the decomposed LayerNorm keeps its pow
