"""Shrink a graph on which a target fails to the smallest one that still fails the same way
(`fuzz/differential.py` calls it on every finding it saves): a mismatch with the reference,
a crash (the same exception type raised at the same line) or a compile failure (the same
refusal, names and numbers aside); `differential.failure_kind` says what "the same" is.

Steps, each kept only when the failure survives (`differential.graph_failure`):
1. one output: the first output that still fails, and only the ops it needs;
2. cut above (drop ops): an op's results become graph inputs that carry the reference's
   values for them (so the rest of the graph sees the same data; seeded random values
   where the reference itself cannot run the graph), dropping every op above;
3. bypass (drop an op in the middle): an op whose operand has its result's type is removed
   and its users read that operand (keeps a difference that needs the ops above and below
   it, e.g. one that exists only where a target fuses two ops);
4. cut below: an earlier value becomes the output, dropping the ops after it;
5. smaller shapes: each input sliced to half of a dimension (the graph re-typed through
   the ops' shape rules; skipped where a rule or a constant no longer fits).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, SSAValue

from fuzz.graphs import Graph, VType, build_ops, make_inputs


def prune(graph: Graph) -> Graph:
    """Only the ops and inputs the outputs need."""
    needed = set(graph.outputs)
    nodes = []
    for node in reversed(graph.nodes):
        if any(r in needed for r in node.results):
            nodes.append(node)
            needed.update(node.value_operands())
    g = graph.copy()
    g.nodes = [n for n in graph.nodes if n in nodes]
    g.inputs = [v for v in graph.inputs if v in needed]
    return g


def _prune_inputs(graph: Graph, inputs: Sequence[np.ndarray]) -> tuple[Graph, list[np.ndarray]]:
    by_value = dict(zip(graph.inputs, inputs, strict=True))
    g = prune(graph)
    return g, [by_value[v] for v in g.inputs]


def bypass(graph: Graph, index: int) -> Graph | None:
    """The graph without node `index`, its users reading its first operand of the result's
    type instead (None when it has none, or several results)."""
    node = graph.nodes[index]
    if len(node.results) != 1:
        return None
    result = node.results[0]
    same = [v for v in node.value_operands() if graph.values[v] == graph.values[result]]
    if not same:
        return None

    def sub(o: object) -> object:
        if isinstance(o, int):
            return same[0] if o == result else o
        if isinstance(o, list):
            return [sub(x) for x in o]
        return o

    g = graph.copy()
    del g.nodes[index]
    for n in g.nodes:
        n.operands = [sub(o) for o in n.operands]  # type: ignore[misc]
    g.outputs = [same[0] if o == result else o for o in g.outputs]
    return g


def reference_values(graph: Graph, inputs: Sequence[np.ndarray]) -> dict[int, np.ndarray]:
    """Every value of the graph as the reference target computes it."""
    from fuzz.differential import run_target

    every = graph.copy()
    every.outputs = [r for n in graph.nodes for r in n.results]
    (outcome,) = run_target([every], [list(inputs)], "reference")
    values = dict(zip(graph.inputs, inputs, strict=True))
    if outcome.outputs is None:
        # the reference cannot run it (a crash being minimised): seeded stand-ins
        every.inputs = every.outputs
        values.update(zip(every.outputs, make_inputs(every, 0, False), strict=True))
        return values
    values.update(zip(every.outputs, outcome.outputs, strict=True))
    return values


def retype(graph: Graph) -> Graph | None:
    """The graph with every value's shape re-inferred from its inputs (None: invalid)."""
    block = Block(arg_types=[graph.values[v].tensor() for v in graph.inputs])
    env: dict[int, SSAValue] = dict(zip(graph.inputs, block.args, strict=True))
    try:
        build_ops(graph, env, block)
    except Exception:
        return None
    g = graph.copy()
    for v, value in env.items():
        t = value.type
        assert isinstance(t, TensorType)
        old = g.values[v]
        g.values[v] = VType(tuple(t.get_shape()), old.kind, old.qtype)
    return g


def minimise_graph(
    graph: Graph,
    inputs: Sequence[np.ndarray],
    target: str,
    why: str = "mismatch",
    budget: int = 80,
) -> tuple[Graph, list[np.ndarray]]:
    """The smallest graph (and inputs) found on which `target` still fails as `why` says
    (`differential.failure_kind`: a mismatch, a crash, a compile failure), within `budget`
    runs of a candidate."""
    from fuzz.differential import failure_kind, graph_failure

    checks = 0
    kind = failure_kind(why)

    def differs(g: Graph, ins: Sequence[np.ndarray]) -> bool:
        nonlocal checks
        checks += 1
        found = graph_failure(g, ins, target)
        return found is not None and failure_kind(found) == kind

    best, best_in = graph, list(inputs)
    # 1. one output
    for out in graph.outputs:
        g = best.copy()
        g.outputs = [out]
        g, ins = _prune_inputs(g, inputs)
        if differs(g, ins):
            best, best_in = g, ins
            break
    changed = True
    while changed and checks < budget:
        changed = False
        values = reference_values(best, best_in)
        # 2. cut above: a node's results become inputs (largest cut first)
        for node in reversed(best.nodes[:-1]):
            if checks >= budget:
                break
            g = best.copy()
            idx = g.nodes.index(next(n for n in g.nodes if n.results == node.results))
            del g.nodes[idx]
            g.inputs = g.inputs + list(node.results)
            ins = [*best_in, *[values[r] for r in node.results]]
            g, ins = _prune_inputs(g, ins)
            if differs(g, ins):
                best, best_in, changed = g, ins, True
                break
        if changed:
            continue
        # 3. bypass an op in the middle
        for index in reversed(range(len(best.nodes))):
            if checks >= budget:
                break
            g = bypass(best, index)
            if g is None:
                continue
            g, ins = _prune_inputs(g, best_in)
            if g.nodes and differs(g, ins):
                best, best_in, changed = g, ins, True
                break
        if changed:
            continue
        # 4. cut below: an earlier value becomes the output
        for node in best.nodes[:-1]:
            if checks >= budget:
                break
            for r in node.results:
                g = best.copy()
                g.outputs = [r]
                g, ins = _prune_inputs(g, best_in)
                if g.nodes and differs(g, ins):
                    best, best_in, changed = g, ins, True
                    break
            if changed:
                break
    # 5. smaller shapes
    for _ in range(6):
        if checks >= budget:
            break
        progressed = False
        for i, array in enumerate(best_in):
            dims = [d for d in range(array.ndim) if array.shape[d] > 1]
            for d in sorted(dims, key=lambda d: -array.shape[d]):
                half = array.shape[d] // 2
                cut = np.take(array, range(half), axis=d)
                g = best.copy()
                old = g.values[g.inputs[i]]
                g.values[g.inputs[i]] = VType(cut.shape, old.kind, old.qtype)
                g2 = retype(g)
                if g2 is None:
                    continue
                ins = [*best_in[:i], cut, *best_in[i + 1 :]]
                if differs(g2, ins):
                    best, best_in, progressed = g2, ins, True
                    break
            if progressed or checks >= budget:
                break
        if not progressed:
            break
    return best, best_in
