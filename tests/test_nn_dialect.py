"""Tests of the nn dialect from Python: the `make` builder, verifiers, syntax round trips and
constants. Shape rules are checked against numpy and brute force in test_nn_shapes.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from io import StringIO

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    f16,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from irc.context import make_context
from irc.dialects import nn
from irc.dialects.nn import NN_OPS, NNOp
from irc.dialects.quant import UniformQuantizedType

# ---- Helpers -----------------------------------------------------------------------------------


D = nn.DYNAMIC
"""A dynamic dimension (`?`) in a shape."""


def t(*shape: int, element: Attribute = f32) -> TensorType:
    """A tensor type; `D` is a dynamic dimension."""
    return TensorType(element, shape)


Q_IN = UniformQuantizedType.per_tensor(i8, f32, 0.5, -1)
Q_OTHER = UniformQuantizedType.per_tensor(i8, f32, 0.25, 3)
Q_OUT = UniformQuantizedType.per_tensor(i8, f32, 1.0, 0)
U8 = UniformQuantizedType.per_tensor(IntegerType(8, Signedness.UNSIGNED), f32, 0.5, 128)


def per_axis(axis: int, count: int) -> UniformQuantizedType:
    return UniformQuantizedType.per_axis(i8, f32, axis, [0.5 / (i + 1) for i in range(count)])


def raises_verify(message: str) -> AbstractContextManager[pytest.ExceptionInfo[VerifyException]]:
    """Expect a VerifyException whose text contains `message` verbatim."""
    return pytest.raises(VerifyException, match=re.escape(message))


def in_function(
    arg_types: Sequence[Attribute], build: Callable[..., Operation]
) -> tuple[ModuleOp, Operation]:
    """A module holding `func.func @f(args)` whose body is the built op and a return."""
    block = Block(arg_types=arg_types)
    op = build(*block.args)
    block.add_ops([op, ReturnOp(*op.results)])
    function = FuncOp("f", (arg_types, op.result_types), Region(block))
    return ModuleOp([function]), op


def text_of(op: Operation, *, generic: bool = False) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(op)
    return stream.getvalue()


def parse_module(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def assert_round_trips(module: ModuleOp) -> None:
    """Custom and generic text both re-parse to IR equal to `module` that prints the same."""
    module.verify()
    custom = text_of(module)
    for text in (custom, text_of(module, generic=True)):
        reparsed = parse_module(text)
        reparsed.verify()
        assert reparsed.is_structurally_equivalent(module)
        assert text_of(reparsed) == custom


# ---- One or more builds of every op ------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """Operand types, a `make` call on the operands and the result types it must infer."""

    args: tuple[Attribute, ...]
    build: Callable[..., NNOp]
    expected: tuple[TensorType, ...]


def _binary(op: type[NNOp]) -> list[Case]:
    cases = [Case((t(2, 3), t(3)), lambda a, b: op.make(a, b), (t(2, 3),))]
    if op.ACCEPTS_QUANTIZED:
        cases.append(
            Case(
                (t(2, 3, element=Q_IN), t(1, 3, element=Q_OTHER)),
                lambda a, b: op.make(a, b, result_elements=Q_OUT),
                (t(2, 3, element=Q_OUT),),
            )
        )
    return cases


def _unary(op: type[NNOp], **props: object) -> list[Case]:
    cases = [Case((t(2, D),), lambda x: op.make(x, **props), (t(2, D),))]
    if op.ACCEPTS_QUANTIZED:
        cases.append(
            Case(
                (t(1, 4, element=Q_IN),),
                lambda x: op.make(x, result_elements=Q_OUT, **props),
                (t(1, 4, element=Q_OUT),),
            )
        )
    return cases


CASES: dict[type[NNOp], list[Case]] = {
    nn.ConstantOp: [
        Case(
            (),
            lambda: nn.ConstantOp.make(
                value=nn.dense_from_array(np.array([1.5, -2.0], np.float32)), result_elements=f32
            ),
            (t(2),),
        ),
        Case(
            (),
            lambda: nn.ConstantOp.from_array(
                np.array([[1], [-2]], np.int8), t(2, 1, element=per_axis(0, 2))
            ),
            (t(2, 1, element=per_axis(0, 2)),),
        ),
    ],
    nn.Conv2DOp: [
        Case(
            (t(1, 8, 8, 3), t(4, 3, 3, 3), t(4)),
            lambda x, w, b: nn.Conv2DOp.make(
                x, w, b, strides=[2, 2], pads=[0, 0, 1, 1], layout="NHWC", activation="relu6"
            ),
            (t(1, 4, 4, 4),),
        ),
        Case(
            (t(D, 4, 7, 7), t(4, 1, 3, 3)),
            lambda x, w: nn.Conv2DOp.make(
                x, w, None, dilations=[2, 2], groups=4, pads=[2, 2, 2, 2], layout="NCHW"
            ),
            (t(D, 4, 7, 7),),
        ),
        Case(
            (t(1, 4, 4, 2, element=Q_IN), t(3, 1, 1, 2, element=per_axis(0, 3)), t(3, element=i32)),
            lambda x, w, b: nn.Conv2DOp.make(x, w, b, layout="NHWC", result_elements=Q_OUT),
            (t(1, 4, 4, 3, element=Q_OUT),),
        ),
    ],
    nn.Conv2DTransposeOp: [
        Case(
            (t(1, 4, 4, 8), t(4, 2, 2, 8)),
            lambda x, w: nn.Conv2DTransposeOp.make(x, w, None, strides=[2, 2], layout="NHWC"),
            (t(1, 8, 8, 4),),
        ),
        Case(
            (t(1, 4, 3, 3), t(4, 3, 3, 3), t(6)),
            lambda x, w, b: nn.Conv2DTransposeOp.make(
                x,
                w,
                b,
                strides=[2, 2],
                pads=[1, 1, 1, 1],
                output_padding=[1, 1],
                groups=2,
                layout="NCHW",
            ),
            (t(1, 6, 6, 6),),
        ),
        Case(
            (t(1, 2, 2, 2, element=Q_IN), t(2, 3, 1, 1, element=per_axis(1, 3))),
            lambda x, w: nn.Conv2DTransposeOp.make(
                x, w, None, layout="NCHW", result_elements=Q_OUT
            ),
            (t(1, 3, 2, 2, element=Q_OUT),),
        ),
    ],
    nn.FullyConnectedOp: [
        Case(
            (t(2, 5, 8), t(3, 8), t(3)),
            lambda x, w, b: nn.FullyConnectedOp.make(x, w, b, activation="relu"),
            (t(2, 5, 3),),
        ),
        Case(
            (t(D, 4, element=Q_IN), t(2, 4, element=per_axis(0, 2)), t(2, element=i32)),
            lambda x, w, b: nn.FullyConnectedOp.make(x, w, b, result_elements=Q_OUT),
            (t(D, 2, element=Q_OUT),),
        ),
    ],
    nn.BatchMatmulOp: [
        Case(
            (t(2, 3, 4), t(1, 5, 4)),
            lambda a, b: nn.BatchMatmulOp.make(a, b, adj_y=True),
            (t(2, 3, 5),),
        ),
        Case(
            (t(3, 2, element=Q_IN), t(3, 4, element=Q_OTHER)),
            lambda a, b: nn.BatchMatmulOp.make(a, b, adj_x=True, result_elements=Q_OUT),
            (t(2, 4, element=Q_OUT),),
        ),
    ],
    **{op: _binary(op) for op in (nn.AddOp, nn.SubOp, nn.MulOp, nn.DivOp, nn.MaximumOp)},
    **{op: _binary(op) for op in (nn.MinimumOp, nn.PowOp, nn.SquaredDifferenceOp)},
    nn.PReluOp: [
        Case((t(1, 2, 2, 3), t(3)), lambda x, s: nn.PReluOp.make(x, s), (t(1, 2, 2, 3),)),
    ],
    **{
        op: _unary(op)
        for op in (nn.ReluOp, nn.Relu6Op, nn.SigmoidOp, nn.TanhOp, nn.HardSwishOp, nn.ErfOp)
    },
    **{op: _unary(op) for op in (nn.ExpOp, nn.LogOp, nn.SqrtOp, nn.RsqrtOp, nn.AbsOp, nn.NegOp)},
    nn.ClipOp: _unary(nn.ClipOp, min=0.0, max=6.0),
    nn.LeakyReluOp: _unary(nn.LeakyReluOp, alpha=0.2),
    nn.HardSigmoidOp: _unary(nn.HardSigmoidOp, alpha=0.25, beta=0.4),
    nn.GeluOp: _unary(nn.GeluOp, approximate="tanh"),
    nn.CastOp: [
        Case((t(4),), lambda x: nn.CastOp.make(x, result_elements=i32), (t(4, element=i32),)),
        Case(
            (t(4, element=i1),),
            lambda x: nn.CastOp.make(x, result_elements=f16),
            (t(4, element=f16),),
        ),
    ],
    nn.MaxPool2DOp: [
        Case(
            (t(1, 8, 8, 4, element=Q_IN),),
            lambda x: nn.MaxPool2DOp.make(x, kernel=[2, 2], strides=[2, 2], layout="NHWC"),
            (t(1, 4, 4, 4, element=Q_IN),),
        ),
    ],
    nn.AvgPool2DOp: [
        Case(
            (t(1, 4, 8, 8),),
            lambda x: nn.AvgPool2DOp.make(
                x, kernel=[3, 3], pads=[1, 1, 1, 1], count_include_pad=True, layout="NCHW"
            ),
            (t(1, 4, 8, 8),),
        ),
    ],
    nn.ReduceOp: [
        Case(
            (t(1, 7, 7, 4),),
            lambda x: nn.ReduceOp.make(x, kind="mean", axes=[1, 2], keepdims=True),
            (t(1, 1, 1, 4),),
        ),
        Case(
            (t(2, 3, element=i32),),
            lambda x: nn.ReduceOp.make(x, kind="prod", axes=[-1]),
            (t(2, element=i32),),
        ),
    ],
    nn.SoftmaxOp: [
        Case((t(2, 10),), lambda x: nn.SoftmaxOp.make(x, axis=0, beta=0.5), (t(2, 10),)),
        Case(
            (t(1, 4, element=Q_IN),),
            lambda x: nn.SoftmaxOp.make(x, result_elements=Q_OUT),
            (t(1, 4, element=Q_OUT),),
        ),
    ],
    nn.LogSoftmaxOp: [Case((t(D, 3),), lambda x: nn.LogSoftmaxOp.make(x), (t(D, 3),))],
    nn.ReshapeOp: [
        Case((t(2, 3, 4),), lambda x: nn.ReshapeOp.make(x, shape=[4, -1]), (t(4, 6),)),
        Case((t(D, 4),), lambda x: nn.ReshapeOp.make(x, shape=[-1, 2, 2]), (t(D, 2, 2),)),
    ],
    nn.TransposeOp: [
        Case(
            (t(1, 8, D, 3),),
            lambda x: nn.TransposeOp.make(x, perm=[0, 3, 1, 2]),
            (t(1, 3, 8, D),),
        ),
        Case(
            (t(2, 3, 3, 1, element=per_axis(0, 2)),),
            lambda x: nn.TransposeOp.make(x, perm=[1, 2, 3, 0], result_elements=per_axis(3, 2)),
            (t(3, 3, 1, 2, element=per_axis(3, 2)),),
        ),
    ],
    nn.ConcatOp: [
        Case(
            (t(1, 2), t(1, 3), t(1, D)),
            lambda a, b, c: nn.ConcatOp.make([a, b, c], axis=-1),
            (t(1, D),),
        ),
        Case(
            (t(1, 2, element=Q_IN), t(1, 3, element=Q_OTHER)),
            lambda a, b: nn.ConcatOp.make([a, b], axis=1, result_elements=Q_OUT),
            (t(1, 5, element=Q_OUT),),
        ),
    ],
    nn.SplitOp: [
        Case(
            (t(D, 8),),
            lambda x: nn.SplitOp.make(x, axis=1, sizes=[2, 6]),
            (t(D, 2), t(D, 6)),
        ),
        Case(
            (t(4, 2, element=per_axis(1, 2)),),
            lambda x: nn.SplitOp.make(x, axis=0, sizes=[1, 1, 2]),
            (
                t(1, 2, element=per_axis(1, 2)),
                t(1, 2, element=per_axis(1, 2)),
                t(2, 2, element=per_axis(1, 2)),
            ),
        ),
    ],
    nn.SliceOp: [
        Case(
            (t(2, 8),),
            lambda x: nn.SliceOp.make(x, begin=[0, 7], end=[2, -1], strides=[1, -2]),
            (t(2, 4),),
        ),
    ],
    nn.PadOp: [
        Case(
            (t(2, 3),),
            lambda x: nn.PadOp.make(x, pads=[1, 0, 0, 2], mode="edge"),
            (t(3, 5),),
        ),
        Case(
            (t(2, 2, element=Q_IN),),
            lambda x: nn.PadOp.make(x, pads=[1, 1, 1, 1], value=-1.0),
            (t(4, 4, element=Q_IN),),
        ),
    ],
    nn.ResizeOp: [
        Case(
            (t(1, 8, 8, 3),),
            lambda x: nn.ResizeOp.make(
                x, size=[16, 16], scales=[2.0, 2.0], mode="bilinear", layout="NHWC"
            ),
            (t(1, 16, 16, 3),),
        ),
    ],
    nn.GatherOp: [
        Case(
            (t(2, 5), t(3, element=i32)),
            lambda x, i: nn.GatherOp.make(x, i, axis=1),
            (t(2, 3),),
        ),
        Case(
            (t(2, 5, 4, element=U8), t(2, 3, element=i64)),
            lambda x, i: nn.GatherOp.make(x, i, axis=1, batch_dims=1),
            (t(2, 3, 4, element=U8),),
        ),
    ],
    nn.BroadcastToOp: [
        Case((t(3, 1),), lambda x: nn.BroadcastToOp.make(x, shape=[2, 3, 4]), (t(2, 3, 4),)),
        Case(
            (t(D, 1, element=i32),),
            lambda x: nn.BroadcastToOp.make(x, shape=[5, 2]),
            (t(5, 2, element=i32),),
        ),
        Case(
            (t(3, 1, element=per_axis(0, 3)),),
            lambda x: nn.BroadcastToOp.make(x, shape=[2, 3, 4], result_elements=per_axis(1, 3)),
            (t(2, 3, 4, element=per_axis(1, 3)),),
        ),
    ],
    nn.CompareOp: [
        Case(
            (t(2, 3), t(3)),
            lambda a, b: nn.CompareOp.make(a, b, kind="lt", result_elements=i1),
            (t(2, 3, element=i1),),
        ),
        Case(
            (t(D, 1, element=i64), t(4, element=i64)),
            lambda a, b: nn.CompareOp.make(a, b, kind="eq", result_elements=i1),
            (t(D, 4, element=i1),),
        ),
    ],
    nn.LogicalNotOp: [
        Case((t(2, D, element=i1),), lambda x: nn.LogicalNotOp.make(x), (t(2, D, element=i1),))
    ],
    **{
        op: [
            Case(
                (t(2, 1, element=i1), t(3, element=i1)),
                lambda a, b, op=op: op.make(a, b),
                (t(2, 3, element=i1),),
            )
        ]
        for op in (nn.LogicalAndOp, nn.LogicalOrOp, nn.LogicalXorOp)
    },
    nn.SelectOp: [
        Case(
            (t(2, 1, element=i1), t(3), t()),
            lambda c, a, b: nn.SelectOp.make(c, a, b, result_elements=f32),
            (t(2, 3),),
        ),
        Case(
            (t(4, element=i1), t(1, element=i32), t(D, 4, element=i32)),
            lambda c, a, b: nn.SelectOp.make(c, a, b, result_elements=i32),
            (t(D, 4, element=i32),),
        ),
        Case(
            (t(4, element=i1), t(4, element=Q_IN), t(1, element=Q_IN)),
            lambda c, a, b: nn.SelectOp.make(c, a, b, result_elements=Q_IN),
            (t(4, element=Q_IN),),
        ),
    ],
    nn.BatchNormOp: [
        Case(
            (t(1, 4, 2, 2), t(4), t(4), t(4), t(4)),
            lambda x, s, o, m, v: nn.BatchNormOp.make(x, s, o, m, v, epsilon=1e-3, layout="NCHW"),
            (t(1, 4, 2, 2),),
        ),
    ],
    # transformer ops: more cases in test_transformer_ops.py
    nn.LayerNormOp: [
        Case(
            (t(D, 3, 8), t(3, 8), t(3, 8)),
            lambda x, g, b: nn.LayerNormOp.make(x, g, b, axis=1, epsilon=1e-12),
            (t(D, 3, 8),),
        ),
    ],
    nn.SiluOp: _unary(nn.SiluOp),
    nn.AttentionOp: [
        Case(
            (t(2, 5, 4), t(2, 4, 6), t(2, 6, 3), t(1, 6)),
            lambda q, k, v, m: nn.AttentionOp.make(q, k, v, m, scale=0.5, key_transposed=True),
            (t(2, 5, 3),),
        ),
    ],
}

CASE_PARAMS = [
    pytest.param(op, case, id=f"{op.name}-{i}")
    for op in NN_OPS
    for i, case in enumerate(CASES.get(op, []))
]


def test_every_op_has_cases() -> None:
    """A new op must come with a builder case here (and lines in ops.mlir / invalid.mlir)."""
    assert set(CASES) == set(NN_OPS)
    assert all(CASES[op] for op in NN_OPS)


def test_every_op_is_registered() -> None:
    dialect_ops = {op.name for op in nn.NN.operations}
    assert dialect_ops == {op.name for op in NN_OPS}
    assert len(NN_OPS) == len(dialect_ops) == 55


@pytest.mark.parametrize(("op_type", "case"), CASE_PARAMS)
def test_make_infers_verifies_and_round_trips(op_type: type[NNOp], case: Case) -> None:
    module, op = in_function(case.args, case.build)
    assert isinstance(op, op_type)
    assert tuple(op.result_types) == case.expected
    assert op.infer_shapes() == [r.get_shape() for r in case.expected]
    op.verify()
    assert_round_trips(module)


@pytest.mark.parametrize(
    ("op_type", "case"), [p for p in CASE_PARAMS if p.values[0] is not nn.ConstantOp]
)
def test_defaults_are_not_printed(op_type: type[NNOp], case: Case) -> None:
    """Every property equal to its default is elided from the custom form, and only those."""
    _, op = in_function(case.args, case.build)
    text = text_of(op)
    for name, _, default, _ in op_type._prop_kinds():
        value = op.properties.get(name)
        printed = f" {name} = " in text
        assert printed == (value is not None and value != default), name


# ---- The builder ---------------------------------------------------------------------------


def test_make_rejects_unknown_property() -> None:
    block = Block(arg_types=[t(4)])
    with pytest.raises(TypeError, match=re.escape("nn.relu has no property 'alpha'")):
        nn.ReluOp.make(block.args[0], alpha=0.1)


def test_make_without_operands_needs_result_elements() -> None:
    value = nn.dense_from_array(np.zeros(2, np.float32))
    with pytest.raises(
        TypeError, match=re.escape("nn.constant has no operands: pass result_elements")
    ):
        nn.ConstantOp.make(value=value)


def test_make_reports_shape_errors() -> None:
    block = Block(arg_types=[t(2, 3), t(4)])
    with raises_verify("shapes 2x3 and 4 are not broadcastable"):
        nn.AddOp.make(*block.args)


def test_make_keeps_absent_optional_operands_absent() -> None:
    block = Block(arg_types=[t(1, 4, 4, 2), t(3, 1, 1, 2)])
    op = nn.Conv2DOp.make(*block.args, None, layout="NHWC")
    assert op.bias is None
    assert len(op.operands) == 2
    assert (
        op.all_properties()["groups"] == op.get_irdl_definition().properties["groups"].default_value
    )


def test_generic_form_may_omit_defaulted_properties() -> None:
    """Generic IR may leave out properties that have defaults; the defaults apply."""
    text = """
    func.func @f(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x6x6x4xf32> {
      %y = "nn.conv2d"(%x, %w) <{layout = #nn<layout "NHWC">}>
        : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x6x4xf32>
      func.return %y : tensor<1x6x6x4xf32>
    }
    """
    module = parse_module(text)
    module.verify()
    conv = next(op for op in module.walk() if isinstance(op, nn.Conv2DOp))
    assert set(conv.all_properties()) >= {"strides", "pads", "dilations", "groups", "activation"}
    assert conv.infer_shapes() == [(1, 6, 6, 4)]
    assert text_of(conv).startswith('%y = nn.conv2d %x, %w layout = "NHWC" :')


# ---- Enum properties and declared property kinds ---------------------------------------------


def test_layout_and_activation_are_enum_attributes() -> None:
    block = Block(arg_types=[t(1, 2, 4, 4), t(3, 2, 1, 1)])
    op = nn.Conv2DOp.make(*block.args, None, layout="NCHW", activation="relu6")
    assert op.layout == nn.LayoutAttr(nn.Layout.NCHW)
    assert op.activation == nn.ActivationAttr(nn.Activation.RELU6)
    assert op.layout.data == "NCHW"  # a StrEnum member compares equal to its string
    assert f"{op.activation.data}" == "relu6"
    assert nn.LAYOUTS == ("NHWC", "NCHW")
    assert nn.ACTIVATIONS == ("none", "relu", "relu6", "relu_n1_to_1", "tanh")
    text = text_of(op, generic=True)
    assert 'layout = #nn<layout "NCHW">' in text
    assert 'activation = #nn<activation "relu6">' in text


def test_enum_values_are_checked_where_they_are_built() -> None:
    block = Block(arg_types=[t(1, 4, 4, 2), t(3, 1, 1, 2)])
    with raises_verify("layout must be one of NHWC, NCHW, got 'NWHC'"):
        nn.Conv2DOp.make(*block.args, None, layout="NWHC")
    with raises_verify("activation must be one of none, relu, relu6, relu_n1_to_1, tanh"):
        nn.AddOp.make(block.args[0], block.args[0], activation="gelu")


def test_a_string_attribute_for_an_enum_property_becomes_the_enum() -> None:
    block = Block(arg_types=[t(1, 4, 4, 2), t(3, 1, 1, 2)])
    op = nn.Conv2DOp.make(*block.args, None, layout=StringAttr("NHWC"))
    assert op.layout == nn.LayoutAttr(nn.Layout.NHWC)


def test_every_property_of_every_op_has_a_declared_kind() -> None:
    for op_type in NN_OPS:
        declared = {name for name, _, _, _ in op_type._prop_kinds()}
        assert declared == set(op_type.get_irdl_definition().properties), op_type.name


def test_a_property_without_a_declared_kind_is_refused() -> None:
    @irdl_op_definition
    class UndeclaredOp(NNOp):
        name = "nn.test_undeclared"
        input = operand_def(TensorType)
        output = result_def(TensorType)
        axis = prop_def(IntegerAttr)  # not declared through a *_prop helper

    with pytest.raises(TypeError, match=re.escape("properties ['axis'] have no declared kind")):
        UndeclaredOp._prop_kinds()


# ---- Syntax details --------------------------------------------------------------------------


def _first_nn_op(text: str) -> NNOp:
    module = parse_module(text)
    return next(op for op in module.walk() if isinstance(op, NNOp))


def test_parenthesised_operand_types_are_accepted() -> None:
    op = _first_nn_op(
        "func.func @f(%a: tensor<2xf32>) {\n"
        "  %y = nn.add %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
        "  func.return\n}"
    )
    assert "nn.add %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>" in text_of(op)


def test_extra_attributes_are_kept() -> None:
    op = _first_nn_op(
        "func.func @f(%a: tensor<2xf32>) {\n"
        '  %y = nn.relu %a {irc.name = "act"} : tensor<2xf32> -> tensor<2xf32>\n'
        "  func.return\n}"
    )
    assert '{irc.name = "act"}' in text_of(op)


@pytest.mark.parametrize(
    ("op_text", "message"),
    [
        ("nn.add %a, %a foo = 1 : {t}, {t} -> {t}", "'nn.add' has no property 'foo'"),
        ("nn.softmax %a axis = 0 axis = 1 : {t} -> {t}", "property 'axis' is given twice"),
        ("nn.add %a, %a : {t} -> {t}", "expected 2 operand types, got 1"),
        ("nn.relu %a : {t} -> {t}, {t}", "expected 1 result type, got 2"),
        ("nn.add %a : {t} -> {t}", "'nn.add' expects 2 operands, got 1"),
        ("nn.constant array<i64: 1> : {t}", "expected a dense elements attribute"),
    ],
)
def test_parse_errors(op_text: str, message: str) -> None:
    op_text = op_text.replace("{t}", "tensor<2xf32>")
    text = f"func.func @f(%a: tensor<2xf32>) {{\n  %y = {op_text}\n  func.return\n}}"
    with pytest.raises(ParseError, match=re.escape(message)):
        parse_module(text)


def test_split_prints_all_results() -> None:
    module, op = in_function((t(6),), lambda x: nn.SplitOp.make(x, axis=0, sizes=[1, 2, 3]))
    assert ": tensor<6xf32> -> tensor<1xf32>, tensor<2xf32>, tensor<3xf32>" in text_of(op)
    assert_round_trips(module)


# ---- Verifier details not reachable through `make` ------------------------------------------


def test_per_axis_operand_is_checked() -> None:
    """A per-axis operand type (a function argument) is checked against its shape."""
    bad = UniformQuantizedType.per_axis(i8, f32, 5, [0.1, 0.2, 0.3])
    module, _ = in_function(
        (t(2, 3, element=bad),),
        lambda x: nn.TransposeOp.make(x, perm=[1, 0], result_elements=per_axis(0, 3)),
    )
    with raises_verify("operand #0 is quantized along dimension 5 but has rank 2"):
        module.verify()


def test_declared_shape_is_checked() -> None:
    block = Block(arg_types=[t(2, 3)])
    op = nn.ReluOp.build(operands=[block.args[0]], result_types=[t(3, 2)])
    with raises_verify("inferred result shape 2x3 is incompatible with declared shape 3x2"):
        op.verify()


def test_declared_dynamic_dims_are_compatible() -> None:
    """A declared `?` accepts an inferred static size and vice versa."""
    block = Block(arg_types=[t(2, D)])
    nn.ReluOp.build(operands=[block.args[0]], result_types=[t(D, 3)]).verify()


# ---- Constants -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "array",
    [
        np.array([[1.5, -2.0, 0.25]], np.float32),
        np.array([1.5, -2.0, 65504.0], np.float16),
        np.array([1.0, -1e300], np.float64),
        np.array([[-128, 0], [5, 127]], np.int8),
        np.array([0, 128, 255], np.uint8),
        np.array([-(2**15), 2**15 - 1], np.int16),
        np.array([-(2**31), 7, 2**31 - 1], np.int32),
        np.array([-(2**63), 2**63 - 1], np.int64),
        np.array([True, False, True]),
        np.array([[True], [False]]),
        np.zeros((0, 3), np.float32),
        np.array(3.5, np.float32),
    ],
    ids=lambda a: f"{a.dtype}-{'x'.join(map(str, a.shape)) or 'scalar'}",
)
def test_constant_array_round_trip(array: np.ndarray) -> None:
    op = nn.ConstantOp.from_array(array)
    op.verify()
    data = op.to_array()
    assert data.dtype == array.dtype
    assert data.shape == array.shape
    np.testing.assert_array_equal(data, array)
    module, _ = in_function((), lambda: nn.ConstantOp.from_array(array))
    assert_round_trips(module)
    reparsed = next(o for o in parse_module(text_of(module)).walk() if isinstance(o, nn.ConstantOp))
    assert reparsed.value == op.value
    np.testing.assert_array_equal(reparsed.to_array(), array)


def test_bool_constant_matches_parsed_encoding() -> None:
    """Built and parsed i1 constants hold the same bytes, so they compare equal."""
    built = nn.ConstantOp.from_array(np.array([True, False]))
    parsed = _first_nn_op(
        "func.func @f() {\n  %c = nn.constant dense<[true, false]> : tensor<2xi1>\n  func.return\n}"
    )
    assert isinstance(parsed, nn.ConstantOp)
    assert built.value == parsed.value


def test_splat_constant() -> None:
    parsed = _first_nn_op(
        "func.func @f() {\n  %c = nn.constant dense<1.5> : tensor<2x3xf32>\n  func.return\n}"
    )
    assert isinstance(parsed, nn.ConstantOp)
    np.testing.assert_array_equal(parsed.to_array(), np.full((2, 3), 1.5, np.float32))
    built = nn.ConstantOp.from_array(np.full((2, 3), 1.5, np.float32))
    assert "dense<1.500000e+00> : tensor<2x3xf32>" in text_of(built)
    assert built.value == parsed.value


def test_single_element_splat_attribute_broadcasts() -> None:
    """A dense attribute holding one element for a larger shape reads as a splat."""
    value = DenseIntOrFPElementsAttr.from_list(t(2, 2, element=i8), [7])
    array = nn.array_from_dense(value)
    np.testing.assert_array_equal(array, np.full((2, 2), 7, np.int8))


def test_quantized_constant() -> None:
    qtype = t(2, element=Q_IN)
    op = nn.ConstantOp.from_array(np.array([1, -2], np.int8), qtype)
    op.verify()
    assert op.output.type == qtype
    assert text_of(op).endswith(
        "nn.constant dense<[1, -2]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 0.5:-1>>"
    )
    wrong = nn.ConstantOp.from_array(np.array([1, -2], np.int16), qtype)
    with raises_verify("a quantized constant stores i8, got i16 data"):
        wrong.verify()


def test_unsupported_constant_dtype() -> None:
    with pytest.raises(ValueError, match="unsupported constant dtype uint16"):
        nn.dense_from_array(np.zeros(2, np.uint16))


def test_large_constant_prints_as_hex_and_round_trips() -> None:
    array = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    module, op = in_function((), lambda: nn.ConstantOp.from_array(array))
    text = text_of(module)
    assert 'nn.constant dense<"0x' in text
    assert len(text) < 2 * array.nbytes + 1000
    reparsed = next(o for o in parse_module(text).walk() if isinstance(o, nn.ConstantOp))
    assert reparsed.value == op.value  # type: ignore[attr-defined]
    np.testing.assert_array_equal(reparsed.to_array(), array)
