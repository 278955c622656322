"""Every ONNX model the repository writes (tests, benchmarks, fuzzers, examples) has an IR
version the onnxruntime releases users have accept.

`onnx.helper.make_model` stamps its own package's latest IR version (14 from onnx 1.23),
which onnxruntime 1.30 refuses ("Unsupported model IR version: 14, max supported IR
version: 13"). So every `make_model` call is either `onnx_support.make_onnx_model` (IR
`ONNX_IR_VERSION`) or pins `ir_version` in its function (an attribute assignment or a
keyword) to a literal no newer than `ONNX_IR_VERSION`. The check reads the source (ast), so
it also covers models that only a benchmark or a fuzzer writes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper
from onnx_support import ONNX_IR_VERSION, make_onnx_model

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("tests", "benchmarks", "fuzz", "examples", "irc")


def _is_helper_make_model(call: ast.Call) -> bool:
    """`helper.make_model(...)` or `onnx.helper.make_model(...)`."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "make_model":
        return False
    value = func.value
    if isinstance(value, ast.Name):
        return value.id == "helper"
    return isinstance(value, ast.Attribute) and value.attr == "helper"


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a module or function, not those of the functions defined in it."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _version_ok(value: ast.expr) -> bool:
    """A literal IR version no newer than `ONNX_IR_VERSION`, or that constant."""
    if isinstance(value, ast.Constant) and isinstance(value.value, int):
        return 3 <= value.value <= ONNX_IR_VERSION
    return isinstance(value, ast.Name) and value.id == "ONNX_IR_VERSION"


def unpinned_calls(source: str) -> list[int]:
    """The lines of the `make_model` calls in `source` whose function (or module, at top
    level) sets no `ir_version`, or one that is not a literal <= `ONNX_IR_VERSION`."""
    tree = ast.parse(source)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, functions))]
    lines = []
    for scope in scopes:
        nodes = _own_nodes(scope)
        calls = [n for n in nodes if isinstance(n, ast.Call) and _is_helper_make_model(n)]
        if not calls:
            continue
        pins = [
            node.value
            for node in nodes
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == "ir_version" for t in node.targets)
        ]
        pins += [
            k.value
            for n in nodes
            if isinstance(n, ast.keyword) and n.arg == "ir_version"
            for k in [n]
        ]
        if not pins or not all(_version_ok(v) for v in pins):
            lines += [call.lineno for call in calls]
    return sorted(lines)


def test_every_written_model_pins_an_ir_version() -> None:
    files = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))
    assert ROOT / "tests" / "fp16_graphs.py" in files
    unpinned = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in files
        for line in unpinned_calls(path.read_text())
    ]
    assert not unpinned, (
        "onnx.helper.make_model writes the newest IR version, which older onnxruntime "
        f"refuses: use onnx_support.make_onnx_model or set ir_version there: {unpinned}"
    )


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("from onnx import helper\nm = helper.make_model(g)\n", [2]),
        ("import onnx\ndef f(g):\n    return onnx.helper.make_model(g)\n", [3]),
        ("def f(g):\n    m = helper.make_model(g)\n    m.ir_version = 10\n    return m\n", []),
        ("def f(g):\n    return helper.make_model(g, ir_version=8)\n", []),
        ("def f(g):\n    m = helper.make_model(g)\n    m.ir_version = 14\n    return m\n", [2]),
        # a pin in another function does not count
        ("def f(g):\n    return helper.make_model(g)\ndef h(m):\n    m.ir_version = 10\n", [2]),
        ("def f(g):\n    return make_onnx_model(g, 17)\n", []),
    ],
    ids=["module", "function", "assigned", "keyword", "too_new", "elsewhere", "helper"],
)
def test_the_scan(source: str, lines: list[int]) -> None:
    assert unpinned_calls(source) == lines


@pytest.mark.parametrize("opset", [13, 17, 18, 21])
def test_make_onnx_model_loads_on_onnxruntime(opset: int) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = make_onnx_model(graph, opset)
    assert model.ir_version == ONNX_IR_VERSION
    assert [(o.domain, o.version) for o in model.opset_import] == [("", opset)]
    onnx.checker.check_model(model)
    onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
