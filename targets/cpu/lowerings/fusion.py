"""`cpu.fusion` ops (`cpu-fuse`), each one kernel of its kind, tried in turn:

* "qconv": an int8 chain `x -> i32 - zp -> conv2d / fully_connected -> rescale [-> clip]`,
  read back from the region with `qfusion.match_chain`, as ONE kernel that reads the int8
  input and writes the int8 result (`fused_int8`: vpdpbusd dot products with the zero-point
  correction folded into the bias, or the depthwise kernel on column quads of 4 kernel rows,
  its int16 form for very wide kernels; requantization in the epilogue);
* "qadd": the int8 add (`fused_int8_add`);
* "conv_add": a float conv2d with the residual add (and a relu after it) in its epilogue;
* "attention": an attention with its head transposes read / written through strides
  (`attention_layout`);
* the dynamically quantized fully_connected of `dynamic_quant.py`.

A fusion whose ops are not a chain of its kind is refused. (`codegen` checks every member
with the target's `supports()` before lowering the fusion.)
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from irc.dialects import cpu, nn
from irc.targets.cpu import csrc, dynamic_quant, qfusion
from irc.targets.cpu.attention_layout import KIND as ATTENTION_KIND
from irc.targets.cpu.attention_layout import match_attention
from irc.targets.cpu.lowerings.conv import conv2d
from irc.targets.cpu.lowerings.helpers import (
    activation_code,
    block,
    c_call,
    ctype,
    describe,
    fusion_inputs,
    numel,
    shape,
    zero_point,
)
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
    lowering,
)
from irc.targets.cpu.lowerings.transformer import attention_chain
from irc.targets.cpu.qfusion import QuantAddChain, QuantChain, match_add, match_chain

DEPTHWISE_QUADS_STACK = 32 * 1024
"""Bytes of column quads the column-quad depthwise kernel may keep on the stack per thread."""


def _final(fusion: cpu.FusionOp) -> Operation | None:
    """The op whose result the fusion yields."""
    yielded = fusion.body.block.last_op
    owner = yielded.operands[0].owner if yielded is not None and yielded.operands else None
    return owner if isinstance(owner, Operation) else None


def _holds_exactly(
    members: list[Operation], skipped: list[Operation], final: Operation, yielded: object
) -> bool:
    """Whether a fusion's ops are exactly a matched chain ending in the yielded op."""
    return (
        yielded is final and set(members) == {*skipped, final} and len(members) == len(skipped) + 1
    )


def fused_int8(chain: QuantChain, ctx: LoweringContext) -> Lowered:
    """An int8 conv2d / fully_connected chain (`qfusion`) as one kernel: int8 in, int8
    out, the rescale and clamp in the epilogue (`csrc` snippet "qfused")."""
    conv, source = chain.conv, chain.source
    out_value = chain.final.results[0]
    filter_array = ctx.codegen.constant_array(conv.operands[1])
    assert filter_array is not None
    weights = filter_array.astype(np.int8)  # values in int8 range (checked by the match)
    bias_value = conv.operands[2] if len(conv.operands) > 2 else None
    bias = None if bias_value is None else ctx.codegen.constant_array(bias_value)
    offset = qfusion.flip_offset(source)
    signed = offset == 128
    zp = chain.zero_point
    zp_out = zero_point(chain.rescale.output)
    low, high = chain.low, chain.high

    def requant(padded: int, channels: int) -> tuple[Lines, tuple[object, ...]]:
        """The epilogue's arguments (its parameters are a constant, packed at compile
        time: `qfusion.requant_blocks`)."""
        params, mode = qfusion.requant_blocks(chain.rescale, channels, padded)
        table = _fused_constant(ctx, conv, f"qrequant_i64 [{padded // 16}][64]", params)
        rq = f"(const int64_t *){table}"
        return [], (rq, mode, f"{zp_out}LL", f"{low}LL", f"{high}LL")

    if chain.depthwise:
        assert isinstance(conv, nn.Conv2DOp)
        geo = qfusion.conv_geometry(conv)
        (n, h, w, c), (_, kh, kw, _) = shape(source), shape(conv.operands[1])
        _, oh, ow, _ = shape(out_value)
        cp = -(-c // 16) * 16
        _, mode = qfusion.requant_blocks(chain.rescale, c, cp)
        sh, sw = geo["strides"]
        dh, dw = geo["dilations"]
        # The column-quad kernel keeps one chunk of columns per kernel-row group on the
        # stack; a very wide dilated or strided kernel takes the int16 kernel instead.
        columns = (csrc.DEPTHWISE_QUADS_CHUNK - 1) * sw + (kw - 1) * dw + 1
        quads = -(-kh // 4) * columns * 64 <= DEPTHWISE_QUADS_STACK
        if quads:
            pack_name = "qdepthwise_quads_i8 [Cp16/16][ceil(KH/4)][KW][16][4]"
            pack = qfusion.pack_depthwise_quads(weights, cp)
            folded_dw = qfusion.fold_bias(weights, bias, zp, offset, cp)
            kernel_dw = csrc.fused_depthwise_quads_kernel((kh, kw) == (3, 3), mode)
            # int8 storage XOR 0x80 is x + 128, an unsigned byte for vpdpbusd (the bias
            # takes -128 * sum(w) for it).
            flip_or_pairs, w_ctype = ("0x80808080u" if signed else "0u"), "int8_t"
        else:
            pack_name = "qdepthwise_i16 [KH][KW][Cp16]"
            pack = qfusion.pack_depthwise_i16(weights, cp)
            # Two int8 x int8 products fit in int16 unless a weight is -128 (|x w| <= 16256).
            pairs = int(signed and int(weights.min()) >= -127)
            folded_dw = qfusion.fold_bias(weights, bias, zp, 0, cp)
            kernel_dw = csrc.fused_depthwise_kernel(signed, (kh, kw) == (3, 3), mode)
            flip_or_pairs, w_ctype = str(pairs), "int16_t"

        def emit_dw(em: Emitter, res: list[str], _: list[str]) -> Lines:
            wk = em.packed(conv.operands[1], pack_name, lambda a: pack)
            bk = _fused_constant(ctx, conv, f"{pack_name} bias_i32 [Cp16]", folded_dw)
            decls, epilogue = requant(cp, c)
            x = f"(const uint8_t *){em.ptr(source)}" if quads else em.ptr(source)
            args = (x, n, h, w, c, cp, zp, flip_or_pairs, f"(const {w_ctype} *){wk}")
            args += (f"(const int32_t *){bk}", *epilogue, f"(uint8_t *){res[0]}", oh, ow)
            args += (kh, kw, sh, sw, dh, dw, geo["pads"][0], geo["pads"][1])
            return block(describe(conv), decls, [c_call(kernel_dw, *args)])

        return Lowered(emit_dw, snippets=(kernel_dw,), reads=(source,))

    if isinstance(conv, nn.FullyConnectedOp):
        m, k = numel(shape(source)[:-1]), shape(source)[-1]
        oc = shape(conv.operands[1])[0]
        ohwi = weights.reshape(oc, 1, 1, k)
        n, h, w, c, oh, ow = 1, 1, m, k, 1, m
        strides, dilations, pads = [1, 1], [1, 1], [0, 0, 0, 0]
        kh = kw = 1
    else:
        geo = qfusion.conv_geometry(conv)
        ohwi = weights
        (n, h, w, c), (oc, kh, kw, _) = shape(source), shape(conv.operands[1])
        _, oh, ow, _ = shape(out_value)
        strides, dilations, pads = geo["strides"], geo["dilations"], geo["pads"]
        if kh == kw == 1 and tuple(strides) == (1, 1) and not any(pads):  # one row of pixels
            n, h, w, oh, ow = 1, 1, n * h * w, 1, n * h * w
    nv = qfusion.vnni_blocks(oc)
    nb = 16 * nv
    padded = -(-oc // nb) * nb
    c4 = -(-c // 4)
    pt, pl, pb, pr = pads
    hp, wp = h + pt + pb, w + pl + pr
    needs_copy = any(pads) or c % 4 != 0
    temps = [-(-(n * hp * wp * c4 * 4) // 4)] if needs_copy else []
    mr = 8 if ow >= 4 else 1
    if mr == 1:
        nv, nb = 2, 32
        padded = -(-oc // nb) * nb
    mode = qfusion.requant_blocks(chain.rescale, oc, padded)[1]
    kernel = csrc.fused_conv_kernel(mr, nv, mode)
    packed_w = qfusion.pack_vnni(ohwi, nv)
    folded = qfusion.fold_bias(ohwi, bias, zp, offset, padded)
    flip = "0x80808080u" if signed else "0u"

    def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
        wk = em.packed(
            conv.operands[1],
            f"qconv_vnni_i8 [OC/{nb}][KH][KW][C/4][{nb}][4]",
            lambda a: packed_w,
        )
        bk = _fused_constant(ctx, conv, f"qconv_vnni_bias_i32 [{padded}]", folded)
        body: Lines = []
        x = f"(const uint8_t *){em.ptr(source)}"
        if needs_copy:
            fill = zp & 255
            body.append(
                c_call(
                    "irc_qpad",
                    f"(uint8_t *){tmp[0]}",
                    x,
                    n,
                    h,
                    w,
                    c,
                    c4 * 4,
                    pt,
                    pl,
                    pb,
                    pr,
                    fill,
                )
            )
            x = f"(const uint8_t *){tmp[0]}"
        args = (x, n, hp, wp, c4 * 4, flip, f"(const int8_t *){wk}", f"(const int32_t *){bk}")
        decls, epilogue = requant(padded, oc)
        args += (*epilogue, f"(uint8_t *){res[0]}", oh, ow, oc, kh, kw)
        args += (*strides, *dilations, c4)
        body.append(c_call(kernel, *args))
        return block(describe(conv), decls, body)

    return Lowered(emit, temps, (kernel,), reads=(source,))


def fused_int8_add(chain: QuantAddChain, ctx: LoweringContext) -> Lowered:
    """An int8 add chain (`qfusion.match_add_chains`) as one elementwise kernel: both
    inputs requantized to the common scale, summed, requantized to the int8 result."""
    sa, sb = chain.sources
    count = numel(shape(chain.add.output))
    kernel = "irc_qadd_s8" if ctype(sa) == "int8_t" else "irc_qadd_u8"
    blocks = [qfusion.requant_blocks(r, 16, 16)[0] for r in (*chain.input_rescales, chain.rescale)]
    zp_out = zero_point(chain.rescale.output)

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        tables = [
            _fused_constant(ctx, chain.add, f"qadd_requant_i64 [1][64] {name}", params)
            for name, params in zip(("lhs", "rhs", "sum"), blocks, strict=True)
        ]
        args = (em.ptr(sa), em.ptr(sb), count, *chain.zero_points, *chain.factors)
        args += (*(f"(const int64_t *){t}" for t in tables), f"{zp_out}LL")
        args += (f"{chain.low}LL", f"{chain.high}LL", f"(uint8_t *){res[0]}")
        return block(describe(chain.add), [], [c_call(kernel, *args)])

    return Lowered(emit, snippets=(kernel,), reads=(sa, sb))


def _fused_constant(
    ctx: LoweringContext, conv: Operation, packing_name: str, array: np.ndarray
) -> str:
    """A constant computed for one fused chain (keyed by its conv: it depends on the
    filter, the bias and the zero point together)."""
    return f"K[{ctx.codegen.constants.add(conv.results[0], packing_name, lambda: array)}]"


@lowering(cpu.FusionOp)
def qconv(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered | None:
    """An int8 conv2d / fully_connected chain as one kernel (`fused_int8`)."""
    members = fusion.members
    if fusion.kind.data != "qconv":
        return None
    producer = next(op for op in members if isinstance(op, nn.Conv2DOp | nn.FullyConnectedOp))
    chain = match_chain(producer)
    if chain is None or not _holds_exactly(members, chain.skipped, chain.final, _final(fusion)):
        return None
    lowered = fused_int8(chain, ctx)
    timed = (chain.conv, (chain.source,))
    reads = fusion_inputs(fusion)
    return Lowered(lowered.emit, lowered.temps, lowered.snippets, False, reads, timed)


@lowering(cpu.FusionOp)
def qadd(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered | None:
    """An int8 add chain as one elementwise kernel (`fused_int8_add`)."""
    members = fusion.members
    if fusion.kind.data != "qadd":
        return None
    add = next(op for op in members if isinstance(op, nn.AddOp))
    chain = match_add(add)
    if chain is None or not _holds_exactly(members, chain.skipped, chain.final, _final(fusion)):
        return None
    lowered = fused_int8_add(chain, ctx)
    timed = (chain.add, chain.sources)
    reads = fusion_inputs(fusion)
    return Lowered(lowered.emit, lowered.temps, lowered.snippets, False, reads, timed)


@lowering(cpu.FusionOp)
def conv_add(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered | None:
    """A float conv2d with the residual add (and a relu after it) in its epilogue."""
    members = fusion.members
    if fusion.kind.data != "conv_add" or len(members) not in (2, 3):
        return None
    conv, add = members[:2]
    relu = members[2] if len(members) == 3 else None
    if not (
        isinstance(conv, nn.Conv2DOp)
        and isinstance(add, nn.AddOp)
        and _final(fusion) is (add if relu is None else relu)
        and (relu is None or (isinstance(relu, nn.ReluOp) and activation_code(add) == 0))
    ):
        return None
    other = add.operands[1] if add.operands[0] is conv.output else add.operands[0]
    act2 = activation_code(add) if relu is None else csrc.ACTIVATION_CODES["relu"]
    lowered = conv2d(conv, ctx, (other, act2))
    timed = (conv, tuple(conv.operands))
    reads = fusion_inputs(fusion)
    return Lowered(lowered.emit, lowered.temps, lowered.snippets, False, reads, timed)


@lowering(cpu.FusionOp)
def attention(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered | None:
    """An attention with its head transposes read and written through strides
    (`attention_layout`)."""
    if fusion.kind.data != ATTENTION_KIND:
        return None
    ops = [m for m in fusion.members if isinstance(m, nn.AttentionOp)]
    chain = match_attention(ops[0]) if len(ops) == 1 else None
    if chain is None or not _holds_exactly(
        fusion.members, chain.members[:-1], chain.final, _final(fusion)
    ):
        return None
    lowered = attention_chain(chain)
    timed = (chain.attention, tuple(chain.attention.operands))
    reads = fusion_inputs(fusion)
    return Lowered(lowered.emit, lowered.temps, lowered.snippets, False, reads, timed)


@lowering(cpu.FusionOp)
def dynamic_quantized(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered | None:
    """A dynamically quantized fully_connected (`dynamic_quant.lower_fusion`)."""
    if fusion.kind.data != dynamic_quant.KIND:
        return None
    return dynamic_quant.lower_fusion(ctx, fusion)


@lowering(cpu.FusionOp)
def unmatched(fusion: cpu.FusionOp, ctx: LoweringContext) -> Lowered:
    """None of the above: refused."""
    kind = fusion.kind.data
    raise LoweringError(fusion, f"the '{kind}' fusion does not hold a chain of its kind")
