"""conv2d, fully_connected and batch_matmul: dot-product kernels with fused epilogues.

Priority per op: with `kernels=gpu` the gpu_kernels.py form (conv, fully_connected with a
constant filter); then the register-blocked conv_kernels.py form (conv groups 1 or
depthwise, fully_connected with a constant filter: several output pixels x `floatVW`
channels per work-item from a filter packed at lowering, PERF_NOTES.md's PoCL style); then
one work-item per output element. Dot products accumulate in float, with the reference's
sign of a zero sum (`_sum_start`); a tap in the padding adds `+0.0 * weight`, as the
reference's sum over the zero-padded input does.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.dialects.nn.base import get_bool, get_int, get_ints
from irc.targets.opencl.lowerings.epilogue import compose, prelude
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    _decompose,
    _dot_product,
    _gpu,
    _kernel,
    _numel,
    _one,
    _shape,
    _strides,
    _tiled,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program


def _sum_start(depthwise: bool, bias: str | None) -> str:
    """Where a dot product's float sum starts, for the reference's sign of a zero sum: a
    depthwise conv sums its products from the first (-0.0, the exact additive identity, when
    there is no bias; the bias otherwise: the same sign of zero as adding it last); a matrix
    product (every other conv, fully_connected) is BLAS's, from +0.0, the bias added last
    (`bias + 0.0f`), so never -0.0."""
    if depthwise:
        return bias or "-0.0f"
    return f"{bias} + 0.0f" if bias else "0.0f"


_PADDED_TAP = (
    "                for (int ic = 0; ic < {icg}; ++ic) acc += 0.0f * wp[ic];\n"
    "                continue;\n"
)
"""A tap in the padding adds its products with the padding's +0.0, as the reference's sum over
the zero-padded input does: +0.0 for a positive weight, which makes a sum of -0.0 products
+0.0, and NaN for an infinite one."""


@lowering(nn.Conv2DOp)
def conv2d_gpu(op: nn.Conv2DOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """`kernels=gpu`: gpu_kernels.py's conv, or None."""
    if program.kernel_style != "gpu":
        return None
    pre = prelude(op, epilogue)
    desc, props, act, out_shape = pre.desc, pre.props, pre.act, pre.out_shape
    gpu = _gpu(program, act)
    return _one(gpu.conv(op, _shape(op.input), _shape(op.filter), out_shape, props, desc))


@lowering(nn.Conv2DOp)
def conv2d(op: nn.Conv2DOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """The register-tiled conv (conv_kernels.py), else one work-item per output element."""
    pre = prelude(op, epilogue)
    desc, props, act, out_shape, n_out = pre.desc, pre.props, pre.act, pre.out_shape, pre.n_out
    n, h, w, c = _shape(op.input)
    oc, kh, kw, icg = _shape(op.filter)
    _, oh, ow, _ = out_shape
    sh, sw = get_ints(props, "strides")
    dh, dw = get_ints(props, "dilations")
    pt, pl = get_ints(props, "pads")[:2]
    groups = get_int(props, "groups")
    ocg = oc // groups
    has_bias = op.bias is not None
    depthwise = groups > 1 and groups == c
    tiled = _tiled(program, act).conv(op, (n, h, w, c), (oc, kh, kw, icg), out_shape, props, desc)
    if tiled is not None:
        return [tiled]
    body = (
        _decompose((n, oh, ow, oc), ["n", "oh", "ow", "oc"])
        + f"    const int g = oc / {ocg};\n"
        + f"    float acc = {_sum_start(depthwise, 'x2[oc]' if has_bias else None)};\n"
        + f"    for (int kh = 0; kh < {kh}; ++kh) {{\n"
        f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n"
        f"        for (int kw = 0; kw < {kw}; ++kw) {{\n"
        f"            const int iw = ow * {sw} - {pl} + kw * {dw};\n"
        f"            __global const REAL* wp = x1 + ((oc * {kh} + kh) * {kw} + kw) * {icg};\n"
        f"            if (ih < 0 || ih >= {h} || iw < 0 || iw >= {w}) {{\n"
        + _PADDED_TAP.format(icg=icg)
        + "            }\n"
        f"            __global const REAL* xp = x0 + ((n * {h} + ih) * {w} + iw) * {c}"
        f" + g * {icg};\n"
        + _dot_product("acc", "xp", "wp", icg)
        + "        }\n    }\n    float v = acc;\n"
        + compose(act)
        + "    y[gid] = v;\n"
    )
    inputs: list[SSAValue | str] = [op.input, op.filter]
    if op.bias is not None:
        inputs.append(op.bias)
    return [(program.kernel(_kernel(len(inputs), body), desc), inputs, [n_out])]


@lowering(nn.FullyConnectedOp)
def fully_connected_gpu(
    op: nn.FullyConnectedOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """`kernels=gpu` with a constant filter: gpu_kernels.py's GEMM, or None."""
    if program.kernel_style != "gpu":
        return None
    pre = prelude(op, epilogue)
    desc, act = pre.desc, pre.act
    gpu = _gpu(program, act)
    nout, k = _shape(op.weights)
    weights = op.weights.owner
    if not isinstance(weights, nn.ConstantOp) or not k:
        return None
    matrix = array_from_dense(weights.value).astype(np.float32).reshape(nout, k)
    rows = _numel(_shape(op.input)) // k
    return _one(gpu.gemm(op.input, matrix, op.bias, rows, desc))


@lowering(nn.FullyConnectedOp)
def fully_connected(
    op: nn.FullyConnectedOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """The register-tiled GEMM for a constant filter, else one work-item per output."""
    pre = prelude(op, epilogue)
    desc, act, n_out = pre.desc, pre.act, pre.n_out
    nout, k = _shape(op.weights)
    weights = op.weights.owner
    if isinstance(weights, nn.ConstantOp) and k:
        matrix = array_from_dense(weights.value).astype(np.float32).reshape(nout, k)
        rows = _numel(_shape(op.input)) // k
        tiled = _tiled(program, act).gemm(op.input, matrix, op.bias, rows, desc)
        if tiled is not None:
            return [tiled]
    body = (
        f"    const int m = gid / {nout}; const int o = gid % {nout};\n"
        + f"    float acc = {_sum_start(False, 'x2[o]' if op.bias is not None else None)};\n"
        + f"    __global const REAL* xp = x0 + m * {k};\n"
        f"    __global const REAL* wp = x1 + o * {k};\n"
        f"    for (int i = 0; i < {k}; ++i) acc += WIDEN(xp[i]) * wp[i];\n"
        "    float v = acc;\n" + compose(act) + "    y[gid] = v;\n"
    )
    inputs: list[SSAValue | str] = [op.input, op.weights]
    if op.bias is not None:
        inputs.append(op.bias)
    return [(program.kernel(_kernel(len(inputs), body), desc), inputs, [n_out])]


@lowering(nn.BatchMatmulOp)
def batch_matmul(
    op: nn.BatchMatmulOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """One work-item per output element (numpy broadcasting of the batch dimensions)."""
    pre = prelude(op, epilogue)
    desc, props, act, out_shape, n_out = pre.desc, pre.props, pre.act, pre.out_shape, pre.n_out
    a_shape, b_shape = _shape(op.lhs), _shape(op.rhs)
    adj_x, adj_y = get_bool(props, "adj_x"), get_bool(props, "adj_y")
    rank = len(out_shape)
    m_size, n_size = out_shape[-2], out_shape[-1]
    k_size = a_shape[-2] if adj_x else a_shape[-1]
    # element strides of (m, k) in lhs and (k, n) in rhs within one matrix
    sam, sak = (1, m_size) if adj_x else (k_size, 1)
    sbk, sbn = (1, k_size) if adj_y else (n_size, 1)
    bases = []
    for s in (a_shape, b_shape):
        padded = (1,) * (rank - len(s)) + s
        st = _strides(padded)
        terms = [f"c{d} * {st[d]}" for d in range(rank - 2) if padded[d] != 1]
        bases.append(" + ".join(terms) or "0")
    body = (
        _decompose(out_shape, [f"c{d}" for d in range(rank - 2)] + ["m", "n"])
        + f"    __global const REAL* ap = x0 + {bases[0]} + m * {sam};\n"
        + f"    __global const REAL* bp = x1 + {bases[1]} + n * {sbn};\n"
        + "    float acc = 0.0f;\n"
        + f"    for (int k = 0; k < {k_size}; ++k)"
        + f" acc += WIDEN(ap[k * {sak}]) * bp[k * {sbk}];\n"
        + "    float v = acc;\n"
        + compose(act)
        + "    y[gid] = v;\n"
    )
    return [(program.kernel(_kernel(2, body), desc), [op.lhs, op.rhs], [n_out])]
