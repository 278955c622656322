"""float16 transformers and the ops they need on the cpu target (docs/fp16.md).

A float16 model (`convert_float_to_float16(keep_io_types=True)`, here
`fp16_transformer_graphs.to_float16`, seeded graphs of `transformer_graphs` and
`zoo_graphs`: BERT with dynamic axes, GPT-2, DeiT, Whisper's encoder) runs every op in a cpu
region at either precision:

* the default (`precision=fp32`): float32 activations with the model's float16 weights
  widened (`widen-fp16` widens the whole model, as onnxruntime's CPU provider computes it):
  no farther from the float32 model than onnxruntime's float16 run (1.25x: onnxruntime has a
  few float16 kernels of its own, so neither is the other's bound op for op);
* `precision=fp16` (`IRC_CPU_PRECISION=fp16`): 16-bit activation storage; the ops with
  float16 kernels keep their tensors, every other op (softmax, layer norm, attention,
  pooling, resize, gather, batch matmul, erf, compare...) is widened locally between
  casts, so each op still rounds its result to half once, as the reference target's
  float16 ops do: within one unit in the last place of the half result op by op, and within
  2e-3 of the output scale of the reference on whole models (a few half ulps: a one-ulp
  difference where float32 sums in another order round to the neighbouring half travels
  through the layers).

Both stay within 2e-3 of the output scale of onnxruntime's float16 run, plus that run's own
distance from the float32 model (its float16 kernels differ by version and CPU). Small shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from cpu_support import needs_compiler
from fp16_transformer_graphs import to_float16
from onnx import TensorProto, helper
from onnx_support import make_onnx_model
from transformer_graphs import OnnxGraph, bert_inputs, bert_like, gpt2_inputs, gpt2_like
from zoo_graphs import deit_inputs, deit_like, whisper_encoder_like, whisper_inputs

import irc

pytestmark = [needs_compiler, pytest.mark.private_cache]

SHAPES = {"x": (1, 8, 6, 6), "s": (2, 5, 12)}


def _ops_graph() -> onnx.ModelProto:
    """Independent ops on the inputs (each result a graph output), float32."""
    g = OnnxGraph(np.random.default_rng(5))
    outputs: list[str] = [
        g.op("Softmax", "s", axis=-1),  # type: ignore[list-item]
        g.op("LayerNormalization", "s", g.weight(12, scale=1.0), g.weight(12), axis=-1),  # type: ignore[list-item]
        g.op("MaxPool", "x", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),  # type: ignore[list-item]
        g.op("AveragePool", "x", kernel_shape=[2, 2], strides=[2, 2]),  # type: ignore[list-item]
        g.op("Resize", "x", "", "", g.i64(1, 8, 12, 9), mode="linear"),  # type: ignore[list-item]
        g.op("Gather", g.weight(10, 12, scale=1.0), g.i64(3, 0, 9)),  # type: ignore[list-item]  # a table
        g.op("Gather", "s", g.i64(4, 1), axis=2),  # type: ignore[list-item]
        g.op("MatMul", "s", g.op("Transpose", "s", perm=[0, 2, 1])),  # type: ignore[list-item]
        g.op("MatMul", "s", g.weight(12, 7, scale=0.5)),  # type: ignore[list-item]
        g.op("Erf", "s"),  # type: ignore[list-item]
        g.op("Sqrt", g.op("Abs", "s")),  # type: ignore[list-item]
        g.op("Pow", "s", g.scalar(2.0)),  # type: ignore[list-item]
        g.op("Where", g.op("Greater", "s", g.scalar(0.5)), "s", g.scalar(-3.0)),  # type: ignore[list-item]
        g.op("ReduceMean", "s", axes=[-1], keepdims=1),  # type: ignore[list-item]
        g.op("Concat", "s", g.op("Relu", "s"), axis=1),  # type: ignore[list-item]
    ]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in SHAPES.items()]
    graph = helper.make_graph(g.nodes, "fp16_transformer_ops", inputs, [], g.initializers)
    model = make_onnx_model(graph, opset=17)
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    graph = helper.make_graph(
        g.nodes, "fp16_transformer_ops", inputs, [inferred[n] for n in outputs], g.initializers
    )
    return to_float16(make_onnx_model(graph, opset=17))


def _ops_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(12)
    return {
        n: rng.uniform(-3, 3, s).astype(np.float16).astype(np.float32) for n, s in SHAPES.items()
    }


def _half_ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units in the last place of the half `want`."""
    spacing = np.spacing(np.abs(want).astype(np.float16)).astype(np.float32)
    return np.abs(got - want) / spacing


def _host_ops(compiled: irc.CompiledModel) -> str:
    return compiled.summary.splitlines()[-1]


def test_widened_ops_run_on_cpu_and_round_as_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """precision=fp16: the ops without float16 kernels run in the cpu region in float32
    between casts, and each result is the reference's float16 result (one rounding)."""
    path = tmp_path / "ops.onnx"
    onnx.save(_ops_graph(), path)
    monkeypatch.setenv("IRC_CPU_PRECISION", "fp16")
    compiled = irc.compile(path, "cpu")
    assert _host_ops(compiled).endswith("host: 0 ops"), compiled.summary
    feeds = _ops_feeds()
    got = compiled.run(feeds)
    want = irc.compile(path, "reference").run(feeds)
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert got[name].shape == value.shape, name
        halves = got[name].astype(np.float16).astype(np.float32)
        np.testing.assert_array_equal(got[name], halves, err_msg=name)  # rounded to half
        assert float(np.max(_half_ulps(got[name], value))) <= 1.0, name


def test_precision_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    from irc.targets.cpu.target import PRECISION_ENV, precision_choice

    monkeypatch.delenv(PRECISION_ENV, raising=False)
    assert precision_choice().precision == "fp32"
    monkeypatch.setenv(PRECISION_ENV, "FP16")
    assert precision_choice().precision == "fp16"
    assert precision_choice("fp32").precision == "fp32"  # the pipeline's option wins
    monkeypatch.setenv(PRECISION_ENV, "half")
    choice = precision_choice()
    assert choice.precision == "fp32"
    assert "'half' is neither fp32 nor fp16" in choice.reason


def test_precision_reaches_widen_fp16() -> None:
    """`irc.compile(..., precision=...)` is widen-fp16's option in the default pipeline."""
    from irc.pipelines import default_pipeline

    assert "widen-fp16{targets=cpu precision=fp16}," in default_pipeline(["cpu"], precision="fp16")
    assert "widen-fp16{targets=cpu}," in default_pipeline(["cpu"])
    assert "precision" not in default_pipeline(["cpu"], precision="fp16").split("partition")[1]


# ---- Models -------------------------------------------------------------------------------------

Build = Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]
MODELS: dict[str, Build] = {
    "bert": lambda: (bert_like(hidden=32, heads=2, layers=2), bert_inputs(2, 16)),
    "deit": lambda: (
        deit_like(image=32, patch=8, hidden=48, heads=3, layers=2),
        deit_inputs(1, 32),
    ),
    "gpt2": lambda: (gpt2_like(hidden=32, heads=2, layers=2), gpt2_inputs(1, 12)),
    "whisper": lambda: (
        whisper_encoder_like(mels=16, frames=64, hidden=48, heads=3, layers=2),
        whisper_inputs(1, 16, 64),
    ),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """The float16 model's path, feeds, and onnxruntime's float32 and float16 outputs."""
    fp32, feeds = MODELS[request.param]()
    folder = tmp_path_factory.mktemp(request.param)
    paths = folder / "fp32.onnx", folder / "fp16.onnx"
    onnx.save(fp32, paths[0])
    onnx.save(to_float16(fp32), paths[1])
    outputs = [
        onnxruntime.InferenceSession(p, providers=["CPUExecutionProvider"]).run(None, feeds)
        for p in paths
    ]
    return paths[1], feeds, outputs[0], outputs[1]


# How far irc may be from onnxruntime's float16 run, beyond that run's own distance from the
# float32 model: onnxruntime's float16 results depend on its version and the CPU (on the
# H100 machine's Intel Xeon with AVX-512, onnxruntime's DeiT run was 4.2e-3 of the output
# scale from irc's, which is within 1.25x of onnxruntime's own float16 error).
_FROM_ORT16 = 2e-3


def _errors(got: dict[str, np.ndarray], want: list[np.ndarray]) -> list[float]:
    values = list(got.values())
    assert len(values) == len(want)
    return [float(np.max(np.abs(g - w)) / np.max(np.abs(w))) for g, w in zip(values, want)]


def test_default_precision_is_onnxruntimes(
    model: tuple[Path, dict[str, np.ndarray], list[np.ndarray], list[np.ndarray]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, feeds, want32, want16 = model
    monkeypatch.delenv("IRC_CPU_PRECISION", raising=False)
    shapes = {k: v.shape for k, v in feeds.items()}
    compiled = irc.compile(path, "cpu", input_shapes=shapes)
    assert _host_ops(compiled).endswith("host: 0 ops"), compiled.summary
    got = compiled.run(feeds)
    ort16 = _errors(dict(enumerate(want16)), want32)  # type: ignore[arg-type]
    for mine, theirs in zip(_errors(got, want32), ort16, strict=True):
        assert mine <= theirs * 1.25 + 1e-5, (mine, theirs)
    assert max(_errors(got, want16)) <= _FROM_ORT16 + max(ort16)


def test_fp16_storage_rounds_as_the_reference(
    model: tuple[Path, dict[str, np.ndarray], list[np.ndarray], list[np.ndarray]],
) -> None:
    path, feeds, want32, want16 = model
    shapes = {k: v.shape for k, v in feeds.items()}
    compiled = irc.compile(path, "cpu", input_shapes=shapes, precision="fp16")
    assert _host_ops(compiled).endswith("host: 0 ops"), compiled.summary
    got = compiled.run(feeds)
    reference = irc.compile(path, "reference", input_shapes=shapes).run(feeds)
    assert max(_errors(got, list(reference.values()))) <= 2e-3
    ort16 = _errors(dict(enumerate(want16)), want32)  # type: ignore[arg-type]
    assert max(_errors(got, want16)) <= _FROM_ORT16 + max(ort16)


def test_dynamic_bert_at_two_lengths(tmp_path: Path) -> None:
    """BERT with dynamic batch and sequence axes, no shapes given: specialised per run."""
    path = tmp_path / "bert16.onnx"
    fp32 = bert_like(hidden=32, heads=2, layers=1)
    onnx.save(to_float16(fp32), path)
    compiled = irc.compile(path, "cpu")
    for seq in (8, 20):
        feeds = bert_inputs(1, seq)
        got = compiled.run(feeds)
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        assert max(_errors(got, session.run(None, feeds))) <= 2e-3


def test_cnn_default_precision_is_onnxruntimes_computation(tmp_path: Path) -> None:
    """On a CNN, whose ops onnxruntime's CPU provider all runs in float32 between casts it
    then drops, the default precision computes what onnxruntime's float16 run computes:
    the same float32 arithmetic on the same float16 weights (float32 rounding apart)."""
    from fp16_graphs import mobilenet_v3_small_like

    fp32 = mobilenet_v3_small_like(image=64)
    paths = tmp_path / "fp32.onnx", tmp_path / "fp16.onnx"
    onnx.save(fp32, paths[0])
    onnx.save(to_float16(fp32), paths[1])
    feeds = {"input": np.random.default_rng(3).uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)}
    want32, want16 = (
        onnxruntime.InferenceSession(p, providers=["CPUExecutionProvider"]).run(None, feeds)
        for p in paths
    )
    compiled = irc.compile(paths[1], "cpu", precision="fp32")
    assert _host_ops(compiled).endswith("host: 0 ops"), compiled.summary
    got = compiled.run(feeds)
    assert max(_errors(got, want16)) <= 1e-5
    assert _errors(got, want32)[0] <= _errors(dict(enumerate(want16)), want32)[0] * 1.01 + 1e-6  # type: ignore[arg-type]
