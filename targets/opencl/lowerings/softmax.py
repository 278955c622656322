"""softmax and log_softmax, float accumulation (`softmax_shift` keeps `z - max` exact).

Priority for softmax: `kernels=gpu` with the last axis (gpu_kernels.py, a work-group per
row); any other axis or a negative beta (one work-item per row, stride `inner`); the
last-axis kernel (one work-item per row).
"""

from __future__ import annotations

from xdsl.ir import Operation

from irc.dialects import nn
from irc.dialects.nn.base import get_float, get_int
from irc.targets.opencl.lowerings.epilogue import prelude, properties_of
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    KernelRun,
    _describe,
    _f,
    _gpu,
    _kernel,
    _numel,
    _one,
    _shape,
    nan_max_update,
    softmax_shift,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program


@lowering(nn.SoftmaxOp)
def softmax_gpu(op: nn.SoftmaxOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """`kernels=gpu` over the last axis: gpu_kernels.py's softmax, or None."""
    if program.kernel_style != "gpu":
        return None
    pre = prelude(op, epilogue)
    desc, props, act = pre.desc, pre.props, pre.act
    gpu = _gpu(program, act)
    shape = _shape(op.input)
    if op.axis.value.data % max(len(shape), 1) != len(shape) - 1:
        return None
    beta = get_float(props, "beta")
    z = "WIDEN(xp[i])" if beta is None or beta == 1.0 else f"{_f(beta)} * WIDEN(xp[i])"
    return _one(gpu.softmax(op, shape, z, softmax_shift(z), desc))


def _softmax(op: Operation, program: Program, desc: str, log: bool) -> KernelRun:
    """One work-item per (outer, inner) row along `axis`, stride `inner`:
    `z = beta * x`, `e = exp(z - max z)`, then `e / sum e` or `z - max z - log(sum e)`."""
    shape = _shape(op.operands[0])
    props = properties_of(op)
    axis = get_int(props, "axis") % len(shape)
    size, inner = shape[axis], _numel(shape[axis + 1 :])
    rows = _numel(shape) // size if size else 0
    beta = get_float(props, "beta") if not log else None
    z = "WIDEN(xp[i * INNER])"
    z = z if beta is None or beta == 1.0 else f"{_f(beta)} * {z}"
    z = z.replace("INNER", str(inner))
    body = (
        f"    const int base = (gid / {inner}) * {size * inner} + gid % {inner};\n"
        "    __global const REAL* xp = x0 + base;\n"
        "    __global REAL* yp = y + base;\n"
        "    float m = -INFINITY;\n"
        f"    for (int i = 0; i < {size}; ++i) {{ const float xv = {z};"
        f" m = {nan_max_update('m')}; }}\n"
        "    float s = 0.0f;\n"
    )
    if log:
        body += (
            f"    for (int i = 0; i < {size}; ++i) s += exp({softmax_shift(z)});\n"
            "    const float lse = log(s);\n"
            f"    for (int i = 0; i < {size}; ++i) yp[i * {inner}] = {softmax_shift(z)} - lse;\n"
        )
    else:
        body += (
            f"    for (int i = 0; i < {size}; ++i) {{ const float e = exp({softmax_shift(z)});"
            f" yp[i * {inner}] = e; s += e; }}\n"
            "    const float inv = 1.0f / s;\n"
            f"    for (int i = 0; i < {size}; ++i) yp[i * {inner}] *= inv;\n"
        )
    return program.kernel(_kernel(1, body), desc), [op.operands[0]], [rows]


@lowering(nn.SoftmaxOp)
def softmax_any_axis(
    op: nn.SoftmaxOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """Another axis than the last, or a negative beta; else None."""
    rank = len(_shape(op.input))
    beta = get_float(op.all_properties(), "beta")
    if op.axis.value.data % rank != rank - 1 or (beta is not None and beta < 0):
        return [_softmax(op, program, _describe(op), log=False)]
    return None


@lowering(nn.SoftmaxOp)
def softmax(op: nn.SoftmaxOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """Over the last axis: one work-item per row."""
    pre = prelude(op, epilogue)
    desc, props = pre.desc, pre.props
    shape = _shape(op.input)
    cols = shape[-1]
    rows = _numel(shape) // cols
    beta = get_float(props, "beta")
    z = "WIDEN(xp[i])" if beta is None or beta == 1.0 else f"{_f(beta)} * WIDEN(xp[i])"
    body = (
        f"    __global const REAL* xp = x0 + gid * {cols};\n"
        f"    __global REAL* yp = y + gid * {cols};\n"
        "    float m = -INFINITY;\n"
        f"    for (int i = 0; i < {cols}; ++i) {{ const float xv = {z};"
        f" m = {nan_max_update('m')}; }}\n"
        "    float s = 0.0f;\n"
        f"    for (int i = 0; i < {cols}; ++i) {{ const float e = exp({softmax_shift(z)});"
        " yp[i] = e; s += e; }\n"
        "    const float inv = 1.0f / s;\n"
        f"    for (int i = 0; i < {cols}; ++i) yp[i] *= inv;\n"
    )
    return [(program.kernel(_kernel(1, body), desc), [op.input], [rows])]


@lowering(nn.LogSoftmaxOp)
def log_softmax(op: nn.LogSoftmaxOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per row along the axis."""
    return [_softmax(op, program, _describe(op), log=True)]
