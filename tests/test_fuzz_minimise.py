"""The differential fuzzer's minimiser on crashes and compile failures (fuzz/minimise.py), its
failure kinds, saved findings and replay (fuzz/differential.py), and the fp16 comparison.

The failing target here is simulated (`run_target` patched to fail whenever a graph holds a
softmax) or unknown to irc (every compile raises), so the tests need neither a C compiler nor
an OpenCL device and cannot depend on a bug that gets fixed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cpu_support import needs_compiler

from fuzz import differential
from fuzz.differential import Outcome, compare_half, failure_kind, graph_failure, replay, run
from fuzz.graphs import generate, make_inputs
from fuzz.minimise import minimise_graph

pytestmark = pytest.mark.private_cache  # CPU and OpenCL builds shared with the run's other modules

CRASH = "ValueError: cannot lower the softmax (/x/lower.py:12)"
REFUSAL = "opencl refused 'region' (@main_opencl_3, 5 ops): lowering: 'nn.softmax' on 2x9 rows"


def _softmax_graph():
    """A seeded graph of several ops that holds one softmax (after other ops)."""
    for seed in range(2000):
        g = generate(seed, max_ops=10, quantized_share=0.0)
        kinds = g.op_kinds()
        if "softmax" in kinds and g.op_count() >= 6 and kinds.index("softmax") > 1:
            return g, make_inputs(g, seed, False)
    raise AssertionError("no seed gives a softmax graph")


@pytest.fixture
def failing_target(monkeypatch: pytest.MonkeyPatch):
    """Targets `crashy` (raises on a graph with a softmax) and `refusing` (refuses it)."""
    real = differential.run_target

    def fake(graphs, inputs, target):
        if target not in ("crashy", "refusing"):
            return real(graphs, inputs, target)
        out = real(graphs, inputs, "reference")
        for k, g in enumerate(graphs):
            if "softmax" in g.op_kinds():
                if target == "crashy":
                    out[k] = Outcome(error=CRASH, kind="crash")
                else:
                    out[k] = Outcome(out[k].outputs, kind="compile-failure", refusals=[REFUSAL])
        return out

    monkeypatch.setattr(differential, "run_target", fake)


def test_failure_kinds() -> None:
    assert failure_kind("output 0: NaN positions differ (1)") == "mismatch"
    assert failure_kind(f"crash: {CRASH}") == "crash ValueError /x/lower.py:12"
    other_line = "crash: ValueError: cannot lower the softmax (/x/lower.py:13)"
    assert failure_kind(other_line) != failure_kind(f"crash: {CRASH}")
    # the same refusal on another region and shape is the same kind
    a = failure_kind(f"compile failure: {REFUSAL}")
    b = failure_kind("compile failure: " + REFUSAL.replace("_3, 5", "_0, 2").replace("2x9", "4x4"))
    assert a == b
    assert a.startswith("compile failure")


@pytest.mark.parametrize("target", ["crashy", "refusing"])
def test_minimises_a_failure_to_the_failing_op(failing_target, target: str) -> None:
    graph, inputs = _softmax_graph()
    why = graph_failure(graph, inputs, target)
    assert why is not None
    assert why.startswith("crash" if target == "crashy" else "compile")
    small, small_in = minimise_graph(graph, inputs, target, why)
    assert small.op_kinds() == ["softmax"], small.op_kinds()
    assert sum(a.size for a in small_in) < sum(a.size for a in inputs)
    assert failure_kind(graph_failure(small, small_in, target) or "") == failure_kind(why)


def test_a_mismatch_is_not_minimised_into_a_crash(failing_target) -> None:
    graph, inputs = _softmax_graph()
    # a mismatch being minimised never turns into a graph that crashes instead
    small, _ = minimise_graph(graph, inputs, "crashy", "output 0: 3 of 9 values differ")
    assert small is graph


def test_run_saves_a_minimised_crash_with_its_replay_command(tmp_path: Path, capsys) -> None:
    # an unknown target: every compile raises TargetError, so every graph is a crash
    summary = run(3, 11, ["no-such-target"], batch=3, max_ops=8, save_dir=tmp_path)
    assert summary.crashes["no-such-target"] == 3
    saved = [s for t, _, why, s in summary.findings if s]
    assert len(saved) == 1, "one crash kind: minimised and saved once"
    text = Path(saved[0]).read_text()
    assert "crash: TargetError" in text.splitlines()[0]
    assert f"--replay {saved[0]} --targets no-such-target" in text
    assert text.count("nn.") == 1, "minimised to one op"
    assert replay(Path(saved[0]), ["no-such-target"]) == 1
    assert "crash: TargetError" in capsys.readouterr().out


def test_compare_half() -> None:
    ref = np.array([1.0, -2.5, 100.0, 0.0], np.float32)
    assert compare_half(ref, (ref * 1.004).astype(np.float32)) is None
    assert compare_half(ref, ref + np.float32([0, 0, 5, 0])) is not None
    # beyond half's range an fp16 result may overflow
    big = np.array([1e6, np.nan, 1.0], np.float32)
    assert compare_half(big, np.array([np.inf, np.nan, 1.0], np.float32)) is None
    assert compare_half(big, np.array([np.nan, np.nan, 1.0], np.float32)) is None
    assert compare_half(big, np.array([1e6, 1.0, 1.0], np.float32)) is not None
    assert compare_half(ref, np.array([1.0, np.nan, 100.0, 0.0], np.float32)) is not None
    # booleans: 95 % must agree
    mask = np.arange(100) % 2 == 0
    flipped = mask.copy()
    flipped[:3] = ~flipped[:3]
    assert compare_half(mask, flipped) is None
    flipped[:10] = ~mask[:10]
    assert compare_half(mask, flipped) is not None


def test_qdq_allowance_carries_each_rounding_through_the_chain() -> None:
    """A QDQ target may be one step off at each op that rounds; a conv multiplies an upstream
    error by its largest |weight| sum, an add passes it on (seed 300724: a step of a conv
    with scale 0.030 was 10 steps of the add after it, scale 0.0031)."""
    from xdsl.dialects.builtin import f32

    from fuzz.differential import qdq_allowance, qdq_error
    from fuzz.graphs import Const, Graph, Node, VType, i8
    from irc.dialects.quant import UniformQuantizedType

    def q(scale: float, zp: int = 0) -> VType:
        return VType((1, 2, 2, 1), "q", UniformQuantizedType.per_tensor(i8, f32, scale, zp))

    w = Const(np.array([[[[3]]], [[[-5]]]], np.int8), q(0.5).qtype)
    values = [q(0.1), q(0.05), q(0.01), q(0.001), VType((1, 2, 2, 1)), q(0.2), q(0.01)]
    nodes = [
        Node("conv2d", [0, w, None], {}, [1]),  # own step 0.05; its input is exact
        Node("add", [1, 2], {}, [3]),  # 0.001 + 0.05
        Node("dcast", [3], {}, [4]),
        Node("conv2d", [1, w, None], {}, [5]),  # 0.2 + 2.5 * 0.05
        Node("relu", [5], {}, [6]),  # moves storage: no step of its own
    ]
    graph = Graph(values, [0, 2], nodes, [3, 4, 6])
    assert qdq_error(graph, 1) == pytest.approx(0.05)
    assert qdq_allowance(graph, 3, "opencl") == (51, 0.0)
    assert qdq_allowance(graph, 4, "opencl") == (0, pytest.approx(0.051))
    assert qdq_error(graph, 6) == pytest.approx(0.2 + 2.5 * 0.05)
    assert qdq_allowance(graph, 3, "cpu") == (0, 0.0), "cpu runs int8 natively: exact"


def test_fp16_target_explains_an_intermediate_beyond_half_range() -> None:
    """log of values beyond 65504 is finite in float32 and inf in 16-bit storage (the fuzzer's
    finding at seed 14, minimised): explained; the same graph with half-range values must
    match."""
    from fuzz.differential import FP16_TARGET, KNOWN_HALF, half_available, leaves_half_range
    from fuzz.graphs import Graph, Node, VType

    t, c = VType((1, 6)), VType((1, 6), "i1")
    nodes = [Node("log", [1], {}, [2]), Node("select", [0, 2, 1], {}, [3])]
    graph = Graph([c, t, t, t], [0, 1], nodes, [3])
    pick = np.ones((1, 6), bool)
    big = [pick, np.full((1, 6), 4.0e5, np.float32)]
    small = [pick, np.full((1, 6), 3.0, np.float32)]
    assert leaves_half_range(graph, big)
    assert not leaves_half_range(graph, small)
    tiny = Graph([t, t], [0], [Node("mul", [0, 0], {}, [1])], [1])
    assert leaves_half_range(tiny, [np.full((1, 6), 1e-5, np.float32)]), "1e-10 flushes to 0"
    if not half_available():
        pytest.skip("no OpenCL device: opencl-fp16 does not run")
    (res,) = differential.check_batch([graph], [big], [False], [FP16_TARGET])
    assert res.mismatches[FP16_TARGET].startswith(KNOWN_HALF)
    (res,) = differential.check_batch([graph], [small], [False], [FP16_TARGET])
    assert not res.mismatches


def test_minimiser_bypasses_ops_between_the_two_that_fail_together(monkeypatch) -> None:
    """A failure that needs two ops (a target fusing them, say) survives neither cut; the
    ops between them go by bypass (their users read their operand)."""
    from fuzz.graphs import Graph, Node, VType

    real = differential.run_target

    def fake(graphs, inputs, target):
        out = real(graphs, inputs, "reference")
        if target != "fused":
            return out
        for k, g in enumerate(graphs):
            if {"relu", "tanh"} <= set(g.op_kinds()):
                out[k] = Outcome(error=CRASH, kind="crash")
        return out

    monkeypatch.setattr(differential, "run_target", fake)
    t = VType((2, 3))
    kinds = ["exp", "relu", "sigmoid", "abs", "tanh", "neg"]
    nodes = [Node(k, [i], {}, [i + 1]) for i, k in enumerate(kinds)]
    graph = Graph([t] * 7, [0], nodes, [6])
    inputs = [np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)]
    why = graph_failure(graph, inputs, "fused")
    assert why is not None
    small, _ = minimise_graph(graph, inputs, "fused", why)
    assert small.op_kinds() == ["relu", "tanh"]


def _quantized_graph():
    """A seeded graph with an int8/uint8 output that has a QDQ allowance."""
    from fuzz.differential import qdq_allowance

    for seed in range(3000):
        g = generate(seed, max_ops=6, quantized_share=1.0)
        if any(qdq_allowance(g, v, "opencl") != (0, 0.0) for v in g.outputs):
            return g, make_inputs(g, seed, False)
    raise AssertionError("no seed gives a quantized output")


def test_a_saved_finding_keeps_its_qdq_allowance() -> None:
    from fuzz.differential import qdq_allowance, qdq_allowance_line, read_qdq_allowance

    graph, _ = _quantized_graph()
    expected = {
        f"g0_out{j}": qdq_allowance(graph, v, "opencl")
        for j, v in enumerate(graph.outputs)
        if qdq_allowance(graph, v, "opencl") != (0, 0.0)
    }
    text = "// differential finding: ...\n" + qdq_allowance_line(graph) + "module {\n}\n"
    assert read_qdq_allowance(text) == expected
    # a line after the header is the module, not an allowance
    assert read_qdq_allowance("module {\n}\n" + qdq_allowance_line(graph)) == {}


@needs_compiler
def test_replay_applies_the_qdq_allowance(tmp_path: Path, monkeypatch) -> None:
    """`--replay` compares a QDQ target's outputs with the allowance the run used (it was
    exact before: a saved QDQ rounding difference replayed as a mismatch)."""
    from fuzz.differential import qdq_allowance, save_finding

    graph, inputs = _quantized_graph()
    path = save_finding(graph, inputs, "cpu", "output 0: differs", tmp_path, "q")
    seen: dict[tuple[int, float], int] = {}
    real = differential.compare

    def spy(ref, got, quanta=0, step=0.0):
        seen[(quanta, step)] = seen.get((quanta, step), 0) + 1
        return real(ref, got, quanta, step)

    monkeypatch.setattr(differential, "compare", spy)
    monkeypatch.setattr(differential, "QDQ_TARGETS", frozenset({"cpu"}))
    assert replay(path, ["cpu"]) == 0
    for v in graph.outputs:
        quanta, step = qdq_allowance(graph, v, "opencl")
        assert (quanta, step) in seen, (quanta, step, seen)


def test_worker_processes_report_as_one_process() -> None:
    """`jobs=2`: batches on spawned worker processes give the summary one process gives."""
    one = run(4, 11, ["no-such-target"], batch=2, max_ops=8, minimise=False)
    two = run(4, 11, ["no-such-target"], batch=2, max_ops=8, minimise=False, jobs=2)
    assert (two.graphs, two.ops, two.edge_graphs) == (one.graphs, one.ops, one.edge_graphs)
    assert two.crashes == one.crashes == {"no-such-target": 4}
    # The known-target list in the message is the process's own: targets that other test files
    # registered in this process are absent from spawned workers.
    assert [(t, s, _without_known_targets(why)) for t, s, why, _ in two.findings] == [
        (t, s, _without_known_targets(why)) for t, s, why, _ in one.findings
    ]


def _without_known_targets(why: str) -> str:
    return re.sub(r" \(known targets: [^)]*\)", "", why)


def test_targets_on_threads_report_as_one_after_the_other() -> None:
    args = (4, 11, ["no-such-target"])
    apart = run(*args, batch=2, max_ops=8, minimise=False, concurrent=False)
    together = run(*args, batch=2, max_ops=8, minimise=False, concurrent=True)
    assert together.crashes == apart.crashes == {"no-such-target": 4}
    assert together.findings == apart.findings
