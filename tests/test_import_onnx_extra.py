"""The converters of irc.importers.onnx.extra against onnxruntime.

Every test builds a small model with `onnx.helper`, imports it with `import_model`, runs it
on the reference target with `irc.run` and compares every output with onnxruntime (CPU, one
thread, graph optimisations off so that QDQ pairs are not fused), with rtol 1e-4 and atol
1e-5 throughout; the unrolled LSTM and GRU stay within that over their four steps (about
1e-7 in practice). onnxruntime refuses RNN layout 1, so layout-1 cases are checked against
the layout-0 model run on transposed inputs.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_support import make_onnx_model
from xdsl.dialects.builtin import ModuleOp

import irc
from irc.dialects import nn
from irc.dialects.quant import DCastOp, QCastOp, UniformQuantizedType
from irc.importers import ModelImportError, import_model

RTOL, ATOL = 1e-4, 1e-5


# ---- Helpers -----------------------------------------------------------------------------------


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def uniform(shape: Sequence[int], seed: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return np.asarray(rng(seed).uniform(low, high, shape), np.float32)


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, tuple[np.dtype, Sequence[int]] | None],
    *,
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 18,
) -> onnx.ModelProto:
    """A model of `nodes`; an output typed None is left untyped (onnxruntime accepts that)."""
    graph = helper.make_graph(
        list(nodes),
        "g",
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
            )
            for name, a in inputs.items()
        ],
        [
            helper.make_empty_tensor_value_info(name)
            if spec is None
            else helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(np.dtype(spec[0])), list(spec[1])
            )
            for name, spec in outputs.items()
        ],
        initializer=[numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    return make_onnx_model(graph, opset)


def run_ort(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, dict(feeds)), strict=True))


def import_onnx_model(tmp_path: Path, model: onnx.ModelProto) -> ModuleOp:
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path))
    return import_model(path)


def typed(expected: Mapping[str, np.ndarray]) -> dict[str, tuple[np.dtype, Sequence[int]]]:
    return {name: (a.dtype, a.shape) for name, a in expected.items()}


def check(
    tmp_path: Path,
    nodes: Sequence[onnx.NodeProto],
    feeds: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    *,
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 18,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> ModuleOp:
    """Import the graph, run it, compare every output with onnxruntime; returns the module."""
    untyped = make_model(
        nodes, feeds, dict.fromkeys(outputs), initializers=initializers, opset=opset
    )
    expected = run_ort(untyped, feeds)
    model = make_model(nodes, feeds, typed(expected), initializers=initializers, opset=opset)
    module = import_onnx_model(tmp_path, model)
    compare(irc.run(module, feeds), expected, rtol=rtol, atol=atol)
    return module


def compare(
    got: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], *, rtol: float, atol: float
) -> None:
    assert set(got) == set(expected)
    for name, want in expected.items():
        assert got[name].dtype == want.dtype, name
        assert got[name].shape == want.shape, name
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got[name], want, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)


def ops_of(module: ModuleOp, op_type: type) -> list:
    return [op for op in module.walk() if isinstance(op, op_type)]


def import_error(tmp_path: Path, model: onnx.ModelProto) -> str:
    with pytest.raises(ModelImportError) as info:
        import_onnx_model(tmp_path, model)
    return str(info.value)


# ---- Comparison, logic, Where ------------------------------------------------------------------

COMPARISONS = ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]


@pytest.mark.parametrize("op_type", COMPARISONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_comparison(tmp_path: Path, op_type: str, dtype: type) -> None:
    a = np.round(uniform((2, 3, 4), 1) * 3).astype(dtype)
    b = np.round(uniform((3, 1), 2) * 3).astype(dtype)
    module = check(
        tmp_path, [helper.make_node(op_type, ["A", "B"], ["Y"])], {"A": a, "B": b}, ["Y"]
    )
    assert len(ops_of(module, nn.CompareOp)) == 1


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_logical(tmp_path: Path, op_type: str) -> None:
    a = rng(3).integers(0, 2, (2, 1, 4)).astype(np.bool_)
    b = rng(4).integers(0, 2, (3, 4)).astype(np.bool_)
    check(tmp_path, [helper.make_node(op_type, ["A", "B"], ["Y"])], {"A": a, "B": b}, ["Y"])


def test_not(tmp_path: Path) -> None:
    a = rng(5).integers(0, 2, (2, 5)).astype(np.bool_)
    check(tmp_path, [helper.make_node("Not", ["A"], ["Y"])], {"A": a}, ["Y"])


def test_where_equal_chain(tmp_path: Path) -> None:
    """mask = (a < b) and not (a == c) or (b >= 0.5), then Where picks a, b or a constant."""
    a = np.round(uniform((2, 3, 4), 6) * 2) / 2
    b = np.round(uniform((3, 4), 7) * 2) / 2
    c = np.round(uniform((4,), 8) * 2) / 2
    nodes = [
        helper.make_node("Less", ["A", "B"], ["lt"]),
        helper.make_node("Equal", ["A", "C"], ["eq"]),
        helper.make_node("Not", ["eq"], ["ne"]),
        helper.make_node("And", ["lt", "ne"], ["both"]),
        helper.make_node("GreaterOrEqual", ["B", "half"], ["big"]),
        helper.make_node("Or", ["both", "big"], ["mask"]),
        helper.make_node("Xor", ["mask", "big"], ["odd"]),
        helper.make_node("Where", ["mask", "A", "B"], ["picked"]),
        helper.make_node("Where", ["odd", "picked", "minus"], ["Y"]),
    ]
    constants = {"half": np.array(0.5, np.float32), "minus": np.array([-7.0], np.float32)}
    check(
        tmp_path,
        nodes,
        {"A": a, "B": b, "C": c},
        ["Y", "mask"],
        initializers=constants,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_where_broadcasts_three_ways(tmp_path: Path, dtype: type) -> None:
    condition = rng(9).integers(0, 2, (2, 1, 1)).astype(np.bool_)
    x = (uniform((3, 1), 10, 0, 9)).astype(dtype)
    y = (uniform((4,), 11, 0, 9)).astype(dtype)
    nodes = [helper.make_node("Where", ["C", "X", "Y"], ["Z"])]
    check(tmp_path, nodes, {"C": condition, "X": x, "Y": y}, ["Z"])


def test_constant_comparisons_fold(tmp_path: Path) -> None:
    """Equal / Not / Where of initializers fold at import: no comparison op is left."""
    x = uniform((2, 3), 12)
    nodes = [
        helper.make_node("Equal", ["s", "t"], ["eq"]),
        helper.make_node("Not", ["eq"], ["ne"]),
        helper.make_node("Where", ["ne", "s", "t"], ["picked"]),
        helper.make_node("Cast", ["picked"], ["scale"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["X", "scale"], ["Y"]),
    ]
    constants = {"s": np.array([1, 2, 3], np.int64), "t": np.array([1, 5, 3], np.int64)}
    module = check(tmp_path, nodes, {"X": x}, ["Y"], initializers=constants)
    assert not ops_of(module, nn.CompareOp)
    assert not ops_of(module, nn.LogicalNotOp)
    assert not ops_of(module, nn.SelectOp)


# ---- Expand and Sum ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x_shape", "shape"),
    [((3, 1), (2, 1, 4)), ((1,), (2, 3)), ((2, 3), (1, 1)), ((4, 1, 2), (4, 3, 1))],
)
def test_expand(tmp_path: Path, x_shape: tuple[int, ...], shape: tuple[int, ...]) -> None:
    x = uniform(x_shape, 13)
    nodes = [helper.make_node("Expand", ["X", "shape"], ["Y"])]
    initializers = {"shape": np.array(shape, np.int64)}
    module = check(tmp_path, nodes, {"X": x}, ["Y"], initializers=initializers)
    grows = np.broadcast_shapes(x_shape, shape) != x_shape
    assert len(ops_of(module, nn.BroadcastToOp)) == int(grows)


def test_expand_moves_the_quantized_dimension(tmp_path: Path) -> None:
    """Q per channel (axis 0 of [3, 1]) -> Expand to [2, 3, 4] -> DQ along axis 1."""
    x = uniform((3, 1), 15)
    constants = {
        "scale": np.array([0.01, 0.02, 0.03], np.float32),
        "zp": np.array([0, 1, -1], np.int8),
        "shape": np.array([2, 3, 4], np.int64),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["X", "scale", "zp"], ["q"], axis=0),
        helper.make_node("Expand", ["q", "shape"], ["e"]),
        helper.make_node("DequantizeLinear", ["e", "scale", "zp"], ["Y"], axis=1),
    ]
    module = check(tmp_path, nodes, {"X": x}, ["Y"], initializers=constants)
    (expand,) = ops_of(module, nn.BroadcastToOp)
    assert expand.output.type.element_type.axis == 1


def test_expand_with_a_run_time_shape_is_unsupported(tmp_path: Path) -> None:
    x = uniform((3, 1), 14)
    shape = np.array([2, 3, 4], np.int64)
    nodes = [helper.make_node("Expand", ["X", "S"], ["Y"])]
    model = make_model(nodes, {"X": x, "S": shape}, {"Y": (np.float32, (2, 3, 4))})
    assert "Expand x1 (Expand with a shape only known at run time)" in import_error(tmp_path, model)


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_sum(tmp_path: Path, count: int) -> None:
    shapes = [(2, 3, 4), (3, 1), (4,), (1, 1, 1)][:count]
    feeds = {f"X{i}": uniform(s, 20 + i) for i, s in enumerate(shapes)}
    nodes = [helper.make_node("Sum", [*feeds, "c"], ["Y"])]
    check(tmp_path, nodes, feeds, ["Y"], initializers={"c": np.array([0.5], np.float32)})


# ---- If with a constant condition --------------------------------------------------------------


def _if_model(condition: str, feeds: Mapping[str, np.ndarray]) -> list[onnx.NodeProto]:
    then_branch = helper.make_graph(
        [helper.make_node("Add", ["X", "c1"], ["then_out"])],
        "then",
        [],
        [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.array(1.5, np.float32), "c1")],
    )
    else_branch = helper.make_graph(
        [
            helper.make_node("Mul", ["X", "c2"], ["prod"]),
            helper.make_node("Relu", ["prod"], ["else_out"]),
        ],
        "else",
        [],
        [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.array(-2.0, np.float32), "c2")],
    )
    return [
        helper.make_node(
            "If", [condition], ["Z"], then_branch=then_branch, else_branch=else_branch
        ),
        helper.make_node("Neg", ["Z"], ["Y"]),
    ]


@pytest.mark.parametrize("taken", [True, False])
def test_if_with_a_constant_condition_inlines_the_branch(tmp_path: Path, taken: bool) -> None:
    feeds = {"X": uniform((2, 3), 30)}
    module = check(
        tmp_path,
        _if_model("cond", feeds),
        feeds,
        ["Y"],
        initializers={"cond": np.array([taken])},
    )
    assert bool(ops_of(module, nn.AddOp)) == taken
    assert bool(ops_of(module, nn.MulOp)) != taken


@pytest.mark.parametrize("taken", [True, False])
def test_if_condition_folded_from_comparisons(tmp_path: Path, taken: bool) -> None:
    feeds = {"X": uniform((2, 3), 31)}
    nodes = [
        helper.make_node("Shape", ["X"], ["shape"]),
        helper.make_node("Greater", ["shape", "limit"], ["greater"]),
        helper.make_node("ReduceMax", ["greater_int"], ["any"], keepdims=0),
        helper.make_node("Cast", ["greater"], ["greater_int"], to=TensorProto.INT64),
        helper.make_node("Cast", ["any"], ["cond"], to=TensorProto.BOOL),
    ]
    # Order the nodes topologically: Cast to int comes before ReduceMax.
    nodes = [nodes[0], nodes[1], nodes[3], nodes[2], nodes[4]]
    limit = np.array([1 if taken else 5], np.int64)
    module = check(
        tmp_path,
        nodes + _if_model("cond", feeds),
        feeds,
        ["Y"],
        initializers={"limit": limit},
    )
    assert not ops_of(module, nn.CompareOp)


def test_if_with_a_run_time_condition_is_unsupported(tmp_path: Path) -> None:
    feeds = {"X": uniform((2, 3), 32), "cond": np.array([True])}
    model = make_model(_if_model("cond", feeds), feeds, {"Y": (np.float32, (2, 3))})
    message = import_error(tmp_path, model)
    assert "If x1 (If with a condition only known at run time)" in message


# ---- Normalisation -----------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, -2, 1])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_normalization(tmp_path: Path, axis: int, with_bias: bool) -> None:
    x = uniform((2, 3, 4), 40, -3, 3)
    normalized = x.shape[axis:]
    inputs = ["X", "scale", "bias"] if with_bias else ["X", "scale"]
    initializers = {"scale": uniform(normalized, 41, 0.5, 2.0)}
    if with_bias:
        initializers["bias"] = uniform(normalized, 42)
    nodes = [
        helper.make_node(
            "LayerNormalization", inputs, ["Y", "Mean", "InvStdDev"], axis=axis, epsilon=1e-3
        )
    ]
    check(tmp_path, nodes, {"X": x}, ["Y", "Mean", "InvStdDev"], initializers=initializers)


def test_layer_normalization_scale_at_run_time(tmp_path: Path) -> None:
    feeds = {"X": uniform((2, 5), 43), "S": uniform((5,), 44)}
    nodes = [helper.make_node("LayerNormalization", ["X", "S"], ["Y"])]
    check(tmp_path, nodes, feeds, ["Y"])


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 6), (1, 2, 2, 3, 2)])
def test_instance_normalization(tmp_path: Path, shape: tuple[int, ...]) -> None:
    x = uniform(shape, 45, -2, 4)
    initializers = {"scale": uniform(shape[1:2], 46, 0.5, 2.0), "bias": uniform(shape[1:2], 47)}
    nodes = [helper.make_node("InstanceNormalization", ["X", "scale", "bias"], ["Y"], epsilon=1e-4)]
    check(tmp_path, nodes, {"X": x}, ["Y"], initializers=initializers)


# ---- QuantizeLinear / DequantizeLinear ---------------------------------------------------------


@pytest.mark.parametrize(
    ("storage", "scale", "zero_point"),
    [
        (np.int8, np.float32(0.05), np.int8(-3)),
        (np.uint8, np.float32(0.02), np.uint8(128)),
        (np.int8, np.array([0.05, 0.1, 0.02], np.float32), np.array([0, 3, -5], np.int8)),
        (np.uint8, np.array([0.03, 0.01, 0.05], np.float32), np.array([10, 128, 250], np.uint8)),
    ],
    ids=["int8", "uint8", "int8-per-axis", "uint8-per-axis"],
)
def test_quantize_dequantize_pair(tmp_path: Path, storage, scale, zero_point) -> None:
    """Q -> DQ round trip (and the stored integers): half-to-even rounding and saturation."""
    x = uniform((2, 3, 4), 50, -3, 3)
    x.flat[:4] = [0.025, -0.075, 100.0, -100.0]  # ties at scale 0.05, saturation
    constants = {"scale": np.asarray(scale), "zp": np.asarray(zero_point, storage)}
    nodes = [
        helper.make_node("QuantizeLinear", ["X", "scale", "zp"], ["q"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["Y"], axis=1),
    ]
    module = check(tmp_path, nodes, {"X": x}, ["Y", "q"], initializers=constants)
    (qcast,) = ops_of(module, QCastOp)
    assert qcast.rounding.data == "half_to_even"
    qtype = qcast.output.type.element_type
    assert isinstance(qtype, UniformQuantizedType)
    assert qtype.is_per_axis == (np.ndim(scale) == 1)
    assert len(ops_of(module, DCastOp)) == 1


def test_quantize_without_zero_point_is_uint8(tmp_path: Path) -> None:
    x = uniform((6,), 51, 0, 2)
    nodes = [helper.make_node("QuantizeLinear", ["X", "scale"], ["Y"])]
    check(tmp_path, nodes, {"X": x}, ["Y"], initializers={"scale": np.array(0.01, np.float32)})


def test_quantize_of_a_constant_folds(tmp_path: Path) -> None:
    x = uniform((3,), 52)
    nodes = [
        helper.make_node("QuantizeLinear", ["w", "scale", "zp"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["dq"]),
        helper.make_node("Add", ["X", "dq"], ["Y"]),
    ]
    constants = {
        "w": uniform((3,), 53),
        "scale": np.array(0.1, np.float32),
        "zp": np.array(2, np.int8),
    }
    module = check(tmp_path, nodes, {"X": x}, ["Y"], initializers=constants)
    assert not ops_of(module, QCastOp)
    (constant,) = [c for c in ops_of(module, nn.ConstantOp) if c.to_array().dtype == np.int8]
    assert isinstance(constant.output.type.element_type, UniformQuantizedType)


def test_dequantized_weights_feed_conv(tmp_path: Path) -> None:
    """A QDQ conv: activations Q -> DQ, per-channel int8 weights and int32 bias through DQ."""
    x = uniform((1, 3, 6, 6), 54, -2, 2)
    w_scale = np.array([0.01, 0.02, 0.015, 0.03], np.float32)
    weights = rng(55).integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    x_scale = np.float32(0.02)
    bias = rng(56).integers(-500, 500, (4,)).astype(np.int32)
    constants = {
        "x_scale": np.array(x_scale),
        "x_zp": np.array(-1, np.int8),
        "w_q": weights,
        "w_scale": w_scale,
        "w_zp": np.zeros(4, np.int8),
        "b_q": bias,
        "b_scale": (w_scale * x_scale).astype(np.float32),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["X", "x_scale", "x_zp"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w"], axis=0),
        helper.make_node("DequantizeLinear", ["b_q", "b_scale"], ["b"], axis=0),
        helper.make_node("Conv", ["xd", "w", "b"], ["Y"], pads=[1, 1, 1, 1]),
    ]
    module = check(tmp_path, nodes, {"X": x}, ["Y"], initializers=constants)
    quantized_constants = [
        c
        for c in ops_of(module, nn.ConstantOp)
        if isinstance(c.output.type.element_type, UniformQuantizedType)
    ]
    assert len(quantized_constants) == 2
    per_axis = [c for c in quantized_constants if c.output.type.element_type.is_per_axis]
    assert per_axis
    assert per_axis[0].output.type.element_type.axis == 0
    assert len(ops_of(module, DCastOp)) == 3


def test_dequantize_of_an_integer_input(tmp_path: Path) -> None:
    x = rng(57).integers(-128, 128, (2, 5)).astype(np.int8)
    nodes = [helper.make_node("DequantizeLinear", ["X", "scale", "zp"], ["Y"])]
    constants = {"scale": np.array(0.25, np.float32), "zp": np.array(3, np.int8)}
    check(tmp_path, nodes, {"X": x}, ["Y"], initializers=constants)


def test_dequantize_with_other_parameters_than_the_quantize(tmp_path: Path) -> None:
    """DQ reads the stored integers of Q with its own scale and zero point."""
    x = uniform((8,), 58, -1, 1)
    nodes = [
        helper.make_node("QuantizeLinear", ["X", "s1", "z1"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s2", "z2"], ["Y"]),
    ]
    constants = {
        "s1": np.array(0.01, np.float32),
        "z1": np.array(5, np.int8),
        "s2": np.array(0.5, np.float32),
        "z2": np.array(-2, np.int8),
    }
    check(tmp_path, nodes, {"X": x}, ["Y"], initializers=constants)


def test_quantize_with_a_run_time_scale_is_unsupported(tmp_path: Path) -> None:
    feeds = {"X": uniform((4,), 59), "S": np.array(0.1, np.float32)}
    nodes = [helper.make_node("QuantizeLinear", ["X", "S"], ["Y"])]
    model = make_model(nodes, feeds, {"Y": (np.uint8, (4,))})
    message = import_error(tmp_path, model)
    assert "QuantizeLinear x1 (QuantizeLinear with a scale only known at run time)" in message


# ---- LSTM and GRU ------------------------------------------------------------------------------

SEQ, BATCH, INPUT, HIDDEN = 4, 2, 3, 5
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


def _rnn_constants(
    op_type: str, direction: str, *, bias: bool, seed: int, peepholes: bool = False
) -> dict[str, np.ndarray]:
    gates = 4 if op_type == "LSTM" else 3
    d = DIRECTIONS[direction]
    constants = {
        "W": uniform((d, gates * HIDDEN, INPUT), seed, -0.6, 0.6),
        "R": uniform((d, gates * HIDDEN, HIDDEN), seed + 1, -0.6, 0.6),
    }
    if bias:
        constants["B"] = uniform((d, 2 * gates * HIDDEN), seed + 2, -0.5, 0.5)
    if peepholes:
        constants["P"] = uniform((d, 3 * HIDDEN), seed + 3, -0.5, 0.5)
    return constants


def check_rnn(
    tmp_path: Path,
    op_type: str,
    direction: str,
    *,
    layout: int,
    bias: bool,
    initial: bool,
    seed: int,
    outputs: Sequence[str] | None = None,
    peepholes: bool = False,
    weights_as_inputs: bool = False,
    **attrs: object,
) -> ModuleOp:
    """Import and run an LSTM/GRU node; compare with onnxruntime on the layout-0 model.

    `weights_as_inputs` feeds W, R, B and P at run time instead of as initializers.
    """
    state_outputs = ["Y", "Y_h", "Y_c"] if op_type == "LSTM" else ["Y", "Y_h"]
    outputs = list(outputs or state_outputs)
    d = DIRECTIONS[direction]
    constants = _rnn_constants(op_type, direction, bias=bias, seed=seed, peepholes=peepholes)
    x0 = uniform((SEQ, BATCH, INPUT), seed + 10, -2, 2)
    feeds0: dict[str, np.ndarray] = {"X": x0}
    if initial:
        feeds0["initial_h"] = uniform((d, BATCH, HIDDEN), seed + 11)
        if op_type == "LSTM":
            feeds0["initial_c"] = uniform((d, BATCH, HIDDEN), seed + 12)
    if weights_as_inputs:
        feeds0.update(constants)
        constants = {}
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    available = set(constants) | set(feeds0)
    last = max(i for i, n in enumerate(order) if n in available)
    inputs = [n if n in available else "" for n in order[: last + 1]]
    if op_type == "GRU":
        inputs = inputs[:6]
    node_outputs = [n if n in outputs else "" for n in state_outputs]
    while node_outputs and not node_outputs[-1]:
        node_outputs.pop()

    def node(layout: int) -> onnx.NodeProto:
        return helper.make_node(
            op_type,
            inputs,
            node_outputs,
            hidden_size=HIDDEN,
            direction=direction,
            layout=layout,
            **attrs,
        )

    untyped = make_model([node(0)], feeds0, dict.fromkeys(outputs), initializers=constants)
    expected = run_ort(untyped, feeds0)
    feeds = dict(feeds0)
    if layout == 1:  # batch first: X [B, S, I], states [B, D, H], Y [B, S, D, H]
        batch_first = {"X", "initial_h", "initial_c"}
        feeds = {n: a.transpose(1, 0, 2) if n in batch_first else a for n, a in feeds0.items()}
        expected = {
            n: a.transpose(2, 0, 1, 3) if n == "Y" else a.transpose(1, 0, 2)
            for n, a in expected.items()
        }
    model = make_model([node(layout)], feeds, typed(expected), initializers=constants)
    module = import_onnx_model(tmp_path, model)
    compare(irc.run(module, feeds), expected, rtol=RTOL, atol=ATOL)
    return module


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize(("bias", "initial"), list(itertools.product([True, False], repeat=2)))
@pytest.mark.parametrize("layout", [0, 1])
def test_lstm(tmp_path: Path, direction: str, bias: bool, initial: bool, layout: int) -> None:
    module = check_rnn(
        tmp_path, "LSTM", direction, layout=layout, bias=bias, initial=initial, seed=60
    )
    steps = SEQ * DIRECTIONS[direction]
    # One input projection per direction; one recurrent product per step after the first
    # (every step with an initial state).
    products = DIRECTIONS[direction] + steps - (0 if initial else DIRECTIONS[direction])
    assert len(ops_of(module, nn.FullyConnectedOp)) == products
    # Weights are materialised once per direction, not once per step.
    assert len(ops_of(module, nn.ConstantOp)) <= 3 * DIRECTIONS[direction]


@pytest.mark.parametrize("layout", [0, 1])
def test_lstm_weights_at_run_time(tmp_path: Path, layout: int) -> None:
    check_rnn(
        tmp_path,
        "LSTM",
        "bidirectional",
        layout=layout,
        bias=True,
        initial=True,
        seed=66,
        peepholes=True,
        weights_as_inputs=True,
    )


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_peepholes_and_clip(tmp_path: Path, direction: str) -> None:
    check_rnn(
        tmp_path,
        "LSTM",
        direction,
        layout=0,
        bias=True,
        initial=True,
        seed=61,
        peepholes=True,
        clip=0.7,
    )


def test_lstm_peepholes_without_initial_state(tmp_path: Path) -> None:
    check_rnn(
        tmp_path, "LSTM", "reverse", layout=1, bias=False, initial=False, seed=62, peepholes=True
    )


def test_lstm_clip(tmp_path: Path) -> None:
    module = check_rnn(
        tmp_path, "LSTM", "forward", layout=0, bias=True, initial=True, seed=63, clip=0.5
    )
    assert len(ops_of(module, nn.ClipOp)) == SEQ


def test_lstm_input_forget(tmp_path: Path) -> None:
    check_rnn(
        tmp_path, "LSTM", "forward", layout=0, bias=True, initial=True, seed=64, input_forget=1
    )


@pytest.mark.parametrize("outputs", [["Y"], ["Y_h"], ["Y_c"], ["Y_h", "Y_c"]])
def test_lstm_output_subsets(tmp_path: Path, outputs: list[str]) -> None:
    check_rnn(
        tmp_path,
        "LSTM",
        "bidirectional",
        layout=0,
        bias=True,
        initial=False,
        seed=65,
        outputs=outputs,
    )


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize(("bias", "initial"), [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize("layout", [0, 1])
def test_gru(
    tmp_path: Path,
    direction: str,
    linear_before_reset: int,
    bias: bool,
    initial: bool,
    layout: int,
) -> None:
    check_rnn(
        tmp_path,
        "GRU",
        direction,
        layout=layout,
        bias=bias,
        initial=initial,
        seed=70,
        linear_before_reset=linear_before_reset,
    )


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_clip(tmp_path: Path, linear_before_reset: int) -> None:
    check_rnn(
        tmp_path,
        "GRU",
        "bidirectional",
        layout=0,
        bias=True,
        initial=True,
        seed=71,
        clip=0.4,
        linear_before_reset=linear_before_reset,
    )


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_weights_at_run_time(tmp_path: Path, linear_before_reset: int) -> None:
    check_rnn(
        tmp_path,
        "GRU",
        "bidirectional",
        layout=1,
        bias=True,
        initial=False,
        seed=73,
        weights_as_inputs=True,
        linear_before_reset=linear_before_reset,
    )


def test_gru_only_final_state(tmp_path: Path) -> None:
    module = check_rnn(
        tmp_path, "GRU", "forward", layout=0, bias=True, initial=True, seed=72, outputs=["Y_h"]
    )
    assert not ops_of(module, nn.ConcatOp)


def test_full_sequence_lens_is_accepted(tmp_path: Path) -> None:
    constants = _rnn_constants("GRU", "forward", bias=True, seed=73)
    constants["lens"] = np.full(BATCH, SEQ, np.int32)
    x = uniform((SEQ, BATCH, INPUT), 74)
    nodes = [helper.make_node("GRU", ["X", "W", "R", "B", "lens"], ["Y"], hidden_size=HIDDEN)]
    check(tmp_path, nodes, {"X": x}, ["Y"], initializers=constants, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    ("op_type", "attrs", "extra", "reason"),
    [
        (
            "LSTM",
            {"activations": ["Sigmoid", "Relu", "Tanh"]},
            {},
            "activations ['Sigmoid', 'Relu', 'Tanh'] (irc imports the defaults Sigmoid, Tanh, "
            "Tanh only)",
        ),
        (
            "GRU",
            {},
            {"lens": np.array([SEQ, SEQ - 1], np.int32)},
            "GRU with sequence_lens shorter than the sequence",
        ),
    ],
)
def test_unsupported_recurrences(
    tmp_path: Path, op_type: str, attrs: dict, extra: dict, reason: str
) -> None:
    constants = {**_rnn_constants(op_type, "forward", bias=True, seed=75), **extra}
    inputs = ["X", "W", "R", "B", *extra]
    x = uniform((SEQ, BATCH, INPUT), 76)
    nodes = [helper.make_node(op_type, inputs, ["Y"], hidden_size=HIDDEN, **attrs)]
    model = make_model(
        nodes, {"X": x}, {"Y": (np.float32, (SEQ, 1, BATCH, HIDDEN))}, initializers=constants
    )
    assert re.search(rf"{op_type} x1 \({re.escape(reason)}\)", import_error(tmp_path, model))


def test_unrolled_lstm_round_trips_through_text(tmp_path: Path) -> None:
    """The imported LSTM prints, re-parses and verifies."""
    module = check_rnn(tmp_path, "LSTM", "forward", layout=0, bias=True, initial=True, seed=77)
    text = str(module)
    reparsed = irc.parse_module(text)
    reparsed.verify()


# ---- A QDQ model made by onnxruntime's quantizer -----------------------------------------------


@pytest.mark.parametrize("quant_type", ["QInt8", "QUInt8"])
def test_qdq_model_from_onnxruntime_quantizer(tmp_path: Path, quant_type: str) -> None:
    """Conv -> Relu -> Flatten -> MatMul, quantized statically (per channel, QDQ format)."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    weights = {
        "W": uniform((4, 3, 3, 3), 80),
        "B": uniform((4,), 81),
        "M": uniform((4 * 6 * 6, 5), 82, -0.2, 0.2),
    }
    nodes = [
        helper.make_node("Conv", ["X", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("MatMul", ["f", "M"], ["Y"]),
    ]
    x = uniform((1, 3, 6, 6), 83)
    float_model = make_model(
        nodes, {"X": x}, {"Y": (np.float32, (1, 5))}, initializers=weights, opset=17
    )
    float_path, qdq_path = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save_model(float_model, str(float_path))

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"X": uniform((1, 3, 6, 6), 90 + i)} for i in range(8)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    kind = getattr(quantization.QuantType, quant_type)
    quantization.quantize_static(
        str(float_path),
        str(qdq_path),
        Calibration(),
        quant_format=quantization.QuantFormat.QDQ,
        per_channel=True,
        activation_type=kind,
        weight_type=kind,
    )
    model = onnx.load_model(str(qdq_path))
    model.ir_version = 10
    assert {n.op_type for n in model.graph.node} >= {"QuantizeLinear", "DequantizeLinear"}
    expected = run_ort(model, {"X": x})
    module = import_onnx_model(tmp_path, model)
    compare(irc.run(module, {"X": x}), expected, rtol=RTOL, atol=ATOL)
    assert ops_of(module, QCastOp)
    assert any(
        isinstance(c.output.type.element_type, UniformQuantizedType)
        for c in ops_of(module, nn.ConstantOp)
    )
