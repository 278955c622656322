"""Rendering a `ModelGraph`: a standalone SVG, an HTML page around it, Graphviz DOT source.

A model file is untrusted input: every string that comes from it (op and tensor names,
reasons that quote them) is escaped for the output's language (`xml_text`, `dot_string`),
and characters XML cannot carry are replaced.
"""

from __future__ import annotations

import html
import itertools
import os
import re
from collections.abc import Iterable, Mapping, Sequence

from irc.graph.layout import CHAR_W, LINE_H, MARGIN, PAD, Box, Columns, layout, wrap
from irc.graph.model import HOST, GraphNode, ModelGraph, node_lines, node_tag, node_tooltip

__all__ = [
    "GRAPH_SUFFIXES",
    "PALETTE",
    "dot_string",
    "render_dot",
    "render_html",
    "render_svg",
    "target_colours",
    "write_graph",
    "xml_text",
]

GRAPH_SUFFIXES = (".svg", ".html", ".htm", ".dot", ".gv")

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7")
"""Border colours of the targets, in priority order (the fill is a light tint of each)."""
HOST_STROKE = "#d62728"
HOST_FILL = "#ffffff"
IO_FILL = "#e8e8e8"

# ---- SVG ----------------------------------------------------------------------------------------

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: object) -> str:
    """`text` made safe for XML content and attribute values: escaped (`& < > " '`), and
    characters XML cannot carry replaced by U+FFFD."""
    return html.escape(_INVALID_XML.sub("\ufffd", str(text)), quote=True)


def target_colours(targets: Iterable[str]) -> dict[str, str]:
    """The border colour of each target (priority order picks from `PALETTE`)."""
    return {t: PALETTE[k % len(PALETTE)] for k, t in enumerate(dict.fromkeys(targets))}


def _tint(colour: str, amount: float = 0.78) -> str:
    r, g, b = (int(colour[k : k + 2], 16) for k in (1, 3, 5))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mix)


_STYLE = (
    "text{font-family:monospace;font-size:11px;fill:#222}"
    ".kind{font-weight:bold}.reason{fill:#d62728}.mark{fill:#fff;font-weight:bold}"
    ".edge{fill:none;stroke:#777;stroke-width:1.2}"
    ".connector circle{fill:#fff;stroke:#777;stroke-width:1.2}"
    ".connector text{font-size:9px;fill:#555}"
    ".heading{font-size:14px;font-weight:bold}"
)


def render_svg(graph: ModelGraph) -> str:
    """The picture as a standalone SVG document."""
    colours = target_colours(graph.targets)
    parts: list[str] = []
    legend_h = 30.0
    top = MARGIN + legend_h
    width = 0.0
    for function in graph.functions:
        boxes, chains, w, h = layout(function)
        columns = wrap(boxes, w, h)
        w, h = columns.width, columns.height
        heading = f"@{function.name}: {sum(1 for n in function.nodes if n.is_op)} ops"
        if columns.count > 1:
            heading += f" (in {columns.count} columns, left to right)"
        parts.append(
            f'<text class="heading" x="{MARGIN}" y="{top + 14:.1f}">{xml_text(heading)}</text>'
        )
        top += 28
        parts.append(
            f'<g class="function" data-function="{xml_text(function.name)}" '
            f'transform="translate({MARGIN},{top:.1f})">'
        )
        connectors = _Connectors()
        for chain in chains:
            parts.append(_edge_path(boxes, chain, columns, connectors))
        parts += connectors.svg
        for box in boxes[: len(function.nodes)]:
            parts.append(_node_svg(box, colours))
        parts.append("</g>")
        top += h + MARGIN * 2
        width = max(width, w)
    width = max(width + 2 * MARGIN, _legend_width(graph.targets) + 2 * MARGIN)
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{top:.0f}" '
        f'viewBox="0 0 {width:.0f} {top:.0f}">',
        f"<style>{_STYLE}</style>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#777"/></marker></defs>',
        f'<rect width="{width:.0f}" height="{top:.0f}" fill="#ffffff"/>',
        _legend(graph.targets, colours),
    ]
    return "\n".join([*head, *parts, "</svg>"]) + "\n"


def _legend_width(targets: Sequence[str]) -> float:
    return sum(len(t) * CHAR_W + 40 for t in targets) + 160


def _legend(targets: Sequence[str], colours: Mapping[str, str]) -> str:
    items = ['<g class="legend">']
    x = float(MARGIN)
    y = float(MARGIN)
    for target in targets:
        colour = colours[target]
        items.append(
            f'<g class="legend-item" data-target="{xml_text(target)}">'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="16" height="14" rx="3" fill="{_tint(colour)}" '
            f'stroke="{colour}" stroke-width="2"/>'
            f'<text x="{x + 22:.1f}" y="{y + 11:.1f}">{xml_text(target)}</text></g>'
        )
        x += len(target) * CHAR_W + 40
    items.append(
        f'<g class="legend-item" data-target="{HOST}">'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="16" height="14" rx="3" fill="{HOST_FILL}" '
        f'stroke="{HOST_STROKE}" stroke-width="2" stroke-dasharray="4 2"/>'
        f'<text x="{x + 22:.1f}" y="{y + 11:.1f}">host (not delegated)</text></g>'
    )
    items.append("</g>")
    return "".join(items)


def _node_svg(box: Box, colours: Mapping[str, str]) -> str:
    node = box.node
    assert node is not None
    left = box.x - box.width / 2
    if node.target == HOST:
        fill, stroke, dash = HOST_FILL, HOST_STROKE, ' stroke-dasharray="5 3"'
    elif node.target is not None:
        stroke = colours.get(node.target, "#555555")
        fill, dash = _tint(stroke), ""
    else:
        fill, stroke, dash = IO_FILL, "#888888", ""
    classes = "node op" if node.is_op else f"node {node.kind}"
    attributes = f'class="{classes}" id="n{node.id}"'
    if node.target is not None:
        attributes += f' data-target="{xml_text(node.target)}"'
    if node.region is not None:
        attributes += f' data-region="{node.region}"'
    out = [
        f"<g {attributes}><title>{xml_text(node_tooltip(node))}</title>",
        f'<rect x="{left:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" height="{box.height:.1f}" '
        f'rx="6" fill="{fill}" stroke="{stroke}" stroke-width="2"{dash}/>',
    ]
    for k, line in enumerate(node_lines(node)):
        y = box.y + PAD / 2 + (k + 1) * LINE_H - 3
        if k == 0:
            css = ' class="kind"'
        elif node.target == HOST and line.startswith("!"):
            css = ' class="reason"'
        else:
            css = ""
        out.append(f'<text x="{left + PAD:.1f}" y="{y:.1f}"{css}>{xml_text(line)}</text>')
    if node.target == HOST:
        right = left + box.width
        out.append(
            f'<g class="host-mark"><circle cx="{right:.1f}" cy="{box.y:.1f}" r="8" '
            f'fill="{HOST_STROKE}"/><text class="mark" x="{right - 2:.1f}" y="{box.y + 4:.1f}">'
            "!</text></g>"
        )
    elif tag := node_tag(node):  # layout left room for it after the first line
        out.append(
            f'<text class="tag" x="{left + box.width - PAD:.1f}" y="{box.y + LINE_H:.1f}" '
            f'text-anchor="end">{tag}</text>'
        )
    out.append("</g>")
    return "".join(out)


class _Connectors:
    """The numbered circles where a wrapped edge leaves one column and enters the next.

    A value that leaves a column for several users in the next is one number (one exit
    circle, an entry circle at each user); values entering one op from the previous column
    get entry circles side by side, never on one spot (the upper number would hide the
    other)."""

    SPACING = 20.0
    """Centre distance of neighbouring circles (radius 8)."""

    def __init__(self) -> None:
        self.svg: list[str] = []
        self.count = 0
        self._exits: dict[tuple[float, float], int] = {}
        self._entries: dict[tuple[float, float], int] = {}

    def add(self, exit_at: tuple[float, float], entry_at: tuple[float, float]) -> float:
        """Connect `exit_at` to `entry_at`; the x where the entry circle went (moved right
        past circles of other numbers)."""
        number = self._exits.get(exit_at)
        if number is None:
            self.count += 1
            number = self._exits[exit_at] = self.count
            self._circle(exit_at, number)
        x, y = entry_at
        while (taken := self._taken(x, y)) is not None and taken != number:
            x += self.SPACING
        if taken is None:
            self._entries[(x, y)] = number
            self._circle((x, y), number)
        return x

    def _taken(self, x: float, y: float) -> int | None:
        """The number of an entry circle that a circle at (x, y) would touch, else None."""
        for (ex, ey), number in self._entries.items():
            if ey == y and abs(ex - x) < self.SPACING:
                return number
        return None

    def _circle(self, at: tuple[float, float], number: int) -> None:
        x, y = at
        self.svg.append(
            f'<g class="connector" data-connector="{number}"><circle cx="{x:.1f}" '
            f'cy="{y:.1f}" r="8"/><text x="{x:.1f}" y="{y + 3:.1f}" text-anchor="middle">'
            f"{number}</text></g>"
        )


def _edge_path(
    boxes: list[Box], chain: list[int], columns: Columns, connectors: _Connectors
) -> str:
    """One edge as one path: curves through the chain's points, and where two points lie in
    different columns, a drop to a numbered connector under the first column and a rise from
    the same number above the next."""
    first, last = boxes[chain[0]], boxes[chain[-1]]
    points = [(first.x, first.y + first.height, first.column)]
    points += [(boxes[i].x, boxes[i].y, boxes[i].column) for i in chain[1:-1]]
    points.append((last.x, last.y, last.column))
    d = [f"M {points[0][0]:.1f} {points[0][1]:.1f}"]
    for (x0, y0, c0), (x1, y1, c1) in itertools.pairwise(points):
        if c0 != c1:
            exit_y = columns.bottoms[c0] + 10
            entry_y = columns.tops[c1] - 14
            entry_x = connectors.add((x0, exit_y + 8), (x1, entry_y - 8))
            d.append(f"L {x0:.1f} {exit_y:.1f} M {entry_x:.1f} {entry_y:.1f}")
            x0, y0 = entry_x, entry_y
        mid = (y0 + y1) / 2
        d.append(f"C {x0:.1f} {mid:.1f} {x1:.1f} {mid:.1f} {x1:.1f} {y1:.1f}")
    return (
        f'<path class="edge" data-from="n{chain[0]}" data-to="n{chain[-1]}" '
        f'd="{" ".join(d)}" marker-end="url(#arrow)"/>'
    )


# ---- Graphviz ----------------------------------------------------------------------------------


def dot_string(text: object) -> str:
    """`text` as a Graphviz double-quoted string: backslashes and quotes escaped, newlines
    as `\\n`, characters XML cannot carry (Graphviz writes XML) replaced by U+FFFD."""
    clean = _INVALID_XML.sub("\ufffd", str(text))
    escaped = clean.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render_dot(graph: ModelGraph) -> str:
    """The graph in Graphviz's DOT language (`dot -Tsvg out.dot`): one cluster per function
    and per region (framed in its target's colour), the same colours, labels and tooltips
    as the SVG."""
    colours = target_colours(graph.targets)
    out = [
        "digraph irc {",
        '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=10];',
        '  edge [color="#777777"];',
    ]
    for k, function in enumerate(graph.functions):
        out.append(f"  subgraph cluster_f{k} {{")
        out.append(f"    label={dot_string('@' + function.name)};")
        regions: dict[int, list[GraphNode]] = {}
        for node in function.nodes:
            if node.region is not None and node.target not in (None, HOST):
                regions.setdefault(node.region, []).append(node)
        for region, members in regions.items():
            target = members[0].target or ""
            out.append(f"    subgraph cluster_f{k}_r{region} {{")
            out.append(f"      label={dot_string(f'{target} R{region}')};")
            out.append(f'      color="{colours.get(target, "#555555")}";')
            out += [f"      f{k}_n{node.id};" for node in members]
            out.append("    }")
        for node in function.nodes:
            if node.target == HOST:
                look = (
                    f'fillcolor="{HOST_FILL}", color="{HOST_STROKE}", style="rounded,dashed,filled"'
                )
            elif node.target is not None:
                stroke = colours.get(node.target, "#555555")
                look = f'fillcolor="{_tint(stroke)}", color="{stroke}"'
            else:
                look = f'fillcolor="{IO_FILL}", color="#888888"'
            label = dot_string("\n".join(node_lines(node)))
            tooltip = dot_string(node_tooltip(node))
            out.append(f"    f{k}_n{node.id} [label={label}, tooltip={tooltip}, {look}];")
        out += [f"    f{k}_n{e.source} -> f{k}_n{e.dest};" for e in function.edges]
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


# ---- HTML ---------------------------------------------------------------------------------------

_HTML_STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin:0.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;font-size:13px}"
    "pre{background:#f6f6f6;padding:0.5em}"
    ".graph{overflow:auto;border:1px solid #ddd;max-height:85vh;cursor:grab}"
    ".graph.panning{cursor:grabbing;user-select:none}.zoom{margin:0.3em 0;font-size:13px}"
)

_ZOOM_BAR = (
    '<div class="zoom"><button type="button" data-zoom="fit">fit</button> '
    '<button type="button" data-zoom="out">&#8722;</button> '
    '<button type="button" data-zoom="in">+</button> '
    '<button type="button" data-zoom="1">100%</button> '
    '<span class="zoom-level"></span> (drag to pan, Ctrl + wheel to zoom at the pointer)</div>'
)

# Pan and zoom for the picture: the SVG has a viewBox, so its width and height attributes
# scale it; the box scrolls. Starts fitted into the box when larger. No model text in here,
# and no `<` or `&`, so that the page stays well-formed XML (the tests parse it).
_ZOOM_SCRIPT = """<script>
(function () {
  const box = document.querySelector(".graph");
  const svg = box ? box.querySelector("svg") : null;
  if (!svg) return;
  const w = +svg.getAttribute("width"), h = +svg.getAttribute("height");
  const level = document.querySelector(".zoom-level");
  let scale = 1;
  function zoom(s, cx, cy) {
    s = Math.min(4, Math.max(0.02, s));
    const x = (box.scrollLeft + cx) / scale, y = (box.scrollTop + cy) / scale;
    scale = s;
    svg.setAttribute("width", w * s);
    svg.setAttribute("height", h * s);
    box.scrollLeft = x * s - cx;
    box.scrollTop = y * s - cy;
    level.textContent = Math.round(s * 100) + "%";
  }
  function fit() { zoom(Math.min(1, box.clientWidth / w, box.clientHeight / h), 0, 0); }
  document.querySelector(".zoom").addEventListener("click", function (e) {
    const what = e.target.getAttribute ? e.target.getAttribute("data-zoom") : null;
    const cx = box.clientWidth / 2, cy = box.clientHeight / 2;
    if (what === "fit") fit();
    else if (what === "in") zoom(scale * 1.25, cx, cy);
    else if (what === "out") zoom(scale / 1.25, cx, cy);
    else if (what === "1") zoom(1, cx, cy);
  });
  box.addEventListener("wheel", function (e) {
    if (!e.ctrlKey) return;
    e.preventDefault();
    const r = box.getBoundingClientRect();
    zoom(scale * (e.deltaY > 0 ? 1 / 1.15 : 1.15), e.clientX - r.left, e.clientY - r.top);
  }, {passive: false});
  let drag = null;
  box.addEventListener("mousedown", function (e) {
    drag = [e.clientX, e.clientY, box.scrollLeft, box.scrollTop];
    box.classList.add("panning");
  });
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    box.scrollLeft = drag[2] - (e.clientX - drag[0]);
    box.scrollTop = drag[3] - (e.clientY - drag[1]);
  });
  window.addEventListener("mouseup", function () { drag = null; box.classList.remove("panning"); });
  fit();
})();
</script>"""


def render_html(graph: ModelGraph, title: str = "model") -> str:
    """A page with the summary, the SVG (pan and zoom: buttons, drag, Ctrl + wheel), and
    tables of regions, host ops and refusals."""
    svg = render_svg(graph).split("\n", 1)[1]  # no XML declaration inside HTML
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"/>',
        f"<title>irc: {xml_text(title)}</title><style>{_HTML_STYLE}</style></head><body>",
        f"<h1>{xml_text(title)}</h1>",
        _summary_html(graph.summary),
        _ZOOM_BAR,
        f'<div class="graph" id="graph">{svg}</div>',
        "<h2>Regions</h2>",
        '<table class="regions"><tr><th>function</th><th>region</th><th>target</th>'
        "<th>ops</th><th>inputs</th><th>outputs</th></tr>",
    ]
    for row in graph.regions:
        cells = [f"@{row['function']}", row["id"], row["target"], row["ops"]]
        cells += [row["inputs"], row["outputs"]]
        out.append("<tr>" + "".join(f"<td>{xml_text(c)}</td>" for c in cells) + "</tr>")
    out.append("</table><h2>Ops on the host</h2>")
    out.append(
        '<table class="host"><tr><th>function</th><th>#</th><th>op</th><th>name</th>'
        "<th>target</th><th>code</th><th>reason</th></tr>"
    )
    for function in graph.functions:
        for node in function.nodes:
            if node.target != HOST:
                continue
            reasons = list(node.reasons.items()) or [("", ("", ""))]
            for target, (code, reason) in reasons:
                cells = [f"@{function.name}", node.index, node.kind, node.name or "", target]
                cells += [code, reason]
                out.append("<tr>" + "".join(f"<td>{xml_text(c)}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    if graph.refusals:
        out.append('<h2>Lowering refusals</h2><ul class="refusals">')
        out += [f"<li>{xml_text(r)}</li>" for r in graph.refusals]
        out.append("</ul>")
    out.append(_ZOOM_SCRIPT)
    out.append("</body></html>")
    return "\n".join(part for part in out if part) + "\n"


SUMMARY_LINES_OPEN = 12
"""A partition summary up to this many lines is shown open; a longer one (one line per host
op) starts folded, so that the picture is on the first screen."""


def _summary_html(summary: str) -> str:
    if not summary:
        return ""
    lines = summary.splitlines()
    opened = ' open="open"' if len(lines) <= SUMMARY_LINES_OPEN else ""  # XML-clean
    return (
        f'<details class="summary"{opened}><summary>partition summary ({len(lines)} lines)'
        f"</summary><pre>{xml_text(summary)}</pre></details>"
    )


def write_graph(path: str, graph: ModelGraph, title: str = "model") -> None:
    """Write the SVG, the HTML page or the Graphviz source (`.dot`, `.gv`), by `path`'s
    suffix, atomically (all or nothing).

    Raises ValueError for any other suffix and `OSError` when the file cannot be written.
    """
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in GRAPH_SUFFIXES:
        raise ValueError(f"'{path}': the graph is written as .svg, .html or .dot")
    if suffix == ".svg":
        text = render_svg(graph)
    elif suffix in (".dot", ".gv"):
        text = render_dot(graph)
    else:
        text = render_html(graph, title)
    from irc.fileio import write_atomically

    write_atomically(path, text)
