"""`irc.graph` and `irc-compile --graph`: the partitioned graph as SVG and HTML.

The pictures are checked by parsing them (xml.etree): one box per op, the box colours of
the legend's targets, host ops with their reasons, and model-supplied names (hostile ones:
markup, quotes, `]]>`, a control character) that come back intact as text, never as markup.
Deep graphs are wrapped into columns (no overlaps, a numbered connector pair wherever an edge
changes column), region tags keep clear of the op's name, and the HTML page pans and zooms.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import irc
from irc.graph import (
    HOST,
    FunctionGraph,
    GraphCapture,
    GraphEdge,
    GraphNode,
    ModelGraph,
    dot_string,
    render_dot,
    render_html,
    render_svg,
    xml_text,
)
from irc.graph.layout import CHAR_W, layout
from irc.targets import load_plugin
from irc.timing import instrumented
from irc.tools import irc_compile

TESTPLUGIN = "tests.plugins.testplugin:TestPluginTarget"
SVG = "{http://www.w3.org/2000/svg}"

# softmax is denied (stays on the host), `r2` is pinned to the reference target, the rest
# runs on testplugin.
HOSTILE = r"""
func.func @main(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    attributes {irc.input_names = ["<in&put \"x\">"], irc.output_names = ["out'put]]>"]} {
  %a = nn.relu %x : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32> loc("<script>alert('x')</script>")
  %b = nn.add %a, %x : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32> loc("a&b\01")
  %s = nn.softmax %b axis = 3 : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32> loc("<soft>&max")
  %c = nn.relu %s : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32> loc("r2")
  %d = nn.add %c, %a : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  func.return %d : tensor<1x4x4x8xf32>
}
"""


@pytest.fixture(scope="module")
def testplugin() -> str:
    return load_plugin(TESTPLUGIN).name


@pytest.fixture(scope="module")
def compiled_graph(testplugin: str):
    capture = GraphCapture()
    with instrumented(capture):
        compiled = irc.compile(
            irc.parse_module(HOSTILE),
            [testplugin, "reference"],
            min_ops=1,
            deny_ops=["nn.softmax"],
            place=["r2:reference"],
        )
    return capture.graph(compiled.refusals, compiled.summary)


def _boxes(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if (g.get("class") or "").startswith("node")]


def _ops(root: ET.Element) -> list[ET.Element]:
    return [g for g in _boxes(root) if g.get("class") == "node op"]


def _title(box: ET.Element) -> str:
    title = box.find(f"{SVG}title")
    assert title is not None
    assert title.text is not None
    return title.text


def test_svg_has_one_box_per_op_coloured_by_target(compiled_graph, testplugin: str) -> None:
    root = ET.fromstring(render_svg(compiled_graph))
    ops = _ops(root)
    assert len(ops) == 5  # the constants-free ops; the terminator is not drawn
    assert sorted(g.get("class") for g in _boxes(root)).count("node input") == 1
    legend = {
        item.get("data-target"): item.find(f"{SVG}rect").get("stroke")  # type: ignore[union-attr]
        for item in root.iter(f"{SVG}g")
        if item.get("class") == "legend-item"
    }
    assert set(legend) == {testplugin, "reference", "host"}
    assert len(set(legend.values())) == 3
    targets = [g.get("data-target") for g in ops]
    assert targets == [testplugin, testplugin, "host", "reference", testplugin]
    for box in ops:
        rect = box.find(f"{SVG}rect")
        assert rect is not None
        assert rect.get("stroke") == legend[box.get("data-target")]
    regions = {g.get("data-region") for g in ops if g.get("data-target") == testplugin}
    assert len(regions) == 2  # the host softmax splits testplugin's ops in two
    edges = [p for p in root.iter(f"{SVG}path") if p.get("class") == "edge"]
    assert len(edges) == 8  # 7 uses of values between drawn nodes, and the output


def test_host_ops_carry_their_reasons(compiled_graph) -> None:
    root = ET.fromstring(render_svg(compiled_graph))
    (host,) = [g for g in _ops(root) if g.get("data-target") == "host"]
    assert "testplugin (denied): 'nn.softmax' is in deny-ops" in _title(host)
    assert any(g.get("class") == "host-mark" for g in host.iter(f"{SVG}g"))
    texts = ["".join(t.itertext()) for t in host.iter(f"{SVG}text")]
    assert "! host: testplugin (denied)" in texts


def test_hostile_names_are_text_not_markup(compiled_graph) -> None:
    svg = render_svg(compiled_graph)
    assert "<script>" not in svg
    assert "<soft>" not in svg
    assert "\x01" not in svg
    root = ET.fromstring(svg)
    titles = [_title(box) for box in _boxes(root)]
    assert any("<script>alert('x')</script>" in t for t in titles)
    assert any("<soft>&max" in t for t in titles)
    assert any("a&b\ufffd" in t for t in titles)  # the control character, replaced
    assert any('<in&put "x">' in t for t in titles)
    assert any("out'put]]>" in t for t in titles)


def test_html_page_has_svg_and_tables(compiled_graph) -> None:
    page = render_html(compiled_graph, title="<model>.mlir")
    assert page.startswith("<!DOCTYPE html>")
    root = ET.fromstring(page.split("\n", 1)[1])
    assert root.find("head/title").text == "irc: <model>.mlir"  # type: ignore[union-attr]
    assert root.find(f".//{SVG}svg") is not None
    tables = {t.get("class"): t for t in root.iter("table")}
    assert len(tables["regions"].findall("tr")) == 4  # header + 3 regions
    rows = [[td.text for td in tr.findall("td")] for tr in tables["host"].findall("tr")[1:]]
    assert [row[2:6] for row in rows] == [
        ["nn.softmax", "<soft>&max", "testplugin", "denied"],
        ["nn.softmax", "<soft>&max", "reference", "denied"],
    ]


def test_xml_text_escapes_and_replaces() -> None:
    assert xml_text('<a href="x">\'&\x00') == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;\ufffd"


def test_capture_without_partition_is_an_error() -> None:
    with pytest.raises(ValueError, match="no partition step"):
        GraphCapture().graph()


def test_layout_of_a_longer_model_has_no_overlaps(testplugin: str) -> None:
    lines = ["func.func @main(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {"]
    previous = "%x"
    for i in range(12):  # a chain with skip connections: edges that span layers
        op = "nn.add" if i % 3 == 2 else "nn.relu"
        if op == "nn.add":
            lines.append(
                f"  %v{i} = nn.add {previous}, %x : tensor<1x8xf32>, tensor<1x8xf32> "
                "-> tensor<1x8xf32>"
            )
        else:
            lines.append(f"  %v{i} = nn.relu {previous} : tensor<1x8xf32> -> tensor<1x8xf32>")
        previous = f"%v{i}"
    lines += [f"  func.return {previous} : tensor<1x8xf32>", "}"]
    capture = GraphCapture()
    with instrumented(capture):
        compiled = irc.compile(irc.parse_module("\n".join(lines)), [testplugin])
    root = ET.fromstring(render_svg(capture.graph(compiled.refusals)))
    rects = []
    for box in _boxes(root):
        rect = box.find(f"{SVG}rect")
        assert rect is not None
        rects.append(tuple(float(rect.get(k)) for k in ("x", "y", "width", "height")))  # type: ignore[arg-type]
    assert len(rects) == 14  # 12 ops, one input, one output
    for i, (x1, y1, w1, h1) in enumerate(rects):
        for x2, y2, w2, h2 in rects[i + 1 :]:
            assert x1 + w1 <= x2 or x2 + w2 <= x1 or y1 + h1 <= y2 or y2 + h2 <= y1


def test_irc_compile_writes_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "hostile.mlir"
    source.write_text(HOSTILE)
    svg, page = tmp_path / "g.svg", tmp_path / "g.html"
    for out in (svg, page):
        argv = [str(source), "--targets", "testplugin", "--plugin", TESTPLUGIN]
        assert irc_compile.main([*argv, "-o", str(tmp_path / "out.mlir"), "--graph", str(out)]) == 0
    assert len(_ops(ET.parse(svg).getroot())) == 5
    assert "<h2>Ops on the host</h2>" in page.read_text()
    capsys.readouterr()
    bad = [str(source), "--targets", "testplugin", "--plugin", TESTPLUGIN, "--graph", "g.png"]
    assert irc_compile.main(bad) == 1
    assert capsys.readouterr().err == (
        "irc-compile: error: bad --graph 'g.png': expected a .svg, .html or .dot file name\n"
    )


def test_lowering_refusals_are_shown(testplugin: str) -> None:
    from irc.compiler import LoweringRefusal

    capture = GraphCapture()
    with instrumented(capture):
        irc.compile(irc.parse_module(HOSTILE), [testplugin, "reference"], place=["r2:reference"])
    refusal = LoweringRefusal(testplugin, "nn.relu", "r2", "no <kernel> & no luck", "reference")
    graph = capture.graph([refusal])
    root = ET.fromstring(render_svg(graph))
    (box,) = [g for g in _ops(root) if "'r2'" in _title(g)]
    assert refusal.describe() in _title(box)
    page = ET.fromstring(render_html(graph).split("\n", 1)[1])
    items = [li.text for li in page.iter("li")]
    assert items == [refusal.describe()]


def test_dot_source_quotes_every_string(compiled_graph, testplugin: str) -> None:
    dot = render_dot(compiled_graph)
    quoted = r'"(?:[^"\\]|\\.)*"'
    statements = [line.strip() for line in dot.splitlines()]
    nodes = [
        s
        for s in statements
        if re.fullmatch(rf"f0_n\d+ \[label={quoted}, tooltip={quoted}, .*\];", s)
    ]
    assert len(nodes) == 7  # 5 ops, the input and the output
    assert len([s for s in statements if re.fullmatch(r"f0_n\d+ -> f0_n\d+;", s)]) == 8
    clusters = [s for s in statements if s.startswith("subgraph cluster_f0_r")]
    assert len(clusters) == 3  # one frame per region
    assert r"<in&put \"x\">" in dot  # quotes escaped; markup is plain text in a quoted string
    assert "\x01" not in dot
    assert dot_string('a\\b"c\nd') == r'"a\\b\"c\nd"'


# ---- Deep graphs: columns, connectors, region tags, pan and zoom ---------------------------------


def _chain_graph(ops: int) -> ModelGraph:
    """A drawable graph of `ops` ops in a chain with a skip edge every 5 ops (spanning
    layers), regions of 4 ops with a host op between, like a partitioned deep model."""
    nodes = [GraphNode(0, "input", "x", ["1x8xf32"])]
    edges = []
    for i in range(ops):
        host = i % 5 == 4
        node = GraphNode(
            len(nodes),
            "nn.conv2d" if i % 3 else "nn.depthwise",
            f"block{i}/conv",
            ["1x112x112x32xf32"],
            index=i,
            target=HOST if host else "opencl",
            region=None if host else i // 5,
            reasons={"opencl": ("op", "not supported")} if host else {},
        )
        nodes.append(node)
        edges.append(GraphEdge(node.id - 1, node.id))
        if i % 5 == 0 and i >= 5:
            edges.append(GraphEdge(node.id - 5, node.id))
    nodes.append(GraphNode(len(nodes), "output", "y", ["1x8xf32"]))
    edges.append(GraphEdge(len(nodes) - 2, len(nodes) - 1))
    return ModelGraph(["opencl"], [FunctionGraph("main", nodes, edges)], summary="s\n" * 40)


def _rects(root: ET.Element) -> list[tuple[float, float, float, float]]:
    rects = []
    for box in _boxes(root):
        rect = box.find(f"{SVG}rect")
        assert rect is not None
        rects.append(tuple(float(rect.get(k)) for k in ("x", "y", "width", "height")))  # type: ignore[arg-type]
    return rects  # type: ignore[return-value]


def test_a_deep_graph_is_wrapped_into_columns() -> None:
    graph = _chain_graph(300)
    root = ET.fromstring(render_svg(graph))
    width, height = float(root.get("width")), float(root.get("height"))  # type: ignore[arg-type]
    _laid, _chains, one_w, one_h = layout(graph.functions[0])
    assert one_h > 20 * one_w  # one column would be a strip
    assert 1.0 <= width / height <= 2.5  # wrapped: about a screen's shape
    assert height < one_h / 5
    heading = next(t.text for t in root.iter(f"{SVG}text") if t.get("class") == "heading")
    columns = int(re.search(r"in (\d+) columns", heading or "").group(1))  # type: ignore[union-attr]
    assert columns >= 5
    rects = _rects(root)
    assert len(rects) == 302
    group = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "function")
    dy = float(re.search(r"translate\([\d.]+,([\d.]+)\)", group.get("transform")).group(1))  # type: ignore[arg-type, union-attr]
    for x, y, w, h in rects:  # inside the picture
        assert 0 <= x
        assert x + w <= width
        assert 0 <= y + dy
        assert y + dy + h <= height
    for i, (x1, y1, w1, h1) in enumerate(rects):  # no two boxes overlap
        for x2, y2, w2, h2 in rects[i + 1 :]:
            assert x1 + w1 <= x2 or x2 + w2 <= x1 or y1 + h1 <= y2 or y2 + h2 <= y1


def test_every_wrapped_edge_has_a_numbered_connector() -> None:
    root = ET.fromstring(render_svg(_chain_graph(300)))
    connectors: dict[str, list[tuple[float, float]]] = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") == "connector":
            circle = g.find(f"{SVG}circle")
            text = g.find(f"{SVG}text")
            assert circle is not None
            assert text is not None
            assert text.text == g.get("data-connector")
            point = (float(circle.get("cx")), float(circle.get("cy")))  # type: ignore[arg-type]
            connectors.setdefault(g.get("data-connector") or "", []).append(point)
    heading = next(t.text for t in root.iter(f"{SVG}text") if t.get("class") == "heading")
    columns = int(re.search(r"in (\d+) columns", heading or "").group(1))  # type: ignore[union-attr]
    # The chain crosses every column boundary, the skip edges some of them too.
    assert len(connectors) >= columns - 1
    for exit_at, *entries in connectors.values():  # one under a column, entries atop the next
        assert entries
        for entry_at in entries:
            assert entry_at[0] > exit_at[0]
            assert entry_at[1] < exit_at[1]
    paths = [p for p in root.iter(f"{SVG}path") if p.get("class") == "edge"]
    assert len(paths) == len(_chain_graph(300).functions[0].edges)  # still one path per edge
    moves = sum(p.get("d", "").count("M ") - 1 for p in paths)
    # each entry circle interrupts one edge once
    assert moves == sum(len(points) - 1 for points in connectors.values())


def _connector_circles(root: ET.Element) -> list[tuple[str, float, float]]:
    circles = []
    for g in root.iter(f"{SVG}g"):
        if g.get("class") == "connector":
            circle = g.find(f"{SVG}circle")
            assert circle is not None
            cx, cy = float(circle.get("cx")), float(circle.get("cy"))  # type: ignore[arg-type]
            circles.append((g.get("data-connector") or "", cx, cy))
    return circles


def _fan_graph(blocks: int) -> ModelGraph:
    """Residual blocks as in MobileNet: each block's input feeds a conv and the block's add
    (one value, two users), and the add takes the conv's result and the block's input (two
    values, one user), so wrapped columns break between a value and both kinds of users."""
    nodes = [GraphNode(0, "input", "x", ["1x8xf32"])]
    edges = []
    source = 0
    for b in range(blocks):
        conv = GraphNode(len(nodes), "nn.conv2d", f"c{b}", ["1x8xf32"], index=2 * b, target="cpu")
        nodes.append(conv)
        add = GraphNode(len(nodes), "nn.add", f"a{b}", ["1x8xf32"], index=2 * b + 1, target="cpu")
        nodes.append(add)
        edges += [GraphEdge(source, conv.id), GraphEdge(conv.id, add.id), GraphEdge(source, add.id)]
        source = add.id
    nodes.append(GraphNode(len(nodes), "output", "y", ["1x8xf32"]))
    edges.append(GraphEdge(source, len(nodes) - 1))
    return ModelGraph(["cpu"], [FunctionGraph("main", nodes, edges)])


@pytest.mark.parametrize("graph", [_chain_graph(300), _fan_graph(150)], ids=["chain", "fan"])
def test_connectors_never_hide_one_another(graph: ModelGraph) -> None:
    """Two numbers on one spot hide one of them: a value leaving a column for two users is
    one number (one exit, an entry at each user), and two values entering one op are two
    numbers side by side."""
    circles = _connector_circles(ET.fromstring(render_svg(graph)))
    assert len({number for number, _x, _y in circles}) > 1
    for i, (n1, x1, y1) in enumerate(circles):
        for n2, x2, y2 in circles[i + 1 :]:
            if (x1 - x2) ** 2 + (y1 - y2) ** 2 < 16**2:  # circles of radius 8 overlap
                assert n1 == n2, (n1, n2, x1, y1, x2, y2)
                assert (x1, y1) == (x2, y2), (n1, x1, y1, x2, y2)
    exits: dict[str, int] = {}
    for number, _x, y in circles:  # one exit (the lowest circle) per number
        exits[number] = exits.get(number, 0) + (y == max(c[2] for c in circles if c[0] == number))
    assert set(exits.values()) == {1}


def test_a_short_graph_stays_one_column() -> None:
    root = ET.fromstring(render_svg(_chain_graph(6)))
    heading = next(t.text for t in root.iter(f"{SVG}text") if t.get("class") == "heading")
    assert "columns" not in (heading or "")
    assert not [g for g in root.iter(f"{SVG}g") if g.get("class") == "connector"]


def test_region_tags_do_not_overlap_the_first_line() -> None:
    graph = _chain_graph(40)
    root = ET.fromstring(render_svg(graph))
    checked = 0
    for box in _ops(root):
        texts = box.findall(f"{SVG}text")
        tag = next((t for t in texts if t.get("class") == "tag"), None)
        if tag is None:
            continue
        first = texts[0]
        rect = box.find(f"{SVG}rect")
        assert rect is not None
        assert first.text
        assert tag.text
        first_end = float(first.get("x")) + len(first.text) * CHAR_W  # type: ignore[arg-type]
        tag_start = float(tag.get("x")) - len(tag.text) * CHAR_W  # text-anchor="end"  # type: ignore[arg-type]
        assert first_end + CHAR_W <= tag_start + 1e-6
        checked += 1
    assert checked == 32  # every op a target runs


def test_html_page_pans_and_zooms_and_folds_a_long_summary() -> None:
    page = render_html(_chain_graph(300), title="deep")
    root = ET.fromstring(page.split("\n", 1)[1])  # still well-formed with the script
    buttons = [b.get("data-zoom") for b in root.iter("button")]
    assert buttons == ["fit", "out", "in", "1"]
    script = next(root.iter("script")).text or ""
    assert "addEventListener" in script
    assert 'setAttribute("width"' in script
    details = next(root.iter("details"))
    assert details.get("open") is None  # 40 lines: folded, the picture comes first
    short = ET.fromstring(render_html(_chain_graph(6)).split("\n", 1)[1])
    assert next(short.iter("details")).get("open") is None  # the fixture's summary is long
    one_line = render_html(ModelGraph(["opencl"], _chain_graph(6).functions, summary="x"))
    assert next(ET.fromstring(one_line.split("\n", 1)[1]).iter("details")).get("open") == "open"
