"""Tests of the `infer-shapes` pass, run from Python."""

from __future__ import annotations

import re

import pytest
from pass_support import ops_named, parse, run, the_function
from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, FunctionType, TensorType, f32
from xdsl.utils.exceptions import PassFailedException

from irc.dialects import nn, quant
from irc.passes.infer_shapes import InferShapesPass, refine_result_types

# ---- infer-shapes --------------------------------------------------------------------------------


def test_infer_shapes_refines_conv2d_and_signature(ctx: Context):
    module = run(
        ctx,
        InferShapesPass(),
        """
        func.func @f(%x: tensor<1x8x8x3xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<?x?x?x?xf32> {
          %y = nn.conv2d %x, %w strides = [2, 2] pads = [0, 0, 1, 1] layout = "NHWC"
              : tensor<1x8x8x3xf32>, tensor<16x3x3x3xf32> -> tensor<?x?x?x16xf32>
          %z = nn.relu %y : tensor<?x?x?x16xf32> -> tensor<?x?x?x?xf32>
          func.return %z : tensor<?x?x?x?xf32>
        }
        """,
    )
    expected = TensorType(f32, [1, 4, 4, 16])
    conv, relu = (op for op in module.walk() if isinstance(op, nn.NNOp))
    assert conv.results[0].type == expected
    assert relu.operands[0].type == expected
    assert relu.results[0].type == expected
    function_type = the_function(module).function_type
    assert function_type == FunctionType.from_lists(
        [TensorType(f32, [1, 8, 8, 3]), TensorType(f32, [16, 3, 3, 3])], [expected]
    )


def test_infer_shapes_keeps_element_types(ctx: Context):
    q = "!quant.uniform<i8:f32, 0.5:-3>"
    module = run(
        ctx,
        InferShapesPass(),
        f"""
        func.func @f(%x: tensor<2x4x{q}>) -> tensor<?x?x{q}> {{
          %y = nn.relu %x : tensor<2x4x{q}> -> tensor<?x?x{q}>
          func.return %y : tensor<?x?x{q}>
        }}
        """,
    )
    (relu,) = ops_named(module, "nn.relu")
    result_type = relu.results[0].type
    assert isinstance(result_type, TensorType)
    assert result_type.get_shape() == (2, 4)
    assert isinstance(result_type.element_type, quant.UniformQuantizedType)
    assert result_type.element_type == relu.operands[0].type.element_type


def test_infer_shapes_writes_dynamic_sizes_as_xdsl_does(ctx: Context):
    """Shape rules say -1 for a dynamic size; refined types use xDSL's `?` (DYNAMIC_INDEX)."""
    module = run(
        ctx,
        InferShapesPass(),
        """
        func.func @f(%x: tensor<1x?x8x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x?x?x?xf32> {
          %y = nn.conv2d %x, %w layout = "NHWC"
              : tensor<1x?x8x3xf32>, tensor<4x3x3x3xf32> -> tensor<?x?x?x?xf32>
          func.return %y : tensor<?x?x?x?xf32>
        }
        """,
    )
    (conv,) = ops_named(module, "nn.conv2d")
    assert conv.results[0].type == TensorType(f32, [1, DYNAMIC_INDEX, 6, 4])
    assert "tensor<1x?x6x4xf32>" in str(module)


def test_infer_shapes_is_idempotent(ctx: Context):
    text = """
        func.func @f(%x: tensor<8xf32>) -> tensor<?x?xf32> {
          %r = nn.reshape %x shape = [2, -1] : tensor<8xf32> -> tensor<?x?xf32>
          func.return %r : tensor<?x?xf32>
        }
        """
    module = run(ctx, InferShapesPass(), text)
    once = str(module)
    refine_result_types(module)
    assert str(module) == once
    assert "tensor<?" not in once


def test_infer_shapes_leaves_called_functions_alone(ctx: Context):
    module = run(
        ctx,
        InferShapesPass(),
        """
        func.func @g(%a: tensor<8xf32>) -> tensor<?xf32> {
          %b = nn.relu %a : tensor<8xf32> -> tensor<?xf32>
          func.return %b : tensor<?xf32>
        }
        func.func @f(%x: tensor<8xf32>) -> tensor<?xf32> {
          %c = func.call @g(%x) : (tensor<8xf32>) -> tensor<?xf32>
          func.return %c : tensor<?xf32>
        }
        """,
    )
    assert the_function(module, "g").function_type.outputs.data == (
        TensorType(f32, [DYNAMIC_INDEX]),
    )
    (relu,) = ops_named(module, "nn.relu")
    assert relu.results[0].type == TensorType(f32, [DYNAMIC_INDEX])


def test_infer_shapes_reports_contradiction_at_the_op(ctx: Context):
    module = parse(
        ctx,
        """
        func.func @f(%x: tensor<8xf32>) -> tensor<3x4xf32> {
          %r = nn.reshape %x shape = [2, 4] : tensor<8xf32> -> tensor<?x4xf32>
          %s = nn.add %r, %r : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<3x4xf32>
          func.return %s : tensor<3x4xf32>
        }
        """,
    )
    message = "inferred result shape 2x4 of 'nn.add' is incompatible with declared shape 3x4"
    with pytest.raises(PassFailedException, match=re.escape(message)) as info:
        InferShapesPass().apply(ctx, module)
    assert getattr(info.value, "op", None) is ops_named(module, "nn.add")[0]


def test_infer_shapes_reports_broken_shape_rule(ctx: Context):
    """Unverified IR whose shape rule fails: the error names the op and the rule's message."""
    module = parse(
        ctx,
        """
        func.func @f(%x: tensor<2x3xf32>) -> tensor<?x?xf32> {
          %t = nn.transpose %x perm = [0, 0] : tensor<2x3xf32> -> tensor<?x?xf32>
          func.return %t : tensor<?x?xf32>
        }
        """,
        verify=False,
    )
    with pytest.raises(PassFailedException, match=re.escape("'nn.transpose': perm [0, 0]")):
        InferShapesPass().apply(ctx, module)
