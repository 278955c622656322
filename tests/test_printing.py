"""irc's printer never prints two values with one SSA name (xDSL 0.74's can)."""

from pathlib import Path

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.parser import Parser

from irc.context import make_context
from irc.dialects import nn
from irc.printing import print_ir


def _chain_with_hints(hints: list[str]) -> ModuleOp:
    block = Block(arg_types=[TensorType(f32, [2])])
    ops = [nn.ReluOp.make(block.args[0])]
    for _ in hints[1:]:
        ops.append(nn.ReluOp.make(ops[-1].output))
    for op, hint in zip(ops, hints, strict=True):
        op.output.name_hint = hint
    block.add_ops([*ops, func.ReturnOp(ops[-1].output)])
    function = func.FuncOp("main", ([block.args[0].type], [ops[-1].output.type]), Region(block))
    return ModuleOp([function])


def test_colliding_hints_get_unique_names() -> None:
    # `x_1_2` is stored as `x_1`, the name the second `x` prints as.
    module = _chain_with_hints(["x", "x", "x_1_2", "x"])
    text = print_ir(module)
    names = [line.split("=")[0].strip() for line in text.splitlines() if "= nn.relu" in line]
    assert len(set(names)) == len(names) == 4
    reparsed = Parser(make_context(), text).parse_module()
    assert print_ir(reparsed) == text


def test_generic_form_and_plain_hints_are_unchanged() -> None:
    module = _chain_with_hints(["a", "b", "c"])
    assert print_ir(module) == str(module)
    assert '"nn.relu"' in print_ir(module, generic=True)


def test_irc_opt_prints_parseable_ir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from irc.tools.irc_opt import main

    path = tmp_path / "in.mlir"
    path.write_text(print_ir(_chain_with_hints(["x", "x", "x_1_2", "x"])))
    assert main([str(path)]) == 0
    Parser(make_context(), capsys.readouterr().out).parse_module()
