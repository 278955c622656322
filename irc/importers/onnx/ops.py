"""ONNX converters for compute ops: convolution, matrix products, pooling, normalisation,
elementwise arithmetic and activations, reductions and softmax.

ONNX data is NCHW with OIHW conv filters and IOHW ConvTranspose filters; the `nn` ops take
these directly with ``layout = "NCHW"``. 1-D convolutions and pools become 2-D ones over a
unit height. Elementwise ops on constants fold in numpy. Converters register into
`irc.importers.onnx.registry.CONVERTERS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import shape_of
from irc.importers.onnx.helpers import (
    as_2d_pads,
    as_2d_window,
    cast_value,
    const_ints,
    conv_window,
    normalize_axis,
    reshape,
    restore_rank,
    static_shape,
)
from irc.importers.onnx.registry import ConversionContext, Results, Unsupported, converter

# ---- Elementwise binary ------------------------------------------------------------------------


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ONNX Div: integers round toward zero (`fmod` keeps the dividend's sign)."""
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        safe = np.where(b == 0, 1, b)
        return np.where(b == 0, 0, (a - np.fmod(a, safe)) // safe)
    return np.divide(a, b)


_BINARY: dict[str, tuple[type[nn.ElementwiseBinaryOp], Callable[..., np.ndarray]]] = {
    "Add": (nn.AddOp, np.add),
    "Sub": (nn.SubOp, np.subtract),
    "Mul": (nn.MulOp, np.multiply),
    "Div": (nn.DivOp, _truncating_divide),
    "Pow": (nn.PowOp, np.power),
    "Max": (nn.MaximumOp, np.maximum),
    "Min": (nn.MinimumOp, np.minimum),
    "Sum": (nn.AddOp, np.add),
    "Mean": (nn.AddOp, np.add),
}


def _fold_binary(fn: Callable[..., np.ndarray], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(fn(a, b)).astype(a.dtype, copy=False)


@converter(*_BINARY)
def convert_binary(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Binary arithmetic with numpy broadcasting; Max/Min/Sum/Mean are variadic chains."""
    op_class, fn = _BINARY[node.op_type]
    names = [n for n in node.input if n]
    if not names:
        raise ctx.error(node, "expects at least one input")
    dtype = ctx.dtype(names[0])
    arrays = [a for a in (ctx.const(n) for n in names) if a is not None]
    if len(arrays) == len(names):
        result = arrays[0]
        for other in arrays[1:]:
            result = _fold_binary(fn, result, other)
        if node.op_type == "Mean":
            result = (result / len(arrays)).astype(dtype)
        return [result]
    if node.op_type == "Pow" and dtype.kind != "f":
        raise Unsupported(f"integer power ({dtype})")
    result = ctx.value(names[0])
    for name in names[1:]:
        other = cast_value(ctx, name, dtype) if node.op_type == "Pow" else ctx.value(name)
        result = ctx.result(op_class.make(result, other))
    if node.op_type == "Mean" and len(names) > 1:
        count = ctx.constant(np.array(len(names), dtype))
        result = ctx.result(nn.DivOp.make(result, count))
    return [result]


# ---- Elementwise unary -------------------------------------------------------------------------


def _special() -> Any:
    """`scipy.special`, imported on first use (~0.3 s that most models never need)."""
    from scipy import special

    return special


_UNARY: dict[str, tuple[type[nn.ElementwiseUnaryOp] | None, Callable[..., np.ndarray] | None]] = {
    "Relu": (nn.ReluOp, lambda x: np.maximum(x, 0)),
    "Sigmoid": (nn.SigmoidOp, lambda x: _special().expit(x)),
    "Tanh": (nn.TanhOp, np.tanh),
    "HardSwish": (nn.HardSwishOp, None),
    "Erf": (nn.ErfOp, lambda x: _special().erf(x)),
    "Exp": (nn.ExpOp, np.exp),
    "Log": (nn.LogOp, np.log),
    "Sqrt": (nn.SqrtOp, np.sqrt),
    "Abs": (nn.AbsOp, np.abs),
    "Neg": (nn.NegOp, np.negative),
    "Floor": (None, np.floor),
    "Ceil": (None, np.ceil),
    "Round": (None, np.round),
    "Sign": (None, np.sign),
}


@converter(*_UNARY)
def convert_unary(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    op_class, fn = _UNARY[node.op_type]
    name = node.input[0]
    array = ctx.const(name)
    if array is not None and fn is not None:
        with np.errstate(all="ignore"):
            return [np.asarray(fn(array)).astype(array.dtype, copy=False)]
    if op_class is None:
        raise Unsupported("no nn op (folded only when its input is a constant)")
    return [ctx.result(op_class.make(ctx.value(name)))]


@converter("Reciprocal")
def convert_reciprocal(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    name = node.input[0]
    array = ctx.const(name)
    if array is not None:
        with np.errstate(all="ignore"):
            return [(1 / array).astype(array.dtype)]
    one = ctx.constant(np.array(1, ctx.dtype(name)))
    return [ctx.result(nn.DivOp.make(one, ctx.value(name)))]


@converter("LeakyRelu", "HardSigmoid", "Gelu")
def convert_parametric_activation(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    attrs = ctx.attrs(node)
    x = ctx.value(node.input[0])
    if node.op_type == "LeakyRelu":
        return [ctx.result(nn.LeakyReluOp.make(x, alpha=attrs.get("alpha", 0.01)))]
    if node.op_type == "HardSigmoid":
        op = nn.HardSigmoidOp.make(x, alpha=attrs.get("alpha", 0.2), beta=attrs.get("beta", 0.5))
        return [ctx.result(op)]
    approximate = attrs.get("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"approximate '{approximate}'")
    return [ctx.result(nn.GeluOp.make(x, approximate=approximate))]


@converter("PRelu")
def convert_prelu(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    x = node.input[0]
    slope = cast_value(ctx, node.input[1], ctx.dtype(x))
    shape, slope_shape = ctx.shape(x), ctx.shape(node.input[1])
    if (
        ctx.source_opset < 7
        and len(shape) > 2
        and len(slope_shape) == 1
        and slope_shape[0] == shape[1] != shape[-1]
    ):
        # Before opset 7 a 1-D slope was per channel (dimension 1); the upgrade keeps it 1-D.
        slope = reshape(ctx, slope, [shape[1]] + [1] * (len(shape) - 2))
    return [ctx.result(nn.PReluOp.make(ctx.value(x), slope))]


@converter("Elu", "Selu")
def convert_elu(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """``relu(x) + alpha * (exp(min(x, 0)) - 1)``, times `gamma` for Selu."""
    attrs = ctx.attrs(node)
    name = node.input[0]
    dtype = ctx.dtype(name)
    if node.op_type == "Elu":
        alpha, gamma = attrs.get("alpha", 1.0), 1.0
    else:
        alpha = attrs.get("alpha", 1.6732632423543772848170429916717)
        gamma = attrs.get("gamma", 1.0507009873554804934193349852946)
    x = ctx.value(name)

    def scalar(value: float) -> SSAValue:
        return ctx.constant(np.array(value, dtype))

    negative = ctx.result(nn.ExpOp.make(ctx.result(nn.MinimumOp.make(x, scalar(0)))))
    negative = ctx.result(nn.SubOp.make(negative, scalar(1)))
    negative = ctx.result(nn.MulOp.make(negative, scalar(alpha)))
    y = ctx.result(nn.AddOp.make(ctx.result(nn.ReluOp.make(x)), negative))
    if gamma != 1:
        y = ctx.result(nn.MulOp.make(y, scalar(gamma)))
    return [y]


@converter("Softplus", "Softsign")
def convert_softplus(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Softplus as ``relu(x) + log(1 + exp(-|x|))`` (no overflow); Softsign ``x / (1 + |x|)``."""
    name = node.input[0]
    one = ctx.constant(np.array(1, ctx.dtype(name)))
    x = ctx.value(name)
    magnitude = ctx.result(nn.AbsOp.make(x))
    if node.op_type == "Softsign":
        return [ctx.result(nn.DivOp.make(x, ctx.result(nn.AddOp.make(magnitude, one))))]
    tail = ctx.result(nn.ExpOp.make(ctx.result(nn.NegOp.make(magnitude))))
    tail = ctx.result(nn.LogOp.make(ctx.result(nn.AddOp.make(tail, one))))
    return [ctx.result(nn.AddOp.make(ctx.result(nn.ReluOp.make(x)), tail))]


def _clip_defaults(dtype: np.dtype) -> dict[str, float]:
    """The bounds ONNX gives an absent Clip bound of a float tensor (none for integers: their
    limits clamp nothing)."""
    if not np.issubdtype(dtype, np.floating):
        return {}
    limits = np.finfo(dtype)
    return {"min": float(limits.min), "max": float(limits.max)}


@converter("Clip")
def convert_clip(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Clip: bounds as inputs (opset >= 11) or attributes. An absent bound of a float input is
    the spec's `numeric_limits<T>::lowest()` / `max()`, so ±inf clamp to ∓FLT_MAX as in
    onnxruntime (`nn.clip` without a bound would be unbounded)."""
    x = node.input[0]
    defaults = _clip_defaults(ctx.dtype(x))
    if ctx.opset < 11:  # bounds as attributes (a model read without the upgrade)
        attrs = ctx.attrs(node)
        bound_props: dict[str, Any] = {
            k: attrs.get(k, defaults.get(k)) for k in ("min", "max") if k in attrs or k in defaults
        }
        return [ctx.result(nn.ClipOp.make(ctx.value(x), **bound_props))]
    bounds = [ctx.input(node, 1), ctx.input(node, 2)]
    array = ctx.const(x)
    if array is not None and all(not b or ctx.const(b) is not None for b in bounds):
        low, high = (ctx.const(b) if b else None for b in bounds)
        if low is None and "min" in defaults:
            low = np.asarray(defaults["min"])
        if high is None and "max" in defaults:
            high = np.asarray(defaults["max"])
        if low is not None:
            array = np.maximum(array, low.astype(array.dtype))
        if high is not None:
            array = np.minimum(array, high.astype(array.dtype))
        return [array]
    value = ctx.value(x)
    props: dict[str, Any] = {}
    for name, key, op_class in (
        (bounds[0], "min", nn.MaximumOp),
        (bounds[1], "max", nn.MinimumOp),
    ):
        if not name:
            if key in defaults:
                props[key] = defaults[key]
            continue
        bound = ctx.const(name)
        if bound is not None:
            props[key] = float(np.asarray(bound).reshape(-1)[0])
        else:
            value = ctx.result(op_class.make(value, cast_value(ctx, name, ctx.dtype(x))))
    if "min" in props and "max" in props and props["min"] > props["max"]:
        # ONNX: min > max sets every element to max.
        props["min"] = props["max"]
    if props:
        value = ctx.result(nn.ClipOp.make(value, **props))
    return [value]


# ---- Convolution -------------------------------------------------------------------------------


def _spatial_input(ctx: ConversionContext, name: str) -> tuple[SSAValue, tuple[int, ...]]:
    """The value of an NC... input as rank 4 (1-D data gets a unit height), and its shape."""
    shape = static_shape(ctx, name)
    if len(shape) not in (3, 4):
        raise Unsupported(f"{len(shape) - 2}-D data (irc has 1-D and 2-D convolutions and pools)")
    value = ctx.value(name)
    if len(shape) == 3:
        value = reshape(ctx, value, [shape[0], shape[1], 1, shape[2]])
    return value, shape


def _filter_4d(ctx: ConversionContext, name: str) -> SSAValue:
    shape = static_shape(ctx, name)
    array = ctx.const(name)
    if len(shape) == 4:
        return ctx.value(name)
    target = [shape[0], shape[1], 1, shape[2]]
    if array is not None:
        return ctx.constant(array.reshape(target))
    return reshape(ctx, ctx.value(name), target)


def _bias(ctx: ConversionContext, node: onnx.NodeProto, index: int) -> SSAValue | None:
    name = ctx.input(node, index)
    if not ctx.has(name):
        return None
    return cast_value(ctx, name, ctx.dtype(node.input[0]))


@converter("Conv")
def convert_conv(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    attrs = ctx.attrs(node)
    x, shape = _spatial_input(ctx, node.input[0])
    w_shape = static_shape(ctx, node.input[1])
    if len(w_shape) != len(shape):
        raise ctx.error(node, f"filter rank {len(w_shape)} differs from data rank {len(shape)}")
    kernel = list(attrs.get("kernel_shape") or w_shape[2:])
    strides, dilations, pads = conv_window(ctx, node, shape[2:], kernel, attrs)
    if len(shape) == 3:
        strides, dilations = as_2d_window(strides, 1), as_2d_window(dilations, 1)
    op = nn.Conv2DOp.make(
        x,
        _filter_4d(ctx, node.input[1]),
        _bias(ctx, node, 2),
        strides=strides,
        pads=as_2d_pads(pads),
        dilations=dilations,
        groups=attrs.get("group", 1),
        layout="NCHW",
    )
    return [restore_rank(ctx, ctx.result(op), len(shape))]


@converter("ConvTranspose")
def convert_conv_transpose(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    attrs = ctx.attrs(node)
    x, shape = _spatial_input(ctx, node.input[0])
    w_shape = static_shape(ctx, node.input[1])
    rank = len(shape) - 2
    kernel = list(attrs.get("kernel_shape") or w_shape[2:])
    strides = list(attrs.get("strides") or [1] * rank)
    dilations = list(attrs.get("dilations") or [1] * rank)
    output_padding = list(attrs.get("output_padding") or [0] * rank)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    pads = list(attrs.get("pads") or [0] * (2 * rank))
    output_shape = attrs.get("output_shape")
    if output_shape is not None and len(output_shape) == rank + 2:
        output_shape = output_shape[2:]
    begin, end = pads[:rank], pads[rank:]
    for i in range(rank):
        natural = (shape[2 + i] - 1) * strides[i] + output_padding[i]
        natural += (kernel[i] - 1) * dilations[i] + 1
        if output_shape is not None:
            total = natural - output_shape[i]
        elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            total = natural - shape[2 + i] * strides[i]
        else:
            continue
        if total < 0:
            # A larger requested output: the extra rows only get the bias.
            output_padding[i] -= total
            total = 0
        # SAME_UPPER pads the odd pixel at the end, anything else at the start (the ONNX
        # spec; onnxruntime agrees).
        small = total // 2
        upper = auto_pad == "SAME_UPPER"
        begin[i], end[i] = (small, total - small) if upper else (total - small, small)
    pads = begin + end
    if rank == 1:
        strides, dilations = as_2d_window(strides, 1), as_2d_window(dilations, 1)
        output_padding = [0, *output_padding]
    op = nn.Conv2DTransposeOp.make(
        x,
        _filter_4d(ctx, node.input[1]),
        _bias(ctx, node, 2),
        strides=strides,
        pads=as_2d_pads(pads),
        dilations=dilations,
        output_padding=output_padding,
        groups=attrs.get("group", 1),
        layout="NCHW",
    )
    return [restore_rank(ctx, ctx.result(op), len(shape))]


# ---- Matrix products ---------------------------------------------------------------------------


@converter("MatMul")
def convert_matmul(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    a_name, b_name = node.input[0], node.input[1]
    a_const, b_const = ctx.const(a_name), ctx.const(b_name)
    if a_const is not None and b_const is not None:
        return [np.matmul(a_const, b_const)]
    a_shape, b_shape = ctx.shape(a_name), ctx.shape(b_name)
    a, b = ctx.value(a_name), ctx.value(b_name)
    if len(a_shape) == 1:
        a = reshape(ctx, a, [1, a_shape[0]])
    if len(b_shape) == 1:
        b = reshape(ctx, b, [b_shape[0], 1])
    y = ctx.result(nn.BatchMatmulOp.make(a, b))
    if len(a_shape) == 1 or len(b_shape) == 1:
        out = list(shape_of(y))
        if len(b_shape) == 1:
            out.pop(-1)
        if len(a_shape) == 1:
            out.pop(-1 if len(b_shape) == 1 else -2)
        y = reshape(ctx, y, out)
    return [y]


@converter("Gemm")
def convert_gemm(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """``alpha * A' B' + beta * C``: `nn.fully_connected` when B can be `[N, K]` weights."""
    attrs = ctx.attrs(node)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    trans_a, trans_b = bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))
    a_name, b_name, c_name = node.input[0], node.input[1], ctx.input(node, 2)
    dtype = ctx.dtype(a_name)
    b_const = ctx.const(b_name)
    n = ctx.shape(b_name)[0 if trans_b else 1]
    c = ctx.const(c_name) if ctx.has(c_name) and beta != 0 else None
    has_c = ctx.has(c_name) and beta != 0
    if not trans_a and (trans_b or b_const is not None):
        if b_const is not None:
            weights_array = b_const if trans_b else b_const.T
            if alpha != 1:
                weights_array = (weights_array * dtype.type(alpha)).astype(dtype)
            weights = ctx.constant(np.ascontiguousarray(weights_array))
            scale_after = False
        else:
            weights = ctx.value(b_name)
            scale_after = alpha != 1
        bias = None
        if c is not None and c.ndim <= 2 and c.size in (1, n) and (c.ndim < 2 or c.shape[0] == 1):
            row = c.reshape(-1) if c.size == n else c.reshape(())
            bias = ctx.constant(np.broadcast_to(row * dtype.type(beta), (n,)).astype(dtype))
        y = ctx.result(
            nn.FullyConnectedOp.make(ctx.value(a_name), weights, None if scale_after else bias)
        )
        if scale_after:
            y = ctx.result(nn.MulOp.make(y, ctx.constant(np.array(alpha, dtype))))
            if bias is not None:
                y = ctx.result(nn.AddOp.make(y, bias))
        if has_c and bias is None:
            y = _add_scaled(ctx, y, c_name, beta, dtype)
        return [y]
    y = ctx.result(
        nn.BatchMatmulOp.make(ctx.value(a_name), ctx.value(b_name), adj_x=trans_a, adj_y=trans_b)
    )
    if alpha != 1:
        y = ctx.result(nn.MulOp.make(y, ctx.constant(np.array(alpha, dtype))))
    if has_c:
        y = _add_scaled(ctx, y, c_name, beta, dtype)
    return [y]


def _add_scaled(
    ctx: ConversionContext, y: SSAValue, c_name: str, beta: float, dtype: np.dtype
) -> SSAValue:
    c = ctx.const(c_name)
    if c is not None:
        term = ctx.constant((c * dtype.type(beta)).astype(dtype))
    else:
        term = ctx.value(c_name)
        if beta != 1:
            term = ctx.result(nn.MulOp.make(term, ctx.constant(np.array(beta, dtype))))
    return ctx.result(nn.AddOp.make(y, term))


# ---- Pooling -----------------------------------------------------------------------------------


def _pool_output(size: int, kernel: int, stride: int, dilation: int, pads: int, ceil: bool) -> int:
    span = size + pads - ((kernel - 1) * dilation + 1)
    if ceil:
        return -(-span // stride) + 1
    return span // stride + 1


@converter("MaxPool", "AveragePool")
def convert_pool(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    attrs = ctx.attrs(node)
    if len(node.output) > 1 and ctx.is_used(node.output[1]):
        raise Unsupported("the Indices output is used")
    x, shape = _spatial_input(ctx, node.input[0])
    rank = len(shape) - 2
    kernel = list(attrs["kernel_shape"])
    strides, dilations, pads = conv_window(ctx, node, shape[2:], kernel, attrs)
    ceil = bool(attrs.get("ceil_mode", 0))
    extra = [0] * rank
    if ceil:
        for i in range(rank):
            begin, end = pads[i], pads[i + rank]
            out = _pool_output(shape[2 + i], kernel[i], strides[i], dilations[i], begin + end, True)
            # The last window must start inside the input or its begin padding.
            if (out - 1) * strides[i] >= shape[2 + i] + begin:
                out -= 1
            reach = (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
            extra[i] = max(0, reach - (shape[2 + i] + begin + end))
    count_include_pad = node.op_type == "AveragePool" and bool(attrs.get("count_include_pad", 0))
    if count_include_pad and any(extra):
        # Padding counts, the ceil-mode overhang does not: pad explicitly, then pool with
        # an end padding that is excluded from the count.
        if any(pads):
            spatial_pads = [p for i in range(rank) for p in (pads[i], pads[i + rank])]
            if rank == 1:
                spatial_pads = [0, 0, *spatial_pads]
            x = ctx.result(nn.PadOp.make(x, pads=[0, 0, 0, 0, *spatial_pads]))
            pads = [0] * (2 * rank)
        count_include_pad = False
    pads = [*pads[:rank], *(p + e for p, e in zip(pads[rank:], extra))]
    if any(p >= k for p, k in zip(pads, kernel + kernel)):
        raise Unsupported(f"pads {pads} as large as the kernel {kernel}")
    if rank == 1:
        kernel, strides, dilations = ([1, *v] for v in (kernel, strides, dilations))
    props: dict[str, Any] = {
        "kernel": kernel,
        "strides": strides,
        "pads": as_2d_pads(pads),
        "dilations": dilations,
        "layout": "NCHW",
    }
    if node.op_type == "MaxPool":
        op = nn.MaxPool2DOp.make(x, **props)
    else:
        op = nn.AvgPool2DOp.make(x, count_include_pad=count_include_pad, **props)
    return [restore_rank(ctx, ctx.result(op), len(shape))]


@converter("GlobalAveragePool", "GlobalMaxPool")
def convert_global_pool(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    name = node.input[0]
    rank = len(ctx.shape(name))
    kind = "mean" if node.op_type == "GlobalAveragePool" else "max"
    op = nn.ReduceOp.make(ctx.value(name), kind=kind, axes=list(range(2, rank)), keepdims=True)
    return [ctx.result(op)]


# ---- Normalisation -----------------------------------------------------------------------------


@converter("BatchNormalization")
def convert_batch_norm(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    attrs = ctx.attrs(node)
    if attrs.get("training_mode", 0):
        raise Unsupported("training mode")
    if any(ctx.is_used(name) for name in node.output[1:]):
        raise Unsupported("the training outputs (running mean and variance) are used")
    x = node.input[0]
    dtype = ctx.dtype(x)
    params = [cast_value(ctx, name, dtype) for name in node.input[1:5]]
    op = nn.BatchNormOp.make(
        ctx.value(x), *params, epsilon=attrs.get("epsilon", 1e-5), layout="NCHW"
    )
    return [ctx.result(op)]


# ---- Reductions and softmax --------------------------------------------------------------------

_REDUCE_KINDS = {
    "ReduceMean": ("mean", None, None),
    "ReduceSum": ("sum", None, None),
    "ReduceMax": ("max", None, None),
    "ReduceMin": ("min", None, None),
    "ReduceProd": ("prod", None, None),
    "ReduceSumSquare": ("sum", "square", None),
    "ReduceL1": ("sum", "abs", None),
    "ReduceL2": ("sum", "square", nn.SqrtOp),
    "ReduceLogSum": ("sum", None, nn.LogOp),
    "ReduceLogSumExp": ("sum", "exp", nn.LogOp),
}

_NUMPY_REDUCE = {"mean": np.mean, "sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


@converter(*_REDUCE_KINDS)
def convert_reduce(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    kind, before, after = _REDUCE_KINDS[node.op_type]
    attrs = ctx.attrs(node)
    name = node.input[0]
    rank = len(ctx.shape(name))
    keepdims = bool(attrs.get("keepdims", 1))
    axes_as_input = ctx.opset >= 18 or (node.op_type == "ReduceSum" and ctx.opset >= 13)
    if axes_as_input:
        axes = const_ints(ctx, ctx.input(node, 1), "axes")
    else:
        axes = attrs.get("axes")
    if not axes:
        if attrs.get("noop_with_empty_axes", 0) and axes_as_input:
            array = ctx.const(name)
            return [array if array is not None else ctx.value(name)]
        axes = list(range(rank))
    axes = sorted({normalize_axis(a, rank) for a in axes})
    array = ctx.const(name)
    if array is not None and before is None and after is None:
        folded = _NUMPY_REDUCE[kind](array, axis=tuple(axes), keepdims=keepdims)
        return [np.asarray(folded).astype(array.dtype)]
    value = ctx.value(name)
    if before == "square":
        value = ctx.result(nn.MulOp.make(value, value))
    elif before == "abs":
        value = ctx.result(nn.AbsOp.make(value))
    elif before == "exp":
        value = ctx.result(nn.ExpOp.make(value))
    if axes:
        value = ctx.result(nn.ReduceOp.make(value, kind=kind, axes=axes, keepdims=keepdims))
    if after is not None:
        value = ctx.result(after.make(value))
    return [value]


@converter("Softmax", "LogSoftmax")
def convert_softmax(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
    """Opset >= 13: along `axis`; before, over the input coerced to 2-D at `axis`."""
    op_class = nn.SoftmaxOp if node.op_type == "Softmax" else nn.LogSoftmaxOp
    name = node.input[0]
    shape = ctx.shape(name)
    rank = len(shape)
    attrs = ctx.attrs(node)
    value = ctx.value(name)
    if ctx.opset >= 13:
        axis = normalize_axis(attrs.get("axis", -1), rank)
        return [ctx.result(op_class.make(value, axis=axis))]
    axis = normalize_axis(attrs.get("axis", 1), rank) if rank else 0
    if axis == rank - 1:
        return [ctx.result(op_class.make(value, axis=rank - 1))]
    if any(d < 0 for d in shape):
        raise Unsupported("a softmax over several dimensions of a dynamic shape")
    flat = reshape(ctx, value, [math.prod(shape[:axis]), math.prod(shape[axis:])])
    y = ctx.result(op_class.make(flat, axis=1))
    return [reshape(ctx, y, shape)]
