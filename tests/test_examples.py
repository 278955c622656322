"""Every example runs through `irc-opt -p canonicalize,infer-shapes` and prints valid IR."""

from pathlib import Path

import pytest
from xdsl.parser import Parser

from irc.context import make_context
from irc.dialects import nn
from irc.tools.irc_opt import main

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.mlir"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_canonicalizes_to_valid_ir(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(path), "-p", "canonicalize,infer-shapes"]) == 0
    out = capsys.readouterr().out
    module = Parser(make_context(), out).parse_module()
    module.verify()
    assert any(isinstance(op, nn.NNOp) for op in module.walk())


def test_inverted_residual_is_simplified(capsys: pytest.CaptureFixture[str]) -> None:
    path = next(p for p in EXAMPLES if p.name == "inverted_residual.mlir")
    assert main([str(path), "-p", "canonicalize,infer-shapes"]) == 0
    out = capsys.readouterr().out
    assert "nn.transpose" not in out
    assert "nn.reshape" not in out
    assert "?" not in out  # infer-shapes made every dimension static


def test_all_examples_in_one_invocation(capsys: pytest.CaptureFixture[str]) -> None:
    """The Foundation issue's `irc-opt examples/*.mlir -p canonicalize,infer-shapes`."""
    assert main([*map(str, EXAMPLES), "-p", "canonicalize,infer-shapes"]) == 0
    chunks = capsys.readouterr().out.split("// -----\n")
    assert len(chunks) == len(EXAMPLES)
    for chunk in chunks:
        Parser(make_context(), chunk).parse_module().verify()


def test_a_missing_file_among_several_is_one_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(EXAMPLES[0]), "no-such-file.mlir"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "could not open input file 'no-such-file.mlir'" in captured.err
