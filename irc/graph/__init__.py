"""Pictures of a partitioned model: the op graph as SVG, HTML or DOT, coloured by target.

`irc-compile MODEL --targets opencl,cpu --graph out.svg|out.html|out.dot` draws the graph the
`partition` pass saw (the model's ops after canonicalization; constants and terminators are
left out), each op filled with the colour of the target that runs it and labelled with its
kind, its name in the model and its result shapes. Ops left on the host are drawn white with
a dashed red border, a red `!` and the first refusal on the box; every target's reason (and
any lowering refusal) is in the box's `<title>` tooltip. The HTML page embeds the SVG and
adds tables of the regions, the host ops and their reasons, and the lowering refusals; the
DOT source (for Graphviz, when it is installed) frames each region in a cluster.

```python
capture = GraphCapture()
with instrumented(capture):
    compiled = irc.compile("model.onnx", ["opencl", "cpu"])
write_graph("out.html", capture.graph(compiled.refusals, compiled.summary), title="model.onnx")
```

Modules: `model` (the graph, `GraphCapture`), `layout` (a layered drawing made here, so
nothing needs to be installed), `render` (SVG, HTML, Graphviz DOT).

A model file is untrusted input: every string that comes from it (op and tensor names,
reasons that quote them) is XML-escaped, and characters XML cannot carry are replaced.
"""

from irc.graph.model import (
    HOST,
    FunctionGraph,
    GraphCapture,
    GraphEdge,
    GraphNode,
    ModelGraph,
    assign,
)
from irc.graph.render import (
    GRAPH_SUFFIXES,
    dot_string,
    render_dot,
    render_html,
    render_svg,
    target_colours,
    write_graph,
    xml_text,
)

__all__ = [
    "GRAPH_SUFFIXES",
    "HOST",
    "FunctionGraph",
    "GraphCapture",
    "GraphEdge",
    "GraphNode",
    "ModelGraph",
    "assign",
    "dot_string",
    "render_dot",
    "render_html",
    "render_svg",
    "target_colours",
    "write_graph",
    "xml_text",
]
