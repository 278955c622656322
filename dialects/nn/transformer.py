"""`nn` transformer ops: layer normalisation, SiLU and scaled dot-product attention.

Exporters decompose these into five to fifteen elementwise and reduction ops each;
`canonicalize` (passes/transformer_patterns.py) folds the decomposed forms back into one op,
so that a target runs each as one kernel. Float tensors only: a quantized transformer block
keeps its decomposed form, whose integer semantics `lower-quantized` defines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from irc.dialects.nn.base import (
    NNOp,
    Shape,
    bool_prop,
    broadcast_shapes,
    dims_compatible,
    element_of,
    float_prop,
    format_shape,
    get_bool,
    get_float,
    get_int,
    int_prop,
    is_float,
    normalize_axis,
)

__all__ = ["AttentionOp", "LayerNormOp", "SiluOp"]


def _check_float(named: Sequence[tuple[str, Attribute]]) -> None:
    """Every element type is the first one, and that is a float type."""
    (first_name, first), *rest = named
    if not is_float(first):
        raise VerifyException(f"{first_name} must be a float tensor, got {first}")
    for name, element in rest:
        if element != first:
            raise VerifyException(
                f"{name} element type {element} differs from {first_name} element type {first}"
            )


def _same_dims(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(dims_compatible(x, y) for x, y in zip(a, b))


# ---- Normalisation -----------------------------------------------------------------------------


@irdl_op_definition
class LayerNormOp(NNOp):
    """Layer normalisation over the trailing dimensions from `axis` on (ONNX
    LayerNormalization, `torch.nn.LayerNorm`).

    ``y = (x - mean) / sqrt(var + epsilon) * scale + bias`` with the mean and the (biased)
    variance taken over dimensions `axis` .. rank-1 of `input`; `scale` and the optional
    `bias` have exactly the normalised shape ``input.shape[axis:]``.

    Example:
    ```mlir
    %y = nn.layer_norm %x, %g, %b epsilon = 1.0e-12
        : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
    ```
    """

    name = "nn.layer_norm"

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)

    axis = int_prop(-1)
    epsilon = float_prop(1e-5)

    traits = traits_def(Pure())
    ACCEPTS_QUANTIZED: ClassVar[bool] = False

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        x, *params = operand_shapes
        axis = normalize_axis(get_int(props, "axis"), len(x))
        epsilon = get_float(props, "epsilon")
        if epsilon is None or not epsilon >= 0.0:
            raise VerifyException(f"epsilon must be non-negative, got {epsilon}")
        normalized = tuple(x[axis:])
        for what, dims in zip(("scale", "bias"), params):
            if not _same_dims(dims, normalized):
                raise VerifyException(
                    f"expected {what} of the normalised shape {format_shape(normalized)}, "
                    f"got {format_shape(dims)}"
                )
        return [tuple(x)]

    def verify_element_types(self) -> None:
        named = [("input", element_of(self.input)), ("scale", element_of(self.scale))]
        if self.bias is not None:
            named.append(("bias", element_of(self.bias)))
        _check_float([*named, ("result", element_of(self.output))])


# ---- Activations -------------------------------------------------------------------------------


@irdl_op_definition
class SiluOp(NNOp):
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``.

    Example:
    ```mlir
    %y = nn.silu %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "nn.silu"

    input = operand_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(Pure())
    ACCEPTS_QUANTIZED: ClassVar[bool] = False

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        (x,) = operand_shapes
        return [tuple(x)]

    def verify_element_types(self) -> None:
        _check_float([("input", element_of(self.input)), ("result", element_of(self.output))])


# ---- Attention ---------------------------------------------------------------------------------


@irdl_op_definition
class AttentionOp(NNOp):
    """Scaled dot-product attention: ``softmax(scale * q @ k^T + mask) @ v``.

    `query` is ``[..., Lq, D]``, `value` ``[..., Lk, Dv]`` and `key` ``[..., Lk, D]``, or
    ``[..., D, Lk]`` with `key_transposed` (the layout exporters compute ``q @ k^T`` from);
    the batch dimensions of the three are equal. The optional additive `mask` broadcasts
    (numpy rules) to the scores ``[..., Lq, Lk]``. The softmax runs along the last axis.
    The result is ``[..., Lq, Dv]``.

    Example:
    ```mlir
    %o = nn.attention %q, %k, %v, %m scale = 0.125 key_transposed = true
        : tensor<1x2x8x64xf32>, tensor<1x2x64x8xf32>, tensor<1x2x8x64xf32>,
          tensor<1x1x1x8xf32> -> tensor<1x2x8x64xf32>
    ```
    """

    name = "nn.attention"

    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    output = result_def(TensorType)

    scale = float_prop(1.0)
    key_transposed = bool_prop(False)

    traits = traits_def(Pure())
    ACCEPTS_QUANTIZED: ClassVar[bool] = False

    @classmethod
    def result_shapes(
        cls, operand_shapes: Sequence[Shape], props: Mapping[str, Attribute]
    ) -> list[Shape]:
        q, k, v, *mask = operand_shapes
        if len(q) < 2 or len(k) != len(q) or len(v) != len(q):
            raise VerifyException(
                "expected query, key and value of one rank >= 2, got ranks "
                f"{len(q)}, {len(k)} and {len(v)}"
            )
        batch = tuple(q[:-2])
        for what, dims in (("key", k), ("value", v)):
            if not _same_dims(dims[:-2], batch):
                raise VerifyException(
                    f"{what} batch dimensions {format_shape(dims[:-2])} differ from the "
                    f"query's {format_shape(batch)}"
                )
        lq, d = q[-2], q[-1]
        dk, lk = (k[-2], k[-1]) if get_bool(props, "key_transposed") else (k[-1], k[-2])
        if not dims_compatible(d, dk):
            raise VerifyException(f"query depth {d} differs from key depth {dk}")
        if not dims_compatible(lk, v[-2]):
            raise VerifyException(f"key length {lk} differs from value length {v[-2]}")
        scores = (*batch, lq, lk)
        if mask:
            if len(mask[0]) > len(scores):
                raise VerifyException(
                    f"mask of rank {len(mask[0])} is above the scores' rank {len(scores)}"
                )
            if not _same_dims(broadcast_shapes(mask[0], scores), scores):
                raise VerifyException(
                    f"mask shape {format_shape(mask[0])} does not broadcast to the scores "
                    f"shape {format_shape(scores)}"
                )
        return [(*batch, lq, v[-1])]

    def verify_element_types(self) -> None:
        named = [(name, element_of(getattr(self, name))) for name in ("query", "key", "value")]
        if self.mask is not None:
            named.append(("mask", element_of(self.mask)))
        _check_float([*named, ("result", element_of(self.output))])


TRANSFORMER_OPS: tuple[type[NNOp], ...] = (LayerNormOp, SiluOp, AttentionOp)
"""The ops of this module, in documentation order."""
