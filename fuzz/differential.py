"""Differential testing: random valid `nn` graphs through every target, compared, minimised.

Each graph (`fuzz/graphs.py`: seeded, 1-30 ops, branches and joins, every op family, float32,
i1 masks and quantized int8/uint8 chains) runs through `irc.compile(module, targets=[t])` for
each target `t` of `--targets` (default `reference,cpu,opencl`); the reference target's outputs
are the oracle. With `--onnx`, the graphs that have an ONNX form (`fuzz/onnx_emit.py`) also
run through irc's ONNX importer (on the reference target) and onnxruntime. Half of the
graphs get edge-value inputs (NaN, ±Inf, ±0, denormals, huge and tiny magnitudes, integer
extremes). Graphs are compiled in batches (one module, one build per target per batch); a
batch that fails is retried graph by graph, so a crash names its graph.

Comparison (`compare`; the policy and its reasons are in docs/semantics.md): NaN positions
equal; infinities equal with their sign; finite float32 values within
``RTOL * |ref| + ATOL * scale`` where `scale` is the largest finite |ref| of that output (at
least 1); the sign of zero is not compared; integers and booleans exactly.

A mismatching graph is minimised (`fuzz/minimise.py`: outputs, then ops cut off and replaced
by inputs carrying their reference values, then smaller input shapes) and written as
``<dir>/<name>.mlir`` (its `@main`) with its inputs in ``<name>.npz``; the `.mlir` starts with
the command that replays it::

    python -m fuzz.differential --replay findings/seed123_opencl.mlir

The long run prints progress and a summary table::

    python -m fuzz.differential --graphs 5000 --seed 1 --save-dir /tmp/irc-diff
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import signal
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz.graphs import Const, Graph, build_module, generate, make_inputs  # noqa: E402

TARGETS = ("reference", "cpu", "opencl")
FP16_TARGET = "opencl-fp16"
"""Pseudo-target: the opencl target with half storage (`IRC_OPENCL_PRECISION=fp16`: 16-bit
buffers read and written with core `vload_half`/`vstore_half_rte`, so any OpenCL device runs
it, cl_khr_fp16 or not), compared by `compare_half` on the graphs without edge-value inputs."""
HALF_RTOL = 1e-2
"""fp16: relative tolerance (half has an 11-bit significand: 4.9e-4 per rounding, and a
graph rounds each stored intermediate)."""
HALF_ATOL = 3e-2
"""fp16: absolute tolerance as a fraction of the output's scale (tests/test_opencl_fp16.py's
rule for whole models)."""
HALF_MAX = 65504.0
"""The largest finite half: a larger reference value may be ±inf (or NaN after it) in fp16."""
HALF_TINY = 2.0**-24
"""The smallest positive half (a subnormal): a float32 magnitude below half of it is zero in
16-bit storage."""
KNOWN_HALF = "known: an intermediate leaves half's range: "
"""A mismatch of `opencl-fp16` on a graph where the float32 reference itself holds a value
half cannot (`leaves_half_range`): 16-bit storage overflows or flushes it by design, so the
difference is explained (docs/semantics.md, "fp16"), not a finding."""
HALF_BOOL_SHARE = 0.95
"""fp16: the share of boolean/integer results that must equal the reference (inputs rounded
to half may flip a comparison between close values)."""
ONNX_TARGETS = ("onnx-import", "onnxruntime")
"""Pseudo-targets of `--onnx`: the graph's ONNX form through irc's importer (run on the
reference target) and through onnxruntime."""
RTOL = 1e-3
"""Relative tolerance of float32 results (per element, relative to the reference value)."""
ATOL = 1e-4
"""Absolute tolerance of float32 results, as a fraction of the output's scale."""
OVERFLOW_EDGE = 1e38
"""A finite result this large and an infinity of the same sign are the same result (how
close to FLT_MAX = 3.4e38 a sum gets depends on its order)."""
QDQ_TARGETS = frozenset({"opencl"})
"""Targets that run quantized ops in float between `quant.dcast` and `quant.qcast`
(`runs_quantized = False`): their quantized results may round differently."""
QDQ_QUANTA = 1
"""How many storage steps a QDQ target's quantized result may be off (docs/semantics.md)."""


# ---- Comparison --------------------------------------------------------------------------------


def compare(ref: np.ndarray, got: np.ndarray, quanta: int = 0, step: float = 0.0) -> str | None:
    """None when `got` matches the reference `ref`, else what differs (docs/semantics.md).
    `quanta`: how far integer storage may be off (quantized results of a target that runs
    them in float through `insert-qdq`); `step`: the same for a float result dequantized
    from such a value (`quanta` times its scale); 0 everywhere else."""
    got = np.asarray(got)
    if ref.shape != got.shape:
        return f"shape {got.shape} != {ref.shape}"
    if ref.dtype != got.dtype:
        return f"dtype {got.dtype} != {ref.dtype}"
    if ref.dtype.kind != "f":
        diff = np.abs(ref.astype(np.int64) - got.astype(np.int64))
        bad = np.flatnonzero(diff > quanta)
        if bad.size:
            i = bad[0]
            return f"{bad.size} of {ref.size} differ, first at {i}: {got.flat[i]} != {ref.flat[i]}"
        return None
    r = ref.astype(np.float64)
    g = got.astype(np.float64)
    rn, gn = np.isnan(r), np.isnan(g)
    if (rn != gn).any():
        i = np.flatnonzero(rn != gn)[0]
        count = int((rn != gn).sum())
        return f"NaN positions differ ({count}), first at {i}: {g.flat[i]} != {r.flat[i]}"
    ri, gi = np.isinf(r), np.isinf(g)
    # a sum within rounding of FLT_MAX may overflow in one summation order and not another
    edge = (
        (ri != gi)
        & (np.minimum(np.abs(r), np.abs(g)) >= OVERFLOW_EDGE)
        & (np.sign(r) == np.sign(g))
    )
    ri, gi = ri & ~edge, gi & ~edge
    both_inf = ri & gi
    if (ri != gi).any() or (np.sign(r[both_inf]) != np.sign(g[both_inf])).any():
        bad = (ri != gi) | (both_inf & (np.sign(r) != np.sign(g)))
        i = np.flatnonzero(bad)[0]
        return f"Inf positions differ ({int(bad.sum())}), first at {i}: {g.flat[i]} != {r.flat[i]}"
    finite = ~(rn | ri | edge)
    if not finite.any():
        return None
    scale = max(1.0, float(np.abs(r[finite]).max()))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - r)
    bad = finite & (err > RTOL * np.abs(r) + ATOL * scale + step * (1 + 1e-6))
    if bad.any():
        i = np.flatnonzero(bad)[0]
        return (
            f"{int(bad.sum())} of {ref.size} values differ, first at {i}: {g.flat[i]!r} != "
            f"{r.flat[i]!r} (scale {scale:.3g})"
        )
    return None


def compare_half(ref: np.ndarray, got: np.ndarray) -> str | None:
    """None when the fp16 result `got` is within half precision of the reference `ref`
    (docs/semantics.md, "fp16"), else what differs."""
    got = np.asarray(got)
    if ref.shape != got.shape:
        return f"shape {got.shape} != {ref.shape}"
    if ref.dtype.kind != "f":
        if ref.size and np.mean(ref == got) < HALF_BOOL_SHARE:
            return f"{int((ref != got).sum())} of {ref.size} differ (fp16 allows 5 %)"
        return None
    r = ref.astype(np.float64)
    g = got.astype(np.float64)
    # beyond half's range the fp16 result may overflow (to ±inf, and NaN after that)
    big = ~np.isfinite(r) | (np.abs(r) > HALF_MAX * 0.5)
    if ((np.isnan(r) != np.isnan(g)) & ~big).any() or (np.isnan(r) & ~np.isnan(g)).any():
        bad = (np.isnan(r) != np.isnan(g)) & ~(big & ~np.isnan(r))
        i = np.flatnonzero(bad)[0]
        return f"NaN positions differ ({int(bad.sum())}), first at {i}: {g.flat[i]} != {r.flat[i]}"
    finite = np.isfinite(r) & ~big
    if not finite.any():
        return None
    scale = max(1.0, float(np.abs(r[finite]).max()))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - r)
    bad = finite & ~(err <= HALF_RTOL * np.abs(r) + HALF_ATOL * scale)
    if bad.any():
        i = np.flatnonzero(bad)[0]
        return (
            f"{int(bad.sum())} of {ref.size} values differ (fp16), first at {i}: "
            f"{g.flat[i]!r} != {r.flat[i]!r} (scale {scale:.3g})"
        )
    return None


def leaves_half_range(graph: Graph, inputs: Sequence[np.ndarray]) -> bool:
    """Whether a float tensor of `graph` (an input or any op's result, as the reference
    computes it in float32) holds a finite value beyond the largest half (it is ±inf in 16-bit
    storage) or a nonzero one below half's smallest subnormal (it is ±0 there)."""
    produced = [r for n in graph.nodes for r in n.results if graph.values[r].kind == "f32"]
    probe = Graph(graph.values, graph.inputs, graph.nodes, list(dict.fromkeys(produced)))
    (ref,) = run_target([probe], [list(inputs)], "reference")
    for a in [*inputs, *(ref.outputs or [])]:
        a = np.asarray(a)
        if a.dtype.kind != "f":
            continue
        magnitude = np.abs(a[np.isfinite(a)].astype(np.float64))
        if (magnitude > HALF_MAX).any() or ((magnitude > 0) & (magnitude < HALF_TINY / 2)).any():
            return True
    return False


def half_available() -> bool:
    """Whether `opencl-fp16` can run here: an OpenCL device is available (half storage needs
    no cl_khr_fp16)."""
    try:
        from irc.targets.opencl.device import get_device

        get_device()
    except Exception:
        return False
    return True


def describe_exception(exc: BaseException) -> str:
    """`Type: message (file:line)`, the line that raised it."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" ({tb[-1].filename}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {str(exc)[:400]}{where}"


def failure_kind(why: str) -> str:
    """What a minimised graph must keep of a finding `why`: a crash's exception type and
    raising line; a compile failure's refusal with symbol names and numbers stripped; any
    mismatch for a mismatch."""
    if why.startswith("crash: "):
        name = re.match(r"crash: ([\w.]+)", why)
        where = re.search(r"\(([^()]+:\d+)\)\s*$", why)
        return f"crash {name.group(1) if name else ''} {where.group(1) if where else ''}"
    if why.startswith("compile failure: "):
        text = re.sub(r"@\w+", "@", why[len("compile failure: ") :])
        return "compile failure " + re.sub(r"\d+", "N", text)
    return "mismatch"


# ---- Running -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One graph on one target: outputs, or the error that stopped it."""

    outputs: list[np.ndarray] | None = None
    error: str | None = None
    kind: str = "ok"
    """`ok`, `crash` (compile or run raised), `compile-failure` (a target refused to lower or
    build a region it had accepted: `CompiledModel.refusals`)."""
    refusals: list[str] = field(default_factory=list)


def _quiet():
    return contextlib.redirect_stderr(io.StringIO())


@contextlib.contextmanager
def _precision(target: str):
    """`IRC_OPENCL_PRECISION=fp16` while compiling for `opencl-fp16`."""
    if target != FP16_TARGET:
        yield
        return
    from irc.targets.opencl.target import PRECISION_ENV

    old = os.environ.get(PRECISION_ENV)
    os.environ[PRECISION_ENV] = "fp16"
    try:
        yield
    finally:
        if old is None:
            del os.environ[PRECISION_ENV]
        else:
            os.environ[PRECISION_ENV] = old


def run_target(
    graphs: Sequence[Graph], inputs: Sequence[Sequence[np.ndarray]], target: str
) -> list[Outcome]:
    """Every graph of the batch on `target` (`opencl-fp16`: opencl in half storage),
    compiled as one module."""
    import irc

    try:
        module = build_module(graphs)
    except Exception as exc:  # a generator bug: report it per graph
        return [Outcome(error=f"build: {describe_exception(exc)}", kind="crash")] * len(graphs)
    feed = {f"g{k}_in{i}": a for k, ins in enumerate(inputs) for i, a in enumerate(ins)}
    try:
        with warnings.catch_warnings(), _quiet(), _precision(target):
            warnings.simplefilter("ignore")
            compiled = irc.compile(module, targets=["opencl" if target == FP16_TARGET else target])
            result = compiled.run(feed)
    except Exception as exc:
        if len(graphs) > 1:
            return [run_target([g], [i], target)[0] for g, i in zip(graphs, inputs, strict=True)]
        return [Outcome(error=describe_exception(exc), kind="crash")]
    refusals = [r.describe() for r in compiled.refusals]
    if refusals and len(graphs) > 1:
        return [run_target([g], [i], target)[0] for g, i in zip(graphs, inputs, strict=True)]
    out = []
    for k, graph in enumerate(graphs):
        outputs = [np.asarray(result[f"g{k}_out{j}"]) for j in range(len(graph.outputs))]
        kind = "compile-failure" if refusals else "ok"
        out.append(Outcome(outputs, kind=kind, refusals=refusals))
    return out


OWN_STEP_OPS = frozenset({"conv2d", "add", "avg_pool2d"})
"""Quantized ops that round their own result (in QDQ: float arithmetic, then `quant.qcast`);
the others move or clamp storage values and round nothing."""


def qdq_error(graph: Graph, value: int) -> float:
    """How far (in real units) a QDQ target's `value` may be from the reference's: one
    storage step (`QDQ_QUANTA`) at each quantized op that rounds its result, carried through
    the ops after it: a conv multiplies an operand's error by its largest sum of |weights|
    over one output channel, an add sums its operands' errors (docs/semantics.md)."""
    producer = next((n for n in graph.nodes if value in n.results), None)
    if producer is None:
        return 0.0  # a graph input: the same data on both sides
    operands = producer.value_operands()
    if producer.kind == "dcast":
        return qdq_error(graph, operands[0])
    t = graph.values[value]
    if t.kind != "q" or t.qtype is None:
        return 0.0
    step = QDQ_QUANTA * max(t.qtype.scale_values)
    if producer.kind == "qcast":
        # a float computed by the target may sit on the other side of a rounding boundary,
        # and a tie may round the other way
        return step
    upstream = [qdq_error(graph, v) for v in operands if graph.values[v].kind == "q"]
    own = step if producer.kind in OWN_STEP_OPS else 0.0
    if producer.kind == "add":
        return own + sum(upstream)
    gain = 1.0
    if producer.kind == "conv2d" and isinstance(producer.operands[1], Const):
        filt = producer.operands[1]
        assert filt.qtype is not None
        real = (filt.array.astype(np.float64) - filt.qtype.zero_point_values[0]) * max(
            filt.qtype.scale_values
        )
        gain = float(np.abs(real).reshape(real.shape[0], -1).sum(axis=1).max())
    return own + gain * max(upstream, default=0.0)


def qdq_allowance(graph: Graph, value: int, target: str) -> tuple[int, float]:
    """(storage steps, float step) a QDQ target's result `value` may be off: `qdq_error`
    in the steps of a quantized output, or as is for the dcast of one; (0, 0.0) for other
    targets and values."""
    if target not in QDQ_TARGETS:
        return 0, 0.0
    t = graph.values[value]
    error = qdq_error(graph, value)
    if t.kind == "q" and t.qtype is not None:
        return max(QDQ_QUANTA, int(error / max(t.qtype.scale_values) + 1e-6)), 0.0
    return 0, error


@dataclass
class GraphResult:
    graph: Graph
    inputs: list[np.ndarray]
    edge: bool
    outcomes: dict[str, Outcome]
    mismatches: dict[str, str]
    """target -> what differs from the reference."""


def _run_targets(
    graphs: Sequence[Graph],
    inputs: Sequence[Sequence[np.ndarray]],
    targets: Sequence[str],
    concurrent: bool,
) -> dict[str, tuple[list[Outcome], float]]:
    """target -> (outcomes, seconds) of `run_target`, one target after the other or each on
    a thread of its own (`opencl-fp16` after the others: it sets the environment)."""

    def one(t: str) -> tuple[list[Outcome], float]:
        start = time.perf_counter()
        out = run_target(graphs, inputs, t)
        return out, time.perf_counter() - start

    together = [t for t in targets if t != FP16_TARGET]
    if not concurrent or len(together) < 2:
        return {t: one(t) for t in targets}
    from concurrent.futures import ThreadPoolExecutor

    # stderr and the warning filters are the process's: redirected once around the threads
    with warnings.catch_warnings(), _quiet(), ThreadPoolExecutor(len(together)) as pool:
        warnings.simplefilter("ignore")
        futures = {t: pool.submit(one, t) for t in together}
        results = {t: f.result() for t, f in futures.items()}
    if FP16_TARGET in targets:
        results[FP16_TARGET] = one(FP16_TARGET)
    return {t: results[t] for t in targets}


def check_batch(
    graphs: Sequence[Graph],
    inputs: Sequence[list[np.ndarray]],
    edges: Sequence[bool],
    targets: Sequence[str],
    timings: dict[str, float] | None = None,
    concurrent: bool = False,
) -> list[GraphResult]:
    """Run a batch on every target and compare each with the reference; `timings` adds up
    the seconds spent per target (compile and run). With `concurrent`, the targets compile
    and run on threads of their own, so that one's C compiler (a process) and another's
    OpenCL build overlap."""
    per_target = _run_targets(
        graphs, inputs, list(dict.fromkeys(["reference", *targets])), concurrent
    )
    for t, (_, seconds) in per_target.items():
        if timings is not None:
            timings[t] = timings.get(t, 0.0) + seconds
    results = []
    for k, graph in enumerate(graphs):
        outcomes = {t: per_target[t][0][k] for t in per_target}
        ref = outcomes["reference"]
        mismatches: dict[str, str] = {}
        if ref.outputs is not None:
            for t, o in outcomes.items():
                if t == "reference" or o.outputs is None:
                    continue
                if t == FP16_TARGET and edges[k]:
                    continue  # edge values are not half values: nothing to compare
                for j, (r, g) in enumerate(zip(ref.outputs, o.outputs, strict=True)):
                    if t == FP16_TARGET:
                        why = compare_half(r, g)
                        if why is not None:
                            known = KNOWN_HALF if leaves_half_range(graph, inputs[k]) else ""
                            mismatches[t] = f"{known}output {j}: {why}"
                            break
                        continue
                    quanta, step = qdq_allowance(graph, graph.outputs[j], t)
                    why = compare(r, g, quanta, step)
                    if why is not None:
                        mismatches[t] = f"output {j}: {why}"
                        break
        results.append(GraphResult(graph, list(inputs[k]), edges[k], outcomes, mismatches))
    return results


def graph_failure(graph: Graph, inputs: Sequence[np.ndarray], target: str) -> str | None:
    """How `target` fails on one graph: `crash: ...` (compile or run raised; for
    `reference` too), `compile failure: ...` (a region it accepted and then refused), or
    what differs from the reference; None when it does not. `onnx-import` and `onnxruntime`
    run the graph's ONNX form (`fuzz/onnx_emit.py`)."""
    if target in ONNX_TARGETS:
        from fuzz.onnx_emit import KNOWN_ORT, check_onnx

        (ref,) = run_target([graph], [list(inputs)], "reference")
        found = check_onnx(graph, inputs, ref.outputs)
        why = None if found is None else found.get(target)
        # an explained difference does not count: the minimiser must keep the finding's own
        return None if why is None or why.startswith(KNOWN_ORT) else why
    (res,) = check_batch([graph], [list(inputs)], [False], [target])
    o = res.outcomes[target]
    ref = res.outcomes["reference"]
    if ref.kind == "crash":
        return f"crash: {ref.error}" if target == "reference" else None
    if o.kind == "crash":
        return f"crash: {o.error}"
    if o.kind == "compile-failure":
        return "compile failure: " + "; ".join(o.refusals)
    why = res.mismatches.get(target)
    return None if why is None or why.startswith(KNOWN_HALF) else why


# ---- Findings ----------------------------------------------------------------------------------


def save_finding(
    graph: Graph, inputs: Sequence[np.ndarray], target: str, why: str, directory: Path, name: str
) -> Path:
    """Write the graph as `<name>.mlir` (with the replay command on top) and its inputs."""
    directory.mkdir(parents=True, exist_ok=True)
    module = build_module([graph])
    mlir = directory / f"{name}.mlir"
    npz = directory / f"{name}.npz"
    np.savez(npz, **{f"g0_in{i}": a for i, a in enumerate(inputs)})
    header = (
        f"// differential finding: {target}{'' if target == 'reference' else ' vs reference'}: "
        f"{why[:600]}\n"
        f"// replay: python -m fuzz.differential --replay {mlir} --targets {target}\n"
        f"// (inputs in {npz.name}; ops: {', '.join(graph.op_kinds())})\n"
        f"{qdq_allowance_line(graph)}"
    )
    mlir.write_text(header + str(module) + "\n")
    if target in ONNX_TARGETS:
        import onnx

        from fuzz.onnx_emit import to_onnx

        model = to_onnx(graph)
        if model is not None:
            onnx.save(model, mlir.with_suffix(".onnx"))
    return mlir


QDQ_LINE = "// qdq allowance: "
"""The line of a saved finding that holds each output's QDQ allowance (`qdq_allowance` for
the targets of `QDQ_TARGETS`), which `replay` applies: the `.mlir` no longer holds the graph
the allowance is computed from."""


def qdq_allowance_line(graph: Graph) -> str:
    """`QDQ_LINE` with `<output>=<storage steps>,<float step>` per output of `graph` that
    has an allowance on the QDQ targets ("" when none has)."""
    qdq = sorted(QDQ_TARGETS)[0]
    parts = []
    for j, v in enumerate(graph.outputs):
        quanta, step = qdq_allowance(graph, v, qdq)
        if quanta or step:
            parts.append(f"g0_out{j}={quanta},{step!r}")
    return f"{QDQ_LINE}{' '.join(parts)}\n" if parts else ""


def read_qdq_allowance(text: str) -> dict[str, tuple[int, float]]:
    """Output name -> (storage steps, float step) from a saved finding's `QDQ_LINE`."""
    out: dict[str, tuple[int, float]] = {}
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        if line.startswith(QDQ_LINE):
            for item in line[len(QDQ_LINE) :].split():
                name, _, value = item.partition("=")
                quanta, _, step = value.partition(",")
                out[name] = (int(quanta), float(step))
    return out


def replay(path: Path, targets: Sequence[str]) -> int:
    """Run a saved finding on the reference and `targets`; print what differs, crashes and
    compile failures; 1 if any."""
    import irc

    module = irc.read_module(path)
    allowance = read_qdq_allowance(path.read_text())
    npz = path.with_suffix(".npz")
    data = dict(np.load(npz)) if npz.exists() else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref_model = irc.compile(module, targets=["reference"])
            if data is None:
                rng = np.random.default_rng(0)
                data = {
                    s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in ref_model.inputs
                }
            ref = ref_model.run(data)
    except Exception as exc:
        print(f"reference: crash: {describe_exception(exc)}")
        return 1
    status = 0
    for target in targets:
        if target == "reference":
            continue
        try:
            if target in ONNX_TARGETS:
                got = _run_onnx(path.with_suffix(".onnx"), target, data)
            else:
                with _precision(target):
                    model = irc.compile(
                        module, targets=["opencl" if target == FP16_TARGET else target]
                    )
                for refusal in model.refusals:
                    print(f"{target}: compile failure: {refusal.describe()}")
                    status = 1
                got = model.run(data)
        except Exception as exc:
            print(f"{target}: crash: {describe_exception(exc)}")
            status = 1
            continue
        for name in ref:
            r, g = np.asarray(ref[name]), np.asarray(got[name])
            if target == FP16_TARGET:
                why = compare_half(r, g)
            else:
                quanta, step = allowance.get(name, (0, 0.0)) if target in QDQ_TARGETS else (0, 0.0)
                why = compare(r, g, quanta, step)
            print(f"{target} {name}: {'ok' if why is None else why}")
            if why is not None:
                status = 1
                with np.printoptions(precision=6, threshold=40):
                    print(f"  reference: {r.ravel()}")
                    print(f"  {target}: {g.ravel()}")
    return status


def _run_onnx(path: Path, target: str, data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A saved finding's ONNX form through irc's importer or onnxruntime."""
    import irc

    if target == "onnx-import":
        return irc.compile(str(path), targets=["reference"]).run(data)
    import onnxruntime as ort

    session = ort.InferenceSession(str(path))
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, data), strict=True))


# ---- The run -----------------------------------------------------------------------------------


@dataclass
class Summary:
    graphs: int = 0
    ops: int = 0
    edge_graphs: int = 0
    seconds: float = 0.0
    mismatches: Counter[str] = field(default_factory=Counter)
    crashes: Counter[str] = field(default_factory=Counter)
    compile_failures: Counter[str] = field(default_factory=Counter)
    explained: Counter[str] = field(default_factory=Counter)
    """Differences docs/semantics.md explains (onnxruntime dropping NaN, an intermediate
    beyond half's range under 16-bit storage), not findings."""
    onnx_models: int = 0
    target_seconds: dict[str, float] = field(default_factory=dict)
    """Seconds per target, compiling (cold: most of it) and running, added up over the
    worker processes (`onnx`: both ONNX pseudo-targets)."""
    findings: list[tuple[str, int, str, str]] = field(default_factory=list)
    """(target, seed, what, saved path)"""
    interrupted: bool = False
    """The run was stopped (SIGINT, SIGTERM) before its last batch: the table covers the
    batches that had finished."""

    def table(self, targets: Sequence[str]) -> str:
        rows = [
            f"graphs {self.graphs} ({self.edge_graphs} with edge values), ops {self.ops}, "
            f"onnx models {self.onnx_models}, time {self.seconds:.1f} s "
            f"({self.graphs / max(self.seconds, 1e-9):.2f} graphs/s)"
            + (" (interrupted)" if self.interrupted else ""),
            f"{'target':<12}{'mismatches':>12}{'crashes':>10}{'compile failures':>18}"
            f"{'explained':>11}{'seconds':>10}",
        ]
        for t in targets:
            seconds = self.target_seconds.get("onnx" if t in ONNX_TARGETS else t)
            rows.append(
                f"{t:<12}{self.mismatches[t]:>12}{self.crashes[t]:>10}"
                f"{self.compile_failures[t]:>18}{self.explained[t]:>11}"
                f"{'' if seconds is None else f'{seconds:.1f}':>10}"
            )
        return "\n".join(rows)


@dataclass
class SeedReport:
    """One graph's results as a batch hands them back (picklable, no arrays): the graph is
    generated again from its seed where a finding needs it."""

    seed: int
    ops: int
    edge: bool
    outcomes: dict[str, tuple[str, str | None, list[str]]]
    """target -> (kind, error, refusals) of its `Outcome`."""
    mismatches: dict[str, str]
    onnx: dict[str, str] | None = None
    """`check_onnx`'s answer: None when the graph has no ONNX form (or was not asked)."""


WORKER_TARGET = "worker"
"""Where a batch's worker process died (a crash in native code): its graphs are rerun one
by one, each in a process of its own, and a graph whose process dies again is a crash."""


def graph_inputs(
    seed: int, max_ops: int, quantized_share: float
) -> tuple[Graph, list[np.ndarray], bool]:
    """The graph of `seed`, its inputs and whether they hold edge values (odd seeds)."""
    graph = generate(seed, max_ops=max_ops, quantized_share=quantized_share)
    edge = seed % 2 == 1
    return graph, make_inputs(graph, seed, edge), edge


def check_seeds(
    seeds: Sequence[int],
    targets: Sequence[str],
    max_ops: int,
    quantized_share: float,
    onnx: bool,
    concurrent: bool = True,
) -> tuple[list[SeedReport], dict[str, float]]:
    """Generate the graphs of `seeds`, run them as one batch on the reference and `targets`
    (and their ONNX forms with `onnx`); the reports and the seconds per target. What a
    worker process of `run` does with one batch."""
    made = [graph_inputs(s, max_ops, quantized_share) for s in seeds]
    timings: dict[str, float] = {}
    results = check_batch(
        [g for g, _, _ in made],
        [i for _, i, _ in made],
        [e for _, _, e in made],
        targets,
        timings,
        concurrent,
    )
    reports = []
    for s, res in zip(seeds, results, strict=True):
        found = None
        if onnx:
            from fuzz.onnx_emit import check_onnx

            start = time.perf_counter()
            found = check_onnx(res.graph, res.inputs, res.outcomes["reference"].outputs)
            timings["onnx"] = timings.get("onnx", 0.0) + time.perf_counter() - start
        outcomes = {t: (o.kind, o.error, list(o.refusals)) for t, o in res.outcomes.items()}
        reports.append(
            SeedReport(s, res.graph.op_count(), res.edge, outcomes, dict(res.mismatches), found)
        )
    return reports, timings


def _worker_init() -> None:
    """A worker process: quiet, with PoCL's compute units of the parent's setting."""
    warnings.simplefilter("ignore")


def _isolated(batch: Sequence[int], args: tuple) -> tuple[list[SeedReport], dict[str, float]]:
    """Rerun a batch whose worker process died: each graph in a process of its own; a graph
    whose process dies again is a crash of `WORKER_TARGET`."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    reports: list[SeedReport] = []
    timings: dict[str, float] = {}
    for s in batch:
        with ProcessPoolExecutor(1, multiprocessing.get_context("spawn"), _worker_init) as pool:
            try:
                (one,), seconds = pool.submit(check_seeds, [s], *args).result()
            except BrokenProcessPool as exc:
                one = SeedReport(
                    s,
                    0,
                    s % 2 == 1,
                    {WORKER_TARGET: ("crash", f"the worker process died: {exc}", [])},
                    {},
                )
                seconds = {}
        reports.append(one)
        for t, v in seconds.items():
            timings[t] = timings.get(t, 0.0) + v
    return reports, timings


def _batches(
    batches: Sequence[Sequence[int]],
    args: tuple,
    jobs: int,
    stop: Callable[[], bool],
) -> Iterator[tuple[list[SeedReport], dict[str, float]]]:
    """Each batch's reports, in order: in this process (`jobs` 1) or on `jobs` worker
    processes (spawned: an OpenCL context does not survive a fork), at most `2 * jobs`
    batches in flight; no batch is started once `stop()` says so."""
    if jobs <= 1:
        for b in batches:
            if stop():
                return
            yield check_seeds(b, *args)
        return
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(jobs, context, _worker_init)
    pending: list[tuple[Sequence[int], Future]] = []
    todo = list(batches)
    try:
        while todo or pending:
            while todo and len(pending) < 2 * jobs and not stop():
                b = todo.pop(0)
                pending.append((b, pool.submit(check_seeds, b, *args)))
            if not pending:
                return
            b, future = pending.pop(0)
            if stop():  # what has not started yet is left out
                for _, other in pending:
                    other.cancel()
                pending = [(o, f) for o, f in pending if not f.cancelled()]
            try:
                yield future.result()
            except BrokenProcessPool:
                # which batch killed it is unknown: every batch in flight is rerun in
                # isolation, graph by graph
                pool.shutdown(cancel_futures=True)
                yield _isolated(b, args)
                for other, _ in pending:
                    yield _isolated(other, args)
                pending = []
                pool = ProcessPoolExecutor(jobs, context, _worker_init)
    finally:
        _stop_pool(pool)


def _stop_pool(pool) -> None:
    """Cancel what has not started and end the worker processes now (an interrupted run
    does not wait for the batches they are compiling)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        with contextlib.suppress(Exception):
            worker.terminate()


def run(
    count: int,
    seed: int,
    targets: Sequence[str],
    *,
    batch: int = 16,
    max_ops: int = 30,
    save_dir: Path | None = None,
    minimise: bool = True,
    onnx: bool = False,
    progress: bool = False,
    max_findings: int = 20,
    quantized_share: float = 0.2,
    time_limit: float | None = None,
    jobs: int = 1,
    concurrent: bool = True,
) -> Summary:
    """Generate `count` graphs from `seed` on, run them on `targets` in batches of `batch`
    (one module per batch and target; on `jobs` worker processes), compare with the
    reference; with `save_dir`, minimise and save up to `max_findings` findings: every
    mismatch, and the first crash or compile failure of each kind (`failure_kind`)."""
    from fuzz.minimise import minimise_graph

    summary = Summary()
    start = time.perf_counter()
    all_targets = [t for t in targets if t != "reference"]
    if FP16_TARGET in all_targets and not half_available():
        print(f"{FP16_TARGET}: no OpenCL device; not run", flush=True)
        all_targets.remove(FP16_TARGET)
    from fuzz.onnx_emit import KNOWN_ORT

    saved_kinds: set[tuple[str, str]] = set()

    def record(t: str, s: int, why: str) -> None:
        """A finding: minimised and saved (the first of each crash or compile failure kind,
        every mismatch) while fewer than `max_findings` were saved."""
        saved = ""
        kind = failure_kind(why)
        first = (t, kind) not in saved_kinds or kind == "mismatch"
        if save_dir is not None and first and len(saved_kinds) < max_findings:
            saved_kinds.add((t, kind if kind != "mismatch" else f"mismatch {s}"))
            graph, ins, _ = graph_inputs(s, max_ops, quantized_share)
            name = f"seed{s}_{t}"
            if t == WORKER_TARGET:
                t = ",".join(all_targets)  # not minimised: which target died is unknown
            elif minimise:
                graph, ins = minimise_graph(graph, ins, t, why)
                again = graph_failure(graph, ins, t)
                why = again if again is not None and failure_kind(again) == kind else why
            try:
                saved = str(save_finding(graph, ins, t, why, save_dir, name))
            except Exception as exc:  # a graph the builders reject cannot be printed
                saved = f"(not saved: {describe_exception(exc)})"
        summary.findings.append((t, s, why, saved))

    batches = [
        list(range(first, min(first + batch, seed + count)))
        for first in range(seed, seed + count, batch)
    ]
    args = (all_targets, max_ops, quantized_share, onnx, concurrent)

    def stop() -> bool:
        return time_limit is not None and time.perf_counter() - start > time_limit

    try:
        for reports, timings in _batches(batches, args, jobs, stop):
            for t, v in timings.items():
                summary.target_seconds[t] = summary.target_seconds.get(t, 0.0) + v
            for rep in reports:
                s = rep.seed
                summary.graphs += 1
                summary.ops += rep.ops
                summary.edge_graphs += rep.edge
                for t, (kind, error, refusals) in rep.outcomes.items():
                    if kind == "crash":
                        summary.crashes[t] += 1
                        record(t, s, f"crash: {error}")
                    elif kind == "compile-failure":
                        summary.compile_failures[t] += 1
                        record(t, s, "compile failure: " + "; ".join(refusals))
                for t, why in rep.mismatches.items():
                    if why.startswith(KNOWN_HALF):
                        summary.explained[t] += 1
                        continue
                    summary.mismatches[t] += 1
                    record(t, s, why)
                if rep.onnx is not None:
                    summary.onnx_models += 1
                    for t, why in rep.onnx.items():
                        if why.startswith("crash"):
                            summary.crashes[t] += 1
                        elif why.startswith(KNOWN_ORT):
                            summary.explained[t] += 1
                            continue
                        else:
                            summary.mismatches[t] += 1
                        record(t, s, why)
            summary.seconds = time.perf_counter() - start
            if progress:
                bad = sum(summary.mismatches.values()) + sum(summary.crashes.values())
                print(
                    f"[{summary.graphs}/{count}] {summary.seconds:.0f} s, {summary.ops} ops, "
                    f"{bad} mismatches+crashes, "
                    f"{sum(summary.compile_failures.values())} compile failures, "
                    f"{summary.onnx_models} onnx models",
                    flush=True,
                )
    except KeyboardInterrupt:
        summary.interrupted = True
    summary.seconds = time.perf_counter() - start
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fuzz.differential", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--graphs", type=int, default=200, help="how many graphs (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the first graph's seed")
    parser.add_argument("--targets", default=",".join(TARGETS[1:]), help="targets to compare")
    parser.add_argument("--batch", type=int, default=16, help="graphs per compiled module")
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(3, os.cpu_count() or 1),
        help="worker processes, each compiling and running whole batches (default: 3, "
        "at most the CPUs; 1: in this process)",
    )
    parser.add_argument("--max-ops", type=int, default=30)
    parser.add_argument("--save-dir", type=Path, help="write minimised findings here")
    parser.add_argument("--no-minimise", action="store_true")
    parser.add_argument(
        "--onnx", action="store_true", help="also compare ONNX forms with onnxruntime"
    )
    parser.add_argument(
        "--one-target-at-a-time",
        action="store_true",
        help="compile a batch for one target after the other (default: each on a thread)",
    )
    parser.add_argument("--replay", type=Path, help="run a saved finding (.mlir) again")
    parser.add_argument(
        "--time-limit", type=float, help="start no new batch after this many seconds"
    )
    args = parser.parse_args(argv)
    # a stopped run still prints its table (the batches that had finished)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    targets = [t for t in args.targets.split(",") if t]
    if args.replay is not None:
        return replay(args.replay, targets)
    summary = run(
        args.graphs,
        args.seed,
        targets,
        batch=args.batch,
        max_ops=args.max_ops,
        save_dir=args.save_dir,
        minimise=not args.no_minimise,
        onnx=args.onnx,
        progress=True,
        time_limit=args.time_limit,
        jobs=args.jobs,
        concurrent=not args.one_target_at_a_time,
    )
    shown = ["reference", *[t for t in targets if t != "reference"]]
    if args.onnx:
        shown += ["onnx-import", "onnxruntime"]
    print(summary.table(shown))
    seen: set[tuple[str, str]] = set()
    for t, s, why, saved in summary.findings:
        key = (t, why.split(":")[0] + why.split(",")[0][-40:])
        if key in seen:
            continue
        seen.add(key)
        print(f"  {t} seed {s}: {why[:300]}{'  -> ' + saved if saved else ''}")
    return 1 if summary.findings else 0


if __name__ == "__main__":
    os.environ.setdefault("POCL_CPU_MAX_CU_NUM", "2")
    sys.exit(main())
