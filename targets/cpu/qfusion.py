"""Recognising the int8 convolution chains of `lower-quantized` that the CPU target fuses.

`lower-quantized` (docs/design.md §2) gives a quantized conv2d / fully_connected the form

    %s = quant.scast %x                 (int8 or uint8 storage)
    %w = nn.cast %s -> i32  ;  %c = nn.sub %w, zp       (absent when the zero point is 0)
    %y = nn.conv2d %c, %filter(i8 constant), %bias(i32 constant)  -> i32
    %r = quant.rescale %y               (per channel, int8/uint8 result)
    [%t = quant.scast %r ; %k = nn.clip %t {min, max} ; quant.scast %k]   (narrower activation)

`match_chains(ops)` finds such chains whose intermediate values have no other use;
`cpu-fuse` wraps each in a `cpu.fusion` that the code generator runs as ONE kernel reading
the int8 input and writing the int8 result (`csrc` snippet "qfused"): no i32 tensor
reaches memory. `pack_vnni` and `fold_bias` prepare the constants at compile time,
exactly: with `a = x + flip_offset` (int8 storage made unsigned) and padding equal to the
input's zero point,
`sum (x - zp) * w = sum a * w - (zp + flip_offset) * sum w`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn, quant
from irc.dialects.nn.base import ints_of
from irc.dialects.quant import quantized_element
from irc.dtypes import numpy_dtype

BYTE_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))


@dataclass
class QuantChain:
    """One fusable chain (see the module docstring)."""

    conv: nn.Conv2DOp | nn.FullyConnectedOp
    source: SSAValue
    """The int8/uint8 value the chain reads (before widening)."""
    zero_point: int
    """Subtracted from `source` before the products."""
    rescale: quant.RescaleOp
    final: Operation
    """The op whose result the fused kernel writes (the rescale or the clip)."""
    low: int
    high: int
    """Clamp bounds of the stored result."""
    depthwise: bool
    skipped: list[Operation] = field(default_factory=list)
    """Ops of the chain that run inside the final op's kernel (no code, no buffer)."""


def _single_user(value: SSAValue) -> Operation | None:
    if not value.has_one_use():
        return None
    return value.get_user_of_unique_use()


def _splat_int(op: object) -> int | None:
    if not isinstance(op, nn.ConstantOp):
        return None
    array = np.asarray(op.to_array())
    if array.size == 0 or array.dtype.kind not in "iu" or not np.all(array == array.flat[0]):
        return None
    return int(array.flat[0])


def _constant(value: SSAValue | None, kind: str) -> np.ndarray | None:
    op = value.owner if value is not None else None
    if not isinstance(op, nn.ConstantOp) or quantized_element(op.output.type) is not None:
        return None
    array = np.asarray(op.to_array())
    return array if array.dtype.kind in kind else None


def _source(value: SSAValue) -> tuple[SSAValue, int, list[Operation]] | None:
    """(int8/uint8 source, zero point, widening ops) of a conv input."""
    if numpy_dtype(value.type) in BYTE_TYPES:
        return value, 0, []
    sub = value.owner
    if not isinstance(sub, nn.SubOp) or not sub.output.has_one_use():
        return None
    zp = _splat_int(sub.rhs.owner)
    cast = sub.lhs.owner
    if zp is None or not isinstance(cast, nn.CastOp) or _single_user(cast.results[0]) is not sub:
        return None
    if shape_of(sub.rhs) not in ((), (1,)) and shape_of(sub.rhs) != shape_of(sub.lhs):
        return None
    source = cast.operands[0]
    dt = numpy_dtype(source.type)
    if dt not in BYTE_TYPES or numpy_dtype(sub.output.type) != np.dtype(np.int32):
        return None
    info = np.iinfo(dt)
    if not info.min <= zp <= info.max:
        return None
    return source, zp, [cast, sub]


def shape_of(value: SSAValue) -> tuple[int, ...]:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def _rescale_fits(op: quant.RescaleOp, channels: int) -> bool:
    """Per-tensor or per-channel on the last axis, shifts inside the vector lanes' range."""
    rank = len(shape_of(op.input))
    count = len(op.multiplier_values)
    if count != 1 and (op.axis is None or op.axis.value.data % rank != rank - 1):
        return False
    if count not in (1, channels):
        return False
    if quantized_element(op.input.type) is not None:
        return False
    shifts = list(op.shift_values)
    if op.rounding.data == "single_round":
        return all(0 <= 31 - s < 64 for s in shifts)
    return all(0 <= max(s, 0) < 64 and 0 <= max(-s, 0) < 64 for s in shifts)


def match_chain(conv: Operation) -> QuantChain | None:
    """The fusable chain whose conv2d / fully_connected is `conv`, or None."""
    if not isinstance(conv, nn.Conv2DOp | nn.FullyConnectedOp):
        return None
    if numpy_dtype(conv.results[0].type) != np.dtype(np.int32):
        return None
    x = conv.operands[0]
    weights = _constant(conv.operands[1], "iu")
    if weights is None or weights.size == 0 or weights.min() < -128 or weights.max() > 127:
        return None  # the kernels multiply int8 weights (a uint8 filter minus 128 is one)
    bias_value = conv.operands[2] if len(conv.operands) > 2 else None
    if bias_value is not None and _constant(bias_value, "i") is None:
        return None
    depthwise = False
    if isinstance(conv, nn.Conv2DOp):
        if conv.layout.data != "NHWC":
            return None
        groups = conv.groups.value.data
        c, oc = shape_of(x)[3], shape_of(conv.output)[3]
        depthwise = groups > 1 and groups == c == oc
        if groups != 1 and not depthwise:
            return None
    found = _source(x)
    if found is None:
        return None
    source, zp, widening = found
    rescale = _single_user(conv.results[0])
    if not isinstance(rescale, quant.RescaleOp):
        return None
    channels = shape_of(conv.results[0])[-1]
    if not _rescale_fits(rescale, channels):
        return None
    out_dtype = numpy_dtype(rescale.output.type)
    if out_dtype not in BYTE_TYPES:
        return None
    final, low, high, tail = chain_output(rescale, out_dtype)
    if low > high:
        return None
    skipped = [*widening, conv, *tail]
    return QuantChain(conv, source, zp, rescale, final, low, high, depthwise, skipped)


def match_chains(ops: list[Operation]) -> list[QuantChain]:
    """The fusable chains among `ops` (an entry's ops, in order)."""
    return [chain for op in ops if (chain := match_chain(op)) is not None]


# ---- Compile-time constants of the fused kernels ------------------------------------------------


def flip_offset(source: SSAValue) -> int:
    """What the kernel adds to the stored input bytes: 128 for int8 (XOR 0x80), 0 for uint8."""
    return 128 if numpy_dtype(source.type) == np.dtype(np.int8) else 0


def vnni_blocks(out_channels: int) -> int:
    """Vectors of 16 output channels per register tile (NV): 2 unless one is enough."""
    return 2 if out_channels > 16 else 1


def pack_vnni(ohwi: np.ndarray, nv: int) -> np.ndarray:
    """int8 OHWI `[OC, KH, KW, C]` -> `[ceil(OC/NB), KH, KW, C4, NB, 4]` (NB = 16 * nv,
    C4 = ceil(C/4)): 4 consecutive input channels of one output channel per int32 lane,
    zero beyond OC and C."""
    oc, kh, kw, c = ohwi.shape
    nb = 16 * nv
    blocks, c4 = -(-oc // nb), -(-c // 4)
    padded = np.zeros((blocks * nb, kh, kw, c4 * 4), dtype=np.int8)
    padded[:oc, :, :, :c] = ohwi
    packed = padded.reshape(blocks, nb, kh, kw, c4, 4).transpose(0, 2, 3, 4, 1, 5)
    return np.ascontiguousarray(packed)


def fold_bias(
    ohwi: np.ndarray, bias: np.ndarray | None, zero_point: int, offset: int, padded: int
) -> np.ndarray:
    """bias - (zero_point + offset) * sum(w) per output channel, int32 (wrapping like the
    chain's int32 sums), zero-padded to `padded` channels."""
    oc = ohwi.shape[0]
    sums = ohwi.reshape(oc, -1).astype(np.int64).sum(axis=1)
    base = np.zeros(oc, np.int64) if bias is None else bias.reshape(oc).astype(np.int64)
    folded = base - (zero_point + offset) * sums
    out = np.zeros(padded, np.int64)
    out[:oc] = folded
    return ((out + 2**31) % 2**32 - 2**31).astype(np.int32)


def pack_depthwise_i16(ohwi: np.ndarray, padded: int) -> np.ndarray:
    """Depthwise int8 OHWI `[C, KH, KW, 1]` -> int16 `[KH, KW, padded]`, zero beyond C."""
    c, kh, kw, _ = ohwi.shape
    out = np.zeros((kh, kw, padded), np.int16)
    out[:, :, :c] = ohwi.reshape(c, kh, kw).transpose(1, 2, 0)
    return out


def pack_depthwise_quads(ohwi: np.ndarray, padded: int) -> np.ndarray:
    """Depthwise int8 OHWI `[C, KH, KW, 1]` -> int8 `[padded/16, G, KW, 16, 4]` (G =
    ceil(KH/4)): the weights of kernel rows 4g .. 4g + 3 of one channel in one int32 lane,
    zero beyond KH and C (the column-quad depthwise kernel's dot products)."""
    c, kh, kw, _ = ohwi.shape
    groups = -(-kh // 4)
    rows = np.zeros((padded, groups * 4, kw), np.int8)
    rows[:c, :kh] = ohwi.reshape(c, kh, kw)
    packed = rows.reshape(padded // 16, 16, groups, 4, kw).transpose(0, 2, 4, 1, 3)
    return np.ascontiguousarray(packed)


def requant_blocks(op: quant.RescaleOp, channels: int, padded: int) -> tuple[np.ndarray, int]:
    """The rescale's parameters for `csrc`'s IRC_RQ_STORE, and its `mode` bits.

    Mode: bit 0 single rounding, bit 1 some left shift > 0, bit 2 a multiplier INT32_MIN,
    bit 3 a right shift > 31; 0 is the common case. Per block of 16 channels, 64 int64 in
    four rows of 16, each in even/odd lane order (channels 0, 2, .., 14, then 1, 3, .., 15):
    mode 0: multiplier, K1 = 2^30 + half * 2^31, K2 = 2^30 + (half - (b > 0)) * 2^31 and
    S = 31 + b (half = 2^b / 2, b the right shift: one rounding shift, see csrc); other
    modes: multiplier, a, b (double rounding: left and right shift; single rounding:
    b = total shift 31 - s) and zeros. Padding channels are zero (mode 0: multiplier zero,
    right shift 1).

    Single rounding, ``(x m + 2^(t-1)) >> t`` with t = 31 - s, is mode 0 with
    K1 = K2 = 2^(t-1) and S = t whenever every t lies in [31, 62] (no factor >= 1: the
    result then fits in int32, as mode 0's kernels need, and x m + K in int64): ONNX
    models' requantizations take the vector epilogues of TFLite's."""
    multipliers, shifts = list(op.multiplier_values), list(op.shift_values)
    if len(multipliers) == 1:
        multipliers, shifts = multipliers * channels, shifts * channels
    single = op.rounding.data == "single_round"
    rows = np.zeros((4, padded), np.int64)
    rows[0, :channels] = multipliers
    shift = np.array(shifts, np.int64)
    if single:
        total = 31 - shift
        if ((total >= 31) & (total <= 62)).all():
            rows[1, :channels] = rows[2, :channels] = 1 << (total - 1)
            rows[3, :channels] = total
            rows[3, channels:] = 32  # padding: zero multiplier, K and S >= 32 (as below)
            return _block_order(rows, padded), 0
        rows[2, :channels] = total
    else:
        rows[1, :channels] = np.maximum(shift, 0)
        rows[2, :channels] = np.maximum(-shift, 0)
    mode = int(single) | (2 if not single and rows[1].any() else 0)
    mode |= 4 if (rows[0] == -(2**31)).any() else 0
    mode |= 8 if not single and (rows[2] > 31).any() else 0
    if mode == 0:
        right = rows[2].copy()
        right[channels:] = 1  # padding: S = 32 keeps a block's shifts >= 32 (AVX2's fast path)
        half = (1 << right) >> 1
        rows[1] = (1 << 30) + half * (1 << 31)
        rows[2] = (1 << 30) + (half - (right > 0)) * (1 << 31)
        rows[3] = 31 + right
    return _block_order(rows, padded), mode


def _block_order(rows: np.ndarray, padded: int) -> np.ndarray:
    """Four parameter rows of `padded` channels -> 64 int64 per block of 16 channels, each
    row in even/odd lane order (`requant_blocks`)."""
    out = rows.reshape(4, padded // 16, 8, 2).transpose(1, 0, 3, 2)
    return np.ascontiguousarray(out).reshape(-1)


def conv_geometry(op: nn.Conv2DOp) -> dict[str, tuple[int, ...]]:
    """The strides, dilations and pads of a conv, by property name."""
    props = op.all_properties()
    return {name: ints_of(props[name]) for name in ("strides", "dilations", "pads")}


# ---- Quantized add (TFLite's general 8-bit add) ------------------------------------------------


@dataclass
class QuantAddChain:
    """`lower-quantized`'s int8 add: each input `((x - zp) * k)` rescaled to a common scale,
    the sum rescaled to the result [and clipped], run as one elementwise kernel."""

    add: nn.AddOp
    sources: tuple[SSAValue, SSAValue]
    zero_points: tuple[int, int]
    factors: tuple[int, int]
    """The `nn.mul` constant of each input (TFLite's left shift, 2^20)."""
    input_rescales: tuple[quant.RescaleOp, quant.RescaleOp]
    rescale: quant.RescaleOp
    final: Operation
    low: int
    high: int
    skipped: list[Operation] = field(default_factory=list)


def _add_input(
    value: SSAValue,
) -> tuple[SSAValue, int, int, quant.RescaleOp, list[Operation]] | None:
    """(source, zero point, factor, rescale, ops) of `rescale(mul(sub(cast(x), zp), k))`."""
    rescale = value.owner
    if not isinstance(rescale, quant.RescaleOp) or not value.has_one_use():
        return None
    if numpy_dtype(rescale.output.type) != np.dtype(np.int32):
        return None
    mul = rescale.input.owner
    if not isinstance(mul, nn.MulOp) or not mul.output.has_one_use():
        return None
    factor = _splat_int(mul.rhs.owner)
    if factor is None or shape_of(mul.rhs) not in ((), (1,)):
        return None
    found = _source(mul.lhs)
    if found is None or not found[2]:
        return None
    source, zp, widening = found
    if abs(factor) * 256 >= 2**31:
        return None  # (x - zp) * k would wrap in int32
    return source, zp, factor, rescale, [*widening, mul, rescale]


def chain_output(
    rescale: quant.RescaleOp, out_dtype: np.dtype
) -> tuple[Operation, int, int, list[Operation]]:
    """The end of a fused int8 chain after its last `rescale`: (the chain's final op, the
    clamp bounds of its result, the ops the fusion takes besides the rescale's producer).
    The bounds are the result's quantized storage range (else `out_dtype`'s), narrowed by an
    `nn.clip` after an `quant.scast` of the rescale, which then ends the chain."""
    qtype = quantized_element(rescale.output.type)
    if qtype is not None:
        low, high = qtype.storage_range
    else:
        info = np.iinfo(out_dtype)
        low, high = int(info.min), int(info.max)
    scast = _single_user(rescale.output)
    if isinstance(scast, quant.SCastOp):
        clip = _single_user(scast.results[0])
        if isinstance(clip, nn.ClipOp) and numpy_dtype(clip.output.type) == out_dtype:
            if clip.min is not None:
                low = max(low, int(clip.min.value.data))
            if clip.max is not None:
                high = min(high, int(clip.max.value.data))
            return clip, low, high, [rescale, scast]
    return rescale, low, high, []


def _requant_mode_zero(op: quant.RescaleOp) -> bool:
    """Per-tensor and `requant_blocks` mode 0: double rounding without a left shift and a
    right shift <= 31, or single rounding of a factor below 1 (ONNX models)."""
    if len(op.multiplier_values) != 1 or quantized_element(op.input.type) is not None:
        return False
    return requant_blocks(op, 16, 16)[1] == 0


def match_add(op: Operation) -> QuantAddChain | None:
    """The fusable int8 add chain whose `nn.add` is `op`, or None."""
    if not isinstance(op, nn.AddOp) or numpy_dtype(op.output.type) != np.dtype(np.int32):
        return None
    if not shape_of(op.lhs) == shape_of(op.rhs) == shape_of(op.output) or op.lhs is op.rhs:
        return None
    first, second = _add_input(op.lhs), _add_input(op.rhs)
    if first is None or second is None:
        return None
    (sa, za, ka, ra, oa), (sb, zb, kb, rb, ob) = first, second
    if numpy_dtype(sa.type) != numpy_dtype(sb.type):
        return None
    rescale = _single_user(op.output)
    if not isinstance(rescale, quant.RescaleOp):
        return None
    out_dtype = numpy_dtype(rescale.output.type)
    if out_dtype not in BYTE_TYPES or not all(_requant_mode_zero(r) for r in (ra, rb, rescale)):
        return None
    final, low, high, tail = chain_output(rescale, out_dtype)
    if low > high:
        return None
    skipped = [*oa, *ob, op, *tail]
    return QuantAddChain(
        op, (sa, sb), (za, zb), (ka, kb), (ra, rb), rescale, final, low, high, skipped
    )


def match_add_chains(ops: list[Operation]) -> list[QuantAddChain]:
    """The fusable int8 adds among `ops` (an entry's ops, in order)."""
    return [chain for op in ops if (chain := match_add(op)) is not None]
