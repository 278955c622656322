"""Names and text that reach generated C / OpenCL C go through `irc.sanitize` (issue #10 item 3),
and the compilers are never run through a shell."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import irc
from irc.sanitize import C_KEYWORDS, c_comment, c_identifier, c_string_literal

HOSTILE = [
    'a"b',
    "x */ int evil; /*",
    "line\nbreak",
    "#include <stdio.h>",
    "\n#include </etc/passwd>\n",
    "back\\",
    "??/",
    "tr\u00e9s \u2028 \U0001f600",
    "",
    "0starts_with_digit",
    "int",
    "__kernel",
    "_Reserved",
    "a" * 500,
    "nul\x00byte",
]

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", HOSTILE)
def test_c_identifier_is_always_an_identifier(name: str) -> None:
    ident = c_identifier(name)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", ident)
    assert ident not in C_KEYWORDS
    assert not ident.startswith("__")


def test_c_identifier_keeps_safe_names_and_separates_mangled_ones() -> None:
    assert c_identifier("irc_fn_0") == "irc_fn_0"
    assert c_identifier("k12") == "k12"
    assert c_identifier("a-b") != c_identifier("a+b")  # same cleaned text, distinct hashes
    assert c_identifier("a-b") == c_identifier("a-b")  # deterministic


@pytest.mark.parametrize("text", HOSTILE)
def test_c_comment_cannot_leave_the_comment(text: str) -> None:
    comment = c_comment(text)
    assert "*/" not in comment
    assert "/*" not in comment
    assert "\n" not in comment
    assert "\r" not in comment
    assert "\\" not in comment
    assert "??" not in comment
    assert comment.isascii()
    assert all(c.isprintable() for c in comment)


@pytest.mark.parametrize("text", HOSTILE)
def test_c_string_literal_cannot_leave_the_string(text: str) -> None:
    literal = c_string_literal(text)
    assert literal.startswith('"')
    assert literal.endswith('"')
    inner = literal[1:-1]
    assert '"' not in inner.replace("\\042", "")
    assert "\n" not in inner
    assert "?" not in inner  # `?` is escaped: no trigraphs
    assert inner.isascii()
    # Escapes decode back to the original text's bytes.
    decoded = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), inner.encode())
    assert decoded == text.encode("utf-8", "surrogatepass")


def test_opencl_source_assembly_sanitises_names_and_comments() -> None:
    from irc.targets.opencl.codegen import assemble_source

    body = "__kernel void KERNEL_NAME(__global float* y) { y[0] = 1.0f; }\n"
    source = assemble_source([("k0 */ #include <x>\n", body, "evil */\n#include <stdio.h>")])
    assert "#include" not in source.replace("/* evil * / #include <stdio.h> */", "")
    assert "<x>" not in source
    assert "evil * / #include <stdio.h>" in source  # the comment stays readable, inert
    kernel_line = next(line for line in source.splitlines() if "__kernel" in line)
    name = kernel_line.split("void ")[1].split("(")[0]
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)


def test_cpu_generated_function_sanitises_its_name_and_comments() -> None:
    from irc.targets.cpu.codegen import ConstantTable, block, generate_function

    lines = block("nn.add */ #include <evil.h>\n", [], ["x = 1;"])
    assert lines[0] == "/* nn.add * / #include <evil.h>  */"
    module = irc.parse_module(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>\n"
        "  func.return %y : tensor<4xf32>\n}\n"
    )
    func = next(iter(module.ops))
    generated = generate_function(func, 'f"; system("x', ConstantTable())
    assert '"' not in generated.source.split("{")[0]
    assert "system(" not in generated.source


def hostile_model() -> bytes:
    """An ONNX model whose graph, node and tensor names are all hostile."""
    evil = '*/ #include <stdio.h>\n"; system("rm -rf /"); /*'
    w = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(2, 4), f"w{evil}")
    nodes = [
        helper.make_node("MatMul", [f"in{evil}", w.name], [f"mm{evil}"], name=f"node{evil}"),
        helper.make_node("Relu", [f"mm{evil}"], [f"out{evil}"], name="\u00e9\u2028??/"),
    ]
    graph = helper.make_graph(
        nodes,
        f"graph{evil}",
        [helper.make_tensor_value_info(f"in{evil}", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor_value_info(f"out{evil}", TensorProto.FLOAT, [3, 4])],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    return model.SerializeToString()


@pytest.mark.parametrize("target", ["cpu", "opencl"])
def test_hostile_names_compile_and_run(tmp_path: Path, target: str) -> None:
    path = tmp_path / "hostile.onnx"
    path.write_bytes(hostile_model())
    try:
        compiled = irc.compile(str(path), targets=[target])
    except Exception as exc:  # no OpenCL device or C compiler on this machine
        if "device" in str(exc).lower() or "compiler" in str(exc).lower():
            pytest.skip(f"{target} unavailable: {exc}")
        raise
    saved = tmp_path / "hostile.compiled.mlir"
    compiled.save(str(saved))
    text = saved.read_text()
    # Model names live only in string attributes (escaped IR), never in generated source.
    for source in re.findall(r'source = "((?:[^"\\]|\\.)*)"', text):
        assert "system(" not in source
        assert "stdio.h" not in source
    (input_name,) = compiled.input_names
    x = np.arange(6, dtype=np.float32).reshape(3, 2) - 2
    (y,) = compiled.run({input_name: x}).values()
    expected = np.maximum(x @ np.arange(8, dtype=np.float32).reshape(2, 4), 0)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


SOURCE_TREES = ["irc", "targets", "passes", "dialects", "benchmarks", "fuzz"]


def _python_files() -> list[Path]:
    return [p for tree in SOURCE_TREES for p in sorted((REPO / tree).rglob("*.py"))]


def test_no_shell_anywhere_in_the_source_tree() -> None:
    offenders = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            if func in (
                "os.system",
                "os.popen",
                "subprocess.getoutput",
                "subprocess.getstatusoutput",
            ):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {func}")
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                ):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: shell=")
            if func.startswith("subprocess.") and node.args:
                command = node.args[0]
                if isinstance(command, (ast.Constant, ast.JoinedStr, ast.BinOp)):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: string command")
    assert not offenders, "\n".join(offenders)


def test_the_c_compiler_is_invoked_with_an_argument_list() -> None:
    from irc.targets.cpu import toolchain

    source = Path(toolchain.__file__).read_text(encoding="utf-8")
    assert "subprocess.run(cmd," in source
    assert "def _run(cmd: list[str]" in source
