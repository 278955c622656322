"""Helpers of the pass tests (`test_canonicalize.py`, `test_infer_shapes.py`, `test_dce.py`):
parse IR text, run one pass on it, find ops and a function's results."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from irc.dialects import nn


def parse(ctx: Context, text: str, *, verify: bool = True) -> ModuleOp:
    """The module of `text` (verified unless `verify` is False)."""
    module = Parser(ctx, text).parse_module()
    if verify:
        module.verify()
    return module


def run(ctx: Context, pass_: ModulePass, text: str) -> ModuleOp:
    """`pass_` applied to the module of `text`; the result is verified."""
    module = parse(ctx, text)
    pass_.apply(ctx, module)
    module.verify()
    return module


def ops_named(module: ModuleOp, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


def nn_op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if isinstance(op, nn.NNOp)]


def the_function(module: ModuleOp, name: str = "f") -> func.FuncOp:
    (function,) = [
        op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == name
    ]
    return function


def returned_values(module: ModuleOp, name: str = "f") -> list[SSAValue]:
    ret = the_function(module, name).body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    return list(ret.arguments)
