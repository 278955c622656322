"""Concurrent `run()`: one CompiledModel from 8 threads, and two CompiledModels of one model
at once, on the reference, cpu and opencl targets; every output equals the single-threaded
result for the same input (each thread has its own inputs, so crossed buffers would show).
On the cpu target, two libraries whose kernels split over their thread pools run at once,
and a forked child runs split kernels.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import irc
from irc.targets.cpu.target import CpuTarget
from irc.targets.opencl.target import OpenCLTarget

pytestmark = pytest.mark.private_cache

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


# ---- The CPU target's thread pool (kernels/common/pool.h) ---------------------------------------


def _cnn(activation: str) -> str:
    """A conv block whose 3x3 conv and depthwise conv are big enough to split over the CPU
    target's pool; `activation` differs between models, so their C libraries (and pools)
    differ too."""
    rng = np.random.default_rng(11)
    w1 = rng.uniform(-0.2, 0.2, (48, 3, 3, 32)).astype(np.float32)
    w2 = rng.uniform(-0.5, 0.5, (48, 3, 3, 1)).astype(np.float32)
    w3 = rng.uniform(-0.2, 0.2, (32, 1, 1, 48)).astype(np.float32)
    return f"""\
func.func @main(%x: tensor<1x24x24x32xf32>) -> tensor<1x24x24x32xf32>
    attributes {{irc.input_names = ["x"], irc.output_names = ["y"]}} {{
  %w1 = nn.constant {_dense(w1)} : tensor<48x3x3x32xf32>
  %w2 = nn.constant {_dense(w2)} : tensor<48x3x3x1xf32>
  %w3 = nn.constant {_dense(w3)} : tensor<32x1x1x48xf32>
  %a = nn.conv2d %x, %w1 pads = [1, 1, 1, 1] layout = "NHWC" activation = "{activation}"
      : tensor<1x24x24x32xf32>, tensor<48x3x3x32xf32> -> tensor<1x24x24x48xf32>
  %b = nn.conv2d %a, %w2 pads = [1, 1, 1, 1] groups = 48 layout = "NHWC"
      : tensor<1x24x24x48xf32>, tensor<48x3x3x1xf32> -> tensor<1x24x24x48xf32>
  %c = nn.conv2d %b, %w3 layout = "NHWC"
      : tensor<1x24x24x48xf32>, tensor<32x1x1x48xf32> -> tensor<1x24x24x32xf32>
  func.return %c : tensor<1x24x24x32xf32>
}}
"""


def _cnn_inputs(thread: int) -> list[np.ndarray]:
    rng = np.random.default_rng(2000 + thread)
    return [rng.standard_normal((1, 24, 24, 32)).astype(np.float32) for _ in range(3)]


needs_cpu = pytest.mark.skipif(not _available("cpu"), reason="cpu not available")


@pytest.fixture(scope="module")
def two_thread_cnns(private_cache: Path | None) -> tuple[irc.CompiledModel, ...]:
    """Two models of different code on the cpu target, each library on 2 threads (built
    once for the module's tests, into its private cache)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IRC_CPU_THREADS", "2")
        models = tuple(
            irc.compile(irc.parse_module(_cnn(act)), ["cpu"]) for act in ("relu", "relu6")
        )
    ref = irc.compile(irc.parse_module(_cnn("relu")), ["reference"])
    x = _cnn_inputs(0)[0]
    np.testing.assert_allclose(
        models[0].run({"x": x})["y"], ref.run({"x": x})["y"], rtol=1e-4, atol=1e-4
    )
    return models


@needs_cpu
def test_two_cpu_libraries_split_over_their_pools_at_once(
    two_thread_cnns: tuple[irc.CompiledModel, ...],
) -> None:
    """Threads run two libraries' split kernels at once (each pool claimed by one caller at a
    time, a busy pool runs the caller's kernel serially): every output is the serial one
    (a split never changes the order of a sum)."""
    models = two_thread_cnns
    expected = {
        t: [[m.run({"x": x})["y"] for x in _cnn_inputs(t)] for m in models] for t in range(THREADS)
    }

    def work(thread: int) -> None:
        inputs = _cnn_inputs(thread)
        for i in range(6):
            which, k = (i + thread) % 2, i % len(inputs)
            got = models[which].run({"x": inputs[k]})["y"]
            np.testing.assert_array_equal(got, expected[thread][which][k])

    _hammer(work)


@needs_cpu
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_runs_split_kernels(two_thread_cnns: tuple[irc.CompiledModel, ...]) -> None:
    """After a fork the child has none of the parent's pool workers: its first split kernel
    starts new ones (pthread_atfork), and its results are the parent's."""
    model = two_thread_cnns[0]
    x = _cnn_inputs(1)[0]
    want = model.run({"x": x})["y"]  # the parent's workers exist now
    with warnings.catch_warnings():  # Python 3.12+ warns about fork in a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: exit status 0 when every run matches on a new worker
        try:
            ok = all(np.array_equal(model.run({"x": x})["y"], want) for _ in range(5))
            tasks = Path("/proc/self/task")
            ok = ok and (not tasks.is_dir() or len(list(tasks.iterdir())) >= 2)
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish its runs")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
