"""Reference kernels of the `nn` elementwise ops: arithmetic, activations, cast, comparisons,
logic and select.

Float math runs in the tensor's own precision except float16, which is computed in float32 and
rounded back once (as TFLite and onnxruntime do on CPUs without native half arithmetic).
Results have the result's element type. Domain errors follow IEEE (``log(0) = -inf``,
``sqrt(-1) = nan``) without numpy warnings. These kernels are registered for plain tensors
only (quantized arithmetic is expressed in integers by `lower-quantized` first), except
select, which picks stored integers of one quantized type.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.ir import Operation

from irc.dialects import nn
from irc.targets.reference.common import apply_float_activation, result_dtype
from irc.targets.reference.registry import Kernel, kernel

ArrayFn = Callable[[np.ndarray], np.ndarray]
BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _widen(x: np.ndarray) -> np.ndarray:
    """The array float math runs on: float16 widens to float32, others stay."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _finish(x: np.ndarray | np.generic, dtype: np.dtype) -> np.ndarray:
    """An array (never a numpy scalar) of the result dtype."""
    return np.asarray(x).astype(dtype, copy=False)


# ---- Binary ------------------------------------------------------------------------------------


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C, TFLite, ONNX); division by zero gives 0."""
    safe = np.where(b == 0, 1, b)
    quotient = (a - np.fmod(a, safe)) // safe
    return np.where(b == 0, 0, quotient)


def _binary(op: Operation, float_fn: BinaryFn, int_fn: BinaryFn | None = None) -> Kernel:
    """A broadcasting binary kernel with the op's fused activation (when it has one)."""
    out_dtype = result_dtype(op.results[0])
    is_int = out_dtype.kind in "iub"
    fn = int_fn if is_int and int_fn is not None else float_fn

    def run(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):
            y = np.asarray(fn(_widen(a), _widen(b)))
            y = apply_float_activation(op, y)
        return (_finish(y, out_dtype),)

    return run


@kernel(nn.AddOp)
def add(op: nn.AddOp) -> Kernel:
    return _binary(op, np.add)


@kernel(nn.SubOp)
def sub(op: nn.SubOp) -> Kernel:
    return _binary(op, np.subtract)


@kernel(nn.MulOp)
def mul(op: nn.MulOp) -> Kernel:
    return _binary(op, np.multiply)


@kernel(nn.DivOp)
def div(op: nn.DivOp) -> Kernel:
    return _binary(op, np.divide, _truncating_divide)


@kernel(nn.MaximumOp)
def maximum(op: nn.MaximumOp) -> Kernel:
    return _binary(op, np.maximum)


@kernel(nn.MinimumOp)
def minimum(op: nn.MinimumOp) -> Kernel:
    return _binary(op, np.minimum)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a ** b`, a negative base (-inf included) with a non-integral exponent NaN
    (docs/semantics.md): numpy's own float32 power gives +inf for `(-inf) ** 0.5` on its
    vectorised path and NaN on its scalar one."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out = np.power(a, b)
        if out.dtype.kind != "f":
            return out
        negative = np.less(a, 0) & np.not_equal(b, np.rint(b))
    return np.where(negative, np.asarray(np.nan, out.dtype), out)


@kernel(nn.PowOp)
def power(op: nn.PowOp) -> Kernel:
    return _binary(op, _power)


@kernel(nn.SquaredDifferenceOp)
def squared_difference(op: nn.SquaredDifferenceOp) -> Kernel:
    return _binary(op, lambda a, b: np.square(a - b))


@kernel(nn.PReluOp)
def prelu(op: nn.PReluOp) -> Kernel:
    out_dtype = result_dtype(op.output)

    def run(x: np.ndarray, slope: np.ndarray) -> tuple[np.ndarray, ...]:
        x, slope = _widen(x), _widen(slope)
        with np.errstate(all="ignore"):
            y = np.where(x >= 0, x, x * slope)  # the verifier keeps the slope from growing `x`
        return (_finish(y, out_dtype),)

    return run


# ---- Unary -------------------------------------------------------------------------------------


def _unary(op: Operation, fn: ArrayFn) -> Kernel:
    """An elementwise kernel computing `fn` in the compute dtype of the input."""
    out_dtype = result_dtype(op.results[0])

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):
            y = fn(_widen(x))
        return (_finish(y, out_dtype),)

    return run


def _typed(x: np.ndarray, value: float) -> np.generic:
    """A float constant in `x`'s precision (numpy would otherwise widen to float64)."""
    return x.dtype.type(value)


@kernel(nn.ReluOp)
def relu(op: nn.ReluOp) -> Kernel:
    # -0.0 stays -0.0 (as relu6/clip and the cpu/opencl targets: 1 / relu(-0.0) is -inf on
    # every target); NaN stays NaN
    return _unary(op, lambda x: np.where(x < 0, 0, x))


@kernel(nn.Relu6Op)
def relu6(op: nn.Relu6Op) -> Kernel:
    return _unary(op, lambda x: np.clip(x, 0, 6))


@kernel(nn.ClipOp)
def clip(op: nn.ClipOp) -> Kernel:
    low = None if op.min is None else op.min.value.data
    high = None if op.max is None else op.max.value.data

    def fn(x: np.ndarray) -> np.ndarray:
        # `x < lo ? lo : x > hi ? hi : x`, as np.clip and the cpu/opencl targets: NaN and
        # -0.0 stay (np.maximum(-0.0, 0.0) would give +0)
        if low is not None:
            x = np.where(x < low, _typed(x, low), x)
        if high is not None:
            x = np.where(x > high, _typed(x, high), x)
        return x

    return _unary(op, fn)


@kernel(nn.LeakyReluOp)
def leaky_relu(op: nn.LeakyReluOp) -> Kernel:
    alpha = op.alpha.value.data
    return _unary(op, lambda x: np.where(x >= 0, x, x * _typed(x, alpha)))


@kernel(nn.SigmoidOp)
def sigmoid(op: nn.SigmoidOp) -> Kernel:
    from scipy import special  # imported on first use: it costs ~0.3 s

    return _unary(op, special.expit)


@kernel(nn.TanhOp)
def tanh(op: nn.TanhOp) -> Kernel:
    return _unary(op, np.tanh)


@kernel(nn.HardSwishOp)
def hard_swish(op: nn.HardSwishOp) -> Kernel:
    # x * (clip / 6), not (x * clip) / 6: no overflow for |x| > FLT_MAX / 6 (onnxruntime agrees)
    return _unary(op, lambda x: x * (np.clip(x + 3, 0, 6) / 6))


@kernel(nn.HardSigmoidOp)
def hard_sigmoid(op: nn.HardSigmoidOp) -> Kernel:
    alpha, beta = op.alpha.value.data, op.beta.value.data
    return _unary(op, lambda x: np.clip(x * _typed(x, alpha) + _typed(x, beta), 0, 1))


GELU_TAIL = -10.0
"""Below it gelu is ``x * 0`` (-0.0; -inf gives NaN) on every target: above it both forms
are normal negative numbers (tanh form >= -1.2e-37, erf form >= -7.6e-23), so which of -0.0
and -tiny a target gives never hangs on the last ulp of its exp, tanh or erf
(docs/semantics.md)."""


def _gelu_exact(x: np.ndarray) -> np.ndarray:
    # 0.5 x (1 + erf(x / sqrt 2)) as TFLite's 0.5 x erfc(-x / sqrt 2): no cancellation for x < 0
    from scipy import special

    y = 0.5 * x * special.erfc(x * _typed(x, -1 / math.sqrt(2)))
    return np.where(x < GELU_TAIL, x * 0, y)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    # 0.5 x (1 + tanh(u)) as x / (1 + exp(-2u)): no cancellation where tanh(u) is near -1
    inner = _typed(x, 2 * math.sqrt(2 / math.pi)) * (x + _typed(x, 0.044715) * x * x * x)
    return np.where(x < GELU_TAIL, x * 0, x / (1 + np.exp(-inner)))


@kernel(nn.GeluOp)
def gelu(op: nn.GeluOp) -> Kernel:
    return _unary(op, _gelu_tanh if op.approximate.data == "tanh" else _gelu_exact)


@kernel(nn.ErfOp)
def erf(op: nn.ErfOp) -> Kernel:
    from scipy import special

    return _unary(op, special.erf)


@kernel(nn.ExpOp)
def exp(op: nn.ExpOp) -> Kernel:
    return _unary(op, np.exp)


@kernel(nn.LogOp)
def log(op: nn.LogOp) -> Kernel:
    return _unary(op, np.log)


@kernel(nn.SqrtOp)
def sqrt(op: nn.SqrtOp) -> Kernel:
    return _unary(op, np.sqrt)


@kernel(nn.RsqrtOp)
def rsqrt(op: nn.RsqrtOp) -> Kernel:
    return _unary(op, lambda x: 1 / np.sqrt(x))


@kernel(nn.AbsOp)
def absolute(op: nn.AbsOp) -> Kernel:
    return _unary(op, np.abs)


@kernel(nn.NegOp)
def negative(op: nn.NegOp) -> Kernel:
    return _unary(op, np.negative)


# ---- Cast --------------------------------------------------------------------------------------


def _float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Truncate toward zero; out-of-range values saturate and NaN becomes 0.

    C leaves out-of-range conversions undefined (TFLite, onnxruntime); saturating makes the
    reference deterministic on every machine.
    """
    info = np.iinfo(dtype)
    low, high = np.float64(info.min), np.float64(info.max)
    if int(high) > info.max:  # 2**63 - 1 rounds up in float64
        high = np.nextafter(high, 0)
    wide = np.trunc(x.astype(np.float64))
    wide = np.where(np.isnan(wide), 0, np.clip(wide, low, high))
    return wide.astype(dtype)


@kernel(nn.CastOp)
def cast(op: nn.CastOp) -> Kernel:
    out_dtype = result_dtype(op.output)

    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        x = np.asarray(x)
        if out_dtype == np.bool_:
            return (x != 0,)
        if x.dtype.kind == "f" and out_dtype.kind in "iu":
            return (_float_to_int(x, out_dtype),)
        with np.errstate(over="ignore"):  # float narrowing overflows to inf, as in C
            return (x.astype(out_dtype),)

    return run


# ---- Comparison, logic and select --------------------------------------------------------------

_COMPARISONS: dict[str, BinaryFn] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def _boolean(fn: BinaryFn) -> Kernel:
    def run(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.asarray(fn(a, b), np.bool_),)

    return run


@kernel(nn.CompareOp)
def compare(op: nn.CompareOp) -> Kernel:
    return _boolean(_COMPARISONS[op.kind.data])


@kernel(nn.LogicalAndOp)
def logical_and(op: nn.LogicalAndOp) -> Kernel:
    return _boolean(np.logical_and)


@kernel(nn.LogicalOrOp)
def logical_or(op: nn.LogicalOrOp) -> Kernel:
    return _boolean(np.logical_or)


@kernel(nn.LogicalXorOp)
def logical_xor(op: nn.LogicalXorOp) -> Kernel:
    return _boolean(np.logical_xor)


@kernel(nn.LogicalNotOp)
def logical_not(op: nn.LogicalNotOp) -> Kernel:
    def run(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.asarray(np.logical_not(x)),)

    return run


@kernel(nn.SelectOp, quantized=True)
def select(op: nn.SelectOp) -> Kernel:
    """Quantized operands share the result's type (the verifier says so): pick stored integers."""
    out_dtype = result_dtype(op.output)

    def run(
        condition: np.ndarray, on_true: np.ndarray, on_false: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        return (_finish(np.where(condition, on_true, on_false), out_dtype),)

    return run
