"""`lower-quantized` against TFLite's int8 reference kernels (BUILTIN_REF).

Each test builds one quantized `nn` op in a `func.func`, runs `lower-quantized`, verifies the
module, checks that only integer arithmetic, `quant.*` casts/rescales and data movement are
left, executes it with the executor (reference kernels) and compares the stored integers
with the TFLite interpreter running the same op in a one-operator `.tflite` model
(`tflite_builder`). The lowering is bit-exact except where a test passes ``exact=False``
(one quantization step accepted); the number of inexact elements is recorded in `INEXACT`
(printed by the last test, with ``pytest -s``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from tflite_builder import T, run_op
from xdsl.dialects.builtin import (
    FunctionType,
    IntegerType,
    ModuleOp,
    TensorType,
    i32,
)
from xdsl.dialects.builtin import f32 as f32_type
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from irc.context import make_context
from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType, quantized_element
from irc.dtypes import element_type
from irc.passes.lower_quantized import LowerQuantizedPass
from irc.runtime import compile_function

INEXACT: dict[str, list[int]] = {}
"""Per test id: [inexact elements, total elements] (all within one step)."""

_DATA_MOVEMENT = (nn.ConstantOp, nn.ReshapeOp, nn.TransposeOp, nn.PadOp, nn.ConcatOp)

rng = np.random.default_rng(20240611)


# ---- Helpers -----------------------------------------------------------------------------------


def f32(x: float) -> float:
    """A scale as TFLite stores it (float32), widened exactly to a Python float."""
    return float(np.float32(x))


def qtype(dtype: str, scale: float | Sequence[float], zp: int = 0, axis: int | None = None):
    storage = element_type(dtype)
    if axis is None:
        return UniformQuantizedType.per_tensor(storage, f32_type, f32(scale), zp)  # type: ignore[arg-type]
    scales = [f32(s) for s in scale]  # type: ignore[union-attr]
    return UniformQuantizedType.per_axis(storage, f32_type, axis, scales, [zp] * len(scales))


def qtensor(shape: Sequence[int], element: Attribute) -> TensorType:
    return TensorType(element, list(shape))


def qconst(data: np.ndarray, element: Attribute) -> nn.ConstantOp:
    return nn.ConstantOp.from_array(np.ascontiguousarray(data), qtensor(data.shape, element))


def random_q(shape: Sequence[int], dtype: str = "int8") -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


Build = Callable[[Callable[[Operation], SSAValue], Sequence[SSAValue]], SSAValue]


def lower_and_run(
    arg_types: Sequence[TensorType],
    build: Build,
    feed: Sequence[np.ndarray],
    inspect: Callable[[FuncOp], None] | None = None,
):
    """Build @main with `build`, run lower-quantized, verify, execute; returns the output.

    `inspect`, when given, sees the lowered function before it runs.
    """
    block = Block(arg_types=list(arg_types))
    ops: list[Operation] = []

    def add(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    result = build(add, block.args)
    block.add_ops([*ops, ReturnOp(result)])
    func = FuncOp("main", FunctionType.from_lists(list(arg_types), [result.type]), Region(block))
    module = ModuleOp([func])
    module.verify()
    LowerQuantizedPass().apply(make_context(), module)
    module.verify()
    for op in func.body.block.ops:
        quantized = any(
            quantized_element(t) is not None for t in (*op.operand_types, *op.result_types)
        )
        if quantized and not isinstance(
            op, (*_DATA_MOVEMENT, quant.SCastOp, quant.RescaleOp, ReturnOp)
        ):
            raise AssertionError(f"quantized '{op.name}' left after lower-quantized")
    if inspect is not None:
        inspect(func)
    program = compile_function(module)
    outputs = program.run({f"arg{i}": x for i, x in enumerate(feed)})
    return outputs["result0"]


def compare(test_id: str, got: np.ndarray, want: np.ndarray, *, exact: bool = True) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    INEXACT[test_id] = [int((diff != 0).sum()), int(diff.size)]
    assert diff.max(initial=0) <= 1, f"{test_id}: max difference {diff.max()}"
    if exact:
        assert not diff.any(), f"{test_id}: {(diff != 0).sum()} of {diff.size} elements differ"


def same_pads(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TFLite SAME padding: (before, after), the extra on the after side."""
    effective = dilation * (kernel - 1) + 1
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


_ACT = {"none": "NONE", "relu": "RELU", "relu6": "RELU6", "relu_n1_to_1": "RELU_N1_TO_1"}


# ---- Convolution -------------------------------------------------------------------------------

CONV_CASES = [
    # (input NHWC, out channels, kernel, stride, padding, dilation, zp_in, zp_out, activation)
    ((1, 7, 7, 3), 4, (3, 3), (1, 1), "SAME", (1, 1), -3, 5, "none"),
    ((1, 8, 8, 4), 8, (3, 3), (2, 2), "SAME", (1, 1), 12, -20, "relu"),
    ((2, 9, 6, 5), 6, (3, 2), (2, 1), "VALID", (1, 1), -128, 0, "relu6"),
    ((1, 6, 6, 8), 3, (1, 1), (1, 1), "VALID", (1, 1), 0, -128, "relu6"),
    ((1, 10, 10, 2), 4, (3, 3), (1, 1), "SAME", (2, 2), 7, 3, "relu"),
    ((1, 5, 5, 3), 2, (5, 5), (1, 1), "VALID", (1, 1), -1, 1, "none"),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[f"conv{i}" for i in range(len(CONV_CASES))])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
def test_conv2d(case, per_channel: bool) -> None:
    shape, out_c, (kh, kw), (sh, sw), padding, (dh, dw), zp_in, zp_out, act = case
    s_in, s_out = 0.05, 0.3
    s_w = list(rng.uniform(0.002, 0.02, out_c)) if per_channel else [0.01]
    x = random_q(shape)
    w = random_q((out_c, kh, kw, shape[3]))
    w[w == -128] = -127
    b = rng.integers(-3000, 3000, out_c).astype(np.int32)
    if padding == "SAME":
        top, bottom = same_pads(shape[1], kh, sh, dh)
        left, right = same_pads(shape[2], kw, sw, dw)
    else:
        top = bottom = left = right = 0
    oh = (shape[1] + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (shape[2] + left + right - dw * (kw - 1) - 1) // sw + 1
    out_shape = (shape[0], oh, ow, out_c)

    want = run_op(
        "CONV_2D",
        [
            T(shape, "int8", f32(s_in), zp_in),
            T(w.shape, "int8", [f32(s) for s in s_w], 0, 0, data=w),
            T((out_c,), "int32", [f32(s_in) * f32(s) for s in s_w], 0, data=b),
        ],
        [T(out_shape, "int8", f32(s_out), zp_out)],
        (
            "Conv2DOptions",
            {
                "padding": padding,
                "stride_h": sh,
                "stride_w": sw,
                "dilation_h_factor": dh,
                "dilation_w_factor": dw,
                "fused_activation_function": _ACT[act],
            },
        ),
        feed=[x],
        version=3,
    )[0]

    in_type = qtensor(shape, qtype("int8", s_in, zp_in))
    w_el = qtype("int8", s_w, 0, axis=0) if per_channel else qtype("int8", s_w[0])

    def build(add, args):
        weights = add(qconst(w, w_el))
        bias = add(nn.ConstantOp.from_array(b))
        return add(
            nn.Conv2DOp.make(
                args[0],
                weights,
                bias,
                strides=[sh, sw],
                pads=[top, left, bottom, right],
                dilations=[dh, dw],
                layout="NHWC",
                activation=act,
                result_elements=qtype("int8", s_out, zp_out),
            )
        )

    got = lower_and_run([in_type], build, [x])
    compare(f"conv2d[{case}-{per_channel}]", got, want)


DEPTHWISE_CASES = [
    # (input NHWC, multiplier, kernel, stride, padding, zp_in, zp_out, activation)
    ((1, 8, 8, 4), 1, (3, 3), (1, 1), "SAME", -5, 2, "relu6"),
    ((1, 9, 9, 3), 2, (3, 3), (2, 2), "SAME", 20, -10, "none"),
    ((2, 6, 7, 6), 1, (5, 3), (1, 2), "VALID", -128, -128, "relu"),
    ((1, 5, 5, 2), 3, (2, 2), (1, 1), "SAME", 0, 0, "none"),
]


@pytest.mark.parametrize("case", DEPTHWISE_CASES, ids=[f"dw{i}" for i in range(4)])
def test_depthwise_conv2d(case) -> None:
    shape, mult, (kh, kw), (sh, sw), padding, zp_in, zp_out, act = case
    c = shape[3]
    out_c = c * mult
    s_in, s_out = 0.04, 0.15
    s_w = list(rng.uniform(0.002, 0.03, out_c))
    x = random_q(shape)
    w_tfl = random_q((1, kh, kw, out_c))
    w_tfl[w_tfl == -128] = -127
    b = rng.integers(-2000, 2000, out_c).astype(np.int32)
    if padding == "SAME":
        top, bottom = same_pads(shape[1], kh, sh)
        left, right = same_pads(shape[2], kw, sw)
    else:
        top = bottom = left = right = 0
    oh = (shape[1] + top + bottom - kh) // sh + 1
    ow = (shape[2] + left + right - kw) // sw + 1
    out_shape = (shape[0], oh, ow, out_c)

    want = run_op(
        "DEPTHWISE_CONV_2D",
        [
            T(shape, "int8", f32(s_in), zp_in),
            T(w_tfl.shape, "int8", [f32(s) for s in s_w], 0, 3, data=w_tfl),
            T((out_c,), "int32", [f32(s_in) * f32(s) for s in s_w], 0, data=b),
        ],
        [T(out_shape, "int8", f32(s_out), zp_out)],
        (
            "DepthwiseConv2DOptions",
            {
                "padding": padding,
                "stride_h": sh,
                "stride_w": sw,
                "depth_multiplier": mult,
                "fused_activation_function": _ACT[act],
            },
        ),
        feed=[x],
        version=3,
    )[0]

    # TFLite [1, H, W, C*M] -> grouped conv2d filter [C*M, H, W, 1] (OHWI), groups = C.
    w = np.ascontiguousarray(np.transpose(w_tfl, (3, 1, 2, 0)))

    def build(add, args):
        weights = add(qconst(w, qtype("int8", s_w, 0, axis=0)))
        bias = add(nn.ConstantOp.from_array(b))
        return add(
            nn.Conv2DOp.make(
                args[0],
                weights,
                bias,
                strides=[sh, sw],
                pads=[top, left, bottom, right],
                groups=c,
                layout="NHWC",
                activation=act,
                result_elements=qtype("int8", s_out, zp_out),
            )
        )

    got = lower_and_run([qtensor(shape, qtype("int8", s_in, zp_in))], build, [x])
    compare(f"depthwise[{case}]", got, want)


FC_CASES = [
    # (batch, in features, out features, zp_in, zp_out, activation, per_channel)
    (1, 16, 8, -4, 3, "none", False),
    (3, 32, 10, 25, -7, "relu", False),
    (2, 20, 6, -128, 0, "relu6", True),
    (4, 9, 5, 0, -128, "none", True),
]


@pytest.mark.parametrize("case", FC_CASES, ids=[f"fc{i}" for i in range(len(FC_CASES))])
def test_fully_connected(case) -> None:
    batch, k, n, zp_in, zp_out, act, per_channel = case
    s_in, s_out = 0.07, 0.4
    s_w = list(rng.uniform(0.003, 0.02, n)) if per_channel else [0.011]
    x = random_q((batch, k))
    w = random_q((n, k))
    w[w == -128] = -127
    b = rng.integers(-5000, 5000, n).astype(np.int32)
    want = run_op(
        "FULLY_CONNECTED",
        [
            T((batch, k), "int8", f32(s_in), zp_in),
            T((n, k), "int8", [f32(s) for s in s_w], 0, 0, data=w),
            T((n,), "int32", [f32(s_in) * f32(s) for s in s_w], 0, data=b),
        ],
        [T((batch, n), "int8", f32(s_out), zp_out)],
        ("FullyConnectedOptions", {"fused_activation_function": _ACT[act]}),
        feed=[x],
        version=5 if per_channel else 4,
    )[0]

    w_el = qtype("int8", s_w, 0, axis=0) if per_channel else qtype("int8", s_w[0])

    def build(add, args):
        weights = add(qconst(w, w_el))
        bias = add(nn.ConstantOp.from_array(b))
        return add(
            nn.FullyConnectedOp.make(
                args[0],
                weights,
                bias,
                activation=act,
                result_elements=qtype("int8", s_out, zp_out),
            )
        )

    got = lower_and_run([qtensor((batch, k), qtype("int8", s_in, zp_in))], build, [x])
    compare(f"fully_connected[{case}]", got, want)


# ---- Elementwise -------------------------------------------------------------------------------

BINARY_CASES = [
    # (lhs shape, rhs shape, (s1, zp1), (s2, zp2), (s_out, zp_out), activation)
    ((1, 4, 4, 8), (1, 4, 4, 8), (0.05, -3), (0.08, 10), (0.1, 2), "none"),
    ((2, 5, 6), (2, 5, 6), (0.2, 0), (0.2, 0), (0.3, -5), "relu"),
    ((1, 3, 3, 4), (4,), (0.01, -128), (0.5, 7), (0.25, -128), "relu6"),
    ((3, 7), (3, 7), (1.5, 100), (0.01, -100), (0.9, 0), "none"),
]


@pytest.mark.parametrize("op_name", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("case", BINARY_CASES, ids=[f"bin{i}" for i in range(len(BINARY_CASES))])
def test_binary(op_name: str, case) -> None:
    a_shape, b_shape, (s1, z1), (s2, z2), (so, zo), act = case
    if op_name == "MUL":
        so = so * 4
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    a, b = random_q(a_shape), random_q(b_shape)
    options = f"{op_name.capitalize()}Options"
    want = run_op(
        op_name,
        [T(a_shape, "int8", f32(s1), z1), T(b_shape, "int8", f32(s2), z2)],
        [T(out_shape, "int8", f32(so), zo)],
        (options, {"fused_activation_function": _ACT[act]}),
        feed=[a, b],
        version=2,
    )[0]
    cls = {"ADD": nn.AddOp, "SUB": nn.SubOp, "MUL": nn.MulOp}[op_name]

    def build(add, args):
        return add(cls.make(*args, activation=act, result_elements=qtype("int8", so, zo)))

    types = [qtensor(a_shape, qtype("int8", s1, z1)), qtensor(b_shape, qtype("int8", s2, z2))]
    got = lower_and_run(types, build, [a, b])
    compare(f"{op_name.lower()}[{case}]", got, want)


def test_add_constant_operand_folds() -> None:
    """A quantized constant operand is folded into integer constants, not cast at run time."""
    shape = (2, 8)
    a, c = random_q(shape), random_q(shape)
    want = run_op(
        "ADD",
        [T(shape, "int8", f32(0.1), 3), T(shape, "int8", f32(0.05), -2, data=c)],
        [T(shape, "int8", f32(0.12), 1)],
        ("AddOptions", {}),
        feed=[a],
    )[0]

    def build(add, args):
        constant = add(qconst(c, qtype("int8", 0.05, -2)))
        return add(nn.AddOp.make(args[0], constant, result_elements=qtype("int8", 0.12, 1)))

    got = lower_and_run([qtensor(shape, qtype("int8", 0.1, 3))], build, [a])
    compare("add_constant", got, want)


# ---- Pooling -----------------------------------------------------------------------------------

POOL_CASES = [
    # (input NHWC, kernel, stride, padding, zp, activation)
    ((1, 8, 8, 3), (2, 2), (2, 2), "VALID", -5, "none"),
    ((1, 7, 7, 4), (3, 3), (2, 2), "SAME", 10, "relu"),
    ((2, 5, 9, 2), (3, 2), (1, 2), "SAME", -128, "relu6"),
    ((1, 6, 6, 8), (6, 6), (1, 1), "VALID", 3, "none"),
]


@pytest.mark.parametrize("kind", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("case", POOL_CASES, ids=[f"pool{i}" for i in range(len(POOL_CASES))])
def test_pool(kind: str, case) -> None:
    shape, (kh, kw), (sh, sw), padding, zp, act = case
    scale = 0.06
    x = random_q(shape)
    if padding == "SAME":
        top, bottom = same_pads(shape[1], kh, sh)
        left, right = same_pads(shape[2], kw, sw)
    else:
        top = bottom = left = right = 0
    out_shape = (
        shape[0],
        (shape[1] + top + bottom - kh) // sh + 1,
        (shape[2] + left + right - kw) // sw + 1,
        shape[3],
    )
    want = run_op(
        kind,
        [T(shape, "int8", f32(scale), zp)],
        [T(out_shape, "int8", f32(scale), zp)],
        (
            "Pool2DOptions",
            {
                "padding": padding,
                "stride_h": sh,
                "stride_w": sw,
                "filter_height": kh,
                "filter_width": kw,
                "fused_activation_function": _ACT[act],
            },
        ),
        feed=[x],
        version=2,
    )[0]
    cls = nn.AvgPool2DOp if kind == "AVERAGE_POOL_2D" else nn.MaxPool2DOp
    element = qtype("int8", scale, zp)

    def build(add, args):
        return add(
            cls.make(
                args[0],
                kernel=[kh, kw],
                strides=[sh, sw],
                pads=[top, left, bottom, right],
                layout="NHWC",
                activation=act,
                result_elements=element,
            )
        )

    got = lower_and_run([qtensor(shape, element)], build, [x])
    compare(f"{kind.lower()}[{case}]", got, want)


# ---- Mean --------------------------------------------------------------------------------------

MEAN_CASES = [
    # (input, axes, (s_in, zp_in), (s_out, zp_out))
    ((1, 7, 7, 8), (1, 2), (0.1, 3), (0.1, 3)),
    ((2, 4, 4, 16), (1, 2), (0.05, -10), (0.03, 4)),
    ((1, 5, 3, 6), (1, 2), (0.02, -128), (0.015, -100)),
    ((1, 6, 6, 12), (1, 2), (0.2, 0), (0.05, 0)),
    ((3, 10, 4), (1,), (0.1, 20), (0.08, -3)),
]


@pytest.mark.parametrize("case", MEAN_CASES, ids=[f"mean{i}" for i in range(len(MEAN_CASES))])
def test_mean(case) -> None:
    shape, axes, (s_in, z_in), (s_out, z_out) = case
    x = random_q(shape)
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    want = run_op(
        "MEAN",
        [T(shape, "int8", f32(s_in), z_in), T((len(axes),), "int32", data=list(axes))],
        [T(out_shape, "int8", f32(s_out), z_out)],
        ("ReducerOptions", {"keep_dims": True}),
        feed=[x],
        version=2,
    )[0]

    def build(add, args):
        return add(
            nn.ReduceOp.make(
                args[0],
                kind="mean",
                axes=list(axes),
                keepdims=True,
                result_elements=qtype("int8", s_out, z_out),
            )
        )

    got = lower_and_run([qtensor(shape, qtype("int8", s_in, z_in))], build, [x])
    compare(f"mean[{case}]", got, want)


# ---- Data movement -----------------------------------------------------------------------------


def test_concat_same_scales() -> None:
    element = qtype("int8", 0.1, -4)
    a, b = random_q((1, 3, 3, 2)), random_q((1, 3, 3, 5))
    want = run_op(
        "CONCATENATION",
        [T(a.shape, "int8", f32(0.1), -4), T(b.shape, "int8", f32(0.1), -4)],
        [T((1, 3, 3, 7), "int8", f32(0.1), -4)],
        ("ConcatenationOptions", {"axis": 3}),
        feed=[a, b],
    )[0]

    def build(add, args):
        return add(nn.ConcatOp.make(list(args), axis=3, result_elements=element))

    got = lower_and_run([qtensor(a.shape, element), qtensor(b.shape, element)], build, [a, b])
    compare("concat_same", got, want)


def _concat_with_scaling(inputs, params, out_scale: float, out_zp: int, axis: int, dtype: str):
    """TFLite's ConcatenationWithScaling (its uint8 kernel): float requantization."""
    info = np.iinfo(dtype)
    inverse = np.float32(1.0) / np.float32(out_scale)
    parts = []
    for x, (scale, zp) in zip(inputs, params, strict=True):
        if scale == out_scale and zp == out_zp:
            parts.append(x)
            continue
        s = np.float32(scale) * inverse
        bias = np.float32(-zp) * s
        value = x.astype(np.float32) * s + bias
        rounded = np.trunc(value + np.copysign(np.float32(0.5), value))
        parts.append(np.clip(rounded.astype(np.int64) + out_zp, info.min, info.max).astype(dtype))
    return np.concatenate(parts, axis=axis)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_concat_different_scales(dtype: str) -> None:
    """TFLite requantizes uint8 inputs in float (ConcatenationWithScaling) and rejects int8
    inputs whose scales differ; lower-quantized rescales in fixed point (within one step)."""
    params = [(0.1, 3), (0.05, 9), (0.2, -2)] if dtype == "int8" else [(0.1, 130), (0.05, 9)]
    out_scale, out_zp = (0.15, 4) if dtype == "int8" else (0.12, 120)
    shapes = [(2, 3, 4), (2, 5, 4), (2, 1, 4)][: len(params)]
    inputs = [random_q(s, dtype) for s in shapes]
    out_shape = (2, sum(s[1] for s in shapes), 4)
    if dtype == "uint8":
        want = run_op(
            "CONCATENATION",
            [T(s, dtype, f32(sc), zp) for s, (sc, zp) in zip(shapes, params, strict=True)],
            [T(out_shape, dtype, f32(out_scale), out_zp)],
            ("ConcatenationOptions", {"axis": 1}),
            feed=inputs,
        )[0]
        emulated = _concat_with_scaling(
            inputs, [(f32(s), z) for s, z in params], f32(out_scale), out_zp, 1, dtype
        )
        np.testing.assert_array_equal(emulated, want)  # the emulation is TFLite's algorithm
    else:
        want = _concat_with_scaling(
            inputs, [(f32(s), z) for s, z in params], f32(out_scale), out_zp, 1, dtype
        )

    def build(add, args):
        return add(
            nn.ConcatOp.make(list(args), axis=1, result_elements=qtype(dtype, out_scale, out_zp))
        )

    types = [qtensor(s, qtype(dtype, sc, zp)) for s, (sc, zp) in zip(shapes, params, strict=True)]
    got = lower_and_run(types, build, inputs)
    compare(f"concat_scaled[{dtype}]", got, want, exact=False)


def test_reshape_and_pad_stay() -> None:
    """Data movement on quantized tensors needs no lowering: reshape then pad with the zero
    point (TFLite's int8 PAD fills with the output zero point)."""
    element = qtype("int8", 0.1, -7)
    x = random_q((1, 4, 4, 3))
    reshaped = run_op(
        "RESHAPE",
        [T((1, 4, 4, 3), "int8", f32(0.1), -7), T((3,), "int32", data=[1, 16, 3])],
        [T((1, 16, 3), "int8", f32(0.1), -7)],
        feed=[x],
    )[0]
    pads = np.array([[0, 0], [1, 2], [0, 1]], dtype=np.int32)
    want = run_op(
        "PAD",
        [T((1, 16, 3), "int8", f32(0.1), -7), T((3, 2), "int32", data=pads)],
        [T((1, 19, 4), "int8", f32(0.1), -7)],
        feed=[reshaped],
    )[0]

    def build(add, args):
        r = add(nn.ReshapeOp.make(args[0], shape=[1, 16, 3]))
        return add(nn.PadOp.make(r, pads=list(pads.ravel()), value=-7.0))

    got = lower_and_run([qtensor(x.shape, element)], build, [x])
    compare("reshape_pad", got, want)


# ---- Activations -------------------------------------------------------------------------------

ACTIVATION_CASES = [
    # ((s_in, zp_in), (s_out, zp_out))
    ((0.05, -3), (0.05, -3)),
    ((0.05, 10), (0.03, -128)),
    ((0.1, -128), (0.2, 5)),
]


@pytest.mark.parametrize("op_name", ["RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "ABS"])
@pytest.mark.parametrize(
    "case", ACTIVATION_CASES, ids=[f"act{i}" for i in range(len(ACTIVATION_CASES))]
)
def test_unary_activation(op_name: str, case) -> None:
    (s_in, z_in), (s_out, z_out) = case
    shape = (2, 6, 5)
    x = random_q(shape)
    options = ("LeakyReluOptions", {"alpha": 0.2}) if op_name == "LEAKY_RELU" else None
    want = run_op(
        op_name,
        [T(shape, "int8", f32(s_in), z_in)],
        [T(shape, "int8", f32(s_out), z_out)],
        options,
        feed=[x],
        version={"LEAKY_RELU": 2, "ABS": 2, "RELU_N1_TO_1": 1}.get(op_name, 3),
    )[0]
    out_el = qtype("int8", s_out, z_out)

    def build(add, args):
        match op_name:
            case "RELU":
                op = nn.ReluOp.make(args[0], result_elements=out_el)
            case "RELU6":
                op = nn.Relu6Op.make(args[0], result_elements=out_el)
            case "RELU_N1_TO_1":
                op = nn.ClipOp.make(args[0], min=-1.0, max=1.0, result_elements=out_el)
            case "LEAKY_RELU":
                op = nn.LeakyReluOp.make(args[0], alpha=f32(0.2), result_elements=out_el)
            case _:
                op = nn.AbsOp.make(args[0], result_elements=out_el)
        return add(op)

    got = lower_and_run([qtensor(shape, qtype("int8", s_in, z_in))], build, [x])
    compare(f"{op_name.lower()}[{case}]", got, want)


def test_neg_is_real_negation() -> None:
    """TFLite's int8 NEG negates stored values (zero points ignored); irc negates the real
    value, which agrees with TFLite for symmetric quantization away from -128."""
    x = np.arange(-127, 128, dtype=np.int8).reshape(1, 255)
    want = run_op(
        "NEG", [T(x.shape, "int8", f32(0.1), 0)], [T(x.shape, "int8", f32(0.1), 0)], feed=[x]
    )[0]
    element = qtype("int8", 0.1, 0)

    def build(add, args):
        return add(nn.NegOp.make(args[0]))

    got = lower_and_run([qtensor(x.shape, element)], build, [x])
    compare("neg", got, want)


def test_prelu() -> None:
    shape = (1, 4, 4, 3)
    x = random_q(shape)
    alpha = random_q((3,))
    want = run_op(
        "PRELU",
        [T(shape, "int8", f32(0.05), 4), T((3,), "int8", f32(0.01), -2, data=alpha)],
        [T(shape, "int8", f32(0.04), -6)],
        feed=[x],
    )[0]

    def build(add, args):
        slope = add(qconst(alpha, qtype("int8", 0.01, -2)))
        return add(nn.PReluOp.make(args[0], slope, result_elements=qtype("int8", 0.04, -6)))

    got = lower_and_run([qtensor(shape, qtype("int8", 0.05, 4))], build, [x])
    compare("prelu", got, want)


@pytest.mark.parametrize("op_name", ["MAXIMUM", "MINIMUM"])
def test_maximum_minimum(op_name: str) -> None:
    shape = (2, 3, 8)
    element = qtype("int8", 0.07, -9)
    a, b = random_q(shape), random_q((8,))
    want = run_op(
        op_name,
        [T(shape, "int8", f32(0.07), -9), T((8,), "int8", f32(0.07), -9)],
        [T(shape, "int8", f32(0.07), -9)],
        feed=[a, b],
        version=2,
    )[0]
    cls = nn.MaximumOp if op_name == "MAXIMUM" else nn.MinimumOp

    def build(add, args):
        return add(cls.make(*args))

    got = lower_and_run([qtensor(shape, element), qtensor((8,), element)], build, [a, b])
    compare(f"{op_name.lower()}", got, want)


def test_batch_matmul() -> None:
    a, b = random_q((2, 3, 5)), random_q((2, 5, 4))
    want = run_op(
        "BATCH_MATMUL",
        [T(a.shape, "int8", f32(0.05), 3), T(b.shape, "int8", f32(0.02), 0)],
        [T((2, 3, 4), "int8", f32(0.3), -4)],
        ("BatchMatMulOptions", {"adj_x": False, "adj_y": False}),
        feed=[a, b],
        version=2,
    )[0]

    def build(add, args):
        return add(nn.BatchMatmulOp.make(*args, result_elements=qtype("int8", 0.3, -4)))

    types = [qtensor(a.shape, qtype("int8", 0.05, 3)), qtensor(b.shape, qtype("int8", 0.02))]
    got = lower_and_run(types, build, [a, b])
    compare("batch_matmul", got, want)


# ---- IR shape of the lowering ------------------------------------------------------------------


def test_softmax_and_float_ops_untouched() -> None:
    element = qtype("int8", 0.1, 0)
    block = Block(arg_types=[qtensor((1, 10), element), TensorType(f32_type, [1, 10])])
    softmax = nn.SoftmaxOp.make(block.args[0], result_elements=qtype("int8", 1 / 256, -128))
    fadd = nn.AddOp.make(block.args[1], block.args[1])
    block.add_ops([softmax, fadd, ReturnOp(softmax.output, fadd.output)])
    func = FuncOp(
        "main",
        FunctionType.from_lists(
            [a.type for a in block.args], [softmax.output.type, fadd.output.type]
        ),
        Region(block),
    )
    module = ModuleOp([func])
    LowerQuantizedPass().apply(make_context(), module)
    assert [op.name for op in func.body.block.ops] == ["nn.softmax", "nn.add", "func.return"]


def test_lowered_ops_carry_the_location() -> None:
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

    element = qtype("int8", 0.1, 3)
    block = Block(arg_types=[qtensor((4,), element)] * 2)
    add = nn.AddOp.make(*block.args, result_elements=qtype("int8", 0.2, -1))
    location = FileLineColLoc(StringAttr("model.tflite"), IntAttr(3), IntAttr(7))
    add.location = location
    block.add_ops([add, ReturnOp(add.output)])
    func = FuncOp(
        "main",
        FunctionType.from_lists([a.type for a in block.args], [add.output.type]),
        Region(block),
    )
    LowerQuantizedPass().apply(make_context(), ModuleOp([func]))
    lowered = [op for op in func.body.block.ops if not isinstance(op, ReturnOp)]
    assert len(lowered) > 5
    assert all(op.location == location for op in lowered)


def test_i32_accumulator_types() -> None:
    """The integer conv accumulates into i32 and the rescale is per output channel."""
    element = qtype("int8", 0.5, -1)
    block = Block(arg_types=[qtensor((1, 3, 3, 2), element)])
    w = qconst(np.ones((4, 1, 1, 2), np.int8), qtype("int8", [0.1, 0.2, 0.3, 0.4], 0, axis=0))
    conv = nn.Conv2DOp.make(
        block.args[0], w.output, None, layout="NHWC", result_elements=qtype("int8", 0.25, 2)
    )
    block.add_ops([w, conv, ReturnOp(conv.output)])
    func = FuncOp(
        "main",
        FunctionType.from_lists([block.args[0].type], [conv.output.type]),
        Region(block),
    )
    LowerQuantizedPass().apply(make_context(), ModuleOp([func]))
    (integer_conv,) = [op for op in func.body.block.ops if isinstance(op, nn.Conv2DOp)]
    assert integer_conv.output.type.element_type == i32  # type: ignore[attr-defined]
    (rescale,) = [op for op in func.body.block.ops if isinstance(op, quant.RescaleOp)]
    assert len(rescale.multiplier_values) == 4
    assert rescale.axis is not None
    assert rescale.axis.value.data == 3


# ---- More kernels: transposed convolution, uint8, other reductions -----------------------------


@pytest.mark.parametrize("act", ["none", "relu"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv2d_transpose(padding: str, act: str) -> None:
    shape, out_c, (kh, kw), (sh, sw) = (1, 4, 5, 3), 5, (3, 3), (2, 2)
    s_in, s_out, zp_in, zp_out = 0.05, 0.2, -6, 3
    s_w = list(rng.uniform(0.005, 0.02, out_c))
    x = random_q(shape)
    w = random_q((out_c, kh, kw, shape[3]))
    w[w == -128] = -127
    b = rng.integers(-2000, 2000, out_c).astype(np.int32)
    if padding == "SAME":
        oh, ow = shape[1] * sh, shape[2] * sw
    else:
        oh, ow = (shape[1] - 1) * sh + kh, (shape[2] - 1) * sw + kw
    total_h, total_w = (shape[1] - 1) * sh + kh - oh, (shape[2] - 1) * sw + kw - ow
    top, left = total_h // 2, total_w // 2
    bottom, right = total_h - top, total_w - left
    out_shape = (1, oh, ow, out_c)
    want = run_op(
        "TRANSPOSE_CONV",
        [
            T((4,), "int32", data=list(out_shape)),
            T(w.shape, "int8", [f32(s) for s in s_w], 0, 0, data=w),
            T(shape, "int8", f32(s_in), zp_in),
            T((out_c,), "int32", [f32(s_in) * f32(s) for s in s_w], 0, data=b),
        ],
        [T(out_shape, "int8", f32(s_out), zp_out)],
        (
            "TransposeConvOptions",
            {
                "padding": padding,
                "stride_h": sh,
                "stride_w": sw,
                "fused_activation_function": _ACT[act],
            },
        ),
        feed=[x],
        version=4,
    )[0]

    def build(add, args):
        weights = add(qconst(w, qtype("int8", s_w, 0, axis=0)))
        bias = add(nn.ConstantOp.from_array(b))
        return add(
            nn.Conv2DTransposeOp.make(
                args[0],
                weights,
                bias,
                strides=[sh, sw],
                pads=[top, left, bottom, right],
                layout="NHWC",
                activation=act,
                result_elements=qtype("int8", s_out, zp_out),
            )
        )

    got = lower_and_run([qtensor(shape, qtype("int8", s_in, zp_in))], build, [x])
    compare(f"conv2d_transpose[{padding}-{act}]", got, want)


def test_uint8_conv2d_with_filter_zero_point() -> None:
    """uint8 models quantize filters with a zero point; it is folded into an i16 constant."""
    shape, out_c = (1, 6, 6, 3), 4
    s_in, s_w, s_out = 0.02, 0.01, 0.1
    x = random_q(shape, "uint8")
    w = random_q((out_c, 3, 3, 3), "uint8")
    b = rng.integers(-3000, 3000, out_c).astype(np.int32)
    want = run_op(
        "CONV_2D",
        [
            T(shape, "uint8", f32(s_in), 128),
            T(w.shape, "uint8", f32(s_w), 120, data=w),
            T((out_c,), "int32", f32(s_in) * f32(s_w), 0, data=b),
        ],
        [T((1, 6, 6, out_c), "uint8", f32(s_out), 100)],
        ("Conv2DOptions", {"padding": "SAME", "stride_h": 1, "stride_w": 1}),
        feed=[x],
    )[0]

    def build(add, args):
        weights = add(qconst(w, qtype("uint8", s_w, 120)))
        bias = add(nn.ConstantOp.from_array(b))
        return add(
            nn.Conv2DOp.make(
                args[0],
                weights,
                bias,
                pads=[1, 1, 1, 1],
                layout="NHWC",
                result_elements=qtype("uint8", s_out, 100),
            )
        )

    def inspect(func: FuncOp) -> None:
        constants = [op for op in func.body.block.ops if isinstance(op, nn.ConstantOp)]
        elements = [op.output.type.element_type for op in constants]  # type: ignore[attr-defined]
        assert IntegerType(16) in elements  # w - 120, folded
        assert not any(isinstance(e, UniformQuantizedType) for e in elements)  # erased

    got = lower_and_run([qtensor(shape, qtype("uint8", s_in, 128))], build, [x], inspect)
    compare("uint8_conv2d", got, want)


def test_uint8_add() -> None:
    shape = (2, 9)
    a, b = random_q(shape, "uint8"), random_q(shape, "uint8")
    want = run_op(
        "ADD",
        [T(shape, "uint8", f32(0.03), 128), T(shape, "uint8", f32(0.05), 100)],
        [T(shape, "uint8", f32(0.07), 110)],
        ("AddOptions", {"fused_activation_function": "RELU6"}),
        feed=[a, b],
    )[0]

    def build(add, args):
        return add(
            nn.AddOp.make(*args, activation="relu6", result_elements=qtype("uint8", 0.07, 110))
        )

    types = [qtensor(shape, qtype("uint8", 0.03, 128)), qtensor(shape, qtype("uint8", 0.05, 100))]
    got = lower_and_run(types, build, [a, b])
    compare("uint8_add", got, want)


@pytest.mark.parametrize(
    ("op_name", "kind", "params"),
    [
        ("SUM", "sum", ((0.02, 5), (0.3, -3))),
        ("REDUCE_MAX", "max", ((0.05, -7), (0.05, -7))),
        ("REDUCE_MIN", "min", ((0.05, 9), (0.05, 9))),
    ],
)
def test_reduce(op_name: str, kind: str, params) -> None:
    """SUM is compared with TFLite's optimized kernel: the BUILTIN_REF int8 SUM reads int8
    data as uint8 (reduce.cc's reference QuantizedMeanOrSum call uses GetTensorData<uint8_t>
    for every 8-bit type), a TFLite bug rather than a semantics to follow."""
    (s_in, z_in), (s_out, z_out) = params
    shape, axes = (2, 5, 6), (2,)
    x = random_q(shape)
    want = run_op(
        op_name,
        [T(shape, "int8", f32(s_in), z_in), T((1,), "int32", data=list(axes))],
        [T((2, 5), "int8", f32(s_out), z_out)],
        ("ReducerOptions", {"keep_dims": False}),
        feed=[x],
        version=2,
        reference=op_name != "SUM",
    )[0]

    def build(add, args):
        return add(
            nn.ReduceOp.make(
                args[0], kind=kind, axes=list(axes), result_elements=qtype("int8", s_out, z_out)
            )
        )

    got = lower_and_run([qtensor(shape, qtype("int8", s_in, z_in))], build, [x])
    compare(f"reduce_{kind}", got, want)


# ---- Errors ------------------------------------------------------------------------------------


def _lower_one(op_builder: Callable[[Sequence[SSAValue]], Operation], arg_types) -> None:
    block = Block(arg_types=list(arg_types))
    op = op_builder(block.args)
    block.add_ops([op, ReturnOp(op.results[0])])
    func = FuncOp(
        "main", FunctionType.from_lists(list(arg_types), [op.results[0].type]), Region(block)
    )
    LowerQuantizedPass().apply(make_context(), ModuleOp([func]))


def test_error_fused_tanh_is_located() -> None:
    from irc.diagnostics import IrcDiagnosticError

    element = qtype("int8", 0.1)
    with pytest.raises(IrcDiagnosticError, match="fused activation 'tanh' has no quantized"):
        _lower_one(
            lambda args: nn.AddOp.make(*args, activation="tanh", result_elements=element),
            [qtensor((4,), element)] * 2,
        )


def test_error_mixed_storage() -> None:
    from irc.diagnostics import IrcDiagnosticError

    u8 = qtype("uint8", 0.1, 128)
    w = qconst(np.ones((2, 3), np.int8), qtype("int8", 0.1))

    def build(args):
        return nn.FullyConnectedOp.make(args[0], w.output, None, result_elements=u8)

    with pytest.raises(
        IrcDiagnosticError, match="weights storage i8 differs from input storage ui8"
    ):
        _lower_one(build, [qtensor((1, 3), u8)])


def test_report_inexact(capsys: pytest.CaptureFixture[str]) -> None:
    """Print the inexact-element counts gathered so far (visible with -s)."""
    with capsys.disabled():
        for key, (bad, total) in sorted(INEXACT.items()):
            if bad:
                print(f"\n  {key}: {bad}/{total} elements one step off")
