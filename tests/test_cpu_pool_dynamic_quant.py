"""The dynamically quantized GEMM (kernels/common/qgemm_dynamic.c) on the library's own pool.

`irc_qgemm_dynamic` splits its register tiles over the library's thread pool (pool.h
`irc_parallel`), as every other kernel does: no OpenMP team. A product big enough to split
(64 x 512 by 512 x 200: ~6.5 M multiply-adds, 8 x 7 tiles of 8 rows x 32 columns on
avx512vnni) gives the same bits on 1, 2, 3 and 16 threads and equals the reference; the
threads the run started are the pool's ("irc-pool", none of an OpenMP team), and once the
entry returned they sleep (the issue's rule: no busy-waiting thread left after a run).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from cpu_support import needs_compiler, with_kernels
from onnx import TensorProto, helper, numpy_helper

import irc

quantization = pytest.importorskip("onnxruntime.quantization")

pytestmark = [
    needs_compiler,
    pytest.mark.private_cache(unset=["IRC_CPU_FUSE_DYNAMIC", "IRC_CPU_ISA"]),
    pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc"),
]

ROWS, DEPTH, COLS = 64, 512, 200


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(20261127)
    weights = rng.normal(0, 0.5, (DEPTH, COLS)).astype(np.float32)
    bias = rng.normal(0, 0.1, COLS).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["y"]),
        ],
        "dynamic_split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ROWS, DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, ROWS, COLS])],
        initializer=[numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder = tmp_path_factory.mktemp("dynamic_split")
    source, quantized = folder / "float.onnx", folder / "dynamic.onnx"
    onnx.save_model(model, str(source))
    quantization.quantize_dynamic(
        str(source), str(quantized), weight_type=quantization.QuantType.QInt8, per_channel=True
    )
    return quantized


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {"x": rng.normal(0, 1, (1, ROWS, DEPTH)).astype(np.float32)}


def _threads() -> dict[int, tuple[str, int]]:
    """This process's threads -> (name, user + system CPU ticks so far)."""
    found = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        found[int(task.name)] = (name, int(fields[11]) + int(fields[12]))
    return found


def _compiled(path: Path, threads: int, monkeypatch: pytest.MonkeyPatch) -> irc.CompiledModel:
    monkeypatch.setenv("IRC_CPU_THREADS", str(threads))
    compiled = irc.compile(str(path), targets=["cpu"])
    source = "".join(
        op.properties["source"].data  # type: ignore[attr-defined]
        for op in compiled.module.walk()
        if op.name == "cpu.module"
    )
    source = with_kernels(source)  # and its kernel library's
    assert source.count("irc_qgemm_dynamic(") == 2  # the kernel and its one call
    assert "IRC_PARFOR(" not in source[source.index("static void irc_qgemm_dynamic(") :]
    return compiled


def test_same_bits_on_every_thread_count(model_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    feeds = _feeds()
    want = irc.compile(str(model_path), targets=["reference"]).run(feeds)["y"]
    for threads in (1, 2, 3, 16):
        got = _compiled(model_path, threads, monkeypatch).run(feeds)["y"]
        np.testing.assert_array_equal(got, want, err_msg=f"{threads} threads")


def test_runs_on_pool_workers_that_sleep_after_the_run(
    model_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cache: Path
) -> None:
    compiled = _compiled(model_path, 2, monkeypatch)  # its kernel library's pool
    feeds = _feeds()
    before = set(_threads())
    for _ in range(20):
        compiled.run(feeds)
    started = {tid: name for tid, (name, _) in _threads().items() if tid not in before}
    started.pop(threading.get_native_id(), None)
    # the pool's workers (this run's, or started earlier by the same kernel library's pool)
    assert "irc-pool" in {name for name, _ in _threads().values()}
    assert set(started.values()) <= {"irc-pool"}, started  # no OpenMP team
    time.sleep(0.05)
    start = _threads()
    time.sleep(0.5)
    end = _threads()
    burnt = {
        f"{end[t][0]} {t}": end[t][1] - start[t][1] for t in end if t in start and t != os.getpid()
    }
    tick = os.sysconf("SC_CLK_TCK")
    # A spinning thread would show ~0.5 s of CPU (fewer ticks on a loaded machine); a
    # sleeping one none (one tick of rounding allowed). The main thread only sleeps too.
    assert all(ticks <= max(1, tick // 100) for ticks in burnt.values()), burnt
