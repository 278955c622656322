"""Tests of the `canonicalize` pass, run from Python: its patterns one by one, constant folding
and batch-norm folding (evaluated with the reference kernels)."""

from __future__ import annotations

import pytest
from pass_support import nn_op_names, ops_named, parse, returned_values, run, the_function
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, f32
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriteWalker,
    RewritePattern,
)

from irc.dialects import delegate, nn
from irc.passes.canonicalize import (
    CanonicalizePass,
    _reshape_is_identity,
    canonicalization_patterns,
)

# ---- canonicalize --------------------------------------------------------------------------------


def test_transpose_pair_composes(ctx: Context):
    module = run(
        ctx,
        CanonicalizePass(),
        """
        func.func @f(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
          %a = nn.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
          %b = nn.transpose %a perm = [0, 2, 1] : tensor<4x2x3xf32> -> tensor<4x3x2xf32>
          func.return %b : tensor<4x3x2xf32>
        }
        """,
    )
    (transpose,) = ops_named(module, "nn.transpose")
    assert isinstance(transpose, nn.TransposeOp)
    assert tuple(transpose.perm.get_values()) == (2, 1, 0)
    assert transpose.input == the_function(module).args[0]
    assert transpose.output.type == TensorType(f32, [4, 3, 2])


def test_transpose_pair_cancels(ctx: Context):
    module = run(
        ctx,
        CanonicalizePass(),
        """
        func.func @f(%x: tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32> {
          %a = nn.transpose %x perm = [0, 3, 1, 2] : tensor<1x8x8x3xf32> -> tensor<1x3x8x8xf32>
          %b = nn.transpose %a perm = [0, 2, 3, 1] : tensor<1x3x8x8xf32> -> tensor<1x8x8x3xf32>
          func.return %b : tensor<1x8x8x3xf32>
        }
        """,
    )
    assert nn_op_names(module) == []
    assert returned_values(module) == [the_function(module).args[0]]


def test_transpose_pair_keeps_per_axis_quantization(ctx: Context):
    """The composed transpose moves the quantized dimension as the pair did."""
    q = "!quant.uniform<i8:f32:{axis}, {{0.5, 0.25}}>"
    module = run(
        ctx,
        CanonicalizePass(),
        f"""
        func.func @f(%x: tensor<2x3x4x{q.format(axis=0)}>) -> tensor<4x3x2x{q.format(axis=2)}> {{
          %a = nn.transpose %x perm = [2, 0, 1]
              : tensor<2x3x4x{q.format(axis=0)}> -> tensor<4x2x3x{q.format(axis=1)}>
          %b = nn.transpose %a perm = [0, 2, 1]
              : tensor<4x2x3x{q.format(axis=1)}> -> tensor<4x3x2x{q.format(axis=2)}>
          func.return %b : tensor<4x3x2x{q.format(axis=2)}>
        }}
        """,
    )
    (transpose,) = ops_named(module, "nn.transpose")
    assert isinstance(transpose, nn.TransposeOp)
    assert tuple(transpose.perm.get_values()) == (2, 1, 0)


_IDENTITY_RESIZE = (
    '%r = nn.resize %x size = [4, 4] {} layout = "NHWC"'
    " : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>"
)


@pytest.mark.parametrize(
    "body",
    [
        "%r = nn.transpose %x perm = [0, 1] : tensor<2x4xf32> -> tensor<2x4xf32>",
        "%r = nn.reshape %x shape = [2, 4] : tensor<2x4xf32> -> tensor<2x4xf32>",
        "%r = nn.reshape %x shape = [-1, 4] : tensor<2x4xf32> -> tensor<2x4xf32>",
        "%r = nn.slice %x begin = [0, 0] end = [2, 4] strides = [1, 1]"
        " : tensor<2x4xf32> -> tensor<2x4xf32>",
        "%r = nn.pad %x pads = [0, 0, 0, 0] : tensor<2x4xf32> -> tensor<2x4xf32>",
        "%r = nn.cast %x : tensor<2x4xf32> -> tensor<2x4xf32>",
        "%r = nn.clip %x : tensor<2x4xf32> -> tensor<2x4xf32>",
        "%r = nn.concat %x axis = 0 : tensor<2x4xf32> -> tensor<2x4xf32>",
        "%r = nn.split %x axis = 1 sizes = [4] : tensor<2x4xf32> -> tensor<2x4xf32>",
        *(
            _IDENTITY_RESIZE.format(attrs)
            for attrs in [
                'coordinate_mode = "align_corners"',
                'coordinate_mode = "half_pixel"',
                'coordinate_mode = "asymmetric"',
                'coordinate_mode = "pytorch_half_pixel"',
                'coordinate_mode = "tf_half_pixel_for_nn" nearest_mode = "floor"',
                "scales = [1.0, 1.0]",
            ]
        ),
    ],
)
def test_identity_ops_are_removed(ctx: Context, body: str):
    type_ = body.rpartition("-> ")[2]  # the result type, and an identity's input type
    module = run(
        ctx,
        CanonicalizePass(),
        f"""
        func.func @f(%x: {type_}) -> {type_} {{
          {body}
          func.return %r : {type_}
        }}
        """,
    )
    assert nn_op_names(module) == []
    assert returned_values(module) == [the_function(module).args[0]]


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        # Result type would change (dynamic input, static result).
        (
            "%r = nn.reshape %y shape = [2, 4] : tensor<?x4xf32> -> tensor<2x4xf32>",
            "nn.reshape",
        ),
        ("%r = nn.cast %y : tensor<?x4xf32> -> tensor<2x4xf32>", "nn.cast"),
        ("%r = nn.relu %y : tensor<?x4xf32> -> tensor<2x4xf32>", "nn.relu"),
        # Not an identity.
        (
            "%r = nn.slice %x begin = [0, 0] end = [2, 4] strides = [1, 2]"
            " : tensor<2x4xf32> -> tensor<2x2xf32>",
            "nn.slice",
        ),
        ("%r = nn.pad %x pads = [0, 0, 1, 0] : tensor<2x4xf32> -> tensor<2x5xf32>", "nn.pad"),
        ("%r = nn.clip %x max = 6.0 : tensor<2x4xf32> -> tensor<2x4xf32>", "nn.clip"),
        (
            '%r = nn.concat %x axis = 0 activation = "relu6" : tensor<2x4xf32> -> tensor<2x4xf32>',
            "nn.concat",
        ),
        (
            '%r = nn.resize %z size = [4, 4] mode = "bilinear" layout = "NHWC"'
            " : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>",
            "nn.resize",
        ),
        (
            '%r = nn.resize %z size = [4, 4] scales = [2.0, 2.0] layout = "NHWC"'
            " : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>",
            "nn.resize",
        ),
        (
            '%r = nn.resize %z size = [4, 4] coordinate_mode = "tf_half_pixel_for_nn"'
            ' nearest_mode = "round_prefer_ceil" layout = "NHWC"'
            " : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>",
            "nn.resize",
        ),
    ],
)
def test_must_not_fire(ctx: Context, body: str, kept: str):
    result_type = body.rsplit("-> ", 1)[1]
    module = run(
        ctx,
        CanonicalizePass(),
        f"""
        func.func @f(%x: tensor<2x4xf32>, %y: tensor<?x4xf32>, %z: tensor<1x4x4x2xf32>)
            -> {result_type} {{
          {body}
          func.return %r : {result_type}
        }}
        """,
    )
    assert nn_op_names(module) == [kept]


def test_reshape_pair_keeps_outer_result_type(ctx: Context):
    module = run(
        ctx,
        CanonicalizePass(),
        """
        func.func @f(%x: tensor<?x4xf32>) -> tensor<2x2x2xf32> {
          %a = nn.reshape %x shape = [8] : tensor<?x4xf32> -> tensor<8xf32>
          %b = nn.reshape %a shape = [2, 2, -1] : tensor<8xf32> -> tensor<2x2x2xf32>
          func.return %b : tensor<2x2x2xf32>
        }
        """,
    )
    (reshape,) = ops_named(module, "nn.reshape")
    assert isinstance(reshape, nn.ReshapeOp)
    assert reshape.input.type == TensorType(f32, [DYNAMIC_INDEX, 4])
    assert reshape.output.type == TensorType(f32, [2, 2, 2])
    assert tuple(reshape.shape.get_values()) == (2, 2, -1)


@pytest.mark.parametrize(
    ("source", "target", "identity"),
    [
        ((2, 3), (2, 3), True),
        ((2, 3), (-1, 3), True),
        ((2, 3), (3, 2), False),
        ((2, 3), (6,), False),
        ((-1, 3), (-1, 3), True),
        ((-1, 3), (2, 3), False),
        ((-1, -1), (-1, 4), False),
        ((-1, -1), (4, -1), False),
        ((-1, 0), (-1, 0), False),
    ],
)
def test_reshape_is_identity(source, target, identity):
    assert _reshape_is_identity(source, target) is identity


def test_patterns_are_reusable_without_dce(ctx: Context):
    """The pattern list drives a walker of its own; with dce off, unused ops survive."""
    patterns = canonicalization_patterns()
    assert patterns
    assert all(isinstance(p, RewritePattern) for p in patterns)
    module = parse(
        ctx,
        """
        func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
          %dead = nn.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
          %a = nn.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
          %b = nn.transpose %a perm = [1, 0] : tensor<3x2xf32> -> tensor<2x3xf32>
          func.return %b : tensor<2x3xf32>
        }
        """,
    )
    applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
    PatternRewriteWalker(applier).rewrite_module(module)
    module.verify()
    assert nn_op_names(module) == ["nn.relu", "nn.transpose"]
    assert returned_values(module) == [the_function(module).args[0]]


def test_canonicalize_removes_dead_ops_inside_regions(ctx: Context):
    module = run(
        ctx,
        CanonicalizePass(),
        """
        func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
          %r = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
            %dead = nn.neg %a : tensor<4xf32> -> tensor<4xf32>
            %t = nn.transpose %a perm = [0] : tensor<4xf32> -> tensor<4xf32>
            %s = nn.relu %t : tensor<4xf32> -> tensor<4xf32>
            delegate.yield %s : tensor<4xf32>
          }
          func.return %r : tensor<4xf32>
        }
        """,
    )
    (region,) = ops_named(module, "delegate.region")
    assert isinstance(region, delegate.RegionOp)
    assert [op.name for op in region.body.block.ops] == ["nn.relu", "delegate.yield"]


# ---- Constant folding and batch-norm folding (evaluated with the reference kernels) ----


def test_batch_norm_folding_keeps_the_numbers(ctx: Context):
    import numpy as np
    from xdsl.ir import Block, Region

    from irc.passes.canonicalize import CanonicalizePass
    from irc.targets.reference import evaluate

    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((1, 6, 6, 3)).astype(np.float32)
    params = {
        "w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "b": rng.standard_normal(4).astype(np.float32),
        "scale": rng.standard_normal(4).astype(np.float32),
        "offset": rng.standard_normal(4).astype(np.float32),
        "mean": rng.standard_normal(4).astype(np.float32),
        "var": rng.uniform(0.5, 2.0, 4).astype(np.float32),
    }
    block = Block(arg_types=[TensorType(f32, x_np.shape)])
    consts = {k: nn.ConstantOp.from_array(v) for k, v in params.items()}
    conv = nn.Conv2DOp.make(
        block.args[0], consts["w"].output, consts["b"].output, pads=[1, 1, 1, 1], layout="NHWC"
    )
    bn = nn.BatchNormOp.make(
        conv.output,
        *(consts[k].output for k in ("scale", "offset", "mean", "var")),
        epsilon=1e-3,
        layout="NHWC",
    )
    block.add_ops([*consts.values(), conv, bn, func.ReturnOp(bn.output)])
    module = ModuleOp([func.FuncOp("f", ([block.args[0].type], [bn.output.type]), Region(block))])
    (conv_out,) = evaluate(conv, x_np, params["w"], params["b"])
    (expected,) = evaluate(bn, conv_out, *(params[k] for k in ("scale", "offset", "mean", "var")))

    CanonicalizePass().apply(ctx, module)
    module.verify()
    assert not ops_named(module, "nn.batch_norm")
    (folded,) = ops_named(module, "nn.conv2d")
    w2, b2 = (operand.owner.to_array() for operand in folded.operands[1:])
    (got,) = evaluate(folded, x_np, w2, b2)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
