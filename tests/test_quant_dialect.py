"""Tests of the quant dialect: the `!quant.uniform` type and quant.qcast / dcast / rescale."""

from __future__ import annotations

import math
import random
import re
from contextlib import AbstractContextManager
from io import StringIO

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    FloatData,
    IntAttr,
    IntegerType,
    ModuleOp,
    NoneAttr,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.parser import ParseError, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from irc.context import make_context
from irc.dialects.quant import (
    RESCALE_ROUNDINGS,
    ROUNDING_MODES,
    DCastOp,
    QCastOp,
    RescaleOp,
    RescaleRounding,
    RescaleRoundingAttr,
    Rounding,
    RoundingAttr,
    UniformQuantizedType,
    format_float,
    quantized_element,
    storage_bounds,
    verify_quantized_axis,
)

u8 = IntegerType(8, Signedness.UNSIGNED)
u32 = IntegerType(32, Signedness.UNSIGNED)
bf16 = BFloat16Type()

Q = UniformQuantizedType


@pytest.fixture
def ctx() -> Context:
    return make_context()


def parse_type(ctx: Context, text: str) -> Attribute:
    return Parser(ctx, text).parse_type()


def values(*types: Attribute) -> tuple[SSAValue, ...]:
    """Fresh SSA values of the given types (arguments of a detached block)."""
    return tuple(Block(arg_types=types).args)


def raises_verify(message: str) -> AbstractContextManager[pytest.ExceptionInfo[VerifyException]]:
    """Expect a VerifyException whose text contains `message` verbatim."""
    return pytest.raises(VerifyException, match=re.escape(message))


# ---- The type: constructors and accessors -----------------------------------------------------


def test_per_tensor_accessors():
    qtype = Q.per_tensor(i8, f32, 0.5, -3)
    assert not qtype.is_per_axis
    assert qtype.axis is None
    assert qtype.scale_values == (0.5,)
    assert qtype.zero_point_values == (-3,)
    assert qtype.is_signed
    assert qtype.storage_width == 8
    assert qtype.storage_range == (-128, 127)
    assert qtype.storage_type == i8
    assert qtype.expressed_type == f32
    assert isinstance(qtype.storage_min, NoneAttr)
    assert isinstance(qtype.storage_max, NoneAttr)


def test_per_tensor_defaults_and_conversions():
    qtype = Q.per_tensor(u8, f16, 2)
    assert qtype.scale_values == (2.0,)
    assert isinstance(qtype.scales.data[0].data, float)
    assert qtype.zero_point_values == (0,)
    assert not qtype.is_signed
    assert qtype.storage_range == (0, 255)


def test_per_axis_accessors():
    qtype = Q.per_axis(i8, f32, 1, [0.5, 0.25, 0.125], [1, 0, -1])
    assert qtype.is_per_axis
    assert qtype.axis == 1
    assert qtype.quantized_dimension == IntAttr(1)
    assert qtype.scale_values == (0.5, 0.25, 0.125)
    assert qtype.zero_point_values == (1, 0, -1)


def test_per_axis_zero_points_default_to_zero():
    qtype = Q.per_axis(i16, bf16, 0, [0.5, 0.25])
    assert qtype.zero_point_values == (0, 0)
    assert qtype.storage_width == 16


def test_storage_range():
    qtype = Q.per_tensor(i8, f32, 0.02, storage_range=(-127, 127))
    assert qtype.storage_range == (-127, 127)
    assert qtype.storage_min == IntAttr(-127)
    assert qtype.storage_max == IntAttr(127)
    per_axis = Q.per_axis(u8, f32, 0, [0.1], [1], storage_range=(1, 255))
    assert per_axis.storage_range == (1, 255)


def test_storage_range_defaults_to_storage_bounds():
    assert Q.per_tensor(u32, f32, 1.0).storage_range == (0, 2**32 - 1)
    assert Q.per_tensor(i32, f32, 1.0).storage_range == (-(2**31), 2**31 - 1)


@pytest.mark.parametrize(
    ("storage", "bounds"),
    [
        (i8, (-128, 127)),
        (u8, (0, 255)),
        (i16, (-32768, 32767)),
        (IntegerType(16, Signedness.UNSIGNED), (0, 65535)),
        (i32, (-(2**31), 2**31 - 1)),
        (u32, (0, 2**32 - 1)),
        (IntegerType(8, Signedness.SIGNED), (-128, 127)),
    ],
)
def test_storage_bounds(storage: IntegerType, bounds: tuple[int, int]):
    assert storage_bounds(storage) == bounds


def test_with_axis_keeps_everything_else():
    qtype = Q.per_axis(i8, f32, 0, [0.5, 0.25], [1, 2], storage_range=(-127, 127))
    moved = qtype.with_axis(3)
    assert moved.axis == 3
    assert moved.scale_values == qtype.scale_values
    assert moved.zero_point_values == qtype.zero_point_values
    assert moved.storage_range == (-127, 127)
    assert moved.expressed_type == f32
    assert moved.with_axis(0) == qtype
    assert qtype.axis == 0  # the original is unchanged


def test_with_axis_makes_per_tensor_per_axis():
    moved = Q.per_tensor(i8, f32, 0.5, 3).with_axis(2)
    assert moved.is_per_axis
    assert moved.axis == 2
    assert moved.scale_values == (0.5,)


def test_types_compare_by_value():
    assert Q.per_tensor(i8, f32, 0.5, -3) == Q.per_tensor(i8, f32, 0.5, -3)
    assert Q.per_tensor(i8, f32, 0.5, -3) != Q.per_tensor(i8, f32, 0.5, -2)
    assert Q.per_tensor(i8, f32, 0.5) != Q.per_tensor(u8, f32, 0.5)
    assert Q.per_tensor(i8, f32, 0.5) != Q.per_tensor(i8, f16, 0.5)
    assert Q.per_tensor(i8, f32, 0.5) != Q.per_axis(i8, f32, 0, [0.5])
    # An explicit full range is kept apart from no range (both print differently).
    assert Q.per_tensor(i8, f32, 0.5) != Q.per_tensor(i8, f32, 0.5, storage_range=(-128, 127))


def test_quantized_element():
    qtype = Q.per_tensor(i8, f32, 0.5)
    assert quantized_element(TensorType(qtype, [2])) == qtype
    assert quantized_element(TensorType(f32, [2])) is None
    assert quantized_element(qtype) is None
    assert quantized_element(f32) is None


def test_verify_quantized_axis():
    qtype = Q.per_axis(i8, f32, 1, [0.5, 0.25])
    verify_quantized_axis(TensorType(qtype, [3, 2]), "weights")
    verify_quantized_axis(TensorType(qtype, [3, -1]), "weights")  # dynamic: not checked
    verify_quantized_axis(TensorType(f32, [3]), "weights")
    with raises_verify("weights is quantized along dimension 1 but has rank 1"):
        verify_quantized_axis(TensorType(qtype, [2]), "weights")
    with raises_verify(
        "weights has 3 slices along quantized dimension 1 but its type has 2 scales"
    ):
        verify_quantized_axis(TensorType(qtype, [2, 3]), "weights")
    with raises_verify("weights has 1 slice along quantized dimension 1 but its type has 2 scales"):
        verify_quantized_axis(TensorType(qtype, [2, 1]), "weights")
    one = Q.per_axis(i8, f32, 0, [0.5])
    with raises_verify("weights has 2 slices along quantized dimension 0 but its type has 1 scale"):
        verify_quantized_axis(TensorType(one, [2]), "weights")


# ---- The type: verifier -----------------------------------------------------------------------


def test_verify_storage_width():
    with raises_verify("storage type must be 8, 16 or 32 bits wide, got 4"):
        Q.per_tensor(IntegerType(4), f32, 0.5)
    with raises_verify("storage type must be 8, 16 or 32 bits wide, got 64"):
        Q.per_tensor(IntegerType(64), f32, 0.5)


def test_verify_scale_and_zero_point_counts():
    with raises_verify("got 2 scales but 1 zero point"):
        Q.per_axis(i8, f32, 0, [0.5, 0.25], [0])
    with raises_verify("got 1 scale but 2 zero points"):
        Q(
            i8,
            f32,
            NoneAttr(),
            ArrayAttr([FloatData(0.5)]),
            ArrayAttr([IntAttr(0), IntAttr(0)]),
            NoneAttr(),
            NoneAttr(),
        )


def test_verify_per_tensor_needs_one_scale():
    with raises_verify("a per-tensor type needs exactly one scale, got 2"):
        Q(
            i8,
            f32,
            NoneAttr(),
            ArrayAttr([FloatData(0.5), FloatData(0.5)]),
            ArrayAttr([IntAttr(0), IntAttr(0)]),
            NoneAttr(),
            NoneAttr(),
        )
    with raises_verify("a per-tensor type needs exactly one scale, got 0"):
        Q(i8, f32, NoneAttr(), ArrayAttr([]), ArrayAttr([]), NoneAttr(), NoneAttr())


def test_verify_per_axis_needs_a_scale():
    with raises_verify("a per-axis type needs at least one scale"):
        Q.per_axis(i8, f32, 0, [])


def test_verify_negative_axis():
    with raises_verify("quantized dimension must be non-negative, got -1"):
        Q.per_axis(i8, f32, -1, [0.5])


@pytest.mark.parametrize(
    ("storage", "storage_range", "message"),
    [
        (i8, (-200, 127), "storage range [-200, 127] is not within [-128, 127] of i8"),
        (i8, (-128, 128), "storage range [-128, 128] is not within [-128, 127] of i8"),
        (i8, (5, 1), "storage range [5, 1] is not within [-128, 127] of i8"),
        (u8, (-1, 255), "storage range [-1, 255] is not within [0, 255] of u8"),
    ],
)
def test_verify_storage_range(storage: IntegerType, storage_range: tuple[int, int], message: str):
    with raises_verify(message):
        Q.per_tensor(storage, f32, 0.5, storage_range=storage_range)


@pytest.mark.parametrize("scale", [0.0, -0.5, math.inf, -math.inf, math.nan])
def test_verify_scale(scale: float):
    with raises_verify(f"scale must be positive and finite, got {scale}"):
        Q.per_tensor(i8, f32, scale)
    with raises_verify(f"scale must be positive and finite, got {scale}"):
        Q.per_axis(i8, f32, 0, [0.5, scale])


@pytest.mark.parametrize(
    ("storage", "zero_point", "storage_range", "message"),
    [
        (i8, 128, None, "zero point 128 is out of the storage range [-128, 127]"),
        (i8, -129, None, "zero point -129 is out of the storage range [-128, 127]"),
        (u8, -1, None, "zero point -1 is out of the storage range [0, 255]"),
        (u8, 256, None, "zero point 256 is out of the storage range [0, 255]"),
        (i8, -128, (-127, 127), "zero point -128 is out of the storage range [-127, 127]"),
    ],
)
def test_verify_zero_point(
    storage: IntegerType,
    zero_point: int,
    storage_range: tuple[int, int] | None,
    message: str,
):
    with raises_verify(message):
        Q.per_tensor(storage, f32, 0.5, zero_point, storage_range)


def test_extreme_valid_parameters():
    Q.per_tensor(i8, f32, 5e-324, -128)  # the smallest denormal double
    Q.per_tensor(i8, f32, 1.7976931348623157e308, 127)
    Q.per_tensor(u32, f32, 1.0, 2**32 - 1)
    Q.per_tensor(i32, f32, 1.0, -(2**31))
    Q.per_tensor(i8, f32, 1.0, 0, (0, 0))


# ---- The type: syntax -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "!quant.uniform<i8:f32, 0.5:-3>",
        "!quant.uniform<i8:f32, 0.5>",
        "!quant.uniform<u8:f16, 2.0:128>",
        "!quant.uniform<u8:bf16, 0.1:255>",
        "!quant.uniform<i16:f32, 0.0001:-32768>",
        "!quant.uniform<i32:f64, 1.0e-06:2147483647>",
        "!quant.uniform<u32:f32, 1.0:4294967295>",
        "!quant.uniform<i8:f32:1, {0.5:-3, 0.25}>",
        "!quant.uniform<i8:f32:0, {0.5}>",
        "!quant.uniform<i8<-127:127>:f32, 0.02>",
        "!quant.uniform<i8<-128:127>:f32, 0.02>",
        "!quant.uniform<u8<1:255>:f32:2, {0.5:1, 0.25:255}>",
        "!quant.uniform<i8:f32, 1.0e-30>",
        "!quant.uniform<i8:f32, 3.4e+38>",
        "!quant.uniform<i8:f32, 1.0e-40>",
        "!quant.uniform<i8:f32, 5.0e-324>",
        "tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>>",
        "tensor<?x3x!quant.uniform<i8:f32:1, {0.5, 0.25, 0.125}>>",
    ],
)
def test_print_parse_canonical(ctx: Context, text: str):
    assert str(parse_type(ctx, text)) == text


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("!quant.uniform<i8:f32, 0.5:0>", "!quant.uniform<i8:f32, 0.5>"),
        ("!quant.uniform<i8:f32, 2:1>", "!quant.uniform<i8:f32, 2.0:1>"),
        ("!quant.uniform<i8:f32, 1.0e-3>", "!quant.uniform<i8:f32, 0.001>"),
        ("!quant.uniform<i8:f32, 3.4e38>", "!quant.uniform<i8:f32, 3.4e+38>"),
        ("!quant.uniform<i8:f32:0, {0.5:0, 0.25:1}>", "!quant.uniform<i8:f32:0, {0.5, 0.25:1}>"),
        (
            "!quant.uniform<i8 < -127 : 127 > : f32 , 0.5 : -1>",
            "!quant.uniform<i8<-127:127>:f32, 0.5:-1>",
        ),
    ],
)
def test_print_canonicalizes(ctx: Context, text: str, canonical: str):
    assert str(parse_type(ctx, text)) == canonical


def test_parsed_type_equals_built_type(ctx: Context):
    assert parse_type(ctx, "!quant.uniform<i8:f32, 0.5:-3>") == Q.per_tensor(i8, f32, 0.5, -3)
    assert parse_type(ctx, "!quant.uniform<u8:f16:1, {0.5:3, 0.25}>") == Q.per_axis(
        u8, f16, 1, [0.5, 0.25], [3, 0]
    )
    assert parse_type(ctx, "!quant.uniform<i8<-127:127>:f32, 0.5>") == Q.per_tensor(
        i8, f32, 0.5, storage_range=(-127, 127)
    )
    assert parse_type(ctx, "tensor<2x!quant.uniform<i8:f32, 0.5>>") == TensorType(
        Q.per_tensor(i8, f32, 0.5), [2]
    )


def test_signed_storage_parses_as_signless(ctx: Context):
    qtype = parse_type(ctx, "!quant.uniform<i8:f32, 0.5>")
    assert isinstance(qtype, Q)
    assert qtype.storage_type == i8
    assert qtype.storage_type.signedness.data == Signedness.SIGNLESS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!quant.uniform<si8:f32, 0.5>", "expected a storage type such as i8 or u8"),
        ("!quant.uniform<f32:f32, 0.5>", "expected a storage type such as i8 or u8"),
        ("!quant.uniform<i8:f32, 1e-5>", "'>' expected"),
        ("!quant.uniform<i8:f32, 0.5:1.5>", "Expected integer literal"),
        ("!quant.uniform<i8:f32:-1, {0.5}>", "Expected integer literal"),
        ("!quant.uniform<i8:f32, {0.5}>", "integer or float literal expected"),
        ("!quant.uniform<i8:f32:0, 0.5>", "'{' expected"),
    ],
)
def test_parse_errors(ctx: Context, text: str, message: str):
    with pytest.raises(ParseError, match=re.escape(message)):
        parse_type(ctx, text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!quant.uniform<i8:f32, 0.5:300>", "zero point 300 is out of the storage range"),
        ("!quant.uniform<i4:f32, 0.5>", "storage type must be 8, 16 or 32 bits wide, got 4"),
        ("!quant.uniform<i8:f32, 0.0>", "scale must be positive and finite, got 0.0"),
        ("!quant.uniform<i8:f32:0, {}>", "a per-axis type needs at least one scale"),
        ("!quant.uniform<i8<1:0>:f32, 0.5>", "storage range [1, 0] is not within"),
        ("!quant.uniform<i8:i32, 0.5>", "parameter 'expressed_type' does not verify"),
    ],
)
def test_verify_errors_while_parsing(ctx: Context, text: str, message: str):
    with raises_verify(message):
        parse_type(ctx, text)


def _log_uniform(rng: random.Random, low_exp: float, high_exp: float) -> float:
    """A random positive double whose decimal exponent is uniform in [low_exp, high_exp]."""
    return rng.uniform(1.0, 10.0) * 10.0 ** rng.uniform(low_exp, high_exp - 1)


def test_random_scales_round_trip_exactly(ctx: Context):
    rng = random.Random(20240611)
    for _ in range(500):
        scale = _log_uniform(rng, -30, 30)
        zero_point = rng.randint(-128, 127)
        qtype = Q.per_tensor(i8, f32, scale, zero_point)
        reparsed = parse_type(ctx, str(qtype))
        assert reparsed == qtype, str(qtype)
        assert isinstance(reparsed, Q)
        assert reparsed.scale_values[0] == scale  # bit-exact, not approximately


def test_random_per_axis_types_round_trip_exactly(ctx: Context):
    rng = random.Random(7)
    for _ in range(100):
        count = rng.randint(1, 8)
        scales = [_log_uniform(rng, -30, 30) for _ in range(count)]
        zero_points = [rng.randint(0, 255) for _ in range(count)]
        qtype = Q.per_axis(u8, f16, rng.randint(0, 3), scales, zero_points)
        reparsed = parse_type(ctx, f"tensor<{count}x{count}x{count}x{count}x{qtype}>")
        assert reparsed == TensorType(qtype, [count] * 4)


def test_random_bit_patterns_round_trip_exactly(ctx: Context):
    """Every finite positive double, denormals included, survives print and parse."""
    rng = random.Random(3)
    for _ in range(200):
        scale = 0.0
        while not (math.isfinite(scale) and scale > 0.0):
            scale = abs(rng.uniform(-1, 1)) * 2.0 ** rng.randint(-1074, 1023)
        qtype = Q.per_tensor(i8, f32, scale)
        assert parse_type(ctx, str(qtype)) == qtype, str(qtype)


# ---- format_float -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (1.0, "1.0"),
        (2, "2.0"),
        (-2.0, "-2.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (1e-05, "1.0e-05"),
        (1.5e-05, "1.5e-05"),
        (1e16, "1.0e+16"),
        (3.4e38, "3.4e+38"),
        (5e-324, "5.0e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.1, "0.1"),
        (1 / 3, "0.3333333333333333"),
    ],
)
def test_format_float(value: float, text: str):
    assert format_float(value) == text


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_format_float_rejects_non_finite(value: float):
    with pytest.raises(ValueError, match="has no MLIR float literal"):
        format_float(value)


def test_format_float_always_has_a_dot_and_round_trips():
    rng = random.Random(11)
    for _ in range(500):
        value = rng.choice([-1.0, 1.0]) * _log_uniform(rng, -300, 300)
        text = format_float(value)
        mantissa = text.partition("e")[0]
        assert "." in mantissa, text
        assert float(text) == value


# ---- Ops --------------------------------------------------------------------------------------

T_F32 = TensorType(f32, [2, 3])
T_Q8 = TensorType(Q.per_tensor(i8, f32, 0.5, -3), [2, 3])
T_U8 = TensorType(Q.per_tensor(u8, f32, 0.25, 128), [2, 3])
T_AXIS1 = TensorType(Q.per_axis(i8, f32, 1, [0.5, 0.25, 0.125]), [2, 3])
T_I32 = TensorType(i32, [2, 3])


def _round_trip(ctx: Context, op: Operation) -> Operation:
    """Put `op` in a function, check that its custom and generic forms print and re-parse to
    the same IR, and return the re-parsed op."""
    operand_types = [o.type for o in op.operands]
    block = Block(arg_types=operand_types)
    op.operands = block.args
    block.add_ops([op, ReturnOp()])
    module = ModuleOp([FuncOp("f", (operand_types, ()), Region(block))])
    module.verify()
    text = str(module)
    reparsed = Parser(ctx, text).parse_module()
    reparsed.verify()
    assert str(reparsed) == text
    assert reparsed.is_structurally_equivalent(module)
    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(module)
    generic = Parser(ctx, stream.getvalue()).parse_module()
    assert str(generic) == text
    return next(o for o in reparsed.walk() if o.name == op.name)


def test_qcast_builder_defaults(ctx: Context):
    (x,) = values(T_F32)
    op = QCastOp(x, T_Q8)
    op.verify()
    assert op.rounding.data == "half_away_from_zero"
    assert op.output.type == T_Q8
    assert op.input is x
    reparsed = _round_trip(ctx, op)
    assert isinstance(reparsed, QCastOp)
    assert reparsed.rounding.data == "half_away_from_zero"


def test_qcast_builder_rounding(ctx: Context):
    (x,) = values(T_F32)
    op = QCastOp(x, T_AXIS1, rounding="half_to_even")
    op.verify()
    assert op.rounding.data == "half_to_even"
    assert 'rounding = "half_to_even"' in str(op)
    reparsed = _round_trip(ctx, op)
    assert isinstance(reparsed, QCastOp)
    assert reparsed.rounding.data == "half_to_even"
    assert reparsed.output.type == T_AXIS1


@pytest.mark.parametrize(
    ("source", "result", "rounding", "message"),
    [
        (
            T_F32,
            T_Q8,
            "nearest",
            "rounding must be one of half_away_from_zero, half_to_even, got 'nearest'",
        ),
        (T_Q8, T_Q8, "half_to_even", "expected a float input, got !quant.uniform<i8:f32, 0.5:-3>"),
        (T_I32, T_Q8, "half_to_even", "expected a float input, got i32"),
        (T_F32, T_F32, "half_to_even", "expected a quantized result, got f32"),
        (
            TensorType(f16, [2, 3]),
            T_Q8,
            "half_to_even",
            "result expresses f32 but the input is f16",
        ),
        (
            TensorType(f32, [3, 2]),
            TensorType(T_Q8.element_type, [2, 3]),
            "half_to_even",
            "result shape [2, 3] differs from input shape [3, 2]",
        ),
        (
            TensorType(f32, [-1, 3]),
            T_Q8,
            "half_to_even",
            "result shape [2, 3] differs from input shape [?, 3]",
        ),
        (
            TensorType(f32, [3, 2]),
            TensorType(T_AXIS1.element_type, [3, 2]),
            "half_to_even",
            "result has 2 slices along quantized dimension 1 but its type has 3 scales",
        ),
        (
            TensorType(f32, [3]),
            TensorType(T_AXIS1.element_type, [3]),
            "half_to_even",
            "result is quantized along dimension 1 but has rank 1",
        ),
    ],
)
def test_qcast_verify_errors(source: TensorType, result: TensorType, rounding: str, message: str):
    (x,) = values(source)
    with raises_verify(message):
        QCastOp(x, result, rounding).verify()


def test_rounding_is_an_enum_attribute(ctx: Context):
    (x,) = values(T_F32)
    op = QCastOp(x, T_Q8, rounding="half_to_even")
    assert op.rounding == RoundingAttr(Rounding.HALF_TO_EVEN)
    assert ROUNDING_MODES == ("half_away_from_zero", "half_to_even")
    assert RESCALE_ROUNDINGS == ("double_round", "single_round")
    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(op)
    assert '<{rounding = #quant<rounding "half_to_even">}>' in stream.getvalue()
    (acc,) = values(T_I32)
    rescale = RescaleOp(acc, T_Q8, [1 << 30], [0], rounding="single_round")
    assert rescale.rounding == RescaleRoundingAttr(RescaleRounding.SINGLE_ROUND)


def test_builders_refuse_unknown_roundings():
    (x,) = values(T_F32)
    with raises_verify("rounding must be one of half_away_from_zero, half_to_even, got 'up'"):
        QCastOp(x, T_Q8, rounding="up")
    (acc,) = values(T_I32)
    with raises_verify("rounding must be one of double_round, single_round, got 'half_to_even'"):
        RescaleOp(acc, T_Q8, [1 << 30], [0], rounding="half_to_even")


def test_dcast_builder_infers_result_type(ctx: Context):
    (q,) = values(T_AXIS1)
    op = DCastOp(q)
    op.verify()
    assert op.output.type == TensorType(f32, [2, 3])
    reparsed = _round_trip(ctx, op)
    assert isinstance(reparsed, DCastOp)
    assert reparsed.output.type == TensorType(f32, [2, 3])


def test_dcast_builder_infers_expressed_type_and_dynamic_shape():
    (q,) = values(TensorType(Q.per_tensor(u8, bf16, 0.5, 1), [-1, 4]))
    op = DCastOp(q)
    op.verify()
    assert op.output.type == TensorType(bf16, [-1, 4])


def test_dcast_builder_explicit_result_type():
    (q,) = values(T_Q8)
    op = DCastOp(q, T_F32)
    op.verify()
    assert op.output.type == T_F32


def test_dcast_builder_needs_a_quantized_input():
    (x,) = values(T_F32)
    with pytest.raises(ValueError, match="dcast needs a quantized input"):
        DCastOp(x)


@pytest.mark.parametrize(
    ("source", "result", "message"),
    [
        (T_F32, T_F32, "expected a quantized input, got f32"),
        (
            T_Q8,
            TensorType(f16, [2, 3]),
            "result element type must be the expressed type f32, got f16",
        ),
        (T_Q8, T_U8, "result element type must be the expressed type f32, got !quant.uniform"),
        (T_Q8, TensorType(f32, [6]), "result shape [6] differs from input shape [2, 3]"),
        (
            TensorType(T_AXIS1.element_type, [2, 4]),
            TensorType(f32, [2, 4]),
            "input has 4 slices along quantized dimension 1 but its type has 3 scales",
        ),
        (
            TensorType(T_AXIS1.element_type, [3]),
            TensorType(f32, [3]),
            "input is quantized along dimension 1 but has rank 1",
        ),
    ],
)
def test_dcast_verify_errors(source: TensorType, result: TensorType, message: str):
    (q,) = values(source)
    with raises_verify(message):
        DCastOp(q, result).verify()


def test_rescale_builder_defaults(ctx: Context):
    (acc,) = values(T_I32)
    op = RescaleOp(acc, T_Q8, [1518500250], [-7])
    op.verify()
    assert op.multiplier_values == (1518500250,)
    assert op.shift_values == (-7,)
    assert op.axis is None
    assert op.rounding.data == "double_round"
    assert str(op) == (
        "%0 = quant.rescale %1 multiplier = [1518500250] shift = [-7] : tensor<2x3xi32> to "
        "tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>"
    )
    reparsed = _round_trip(ctx, op)
    assert isinstance(reparsed, RescaleOp)
    assert reparsed.multiplier_values == (1518500250,)
    assert reparsed.axis is None


def test_rescale_builder_all_options(ctx: Context):
    (acc,) = values(T_I32)
    op = RescaleOp(
        acc,
        T_U8,
        [1073741824, 0, 2**31 - 1],
        [-31, 0, 30],
        axis=1,
        rounding="single_round",
    )
    op.verify()
    assert op.multiplier_values == (1073741824, 0, 2**31 - 1)
    assert op.shift_values == (-31, 0, 30)
    assert op.axis is not None
    assert op.axis.value.data == 1
    assert op.axis.type == i32
    assert op.rounding.data == "single_round"
    reparsed = _round_trip(ctx, op)
    assert isinstance(reparsed, RescaleOp)
    assert reparsed.multiplier_values == (1073741824, 0, 2**31 - 1)
    assert reparsed.shift_values == (-31, 0, 30)
    assert reparsed.axis is not None
    assert reparsed.axis.value.data == 1
    assert reparsed.rounding.data == "single_round"


def test_rescale_quantized_to_quantized():
    (x,) = values(T_Q8)
    RescaleOp(x, T_U8, [1 << 30], [1]).verify()
    (y,) = values(TensorType(i16, [2, 3]))
    RescaleOp(y, TensorType(i8, [2, 3]), [1 << 30], [1]).verify()


@pytest.mark.parametrize(
    ("multiplier", "shift", "message"),
    [
        ([2**31], [0], "multiplier 2147483648 does not fit in i32"),
        ([-(2**31) - 1], [0], "multiplier -2147483649 does not fit in i32"),
        ([1 << 30], [2**31], "shift 2147483648 does not fit in i32"),
    ],
)
def test_rescale_builder_rejects_values_beyond_i32(
    multiplier: list[int], shift: list[int], message: str
):
    (acc,) = values(T_I32)
    with pytest.raises(ValueError, match=re.escape(message)):
        RescaleOp(acc, T_Q8, multiplier, shift)


M = 1 << 30


@pytest.mark.parametrize(
    ("source", "result", "multiplier", "shift", "axis", "rounding", "message"),
    [
        (T_AXIS1, T_Q8, [M], [0], None, "double_round", "input must be per-tensor quantized"),
        (T_I32, T_AXIS1, [M], [0], None, "double_round", "result must be per-tensor quantized"),
        (
            T_F32,
            T_Q8,
            [M],
            [0],
            None,
            "double_round",
            "input must be an integer or quantized tensor, got f32",
        ),
        (
            T_I32,
            T_F32,
            [M],
            [0],
            None,
            "double_round",
            "result must be an integer or quantized tensor, got f32",
        ),
        (
            T_I32,
            TensorType(i8, [3, 2]),
            [M],
            [0],
            None,
            "double_round",
            "result shape [3, 2] differs from input shape [2, 3]",
        ),
        (
            T_I32,
            T_Q8,
            [M],
            [0],
            None,
            "half_to_even",
            "rounding must be one of double_round, single_round, got 'half_to_even'",
        ),
        (T_I32, T_Q8, [M, M], [0], 1, "double_round", "got 2 multipliers but 1 shift"),
        (T_I32, T_Q8, [], [], None, "double_round", "expected at least one multiplier"),
        (
            T_I32,
            T_Q8,
            [-M],
            [0],
            None,
            "double_round",
            "multiplier -1073741824 is not in [0, 2^31)",
        ),
        (T_I32, T_Q8, [M], [31], None, "double_round", "shift 31 is out of range [-31, 30]"),
        (T_I32, T_Q8, [M], [-32], None, "double_round", "shift -32 is out of range [-31, 30]"),
        (
            T_I32,
            T_Q8,
            [M, M, M],
            [0, 0, 0],
            None,
            "double_round",
            "per-channel rescale needs an axis, got 3 multipliers",
        ),
        (T_I32, T_Q8, [M], [0], 2, "double_round", "axis 2 is out of range for rank 2"),
        (T_I32, T_Q8, [M], [0], -1, "double_round", "axis -1 is out of range for rank 2"),
        (
            T_I32,
            T_Q8,
            [M, M],
            [0, 0],
            1,
            "double_round",
            "expected 1 or 3 multipliers along axis 1 of size 3, got 2",
        ),
        (
            TensorType(i32, [2, 1]),
            TensorType(i8, [2, 1]),
            [M, M],
            [0, 0],
            1,
            "double_round",
            "expected 1 multiplier along axis 1 of size 1, got 2",
        ),
    ],
)
def test_rescale_verify_errors(
    source: TensorType,
    result: TensorType,
    multiplier: list[int],
    shift: list[int],
    axis: int | None,
    rounding: str,
    message: str,
):
    (x,) = values(source)
    with raises_verify(message):
        RescaleOp(x, result, multiplier, shift, axis, rounding).verify()


def test_rescale_per_channel_counts_that_verify():
    (acc,) = values(T_I32)
    RescaleOp(acc, T_Q8, [M], [0], axis=1).verify()  # one multiplier broadcast along the axis
    RescaleOp(acc, T_Q8, [M, M], [0, 0], axis=0).verify()
    RescaleOp(acc, T_Q8, [M, M, M], [0, 0, 0], axis=1).verify()
    (dynamic,) = values(TensorType(i32, [-1, 3]))
    RescaleOp(dynamic, TensorType(i8, [-1, 3]), [M] * 5, [0] * 5, axis=0).verify()


def test_ops_parse_from_text(ctx: Context):
    text = """
    !u8 = !quant.uniform<u8:f32, 0.1:128>
    func.func @f(%x: tensor<4xf32>, %acc: tensor<4xi32>) {
      %q = quant.qcast %x rounding = "half_to_even" : tensor<4xf32> to tensor<4x!u8>
      %d = quant.dcast %q : tensor<4x!u8> to tensor<4xf32>
      %r = quant.rescale %acc multiplier = [1073741824, 1073741825, 0, 2147483647]
          shift = [1, 2, 3, 4] axis = 0 rounding = "single_round" {irc.note}
          : tensor<4xi32> to tensor<4xi8>
      func.return
    }
    """
    module = Parser(ctx, text).parse_module()
    module.verify()
    qcast, dcast, rescale = (o for o in module.walk() if o.name.startswith("quant."))
    assert isinstance(qcast, QCastOp)
    assert qcast.rounding.data == "half_to_even"
    assert isinstance(dcast, DCastOp)
    assert dcast.input is qcast.output
    assert isinstance(rescale, RescaleOp)
    assert rescale.multiplier_values == (1073741824, 1073741825, 0, 2147483647)
    assert rescale.shift_values == (1, 2, 3, 4)
    assert rescale.rounding.data == "single_round"
    assert "irc.note" in rescale.attributes


def test_rescale_parse_rejects_values_beyond_i32(ctx: Context):
    text = """
    func.func @f(%acc: tensor<4xi32>) {
      %r = quant.rescale %acc multiplier = [2147483648] shift = [0] : tensor<4xi32> to tensor<4xi8>
      func.return
    }
    """
    with pytest.raises(ParseError, match=re.escape("multiplier 2147483648 does not fit in i32")):
        Parser(ctx, text).parse_module()


def test_types_with_f64_expressed_type():
    (x,) = values(TensorType(f64, [2]))
    QCastOp(x, TensorType(Q.per_tensor(i8, f64, 0.5), [2])).verify()
