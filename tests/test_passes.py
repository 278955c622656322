"""Tests of the `canonicalize`, `infer-shapes` and `dce` passes, run from Python."""

from __future__ import annotations

import re

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, FunctionType, ModuleOp, TensorType, f32
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from irc.context import get_all_passes, make_context
from irc.dialects import delegate, nn, quant
from irc.passes.canonicalize import (
    CanonicalizePass,
    _reshape_is_identity,
    canonicalization_patterns,
)
from irc.passes.dce import DCEPass
from irc.passes.infer_shapes import InferShapesPass, refine_result_types

OUR_PASSES = {"canonicalize": CanonicalizePass, "infer-shapes": InferShapesPass, "dce": DCEPass}


@pytest.fixture
def ctx() -> Context:
    return make_context()


def parse(ctx: Context, text: str, *, verify: bool = True) -> ModuleOp:
    module = Parser(ctx, text).parse_module()
    if verify:
        module.verify()
    return module


def run(ctx: Context, pass_: ModulePass, text: str) -> ModuleOp:
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


def returned_values(module: ModuleOp, name: str = "f"):
    ret = the_function(module, name).body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    return list(ret.arguments)


# ---- Registry and options ----------------------------------------------------------------------


def test_registry_resolves_every_pass():
    passes = get_all_passes()
    assert set(OUR_PASSES) <= set(passes)
    for name, factory in passes.items():
        pass_class = factory()
        assert issubclass(pass_class, ModulePass)
        assert pass_class.name == name


@pytest.mark.parametrize("name", sorted(OUR_PASSES))
def test_parse_spec(name: str):
    pipeline = PassPipeline.parse_spec(get_all_passes(), name)
    (pass_,) = pipeline.passes
    assert type(pass_) is OUR_PASSES[name]
    # The printed spec parses back to an equal pass.
    again = PassPipeline.parse_spec(get_all_passes(), str(pass_)).passes
    assert again == (pass_,)


def test_parse_spec_pipeline_of_all_three():
    pipeline = PassPipeline.parse_spec(get_all_passes(), "infer-shapes,canonicalize,dce")
    assert [type(p) for p in pipeline.passes] == [InferShapesPass, CanonicalizePass, DCEPass]


@pytest.mark.parametrize("name", sorted(OUR_PASSES))
def test_parse_spec_rejects_unknown_option(name: str):
    with pytest.raises(ValueError, match="bogus"):
        PassPipeline.parse_spec(get_all_passes(), f"{name}{{bogus=1}}")


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
