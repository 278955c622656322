"""Quantized CNNs and a transformer made by onnxruntime's quantizer, on the CPU target.

The models of benchmarks/quantized_onnx.py at small sizes (a MobileNetV2-, a ResNet- and an
EfficientNet-style CNN, quantized to QDQ and QOperator by `quantize_static` with random
calibration; a BERT-style encoder quantized by `quantize_dynamic`), compiled with
`irc.compile(targets=["cpu"])`, against onnxruntime's unfused run (graph optimisations off):

* every op lands in one CPU region;
* QDQ and QOperator CNNs: the outputs within one quantization step (the output's
  DequantizeLinear scale) on at least `WITHIN_ONE` of the elements, at most `MEAN_STEPS`
  steps off on average, the same arg-max; the QDQ and the QOperator file of one network
  (quantized from one float model whose batch norms are folded) give the same result when
  their outputs are quantized alike (both become the same integer ops);
* the dynamically quantized encoder: float outputs within a few times onnxruntime's own
  fused-vs-unfused spread.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from cpu_support import needs_compiler
from onnx_support import exact_on_onnxruntime

import irc

pytest.importorskip("onnxruntime.quantization")

pytestmark = [needs_compiler, pytest.mark.private_cache]

_SPEC = importlib.util.spec_from_file_location(
    "quantized_onnx", Path(__file__).resolve().parents[1] / "benchmarks" / "quantized_onnx.py"
)
assert _SPEC is not None
assert _SPEC.loader is not None
bench = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = bench  # its dataclasses look their module up
_SPEC.loader.exec_module(bench)

SIZE = 64
WITHIN_ONE = 0.98
MEAN_STEPS = 0.5
CNNS = ("mobilenet", "resnet", "efficientnet")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("quantized_onnx")
    return bench.build_all(folder, SIZE)


def compile_cpu(path: Path, tmp_path: Path) -> tuple[object, tuple[int, int, int]]:
    report = tmp_path / f"{path.stem}.json"
    compiled = irc.compile(str(path), targets=["cpu"], report=str(report))
    return compiled, bench.coverage(path, report)


@pytest.mark.parametrize("network", CNNS)
def test_static_quantized_cnn(
    models: dict[str, dict[str, Path]], network: str, tmp_path: Path
) -> None:
    # both files quantize the same folded float model, so they describe the same integer
    # program; a batch norm left in (onnxruntime 1.30's quant_pre_process did not fold
    # them) is quantized as weights in QDQ but kept float in QOperator form
    float_ops = {node.op_type for node in onnx.load(models[network]["float"]).graph.node}
    assert "BatchNormalization" not in float_ops, f"{network}: batch norms not folded"
    outputs = {}
    for kind in ("qdq", "qop"):
        path = models[network][kind]
        compiled, (inside, total, regions) = compile_cpu(path, tmp_path)
        assert (inside, regions) == (total, 1), f"{kind}: {inside}/{total} ops, {regions} regions"
        acc = bench.accuracy(compiled, path)
        assert acc.within_one >= WITHIN_ONE, f"{kind}: {acc}"
        assert acc.mean_steps <= MEAN_STEPS, f"{kind}: {acc}"
        assert acc.same_argmax, f"{kind}: {acc}"
        outputs[kind] = next(iter(compiled.run(bench.input_of(path, 0)).values()))
    steps = {kind: bench.output_step(models[network][kind]) for kind in outputs}
    if steps["qdq"] == steps["qop"]:  # a softmax output: 1/255 in QDQ, 1/256 in QOperator
        np.testing.assert_array_equal(outputs["qdq"], outputs["qop"])


def test_dynamic_quantized_transformer(models: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    path = models["bert"]["dynamic"]
    compiled, (inside, total, regions) = compile_cpu(path, tmp_path)
    assert (inside, regions) == (total, 1), f"{inside}/{total} ops, {regions} regions"
    # onnxruntime's run of the same integers without its AVX2 kernels' int16 saturation
    exact = tmp_path / "bert_dynamic_exact.onnx"
    onnx.save(exact_on_onnxruntime(onnx.load(str(path))), str(exact))
    acc = bench.accuracy(compiled, exact)
    assert acc.same_argmax
    assert acc.max_diff <= 4 * max(acc.ort_spread, 1e-6), acc
