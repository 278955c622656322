"""The graph a picture shows: the ops `partition` saw, their edges, targets and reasons.

`GraphCapture` is an `irc.timing` instrumentation: it takes the graph right before the
`partition` step of a compilation and the partition's report right after it; `graph()` then
combines them (`assign`) into a `ModelGraph`. `node_lines` and `node_tooltip` are the text of
a node in every rendering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from irc.timing import Step

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from irc.compiler import LoweringRefusal
    from irc.passes.partition import PartitionReport

__all__ = [
    "HOST",
    "FunctionGraph",
    "GraphCapture",
    "GraphEdge",
    "GraphNode",
    "ModelGraph",
    "assign",
    "node_lines",
    "node_tag",
    "node_tooltip",
]

HOST = "host"
"""The `target` of ops that no target runs."""

MAX_LABEL = 36
"""Characters at most per line of a node's label (longer lines end with an ellipsis)."""


@dataclass
class GraphNode:
    """An op (or a function input / output) of the picture."""

    id: int
    kind: str
    """`nn.conv2d`; `input` / `output` for the function's arguments and results."""
    name: str | None
    shapes: list[str]
    index: int | None = None
    """The op's index among its function's top-level ops (the partition report's index)."""
    target: str | None = None
    """The target that runs the op, `host`, or None for inputs and outputs."""
    region: int | None = None
    reasons: dict[str, tuple[str, str]] = field(default_factory=dict)
    """For host ops: target → (code, reason)."""
    lowering: list[str] = field(default_factory=list)
    """Lowering refusals that name this op."""

    @property
    def is_op(self) -> bool:
        return self.kind not in ("input", "output")


@dataclass(frozen=True)
class GraphEdge:
    source: int
    dest: int


@dataclass
class FunctionGraph:
    name: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]


@dataclass
class ModelGraph:
    """What the pictures show: every partitioned function, the targets, the refusals."""

    targets: list[str]
    functions: list[FunctionGraph]
    regions: list[dict[str, Any]] = field(default_factory=list)
    """One row per region: function, id, target, ops, inputs, outputs."""
    refusals: list[str] = field(default_factory=list)
    """Lowering refusals, described."""
    summary: str = ""


def _shape(type_: Any) -> str:
    from xdsl.dialects.builtin import TensorType

    if isinstance(type_, TensorType):
        dims = ["?" if d < 0 else str(d) for d in type_.get_shape()]
        return "x".join([*dims, str(type_.element_type)])
    return str(type_)


def _extract(module: ModuleOp) -> dict[str, FunctionGraph]:
    """The drawable graph of every function with a body, with op indices as `partition`
    numbers them (top-level ops of all blocks, in order)."""
    from xdsl.dialects.func import FuncOp
    from xdsl.traits import ConstantLike, IsTerminator

    from irc.passes.partition import op_name

    graphs: dict[str, FunctionGraph] = {}
    for function in module.ops:
        if not isinstance(function, FuncOp) or not function.body.blocks:
            continue
        nodes: list[GraphNode] = []
        edges: dict[GraphEdge, None] = {}
        node_of: dict[Any, int] = {}
        input_names = _string_list(function.attributes.get("irc.input_names"))
        output_names = _string_list(function.attributes.get("irc.output_names"))
        entry = function.body.blocks[0]
        for i, arg in enumerate(entry.args):
            name = input_names[i] if i < len(input_names) else f"arg{i}"
            node_of[arg] = len(nodes)
            nodes.append(GraphNode(len(nodes), "input", name, [_shape(arg.type)]))
        ops = [op for block in function.body.blocks for op in block.ops]
        for index, op in enumerate(ops):
            if op.has_trait(IsTerminator):
                for position, value in enumerate(op.operands):
                    name = output_names[position] if position < len(output_names) else None
                    node = GraphNode(len(nodes), "output", name or f"result{position}", [])
                    node.shapes.append(_shape(value.type))
                    nodes.append(node)
                    if value in node_of:
                        edges[GraphEdge(node_of[value], node.id)] = None
                continue
            if not op.operands and op.has_trait(ConstantLike):
                continue
            node = GraphNode(
                len(nodes), op.name, op_name(op), [_shape(r.type) for r in op.results], index
            )
            nodes.append(node)
            for operand in op.operands:
                source = node_of.get(operand)  # None: a constant's, or another block's
                if source is not None:
                    edges[GraphEdge(source, node.id)] = None
            for result in op.results:
                node_of[result] = node.id
        graphs[function.sym_name.data] = FunctionGraph(function.sym_name.data, nodes, list(edges))
    return graphs


def _string_list(attr: Any) -> list[str]:
    from xdsl.dialects.builtin import ArrayAttr, StringAttr

    if not isinstance(attr, ArrayAttr):
        return []
    return [a.data if isinstance(a, StringAttr) else "" for a in attr.data]


class GraphCapture:
    """An instrumentation (`irc.timing`) that keeps the graph `partition` sees and its report.

    The graph is taken right before each `partition` step, so after a compilation with
    lowering refusals (several rounds) it is the last round's: the one compiled.
    """

    def __init__(self) -> None:
        self._graphs: dict[str, FunctionGraph] = {}
        self._report: PartitionReport | None = None

    def before_step(self, step: Step) -> None:
        from xdsl.dialects.builtin import ModuleOp

        if step.name == "partition" and isinstance(step.module, ModuleOp):
            self._graphs = _extract(step.module)

    def after_step(self, step: Step) -> None:
        if step.name == "partition" and not step.failed and step.result is not None:
            self._report = step.result

    def graph(self, refusals: Sequence[LoweringRefusal] = (), summary: str = "") -> ModelGraph:
        """The captured graph with the partition's assignment; ValueError when no
        `partition` step ran."""
        if self._report is None:
            raise ValueError("no partition step was observed: nothing to draw")
        return assign(self._graphs, self._report, refusals, summary)


def assign(
    graphs: Mapping[str, FunctionGraph],
    report: PartitionReport,
    refusals: Sequence[LoweringRefusal] = (),
    summary: str = "",
) -> ModelGraph:
    """Colour `graphs` with `report`: each op's target and region, host ops' reasons."""
    targets = [str(t.get("name", "")) for t in report.targets] or list(
        report.functions[0].targets if report.functions else []
    )
    result = ModelGraph(targets, [], summary=summary)
    result.refusals = [r.describe() for r in refusals]
    for function in report.functions:
        graph = graphs.get(function.name)
        if graph is None:
            continue
        by_index = {node.index: node for node in graph.nodes if node.index is not None}
        for region in function.regions:
            for entry in region.ops:
                node = by_index.get(entry.index)
                if node is not None:
                    node.target, node.region = region.target, region.id
            result.regions.append(
                {
                    "function": function.name,
                    "id": region.id,
                    "target": region.target,
                    "ops": len(region.ops),
                    "inputs": len(region.inputs),
                    "outputs": len(region.outputs),
                }
            )
        for host in function.host:
            node = by_index.get(host.op.index)
            if node is not None:
                node.target = HOST
                node.reasons = {t: (r.code, r.reason) for t, r in host.reasons.items()}
        for refusal in refusals:
            for node in graph.nodes:
                if node.is_op and node.kind == refusal.op and node.name == refusal.where:
                    node.lowering.append(refusal.describe())
        result.functions.append(graph)
    return result


def node_lines(node: GraphNode) -> list[str]:
    """The text lines of a node: kind, name, shapes, and for host ops the first reason."""
    lines = [node.kind if node.is_op else f"{node.kind}: {node.name}"]
    if node.is_op and node.name:
        lines.append(node.name)
    if node.shapes:
        lines.append(", ".join(node.shapes))
    if node.target == HOST:
        lines.append(f"! {_first_reason(node)}")
    return [_truncate(line) for line in lines]


def node_tag(node: GraphNode) -> str:
    """The tag drawn at the right end of a node's first line: its region (`R3`), if any,
    for ops a target runs."""
    if node.region is not None and node.target not in (None, HOST):
        return f"R{node.region}"
    return ""


def _first_reason(node: GraphNode) -> str:
    if node.lowering:
        return "lowering refused"
    for target, (code, _) in node.reasons.items():
        return f"host: {target} ({code})"
    return "host"


def _truncate(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def node_tooltip(node: GraphNode) -> str:
    head = f"{node.kind}" + (f" '{node.name}'" if node.name else "")
    if node.index is not None:
        head = f"#{node.index} {head}"
    lines = [head]
    if node.shapes:
        lines.append("-> " + ", ".join(node.shapes))
    if node.target == HOST:
        lines.append("stays on the host:")
        lines += [f"  {t} ({code}): {reason}" for t, (code, reason) in node.reasons.items()]
    elif node.target is not None:
        lines.append(f"runs on {node.target} (region {node.region})")
    lines += node.lowering
    return "\n".join(lines)
