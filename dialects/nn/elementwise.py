"""`nn` elementwise ops: arithmetic with numpy broadcasting, activations, cast, comparisons,
logic and select.

Binary ops broadcast like numpy (dynamic dimensions allowed). Quantized operands follow TFLite:
inputs and result are quantized with one storage type but each with its own scale and zero
point; the integer semantics are defined by `lower-quantized`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import TensorType, i1
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Commutative, Pure
from xdsl.utils.exceptions import VerifyException

from irc.dialects.nn.base import (
    NNOp,
    Shape,
    activation_prop,
    broadcast_shapes,
    check_layout_and_activation,
    check_one_of,
    check_same_float_or_quantized,
    element_of,
    float_prop,
    get_float,
    get_str,
    is_quantized,
    opt_float_prop,
    str_prop,
)

# ---- Binary ------------------------------------------------------------------------------------


class ElementwiseBinaryOp(NNOp):
    """``out = lhs <op> rhs`` with numpy broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        check_layout_and_activation(props)
        lhs, rhs = operand_shapes
        return [broadcast_shapes(lhs, rhs)]

    def verify_element_types(self) -> None:
        check_same_float_or_quantized(
            [
                ("lhs", element_of(self.lhs)),
                ("rhs", element_of(self.rhs)),
                ("result", element_of(self.output)),
            ],
            allow_quantized=self.ACCEPTS_QUANTIZED,
            allow_integer=self.ACCEPTS_INTEGER,
        )


class _ArithmeticOp(ElementwiseBinaryOp):
    """Binary arithmetic with a TFLite-style fused activation."""

    activation = activation_prop()
    ACCEPTS_INTEGER: ClassVar[bool] = True


@irdl_op_definition
class AddOp(_ArithmeticOp):
    """Elementwise sum.

    Example:
    ```mlir
    %s = nn.add %a, %b activation = "relu" : tensor<1x8xf32>, tensor<8xf32> -> tensor<1x8xf32>
    ```
    """

    name = "nn.add"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class SubOp(_ArithmeticOp):
    """Elementwise difference ``lhs - rhs``."""

    name = "nn.sub"


@irdl_op_definition
class MulOp(_ArithmeticOp):
    """Elementwise product."""

    name = "nn.mul"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class DivOp(_ArithmeticOp):
    """Elementwise quotient ``lhs / rhs`` (integers: truncating, as TFLite and ONNX)."""

    name = "nn.div"


@irdl_op_definition
class MaximumOp(ElementwiseBinaryOp):
    """Elementwise maximum."""

    name = "nn.maximum"
    traits = traits_def(Pure(), Commutative())
    ACCEPTS_INTEGER: ClassVar[bool] = True


@irdl_op_definition
class MinimumOp(ElementwiseBinaryOp):
    """Elementwise minimum."""

    name = "nn.minimum"
    traits = traits_def(Pure(), Commutative())
    ACCEPTS_INTEGER: ClassVar[bool] = True


@irdl_op_definition
class PowOp(ElementwiseBinaryOp):
    """Elementwise power ``lhs ** rhs`` (float only)."""

    name = "nn.pow"
    ACCEPTS_QUANTIZED: ClassVar[bool] = False


@irdl_op_definition
class SquaredDifferenceOp(ElementwiseBinaryOp):
    """Elementwise ``(lhs - rhs)^2``."""

    name = "nn.squared_difference"


@irdl_op_definition
class PReluOp(ElementwiseBinaryOp):
    """Parametric ReLU: ``x >= 0 ? x : slope * x``; `slope` broadcasts to `x`.

    The result has the shape of `x` (the slope may not grow it).

    Example:
    ```mlir
    %y = nn.prelu %x, %slope : tensor<1x8x8x4xf32>, tensor<4xf32> -> tensor<1x8x8x4xf32>
    ```
    """

    name = "nn.prelu"

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        x, slope = operand_shapes
        out = broadcast_shapes(x, slope)
        if len(out) != len(x) or any(o >= 0 and d >= 0 and o != d for o, d in zip(out, x)):
            raise VerifyException(
                f"slope of shape {list(slope)} does not broadcast to the input shape {list(x)}"
            )
        return [tuple(x)]


# ---- Unary -------------------------------------------------------------------------------------


class ElementwiseUnaryOp(NNOp):
    """``out = f(input)``, same shape."""

    input = operand_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        return [tuple(x)]


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    """``max(x, 0)``."""

    name = "nn.relu"
    ACCEPTS_INTEGER: ClassVar[bool] = True


@irdl_op_definition
class Relu6Op(ElementwiseUnaryOp):
    """``min(max(x, 0), 6)``."""

    name = "nn.relu6"
    ACCEPTS_INTEGER: ClassVar[bool] = True


@irdl_op_definition
class SigmoidOp(ElementwiseUnaryOp):
    """Logistic sigmoid ``1 / (1 + exp(-x))``."""

    name = "nn.sigmoid"


@irdl_op_definition
class TanhOp(ElementwiseUnaryOp):
    """Hyperbolic tangent."""

    name = "nn.tanh"


@irdl_op_definition
class HardSwishOp(ElementwiseUnaryOp):
    """``x * relu6(x + 3) / 6``."""

    name = "nn.hard_swish"


@irdl_op_definition
class ErfOp(ElementwiseUnaryOp):
    """The error function."""

    name = "nn.erf"
    ACCEPTS_QUANTIZED: ClassVar[bool] = False


@irdl_op_definition
class ExpOp(ElementwiseUnaryOp):
    """``e^x``."""

    name = "nn.exp"


@irdl_op_definition
class LogOp(ElementwiseUnaryOp):
    """Natural logarithm."""

    name = "nn.log"


@irdl_op_definition
class SqrtOp(ElementwiseUnaryOp):
    """Square root."""

    name = "nn.sqrt"


@irdl_op_definition
class RsqrtOp(ElementwiseUnaryOp):
    """``1 / sqrt(x)``."""

    name = "nn.rsqrt"


@irdl_op_definition
class AbsOp(ElementwiseUnaryOp):
    """Absolute value."""

    name = "nn.abs"
    ACCEPTS_INTEGER: ClassVar[bool] = True


@irdl_op_definition
class NegOp(ElementwiseUnaryOp):
    """``-x``."""

    name = "nn.neg"
    ACCEPTS_INTEGER: ClassVar[bool] = True


@irdl_op_definition
class ClipOp(ElementwiseUnaryOp):
    """Clamp to ``[min, max]``; an absent bound is unbounded.

    For quantized tensors the bounds are real values (converted with the input's scale).

    Example:
    ```mlir
    %y = nn.clip %x min = 0.0 max = 6.0 : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "nn.clip"
    ACCEPTS_INTEGER: ClassVar[bool] = True

    min = opt_float_prop()
    max = opt_float_prop()

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        low, high = get_float(props, "min"), get_float(props, "max")
        if low is not None and high is not None and low > high:
            raise VerifyException(f"min {low} is greater than max {high}")
        return super().result_shapes(operand_shapes, props)


@irdl_op_definition
class LeakyReluOp(ElementwiseUnaryOp):
    """``x >= 0 ? x : alpha * x``.

    Example:
    ```mlir
    %y = nn.leaky_relu %x alpha = 0.1 : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "nn.leaky_relu"

    alpha = float_prop(0.01)


@irdl_op_definition
class HardSigmoidOp(ElementwiseUnaryOp):
    """``max(0, min(1, alpha * x + beta))`` (ONNX HardSigmoid; defaults 0.2 and 0.5)."""

    name = "nn.hard_sigmoid"

    alpha = float_prop(0.2)
    beta = float_prop(0.5)
    ACCEPTS_QUANTIZED: ClassVar[bool] = False


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(ElementwiseUnaryOp):
    """Gaussian error linear unit: exact (`erf`) or its `tanh` approximation.

    Example:
    ```mlir
    %y = nn.gelu %x approximate = "tanh" : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "nn.gelu"

    approximate = str_prop("none")

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        check_one_of(get_str(props, "approximate"), GELU_APPROXIMATIONS, "approximate")
        return super().result_shapes(operand_shapes, props)


@irdl_op_definition
class CastOp(ElementwiseUnaryOp):
    """Convert element types between floats and integers (ONNX Cast, TFLite CAST).

    Float to integer truncates toward zero; to `i1`, any non-zero is true. Quantizing and
    dequantizing are `quant.qcast` / `quant.dcast`, not casts.

    Example:
    ```mlir
    %y = nn.cast %x : tensor<4xf32> -> tensor<4xi32>
    ```
    """

    name = "nn.cast"

    def verify_element_types(self) -> None:
        for what, value in (("input", self.input), ("result", self.output)):
            if is_quantized(element_of(value)):
                raise VerifyException(
                    f"{what} must not be quantized; use quant.qcast or quant.dcast"
                )


# ---- Comparison and logic ----------------------------------------------------------------------

COMPARE_KINDS = ("eq", "ne", "lt", "le", "gt", "ge")


def _check_boolean(values: Sequence[tuple[str, Attribute]]) -> None:
    for what, element in values:
        if element != i1:
            raise VerifyException(f"{what} must be an i1 tensor, got {element}")


@irdl_op_definition
class CompareOp(ElementwiseBinaryOp):
    """Elementwise comparison ``lhs <kind> rhs`` into an `i1` tensor, with numpy broadcasting.

    `kind` is `eq`, `ne`, `lt`, `le`, `gt` or `ge` (ONNX Equal, Less, LessOrEqual, Greater,
    GreaterOrEqual; TFLite EQUAL, NOT_EQUAL, LESS, ...). Both operands have one float or
    integer element type (`i1` included, for `eq` and `ne` of masks); NaN compares unequal to
    everything, as in IEEE.

    Example:
    ```mlir
    %m = nn.compare %a, %b kind = "lt" : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
    ```
    """

    name = "nn.compare"

    kind = str_prop()
    ACCEPTS_QUANTIZED: ClassVar[bool] = False
    ACCEPTS_INTEGER: ClassVar[bool] = True

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        check_one_of(get_str(props, "kind"), COMPARE_KINDS, "kind")
        return super().result_shapes(operand_shapes, props)

    def verify_element_types(self) -> None:
        check_same_float_or_quantized(
            [("lhs", element_of(self.lhs)), ("rhs", element_of(self.rhs))],
            allow_quantized=False,
            allow_integer=True,
        )
        _check_boolean([("result", element_of(self.output))])


class LogicalBinaryOp(ElementwiseBinaryOp):
    """``out = lhs <op> rhs`` on `i1` tensors, with numpy broadcasting."""

    def verify_element_types(self) -> None:
        _check_boolean(
            [
                ("lhs", element_of(self.lhs)),
                ("rhs", element_of(self.rhs)),
                ("result", element_of(self.output)),
            ]
        )


@irdl_op_definition
class LogicalAndOp(LogicalBinaryOp):
    """Elementwise conjunction of `i1` tensors (ONNX And, TFLite LOGICAL_AND).

    Example:
    ```mlir
    %m = nn.logical_and %a, %b : tensor<2x3xi1>, tensor<3xi1> -> tensor<2x3xi1>
    ```
    """

    name = "nn.logical_and"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class LogicalOrOp(LogicalBinaryOp):
    """Elementwise disjunction of `i1` tensors (ONNX Or, TFLite LOGICAL_OR)."""

    name = "nn.logical_or"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class LogicalXorOp(LogicalBinaryOp):
    """Elementwise exclusive or of `i1` tensors (ONNX Xor)."""

    name = "nn.logical_xor"
    traits = traits_def(Pure(), Commutative())


@irdl_op_definition
class LogicalNotOp(ElementwiseUnaryOp):
    """Elementwise negation of an `i1` tensor (ONNX Not, TFLite LOGICAL_NOT).

    Example:
    ```mlir
    %n = nn.logical_not %m : tensor<4xi1> -> tensor<4xi1>
    ```
    """

    name = "nn.logical_not"

    def verify_element_types(self) -> None:
        _check_boolean([("input", element_of(self.input)), ("result", element_of(self.output))])


@irdl_op_definition
class SelectOp(NNOp):
    """``out = condition ? on_true : on_false`` elementwise, with 3-way numpy broadcasting.

    `condition` is an `i1` tensor; `on_true`, `on_false` and the result share one element
    type: float, integer or quantized (then with equal quantization parameters, as TFLite's
    SELECT requires; the kernel picks stored integers). ONNX Where, TFLite SELECT_V2.

    Example:
    ```mlir
    %y = nn.select %c, %a, %b : tensor<2x1xi1>, tensor<3xf32>, tensor<f32> -> tensor<2x3xf32>
    ```
    """

    name = "nn.select"

    condition = operand_def(TensorType)
    on_true = operand_def(TensorType)
    on_false = operand_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(Pure())
    ACCEPTS_INTEGER: ClassVar[bool] = True

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        condition, on_true, on_false = operand_shapes
        return [broadcast_shapes(broadcast_shapes(condition, on_true), on_false)]

    def verify_element_types(self) -> None:
        _check_boolean([("condition", element_of(self.condition))])
        result = element_of(self.output)
        check_same_float_or_quantized(
            [("result", result)], allow_quantized=True, allow_integer=True
        )
        for what, value in (("on_true", self.on_true), ("on_false", self.on_false)):
            element = element_of(value)
            if element != result:
                raise VerifyException(
                    f"{what} element type {element} differs from result type {result}"
                )
