"""A layered (Sugiyama-style) layout of a function's graph, made here: nothing to install.

Longest-path layers from the inputs, dummy points on edges that skip layers, barycentre
sweeps to reduce crossings, then each layer placed near its neighbours' positions (the mean
of a left-packed and a right-packed placement, which keeps the order and the gaps).
Sizes are in SVG user units; a node's box fits its `node_lines` (and its region tag, beside
the first line) in an 11 px monospace font.

A deep graph is one tall column of layers (a 200-op model: 363 x 18,846 px). `wrap` cuts the
layers into several columns side by side, at layer boundaries, so that the picture comes out
roughly `ASPECT` wide for tall; an edge that leaves the bottom of a column ends in a numbered
connector, and the next column starts it again from the same number.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from irc.graph.model import FunctionGraph, GraphNode, node_lines, node_tag

__all__ = ["CHAR_W", "CONNECTOR", "LINE_H", "MARGIN", "PAD", "Box", "Columns", "layout", "wrap"]

CHAR_W = 6.6  # width of a character of the 11 px monospace font
LINE_H = 14  # height of a label line
PAD = 8  # inner padding of a box
GAP_X = 28  # least space between two boxes of a layer
GAP_Y = 44  # space between layers
MARGIN = 20  # around the drawing
DUMMY_W = 8  # the width a long edge takes where it crosses a layer
SWEEPS = 6  # barycentre sweeps (down, up, ...)
COLUMN_GAP = 70  # between two columns of a wrapped drawing
CONNECTOR = 40  # above and below a column: room for the connectors of wrapped edges
ASPECT = 1.6  # width / height a wrapped drawing aims for (a screen's)
MIN_COLUMN_H = 1000.0  # a drawing no taller than this stays one column


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
    column: int = 0
    """The column it is drawn in (`wrap`)."""


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
        tag = node_tag(node)
        chars = max(max(len(line) for line in lines), len(lines[0]) + (len(tag) + 1 if tag else 0))
        width = chars * CHAR_W + 2 * PAD
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


@dataclass(frozen=True)
class Columns:
    """Where `wrap` put the columns: each one's top and bottom edge (of its boxes, before
    the connector room), and the size of the whole drawing."""

    tops: tuple[float, ...]
    bottoms: tuple[float, ...]
    width: float
    height: float

    @property
    def count(self) -> int:
        return len(self.tops)


def wrap(boxes: list[Box], width: float, height: float, *, aspect: float = ASPECT) -> Columns:
    """Cut a laid-out drawing (`layout`) into columns at layer boundaries and move the
    boxes there (`Box.column`, `x`, `y`), aiming at `aspect` (width / height). A drawing
    no taller than `MIN_COLUMN_H`, or already wide enough, stays one column; a wrapped one
    gets `CONNECTOR` room above and below every column."""
    if not boxes:
        return Columns((0.0,), (height,), width, height)
    depth = max(b.layer for b in boxes) + 1
    row_top = [float("inf")] * depth
    row_bottom = [0.0] * depth
    for box in boxes:
        row_top[box.layer] = min(row_top[box.layer], box.y)
        row_bottom[box.layer] = max(row_bottom[box.layer], box.y + box.height)
    count = round(math.sqrt(aspect * height / (width + COLUMN_GAP)))
    if height <= MIN_COLUMN_H or count <= 1:
        return Columns((0.0,), (height,), width, height)
    target = max(MIN_COLUMN_H, height / count)
    column_of_layer = [0] * depth
    first = [0]  # the first layer of each column
    for level in range(1, depth):
        if row_bottom[level] - row_top[first[-1]] > target:
            first.append(level)
        column_of_layer[level] = len(first) - 1
    tops, bottoms = [], []
    left = 0.0
    for k, start in enumerate(first):
        members = [b for b in boxes if column_of_layer[b.layer] == k]
        low = min(b.x - b.width / 2 for b in members)
        high = max(b.x + b.width / 2 for b in members)
        shift_y = CONNECTOR - row_top[start]
        for box in members:
            box.column = k
            box.x += left - low
            box.y += shift_y
        tops.append(CONNECTOR)
        bottoms.append(max(b.y + b.height for b in members))
        left += high - low + COLUMN_GAP
    return Columns(tuple(tops), tuple(bottoms), left - COLUMN_GAP, max(bottoms) + CONNECTOR)
