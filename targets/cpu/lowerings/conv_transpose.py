"""`nn.conv2d_transpose` on the CPU target: float32 and the exact integer form.

The kernel is a gather: every output pixel `(n, oy, ox)` sums the input pixels that scatter
into it, `x[n, h, w, :] @ W[:, i, j, :]` for the kernel taps with
``h * stride + i * dilation - pad_begin == oy`` (the reference's definition,
`targets/reference/conv.py::conv2d_transpose`). The taps hitting a row (and a column) are
computed arithmetically once per row (column): the tap range that keeps the input index in
bounds, its first tap congruent to the output index modulo the stride, then every
``stride / gcd(stride, dilation)``-th tap, so no tap is tested per pixel. Output cells that
no tap reaches (`output_padding`) receive only the bias.

The generated C is a loop nest with literal bounds, emitted inline for each op (so gcc
knows every size), with GCC vector extensions for predictable code. Filters are packed as
``[G][KH][KW][Cg][OCp]``, OCp = OCg rounded up to whole vectors of 16 lanes (8 or 4 for
few channels), at compile time when constant, by a strided copy at run time when not.
Output rows are split across OpenMP threads when the op has enough work. In a row, the
output columns of one phase modulo the stride (``ox = p + t * stride``) share their kernel
columns, and in the phase's interior every tap of them is in range with input column
``t + const``: there MR pixels form a register tile (MR x NV accumulator vectors, each
filter vector loaded once for the MR pixels; the last tile of a phase overlaps its
neighbour rather than leaving a remainder). Border columns go one pixel at a time, with
their own tap range and U partial sums over the input channels. Output channels of a group
go in blocks of up to `OC_BLOCK`; the epilogue adds the bias, applies the fused activation
and stores the valid channels.

The integer form (`lower-quantized`: int8/uint8/int16/int32 input, i8/i16 constant filter,
i32 bias and result) is exact like the reference. The kernel reads its input in its own
type: an int8 input with zero point 0 directly, and when the form centres the input
(``nn.sub(nn.cast(x) to i32, zp)``, used only here) it reads x and subtracts zp itself
(`folded_zero_point`: the cast and the sub become aliases, no i32 copy). When every sum is
provably at most 2**24 in magnitude (narrow input, bound from the constant filter:
`_exact_in_float`) it accumulates in float32, exact and as fast as the float kernel;
otherwise in 32-bit unsigned lanes (wrapping, as the reference's int64 -> int32 cast). The
i32 bias is added with wrapping arithmetic in the epilogue. NCHW float ops are transposed
to NHWC around the kernel; integer ones run NHWC only (`support.check_op`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn
from irc.dialects.nn.base import ints_of
from irc.targets.cpu.lowerings.helpers import (
    PARFOR,
    activation_code,
    block,
    collapse,
    contiguous_strides,
    ctype,
    describe,
    dtype,
    loop_nest,
    numel,
    shape,
    transpose_lines,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
    lowering,
)

LANES = 16
"""32-bit lanes of one 512-bit vector."""

OC_BLOCK = 4 * LANES
"""Output channels accumulated at once per pixel: four 16-lane vectors of registers."""

TILE_PIXELS = {1: 8, 2: 6, 3: 4, 4: 4}
"""Output pixels per register tile by accumulator vectors per pixel (NV)."""

ACC_CHAINS = 8
"""Float accumulator vectors per block (NV vectors times U partial sums over the input
channels): enough independent FMA chains to hide the FMA latency on both ports."""

PARALLEL_MACS = 250_000
"""Multiply-adds from which the output rows are split across threads (~5-10 us of one
core): the loop is marked `helpers.parallel`'s way and runs as a task of the library's
pool (`outline`), one part per output row or more rows when they are many."""


def _taps(
    axis: str, out_index: str, pad: int, size: int, k: int, stride: int, dilation: int
) -> Lines:
    """C statements setting `{axis}0`, `{axis}1` (first and last tap, inclusive) and `t{axis}`
    for output index `out_index`: taps `i` with ``t - i * dilation = h * stride`` and
    ``0 <= h < size``, where ``t = out_index + pad``. The taps step by
    ``stride / gcd(stride, dilation)`` (`_tap_step`)."""
    t, lo, hi = f"t{axis}", f"{axis}0", f"{axis}1"
    lines = [
        f"const long {t} = {out_index} + {pad};",
        f"long {lo} = {t} - {(size - 1) * stride};",
        f"{lo} = {lo} > 0 ? ({lo} + {dilation - 1}) / {dilation} : 0;"
        if dilation > 1
        else f"if ({lo} < 0) {lo} = 0;",
        f"long {hi} = {t} / {dilation};" if dilation > 1 else f"long {hi} = {t};",
        f"if ({hi} > {k - 1}) {hi} = {k - 1};",
    ]
    if stride > 1 and dilation == 1:
        # The first tap congruent to t modulo the stride (t - lo >= 0 whenever lo <= hi).
        lines.append(f"if ({lo} <= {hi}) {lo} += ({t} - {lo}) % {stride};")
    elif stride > 1:
        # i * d = t (mod s) holds for one tap in every s / gcd(s, d) consecutive ones.
        step = _tap_step(stride, dilation)
        lines.append(
            f"for (long q = 0; q < {step} && {lo} <= {hi} && ({t} - {lo} * {dilation}) % "
            f"{stride}; ++q) ++{lo};"
        )
        lines.append(f"if (({t} - {lo} * {dilation}) % {stride}) {lo} = {hi} + 1;")
    return lines


def _tap_step(stride: int, dilation: int) -> int:
    return stride // math.gcd(stride, dilation)


def _pack_lines(
    src: str,
    dst: str,
    grouped: tuple[int, ...],
    perm: tuple[int, ...],
    packed_shape: tuple[int, ...],
) -> Lines:
    """Run-time packing of a float filter viewed as `grouped` into `packed_shape`
    ([G][KH][KW][Cg][OCp], channels beyond OCg zero): a memset and a strided transpose."""
    dims = [grouped[p] for p in perm]
    src_strides = contiguous_strides(grouped)
    cdims, (sd, ss) = collapse(
        dims, [contiguous_strides(packed_shape), [src_strides[p] for p in perm]]
    )
    lines = [f"memset({dst}, 0, sizeof(float) * {numel(packed_shape)});"]
    return lines + loop_nest(
        cdims, [(0, sd), (0, ss)], lambda ix: [f"{dst}[{ix[0]}] = {src}[{ix[1]}];"]
    )


_NARROW = ("int8_t", "uint8_t", "int16_t")


def folded_zero_point(op: Operation) -> int | None:
    """The zero point z when `op` is the integer form's centring of an integer
    conv2d_transpose's input, ``nn.sub(nn.cast(x) to i32, z)`` with x int8 / uint8 / int16,
    z a one-element constant and the sub's only use that input: the kernel then reads x and
    subtracts z itself (no i32 copy of the input), and the sub and the cast are aliases of
    x. None otherwise."""
    if not isinstance(op, nn.SubOp) or not op.output.has_one_use():
        return None
    user = op.output.get_user_of_unique_use()
    if not isinstance(user, nn.Conv2DTransposeOp) or user.input is not op.output:
        return None
    if user.layout.data != "NHWC" or ctype(op.output) != "int32_t":
        return None
    if ctype(user.output) != "int32_t" or shape(op.lhs) != shape(op.output):
        return None
    cast, zp = op.lhs.owner, op.rhs.owner
    if not isinstance(cast, nn.CastOp) or not cast.results[0].has_one_use():
        return None
    if ctype(cast.operands[0]) not in _NARROW or not isinstance(zp, nn.ConstantOp):
        return None
    values = np.asarray(zp.to_array())
    if values.size != 1 or values.dtype.kind not in "iu":
        return None
    return int(values.reshape(-1)[0])


EXACT_FLOAT_BOUND = 1 << 24
"""Integers of magnitude up to this are exact in float32 (a 24-bit significand)."""


def _exact_in_float(filter_: np.ndarray | None, source: SSAValue, zero_point: int) -> bool:
    """Whether float32 accumulation is exact for an integer conv2d_transpose reading
    `source` (a narrow integer type) minus `zero_point` with the constant `filter_`: every
    partial sum of an output is bounded by ``max |x - zp| * max_oc sum |w[oc]|`` (all taps
    in range); at most 2**24, each FMA's exact result is representable, so nothing rounds."""
    if filter_ is None or ctype(source) not in _NARROW:
        return False
    info = np.iinfo(dtype(source))
    largest_x = max(abs(int(info.min) - zero_point), abs(int(info.max) - zero_point))
    weights = np.abs(filter_.astype(np.int64)).reshape(filter_.shape[0], -1)
    return largest_x * int(weights.sum(axis=1).max(initial=0)) <= EXACT_FLOAT_BOUND


@lowering(nn.Conv2DTransposeOp)
def conv2d_transpose(op: nn.Conv2DTransposeOp, ctx: LoweringContext) -> Lowered:
    """`op` (float32, or the i32-accumulating integer form) as an inline gather loop nest."""
    props = op.all_properties()
    layout = op.layout.data
    groups = op.groups.value.data
    sh, sw = ints_of(props["strides"])
    dh, dw = ints_of(props["dilations"])
    pt, pl, _, _ = ints_of(props["pads"])
    x_shape, w_shape, y_shape = shape(op.input), shape(op.filter), shape(op.output)
    if layout == "NCHW":
        n, c, h, w = x_shape
        _, ocg, kh, kw = w_shape
        _, oc, oh, ow = y_shape
    else:
        n, h, w, c = x_shape
        oc, kh, kw, _ = w_shape
        _, oh, ow, _ = y_shape
        ocg = oc // groups
    cg = c // groups
    integer = ctype(op.output) != "float"
    if integer and layout != "NHWC":
        raise LoweringError(op, "integer conv2d_transpose runs NHWC only")
    act = 0 if integer else activation_code(op)
    filter_const = ctx.codegen.constant_array(op.filter) is not None
    if integer and not filter_const:
        raise LoweringError(op, "integer conv2d_transpose needs a constant filter")
    # The input as the kernel reads it: x and its zero point when the centring is folded.
    source, zero_point = op.input, None
    if integer and isinstance(op.input.owner, nn.SubOp):
        zero_point = folded_zero_point(op.input.owner)
        if zero_point is not None:
            source = op.input.owner.lhs.owner.operands[0]  # type: ignore[union-attr]  # folded_zero_point matched sub(cast(x), zp): the sub's lhs is an op result
    bias = op.bias
    if bias is not None and not integer and ctx.codegen.constant_splat(bias) == 0.0:
        bias = None

    # [G][KH][KW][Cg][OCp] from OHWI = [G, OCg, KH, KW, Cg] or IOHW = [G, Cg, OCg, KH, KW].
    if layout == "NHWC":
        grouped, perm = (groups, ocg, kh, kw, cg), (0, 2, 3, 4, 1)
    else:
        grouped, perm = (groups, cg, ocg, kh, kw), (0, 3, 4, 1, 2)
    exact_float = integer and _exact_in_float(
        ctx.codegen.constant_array(op.filter), source, zero_point or 0
    )
    weight_type = "int32_t" if integer and not exact_float else "float"
    out_type = "int32_t" if integer else "float"
    np_type = np.int32 if weight_type == "int32_t" else np.float32

    ocp = _padded_channels(ocg)
    packed_shape = (groups, kh, kw, cg, ocp)
    temps: list[int] = []
    slots: dict[str, int] = {}
    for name, size, wanted in (
        ("x_nhwc", numel(x_shape), layout == "NCHW"),
        ("y_nhwc", numel(y_shape), layout == "NCHW"),
        ("w_packed", numel(packed_shape), not filter_const),
        ("x_float", numel(x_shape), exact_float),
    ):
        if wanted:
            slots[name] = len(temps)
            temps.append(size)

    def pack(array: np.ndarray) -> np.ndarray:
        packed = np.zeros(packed_shape, dtype=np_type)
        packed[..., :ocg] = array.reshape(grouped).transpose(perm)
        return packed

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        body: Lines = []
        x, y = em.ptr(source), res[0]
        if layout == "NCHW":
            body += transpose_lines(x, tmp[slots["x_nhwc"]], x_shape, (0, 2, 3, 1))
            x, y = tmp[slots["x_nhwc"]], tmp[slots["y_nhwc"]]
        if filter_const:
            packing = f"conv2d_transpose_filter_{weight_type} [G][KH][KW][Cg][OCg+{ocp - ocg}]"
            wk = em.packed(op.filter, packing, pack)
        else:
            wk = tmp[slots["w_packed"]]
            body += _pack_lines(em.ptr(op.filter), wk, grouped, perm, packed_shape)
        x_type = ctype(source)
        if exact_float:
            # The input as floats once (x - zp, exact): the gather loops then broadcast
            # floats straight from memory, as the float kernel does.
            xf, src = f"((float *){tmp[slots['x_float']]})", x
            zp = zero_point or 0
            body += loop_nest(
                [numel(x_shape)],
                [(0, [1])],
                lambda ix: [f"{xf}[{ix[0]}] = (float)((int32_t){src}[{ix[0]}] - ({zp}));"],
            )
            x, x_type = xf, "float"
        decls = [
            f"const {x_type} *restrict px = {x};",
            f"const {weight_type} *restrict pw = (const {weight_type} *){wk};",
            f"{out_type} *restrict py = {y};",
        ]
        if bias is not None:
            decls.append(f"const {out_type} *restrict pb = {em.ptr(bias)};")
        loops = _gather_loops(
            integer=integer,
            exact_float=exact_float,
            geometry=(n, h, w, c, oh, ow, oc, kh, kw, groups, cg, ocg),
            window=(sh, sw, dh, dw, pt, pl),
            has_bias=bias is not None,
            act=act,
            zero_point=zero_point,
        )
        body += [*decls, *loops]
        if layout == "NCHW":
            body += transpose_lines(y, res[0], (n, oh, ow, oc), (0, 3, 1, 2))
        return block(describe(op), [], body)

    # "quant" holds <stdint.h> (integer programs use it for their rescales anyway).
    snippets = ("quant",) if integer else ("common",)
    return Lowered(emit, temps, snippets, reads=(source,))


def _lanes(ocg: int) -> int:
    """Lanes of the accumulator vectors: 16 (a 512-bit vector), or 8 / 4 for few channels."""
    return 4 if ocg <= 4 else 8 if ocg <= 8 else LANES


def _padded_channels(ocg: int) -> int:
    """Output channels per group in the packed filter: OCg rounded up to whole vectors."""
    lanes = _lanes(ocg)
    return -(-ocg // lanes) * lanes


@dataclass(frozen=True)
class _Phase:
    """Output columns ``ox = phase + t * stride`` (t < `count`): their kernel columns are
    `first_tap`, `first_tap + step`, ... < KW wherever they are in range, and all of them are
    for t in [`lo`, `hi`] (the interior, where pixels are tiled)."""

    phase: int
    count: int
    first_tap: int
    lo: int
    hi: int


def _column_phases(w: int, ow: int, kw: int, sw: int, dw: int, pl: int) -> list[_Phase]:
    phases = []
    for p in range(min(sw, ow)):
        count = -(-(ow - p) // sw)
        taps = [j for j in range(kw) if (p + pl - j * dw) % sw == 0]
        if not taps:
            phases.append(_Phase(p, count, kw, count, -1))
            continue
        # Input column of tap j at t: t + offset_j (the division is exact).
        offsets = [(p + pl - j * dw) // sw for j in taps]
        lo = max(0, *(-o for o in offsets))
        hi = min(count - 1, *(w - 1 - o for o in offsets))
        phases.append(_Phase(p, count, taps[0], lo, hi))
    return phases


def _gather_loops(
    *,
    integer: bool,
    exact_float: bool,
    geometry: tuple[int, ...],
    window: tuple[int, ...],
    has_bias: bool,
    act: int,
    zero_point: int | None = None,
) -> Lines:
    """The gather loop nest over NHWC `px`, packed `pw`, optional `pb`, into NHWC `py`.

    Output rows (across threads), then the column phases (`_column_phases`): the interior
    columns of a phase go in tiles of MR pixels that share every filter vector they load,
    the border columns one pixel at a time, with their own kernel-column range. Per pixel
    (tile) and group, output channels go in blocks of up to `OC_BLOCK`: NV accumulator
    vectors (GCC vector extensions, so the code is predictable) per pixel; a
    single float pixel also keeps U partial sums over the input channels (independent FMA
    chains), summed in the epilogue, where the bias and the activation are applied lane by
    lane and only the valid channels stored."""
    n, h, w, c, oh, ow, oc, kh, kw, groups, cg, ocg = geometry
    sh, sw, dh, dw, pt, pl = window
    lanes = _lanes(ocg)
    ocp = _padded_channels(ocg)
    acc_type = "uint32_t" if integer and not exact_float else "float"
    out_type = "int32_t" if integer else "float"
    macs = n * h * w * c * kh * kw * ocg  # every input pixel reaches every tap (less cropping)
    step_i, step_j = _tap_step(sh, dh), _tap_step(sw, dw)
    # Pixels per tile: the widest channel block's (the accumulators of a tile stay in
    # registers: MR x NV vectors plus NV filter vectors).
    mr = TILE_PIXELS[min(OC_BLOCK, ocp) // lanes]

    def load_x(expr: str) -> str:
        if exact_float:
            return expr  # converted to float (zero point subtracted) before the loops
        if zero_point is not None:
            return f"({acc_type})((int32_t){expr} - ({zero_point}))"
        return f"({acc_type})(int32_t){expr}" if integer else expr

    # The accumulated integers as int32 (exact_float: exact integers in float32).
    as_int = "(int32_t)" if exact_float else ""

    def epilogue(acc: list[str], yo: str, offset: str, valid: int, tag: str) -> Lines:
        lane = f"lane{tag}"
        lines = [f"{acc_type} {lane}[{len(acc) * lanes}];"]
        lines += [f"memcpy({lane} + {v * lanes}, &{a}, sizeof {a});" for v, a in enumerate(acc)]
        value = f"{lane}[o]"
        if has_bias and integer:
            value = f"(uint32_t){as_int}{lane}[o] + (uint32_t)pb[g * {ocg} + {offset} + o]"
        elif has_bias:
            value = f"{lane}[o] + pb[g * {ocg} + {offset} + o]"
        if integer:
            value = f"(int32_t)({value})"
        elif act:
            value = f"irc_act({value}, {act})"
        lines.append(
            f"for (long o = 0; o < {valid}; ++o) {yo}[g * {ocg} + {offset} + o] = {value};"
        )
        return lines

    def taps_loop(j_loop: str, ww: str, inner: Lines, offset: str) -> Lines:
        return [
            f"for (long i = i0; i <= i1; i += {step_i}) {{",
            f"  const long hh = (ti - i * {dh}) / {sh};",
            f"  {j_loop} {{",
            f"    const long ww = {ww};",
            f"    const __typeof__(px[0]) *restrict xp = px + ((n * {h} + hh) * {w} + ww) * {c}"
            f" + g * {cg};",
            f"    const {acc_type} *restrict wp = (const {acc_type} *)pw + ((g * {kh} + i) * {kw}"
            f" + j) * {cg * ocp}"
            f" + {offset};",
            *("    " + line for line in inner),
            "  }",
            "}",
        ]

    def weight(v: int, k: str) -> str:
        return f"*(const irc_tvu *)(wp + ({k}) * {ocp} + {v * lanes})"

    def single(offset: str, nv: int, valid: int) -> Lines:
        """One pixel `ox` (its kernel-column range j0..j1 set), channels
        [offset, offset + valid) of group g, in `nv` vectors."""
        parts = 1 if acc_type != "float" else max(1, min(cg, ACC_CHAINS // nv))
        accs = [[f"a{u}_{v}" for v in range(nv)] for u in range(parts)]

        def fma(u: int, k: str) -> Lines:
            x = load_x(f"xp[{k}]")
            return [f"{accs[u][v]} += {x} * {weight(v, k)};" for v in range(nv)]

        inner = ["long k = 0;"]
        if parts > 1:
            inner.append(f"for (; k + {parts} <= {cg}; k += {parts}) {{")
            for u in range(parts):
                inner += ["  " + line for line in fma(u, f"k + {u}" if u else "k")]
            inner.append("}")
        inner += [f"for (; k < {cg}; ++k) {{", *("  " + line for line in fma(0, "k")), "}"]
        names = ", ".join(a for row in accs for a in row)
        lines = [f"irc_tv {names.replace(', ', ' = {0}, ')} = {{0}};"]
        j_loop = f"for (long j = j0; j <= j1; j += {step_j})"
        lines += taps_loop(j_loop, f"(tj - j * {dw}) / {sw}", inner, offset)
        for u in range(1, parts):
            lines += [f"{accs[0][v]} += {accs[u][v]};" for v in range(nv)]
        return lines + epilogue(accs[0], "yo", offset, valid, "")

    def tile(offset: str, nv: int, valid: int) -> Lines:
        """MR interior pixels ``ox = p + (t + m) * SW`` of column phase p (the same kernel
        columns from jfirst[p], input columns t + m + const), channels
        [offset, offset + valid) of group g."""
        accs = [[f"c{m}_{v}" for v in range(nv)] for m in range(mr)]
        inner = [f"for (long k = 0; k < {cg}; ++k) {{"]
        inner += [f"  const irc_tv w{v} = {weight(v, 'k')};" for v in range(nv)]
        for m in range(mr):
            x = load_x(f"xp[{m * c} + k]")
            inner += [f"  {accs[m][v]} += {x} * w{v};" for v in range(nv)]
        inner.append("}")
        names = ", ".join(a for row in accs for a in row)
        lines = [f"irc_tv {names.replace(', ', ' = {0}, ')} = {{0}};"]
        j_loop = f"for (long j = jfirst[p]; j < {kw}; j += {step_j})"
        lines += taps_loop(j_loop, f"t + (p + {pl} - j * {dw}) / {sw}", inner, offset)
        for m in range(mr):
            yo = f"yt{m}"
            lines.append(
                f"{out_type} *restrict {yo} = py + (r * {ow} + p + (t + {m}) * {sw}) * {oc};"
            )
            lines += epilogue(accs[m], yo, offset, valid, str(m))
        return lines

    def blocks(make: Callable[[str, int, int], Lines]) -> Lines:
        """`make(offset, nv, valid)` over the channel blocks of group g."""
        full, rest = divmod(ocg, OC_BLOCK) if lanes == LANES else (0, ocg)
        lines: Lines = []
        if full:
            body = make(f"b * {OC_BLOCK}", OC_BLOCK // lanes, OC_BLOCK)
            lines += [f"for (long b = 0; b < {full}; ++b) {{", *("  " + x for x in body), "}"]
        if rest:
            body = make(str(full * OC_BLOCK), -(-rest // lanes), rest)
            lines += ["{", *("  " + x for x in body), "}"]
        return [f"for (long g = 0; g < {groups}; ++g) {{", *("  " + x for x in lines), "}"]

    # Tiles cover the interior [tlo[p], thi[p]] of every column phase p, MR pixels at a
    # time; the last tile of a phase ends at thi[p] (overlapping its neighbour: the pixels
    # both compute get the same values, written twice by the same thread).
    phases = _column_phases(w, ow, kw, sw, dw, pl)
    spans = [(ph.lo, ph.hi) if ph.hi - ph.lo + 1 >= mr else (0, -1) for ph in phases]
    tiled = any(hi >= lo for lo, hi in spans)
    columns: Lines = []
    if tiled:
        ints = ", ".join
        columns += [
            f"static const long tlo[] = {{{ints(str(lo) for lo, _ in spans)}}};",
            f"static const long thi[] = {{{ints(str(hi) for _, hi in spans)}}};",
            f"static const long jfirst[] = {{{ints(str(ph.first_tap) for ph in phases)}}};",
            f"for (long p = 0; p < {len(phases)}; ++p)",
            f"  for (long t0 = tlo[p]; t0 <= thi[p]; t0 += {mr}) {{",
            f"    const long t = t0 + {mr - 1} <= thi[p] ? t0 : thi[p] - {mr - 1};",
            *("    " + x for x in blocks(tile)),
            "  }",
        ]
    columns += [f"for (long ox = 0; ox < {ow}; ++ox) {{"]
    if tiled:
        columns += [
            f"  const long p = ox % {sw}, t = ox / {sw};",
            "  if (t >= tlo[p] && t <= thi[p]) continue;",
        ]
    columns += [
        *("  " + x for x in _taps("j", "ox", pl, w, kw, sw, dw)),
        f"  {out_type} *restrict yo = py + (r * {ow} + ox) * {oc};",
        *("  " + x for x in blocks(single)),
        "}",
    ]

    size = lanes * 4  # float or uint32_t lanes
    lines: Lines = [
        f"typedef {acc_type} irc_tv __attribute__((vector_size({size})));",
        f"typedef {acc_type} irc_tvu __attribute__((vector_size({size}), aligned(4)));",
    ]
    if macs >= PARALLEL_MACS and n * oh >= 2:
        lines.append(f"{PARFOR} /* work: {macs} */")
    lines += [
        f"for (long r = 0; r < {n * oh}; ++r) {{",
        f"  const long n = r / {oh}, oy = r % {oh};",
        *("  " + line for line in _taps("i", "oy", pt, h, kh, sh, dh)),
        *("  " + line for line in columns),
        "}",
    ]
    return lines
