"""What the side-by-side benchmarks share: timing, golden inputs, onnxruntime and the TFLite
interpreter on a model file, and table cells. Imported by cpu_vs_ort.py and opencl_vs_ort.py
(run as scripts from this folder)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
NOT_APPLICABLE = "—"
"""A runtime that cannot read the model's format."""


def median_ms(fn: Callable[[], object], repeat: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def load_inputs(folder: Path) -> dict[str, np.ndarray]:
    return dict(np.load(folder / "inputs_0.npz"))


def run_ort(path: Path, threads: int, repeat: int, warmup: int) -> float | str:
    if path.suffix != ".onnx":
        return NOT_APPLICABLE
    try:
        import onnxruntime as ort
    except ImportError:
        return "missing"
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    inputs = load_inputs(path.parent)
    feed = {i.name: inputs[i.name] for i in session.get_inputs()}
    return median_ms(lambda: session.run(None, feed), repeat, warmup)


def run_tflite(path: Path, threads: int, repeat: int, warmup: int) -> float | str:
    if path.suffix != ".tflite":
        return NOT_APPLICABLE
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        return "missing"
    interpreter = Interpreter(model_path=str(path), num_threads=threads)
    interpreter.allocate_tensors()
    inputs = load_inputs(path.parent)
    details = interpreter.get_input_details()

    def run() -> None:
        for d in details:
            interpreter.set_tensor(d["index"], inputs[d["name"]])
        interpreter.invoke()

    return median_ms(run, repeat, warmup)


def fmt_ms(value: float | str) -> str:
    return f"{value:8.2f}" if isinstance(value, float) else f"{value:>8}"


def ratio(irc_ms: float | None, other: float | str) -> str:
    if irc_ms is None or not isinstance(other, float):
        return f"{NOT_APPLICABLE:>7}"
    return f"{irc_ms / other:7.2f}"
