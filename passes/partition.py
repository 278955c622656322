"""Partition functions into `delegate.region`s: maximal acyclic clusters of ops per target.

`partition{targets=opencl,cpu}` asks the targets, in priority order, which ops of each
function they take (`Target.supports`, docs/design.md §4), groups the ops of each target into as
few and as large clusters as the dataflow allows, wraps every cluster in a
`delegate.region "target"` with explicit captures, and reports what went where: one remark
per function (``@main: opencl: 58 of 64 ops in 2 regions; host: 6 ops``) and, with
`report=PATH`, a JSON file that accounts for every op.

Assignment
  An op goes to the first target that takes it. Unavailable targets refuse everything
  (code "unavailable", with the target's own reason); `deny-ops` refuses op kinds for every
  target ("denied"). A pin sends an op to one target and no other: `place=NAME:target`
  (NAME is an op's name location, as importers set it, or `#N`, its index among the
  function's top-level ops, from 0), or an `irc.target = "name"` attribute on the op
  (`place` wins); the other targets refuse with "pinned", and the pinned target can still
  refuse. `host` as a pin keeps the op on the host. Constants (constant-like ops without
  operands) are never assigned: they go into every region that uses them (moved when nothing
  else uses them, cloned otherwise), so a delegate sees its weights; the terminator never
  moves; ops with regions or with side effects are not offered to targets.

Clustering (per block; n ops, e dataflow edges, k targets)
  A region must be a set of ops of one target whose contraction into a single node leaves
  the graph acyclic: a region runs once all its inputs are ready, so a path that leaves it
  and comes back into it would make it wait for itself. In the diamond
  ``A -> B -> D, A -> C -> D`` with C on the host, {A, B, D} is therefore not a region
  (nor is any contiguous run of program order that holds A and D) but {A, B} and {D} are;
  and ops far apart in program order may share one when nothing between them depends on
  the first and feeds the second.

  1. Sweep (TFLite's partitioning into node subsets, "largest possible sub-DAGs"). A
     topological sweep over the ops (Kahn's algorithm) emits host ops as soon as they are
     ready; when none is, it drains one target: every op of that target that is ready, and
     every one that becomes ready meanwhile, forms one drain (the target with the most ops
     ready goes first, ties in priority order). Each edge goes to the same or a later step
     of the sweep, the same one only inside a drain, so no path leaves a drain and comes
     back: every drain is a valid region, and its ops can sit together in the new order.
     With one target (and no min-ops / max-regions to honour) this gives the fewest regions
     there can be: draining host ops first, the k-th drain takes exactly the ops for which
     k is the most runs of target ops on a path ending at them, and ops on one path with
     a host op between them can never share a region (the tests check this bound).
  2. Sinking, for fewer bytes across region boundaries. Going from the last op to the
     first, an op moves to a later drain of its target that holds consumers of it (one no
     later than any consumer of its target and before its other consumers) when that
     lowers the bytes of region inputs and outputs; a value counts once per region it
     leaves or enters, so one that leaves its region anyway costs one more input, not a
     new crossing. An op takes along the ops of its drain that only feed it (up to
     `_SINK_DEPTH` deep: a chain moves when only the whole chain pays) and never leaves a
     drain that had min-ops ops with fewer. Edges still go to the same or a later step,
     so drains stay valid regions. This puts the cut of a residual block on its smaller
     tensor: a quarter fewer bytes cross in face_detection_short_range.
  3. Regions. A drain's ops form one region: joining independent parts (weakly connected
     components) saves dispatches and moves no more data. A target's `cost(ops)` hook, when
     it returns numbers, keeps a part apart when it would cost more inside a group than
     beside it.
  4. Constraints. Regions with fewer than `min-ops` ops (constants not counted), and a
     target's regions beyond its `max-regions` largest, are given up for the first target
     in priority order that has any: their ops fall back to the next target that takes
     them, or to the host, and the clustering runs again, until nothing changes (at most
     `_MAX_ROUNDS` rounds; then the remaining offenders go to the host, which never creates
     a cycle: splitting a region cannot).

  Complexity: O(n k) `supports` calls (each target is asked at most once per op), then per
  round O(n k + e) for the sweep, O(d (n + e)) for sinking (d = `_SINK_DEPTH`, reached only
  by long single-consumer chains), O(n + e) for components and O(n log n) to re-schedule;
  there are rarely more than two rounds. Measured (benchmarks/partition.py): 0.35 s for a
  generated 5,000-op graph with one target (0.6 s with two), under 35 ms per shared model
  with testplugin. Growing clusters by merging along edges first, heaviest tensor first,
  with union-find and Pearce-Kelly cycle checks (as XLA and TVM grow clusters) was measured
  as an alternative: it made 5-7 % more regions over 300 random graphs (a merged edge can
  tie together ops the sweep puts in different drains, which then costs a drain more) and,
  restricted to merges that keep the drains, changed no region of the shared models.

Rewriting
  Each region gets the values its ops use from outside as captures (in first-use order,
  bound to block arguments) and yields the values used outside (in program order). The
  block is then re-scheduled as a topological sort of its host ops and regions in which a
  ready unit with the smallest anchor goes first, the anchor of a region being the position
  of its last op: when the original order allows it, each region simply sits where its last
  op was and nothing else moves; host ops that use a region's results and came before its
  last op move down after it. Ops with side effects keep their relative order.

`partition()` runs the pass and returns its `PartitionReport`; the pass prints the summaries
as remarks and writes `report.to_json()` to `report=PATH`.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    FusedLoc,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import ConstantLike, IsTerminator, is_side_effect_free

from irc.diagnostics import emit_error, emit_remark, make_note
from irc.dialects import delegate
from irc.dtypes import numpy_dtype
from irc.fileio import write_atomically
from irc.targets.base import Availability, Support, Target, TargetError, get_target

__all__ = [
    "HOST",
    "PIN_ATTR",
    "ConstantEntry",
    "FunctionReport",
    "HostEntry",
    "OpEntry",
    "PartitionPass",
    "PartitionReport",
    "Refusal",
    "RegionEntry",
    "op_name",
    "partition",
]

PIN_ATTR = "irc.target"
"""The attribute that pins an op to a target: ``{irc.target = "opencl"}``."""

HOST = "host"
"""The pin value (in `place=` or `irc.target`) that keeps an op on the host."""

_MAX_ROUNDS = 16
"""Clustering rounds at most; each round after the first follows regions given up."""

_NOT_A_TARGET = -1
"""The kind of graph nodes that stay on the host."""


# ---- Report ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """Why a target does not run an op: a reason code (`targets.base.REASON_CODES`, or one
    of the partition's own, "min-ops" and "max-regions") and a text."""

    code: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "reason": self.reason}


@dataclass(frozen=True)
class OpEntry:
    """An op of a function: its index among the function's top-level ops, its kind and its
    name location (the model's op name, when the importer recorded one)."""

    index: int
    op: str
    name: str | None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "op": self.op, "name": self.name}


@dataclass
class RegionEntry:
    """A `delegate.region`: its target, ops, the constants it holds, inputs and outputs."""

    id: int
    target: str
    ops: list[OpEntry]
    constants: list[OpEntry]
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "target": self.target,
            "ops": [o.to_json() for o in self.ops],
            "constants": [c.to_json() for c in self.constants],
            "inputs": self.inputs,
            "outputs": self.outputs,
        }


@dataclass
class HostEntry:
    """An op left on the host, with each target's reason."""

    op: OpEntry
    reasons: dict[str, Refusal]

    def describe(self) -> str:
        """``'nn.softmax' stays on the host: opencl (op): ...; cpu (denied): ...``"""
        why = "; ".join(f"{t} ({r.code}): {r.reason}" for t, r in self.reasons.items())
        return f"'{self.op.op}' stays on the host: {why}"

    def to_json(self) -> dict[str, Any]:
        reasons = {t: r.to_json() for t, r in self.reasons.items()}
        return {**self.op.to_json(), "reasons": reasons}


@dataclass
class ConstantEntry:
    """A constant and where it went: into regions (by id), and/or kept on the host."""

    op: OpEntry
    regions: list[int]
    host: bool

    def to_json(self) -> dict[str, Any]:
        return {**self.op.to_json(), "regions": self.regions, "host": self.host}


@dataclass
class FunctionReport:
    """Where every op of one function went.

    Each top-level op of the function appears exactly once among `regions[*].ops`, `host`,
    `constants` and `terminators`; `regions[*].constants` says which regions got a copy.
    """

    name: str
    targets: list[str]
    regions: list[RegionEntry] = field(default_factory=list)
    host: list[HostEntry] = field(default_factory=list)
    constants: list[ConstantEntry] = field(default_factory=list)
    terminators: list[OpEntry] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def num_ops(self) -> int:
        """Ops that count: everything but constants and terminators."""
        return len(self.host) + sum(len(r.ops) for r in self.regions)

    def summary(self) -> str:
        """``@main: opencl: 58 of 64 ops in 2 regions; host: 6 ops``"""
        parts = []
        for target in self.targets:
            if target in self.unavailable:
                parts.append(f"{target}: unavailable ({self.unavailable[target]})")
                continue
            regions = [r for r in self.regions if r.target == target]
            ops = sum(len(r.ops) for r in regions)
            parts.append(
                f"{target}: {ops} of {_count(self.num_ops, 'op')} in "
                f"{_count(len(regions), 'region')}"
            )
        parts.append(f"host: {_count(len(self.host), 'op')}")
        return f"@{self.name}: " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary(),
            "ops": self.num_ops,
            "regions": [r.to_json() for r in self.regions],
            "host": [h.to_json() for h in self.host],
            "constants": [c.to_json() for c in self.constants],
            "terminators": [t.to_json() for t in self.terminators],
        }


@dataclass
class PartitionReport:
    """What `partition` did to a module: options, targets and one report per function."""

    options: dict[str, Any]
    targets: list[dict[str, Any]]
    functions: list[FunctionReport]

    def to_json(self) -> dict[str, Any]:
        return {
            "options": self.options,
            "targets": self.targets,
            "functions": [f.to_json() for f in self.functions],
        }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# ---- Op and value helpers ----------------------------------------------------------------------


def op_name(op: Operation) -> str | None:
    """The name location of `op` (the model's op name), if it has one."""
    loc = op.location
    if isinstance(loc, FusedLoc) and isinstance(loc.locations, ArrayAttr):
        loc = next((m for m in loc.locations.data if isinstance(m, NameLoc)), loc)
    return loc.desc.data if isinstance(loc, NameLoc) else None


def _is_constant(op: Operation) -> bool:
    return op.has_trait(ConstantLike) and not op.operands and not op.regions


def _is_terminator(op: Operation) -> bool:
    return op.has_trait(IsTerminator)


def _nbytes(type_: Attribute) -> int:
    """Bytes of a tensor value (dynamic dimensions count as 1); 0 for other values."""
    if not isinstance(type_, TensorType):
        return 0
    try:
        itemsize = numpy_dtype(type_.element_type).itemsize
    except (TypeError, KeyError):
        itemsize = 2  # bf16, the one tensor element type without a numpy dtype
    size = itemsize
    for d in type_.get_shape():
        size *= max(d, 1)
    return size


def _operands_within(op: Operation) -> Iterable[SSAValue]:
    """The values `op` uses: its operands, and those of nested ops defined outside `op`."""
    if not op.regions:
        return op.operands
    return [
        v
        for nested in op.walk()
        for v in nested.operands
        if nested is op or not op.is_ancestor(v.owner)
    ]


# ---- Targets and assignment --------------------------------------------------------------------


@dataclass
class _Slot:
    """A target of the `targets` option, resolved once per run."""

    name: str
    target: Target
    availability: Availability


class _Assigner:
    """Asks targets about ops, lazily and once, and remembers each refusal.

    `choice[op]` is the index of the target an op currently goes to (`_NOT_A_TARGET`: the
    host); `demote` records why that target gave the op up and moves it to the next one.
    """

    def __init__(self, slots: Sequence[_Slot], deny: frozenset[str], pins: dict[Operation, str]):
        self.slots = slots
        self.deny = deny
        self.pins = pins
        self.refusals: dict[Operation, dict[str, Refusal]] = {}
        self.choice: dict[Operation, int] = {}

    def assign(self, op: Operation, offer: Refusal | None) -> int:
        """The first target that takes `op`; `offer` is a refusal every target gives
        (the op is never offered) or None."""
        self.refusals[op] = {}
        if offer is not None:
            for slot in self.slots:
                self.refusals[op][slot.name] = offer
            self.choice[op] = _NOT_A_TARGET
        else:
            self.choice[op] = self._next(op, 0)
        return self.choice[op]

    def demote(self, op: Operation, refusal: Refusal, *, fall_back: bool = True) -> int:
        current = self.choice[op]
        assert current != _NOT_A_TARGET
        self.refusals[op][self.slots[current].name] = refusal
        if fall_back:
            self.choice[op] = self._next(op, current + 1)
        else:
            for slot in self.slots[current + 1 :]:
                self.refusals[op].setdefault(
                    slot.name, Refusal(refusal.code, "not tried: " + refusal.reason)
                )
            self.choice[op] = _NOT_A_TARGET
        return self.choice[op]

    def _next(self, op: Operation, start: int) -> int:
        refusals = self.refusals[op]
        pin = self.pins.get(op)
        if pin is None and isinstance(attr := op.attributes.get(PIN_ATTR), StringAttr):
            pin = attr.data
        for index in range(start, len(self.slots)):
            slot = self.slots[index]
            refusal = self._refusal(op, slot, pin)
            if refusal is None:
                return index
            refusals[slot.name] = refusal
        return _NOT_A_TARGET

    def _refusal(self, op: Operation, slot: _Slot, pin: str | None) -> Refusal | None:
        if pin is not None and pin != slot.name:
            where = "the host" if pin == HOST else f"'{pin}'"
            return Refusal("pinned", f"pinned to {where}")
        if not slot.availability:
            return Refusal("unavailable", slot.availability.reason or "not available")
        if op.name in self.deny:
            return Refusal("denied", f"'{op.name}' is in deny-ops")
        try:
            answer = slot.target.supports(op)
        except Exception as exc:
            emit_error(
                op, f"target '{slot.name}' failed on '{op.name}': {type(exc).__name__}: {exc}"
            )
        if isinstance(answer, Support):
            return None if answer.ok else Refusal(answer.code or "op", answer.reason)
        return None if answer else Refusal("op", f"{slot.name}: '{op.name}' is not supported")


# ---- The dataflow graph of a block -------------------------------------------------------------


@dataclass
class _Value:
    """A value some graph node uses or defines (constants excepted: regions copy them)."""

    producer: int
    """The node that defines it; -1 for a block argument or an op outside the graph."""
    bytes: int
    consumers: list[int] = field(default_factory=list)
    """Nodes that use it, once each, in program order."""
    external: bool = False
    """Whether something other than a graph node (the terminator) uses it."""


@dataclass
class _Graph:
    """The ops of a block that count (no constants, no terminator) as a DAG in program order.

    Node `i` is `nodes[i]`; `succs` / `preds` connect nodes a value (or the order of two ops
    with side effects) connects; `values` are what the nodes exchange, with their sizes;
    `inputs[i]` / `outputs[i]` index the values node i uses / defines.
    """

    nodes: list[Operation]
    succs: list[list[int]]
    preds: list[list[int]]
    values: list[_Value]
    inputs: list[list[int]]
    outputs: list[list[int]]

    @staticmethod
    def build(block: Block, nodes: list[Operation]) -> _Graph:
        node_of = {op: i for i, op in enumerate(nodes)}
        succs: list[list[int]] = [[] for _ in nodes]
        preds: list[list[int]] = [[] for _ in nodes]
        values: list[_Value] = []
        value_of: dict[SSAValue, int] = {}
        inputs: list[list[int]] = [[] for _ in nodes]
        outputs: list[list[int]] = [[] for _ in nodes]
        previous_effect: int | None = None
        edges: set[tuple[int, int]] = set()

        def connect(u: int, v: int) -> None:
            if (u, v) not in edges:
                edges.add((u, v))
                succs[u].append(v)
                preds[v].append(u)

        for v, op in enumerate(nodes):
            for result in op.results:
                value_of[result] = len(values)
                outputs[v].append(len(values))
                values.append(_Value(v, _nbytes(result.type)))
                for use in result.uses:
                    user = _top_level(use.operation, block)
                    if user is None or user not in node_of:
                        values[-1].external = True
            for operand in _operands_within(op):
                owner = operand.owner
                if isinstance(owner, Operation) and _is_constant(owner):
                    continue
                index = value_of.get(operand)
                if index is None:
                    index = value_of[operand] = len(values)
                    values.append(_Value(-1, _nbytes(operand.type)))
                value = values[index]
                if value.consumers and value.consumers[-1] == v:
                    continue
                value.consumers.append(v)
                inputs[v].append(index)
                if value.producer >= 0 and value.producer != v:
                    connect(value.producer, v)
            if not is_side_effect_free(op):
                # Ops with side effects keep their order: an edge from the previous one.
                if previous_effect is not None:
                    connect(previous_effect, v)
                previous_effect = v
        return _Graph(nodes, succs, preds, values, inputs, outputs)


# ---- Clustering --------------------------------------------------------------------------------

CostFn = Callable[[int, Sequence[int]], float | None]
"""cost(target index, graph nodes) -> the target's estimate, or None."""


def _cluster(
    graph: _Graph, kinds: Sequence[int], cost: CostFn, min_ops: int
) -> list[tuple[int, list[int]]]:
    """Regions for one assignment: (target index, sorted graph nodes), in step order."""
    step_of, step_kinds = _sweep(graph, kinds)
    _sink(graph, kinds, step_of, step_kinds, min_ops)
    by_step: dict[int, list[int]] = {}
    for v, step in enumerate(step_of):
        if kinds[v] != _NOT_A_TARGET:
            by_step.setdefault(step, []).append(v)
    regions: list[tuple[int, list[int]]] = []
    for step in sorted(by_step):
        kind = step_kinds[step]
        for nodes in _split_by_cost(kind, _components(graph, by_step[step]), cost):
            regions.append((kind, sorted(nodes)))
    return regions


def _sweep(graph: _Graph, kinds: Sequence[int]) -> tuple[list[int], list[int]]:
    """Step 1: a topological sweep (Kahn's algorithm) that emits host ops as soon as they
    are ready, and otherwise drains the target with the most ops ready: its ready ops and
    every op of it that becomes ready meanwhile. Returns each node's step and each step's
    kind (a host op is a step of its own)."""
    n = len(graph.nodes)
    missing = [len(p) for p in graph.preds]
    targets = sorted(set(kinds) - {_NOT_A_TARGET})
    ready: dict[int, list[int]] = {k: [] for k in (_NOT_A_TARGET, *targets)}
    for v in range(n - 1, -1, -1):  # popped from the end: program order among the ready
        if missing[v] == 0:
            ready[kinds[v]].append(v)
    step_of = [0] * n
    step_kinds: list[int] = []

    def emit(v: int) -> None:
        step_of[v] = len(step_kinds) - 1
        for s in graph.succs[v]:
            missing[s] -= 1
            if missing[s] == 0:
                ready[kinds[s]].append(s)

    while True:
        if ready[_NOT_A_TARGET]:
            step_kinds.append(_NOT_A_TARGET)
            emit(ready[_NOT_A_TARGET].pop())
            continue
        waiting = [k for k in targets if ready[k]]
        if not waiting:
            break
        kind = max(waiting, key=lambda k: (len(ready[k]), -k))
        step_kinds.append(kind)
        while ready[kind]:
            emit(ready[kind].pop())
    assert sum(missing) == 0, "the dataflow graph has a cycle"
    return step_of, step_kinds


_SINK_DEPTH = 8
"""How many producers deep a sinking op may take along the ops that only feed it."""


def _sink(
    graph: _Graph, kinds: Sequence[int], step_of: list[int], step_kinds: list[int], min_ops: int
) -> None:
    """Step 2: move ops to a later drain of their target where fewer bytes then cross region
    boundaries; an op drained early whose consumers run in a later drain joins them.

    Ops go last to first, so each sees where its consumers ended up. An op may go to any
    later drain of its target that comes no later than each of its consumers of that target
    and before its other consumers: every edge still goes to the same or a later step, the
    same one only inside a drain. It takes along the ops of its drain that only feed it (a
    chain sinks as a whole when only the whole pays), and it never leaves a drain with
    fewer than min-ops ops behind (that drain would be given up).
    """
    sizes: dict[int, int] = {}
    for step in step_of:
        sizes[step] = sizes.get(step, 0) + 1

    def crossing(index: int, moved: dict[int, int]) -> int:
        """Bytes of region inputs and outputs a value accounts for."""
        value = graph.values[index]
        where = moved.get(value.producer, step_of[value.producer]) if value.producer >= 0 else -1
        drains = {moved.get(c, step_of[c]) for c in value.consumers if kinds[c] != _NOT_A_TARGET}
        drains.discard(where)
        leaves = (
            value.external
            or len(drains) > 0
            or any(kinds[c] == _NOT_A_TARGET for c in value.consumers)
        )
        produced_in_drain = where >= 0 and kinds[value.producer] != _NOT_A_TARGET
        return value.bytes * (len(drains) + (1 if produced_in_drain and leaves else 0))

    def only_feeds(p: int, group: set[int]) -> bool:
        """Whether everything that uses p's results is in `group`."""
        return all(
            not graph.values[i].external and all(c in group for c in graph.values[i].consumers)
            for i in graph.outputs[p]
        ) and all(s in group for s in graph.succs[p])

    def delta(group: list[int], to: int) -> int:
        touched = {i for v in group for i in (*graph.inputs[v], *graph.outputs[v])}
        moved = dict.fromkeys(group, to)
        return sum(crossing(i, moved) - crossing(i, {}) for i in touched)

    for v in range(len(graph.nodes) - 1, -1, -1):
        kind = kinds[v]
        if kind == _NOT_A_TARGET:
            continue
        step = step_of[v]
        bound = len(step_kinds)
        later: set[int] = set()
        for s in graph.succs[v]:
            if kinds[s] == kind:
                bound = min(bound, step_of[s])
                later.add(step_of[s])
            else:
                bound = min(bound, step_of[s] - 1)
        candidates = sorted(to for to in later if step < to <= bound)
        if not candidates:
            continue
        group = [v]
        best: tuple[int, int, list[int]] = (0, step, [])
        for _ in range(_SINK_DEPTH):
            left = sizes[step] - len(group)
            if left == 0 or left >= min_ops or sizes[step] < min_ops:
                for to in candidates:
                    change = delta(group, to)
                    if change < best[0]:
                        best = (change, to, list(group))
            inside = set(group)
            along = [
                p
                for u in group
                for p in graph.preds[u]
                if p not in inside and step_of[p] == step and only_feeds(p, inside)
            ]
            if not along:
                break
            group += sorted(set(along))
        _, to, chosen = best
        for u in chosen:
            sizes[step] -= 1
            sizes[to] = sizes.get(to, 0) + 1
            step_of[u] = to


def _components(graph: _Graph, nodes: list[int]) -> list[list[int]]:
    """The weakly connected components of the subgraph on `nodes` (sorted), by first node."""
    inside = set(nodes)
    seen: set[int] = set()
    parts: list[list[int]] = []
    for start in nodes:
        if start in seen:
            continue
        seen.add(start)
        part = [start]
        stack = [start]
        while stack:
            v = stack.pop()
            for w in (*graph.succs[v], *graph.preds[v]):
                if w in inside and w not in seen:
                    seen.add(w)
                    part.append(w)
                    stack.append(w)
        parts.append(sorted(part))
    return parts


def _split_by_cost(kind: int, parts: list[list[int]], cost: CostFn) -> list[list[int]]:
    """The independent parts of one drain: together, unless the target's cost hook says a
    part costs more inside a group than beside it."""
    if len(parts) == 1 or cost(kind, [v for p in parts for v in p]) is None:
        return [[v for p in parts for v in p]]
    groups: list[tuple[list[int], float | None]] = []
    for part in parts:
        alone = cost(kind, part)
        for i, (nodes, together) in enumerate(groups):
            joined = cost(kind, nodes + part)
            if joined is None or together is None or alone is None or joined <= together + alone:
                groups[i] = (nodes + part, joined)
                break
        else:
            groups.append((list(part), alone))
    return [nodes for nodes, _ in groups]


# ---- Planning ----------------------------------------------------------------------------------


@dataclass
class _Options:
    """The pass options, validated and resolved against a module."""

    slots: list[_Slot]
    deny: frozenset[str]
    pins: dict[Operation, str]
    min_ops: int
    max_regions: int


@dataclass
class _RegionPlan:
    """A region to build: its target, its ops and the constants it gets (positions in the
    block, program order)."""

    target: str
    members: list[int]
    constants: list[int] = field(default_factory=list)


@dataclass
class _BlockPlan:
    """What happens to one block: the regions, and the order of everything afterwards."""

    block: Block
    ops: list[Operation]
    first_index: int
    """The function-level index of `ops[0]`."""
    regions: list[_RegionPlan]
    """In the order the schedule places them."""
    host_constants: set[int]
    """Constants that stay in the block: a host op uses them, or nothing does."""
    order: list[int]
    """The new block: positions of host ops, and `len(ops) + r` for region r."""


def _offer(op: Operation) -> Refusal | None:
    """Why `op` is offered to no target (None: it is offered)."""
    if op.regions:
        return Refusal("op", f"'{op.name}' has regions; ops with regions stay on the host")
    if not is_side_effect_free(op):
        return Refusal("op", f"'{op.name}' may have side effects; it stays on the host")
    return None


def _plan_block(
    block: Block, first_index: int, options: _Options, assigner: _Assigner
) -> _BlockPlan:
    ops = list(block.ops)
    nodes = [op for op in ops if not _is_constant(op) and not _is_terminator(op)]
    graph = _Graph.build(block, nodes)
    slots = options.slots
    kinds = [assigner.assign(op, _offer(op)) for op in nodes]

    def cost(kind: int, members: Sequence[int]) -> float | None:
        return slots[kind].target.cost([nodes[v] for v in members])

    regions: list[tuple[int, list[int]]] = []
    for round_ in range(_MAX_ROUNDS):
        regions = _cluster(graph, kinds, cost, options.min_ops)
        violations = _constraint_refusals(regions, options)
        if not violations:
            break
        # Only the first target in priority order gives regions up in a round: what it
        # gives up may fill the small regions of the targets after it.
        last_round = round_ == _MAX_ROUNDS - 1
        kinds_given_up = sorted(violations) if last_round else [min(violations)]
        for members, refusal in (g for k in kinds_given_up for g in violations[k]):
            for v in members:
                kinds[v] = assigner.demote(nodes[v], refusal, fall_back=not last_round)
        if last_round:  # no more re-clustering: the regions left stay as they are
            regions = [(k, m) for k, m in regions if all(kinds[v] == k for v in m)]
    position = {op: p for p, op in enumerate(ops)}
    plans = [
        _RegionPlan(slots[kind].name, [position[nodes[v]] for v in members])
        for kind, members in regions
    ]
    host_constants = _place_constants(block, ops, plans, position)
    order = _schedule(ops, plans, host_constants)
    # Number the regions in schedule order: region ids in the report follow the new IR.
    n = len(ops)
    by_schedule = [u - n for u in order if u >= n]
    renumber = {old: new for new, old in enumerate(by_schedule)}
    plans = [plans[old] for old in by_schedule]
    order = [u if u < n else n + renumber[u - n] for u in order]
    return _BlockPlan(block, ops, first_index, plans, host_constants, order)


def _constraint_refusals(
    regions: list[tuple[int, list[int]]], options: _Options
) -> dict[int, list[tuple[list[int], Refusal]]]:
    """Regions to give up, by target: below min-ops, or beyond the max-regions largest."""
    given_up: dict[int, list[tuple[list[int], Refusal]]] = {}
    kept: dict[int, list[list[int]]] = {}
    for kind, members in regions:
        if len(members) < options.min_ops:
            reason = f"a region of {_count(len(members), 'op')} is below min-ops={options.min_ops}"
            given_up.setdefault(kind, []).append((members, Refusal("min-ops", reason)))
        else:
            kept.setdefault(kind, []).append(members)
    limit = options.max_regions
    if limit > 0:
        for kind, groups in kept.items():
            groups.sort(key=lambda m: (-len(m), m[0]))
            name = options.slots[kind].name
            for members in groups[limit:]:
                reason = (
                    f"{name} keeps its {_count(limit, 'largest region')} (max-regions={limit}); "
                    f"this one has {_count(len(members), 'op')}"
                )
                given_up.setdefault(kind, []).append((members, Refusal("max-regions", reason)))
    return given_up


def _top_level(op: Operation, block: Block) -> Operation | None:
    """The ancestor of `op` (or `op` itself) that sits in `block`."""
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def _place_constants(
    block: Block, ops: list[Operation], plans: list[_RegionPlan], position: dict[Operation, int]
) -> set[int]:
    """Give each region the constants its ops use; returns the constants that stay."""
    region_of: dict[int, int] = {}
    for r, plan in enumerate(plans):
        for p in plan.members:
            region_of[p] = r
    host_constants: set[int] = set()
    for p, op in enumerate(ops):
        if not _is_constant(op):
            continue
        regions: set[int] = set()
        on_host = False
        for result in op.results:
            for use in result.uses:
                user = _top_level(use.operation, block)
                r = region_of.get(position[user]) if user is not None and user in position else None
                if r is None:
                    on_host = True
                else:
                    regions.add(r)
        for r in sorted(regions):
            plans[r].constants.append(p)
        if on_host or not regions:
            host_constants.add(p)
    return host_constants


def _schedule(
    ops: list[Operation], plans: list[_RegionPlan], host_constants: set[int]
) -> list[int]:
    """The new order of the block: positions of host ops and `len(ops) + r` for region r.

    A topological sort of host ops and regions in which, of the units ready, the one with
    the smallest anchor (its position; a region's last op) goes first; ops with side
    effects keep their relative order.
    """
    n = len(ops)
    unit_of: dict[Operation, int] = {op: p for p, op in enumerate(ops)}
    anchor: dict[int, int] = {}
    for r, plan in enumerate(plans):
        for p in plan.members:
            unit_of[ops[p]] = n + r
        anchor[n + r] = plan.members[-1]
    for p, op in enumerate(ops):
        if unit_of[op] == p and (not _is_constant(op) or p in host_constants):
            anchor[p] = p
    deps: dict[int, set[int]] = {u: set() for u in anchor}
    held = [set(plan.constants) for plan in plans]
    previous_effect: int | None = None
    for op in ops:
        unit = unit_of[op]
        if unit not in deps:
            continue  # a constant that only regions use: it goes into them
        for value in _operands_within(op):
            owner = value.owner
            source = unit_of.get(owner) if isinstance(owner, Operation) else None
            if source is None or source == unit:
                continue
            if unit >= n and source in held[unit - n]:
                continue  # the region holds its own copy of the constant
            deps[unit].add(source)
        if unit < n and not is_side_effect_free(op) and not _is_constant(op):
            if previous_effect is not None:
                deps[unit].add(previous_effect)
            previous_effect = unit
    users: dict[int, list[int]] = {u: [] for u in deps}
    missing = {u: len(d) for u, d in deps.items()}
    for u, d in deps.items():
        for source in d:
            users[source].append(u)
    heap = [(anchor[u], u) for u in deps if missing[u] == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, u = heapq.heappop(heap)
        order.append(u)
        for user in users[u]:
            missing[user] -= 1
            if missing[user] == 0:
                heapq.heappush(heap, (anchor[user], user))
    assert len(order) == len(deps), "the partition has a cycle"
    return order


# ---- Rewriting ---------------------------------------------------------------------------------


def _inputs(members: Sequence[Operation], inside: set[Operation]) -> list[SSAValue]:
    """The values `members` use that nothing in `inside` defines, in first-use order."""
    inputs: list[SSAValue] = []
    seen: set[SSAValue] = set()
    for op in members:
        for value in op.operands:
            if value.owner not in inside and value not in seen:
                seen.add(value)
                inputs.append(value)
    return inputs


def _build_region(
    plan: _RegionPlan, ops: list[Operation], host_constants: set[int], moved: set[int]
) -> delegate.RegionOp:
    """Move a plan's ops into a new `delegate.region` (not inserted anywhere yet).

    A constant that no host op uses moves into the first region that needs it; the other
    regions (and every region, for a constant the host keeps) get a clone.
    """
    members = [ops[p] for p in plan.members]
    inside: set[Operation] = set(members)
    constants: list[Operation] = []
    for p in plan.constants:
        original = ops[p]
        if p not in host_constants and p not in moved:
            moved.add(p)
            original.detach()
            copy = original
        else:
            copy = original.clone()
            for old, new in zip(original.results, copy.results, strict=True):
                old.replace_uses_with_if(new, lambda use: use.operation in inside)
        constants.append(copy)
        inside.add(copy)
    captures = _inputs(members, inside)
    outputs = [
        result
        for op in members
        for result in op.results
        if any(use.operation not in inside for use in result.uses)
    ]
    body = Block(arg_types=[v.type for v in captures])
    body.add_ops(constants)
    for op in members:
        op.detach()
        body.add_op(op)
    terminator = delegate.YieldOp(*outputs)
    body.add_op(terminator)
    inside.add(terminator)
    region = delegate.RegionOp(plan.target, captures, [v.type for v in outputs], Region(body))
    region.location = members[0].location
    for value, arg in zip(captures, body.args, strict=True):
        value.replace_uses_with_if(arg, lambda use: use.operation in inside)
    for value, result in zip(outputs, region.outputs, strict=True):
        value.replace_uses_with_if(result, lambda use: use.operation not in inside)
    return region


def _rewrite_block(plan: _BlockPlan) -> None:
    moved: set[int] = set()
    regions = [_build_region(r, plan.ops, plan.host_constants, moved) for r in plan.regions]
    n = len(plan.ops)
    block = plan.block
    for op in list(block.ops):
        op.detach()
    block.add_ops(plan.ops[u] if u < n else regions[u - n] for u in plan.order)


# ---- Reporting ---------------------------------------------------------------------------------


def _entry(op: Operation, index: int) -> OpEntry:
    return OpEntry(index, op.name, op_name(op))


def _describe_value(
    value: SSAValue, index_of: dict[Operation, int], input_names: Sequence[str]
) -> dict[str, Any]:
    facts: dict[str, Any]
    if isinstance(value, BlockArgument):
        name = input_names[value.index] if value.index < len(input_names) else None
        facts = {"arg": value.index, "name": name}
    else:
        assert isinstance(value, OpResult)
        owner = value.owner
        facts = {"op": index_of.get(owner), "result": value.index, "name": op_name(owner)}
    return {**facts, "type": str(value.type), "bytes": _nbytes(value.type)}


def _input_names(function: FuncOp) -> list[str]:
    names = function.attributes.get("irc.input_names")
    if not isinstance(names, ArrayAttr):
        return []
    return [n.data if isinstance(n, StringAttr) else "" for n in names.data]


def _function_report(
    function: FuncOp, blocks: list[_BlockPlan], options: _Options, assigner: _Assigner
) -> FunctionReport:
    """The report of a planned function (before rewriting: values are the original ones)."""
    report = FunctionReport(
        function.sym_name.data,
        [s.name for s in options.slots],
        unavailable={s.name: s.availability.reason for s in options.slots if not s.availability},
    )
    index_of = {op: plan.first_index + p for plan in blocks for p, op in enumerate(plan.ops)}
    input_names = _input_names(function)
    slot_order = {s.name: i for i, s in enumerate(options.slots)}
    for plan in blocks:
        in_region: set[int] = set()
        first_id = len(report.regions)
        for r, region in enumerate(plan.regions):
            members = [plan.ops[p] for p in region.members]
            in_region.update(region.members)
            inside = set(members) | {plan.ops[p] for p in region.constants}
            inputs = _inputs(members, inside)
            outputs = [
                result
                for op in members
                for result in op.results
                if any(_top_level(u.operation, plan.block) not in inside for u in result.uses)
            ]
            report.regions.append(
                RegionEntry(
                    first_id + r,
                    region.target,
                    [_entry(op, index_of[op]) for op in members],
                    [_entry(plan.ops[p], index_of[plan.ops[p]]) for p in region.constants],
                    [_describe_value(v, index_of, input_names) for v in inputs],
                    [_describe_value(v, index_of, input_names) for v in outputs],
                )
            )
        holders: dict[int, list[int]] = {}
        for r, region in enumerate(plan.regions):
            for p in region.constants:
                holders.setdefault(p, []).append(first_id + r)
        for p, op in enumerate(plan.ops):
            entry = _entry(op, index_of[op])
            if _is_constant(op):
                regions = holders.get(p, [])
                report.constants.append(ConstantEntry(entry, regions, p in plan.host_constants))
            elif _is_terminator(op):
                report.terminators.append(entry)
            elif p not in in_region:
                reasons = sorted(assigner.refusals[op].items(), key=lambda i: slot_order[i[0]])
                report.host.append(HostEntry(entry, dict(reasons)))
    return report


def _write_report(path: str, data: dict[str, Any], module: ModuleOp) -> None:
    """Write the JSON report atomically (`irc.fileio.write_atomically`)."""
    try:
        write_atomically(path, json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        emit_error(module, f"cannot write the partition report '{path}': {exc.strerror or exc}")


# ---- Options -----------------------------------------------------------------------------------


def _functions(module: ModuleOp) -> list[FuncOp]:
    """The functions to partition: those of the module with a body."""
    return [op for op in module.ops if isinstance(op, FuncOp) and op.body.blocks]


def _top_level_ops(function: FuncOp) -> list[Operation]:
    return [op for block in function.body.blocks for op in block.ops]


def _resolve_targets(module: ModuleOp, names: Sequence[str]) -> list[_Slot]:
    if not names:
        emit_error(module, "partition needs targets: partition{targets=name,...}")
    slots: list[_Slot] = []
    for name in names:
        if name == HOST:
            emit_error(module, f"'{HOST}' is not a target name; leave it out of targets")
        if any(s.name == name for s in slots):
            emit_error(module, f"target '{name}' is listed twice in targets")
        try:
            target = get_target(name)
        except TargetError as exc:
            emit_error(module, str(exc))
        slots.append(_Slot(name, target, target.available()))
    return slots


def _resolve_deny(module: ModuleOp, deny_ops: Sequence[str], ctx: Context | None) -> frozenset[str]:
    names = [name if "." in name else f"nn.{name}" for name in deny_ops]
    if ctx is not None:
        for name in names:
            if ctx.get_optional_op(name) is None:
                emit_error(module, f"deny-ops names an unknown op '{name}'")
    return frozenset(names)


def _resolve_pins(
    module: ModuleOp, place: Sequence[str], targets: Sequence[str]
) -> dict[Operation, str]:
    """`place=NAME:target` entries as op -> target name, checked."""
    pins: dict[Operation, str] = {}
    functions = [_top_level_ops(f) for f in _functions(module)]
    for entry in place:
        name, _, target = entry.rpartition(":")
        if target not in targets and target != HOST:
            emit_error(
                module,
                f"place entry '{entry}' names '{target}', which is neither one of the targets "
                f"({', '.join(targets)}) nor '{HOST}'",
            )
        matches: list[Operation] = []
        for ops in functions:
            if name.startswith("#") and name[1:].isdigit():
                index = int(name[1:])
                matches += ops[index : index + 1]
            else:
                matches += [op for op in ops if op_name(op) == name]
        if not matches:
            emit_error(module, f"place entry '{entry}': no op is named '{name}'")
        # `#N` selects an op in every function, and a name may be shared by an op and its
        # weights: only ops that can move are pinned, and at least one must be among them.
        placeable = [op for op in matches if not _is_constant(op) and not _is_terminator(op)]
        if not placeable:
            emit_error(
                matches[0],
                f"place entry '{entry}' names only '{matches[0].name}', which cannot be "
                "placed: constants follow their users and terminators stay",
            )
        for op in placeable:
            pins[op] = target
    return pins


# ---- Pass --------------------------------------------------------------------------------------


def partition(
    module: ModuleOp,
    targets: Sequence[str],
    *,
    min_ops: int = 2,
    max_regions: int = 0,
    deny_ops: Sequence[str] = (),
    place: Sequence[str] = (),
    strict: bool = False,
    report: str = "",
    ctx: Context | None = None,
) -> PartitionReport:
    """Partition every function of `module` (see the module docstring and `PartitionPass`).

    Emits one remark per function with its summary, writes the JSON report to `report` when
    given, and returns the report. Fails (`IrcDiagnosticError`) before changing anything
    for bad options, an unwritable report and, with `strict`, when an op would stay on the
    host.
    """
    slots = _resolve_targets(module, targets)
    options = _Options(
        slots,
        _resolve_deny(module, deny_ops, ctx),
        _resolve_pins(module, place, [s.name for s in slots]),
        min_ops,
        max_regions,
    )
    # Phase 1: plan every function, without touching the IR.
    planned: list[tuple[FuncOp, list[_BlockPlan], FunctionReport]] = []
    for function in _functions(module):
        assigner = _Assigner(slots, options.deny, options.pins)
        blocks: list[_BlockPlan] = []
        first_index = 0
        for block in function.body.blocks:
            blocks.append(_plan_block(block, first_index, options, assigner))
            first_index += len(blocks[-1].ops)
        planned.append((function, blocks, _function_report(function, blocks, options, assigner)))
    if strict:
        _check_strict(planned)
    result = PartitionReport(
        {
            "targets": list(targets),
            "min_ops": min_ops,
            "max_regions": max_regions,
            "deny_ops": sorted(options.deny),
            "place": list(place),
            "strict": strict,
        },
        [
            {"name": s.name, "available": s.availability.ok, "reason": s.availability.reason}
            for s in slots
        ],
        [function_report for _, _, function_report in planned],
    )
    if report:
        _write_report(report, result.to_json(), module)
    # Phase 2: rewrite, then tell.
    for _, blocks, _ in planned:
        for plan in blocks:
            _rewrite_block(plan)
    for function, _, function_report in planned:
        emit_remark(function, function_report.summary())
    return result


def _check_strict(planned: list[tuple[FuncOp, list[_BlockPlan], FunctionReport]]) -> None:
    """strict=true: one error at the first op left on the host, a note at each of them."""
    notes = []
    first: Operation | None = None
    for function, _, function_report in planned:
        ops = _top_level_ops(function)
        for entry in function_report.host:
            op = ops[entry.op.index]
            first = first or op
            notes.append(make_note(op, entry.describe()))
    if first is not None:
        emit_error(
            first,
            f"strict=true: {_count(len(notes), 'op')} would stay on the host",
            notes=notes,
        )


@dataclass(frozen=True)
class PartitionPass(ModulePass):
    """Wrap the ops each target takes into maximal acyclic `delegate.region` ops.

    Options: ``partition{targets=opencl,cpu min-ops=2 max-regions=0 deny-ops=softmax
    place="conv1:cpu" strict=false report="partition.json"}`` (names and paths with other
    characters than letters, digits, `_` and `-` are quoted).
    """

    name = "partition"

    targets: tuple[str, ...] = ()
    """Targets in priority order: an op goes to the first one that takes it."""

    min_ops: int = 2
    """Regions with fewer ops than this (constants not counted) stay on the host."""

    max_regions: int = 0
    """At most this many regions per target, the largest ones (0: no limit)."""

    deny_ops: tuple[str, ...] = ()
    """Op kinds no target gets (`nn.softmax`, or `softmax` for an `nn` op)."""

    place: tuple[str, ...] = ()
    """Pins `NAME:target`: the op named NAME (its name location, or `#N`, its index in its
    function) goes to that target or nowhere; `NAME:host` keeps it on the host."""

    strict: bool = False
    """Fail, listing them, if any op would stay on the host."""

    report: str = ""
    """Where to write the JSON partition report (empty: nowhere)."""

    def __post_init__(self) -> None:
        if self.min_ops < 0:
            raise ValueError(f"min-ops must be at least 0, got {self.min_ops}")
        if self.max_regions < 0:
            raise ValueError(f"max-regions must be at least 0 (no limit), got {self.max_regions}")
        for entry in self.place:
            name, _, target = entry.rpartition(":")
            if not name or not target:
                raise ValueError(f"place entry '{entry}' is not NAME:target")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        partition(
            op,
            self.targets,
            min_ops=self.min_ops,
            max_regions=self.max_regions,
            deny_ops=self.deny_ops,
            place=self.place,
            strict=self.strict,
            report=self.report,
            ctx=ctx,
        )
