"""A layered (Sugiyama-style) layout of a function's graph, made here: nothing to install.

Longest-path layers from the inputs, dummy points on edges that skip layers, barycentre
sweeps to reduce crossings, then each layer placed near its neighbours' positions (the mean
of a left-packed and a right-packed placement, which keeps the order and the gaps).
Sizes are in SVG user units; a node's box fits its `node_lines` in an 11 px monospace font.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from irc.graph.model import FunctionGraph, GraphNode, node_lines

__all__ = ["CHAR_W", "LINE_H", "MARGIN", "PAD", "Box", "layout"]

CHAR_W = 6.6  # width of a character of the 11 px monospace font
LINE_H = 14  # height of a label line
PAD = 8  # inner padding of a box
GAP_X = 28  # least space between two boxes of a layer
GAP_Y = 44  # space between layers
MARGIN = 20  # around the drawing
DUMMY_W = 8  # the width a long edge takes where it crosses a layer
SWEEPS = 6  # barycentre sweeps (down, up, ...)


@dataclass
class Box:
    """A laid-out node (or a dummy point on a long edge)."""

    node: GraphNode | None
    layer: int
    width: float
    height: float
    x: float = 0.0
    """Centre."""
    y: float = 0.0
    """Top."""


def layout(graph: FunctionGraph) -> tuple[list[Box], list[list[int]], float, float]:
    """Boxes (nodes first, then dummies), each edge as the box ids it passes through, and
    the drawing's width and height."""
    n = len(graph.nodes)
    preds: list[list[int]] = [[] for _ in range(n)]
    for edge in graph.edges:
        preds[edge.dest].append(edge.source)
    # Nodes are in program order (a topological order), so one pass gives longest paths.
    layer = [0] * n
    for node in graph.nodes:
        if preds[node.id]:
            layer[node.id] = 1 + max(layer[p] for p in preds[node.id])
    boxes = []
    for node in graph.nodes:
        lines = node_lines(node)
        width = max(len(line) for line in lines) * CHAR_W + 2 * PAD
        boxes.append(Box(node, layer[node.id], max(width, 90.0), len(lines) * LINE_H + PAD))
    chains: list[list[int]] = []
    for edge in graph.edges:
        chain = [edge.source]
        for level in range(layer[edge.source] + 1, layer[edge.dest]):
            boxes.append(Box(None, level, DUMMY_W, 0.0))
            chain.append(len(boxes) - 1)
        chain.append(edge.dest)
        chains.append(chain)
    up: list[list[int]] = [[] for _ in boxes]
    down: list[list[int]] = [[] for _ in boxes]
    for chain in chains:
        for a, b in itertools.pairwise(chain):
            down[a].append(b)
            up[b].append(a)
    depth = max((b.layer for b in boxes), default=0) + 1
    layers: list[list[int]] = [[] for _ in range(depth)]
    for i, box in enumerate(boxes):
        layers[box.layer].append(i)
    _order(layers, up, down)
    _place(boxes, layers, up, down)
    heights = [max((boxes[i].height for i in row), default=0.0) for row in layers]
    top = 0.0
    for row, height in zip(layers, heights, strict=True):
        for i in row:
            box = boxes[i]
            box.y = top + (height - box.height) / 2
        top += height + GAP_Y
    width = max((b.x + b.width / 2 for b in boxes), default=0.0)
    return boxes, chains, width, max(top - GAP_Y, 0.0)


def _order(layers: list[list[int]], up: list[list[int]], down: list[list[int]]) -> None:
    """Barycentre sweeps: sort each layer by the mean position of its neighbours in the
    layer just swept (stable, so ties keep program order)."""
    position = {i: p for row in layers for p, i in enumerate(row)}
    for sweep in range(SWEEPS):
        downward = sweep % 2 == 0
        rows = range(1, len(layers)) if downward else range(len(layers) - 2, -1, -1)
        for r in rows:
            neighbours = up if downward else down

            def key(i: int, neighbours: list[list[int]] = neighbours) -> float:
                around = neighbours[i]
                if not around:
                    return float(position[i])
                return sum(position[j] for j in around) / len(around)

            layers[r].sort(key=key)
            for p, i in enumerate(layers[r]):
                position[i] = p


def _place(
    boxes: list[Box], layers: list[list[int]], up: list[list[int]], down: list[list[int]]
) -> None:
    """x centres: packed first, then pulled towards the neighbours' mean, sweeping down and
    up; the order in a layer and the gaps are kept."""
    for row in layers:
        left = 0.0
        for i in row:
            boxes[i].x = left + boxes[i].width / 2
            left += boxes[i].width + GAP_X
    for sweep in range(4):
        downward = sweep % 2 == 0
        rows = layers[1:] if downward else layers[-2::-1]
        for row in rows:
            wanted = []
            for i in row:
                around = (up if downward else down)[i] or (down if downward else up)[i]
                wanted.append(
                    sum(boxes[j].x for j in around) / len(around) if around else boxes[i].x
                )
            _spread(boxes, row, wanted)
    lowest = min((b.x - b.width / 2 for b in boxes), default=0.0)
    for box in boxes:
        box.x -= lowest


def _spread(boxes: list[Box], row: list[int], wanted: list[float]) -> None:
    """Put the boxes of `row` as close to `wanted` as the order and gaps allow: the mean of
    the placement pushed right from the left and the one pushed left from the right."""
    if not row:
        return
    gaps = [(boxes[a].width + boxes[b].width) / 2 + GAP_X for a, b in itertools.pairwise(row)]
    right = list(wanted)
    for k in range(1, len(row)):
        right[k] = max(right[k], right[k - 1] + gaps[k - 1])
    left = list(wanted)
    for k in range(len(row) - 2, -1, -1):
        left[k] = min(left[k], left[k + 1] - gaps[k])
    for k, i in enumerate(row):
        boxes[i].x = (right[k] + left[k]) / 2
