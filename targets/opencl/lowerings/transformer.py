"""layer_norm, silu and scaled dot-product attention (the `nn` transformer ops).

Float accumulation in every precision (`WIDEN` / `NARROW`, program.py). Priority per op:
the `kernels=gpu` form (a work-group per row, reductions in local memory), then the
`cpu` form (PERF_NOTES.md's PoCL style: few heavy work-items, `floatN` registers, no
vload/vstore builtins, no 512-bit vector passed to a builtin).

- layer_norm: the mean, then the (biased) variance of the centred row, as the reference;
  `cpu`: one work-item per row on `floatVW` lanes.
- silu and gelu: ``x / (1 + exp(-x))``; gelu's erf form from a polynomial erfc, its tanh
  form from exp; `float8` blocks per work-item (elementwise.py's one-element gelu takes
  sizes that are not a multiple of 8).
- attention: ``softmax(scale * q k^T + mask) v`` with the reference's softmax semantics
  (docs/semantics.md): a NaN or +inf score makes its row NaN, a row of -inf scores is NaN.
  The masked score ``scale * q.k + mask`` is one float: a finfo.min (or -1e30) mask absorbs
  the score as the float64 reference's sum does, so a row masked everywhere gets equal
  weights, as in the reference and onnxruntime. `cpu`: one work-item per `R` query rows of
  one batch, keys in blocks of 8 (`float8` scores) with an online softmax (the running
  maximum `m`, sum `l` and `R x E` accumulators rescaled when `m` grows), so no score row is
  stored; `gpu`: one work-group per query row, its scores in local memory.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.targets.opencl.gpu_kernels import required_group
from irc.targets.opencl.lowerings.helpers import (
    Emitted,
    _describe,
    _f,
    _kernel,
    _numel,
    _shape,
    _strides,
    nan_max_update,
)
from irc.targets.opencl.lowerings.registry import lowering
from irc.targets.opencl.program import Program

VECTOR_WIDTHS = (16, 8, 4, 2)
"""`floatN` widths tried for a row's elements (the widest dividing its length)."""

KEY_BLOCK = 8
"""Keys per block of the `cpu` attention (`float8` scores: 256 bits, no ABI note on AVX2)."""

ATTENTION_ROWS = 4
"""Query rows per work-item of the `cpu` attention (its accumulators: `R x E` floats)."""

MAX_ACCUMULATORS = 256
"""Most accumulator floats (`R x E`) a `cpu` attention work-item keeps: fewer rows for a
wide value."""

GPU_MAX_KEYS = 4096
"""Longest key sequence of the `gpu` attention (its scores live in local memory)."""

EXP_FLOOR = -87.0
"""exp() below this is 0 (no denormal weight: a product with one runs ~100x slower on a
CPU); the reference's exp(-87) is 1.6e-38 of the row's largest weight."""


def _width(n: int) -> int:
    """The widest `VECTOR_WIDTHS` dividing `n`, else 1."""
    return next((w for w in VECTOR_WIDTHS if n % w == 0), 1)


def _vec(ctype: str, width: int) -> str:
    return ctype if width == 1 else f"{ctype}{width}"


def _lane_sum(v: str, width: int) -> str:
    """The sum of the lanes of a `float<width>` expression `v` (pairwise halves)."""
    if width == 1:
        return v
    lanes = [f"{v}.s{i:x}" for i in range(width)]
    while len(lanes) > 1:
        lanes = [f"({lanes[i]} + {lanes[i + 1]})" for i in range(0, len(lanes), 2)]
    return lanes[0]


def _group(n: int) -> int:
    """The work-group size of a row reduction over `n` elements."""
    return 64 if n <= 64 else 128 if n <= 1024 else 256


def _reduce(group: int, update: str) -> str:
    """Tree reduction of `red[0:group]` into `red[0]` with `update` of `acc` (`red[lid]`)
    and `xv` (`red[lid + stride]`); ends with a barrier."""
    return (
        "    red[lid] = acc; barrier(CLK_LOCAL_MEM_FENCE);\n"
        f"    for (int stride = {group // 2}; stride > 0; stride >>= 1) {{\n"
        "        if (lid < stride) { const float xv = red[lid + stride]; const float acc ="
        f" red[lid]; red[lid] = {update}; }}\n"
        "        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n"
    )


def _gpu_kernel(n_in: int, body: str, group: int) -> str:
    text = _kernel(n_in, body)
    return text.replace("__kernel void", f"__kernel {required_group(group)} void", 1)


# ---- layer_norm ----------------------------------------------------------------------------------


def _layer_norm_rows(op: nn.LayerNormOp) -> tuple[int, int]:
    shape = _shape(op.input)
    axis = op.axis.value.data % len(shape) if shape else 0
    return _numel(shape[:axis]), _numel(shape[axis:])


def _layer_norm_inputs(op: nn.LayerNormOp) -> list[SSAValue | str]:
    inputs: list[SSAValue | str] = [op.input, op.scale]
    if op.bias is not None:
        inputs.append(op.bias)
    return inputs


@lowering(nn.LayerNormOp)
def layer_norm_gpu(
    op: nn.LayerNormOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """`kernels=gpu`: one work-group per row, sums reduced in local memory; else None."""
    if program.kernel_style != "gpu":
        return None
    rows, n = _layer_norm_rows(op)
    group = _group(n)
    eps = _f(op.epsilon.value.data)
    bias = " + WIDEN(x2[i])" if op.bias is not None else ""
    body = (
        "    const int lid = get_local_id(0); const int row = get_group_id(0);\n"
        f"    __global const REAL* xp = x0 + row * {n};\n"
        f"    __global REAL* yp = y + row * {n};\n"
        f"    __local float red[{group}];\n"
        "    float acc = 0.0f;\n"
        f"    for (int i = lid; i < {n}; i += {group}) acc += WIDEN(xp[i]);\n"
        + _reduce(group, "acc + xv")
        + f"    const float mean = red[0] / {_f(n)};\n"
        "    barrier(CLK_LOCAL_MEM_FENCE);\n"
        "    acc = 0.0f;\n"
        f"    for (int i = lid; i < {n}; i += {group}) {{ const float c = WIDEN(xp[i]) - mean;"
        " acc += c * c; }\n"
        + _reduce(group, "acc + xv")
        + f"    const float inv = 1.0f / sqrt(red[0] / {_f(n)} + {eps});\n"
        f"    for (int i = lid; i < {n}; i += {group})\n"
        f"        yp[i] = NARROW((WIDEN(xp[i]) - mean) * inv * WIDEN(x1[i]){bias});\n"
    )
    inputs = _layer_norm_inputs(op)
    desc = _describe(op) + " (gpu) [one work-group per row]"
    name = program.kernel(_gpu_kernel(len(inputs), body, group), desc)
    return [(name, inputs, [rows * group])]


@lowering(nn.LayerNormOp)
def layer_norm(op: nn.LayerNormOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per row, on `floatVW` lanes when the row length allows."""
    rows, n = _layer_norm_rows(op)
    vw = _width(n)
    count = n // vw
    vec, real = _vec("float", vw), _vec("REAL", vw)
    eps = _f(op.epsilon.value.data)
    load = f"WIDEN{vw if vw > 1 else ''}(xr[i])"
    bias = f" + WIDEN{vw if vw > 1 else ''}(br[i])" if op.bias is not None else ""
    zero = f"({vec})(0.0f)"
    body = (
        f"    __global const {real}* xr = (__global const {real}*)(x0 + gid * {n});\n"
        f"    __global const {real}* gr = (__global const {real}*)x1;\n"
        + (f"    __global const {real}* br = (__global const {real}*)x2;\n" if bias else "")
        + f"    __global {real}* yr = (__global {real}*)(y + gid * {n});\n"
        f"    {vec} acc = {zero};\n"
        f"    for (int i = 0; i < {count}; ++i) acc += {load};\n"
        f"    const float mean = {_lane_sum('acc', vw)} / {_f(n)};\n"
        f"    {vec} sq = {zero};\n"
        f"    for (int i = 0; i < {count}; ++i) {{ const {vec} c = {load} - mean; sq += c * c; }}\n"
        f"    const float inv = 1.0f / sqrt({_lane_sum('sq', vw)} / {_f(n)} + {eps});\n"
        f"    for (int i = 0; i < {count}; ++i)\n"
        f"        yr[i] = NARROW{vw if vw > 1 else ''}(({load} - mean) * inv"
        f" * WIDEN{vw if vw > 1 else ''}(gr[i]){bias});\n"
    )
    inputs = _layer_norm_inputs(op)
    desc = _describe(op) + (f" [x{vw} lanes]" if vw > 1 else "")
    return [(program.kernel(_kernel(len(inputs), body), desc), inputs, [rows])]


# ---- silu, gelu ----------------------------------------------------------------------------------

ELEMENT_BLOCK = 8
"""Elements per work-item of silu and gelu (`float8`: PoCL runs a `float8` exp as one vector
call; the scalar builtins of one-element work-items are not vectorised across work-items:
gelu's scalar erf took 52 ms where this takes 0.7 ms for 393 K floats)."""

SQRT1_2 = 0.7071067811865476
SQRT_2_OVER_PI = 0.7978845608028654


def _elementwise_vectors(op: Operation, program: Program, expr: str, desc: str) -> Emitted | None:
    """`y = expr(v)` on `float8` blocks (`v`), or None when the size is not a multiple of 8
    or the op has a fused epilogue."""
    n = _numel(_shape(op.results[0]))
    if n % ELEMENT_BLOCK or not n:
        return None
    body = (
        "    const float8 v = WIDEN8(((__global const REAL8*)x0)[gid]);\n"
        f"    ((__global REAL8*)y)[gid] = NARROW8({expr});\n"
    )
    kernel = program.kernel(_kernel(1, body), desc + " [x8 per item]")
    return [(kernel, [op.operands[0]], [n // ELEMENT_BLOCK])]


GELU_TAIL = -10.0
"""gelu is ``x * 0`` below it (-0.0; -inf gives NaN), as the reference (its `GELU_TAIL`)."""

GELU_TANH = (
    f"v < {_f(GELU_TAIL)} ? v * 0.0f"
    f" : v / (1.0f + exp(-{_f(2.0 * SQRT_2_OVER_PI)} * (v + 0.044715f * v * v * v)))"
)
"""gelu's tanh form of `v` as ``v / (1 + exp(-2u))``: no cancellation where tanh(u) is near -1
(-inf gives NaN, +inf +inf, as the reference)."""


def _gelu_erf_body() -> str:
    """gelu's erf form on a `float8` block, as the reference's ``0.5 x erfc(-x / sqrt 2)``:
    ``0.5 (1 + erf(z))`` is ``1 - q/2`` or ``q/2`` with ``q = erfc(|z|)`` from Numerical
    Recipes' erfcc (relative error < 1.2e-7), so negative inputs lose nothing to cancellation;
    q is 0 where z^2 > 80 (its exp would near denormals), and below x = -10 the result is
    ``x * 0``. NaN gives NaN, -inf NaN (``-inf * 0``), +inf +inf, as the reference."""
    return (
        "    const float8 v = WIDEN8(((__global const REAL8*)x0)[gid]);\n"
        f"    const float8 z = v * {_f(SQRT1_2)};\n"
        "    const float8 a = z < 0.0f ? -z : z;\n"
        "    const float8 t = 1.0f / (1.0f + 0.5f * a);\n"
        "    float8 p = 0.17087277f * t - 0.82215223f;\n"
        "    p = p * t + 1.48851587f;\n"
        "    p = p * t - 1.13520398f;\n"
        "    p = p * t + 0.27886807f;\n"
        "    p = p * t - 0.18628806f;\n"
        "    p = p * t + 0.09678418f;\n"
        "    p = p * t + 0.37409196f;\n"
        "    p = p * t + 1.00002368f;\n"
        "    const float8 s = a * a;\n"
        "    const float8 q = s > 80.0f ? (float8)(0.0f)"
        " : t * exp(s > 80.0f ? (float8)(-87.0f) : p * t - 1.26551223f - s);\n"
        "    const float8 g = v * (z < 0.0f ? 0.5f * q : 1.0f - 0.5f * q);\n"
        f"    ((__global REAL8*)y)[gid] = NARROW8(v < {_f(GELU_TAIL)} ? v * 0.0f : g);\n"
    )


@lowering(nn.SiluOp)
def silu_vectors(op: nn.SiluOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """`float8` blocks, or None (a size that is not a multiple of 8)."""
    return _elementwise_vectors(op, program, "v / (1.0f + exp(-v))", _describe(op))


@lowering(nn.SiluOp)
def silu(op: nn.SiluOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """One work-item per element."""
    body = "    const float v = WIDEN(x0[gid]);\n    y[gid] = NARROW(v / (1.0f + exp(-v)));\n"
    kernel = program.kernel(_kernel(1, body), _describe(op))
    return [(kernel, [op.input], [_numel(_shape(op.output))])]


@lowering(nn.GeluOp)
def gelu_vectors(op: nn.GeluOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """`float8` blocks of a float gelu without a fused epilogue (this module is imported
    before elementwise.py, whose one-element gelu takes the rest), or None."""
    n = _numel(_shape(op.output))
    if epilogue or n % ELEMENT_BLOCK or not n:
        return None
    if op.approximate.data == "tanh":
        return _elementwise_vectors(op, program, GELU_TANH, _describe(op))
    kernel = program.kernel(_kernel(1, _gelu_erf_body()), _describe(op) + " [x8 per item]")
    return [(kernel, [op.input], [n // ELEMENT_BLOCK])]


# ---- attention -----------------------------------------------------------------------------------


class _Attention:
    """The shapes and index expressions of one `nn.attention`."""

    def __init__(self, op: nn.AttentionOp) -> None:
        q, v = _shape(op.query), _shape(op.value)
        self.batch = q[:-2]
        self.b = _numel(self.batch)
        self.m, self.d = q[-2], q[-1]
        self.n, self.e = v[-2], v[-1]
        self.key_t = bool(op.key_transposed.value.data)
        self.scale = op.scale.value.data
        self.has_mask = op.mask is not None
        self.msm = self.msn = 0
        self.mask_batch: list[int] = [0] * len(self.batch)
        if op.mask is not None:
            scores = (*self.batch, self.m, self.n)
            mask = _shape(op.mask)
            padded = (1,) * (len(scores) - len(mask)) + mask
            strides = [s if p != 1 else 0 for s, p in zip(_strides(padded), padded, strict=True)]
            self.mask_batch = strides[:-2]
            self.msm, self.msn = strides[-2], strides[-1]
        inputs: list[SSAValue | str] = [op.query, op.key, op.value]
        if op.mask is not None:
            inputs.append(op.mask)
        self.inputs = inputs

    def mask_offset(self, b: str) -> str:
        """The C expression of the mask's offset for batch index `b` (flattened)."""
        terms = []
        inner = 1
        for size, stride in reversed(list(zip(self.batch, self.mask_batch, strict=True))):
            if stride and size > 1:
                terms.append(f"(({b} / {inner}) % {size}) * {stride}")
            inner *= size
        return " + ".join(terms) or "0"

    def key(self, d: str, n: str) -> str:
        """Element (`d`, key `n`) of this batch's keys `kb`."""
        return f"kb[{d} * {self.n} + {n}]" if self.key_t else f"kb[{n} * {self.d} + {d}]"


def _nan_max(a: str, b: str, width: int = 1) -> str:
    """NaN-propagating maximum of `float<width>` expressions `a` (new) and `b` (running),
    lane by lane; NaN tested on the bits (PoCL makes isnan() a call: 2.6x slower attention)."""
    uint = "as_uint" if width == 1 else f"as_uint{width}"
    return f"({a} > {b} || ({uint}({a}) & 0x7fffffffu) > 0x7f800000u ? {a} : {b})"


@lowering(nn.AttentionOp)
def attention_gpu(
    op: nn.AttentionOp, epilogue: list[Operation], program: Program
) -> Emitted | None:
    """`kernels=gpu`: one work-group per query row (scores in local memory); else None."""
    at = _Attention(op)
    if program.kernel_style != "gpu" or at.n > GPU_MAX_KEYS:
        return None
    group = _group(max(at.n, at.e))
    n, d, e = at.n, at.d, at.e
    lines = [
        "    const int lid = get_local_id(0); const int row = get_group_id(0);\n",
        f"    const int b = row / {at.m}; const int m = row % {at.m};\n",
        f"    __global const REAL* qp = x0 + row * {d};\n",
        f"    __global const REAL* kb = x1 + b * {n * d};\n",
        f"    __global const REAL* vb = x2 + b * {n * e};\n",
        f"    __local float sc[{max(n, 1)}];\n",
        f"    __local float red[{group}];\n",
        "    float acc;\n",
    ]
    if at.has_mask:
        lines.append(f"    __global const REAL* mr = x3 + {at.mask_offset('b')} + m * {at.msm};\n")
    mask_term = f" + WIDEN(mr[j * {at.msn}])" if at.has_mask else ""
    lines += [
        "    acc = -INFINITY;\n",
        f"    for (int j = lid; j < {n}; j += {group}) {{\n",
        "        float dot = 0.0f;\n",
        f"        for (int k = 0; k < {d}; ++k) dot += WIDEN(qp[k]) * WIDEN({at.key('k', 'j')});\n",
        f"        const float xv = dot * {_f(at.scale)}{mask_term};\n",
        f"        sc[j] = xv; acc = {nan_max_update()};\n",
        "    }\n",
        _reduce(group, nan_max_update()),
        "    const float mx = red[0];\n",
        "    barrier(CLK_LOCAL_MEM_FENCE);\n",
        "    acc = 0.0f;\n",
        f"    for (int j = lid; j < {n}; j += {group}) {{\n",
        "        const float z = sc[j] - mx;\n",
        f"        const float p = mx == -INFINITY || z < {_f(EXP_FLOOR)} ? 0.0f : exp(z);\n",
        "        sc[j] = p; acc += p;\n",
        "    }\n",
        _reduce(group, "acc + xv"),
        "    const float inv = 1.0f / red[0];\n",
        f"    for (int i = lid; i < {e}; i += {group}) {{\n",
        "        float o = 0.0f;\n",
        f"        for (int j = 0; j < {n}; ++j) o += sc[j] * WIDEN(vb[j * {e} + i]);\n",
        f"        y[row * {e} + i] = NARROW(o * inv);\n",
        "    }\n",
    ]
    desc = _describe(op) + " (gpu) [one work-group per query row]"
    name = program.kernel(_gpu_kernel(len(at.inputs), "".join(lines), group), desc)
    return [(name, at.inputs, [at.b * at.m * group])]


def _attention_rows(m: int, e: int) -> int:
    """Query rows per work-item: `ATTENTION_ROWS`, fewer for few rows or a wide value."""
    return max(1, min(ATTENTION_ROWS, m, MAX_ACCUMULATORS // max(e, 1)))


@lowering(nn.AttentionOp)
def attention(op: nn.AttentionOp, epilogue: list[Operation], program: Program) -> Emitted | None:
    """`R` query rows per work-item, keys in blocks of `KEY_BLOCK`, online softmax."""
    at = _Attention(op)
    n, d, e, kb = at.n, at.d, at.e, KEY_BLOCK
    rows = _attention_rows(at.m, e)
    blocks = -(-at.m // rows)
    padded = blocks * rows > at.m
    ev = _width(e)
    ne = e // ev
    evec, ereal = _vec("float", ev), _vec("REAL", ev)
    widen_e = f"WIDEN{ev if ev > 1 else ''}"
    tail = n % kb != 0
    lanes = range(kb)
    lines = [
        f"    const int b = gid / {blocks}; const int m0 = (gid % {blocks}) * {rows};\n",
        f"    __global const REAL* qb = x0 + b * {at.m * d};\n",
        f"    __global const REAL* kb = x1 + b * {n * d};\n",
        f"    __global const {ereal}* vb = (__global const {ereal}*)(x2 + b * {n * e});\n",
        f"    __global {ereal}* yb = (__global {ereal}*)(y + b * {at.m * e});\n",
    ]
    if at.has_mask:
        lines.append(f"    __global const REAL* mb = x3 + {at.mask_offset('b')};\n")
    for r in range(rows):
        row = f"min(m0 + {r}, {at.m - 1})" if padded else f"m0 + {r}"
        lines.append(f"    __global const REAL* q{r} = qb + ({row}) * {d};\n")
        if at.has_mask:
            lines.append(f"    __global const REAL* mr{r} = mb + ({row}) * {at.msm};\n")
        lines.append(f"    float mx{r} = -INFINITY, l{r} = 0.0f;\n")
        for v in range(ne):
            lines.append(f"    {evec} acc{r}_{v} = ({evec})(0.0f);\n")
    lane_index = "(int8)(0, 1, 2, 3, 4, 5, 6, 7)"
    lines.append(f"    for (int n0 = 0; n0 < {n}; n0 += {kb}) {{\n")
    for r in range(rows):
        lines.append(f"        float8 s{r} = (float8)(0.0f);\n")
    # scores: s_r[j] = q_r . k_{n0 + j}
    lines.append(f"        for (int k = 0; k < {d}; ++k) {{\n")
    if at.key_t and not tail:
        lines.append(
            "            const float8 kv ="
            f" WIDEN8(((__global const REAL8*)(kb + k * {n} + n0))[0]);\n"
        )
    else:
        keys = ", ".join(
            f"WIDEN({at.key('k', f'min(n0 + {j}, {n - 1})' if tail else f'n0 + {j}')})"
            for j in lanes
        )
        lines.append(f"            const float8 kv = (float8)({keys});\n")
    for r in range(rows):
        lines.append(f"            s{r} += WIDEN(q{r}[k]) * kv;\n")
    lines.append("        }\n")
    for r in range(rows):
        scaled = f"s{r} * {_f(at.scale)}"
        if at.has_mask:
            if (
                at.msn == 1
                and not tail
                and at.msm % kb == 0
                and all(s % kb == 0 for s in at.mask_batch)
            ):
                mask = f"WIDEN8(((__global const REAL8*)(mr{r} + n0))[0])"
            else:
                mask = (
                    "(float8)("
                    + ", ".join(
                        f"WIDEN(mr{r}[{f'min(n0 + {j}, {n - 1})' if tail else f'n0 + {j}'}"
                        f" * {at.msn}])"
                        for j in lanes
                    )
                    + ")"
                )
            scaled += f" + {mask}"
        lines.append(f"        s{r} = {scaled};\n")
        if tail:
            lines.append(f"        s{r} = n0 + {lane_index} < {n} ? s{r} : (float8)(-INFINITY);\n")
        # block maximum, running maximum, rescale factor, weights
        # block maximum: halves of the float8, NaN-propagating lane by lane
        lines += [
            f"        const float4 h{r} = {_nan_max(f's{r}.lo', f's{r}.hi', 4)};\n",
            f"        const float2 g{r} = {_nan_max(f'h{r}.lo', f'h{r}.hi', 2)};\n",
            f"        const float bm{r} = {_nan_max(f'g{r}.x', f'g{r}.y')};\n",
        ]
        lines += [
            f"        const float nm{r} = {_nan_max(f'bm{r}', f'mx{r}')};\n",
            f"        const float corr{r} = nm{r} == mx{r} ? 1.0f : exp(mx{r} - nm{r});\n",
            f"        mx{r} = nm{r};\n",
            f"        const float8 z{r} = s{r} - nm{r};\n",
            f"        const float8 p{r} = nm{r} == -INFINITY ? (float8)(0.0f) :"
            f" (z{r} < {_f(EXP_FLOOR)} ? (float8)(0.0f)"
            f" : exp(z{r} < {_f(EXP_FLOOR)} ? (float8)({_f(EXP_FLOOR)}) : z{r}));\n",
            f"        l{r} = l{r} * corr{r} + {_lane_sum(f'p{r}', kb)};\n",
        ]
        for v in range(ne):
            lines.append(f"        acc{r}_{v} *= corr{r};\n")
    # weighted values
    for j in lanes:
        indent = "        "
        if tail:
            lines.append(f"        if (n0 + {j} < {n}) {{\n")
            indent += "    "
        lines.append(f"{indent}__global const {ereal}* vr{j} = vb + (n0 + {j}) * {ne};\n")
        for v in range(ne):
            lines.append(f"{indent}{{ const {evec} w = {widen_e}(vr{j}[{v}]);")
            lines.append("".join(f" acc{r}_{v} += p{r}.s{j} * w;" for r in range(rows)))
            lines.append(" }\n")
        if tail:
            lines.append("        }\n")
    lines.append("    }\n")
    narrow = f"NARROW{ev if ev > 1 else ''}"
    for r in range(rows):
        lines.append(f"    if (m0 + {r} < {at.m}) {{\n" if padded else "    {\n")
        lines.append(f"        const float inv = 1.0f / l{r};\n")
        for v in range(ne):
            lines.append(f"        yb[(m0 + {r}) * {ne} + {v}] = {narrow}(acc{r}_{v} * inv);\n")
        lines.append("    }\n")
    desc = _describe(op) + f" [{rows} rows x {kb} keys per step]"
    name = program.kernel(_kernel(len(at.inputs), "".join(lines)), desc)
    return [(name, at.inputs, [at.b * blocks])]
