"""Tests of the `dce` pass, run from Python."""

from __future__ import annotations

from pass_support import ops_named, parse, run, the_function
from xdsl.context import Context

from irc.dialects import nn
from irc.passes.dce import DCEPass

# ---- dce -----------------------------------------------------------------------------------------


def test_dce_removes_unused_pure_ops_only(ctx: Context):
    text = """
        func.func @f(%x: tensor<4xf32>, %unused: tensor<4xf32>) -> tensor<4xf32> {
          %a = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
          %b = nn.exp %a : tensor<4xf32> -> tensor<4xf32>
          %c = nn.add %b, %unused : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %r = delegate.region "cpu" (%p = %x : tensor<4xf32>) -> (tensor<4xf32>) {
            %dead = nn.neg %p : tensor<4xf32> -> tensor<4xf32>
            delegate.yield %p : tensor<4xf32>
          }
          func.return %a : tensor<4xf32>
        }
        func.func private @never_called(%y: tensor<4xf32>) -> tensor<4xf32> {
          func.return %y : tensor<4xf32>
        }
        """
    before = parse(ctx, text)
    module = run(ctx, DCEPass(), text)
    assert [op.name for op in module.walk() if isinstance(op, nn.NNOp)] == ["nn.relu"]
    assert ops_named(module, "delegate.region")
    for name in ("f", "never_called"):
        assert the_function(module, name).function_type == the_function(before, name).function_type
        assert len(the_function(module, name).args) == len(the_function(before, name).args)
