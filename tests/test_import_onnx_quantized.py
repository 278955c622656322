"""The quantized ONNX converters (irc.importers.onnx.quantized) against onnxruntime.

Every test builds a small model with `onnx.helper`, imports it, runs it on the reference target
(`irc.run`, where `lower-quantized` defines the integer arithmetic) and compares with
onnxruntime (CPU, one thread, graph optimisations off). QOperator results are 8-bit integers
that onnxruntime requantizes in float (one rounding, half to even) and irc with a fixed-point
`quant.rescale` rounding once (ties upward; pools and lookup tables keep TFLite's own
algorithms), so they may differ by one quantization step; integer ops (`MatMulInteger`,
`ConvInteger`, `DynamicQuantizeLinear`) must match exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper, numpy_helper
from onnx_support import exact_on_onnxruntime
from xdsl.dialects.builtin import ModuleOp

import irc
from irc.dialects import nn
from irc.importers import import_model

MS = "com.microsoft"


# ---- Helpers -----------------------------------------------------------------------------------


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def q_data(shape: Sequence[int], dtype: type, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng(seed).integers(info.min, info.max + 1, shape).astype(dtype)


def make_model(
    nodes: Sequence[onnx.NodeProto],
    feeds: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    initializers: Mapping[str, np.ndarray],
) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "g",
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
            )
            for name, a in feeds.items()
        ],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()],
    )
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid(MS, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


def run_ort(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    exact = exact_on_onnxruntime(model)  # no int16 saturation on AVX2 machines
    session = onnxruntime.InferenceSession(
        exact.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, dict(feeds)), strict=True))


def run_both(
    tmp_path: Path,
    nodes: Sequence[onnx.NodeProto],
    feeds: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    initializers: Mapping[str, np.ndarray],
) -> tuple[ModuleOp, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Import and run on irc's reference target and on onnxruntime."""
    model = make_model(nodes, feeds, outputs, initializers)
    expected = run_ort(model, feeds)
    graph_outputs = model.graph.output
    del graph_outputs[:]
    graph_outputs.extend(
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
        for n, a in expected.items()
    )
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path))
    module = import_model(path)
    got = irc.run(module, dict(feeds))
    return module, got, expected


def check(
    tmp_path: Path,
    nodes: Sequence[onnx.NodeProto],
    feeds: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    initializers: Mapping[str, np.ndarray],
    *,
    steps: int = 1,
) -> ModuleOp:
    """Every output within `steps` quantization steps of onnxruntime (0: exact), and at most
    half a step off on average."""
    module, got, expected = run_both(tmp_path, nodes, feeds, outputs, initializers)
    for name, want in expected.items():
        have = got[name]
        assert have.dtype == want.dtype, name
        assert have.shape == want.shape, name
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5, err_msg=name)
            continue
        diff = np.abs(have.astype(np.int64) - want.astype(np.int64))
        assert diff.max(initial=0) <= steps, f"{name}: {diff.max()} steps off"
        assert diff.mean() <= 0.5, f"{name}: {diff.mean():.2f} steps off on average"
    return module


def ops_of(module: ModuleOp, op_type: type) -> list:
    return [op for op in module.walk() if isinstance(op, op_type)]


def qparams(prefix: str, scale: float, zp: int, dtype: type) -> dict[str, np.ndarray]:
    return {f"{prefix}_s": np.float32(scale), f"{prefix}_z": np.asarray(zp, dtype)}


# ---- QuantizeLinear / DequantizeLinear edge cases ----------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_one_element_scale_with_a_scalar_zero_point(tmp_path: Path, dtype: type) -> None:
    """onnxruntime's quantizer writes a [1] scale with a [] zero point; onnxruntime runs it."""
    x = np.asarray(rng(1).uniform(-2, 2, (1, 1, 3, 4)), np.float32)
    consts = {"s": np.array([0.02], np.float32), "z": np.asarray(3, dtype)}
    nodes = [
        helper.make_node("QuantizeLinear", ["X", "s", "z"], ["q"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["Y"], axis=1),
    ]
    check(tmp_path, nodes, {"X": x}, ["Y", "q"], consts, steps=0)


# ---- QLinearConv -------------------------------------------------------------------------------

CONV_CASES = {
    "u8-data-i8-filter-per-channel": (np.uint8, np.int8, True, 1),
    "i8-i8-per-tensor": (np.int8, np.int8, False, 1),
    "u8-u8-per-tensor": (np.uint8, np.uint8, False, 1),
    "i8-depthwise-per-channel": (np.int8, np.int8, True, 4),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_qlinear_conv(tmp_path: Path, case: str) -> None:
    x_dtype, w_dtype, per_channel, groups = CONV_CASES[case]
    channels = 4
    x = q_data((1, channels, 7, 6), x_dtype, 10)
    w = q_data((6 if groups == 1 else channels, channels // groups, 3, 3), w_dtype, 11)
    oc = w.shape[0]
    w_scale = (
        np.asarray(rng(12).uniform(0.002, 0.02, oc), np.float32)
        if per_channel
        else np.float32(0.01)
    )
    w_zp = (
        np.zeros(oc, w_dtype)
        if per_channel
        else np.asarray(3 if w_dtype == np.uint8 else 0, w_dtype)
    )
    consts = {
        **qparams("x", 0.05, 128 if x_dtype == np.uint8 else -5, x_dtype),
        "w": w,
        "w_s": w_scale,
        "w_z": w_zp,
        **qparams("y", 0.3, 120 if x_dtype == np.uint8 else 4, x_dtype),
        "b": rng(13).integers(-2000, 2000, oc).astype(np.int32),
    }
    node = helper.make_node(
        "QLinearConv",
        ["X", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z", "b"],
        ["Y"],
        pads=[1, 0, 1, 2],
        strides=[1, 2],
        group=groups,
    )
    module = check(tmp_path, [node], {"X": x}, ["Y"], consts)
    assert len(ops_of(module, nn.Conv2DOp)) == 1


def test_qlinear_conv_with_a_run_time_scale_is_unsupported(tmp_path: Path) -> None:
    x = q_data((1, 2, 4, 4), np.int8, 14)
    w = q_data((2, 2, 1, 1), np.int8, 15)
    model = make_model(
        [
            helper.make_node(
                "QLinearConv", ["X", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z"], ["Y"]
            )
        ],
        {"X": x, "x_s": np.array(0.1, np.float32)},
        ["Y"],
        {
            "x_z": np.int8(0),
            "w": w,
            **qparams("w", 0.1, 0, np.int8),
            **qparams("y", 0.1, 0, np.int8),
        },
    )
    del model.graph.output[:]
    model.graph.output.append(
        helper.make_tensor_value_info("Y", onnx.TensorProto.INT8, [1, 2, 4, 4])
    )
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path))
    with pytest.raises(irc.importers.ModelImportError, match="a scale only known at run time"):
        import_model(path)


# ---- Matrix products ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a_dtype", "b_dtype", "per_column", "constant_b"),
    [
        (np.uint8, np.int8, False, True),
        (np.int8, np.int8, True, True),
        (np.uint8, np.uint8, False, False),
        (np.int8, np.int8, False, False),
    ],
    ids=["u8-i8-const", "i8-per-column", "u8-run-time-b", "i8-run-time-b"],
)
def test_qlinear_matmul(tmp_path: Path, a_dtype, b_dtype, per_column, constant_b) -> None:
    a = q_data((2, 3, 16), a_dtype, 20)
    b = q_data((16, 5) if constant_b else (2, 16, 5), b_dtype, 21)
    b_scale = (
        np.asarray(rng(22).uniform(0.01, 0.03, 5), np.float32) if per_column else np.float32(0.02)
    )
    b_zp = (
        np.zeros(5, b_dtype)
        if per_column
        else np.asarray(0 if b_dtype == np.int8 else 130, b_dtype)
    )
    consts = {
        **qparams("a", 0.04, 120 if a_dtype == np.uint8 else 2, a_dtype),
        "b_s": b_scale,
        "b_z": b_zp,
        **qparams("y", 0.5, 128 if a_dtype == np.uint8 else -3, a_dtype),
    }
    feeds = {"A": a}
    if constant_b:
        consts["B"] = b
    else:
        feeds["B"] = b
    node = helper.make_node(
        "QLinearMatMul", ["A", "a_s", "a_z", "B", "b_s", "b_z", "y_s", "y_z"], ["Y"]
    )
    check(tmp_path, [node], feeds, ["Y"], consts)


@pytest.mark.parametrize("float_output", [False, True], ids=["quantized", "float"])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_qgemm(tmp_path: Path, float_output: bool, trans_b: int) -> None:
    a = q_data((3, 24), np.uint8, 30)
    b = q_data((8, 24) if trans_b else (24, 8), np.int8, 31)
    consts = {
        **qparams("a", 0.03, 128, np.uint8),
        "B": b,
        "b_s": np.asarray(rng(32).uniform(0.01, 0.02, 8), np.float32),
        "b_z": np.zeros(8, np.int8),
        "C": rng(33).integers(-500, 500, 8).astype(np.int32),
        **qparams("y", 0.2, 100, np.uint8),
    }
    inputs = ["A", "a_s", "a_z", "B", "b_s", "b_z", "C"]
    if not float_output:
        inputs += ["y_s", "y_z"]
    node = helper.make_node("QGemm", inputs, ["Y"], domain=MS, transB=trans_b, alpha=1.0)
    check(tmp_path, [node], {"A": a}, ["Y"], consts)


def test_matmul_integer_is_exact(tmp_path: Path) -> None:
    a = q_data((2, 3, 16), np.uint8, 40)
    consts = {
        "B": q_data((16, 6), np.int8, 41),
        "b_z": np.asarray(rng(42).integers(-3, 3, 6), np.int8),
    }
    nodes = [helper.make_node("MatMulInteger", ["A", "B", "a_z", "b_z"], ["Y"])]
    check(tmp_path, nodes, {"A": a, "a_z": np.asarray(131, np.uint8)}, ["Y"], consts, steps=0)


def test_the_onnxruntime_oracle_is_exact_where_int16_pairs_saturate() -> None:
    """255 * 127 + 255 * 127 overflows int16: onnxruntime's AVX2 uint8 x int8 kernels
    (`vpmaddubsw`) saturate there; `exact_on_onnxruntime` (run by `run_ort`) keeps the
    integers and computes them exactly on every CPU."""
    a = np.full((2, 16), 255, np.uint8)
    b = np.tile(np.asarray([127, 127, -128, 5], np.int8), (16, 1))
    nodes = [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])]
    model = make_model(nodes, {"A": a}, ["Y"], {"B": b})
    (got,) = run_ort(model, {"A": a}).values()
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def test_matmul_integer_of_two_run_time_tensors(tmp_path: Path) -> None:
    feeds = {"A": q_data((4, 8), np.int8, 43), "B": q_data((8, 3), np.int8, 44)}
    nodes = [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])]
    check(tmp_path, nodes, feeds, ["Y"], {}, steps=0)


def test_conv_integer_is_exact(tmp_path: Path) -> None:
    x = q_data((1, 3, 6, 6), np.uint8, 45)
    consts = {"W": q_data((4, 3, 3, 3), np.uint8, 46), "w_z": np.asarray(7, np.uint8)}
    nodes = [helper.make_node("ConvInteger", ["X", "W", "x_z", "w_z"], ["Y"], pads=[1, 1, 1, 1])]
    check(tmp_path, nodes, {"X": x, "x_z": np.asarray(100, np.uint8)}, ["Y"], consts, steps=0)


def test_dynamic_quantize_linear_is_exact(tmp_path: Path) -> None:
    x = np.asarray(rng(47).normal(0.3, 2.0, (3, 17)), np.float32)
    x.flat[:3] = [0.0, x.max(), x.min()]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["X"], ["Y", "s", "z"])]
    check(tmp_path, nodes, {"X": x}, ["Y", "s", "z"], {}, steps=0)


def test_dynamic_quantized_matmul_chain(tmp_path: Path) -> None:
    """quantize_dynamic's pattern: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul."""
    x = np.asarray(rng(48).normal(0, 1.0, (2, 5, 12)), np.float32)
    consts = {
        "B": q_data((12, 7), np.int8, 49),
        "b_z": np.int8(0),
        "b_s": np.float32(0.01),
    }
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["X"], ["q", "s", "z"]),
        helper.make_node("MatMulInteger", ["q", "B", "z", "b_z"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Mul", ["s", "b_s"], ["scale"]),
        helper.make_node("Mul", ["accf", "scale"], ["Y"]),
    ]
    check(tmp_path, nodes, {"X": x}, ["Y"], consts)


# ---- Elementwise, pools, concat, activations, softmax ------------------------------------------


@pytest.mark.parametrize("op_type", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_binary(tmp_path: Path, op_type: str, dtype: type) -> None:
    a = q_data((1, 4, 3, 3), dtype, 50)
    b = q_data((1, 4, 1, 1), dtype, 51)
    unsigned = dtype == np.uint8
    consts = {
        **qparams("a", 0.05, 130 if unsigned else 3, dtype),
        **qparams("b", 0.08, 120 if unsigned else -7, dtype),
        **qparams("y", 0.12 if op_type == "QLinearAdd" else 0.4, 125 if unsigned else 1, dtype),
    }
    node = helper.make_node(
        op_type, ["A", "a_s", "a_z", "B", "b_s", "b_z", "y_s", "y_z"], ["Y"], domain=MS
    )
    check(tmp_path, [node], {"A": a, "B": b}, ["Y"], consts)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_global_average_pool(tmp_path: Path, dtype: type) -> None:
    x = q_data((1, 5, 7, 7), dtype, 60)
    unsigned = dtype == np.uint8
    consts = {
        **qparams("x", 0.1, 128 if unsigned else 0, dtype),
        **qparams("y", 0.05, 110 if unsigned else -2, dtype),
    }
    node = helper.make_node(
        "QLinearGlobalAveragePool", ["X", "x_s", "x_z", "y_s", "y_z"], ["Y"], domain=MS
    )
    check(tmp_path, [node], {"X": x}, ["Y"], consts)


def test_qlinear_average_pool(tmp_path: Path) -> None:
    x = q_data((1, 3, 8, 8), np.uint8, 61)
    consts = {**qparams("x", 0.1, 128, np.uint8), **qparams("y", 0.07, 120, np.uint8)}
    node = helper.make_node(
        "QLinearAveragePool",
        ["X", "x_s", "x_z", "y_s", "y_z"],
        ["Y"],
        domain=MS,
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
    )
    check(tmp_path, [node], {"X": x}, ["Y"], consts)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_concat(tmp_path: Path, dtype: type) -> None:
    a, b = q_data((1, 2, 3, 3), dtype, 62), q_data((1, 3, 3, 3), dtype, 63)
    unsigned = dtype == np.uint8
    consts = {
        **qparams("y", 0.1, 128 if unsigned else 0, dtype),
        **qparams("a", 0.07, 100 if unsigned else 4, dtype),
        **qparams("b", 0.1, 128 if unsigned else 0, dtype),
    }
    node = helper.make_node(
        "QLinearConcat",
        ["y_s", "y_z", "A", "a_s", "a_z", "B", "b_s", "b_z"],
        ["Y"],
        domain=MS,
        axis=1,
    )
    check(tmp_path, [node], {"A": a, "B": b}, ["Y"], consts)


@pytest.mark.parametrize("op_type", ["QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_unary(tmp_path: Path, op_type: str, dtype: type) -> None:
    x = q_data((2, 10), dtype, 64)
    unsigned = dtype == np.uint8
    y_scale = {"QLinearSigmoid": 1 / 256, "QLinearLeakyRelu": 0.06, "QLinearSoftmax": 1 / 256}
    y_zp = {"QLinearSigmoid": 0 if unsigned else -128, "QLinearSoftmax": 0 if unsigned else -128}
    consts = {
        **qparams("x", 0.05, 128 if unsigned else 0, dtype),
        **qparams("y", y_scale[op_type], y_zp.get(op_type, 100 if unsigned else -10), dtype),
    }
    attrs = {"alpha": 0.1} if op_type == "QLinearLeakyRelu" else {}
    if op_type == "QLinearSoftmax":
        attrs = {"axis": -1, "opset": 13}
    node = helper.make_node(op_type, ["X", "x_s", "x_z", "y_s", "y_z"], ["Y"], domain=MS, **attrs)
    check(tmp_path, [node], {"X": x}, ["Y"], consts)
