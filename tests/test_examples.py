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
