"""Dynamically quantized products on the CPU target (targets/cpu/dynamic_quant.py).

Models are small MatMul (+ Add bias) graphs quantized by onnxruntime's `quantize_dynamic`
(DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by the scales [-> Add]). On the CPU
target each product runs as one `irc_qgemm_dynamic` call (quantization of the input, u8 x s8
GEMM, scale and bias epilogue); its result must be bit-exact with the reference target's
evaluation of the imported ops, with every ISA profile the host runs (`IRC_CPU_ISA`:
vpdpbusd on avx512vnni, vpmaddwd on avx2 and avx512, portable C on generic), and within
onnxruntime's own fused-vs-unfused spread of its unfused run. The cases cover rows, columns
and depths that are not multiples of the register tiles, a quantization shared by two
products (with and without bias), per-column weight scales, an input of all zeros (scale 0)
and uint8 weights whose centred values do not fit int8 (left op by op, still exact).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from cpu_support import RUNNABLE_ISAS, isa_params, needs_compiler, with_kernels
from onnx import TensorProto, helper, numpy_helper
from onnx_support import exact_on_onnxruntime

import irc

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

pytestmark = [needs_compiler, pytest.mark.private_cache(unset=["IRC_CPU_FUSE_DYNAMIC"])]


def two_products(rows: int, depth: int, cols: tuple[int, int], seed: int) -> onnx.ModelProto:
    """x [1, rows, depth] -> (x @ w1 + b1, x @ w2): one input feeding two MatMuls."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 0.5, (depth, cols[0])).astype(np.float32)
    w2 = rng.normal(0, 0.5, (depth, cols[1])).astype(np.float32)
    b1 = rng.normal(0, 0.1, cols[0]).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]),
        helper.make_node("Add", ["m1", "b1"], ["y1"]),
        helper.make_node("MatMul", ["x", "w2"], ["y2"]),
    ]
    graph = helper.make_graph(
        nodes,
        "dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows, depth])],
        [
            helper.make_tensor_value_info("y1", TensorProto.FLOAT, [1, rows, cols[0]]),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, rows, cols[1]]),
        ],
        initializer=[
            numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (w2, "w2"), (b1, "b1"))
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


CASES = {
    # id: (rows, depth, (cols1, cols2), per_channel, weight type)
    "tiles": (16, 64, (32, 48), False, "int8"),
    "tails": (11, 37, (19, 5), False, "int8"),
    "one_row": (1, 130, (33, 16), True, "int8"),
    "parallel": (64, 256, (256, 96), True, "int8"),
    "uint8_weights": (9, 24, (20, 12), False, "uint8"),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("dynamic")
    paths = {}
    for seed, (name, (rows, depth, cols, per_channel, wtype)) in enumerate(CASES.items()):
        source = folder / f"{name}_float.onnx"
        onnx.save_model(two_products(rows, depth, cols, seed), str(source))
        paths[name] = folder / f"{name}.onnx"
        weight_type = (
            quantization.QuantType.QInt8 if wtype == "int8" else quantization.QuantType.QUInt8
        )
        quantization.quantize_dynamic(
            str(source), str(paths[name]), weight_type=weight_type, per_channel=per_channel
        )
    return paths


def session(path: Path, fused: bool):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    if not fused:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    exact = exact_on_onnxruntime(onnx.load(str(path)))  # no int16 saturation on AVX2
    return ort.InferenceSession(
        exact.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def inputs(path: Path, kind: str) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    if kind == "zeros":
        return {"x": np.zeros(shape, np.float32)}
    rng = np.random.default_rng(7)
    x = rng.normal(0, 1, shape).astype(np.float32)
    if kind == "positive":  # the zero point at 0, the scale from the maximum only
        x = np.abs(x)
    return {"x": x}


def compile_cpu(path: Path, isa_name: str, mp: pytest.MonkeyPatch) -> irc.CompiledModel:
    mp.setenv("IRC_CPU_ISA", isa_name)
    mp.delenv("IRC_CPU_PORTABLE", raising=False)
    return irc.compile(str(path), targets=["cpu"])


def source_of(compiled: irc.CompiledModel) -> str:
    return "".join(
        op.properties["source"].data  # type: ignore[attr-defined]
        for op in compiled.module.walk()
        if op.name == "cpu.module"
    )


@pytest.mark.parametrize("isa_name", isa_params(("avx512vnni", "avx512", "avx2", "generic")))
@pytest.mark.parametrize("case", list(CASES))
def test_bit_exact_with_the_reference(
    models: dict[str, Path], case: str, isa_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = models[case]
    reference = irc.compile(str(path), targets=["reference"])
    compiled = compile_cpu(path, isa_name, monkeypatch)  # once: the feeds are inputs only
    for kind in ("normal", "positive", "zeros"):
        feeds = inputs(path, kind)
        got = compiled.run(feeds)
        want = reference.run(feeds)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{case} {kind} {name}")
    # The kernel's definition and one call per product (none for the uint8 weights).
    expected = 0 if CASES[case][4] == "uint8" else 3
    assert with_kernels(source_of(compiled)).count("irc_qgemm_dynamic(") == expected


@pytest.mark.parametrize("case", list(CASES))
def test_within_onnxruntimes_spread(
    models: dict[str, Path], case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = models[case]
    unfused, fused = session(path, fused=False), session(path, fused=True)
    feeds = inputs(path, "normal")
    got = compile_cpu(path, RUNNABLE_ISAS[0], monkeypatch).run(feeds)
    want = dict(zip(["y1", "y2"], unfused.run(None, feeds), strict=True))
    other = dict(zip(["y1", "y2"], fused.run(None, feeds), strict=True))
    for name in want:
        spread = float(np.abs(other[name] - want[name]).max())
        diff = float(np.abs(got[name] - want[name]).max())
        assert diff <= spread + 1e-6 * float(np.abs(want[name]).max()), (case, name, diff, spread)


def test_switch_leaves_the_ops_separate(
    models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_DYNAMIC", "0")
    compiled = irc.compile(str(models["tiles"]), targets=["cpu"])
    assert "irc_qgemm_dynamic(" not in source_of(compiled)
