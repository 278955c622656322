"""DeiT-, Whisper-encoder-, MobileViT- and YOLOv8-like graphs (tests/zoo_graphs.py, the
exporters' op patterns, seeded weights, sizes cut down) against onnxruntime on the
reference, cpu and opencl targets: within 2e-3 of the output's scale, and on cpu with every
op in a target region. DeiT and Whisper have a dynamic batch axis: compiled without shapes
on the reference target, they specialise per batch size."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from cpu_support import needs_compiler
from opencl_support import needs_device
from zoo_graphs import (
    deit_inputs,
    deit_like,
    image_inputs,
    mobilevit_like,
    whisper_encoder_like,
    whisper_inputs,
    yolov8_like,
)

import irc

Feeds = dict[str, np.ndarray]

# name -> (model builder, inputs at a batch size); small sizes, the real structures
MODELS: dict[str, tuple[Callable[[], onnx.ModelProto], Callable[[int], Feeds]]] = {
    "deit": (lambda: deit_like(image=64, layers=2), lambda b: deit_inputs(b, 64)),
    "whisper": (
        lambda: whisper_encoder_like(mels=16, frames=200, hidden=96, heads=3, layers=2),
        lambda b: whisper_inputs(b, 16, 200),
    ),
    "mobilevit": (mobilevit_like, lambda b: image_inputs("pixel_values", b, 64)),
    "yolov8": (yolov8_like, lambda b: image_inputs("images", b, 64)),
}

# The ONNX op types each graph holds: what the importer must convert (none needed a new
# converter: Conv1d is Conv on [N, C, L], Split, Resize, Expand, Where, Range... existed).
pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

OP_TYPES = {
    "deit": {
        "Add", "Concat", "ConstantOfShape", "Conv", "Div", "Equal", "Erf", "Expand",
        "Gather", "Gemm", "MatMul", "Mul", "Pow", "ReduceMean", "Reshape", "Shape", "Slice",
        "Softmax", "Sqrt", "Sub", "Transpose", "Unsqueeze", "Where",
    },
    "whisper": {
        "Add", "Concat", "Conv", "Div", "Erf", "Gather", "Identity", "LayerNormalization",
        "MatMul", "Mul", "Reshape", "Shape", "Softmax", "Transpose", "Unsqueeze",
    },
    "mobilevit": {
        "Add", "Concat", "Conv", "Div", "Gemm", "LayerNormalization", "MatMul", "Mul",
        "ReduceMean", "Reshape", "Sigmoid", "Softmax", "Transpose",
    },
    "yolov8": {
        "Add", "Concat", "Conv", "Div", "MaxPool", "Mul", "Reshape", "Resize", "Sigmoid",
        "Softmax", "Split", "Sub", "Transpose",
    },
}  # fmt: skip

DYNAMIC_BATCH = ("deit", "whisper")


def _save(tmp_path: Path, which: str) -> Path:
    path = tmp_path / f"{which}.onnx"
    onnx.save(MODELS[which][0](), path)
    return path


def _compare(compiled: irc.CompiledModel, path: Path, feeds: Feeds, label: str) -> None:
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    got = compiled.run(feeds)
    for name, want in zip(compiled.output_names, expected, strict=True):
        assert got[name].shape == want.shape, f"{label} {name}"
        error = float(np.max(np.abs(got[name] - want)) / np.max(np.abs(want)))
        assert error <= 2e-3, f"{label} {name}: {error:.3g} of the output scale"


def _compiled_at_batch_2(tmp_path: Path, which: str, target: str) -> None:
    path = _save(tmp_path, which)
    feeds = MODELS[which][1](2 if which in DYNAMIC_BATCH else 1)
    shapes = {name: a.shape for name, a in feeds.items()}
    compiled = irc.compile(path, target, input_shapes=shapes)
    _compare(compiled, path, feeds, f"{which} {target}")
    if target == "cpu":
        assert_all_in_regions(compiled)


def assert_all_in_regions(compiled: irc.CompiledModel) -> None:
    """Every op of every function in a target region: no host op, and no lowering that
    failed and sent its ops back to the host (a refusal; the summary lists them)."""
    functions = [line for line in compiled.summary.splitlines() if line.startswith("@")]
    assert functions, compiled.summary
    for line in functions:
        assert line.endswith("host: 0 ops"), compiled.summary
    assert not compiled.refusals, compiled.summary
    assert "lowering refusals" not in compiled.summary


@pytest.mark.parametrize("which", sorted(MODELS))
def test_graph_has_the_exporters_op_types(which: str) -> None:
    model = MODELS[which][0]()
    assert set(Counter(node.op_type for node in model.graph.node)) == OP_TYPES[which]


@pytest.mark.parametrize("which", sorted(MODELS))
def test_reference(tmp_path: Path, which: str) -> None:
    """Compiled without shapes; a dynamic batch re-specialises at batch 2."""
    path = _save(tmp_path, which)
    compiled = irc.compile(path, "reference")
    for batch in (1, 2) if which in DYNAMIC_BATCH else (1,):
        _compare(compiled, path, MODELS[which][1](batch), f"{which} batch {batch}")


@needs_compiler
@pytest.mark.parametrize("which", sorted(MODELS))
def test_cpu(tmp_path: Path, which: str) -> None:
    _compiled_at_batch_2(tmp_path, which, "cpu")


@needs_device
@pytest.mark.parametrize("which", sorted(MODELS))
def test_opencl(tmp_path: Path, which: str) -> None:
    _compiled_at_batch_2(tmp_path, which, "opencl")


def test_deit_with_sdpa_export(tmp_path: Path) -> None:
    """torch's export of scaled_dot_product_attention (q and k^T each times sqrt(scale), the
    scale from the query's shape) folds into one nn.attention per layer, and matches."""
    from irc.importers import import_model
    from irc.pipelines import parse_pipeline, run_passes

    path = tmp_path / "deit_sdpa.onnx"
    onnx.save(deit_like(image=32, layers=2, sdpa=True), path)
    module = import_model(path, input_shapes={"pixel_values": (1, 3, 32, 32)})
    run_passes(module, parse_pipeline("canonicalize"))
    text = str(module)
    assert text.count("nn.attention") == 2
    assert "nn.mul" not in text
    assert "nn.softmax" not in text
    compiled = irc.compile(path, "reference")
    for batch in (1, 3):
        _compare(compiled, path, deit_inputs(batch, 32), f"deit sdpa batch {batch}")
