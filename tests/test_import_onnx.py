"""The ONNX importer: per-op graphs built with onnx.helper, imported through
`irc.importers.import_model`, run on the reference target and compared with onnxruntime;
the unsupported-op report, corrupt files, `bind` / `input_shapes`, and a real model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_support import make_onnx_model
from xdsl.dialects.builtin import ModuleOp

import irc
from irc.dialects import nn
from irc.importers import ModelImportError, import_model
from irc.importers.onnx import CONVERTERS
from irc.importers.onnx import driver as onnx_driver

ort = pytest.importorskip("onnxruntime")

RTOL, ATOL = 1e-4, 1e-5
MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
RNG = np.random.default_rng(0)

Feeds = Mapping[str, np.ndarray]


# ---- Helpers -----------------------------------------------------------------------------------


def make_model(
    nodes: onnx.NodeProto | Sequence[onnx.NodeProto],
    inputs: Mapping[str, np.ndarray | tuple[int, Sequence[int | str | None]]],
    outputs: Sequence[str] | None = None,
    *,
    constants: Mapping[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """A model of `nodes`; inputs typed like the arrays (or `(elem_type, shape)`), outputs by
    name (default: the last node's outputs) with unknown shapes, constants as initializers."""
    nodes = [nodes] if isinstance(nodes, onnx.NodeProto) else list(nodes)
    infos = []
    for name, spec in inputs.items():
        if isinstance(spec, np.ndarray):
            spec = (helper.np_dtype_to_tensor_dtype(spec.dtype), list(spec.shape))
        infos.append(helper.make_tensor_value_info(name, spec[0], spec[1]))
    graph = helper.make_graph(
        nodes,
        "g",
        infos,
        [helper.make_empty_tensor_value_info(n) for n in (outputs or nodes[-1].output)],
        initializer=[numpy_helper.from_array(a, n) for n, a in (constants or {}).items()],
    )
    model = make_onnx_model(graph, opset)
    # The checker wants typed graph outputs: let shape inference fill them in.
    return onnx.shape_inference.infer_shapes(model)


def run_ort(model: onnx.ModelProto, feeds: Feeds) -> dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(feeds))))


def import_bytes(tmp_path: Path, model: onnx.ModelProto | bytes, **kwargs: object) -> ModuleOp:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    return import_model(path, **kwargs)  # type: ignore[arg-type]


def check(
    tmp_path: Path,
    model: onnx.ModelProto,
    feeds: Feeds,
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    **kwargs: object,
) -> ModuleOp:
    """Import, run on the reference target, compare every output with onnxruntime."""
    module = import_bytes(tmp_path, model, **kwargs)
    bound = kwargs.get("bind") or {}
    got = irc.run(module, {k: v for k, v in feeds.items() if k not in bound})  # type: ignore[operator]
    expected = run_ort(model, feeds)
    for name, want in expected.items():
        assert got[name].dtype == want.dtype, name
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)
    return module


def rand(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def ops_of(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("nn.")]


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str] = ("y",), **attrs: object):
    return helper.make_node(op_type, list(inputs), list(outputs), name=f"{op_type}_0", **attrs)


# ---- Convolution -------------------------------------------------------------------------------

CONV_CASES = {
    "plain": ({}, (1, 3, 8, 8), (4, 3, 3, 3)),
    "strided_padded": ({"strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 3, 9, 9), (4, 3, 3, 3)),
    "asymmetric_pads": ({"pads": [0, 1, 2, 0]}, (2, 3, 7, 6), (5, 3, 3, 2)),
    "dilated": ({"dilations": [2, 3], "pads": [2, 3, 2, 3]}, (1, 2, 9, 10), (3, 2, 3, 3)),
    "grouped": ({"group": 2}, (1, 4, 6, 6), (6, 2, 3, 3)),
    "depthwise": ({"group": 4, "pads": [1, 1, 1, 1]}, (1, 4, 6, 6), (8, 1, 3, 3)),
    "same_upper": ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 3, 8, 7), (4, 3, 4, 3)),
    "same_lower": ({"auto_pad": "SAME_LOWER", "strides": [2, 1]}, (1, 3, 8, 7), (4, 3, 4, 2)),
    "valid": ({"auto_pad": "VALID", "strides": [2, 2]}, (1, 3, 9, 8), (4, 3, 3, 3)),
    "conv1d": ({"strides": [2], "pads": [1, 2], "dilations": [2]}, (2, 3, 11), (4, 3, 3)),
}


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv(tmp_path: Path, case: str, bias: bool) -> None:
    attrs, x_shape, w_shape = CONV_CASES[case]
    constants = {"w": rand(*w_shape)}
    if bias:
        constants["b"] = rand(w_shape[0])
    inputs = ["x", "w", "b"] if bias else ["x", "w"]
    model = make_model(node("Conv", inputs, **attrs), {"x": rand(*x_shape)}, constants=constants)
    module = check(tmp_path, model, {"x": rand(*x_shape)})
    assert "nn.conv2d" in ops_of(module)


def test_conv_with_runtime_filter(tmp_path: Path) -> None:
    x, w = rand(1, 2, 5, 5), rand(3, 2, 3, 3)
    check(tmp_path, make_model(node("Conv", ["x", "w"]), {"x": x, "w": w}), {"x": x, "w": w})


CONV_TRANSPOSE_CASES = {
    "plain": ({}, (1, 3, 4, 4), (3, 2, 3, 3)),
    "strided": ({"strides": [2, 2]}, (1, 3, 4, 5), (3, 2, 3, 3)),
    "padded": ({"strides": [2, 2], "pads": [1, 0, 1, 2]}, (1, 2, 4, 4), (2, 3, 3, 3)),
    "output_padding": (
        {"strides": [3, 2], "output_padding": [1, 1], "pads": [1, 1, 1, 1]},
        (1, 2, 3, 4),
        (2, 2, 3, 3),
    ),
    "output_shape": ({"strides": [2, 2], "output_shape": [10, 9]}, (1, 2, 4, 4), (2, 2, 3, 3)),
    "output_shape_upper": (
        {"strides": [2, 2], "output_shape": [8, 7], "auto_pad": "SAME_UPPER"},
        (1, 2, 4, 4),
        (2, 2, 3, 3),
    ),
    "same_upper": ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 2, 3, 4), (2, 2, 4, 3)),
    "same_lower": ({"strides": [2, 2], "auto_pad": "SAME_LOWER"}, (1, 2, 3, 4), (2, 2, 4, 3)),
    "grouped": ({"group": 2, "strides": [2, 1]}, (1, 4, 3, 3), (4, 3, 2, 2)),
    "dilated": ({"dilations": [2, 2]}, (1, 2, 4, 4), (2, 2, 3, 3)),
    "conv1d": ({"strides": [2], "pads": [1, 0]}, (1, 2, 5), (2, 3, 3)),
}


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES)
def test_conv_transpose(tmp_path: Path, case: str) -> None:
    attrs, x_shape, w_shape = CONV_TRANSPOSE_CASES[case]
    out_channels = w_shape[1] * attrs.get("group", 1)  # type: ignore[operator]
    constants = {"w": rand(*w_shape), "b": rand(out_channels)}
    model = make_model(
        node("ConvTranspose", ["x", "w", "b"], **attrs),
        {"x": rand(*x_shape)},
        constants=constants,
    )
    module = check(tmp_path, model, {"x": rand(*x_shape)})
    assert "nn.conv2d_transpose" in ops_of(module)


# ---- Matrix products ---------------------------------------------------------------------------

GEMM_CASES = {
    "fc": ({"transB": 1}, (2, 3), (4, 3), (4,)),
    "fc_untransposed_b": ({}, (2, 3), (3, 4), (1, 4)),
    "alpha_beta": ({"alpha": 0.5, "beta": 2.0, "transB": 1}, (2, 3), (4, 3), (4,)),
    "bias_matrix": ({"beta": 0.5}, (2, 3), (3, 4), (2, 4)),
    "bias_column": ({}, (2, 3), (3, 4), (2, 1)),
    "bias_scalar": ({}, (2, 3), (3, 4), ()),
    "no_bias": ({"transB": 1}, (2, 3), (4, 3), None),
    "trans_a": ({"transA": 1, "alpha": 2.0}, (3, 2), (3, 4), (4,)),
    "trans_both": ({"transA": 1, "transB": 1}, (3, 2), (4, 3), (4,)),
}


@pytest.mark.parametrize("case", GEMM_CASES)
def test_gemm(tmp_path: Path, case: str) -> None:
    attrs, a_shape, b_shape, c_shape = GEMM_CASES[case]
    constants = {"b": rand(*b_shape)}
    names = ["a", "b"]
    if c_shape is not None:
        constants["c"] = rand(*c_shape)
        names.append("c")
    model = make_model(node("Gemm", names, **attrs), {"a": rand(*a_shape)}, constants=constants)
    check(tmp_path, model, {"a": rand(*a_shape)})


def test_gemm_with_fully_connected(tmp_path: Path) -> None:
    model = make_model(
        node("Gemm", ["a", "b", "c"], transB=1),
        {"a": rand(2, 3)},
        constants={"b": rand(4, 3), "c": rand(4)},
    )
    assert ops_of(import_bytes(tmp_path, model)) == ["nn.constant"] * 2 + ["nn.fully_connected"]


def test_gemm_with_runtime_operands(tmp_path: Path) -> None:
    a, b, c = rand(2, 3), rand(4, 3), rand(2, 4)
    model = make_model(
        node("Gemm", ["a", "b", "c"], transB=1, alpha=1.5, beta=0.5),
        {
            "a": a,
            "b": b,
            "c": c,
        },
    )
    check(tmp_path, model, {"a": a, "b": b, "c": c})


MATMUL_SHAPES = {
    "2d": ((3, 4), (4, 5)),
    "batched": ((2, 3, 4), (2, 4, 5)),
    "broadcast": ((2, 1, 3, 4), (3, 4, 5)),
    "lhs_1d": ((4,), (2, 4, 5)),
    "rhs_1d": ((2, 3, 4), (4,)),
    "both_1d": ((4,), (4,)),
}


@pytest.mark.parametrize("case", MATMUL_SHAPES)
def test_matmul(tmp_path: Path, case: str) -> None:
    a_shape, b_shape = MATMUL_SHAPES[case]
    a, b = rand(*a_shape), rand(*b_shape)
    model = make_model(node("MatMul", ["a", "b"]), {"a": a, "b": b})
    check(tmp_path, model, {"a": a, "b": b})


# ---- Elementwise -------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"])
def test_binary_broadcasting(tmp_path: Path, op_type: str) -> None:
    a = np.abs(rand(2, 3, 4)) + 0.5
    b = rand(3, 1)
    model = make_model(node(op_type, ["a", "b"]), {"a": a, "b": b})
    check(tmp_path, model, {"a": a, "b": b})


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
def test_binary_integers(tmp_path: Path, op_type: str) -> None:
    a = RNG.integers(-20, 20, (3, 4)).astype(np.int32)
    b = RNG.integers(1, 7, (4,)).astype(np.int32) * np.array([1, -1, 1, -1], np.int32)
    model = make_model(node(op_type, ["a", "b"]), {"a": a, "b": b})
    check(tmp_path, model, {"a": a, "b": b})


def test_pow_with_integer_exponent(tmp_path: Path) -> None:
    x = rand(2, 3)
    model = make_model(node("Pow", ["x", "e"]), {"x": x}, constants={"e": np.array(3, np.int64)})
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("count", [1, 3])
def test_variadic(tmp_path: Path, op_type: str, count: int) -> None:
    feeds = {f"x{i}": rand(*(2, 3)[i % 2 :]) for i in range(count)}
    model = make_model(node(op_type, list(feeds)), feeds)
    check(tmp_path, model, feeds)


UNARY_OPS = {
    "Relu": {},
    "LeakyRelu": {"alpha": 0.2},
    "Sigmoid": {},
    "Tanh": {},
    "HardSwish": {},
    "HardSigmoid": {"alpha": 0.3, "beta": 0.4},
    "Erf": {},
    "Exp": {},
    "Log": {},
    "Sqrt": {},
    "Reciprocal": {},
    "Abs": {},
    "Neg": {},
    "Elu": {"alpha": 0.7},
    "Selu": {},
    "Softplus": {},
    "Softsign": {},
    "Identity": {},
}


@pytest.mark.parametrize("op_type", UNARY_OPS)
def test_unary(tmp_path: Path, op_type: str) -> None:
    x = rand(2, 3, 4) * 3
    if op_type in ("Log", "Sqrt", "Reciprocal"):
        x = np.abs(x) + 0.1
    model = make_model(node(op_type, ["x"], **UNARY_OPS[op_type]), {"x": x})
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(tmp_path: Path, approximate: str) -> None:
    x = rand(2, 5) * 3
    model = make_model(node("Gelu", ["x"], approximate=approximate), {"x": x}, opset=20)
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize("slope_shape", [(1,), (3, 1, 1), (4,)])
def test_prelu(tmp_path: Path, slope_shape: tuple[int, ...]) -> None:
    x = rand(2, 3, 5, 4)
    model = make_model(node("PRelu", ["x", "s"]), {"x": x}, constants={"s": rand(*slope_shape)})
    check(tmp_path, model, {"x": x})


CLIP_CASES = {
    "both": ["x", "lo", "hi"],
    "min_only": ["x", "lo"],
    "max_only": ["x", "", "hi"],
    "none": ["x"],
}


@pytest.mark.parametrize("case", CLIP_CASES)
def test_clip(tmp_path: Path, case: str) -> None:
    x = rand(3, 4) * 4
    consts = {"lo": np.array(-1.0, np.float32), "hi": np.array(2.5, np.float32)}
    names = CLIP_CASES[case]
    model = make_model(
        node("Clip", names), {"x": x}, constants={n: consts[n] for n in names if n in consts}
    )
    module = check(tmp_path, model, {"x": x})
    assert not any(op in ops_of(module) for op in ("nn.maximum", "nn.minimum"))


def test_clip_with_runtime_bounds(tmp_path: Path) -> None:
    feeds = {"x": rand(3, 4) * 4, "lo": np.array(-1.0, np.float32)}
    model = make_model(node("Clip", ["x", "lo"]), feeds)
    check(tmp_path, model, feeds)


def test_clip_integers(tmp_path: Path) -> None:
    x = RNG.integers(-10, 10, (4, 4)).astype(np.int32)
    model = make_model(
        node("Clip", ["x", "lo", "hi"]),
        {"x": x},
        constants={"lo": np.array(-3, np.int32), "hi": np.array(5, np.int32)},
    )
    check(tmp_path, model, {"x": x})


# ---- Pooling -----------------------------------------------------------------------------------

POOL_CASES = {
    "plain": {"kernel_shape": [2, 2], "strides": [2, 2]},
    "padded": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    "asymmetric": {"kernel_shape": [3, 2], "pads": [0, 1, 2, 0], "strides": [2, 1]},
    "ceil": {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
    "ceil_padded": {
        "kernel_shape": [3, 3],
        "strides": [2, 2],
        "pads": [1, 1, 1, 1],
        "ceil_mode": 1,
    },
    "ceil_drops_last": {
        "kernel_shape": [2, 2],
        "strides": [2, 2],
        "pads": [1, 1, 1, 1],
        "ceil_mode": 1,
    },
    "same_upper": {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    "same_lower": {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
    "valid": {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "VALID"},
    "dilated": {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]},
}


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool", "AveragePool+count_pad"])
def test_pool(tmp_path: Path, case: str, op_type: str) -> None:
    attrs = dict(POOL_CASES[case])
    if op_type == "AveragePool+count_pad":
        op_type, attrs["count_include_pad"] = "AveragePool", 1
    x = rand(1, 3, 7, 9)
    model = make_model(node(op_type, ["x"], **attrs), {"x": x}, opset=19)
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
def test_pool_1d(tmp_path: Path, op_type: str) -> None:
    x = rand(2, 3, 10)
    attrs = {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}
    check(tmp_path, make_model(node(op_type, ["x"], **attrs), {"x": x}), {"x": x})


def test_max_pool_indices_output_is_unsupported_when_used(tmp_path: Path) -> None:
    x = rand(1, 1, 4, 4)
    model = make_model(node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2]), {"x": x})
    with pytest.raises(ModelImportError, match=r"MaxPool x1 \(the Indices output is used\)"):
        import_bytes(tmp_path, model)


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool(tmp_path: Path, op_type: str) -> None:
    x = rand(2, 3, 5, 4)
    module = check(tmp_path, make_model(node(op_type, ["x"]), {"x": x}), {"x": x})
    assert ops_of(module) == ["nn.reduce"]


# ---- Normalisation, reductions, softmax --------------------------------------------------------


def test_batch_norm(tmp_path: Path) -> None:
    x = rand(2, 3, 4, 5)
    constants = {
        "s": rand(3),
        "b": rand(3),
        "m": rand(3),
        "v": np.abs(rand(3)) + 0.1,
    }
    model = make_model(
        node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3),
        {"x": x},
        constants=constants,
    )
    module = check(tmp_path, model, {"x": x})
    assert "nn.batch_norm" in ops_of(module)


REDUCE_OPS = [
    "ReduceMean",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceSumSquare",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
]


@pytest.mark.parametrize("op_type", REDUCE_OPS)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("opset", [13, 18])
def test_reduce(tmp_path: Path, op_type: str, keepdims: int, opset: int) -> None:
    x = np.abs(rand(2, 3, 4)) + 0.5
    axes = [0, -1]
    if opset >= 18 or (op_type == "ReduceSum" and opset >= 13):
        n = node(op_type, ["x", "axes"], keepdims=keepdims)
        model = make_model(n, {"x": x}, constants={"axes": np.array(axes)}, opset=opset)
    else:
        model = make_model(
            node(op_type, ["x"], keepdims=keepdims, axes=axes), {"x": x}, opset=opset
        )
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize("noop", [0, 1])
def test_reduce_without_axes(tmp_path: Path, noop: int) -> None:
    x = rand(2, 3)
    model = make_model(node("ReduceSum", ["x"], noop_with_empty_axes=noop), {"x": x})
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize(("opset", "axis"), [(11, 1), (11, -1), (11, 0), (13, 1), (13, -1)])
def test_softmax(tmp_path: Path, op_type: str, opset: int, axis: int) -> None:
    x = rand(2, 3, 4)
    model = make_model(node(op_type, ["x"], axis=axis), {"x": x}, opset=opset)
    check(tmp_path, model, {"x": x})


# ---- Shapes and data movement ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "allowzero"), [([0, -1], 0), ([2, 0, 2, -1], 0), ([-1], 0), ([4, 6], 1)]
)
def test_reshape(tmp_path: Path, shape: list[int], allowzero: int) -> None:
    x = rand(4, 3, 2)
    model = make_model(
        node("Reshape", ["x", "s"], allowzero=allowzero),
        {"x": x},
        constants={"s": np.array(shape, np.int64)},
    )
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(tmp_path: Path, axis: int) -> None:
    x = rand(2, 3, 4)
    check(tmp_path, make_model(node("Flatten", ["x"], axis=axis), {"x": x}), {"x": x})


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1]])
def test_transpose(tmp_path: Path, perm: list[int] | None) -> None:
    x = rand(2, 3, 4)
    attrs = {} if perm is None else {"perm": perm}
    check(tmp_path, make_model(node("Transpose", ["x"], **attrs), {"x": x}), {"x": x})


def test_concat(tmp_path: Path) -> None:
    feeds = {"a": rand(2, 3), "b": rand(2, 1)}
    model = make_model(node("Concat", ["a", "b", "c"], axis=-1), feeds, constants={"c": rand(2, 2)})
    check(tmp_path, model, feeds)


SPLIT_CASES = {
    "equal_attr": (11, {"axis": 1}, None, 3),
    "sizes_attr": (11, {"axis": 1, "split": [1, 4, 1]}, None, 3),
    "sizes_input": (13, {"axis": -1}, [3, 2], 2),
    "equal_input": (13, {"axis": 1}, None, 2),
    "num_outputs": (18, {"axis": -1, "num_outputs": 3}, None, 3),
}


@pytest.mark.parametrize("case", SPLIT_CASES)
def test_split(tmp_path: Path, case: str) -> None:
    opset, attrs, sizes, count = SPLIT_CASES[case]
    x = rand(2, 6, 5)
    outputs = [f"y{i}" for i in range(count)]
    inputs, constants = ["x"], {}
    if sizes is not None:
        inputs, constants = ["x", "split"], {"split": np.array(sizes, np.int64)}
    model = make_model(
        node("Split", inputs, outputs, **attrs), {"x": x}, constants=constants, opset=opset
    )
    check(tmp_path, model, {"x": x})


INT_MAX = 2**63 - 1
SLICE_CASES = {
    "basic": ([1, 0], [3, 2], None, None),
    "negative": ([-3, -2], [-1, INT_MAX], None, None),
    "axes": ([1], [INT_MAX], [-1], None),
    "steps": ([0, 5], [INT_MAX, 0], [0, 2], [2, -2]),
    "reverse_all": ([-1], [-INT_MAX], [1], [-1]),
    "clamped": ([-100, 2], [100, 1000], [0, 1], [1, 1]),
    "reverse_clamped": ([100], [-100], [2], [-3]),
    "empty": ([3], [1], [0], [1]),
}


@pytest.mark.parametrize("case", SLICE_CASES)
def test_slice(tmp_path: Path, case: str) -> None:
    starts, ends, axes, steps = SLICE_CASES[case]
    x = rand(4, 6, 7)
    constants = {"starts": np.array(starts), "ends": np.array(ends)}
    inputs = ["x", "starts", "ends"]
    if axes is not None:
        constants["axes"] = np.array(axes)
        inputs.append("axes")
    if steps is not None:
        constants["steps"] = np.array(steps)
        inputs.append("steps")
    model = make_model(node("Slice", inputs), {"x": x}, constants=constants)
    check(tmp_path, model, {"x": x})


PAD_CASES = {
    "constant": ("constant", [0, 1, 2, 0, 2, 1], 1.5, None),
    "reflect": ("reflect", [0, 2, 1, 0, 1, 2], None, None),
    "edge": ("edge", [1, 0, 3, 0, 2, 1], None, None),
    "negative": ("constant", [0, -1, 2, 0, 1, -2], None, None),
    "axes": ("constant", [1, 2], 0.5, [-1]),
}


@pytest.mark.parametrize("case", PAD_CASES)
def test_pad(tmp_path: Path, case: str) -> None:
    mode, pads, value, axes = PAD_CASES[case]
    x = rand(2, 4, 5)
    constants: dict[str, np.ndarray] = {"pads": np.array(pads, np.int64)}
    inputs = ["x", "pads"]
    if value is not None:
        constants["value"] = np.array(value, np.float32)
        inputs.append("value")
    if axes is not None:
        if value is None:
            inputs.append("")
        constants["axes"] = np.array(axes, np.int64)
        inputs.append("axes")
    model = make_model(node("Pad", inputs, mode=mode), {"x": x}, constants=constants, opset=18)
    check(tmp_path, model, {"x": x})


RESIZE_CASES = {
    "nearest_scales": ({"mode": "nearest"}, [1, 1, 2, 3], None),
    "nearest_sizes_asym_floor": (
        {
            "mode": "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "floor",
        },
        None,
        [1, 2, 7, 5],
    ),
    "nearest_down": ({"mode": "nearest", "nearest_mode": "ceil"}, [1, 1, 0.5, 0.6], None),
    "linear_half_pixel": ({"mode": "linear"}, [1, 1, 2, 1.5], None),
    "linear_align_corners": (
        {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        None,
        [1, 2, 9, 4],
    ),
    "linear_pytorch": (
        {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
        [1, 1, 0.5, 2],
        None,
    ),
    "linear_asymmetric": (
        {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
        [1, 1, 1.7, 2.5],
        None,
    ),
}


@pytest.mark.parametrize("case", RESIZE_CASES)
@pytest.mark.parametrize("opset", [11, 13])
def test_resize(tmp_path: Path, case: str, opset: int) -> None:
    attrs, scales, sizes = RESIZE_CASES[case]
    x = rand(1, 2, 4, 6)
    constants = {"roi": np.zeros(0, np.float32), "scales": np.zeros(0, np.float32)}
    inputs = ["x", "roi", "scales"]
    if scales is not None:
        constants["scales"] = np.array(scales, np.float32)
    if sizes is not None:
        constants["sizes"] = np.array(sizes, np.int64)
        inputs.append("sizes")
    if opset >= 13 and scales is None:
        inputs = ["x", "", "", "sizes"]
        del constants["roi"], constants["scales"]
    model = make_model(node("Resize", inputs, **attrs), {"x": x}, constants=constants, opset=opset)
    module = check(tmp_path, model, {"x": x})
    assert "nn.resize" in ops_of(module)


def test_resize_cubic_is_unsupported(tmp_path: Path) -> None:
    x = rand(1, 1, 4, 4)
    model = make_model(
        node("Resize", ["x", "", "s"], mode="cubic"),
        {"x": x},
        constants={"s": np.array([1, 1, 2, 2], np.float32)},
    )
    with pytest.raises(ModelImportError, match=r"Resize x1 \(mode 'cubic'\): node 0 'Resize_0'"):
        import_bytes(tmp_path, model)


def test_upsample_from_an_old_opset(tmp_path: Path) -> None:
    x = rand(1, 2, 3, 4)
    model = make_model(
        node("Upsample", ["x", "s"], mode="nearest"),
        {"x": x},
        constants={"s": np.array([1, 1, 2, 3], np.float32)},
        opset=9,
    )
    module = import_bytes(tmp_path, model)
    got = irc.run(module, {"x": x})["y"]
    np.testing.assert_array_equal(got, np.repeat(np.repeat(x, 2, axis=2), 3, axis=3))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_read_natively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """The Upsample converter itself (the opset upgrade normally turns it into Resize)."""
    monkeypatch.setattr(onnx_driver, "MIN_NATIVE_OPSET", 9)
    x = rand(1, 2, 3, 4)
    nodes = [
        node("Upsample", ["x", "s"], ["u"], mode=mode),
        node("Clip", ["u"], min=-0.5, max=0.75),
    ]
    model = make_model(
        nodes, {"x": x}, constants={"s": np.array([1, 1, 2, 1.5], np.float32)}, opset=9
    )
    check(tmp_path, model, {"x": x})


def test_failed_upgrade_is_an_import_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from onnx import version_converter

    def fail(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
        raise RuntimeError("no adapter for op Foo")

    monkeypatch.setattr(version_converter, "convert_version", fail)
    model = make_model(node("Relu", ["x"]), {"x": rand(2)}, opset=8)
    with pytest.raises(
        ModelImportError, match=r"cannot upgrade the model from opset 8 to 13 .*: no adapter"
    ):
        import_bytes(tmp_path, model)


GATHER_CASES = {
    "vector": (0, [2, 0, -1]),
    "matrix_axis1": (1, [[0, 2], [1, 1]]),
    "scalar_last": (-1, 3),
}


@pytest.mark.parametrize("case", GATHER_CASES)
@pytest.mark.parametrize("runtime_indices", [False, True])
def test_gather(tmp_path: Path, case: str, runtime_indices: bool) -> None:
    axis, indices = GATHER_CASES[case]
    x = rand(3, 4, 5)
    index = np.array(indices, np.int64)
    feeds = {"x": x, "i": index} if runtime_indices else {"x": x}
    constants = {} if runtime_indices else {"i": index}
    model = make_model(node("Gather", ["x", "i"], axis=axis), feeds, constants=constants)
    check(tmp_path, model, feeds)


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(tmp_path: Path, opset: int) -> None:
    x = rand(1, 3, 1, 4)
    if opset >= 13:
        nodes = [
            node("Squeeze", ["x", "sq"], ["s"]),
            node("Unsqueeze", ["s", "un"], ["u"]),
            node("Squeeze", ["u"], ["y"]),
        ]
        constants = {"sq": np.array([0, -2]), "un": np.array([-1, 1])}
    else:
        nodes = [
            node("Squeeze", ["x"], ["s"], axes=[0, -2]),
            node("Unsqueeze", ["s"], ["u"], axes=[-1, 1]),
            node("Squeeze", ["u"], ["y"]),
        ]
        constants = {}
    nodes[2].name = "Squeeze_all"
    check(tmp_path, make_model(nodes, {"x": x}, constants=constants, opset=opset), {"x": x})


def test_shape_arithmetic_folds(tmp_path: Path) -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, and ConstantOfShape/Size/Cast/
    arithmetic on shapes, leave only the reshape and the add in the IR."""
    x = rand(2, 3, 4)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "zero_axis"], ["batch1"]),
        helper.make_node("Slice", ["shape", "one", "big"], ["rest"]),
        helper.make_node("ReduceProd", ["rest"], ["features"], keepdims=1),
        helper.make_node("Concat", ["batch1", "features"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("Size", ["x"], ["size"]),
        helper.make_node("Cast", ["size"], ["size_f"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["size_f", "two"], ["half"]),
        helper.make_node(
            "ConstantOfShape",
            ["target"],
            ["filled"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]),
        ),
        helper.make_node("Mul", ["filled", "half"], ["scaled"]),
        helper.make_node("Add", ["flat", "scaled"], ["y"]),
    ]
    constants = {
        "zero": np.array(0, np.int64),
        "zero_axis": np.array([0], np.int64),
        "one": np.array([1], np.int64),
        "big": np.array([INT_MAX], np.int64),
        "two": np.array(2, np.float32),
    }
    model = make_model(nodes, {"x": x}, constants=constants)
    module = check(tmp_path, model, {"x": x})
    assert ops_of(module) == ["nn.reshape", "nn.constant", "nn.add"]


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"])
def test_binary_on_constants_folds(tmp_path: Path, op_type: str) -> None:
    a = np.array([7, -7, 7, -7, 0, 3], np.int64)
    b = np.array([2, 2, -2, -3, 3, 2], np.int64)
    if op_type == "Pow":
        a, b = a.astype(np.float32), np.array(2, np.float32)
    model = make_model(node(op_type, ["a", "b"]), {}, constants={"a": a, "b": b})
    module = check(tmp_path, model, {})
    assert ops_of(module) == ["nn.constant"]


@pytest.mark.parametrize(("start", "end"), [(1, None), (-2, -1), (0, 100)])
def test_shape_with_start_and_end(tmp_path: Path, start: int, end: int | None) -> None:
    x = rand(2, 3, 4)
    attrs = {"start": start} if end is None else {"start": start, "end": end}
    model = make_model(node("Shape", ["x"], **attrs), {"x": x}, opset=15)
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (np.float32, TensorProto.INT32),
        (np.float32, TensorProto.BOOL),
        (np.int64, TensorProto.FLOAT),
        (np.float32, TensorProto.FLOAT16),
        (np.int32, TensorProto.INT8),
        (np.float32, TensorProto.FLOAT),
    ],
)
def test_cast(tmp_path: Path, source: type, target: int) -> None:
    x = (rand(3, 4) * 10).astype(source)
    check(tmp_path, make_model(node("Cast", ["x"], to=target), {"x": x}), {"x": x})


def test_dropout_is_identity(tmp_path: Path) -> None:
    x = rand(2, 3)
    module = check(
        tmp_path, make_model(node("Dropout", ["x"], ratio=0.3), {"x": x}, opset=11), {"x": x}
    )
    assert ops_of(module) == []


def test_dropout_mask_is_unsupported_when_used(tmp_path: Path) -> None:
    x = rand(2, 3)
    model = make_model(node("Dropout", ["x"], ["y", "mask"]), {"x": x}, ["y", "mask"])
    with pytest.raises(ModelImportError, match=r"Dropout x1 \(the mask output is used\)"):
        import_bytes(tmp_path, model)


def test_tile(tmp_path: Path) -> None:
    x = rand(2, 3)
    model = make_model(node("Tile", ["x", "r"]), {"x": x}, constants={"r": np.array([2, 3])})
    check(tmp_path, model, {"x": x})


CONSTANT_FORMS = {
    "value": {"value": numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3))},
    "value_float": {"value_float": 2.5},
    "value_floats": {"value_floats": [1.0, -2.0, 3.0]},
    "value_int": {"value_int": 7},
    "value_ints": {"value_ints": [1, 2, 3]},
}


@pytest.mark.parametrize("form", CONSTANT_FORMS)
def test_constant(tmp_path: Path, form: str) -> None:
    model = make_model(
        [node("Constant", [], ["c"], **CONSTANT_FORMS[form]), node("Identity", ["c"])], {}
    )
    module = check(tmp_path, model, {})
    assert ops_of(module) == ["nn.constant"]


def test_graph_output_may_be_an_input_or_a_constant(tmp_path: Path) -> None:
    x = rand(2)
    graph = helper.make_graph(
        [node("Constant", [], ["c"], value_ints=[4, 5])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("c", TensorProto.INT64, [2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    check(tmp_path, model, {"x": x})


@pytest.mark.parametrize(
    "dtype", [np.float16, np.float64, np.int8, np.int16, np.int64, np.uint8, np.bool_]
)
def test_element_types(tmp_path: Path, dtype: type) -> None:
    x = (rand(2, 3) * 5).astype(dtype)
    nodes = [node("Transpose", ["x"], ["t"]), node("Concat", ["t", "t"], axis=0)]
    check(tmp_path, make_model(nodes, {"x": x}), {"x": x})


# ---- Opset upgrade -----------------------------------------------------------------------------


def test_old_opset_is_upgraded(tmp_path: Path) -> None:
    """Opset 7: BatchNormalization, Pad with attributes and Softmax with the 2-D coercion."""
    x = rand(1, 2, 3, 4)
    nodes = [
        helper.make_node("Pad", ["x"], ["p"], pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="constant"),
        helper.make_node("Softmax", ["p"], ["y"], axis=2),
    ]
    model = make_model(nodes, {"x": x}, opset=7)
    check(tmp_path, model, {"x": x})


# ---- The unsupported-op report and malformed models --------------------------------------------


def test_unsupported_ops_are_reported_together(tmp_path: Path) -> None:
    """Every unsupported node is listed, by type with counts and places, in one message;
    nodes after them are still converted (Relu) or skipped silently when they only depend
    on unsupported ones."""
    nodes = [
        helper.make_node("Hardmax", ["x"], ["a"], name="first"),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("FusedThing", ["b"], ["c"], name="second", domain="com.example"),
        helper.make_node("Hardmax", ["c"], ["d"], name="third"),
        helper.make_node("Det", ["d"], ["y"], name="fourth"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    model = make_onnx_model(graph, 17, domains={"com.example": 1})
    with pytest.raises(ModelImportError) as info:
        import_bytes(tmp_path, model)
    assert str(info.value).splitlines() == [
        f"{tmp_path / 'model.onnx'}: cannot import: 4 unsupported operators of 3 types:",
        "  Hardmax x2 (no converter): node 0 'first' (Hardmax), node 3 'third' (Hardmax)",
        "  Det x1 (no converter): node 4 'fourth' (Det)",
        "  com.example.FusedThing x1 (no converter of domain 'com.example'): "
        "node 2 'second' (FusedThing)",
    ]


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(bytes(RNG.integers(0, 256, 4000, dtype=np.uint8)), id="random"),
        pytest.param(b"", id="empty"),
        pytest.param(b"\x08\x07\x12\x05hello", id="not_a_model"),
    ],
)
def test_corrupt_bytes(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(ModelImportError, match=r"model\.onnx: .*(ONNX|onnx)"):
        import_bytes(tmp_path, data)


def test_truncated_model(tmp_path: Path) -> None:
    model = make_model(
        node("Conv", ["x", "w"]), {"x": rand(1, 3, 8, 8)}, constants={"w": rand(8, 3, 3, 3)}
    )
    data = model.SerializeToString()
    for cut in (len(data) // 2, len(data) - 3, 10):
        with pytest.raises(ModelImportError, match=r"model\.onnx: "):
            import_bytes(tmp_path, data[:cut])


def test_tflite_renamed_onnx(tmp_path: Path) -> None:
    fake = b"\x1c\x00\x00\x00TFL3" + bytes(64)
    with pytest.raises(ModelImportError, match="TFLite flatbuffer, not an ONNX model"):
        import_bytes(tmp_path, fake)


def test_use_before_definition_is_refused(tmp_path: Path) -> None:
    nodes = [node("Relu", ["later"], ["a"]), node("Relu", ["x"], ["later"])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
    )
    model = make_onnx_model(graph, 17)
    with pytest.raises(ModelImportError, match=r"invalid ONNX model: .*later"):
        import_bytes(tmp_path, model)


def test_missing_external_data_is_refused(tmp_path: Path) -> None:
    # External data inside the model's folder is loaded (tests/test_untrusted_models.py).
    model = make_model(node("Add", ["x", "w"]), {"x": rand(4)}, constants={"w": rand(4)})
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    with pytest.raises(ModelImportError, match=r"'w': external data file 'weights\.bin' cannot"):
        import_bytes(tmp_path, model)


# ---- bind and input_shapes ---------------------------------------------------------------------


def _dynamic_reshape_model() -> onnx.ModelProto:
    """y = reshape(x, shape) + 1, with `shape` a graph input."""
    nodes = [node("Reshape", ["x", "shape"], ["r"]), node("Add", ["r", "one"])]
    return make_model(
        nodes,
        {"x": (TensorProto.FLOAT, ["batch", 6]), "shape": (TensorProto.INT64, [2])},
        constants={"one": np.array(1, np.float32)},
    )


def test_bind_makes_an_input_constant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _dynamic_reshape_model()
    shape = np.array([3, 4], np.int64)
    module = check(
        tmp_path,
        model,
        {"x": rand(2, 6), "shape": shape},
        bind={"shape": [3, 4]},
        input_shapes={"x": [2, 6]},
    )
    func = next(op for op in module.walk() if op.name == "func.func")
    assert [a.data for a in func.attributes["irc.input_names"].data] == ["x"]
    assert "warning" not in capsys.readouterr().err


def test_runtime_shape_input_is_unsupported(tmp_path: Path) -> None:
    with pytest.raises(ModelImportError, match=r"Reshape x1 \(the target shape is computed"):
        import_bytes(tmp_path, _dynamic_reshape_model(), input_shapes={"x": [1, 6]})


def test_dynamic_batch_defaults_to_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = make_model(node("Relu", ["x"]), {"x": (TensorProto.FLOAT, ["N", 3])})
    module = import_bytes(tmp_path, model)
    err = capsys.readouterr().err
    assert "warning: input 'x' has a dynamic batch dimension; using 1" in err
    assert err.count("\n") == 1
    assert irc.run(module, {"x": rand(1, 3)})["y"].shape == (1, 3)


def test_input_shapes_fix_dynamic_dims(tmp_path: Path) -> None:
    model = make_model(node("Relu", ["x"]), {"x": (TensorProto.FLOAT, ["N", "C", 4])})
    with pytest.raises(
        ModelImportError, match=r"need static shapes: 'x' \[\?, \?, 4\]; pass input_shapes"
    ):
        import_bytes(tmp_path, model)
    x = rand(2, 5, 4)
    check(tmp_path, model, {"x": x}, input_shapes={"x": [2, 5, 4]})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bind": {"nope": 1}}, "bind names unknown inputs 'nope'"),
        ({"input_shapes": {"x": [2, 7]}}, r"does not match the model's shape \[\?, 3\]"),
        ({"bind": {"x": np.zeros((2, 2), np.float32)}}, r"bind\['x'\] has shape \[2, 2\]"),
    ],
)
def test_bad_import_options(tmp_path: Path, kwargs: dict[str, object], match: str) -> None:
    model = make_model(node("Relu", ["x"]), {"x": (TensorProto.FLOAT, ["N", 3])})
    with pytest.raises(ModelImportError, match=match):
        import_bytes(tmp_path, model, **kwargs)


def test_converter_registry() -> None:
    for op_type in ("Conv", "Gemm", "Resize", "Slice", "Softmax", "Constant"):
        assert op_type in CONVERTERS


def test_locations_name_the_onnx_nodes(tmp_path: Path) -> None:
    model = make_model(node("Relu", ["x"]), {"x": rand(2)})
    relu = next(op for op in import_bytes(tmp_path, model).walk() if isinstance(op, nn.ReluOp))
    assert "Relu_0" in str(relu.location)


# ---- A real model ------------------------------------------------------------------------------


def _manifest_entry(name: str) -> dict[str, object] | None:
    manifest = MODELS / "manifest.json"
    if not manifest.is_file():
        return None
    for entry in json.loads(manifest.read_text())["models"]:
        if entry["name"] == name:
            return entry
    return None


def test_ppocr_mobile_v2_cls() -> None:
    entry = _manifest_entry("ppocr_mobile_v2_cls")
    if entry is None or not (MODELS / str(entry["file"])).is_file():
        pytest.skip("ppocr_mobile_v2_cls is not in ../shared/models")
    shape = entry["inputs"][0]["shape"]  # type: ignore[index]
    start = time.perf_counter()
    module = import_model(MODELS / str(entry["file"]), input_shapes={"x": shape})
    seconds = time.perf_counter() - start
    worst = 0.0
    for sample in entry["golden"]["samples"]:  # type: ignore[index]
        inputs = dict(np.load(MODELS / sample["inputs"]))
        golden = dict(np.load(MODELS / sample["outputs"]))
        got = irc.run(module, inputs)
        for name, want in golden.items():
            error = float(np.max(np.abs(got[name] - want)))
            assert error <= 2e-3 * float(np.max(np.abs(want))), (name, error)
            worst = max(worst, error)
    print(f"\nppocr_mobile_v2_cls: import {seconds:.2f} s, max |got - golden| {worst:.3g}")
