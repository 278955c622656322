"""Reference kernels of the `nn` transformer ops: layer_norm, silu and attention.

Each computes in float64 and rounds once to the result type, so the reference is at least
as accurate as any target it checks (onnxruntime's LayerNormalization, Sigmoid * x and its
attention subgraph agree with it within float32 rounding; tests/test_transformer_ops.py).
"""

from __future__ import annotations

import numpy as np

from irc.dialects import nn
from irc.targets.reference.registry import Kernel, kernel, numpy_dtype


def layer_norm_array(
    x: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray | None,
    axis: int,
    epsilon: float,
) -> np.ndarray:
    """``(x - mean) / sqrt(var + epsilon) * scale + bias`` over dimensions `axis`.. of `x`,
    in float64."""
    wide = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = wide.mean(axis=axes, keepdims=True)
    centered = wide - mean
    variance = (centered * centered).mean(axis=axes, keepdims=True)
    y = centered / np.sqrt(variance + epsilon) * scale.astype(np.float64)
    return y if bias is None else y + bias.astype(np.float64)


def silu_array(x: np.ndarray) -> np.ndarray:
    """``x * sigmoid(x)`` in float64 (the sigmoid written to stay finite for any x)."""
    wide = x.astype(np.float64)
    return wide * (0.5 * (1.0 + np.tanh(0.5 * wide)))


def attention_array(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None,
    scale: float,
    key_transposed: bool,
) -> np.ndarray:
    """``softmax(scale * q @ k^T + mask, axis=-1) @ v`` in float64 (`k` is ``[..., D, Lk]``
    when `key_transposed`)."""
    kt = k.astype(np.float64) if key_transposed else np.swapaxes(k.astype(np.float64), -1, -2)
    scores = (q.astype(np.float64) @ kt) * scale
    if mask is not None:
        scores = scores + mask.astype(np.float64)
    peak = scores.max(axis=-1, keepdims=True)
    # A row masked everywhere with -inf has no finite peak: its exponentials are taken as is.
    peak = np.where(np.isfinite(peak), peak, 0.0)
    e = np.exp(scores - peak)
    return (e / e.sum(axis=-1, keepdims=True)) @ v.astype(np.float64)


@kernel(nn.LayerNormOp)
def layer_norm(op: nn.LayerNormOp) -> Kernel:
    dtype = numpy_dtype(op.output.type)
    axis = op.axis.value.data
    epsilon = op.epsilon.value.data

    def run(x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None = None) -> tuple:
        return (layer_norm_array(x, scale, bias, axis, epsilon).astype(dtype),)

    return run


@kernel(nn.SiluOp)
def silu(op: nn.SiluOp) -> Kernel:
    dtype = numpy_dtype(op.output.type)

    def run(x: np.ndarray) -> tuple:
        return (silu_array(x).astype(dtype),)

    return run


@kernel(nn.AttentionOp)
def attention(op: nn.AttentionOp) -> Kernel:
    dtype = numpy_dtype(op.output.type)
    scale = op.scale.value.data
    key_transposed = bool(op.key_transposed.value.data)

    def run(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None) -> tuple:
        return (attention_array(q, k, v, mask, scale, key_transposed).astype(dtype),)

    return run
