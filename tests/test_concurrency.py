"""Concurrent `run()`: one CompiledModel from 8 threads, and two CompiledModels of one model
at once, on the reference, cpu and opencl targets; every output equals the single-threaded
result for the same input (each thread has its own inputs, so crossed buffers would show).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

import irc
from irc.targets.cpu.target import CpuTarget
from irc.targets.opencl.target import OpenCLTarget

pytestmark = pytest.mark.usefixtures("fresh_cache")

THREADS = 8
RUNS_PER_THREAD = 25

_rng = np.random.default_rng(10)
_W = _rng.standard_normal((8, 16)).astype(np.float32)
_B = _rng.standard_normal((1, 8)).astype(np.float32)


def _dense(array: np.ndarray) -> str:
    return "dense<" + np.array2string(array, separator=", ", threshold=10**6) + ">"


MODEL = f"""\
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x8xf32>
    attributes {{irc.input_names = ["x"], irc.output_names = ["y"]}} {{
  %w = nn.constant {_dense(_W)} : tensor<8x16xf32>
  %b = nn.constant {_dense(_B)} : tensor<1x8xf32>
  %f = nn.fully_connected %x, %w : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %a = nn.add %f, %b : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  %r = nn.relu %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = nn.softmax %r axis = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %s : tensor<4x8xf32>
}}
"""


def _available(target: str) -> bool:
    if target == "cpu":
        return bool(CpuTarget().available())
    if target == "opencl":
        return bool(OpenCLTarget().available())
    return True


TARGETS = [
    pytest.param(t, marks=pytest.mark.skipif(not _available(t), reason=f"{t} not available"))
    for t in ("reference", "cpu", "opencl")
]


def _compile(target: str) -> irc.CompiledModel:
    model = irc.compile(irc.parse_module(MODEL), [target, "reference"])
    assert model.targets[0] == target
    if target != "reference":
        assert f"[{target}]" in model.program.format_schedule()  # really dispatched
    return model


def _inputs(thread: int) -> list[np.ndarray]:
    rng = np.random.default_rng(1000 + thread)
    return [rng.standard_normal((4, 16)).astype(np.float32) for _ in range(4)]


def _hammer(work: Callable[[int], None]) -> None:
    """Run `work(thread)` on THREADS threads started together; re-raise the first error."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def body(thread: int) -> None:
        try:
            barrier.wait()
            work(thread)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("target", TARGETS)
def test_one_model_from_eight_threads(target: str) -> None:
    model = _compile(target)
    expected = {
        t: [model.run({"x": x})["y"] for x in _inputs(t)] for t in range(THREADS)
    }  # single-threaded
    ref = irc.compile(irc.parse_module(MODEL), ["reference"])
    for t in (0, THREADS - 1):
        for x, want in zip(_inputs(t), expected[t], strict=True):
            np.testing.assert_allclose(want, ref.run({"x": x})["y"], rtol=1e-4, atol=1e-5)

    def work(thread: int) -> None:
        inputs = _inputs(thread)
        for i in range(RUNS_PER_THREAD):
            k = (i + thread) % len(inputs)
            np.testing.assert_array_equal(model.run({"x": inputs[k]})["y"], expected[thread][k])

    _hammer(work)


@pytest.mark.parametrize("target", TARGETS)
def test_two_models_of_one_model_run_at_once(target: str) -> None:
    first, second = _compile(target), _compile(target)
    models = (first, second)
    expected = {t: [first.run({"x": x})["y"] for x in _inputs(t)] for t in range(THREADS)}

    def work(thread: int) -> None:
        inputs = _inputs(thread)
        for i in range(RUNS_PER_THREAD):
            k = i % len(inputs)
            got = models[(i + thread) % 2].run({"x": inputs[k]})["y"]
            np.testing.assert_array_equal(got, expected[thread][k])

    _hammer(work)
