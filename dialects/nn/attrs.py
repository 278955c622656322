"""The enum attributes of the `nn` dialect: data layout and fused activation.

Both read and print as string literals (``layout = "NHWC"``, ``activation = "relu6"``; see
`irc.dialects.enums`); ``op.layout.data`` is a `Layout` member, which compares equal to its
string (``op.layout.data == "NHWC"``).
"""

from __future__ import annotations

from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.utils.str_enum import StrEnum

from irc.dialects.enums import StringEnumSyntax

__all__ = ["Activation", "ActivationAttr", "Layout", "LayoutAttr"]


class Layout(StrEnum):
    """Where channels are: last (TFLite) or after the batch (ONNX)."""

    NHWC = "NHWC"
    NCHW = "NCHW"


class Activation(StrEnum):
    """A fused activation (TFLite style) applied to an op's result."""

    NONE = "none"
    RELU = "relu"
    RELU6 = "relu6"
    RELU_N1_TO_1 = "relu_n1_to_1"
    TANH = "tanh"


@irdl_attr_definition
class LayoutAttr(StringEnumSyntax[Layout], EnumAttribute[Layout], SpacedOpaqueSyntaxAttribute):
    """`layout = "NHWC" | "NCHW"` (generic form `#nn<layout "NHWC">`)."""

    name = "nn.layout"
    label = "layout"


@irdl_attr_definition
class ActivationAttr(
    StringEnumSyntax[Activation], EnumAttribute[Activation], SpacedOpaqueSyntaxAttribute
):
    """`activation = "none" | "relu" | ...` (generic form `#nn<activation "relu">`)."""

    name = "nn.activation"
    label = "activation"
