"""What the side-by-side benchmarks share: timing, golden inputs, one run of a model file on
onnxruntime or the TFLite interpreter, interleaved runs, and table cells. Imported by the
scripts of this folder (run as scripts: their folder is on `sys.path`); it imports numpy, so
a script that sets thread-count variables for BLAS imports it after setting them."""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
NOT_APPLICABLE = "—"
"""A runtime that cannot read the model's format."""


def timed_runs(fn: Callable[[], object], repeat: int, warmup: int) -> list[float]:
    """Seconds of each of `repeat` calls of `fn`, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def median_ms(fn: Callable[[], object], repeat: int, warmup: int) -> float:
    return statistics.median(timed_runs(fn, repeat, warmup)) * 1e3


def interleaved_ms(
    runners: Mapping[str, Callable[[], object]], rounds: int
) -> dict[str, list[float]]:
    """Each runner's times in ms over `rounds` rounds of one run of each, the order reversed
    every other round (so that no runner always follows the same one)."""
    times: dict[str, list[float]] = {label: [] for label in runners}
    labels = list(runners)
    for round_ in range(rounds):
        for label in labels if round_ % 2 == 0 else reversed(labels):
            start = time.perf_counter()
            runners[label]()
            times[label].append((time.perf_counter() - start) * 1e3)
    return times


def interleaved_ort_session(path: Path, threads: int) -> Any:
    """An onnxruntime CPU session to run interleaved with irc in one process: its pool threads
    do not spin (they would take the cores of whichever runtime runs next); all graph
    optimizations (onnxruntime's default, named)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def region_share(summary: str) -> tuple[str, str]:
    """A compiled model's summary line of its entry function (`@...`) and the share of its
    ops in target regions (`"97 %"`, `"?"` when the line does not say)."""
    line = next(line for line in summary.splitlines() if line.startswith("@"))
    counts = re.search(r"(\d+) of (\d+) ops", line)
    share = f"{100 * int(counts[1]) / int(counts[2]):.0f} %" if counts else "?"
    return line, share


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo, else "unknown CPU"."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def kernel_benchmark_args(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """A kernel benchmark's options: `--isa` (profiles besides the host's best, default avx2)
    and `--reps` (timed repetitions, default 20)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--isa", nargs="*", default=["avx2"], help="profiles besides the best")
    parser.add_argument("--reps", type=int, default=20)
    return parser.parse_args(argv)


def isa_names(extra: Sequence[str]) -> list[str]:
    """The host's best cpu ISA profile, then each of `extra` (`IRC_CPU_ISA` names) this host
    runs."""
    from irc.targets.cpu import isa

    best = isa.best().name
    return [best] + [n for n in extra if n != best and not isa.missing(isa.PROFILES[n])]


def build_kernel_program(
    snippets: Sequence[str], main_c: str, profile_name: str, path: Path
) -> Path:
    """A C program of irc's cpu kernel `snippets` and `main_c`, built at `path` (its source
    beside it) with the ISA profile's flags (`-march=native` for the host's best)."""
    from irc.targets.cpu import csrc, isa

    profile = isa.PROFILES[profile_name]
    source = path.with_suffix(".c")
    source.write_text(csrc.source_for(list(snippets)) + main_c)
    native = profile_name == isa.best().name
    flags = ["-O3", "-pthread", *profile.build_flags(native)]
    subprocess.run(["gcc", *flags, str(source), "-o", str(path), "-lm"], check=True)
    return path


def print_kernel_header(names: Sequence[str], reps: int) -> None:
    """The CPU, the profiles compared and the load average, above a kernel benchmark's table."""
    print(f"{cpu_name()}; profiles {', '.join(names)}; 1 thread, best of {reps}, CPU time")
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


def load_inputs(folder: Path) -> dict[str, np.ndarray]:
    return dict(np.load(folder / "inputs_0.npz"))


def ort_runner(path: Path, threads: int) -> Callable[[], object] | str:
    """One onnxruntime inference of the model's golden inputs (`interleaved_ort_session`;
    .onnx only), else why there is none ("—": not its format, "missing")."""
    if path.suffix != ".onnx":
        return NOT_APPLICABLE
    try:
        session = interleaved_ort_session(path, threads)
    except ImportError:
        return "missing"
    inputs = load_inputs(path.parent)
    feed = {i.name: inputs[i.name] for i in session.get_inputs()}
    return lambda: session.run(None, feed)


def tflite_runner(path: Path, threads: int) -> Callable[[], object] | str:
    """One TFLite interpreter (XNNPACK) inference of the golden inputs (.tflite only), else
    why there is none ("—": not its format, "missing")."""
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

    return run


def fmt_ms(value: float | str) -> str:
    return f"{value:8.2f}" if isinstance(value, float) else f"{value:>8}"


def ratio(irc_ms: float | None, other: float | str) -> str:
    if irc_ms is None or not isinstance(other, float):
        return f"{NOT_APPLICABLE:>7}"
    return f"{irc_ms / other:7.2f}"
