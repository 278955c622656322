"""Register-blocked OpenCL kernels for conv2d and fully_connected (PERF_NOTES.md's PoCL style).

Every kernel here keeps an accumulator tile in registers: one work-item computes `MR` output
pixels x `NV` vectors of `VW` output channels (`floatVW`, VW = 16 or 8), with the filter
packed at lowering so that a work-item's channel vectors are contiguous. Inputs are read as
scalars and broadcast (`a * b + c` on vectors), weights through `__global floatVW*`
pointers; no vload/vstore/fma builtins, which PoCL does not inline.

- `gemm`: 1x1 convs with unit strides and no padding, and fully_connected: a GEMM over
  the flattened pixels (rows) x output channels, weights packed `[OC/NR][K][NV][VW]`
  (NR = NV * VW). The last row tile reads its missing rows from the last row and stores nothing
  for them.
- `direct_conv`: any other conv with groups 1 (strides, dilations, pads): MR
  consecutive pixels of one output row. A tile whose taps all lie inside the row reads the
  input directly (one loop over (kw, ic) when the taps are contiguous); in an edge tile each
  pixel's input pointer points at a zero vector of C floats (a lowering constant) where the
  tap falls outside the image, so the channel loop has no branch. Weights packed
  `[OC/NR][KH][KW][C][NV][VW]`.
- `depthwise`: MR consecutive pixels (a whole output row up to 16 pixels, 8 when strided) x
  one `floatVW` of channels (VW 16, 8, 4 or 2) at a time, for as many channel blocks as
  leave `DEPTHWISE_MIN_ITEMS` work-items; the input
  columns a tile needs are loaded once per filter row and shared between its pixels and
  taps (unguarded loads for tiles inside the row). Weights packed `[C/VW][KH][KW][VW]`.

The sign of a zero sum is the reference's (docs/semantics.md): a depthwise sum starts at -0.0,
the exact additive identity (products that are all -0.0 sum to -0.0), or at the bias; the GEMM
and direct conv, matrix products on the reference (BLAS, from +0.0, the bias added after),
start at +0.0 (`bias + 0.0f`: never -0.0). Taps in the padding count with their products with
+0.0, as in the reference's sum over the zero-padded input (+0.0 for a positive weight, NaN
for an infinite one).

The fused epilogue (activation, then the `ocl.fusion` ops) runs on every accumulator vector
before its store; a residual read `RESIDUAL<j>[gid]` becomes a `floatVW` load at the
accumulator's own output vector, `RESIDUAL<j>[gid % C]` one at its channel vector.
Only constant filters are tiled. Output channel counts of the GEMM and direct conv are padded
with zero filter rows (and a constant bias padded alike) to whole vectors and, where that
makes a wider tile, past them (`channel_layout`: 36 -> 48 as 3 x float16); results are
stored in float4 pieces or lane by lane, the padding dropped (whole padding vectors too).
Under 8 output channels only dot products of `NARROW_DEPTH` or more are tiled (one float8).
Depthwise convs need an even channel count (`float4` or `float2` vectors when not divisible
by 8). The caller falls back to its one-element-per-work-item kernels otherwise (None).

8-bit storage (int8_storage.py, offered by `opencl-bufferize`): the GEMM, direct and depthwise
kernels read an input (and same-shape residuals) stored as 8-bit integers, dequantized at the
load (a 256-entry float table for scalar loads, `scale * (convert_floatN(c) - zp)` for
vectors), and store a result ending in a round trip as `q + zp`; bit for bit the float path.

Precision: buffers and packed filters hold `REAL` (program.py's template type: float, or half
in fp16); accumulators, the epilogue and the loaded filter and input values are float
(`WIDEN<n>` converts a `REAL<n>` load, `NARROW<n>` the result at its store), so fp16 halves
the memory traffic and keeps float32 sums.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

import numpy as np
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.dialects.nn.base import get_int, get_ints
from irc.targets.opencl.int8_storage import TABLE, Int8Storage, current_offer
from irc.targets.opencl.int8_weights import MAX_ROWS, MIN_WEIGHTS, int8_weights
from irc.targets.opencl.residuals import padded_residual, padded_residual_vector

TileKernel = tuple[str, list[SSAValue | str], list[int]]
"""(kernel name, inputs, global size) as a lowering (`lowerings.registry`) returns them."""

ROW_TILES = (8, 7, 6)
"""Pixel tile sizes (MR) tried for convs and GEMMs: the one wasting fewest rows wins, larger
first on ties."""
DEPTHWISE_TILES = (8, 7, 6, 4)
DEPTHWISE_STRIDED_TILES = (4, 3)
DEPTHWISE_MIN_ITEMS = 32
"""A depthwise work-item of the `cpu` kernel style loops over the channel blocks of its
pixels, as many as leave this many work-items (all of them when there are fewer): on PoCL
(2 threads, Xeon @ 2.50GHz AVX-512) face detection's float4 / float2 depthwise convs ran in
0.55-0.72x the time of one block per work-item, MobileNetV2's 0.64-1.03x."""
WHOLE_ROW_DEPTHWISE = 16
WHOLE_ROW_DEPTHWISE_STRIDED = 8
"""Output rows up to this wide are one depthwise tile (stride 1; stride 2 or more): on PoCL
(2 threads, Xeon @ 2.50GHz AVX-512) face detection's 16x16 depthwise convs ran in 0.5-0.67x
the time of 8-pixel tiles, MobileNetV2's 14x14 ones 0.72-0.82x; 16-pixel tiles of 64-pixel
rows were 1.2-1.4x slower."""


def vector_width(channels: int) -> int:
    """16 or 8 when `channels` divides by it (the channel vector), else 0 (not tiled)."""
    return 16 if channels % 16 == 0 else 8 if channels % 8 == 0 else 0


def vectors_per_item(blocks: int, width: int) -> int:
    """NV: how many `floatVW` vectors of output channels one work-item accumulates."""
    if width == 16:  # 3 x float16 (48 channels) measured 0-25 % faster than 2 where both fit
        return 3 if blocks % 3 == 0 else 2 if blocks % 2 == 0 else 1
    for nv in (4, 3, 2):
        if blocks % nv == 0:
            return nv
    return 1


TILE_RATE = {8: 45.0, 16: 36.0, 24: 61.0}
"""GFLOP/s of the GEMM and direct conv per tile width (NV x VW output channels of 8 pixels)
on PoCL, 2 threads, Xeon @ 2.50GHz AVX-512 (face detection's 1x1 convs): 32 or more channels
ran at 90-110 (`WIDE_TILE_RATE`). Only their ratios matter."""
WIDE_TILE_RATE = 100.0
PADDING_DEPTH = 32
"""The shortest dot product (K) for which output channels are padded past a multiple of 8 to
widen the tile: face detection's 1x1 conv 24 -> 24 (K 24) ran 13 % slower as 24 of 32
channels, its 32 -> 36 (K 32) 2x faster as 36 of 48 than as 8-channel tiles."""


NARROW_DEPTH = 32
"""Under 8 output channels, the shortest dot product (K) tiled as one float8 of channels:
face detection's 1x1 convs 88 -> 2 and 96 -> 6 ran in 0.57x and 0.27x the time of one
work-item per output element (PoCL, 2 threads)."""


def channel_layout(channels: int, depth: int) -> tuple[int, int, int]:
    """(padded channels, VW, NV) for `channels` output channels of dot products of
    length `depth`: the padding to a multiple of 8, 16, 32 or 48 channels (at most a third
    more, and past 8 only for `depth` >= PADDING_DEPTH) whose tile does the most useful work
    (`TILE_RATE` x the share of channels that are not padding). 36 channels become 48 in
    3 x float16 (not 40 in 5 x float8), 88 become 96, 28 become 32 in 2 x float16."""
    best: tuple[float, int, int, int] | None = None
    for step in (8, 16, 32, 48):
        padded = -(-channels // step) * step
        if step > 8 and (3 * padded > 4 * channels or depth < PADDING_DEPTH):
            continue
        vw = vector_width(padded)
        nv = vectors_per_item(padded // vw, vw)
        score = channels / padded * TILE_RATE.get(nv * vw, WIDE_TILE_RATE)
        if best is None or score > best[0] + 1e-9:
            best = (score, padded, vw, nv)
    assert best is not None
    return best[1], best[2], best[3]


def row_tile(count: int, candidates: tuple[int, ...] = ROW_TILES) -> int:
    """The pixel tile for `count` pixels (rows): fewest padded rows, larger tile on ties."""
    if count <= min(candidates):
        return max(count, 1)
    return min(candidates, key=lambda mr: (-(-count // mr) * mr, -mr))


class KernelProgram(Protocol):
    """What the generators need of `program.Program`."""

    precision: str
    """`fp32` or `fp16` (program.py's PRECISIONS)."""

    kernel_style: str
    """`cpu` or `gpu` (program.py's KERNEL_STYLES): a `gpu` program keeps one channel block
    per depthwise work-item (a GPU wants the work-items)."""

    def kernel(self, signature_and_body: str, comment: str) -> str: ...

    def constant(self, array: np.ndarray, table: bool = False) -> str: ...


class TiledKernels:
    """Generates the register-blocked kernels of one op into a `program.Program`.

    `kernel` and `residual_pattern` are the lowerings' helpers (passed in: lowerings.helpers
    imports this module)."""

    def __init__(
        self,
        program: KernelProgram,
        act: list[str],
        kernel: Callable[[int, str], str],
        residual_pattern: re.Pattern[str],
    ) -> None:
        self.program = program
        self.act = act
        self.make_kernel = kernel
        self.residual_pattern = residual_pattern
        self.offer = current_offer(program)
        """The 8-bit storage `opencl-bufferize` offers this op (int8_storage.py), or None."""
        self._begin(None, char=False)

    def _begin(self, x: SSAValue | None, char: bool = True) -> None:
        """Start a kernel reading `x` as its input `x0`: with `char`, `x0`, same-shape
        residuals and the result take the 8-bit storage the offer has for them (claimed when
        the kernel is finished); without, every tensor is `REAL`."""
        offer = self.offer if char else None
        self._char_x = offer.inputs.get(x) if offer is not None and x is not None else None
        self._x_value = x
        self._char_y = None
        if offer is not None and offer.result is not None and self.act:
            if self.act[-1] == offer.product:
                self._char_y = offer.result
        self._residuals_char = offer is not None
        self._char_residuals: dict[int, Int8Storage] = {}
        self._char_params: dict[int, str] = {}
        """Regular inputs other than `x0` that are 8-bit (a zero tap row)."""

    def _x_type(self, width: int = 0) -> str:
        """The element type of a pointer into `x0` (`width` elements, 0: one)."""
        if self._char_x is not None:
            return self._char_x.pointer(width)
        return f"REAL{width or ''}"

    scalar_table = True
    """Scalar 8-bit loads dequantize through a table (`Int8Storage.table_load`), not
    arithmetic (gpu_kernels.py: arithmetic)."""

    def _x_load(self, load: str, width: int = 0) -> str:
        """The float (or `floatW`) value of a load from `x0`."""
        if self._char_x is not None:
            if not width and self.scalar_table:
                return self._char_x.table_load(load)
            return self._char_x.dequantize(load, width)
        return f"WIDEN{width or ''}({load})"

    def _zero_taps(self, c: int) -> str:
        """The constant read for `c` channels of a tap outside the image: float zeros, or the
        zero point when `x0` is 8-bit (it dequantizes to +0.0)."""
        if self._char_x is None:
            return self.program.constant(np.zeros(c, np.float32))
        dtype = np.int8 if self._char_x.ctype == "char" else np.uint8
        return self.program.constant(np.full(c, self._char_x.zero_point, dtype))

    def _residual_storage(self, m: re.Match[str]) -> Int8Storage | None:
        """The 8-bit storage of a same-shape residual read `m` (`RESIDUAL<j>[gid]`), or
        None (float, or a per-channel / channel-padded read)."""
        if not self._residuals_char or self.offer is None:
            return None
        if m.group(2) is not None or m.group(3) is not None:
            return None
        j = int(m.group(1))
        if j >= len(self.offer.residuals):
            return None
        storage = self.offer.inputs.get(self.offer.residuals[j])
        if storage is not None:
            self._char_residuals[j] = storage
        return storage

    def _int8_weights(self, weights: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The GEMM's (padded) weights as 8-bit integers and per-channel scales, when it
        streams them for few rows in fp32 (int8_weights.py), else None."""
        if rows > MAX_ROWS or weights.size < MIN_WEIGHTS or self.program.precision != "fp32":
            return None
        return int8_weights(weights)

    def _epilogue(self) -> list[str]:
        """The epilogue expressions before the store: without the round trip's product when
        the result is stored 8-bit."""
        return self.act[:-1] if self._char_y is not None else self.act

    def _make(self, body: str, inputs: list[SSAValue | str]) -> str:
        """The kernel text with its 8-bit parameters typed, the offer's storage claimed."""
        params = dict(self._char_params)
        if TABLE in body and self._char_x is not None:  # the table: the last regular input
            params[len(inputs)] = "float"  # float32 in every precision
            body = body.replace(TABLE, f"x{len(inputs)}")
            inputs.append(self.program.constant(self._char_x.table(), table=True))
        n_in = len(inputs)
        text = self.make_kernel(n_in, body)
        if self._char_x is not None:
            params[0] = self._char_x.ctype
        params |= {n_in + j: s.ctype for j, s in self._char_residuals.items()}
        for index, ctype in params.items():
            old = f"__global const REAL* restrict x{index},"
            assert old in text, old
            text = text.replace(old, f"__global const {ctype}* restrict x{index},", 1)
        if self._char_y is not None:
            old = "__global REAL* restrict y)"
            assert old in text, old
            text = text.replace(old, f"__global {self._char_y.ctype}* restrict y)", 1)
        if self.offer is not None:
            if self._char_x is not None and self._x_value is not None:
                self.offer.claimed_inputs.add(self._x_value)
            for j in self._char_residuals:
                self.offer.claimed_inputs.add(self.offer.residuals[j])
            if self._char_y is not None:
                self.offer.claimed_result = True
        return text

    def _store(
        self, vw: int, acc: str, pixel: str, vector: str, channels: int, padded: bool = False
    ) -> str:
        """Apply the epilogue to accumulator `acc` (channel vector `vector` of output pixel
        `pixel`) and store it: one `floatVW` store when `channels` divides by VW, else in
        `float4` pieces (channels divisible by 4) or lane by lane, the lanes past `channels`
        (zero-padded filter rows) dropped. `padded`: the filter has whole vectors of padding
        past `channels`, whose stores are dropped too."""
        vec, real = f"float{vw}", f"REAL{vw}"
        if channels % vw == 0:
            out_index = f"({pixel}) * {channels // vw} + {vector}"

            def load(m: re.Match[str]) -> str:
                if m.group(3) is not None:
                    return padded_residual_vector(m, vw, pixel, f"({vector}) * {vw}")
                index = out_index if m.group(2) is None else vector
                if (storage := self._residual_storage(m)) is not None:
                    element = f"((__global const {storage.pointer(vw)}*)RESIDUAL{m.group(1)})"
                    return storage.dequantize(f"{element}[{index}]", vw, added=True)
                return f"WIDEN{vw}(((__global const {real}*)RESIDUAL{m.group(1)})[{index}])"

            exprs = [self.residual_pattern.sub(load, e) for e in self._epilogue()]
            body = "".join(f"            v = {e};\n" for e in exprs if e != "v")
            if self._char_y is not None:
                target = f"((__global {self._char_y.pointer(vw)}*)y)"
                value = self._char_y.store("v", vw)
            else:
                target, value = f"((__global {real}*)y)", f"NARROW{vw}(v)"
            store = f"        {{ {vec} v = {acc};\n{body}"
            store += f"            {target}[{out_index}] = {value}; }}\n"
            if padded:
                store = f"        if (({vector}) < {channels // vw})\n{store}"
            return store
        lines = [
            f"        {{ const int c0 = ({vector}) * {vw}; const int e0 = ({pixel}) * {channels};\n"
        ]
        if channels % 4 == 0:  # whole float4 pieces, aligned: pixel * channels and c0 divide by 4
            for quad in range(vw // 4):
                lanes = "".join(f"{lane:x}" for lane in range(4 * quad, 4 * quad + 4))
                element, channel = f"(e0 + c0) / 4 + {quad}", f"c0 / 4 + {quad}"

                def quad_load(
                    m: re.Match[str],
                    element: str = element,
                    channel: str = channel,
                    quad: int = quad,
                ) -> str:
                    if m.group(3) is not None:
                        return padded_residual_vector(m, 4, pixel, f"c0 + {4 * quad}")
                    index = element if m.group(2) is None else channel
                    if (storage := self._residual_storage(m)) is not None:
                        quads = f"((__global const {storage.pointer(4)}*)RESIDUAL{m.group(1)})"
                        return storage.dequantize(f"{quads}[{index}]", 4, added=True)
                    return f"WIDEN4(((__global const REAL4*)RESIDUAL{m.group(1)})[{index}])"

                exprs = [self.residual_pattern.sub(quad_load, e) for e in self._epilogue()]
                body = "".join(f" v = {e};" for e in exprs if e != "v")
                if self._char_y is not None:
                    target = f"((__global {self._char_y.pointer(4)}*)y)"
                    value = self._char_y.store("v", 4)
                else:
                    target, value = "((__global REAL4*)y)", "NARROW4(v)"
                lines.append(
                    f"            if (c0 + {4 * quad} < {channels}) {{ float4 v = {acc}.s{lanes};"
                    f"{body} {target}[{element}] = {value}; }}\n"
                )
            return "".join(lines) + "        }\n"
        for lane in range(vw):
            element, channel = f"e0 + c0 + {lane}", f"c0 + {lane}"

            def scalar(m: re.Match[str], element: str = element, channel: str = channel) -> str:
                if m.group(3) is not None:
                    return padded_residual(m, element, channel, pixel=pixel)
                index = element if m.group(2) is None else channel
                if (storage := self._residual_storage(m)) is not None:
                    return storage.dequantize(f"RESIDUAL{m.group(1)}[{index}]", added=True)
                return f"WIDEN(RESIDUAL{m.group(1)}[{index}])"

            exprs = [self.residual_pattern.sub(scalar, e) for e in self._epilogue()]
            body = "".join(f" v = {e};" for e in exprs if e != "v")
            value = "v" if self._char_y is None else self._char_y.store("v")
            lines.append(
                f"            if ({channel} < {channels}) {{ float v = {acc}.s{lane:x};{body}"
                f" y[{element}] = {value}; }}\n"
            )
        return "".join(lines) + "        }\n"

    def _store_row(
        self,
        vw: int,
        count: int,
        shape: tuple[int, int, int],
        vectors: list[tuple[str, str]],
        channels: int,
        wrap: bool = False,
        padded: bool = False,
    ) -> list[str]:
        """Stores of `count` consecutive pixels `ow0 + r` of output row `oh` (`shape`: OH, OW
        and the tiles per row, for the ragged guard): for each pixel, each (accumulator
        template with `{r}`, channel vector) of `vectors`; `wrap` parenthesises the pixel."""
        oh, ow, tiles_w = shape
        ragged = tiles_w * count > ow
        lines = []
        for r in range(count):
            lines.append(f"    if (ow0 + {r} < {ow}) {{\n" if ragged else "    {\n")
            pixel = f"(n * {oh} + oh) * {ow} + ow0 + {r}"
            pixel = f"({pixel})" if wrap else pixel
            for acc, vector in vectors:
                lines.append(self._store(vw, acc.format(r=r), pixel, vector, channels, padded))
            lines.append("    }\n")
        return lines

    def _finish(self, body: str, inputs: list[SSAValue | str], total: int, desc: str) -> TileKernel:
        name = self.program.kernel(self._make(body, inputs), desc)
        return name, inputs, [total]

    def gemm(
        self,
        x: SSAValue,
        weights: np.ndarray,
        bias: SSAValue | np.ndarray | None,
        rows: int,
        desc: str,
    ) -> TileKernel | None:
        """y[rows, N] = x[rows, K] * weights[N, K]^T (+ bias), register-blocked."""
        n_out, k = weights.shape
        layout = self._channels(n_out, bias, k)
        if layout is None:
            return None
        self._begin(x)
        vw, nv, groups, weights, bias_input = layout(weights)
        mr = row_tile(rows)
        tiles = -(-rows // mr)
        vec, real = f"float{vw}", f"REAL{vw}"
        # [N, K] -> [N/NR][K][NV][VW]
        packed = weights.reshape(groups, nv, vw, k).transpose(0, 3, 1, 2)
        quantized = self._int8_weights(weights, rows)
        # Weights larger than the rows (a transformer's FC: 768 x 3072 weights, 128 rows):
        # consecutive work-items take consecutive row tiles of one weight panel, which stays
        # in cache (channel groups first re-read every panel from memory: 9 vs 105 GFLOP/s
        # for 128 x 768 x 3072 on PoCL); else channel groups first (one row tile in cache).
        rows_first = n_out > rows
        order = (
            f"    const int m0 = (gid % {tiles}) * {mr}; const int cg = gid / {tiles};\n"
            if rows_first
            else f"    const int cg = gid % {groups}; const int m0 = (gid / {groups}) * {mr};\n"
        )
        lines = [
            order,
            f"    __global const {real}* wp = (__global const {real}*)x1 + cg * {k * nv};\n",
        ]
        scales_index = 3 if bias_input is not None else 2
        if quantized is not None:  # bytes times the channel's scale (int8_weights.py)
            lines[-1] = (
                f"    __global const char{vw}* wp = (__global const char{vw}*)x1 + cg * {k * nv};\n"
            )
            scales = f"((__global const {vec}*)x{scales_index})"
            lines += [f"    const {vec} s{v} = {scales}[cg * {nv} + {v}];\n" for v in range(nv)]
        for r in range(mr):
            row = f"min(m0 + {r}, {rows - 1})" if tiles * mr > rows else f"m0 + {r}"
            lines.append(f"    __global const {self._x_type()}* a{r} = x0 + ({row}) * {k};\n")
        for v in range(nv):
            init = (
                f"WIDEN{vw}(((__global const {real}*)x2)[cg * {nv} + {v}]) + ({vec})(0.0f)"
                if bias_input is not None
                else f"({vec})(0.0f)"
            )
            for r in range(mr):
                lines.append(f"    {vec} acc{r}_{v} = {init};\n")
        lines.append(f"    for (int k = 0; k < {k}; ++k) {{\n")
        for v in range(nv):
            weight = f"WIDEN{vw}(wp[k * {nv} + {v}])"
            if quantized is not None:
                weight = f"convert_float{vw}(wp[k * {nv} + {v}]) * s{v}"
            lines.append(f"        const {vec} w{v} = {weight};\n")
        for r in range(mr):
            lines.append(f"        const float b{r} = {self._x_load(f'a{r}[k]')};\n")
            for v in range(nv):
                lines.append(f"        acc{r}_{v} += b{r} * w{v};\n")
        lines.append("    }\n")
        padded = groups * nv * vw > n_out
        for r in range(mr):
            guard = f"    if (m0 + {r} < {rows}) {{\n" if tiles * mr > rows else "    {\n"
            lines.append(guard)
            for v in range(nv):
                vector = f"cg * {nv} + {v}"
                store = self._store(vw, f"acc{r}_{v}", f"m0 + {r}", vector, n_out, padded)
                lines.append(store)
            lines.append("    }\n")
        inputs: list[SSAValue | str] = [x, self.program.constant(packed)]
        if bias_input is not None:
            inputs.append(bias_input)
        if quantized is not None:
            q, scales = quantized
            inputs[1] = self.program.constant(q.reshape(groups, nv, vw, k).transpose(0, 3, 1, 2))
            self._char_params[1] = "char"
            inputs.append(self.program.constant(scales.reshape(groups, nv, vw), table=True))
            self._char_params[scales_index] = "float"
            desc += " 8-bit weights"
        first = ", rows first" if rows_first else ""
        desc += f" (tiled x{vw}) [{mr}x{nv * vw} tile{first}]"
        return self._finish("".join(lines), inputs, tiles * groups, desc)

    def _channels(
        self, channels: int, bias: SSAValue | np.ndarray | None, depth: int
    ) -> Callable[[np.ndarray], tuple[int, int, int, np.ndarray, SSAValue | str | None]] | None:
        """How output channels are vectorised: a function of the filter `[OC, ...]` giving
        (VW, NV, groups of NV vectors, filter zero-padded to whole vectors, bias input).
        Channel counts are padded as `channel_layout` says (a constant bias is padded too);
        a computed bias is not padded past a multiple of 8; fewer than 8 channels with dot
        products under `NARROW_DEPTH`, or a computed bias with padding, give None
        (untiled)."""
        if isinstance(bias, SSAValue) and isinstance(bias.owner, nn.ConstantOp):
            bias = array_from_dense(bias.owner.value).astype(np.float32)
        if isinstance(bias, np.ndarray) and bias.size != channels:
            return None
        padded = -(-channels // 8) * 8
        if channels < 8 and depth < NARROW_DEPTH:
            return None  # short dot products: padding wastes most of the vector
        if padded != channels and isinstance(bias, SSAValue):
            return None
        if isinstance(bias, SSAValue):  # a computed bias: no padding past the multiple of 8
            vw = vector_width(padded)
            nv = vectors_per_item(padded // vw, vw) if padded == channels else 1
        else:
            padded, vw, nv = channel_layout(channels, depth)
        blocks = padded // vw

        def apply(weights: np.ndarray) -> tuple[int, int, int, np.ndarray, SSAValue | str | None]:
            extra = [(0, padded - channels)] + [(0, 0)] * (weights.ndim - 1)
            weights = np.pad(weights, extra)
            bias_input: SSAValue | str | None = None
            if isinstance(bias, np.ndarray):
                padded_bias = np.pad(bias.reshape(-1).astype(np.float32), (0, padded - channels))
                bias_input = self.program.constant(padded_bias)
            elif bias is not None:
                bias_input = bias
            return vw, nv, blocks // nv, weights, bias_input

        return apply

    def direct_conv(
        self,
        op: nn.Conv2DOp,
        weights: np.ndarray,
        bias: SSAValue | np.ndarray | None,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        props: dict,
        desc: str,
    ) -> TileKernel | None:
        """Groups-1 conv: MR pixels of one output row x NV*VW channels per work-item."""
        n, h, w, c = in_shape
        oc, kh, kw, _ = weights.shape
        _, oh, ow, _ = out_shape
        layout = self._channels(oc, bias, kh * kw * c)
        if layout is None:
            return None
        self._begin(op.input)
        vw, nv, groups, weights, bias_input = layout(weights)
        sh, sw = get_ints(props, "strides")
        dh, dw = get_ints(props, "dilations")
        pt, pl = get_ints(props, "pads")[:2]
        mr = row_tile(ow)
        tiles_w = -(-ow // mr)
        vec, real = f"float{vw}", f"REAL{vw}"
        # [OC, KH, KW, C] -> [OC/NR][KH][KW][C][NV][VW] (OC padded to whole vectors)
        packed = weights.reshape(groups, nv, vw, kh, kw, c).transpose(0, 3, 4, 5, 1, 2)
        zeros = self._zero_taps(c)
        if self._char_x is not None:
            self._char_params[2] = self._char_x.ctype
        lines = [
            f"    const int cg = gid % {groups}; int t = gid / {groups};\n",
            f"    const int ow0 = (t % {tiles_w}) * {mr}; t /= {tiles_w};\n",
            f"    const int oh = t % {oh}; const int n = t / {oh};\n",
            f"    __global const {real}* wbase = (__global const {real}*)x1"
            f" + cg * {kh * kw * c * nv};\n",
        ]
        for v in range(nv):
            init = (
                f"WIDEN{vw}(((__global const {real}*)x3)[cg * {nv} + {v}]) + ({vec})(0.0f)"
                if bias_input is not None
                else f"({vec})(0.0f)"
            )
            for r in range(mr):
                lines.append(f"    {vec} acc{r}_{v} = {init};\n")

        def fma_loop(count: str, weight: str, indent: str) -> list[str]:
            out = [f"{indent}for (int j = 0; j < {count}; ++j) {{\n"]
            out += [
                f"{indent}    const {vec} w{v} = WIDEN{vw}({weight}[j * {nv} + {v}]);\n"
                for v in range(nv)
            ]
            for r in range(mr):
                out.append(f"{indent}    const float b{r} = {self._x_load(f'a{r}[j]')};\n")
                out += [f"{indent}    acc{r}_{v} += b{r} * w{v};\n" for v in range(nv)]
            return [*out, f"{indent}}}\n"]

        def padded_row() -> list[str]:
            # a filter row in the padding adds its products with +0.0 (the reference's
            # zero-padded sum): the same for every pixel of the tile
            out = [f"            {vec} z{v} = ({vec})(-0.0f);\n" for v in range(nv)]
            out.append(f"            for (int j = 0; j < {kw * c}; ++j) {{\n")
            out += [
                f"                z{v} += 0.0f * WIDEN{vw}(wk[j * {nv} + {v}]);\n"
                for v in range(nv)
            ]
            out.append("            }\n")
            out += [f"            acc{r}_{v} += z{v};\n" for r in range(mr) for v in range(nv)]
            return out

        # a tile whose every tap lies inside the row reads it directly (one loop over
        # (kw, ic) when the taps are contiguous); edge tiles point missing taps at zeros
        last = (mr - 1) * sw + (kw - 1) * dw
        xt = self._x_type()
        lines += [
            f"    const int iwt = ow0 * {sw} - {pl};\n",
            f"    const int inside = iwt >= 0 && iwt + {last} < {w};\n",
            f"    for (int kh = 0; kh < {kh}; ++kh) {{\n",
            f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n",
            f"        __global const {real}* wk = wbase + kh * {kw * c * nv};\n",
            f"        if (ih < 0 || ih >= {h}) {{\n",
            *padded_row(),
            "            continue;\n",
            "        }\n",
            f"        __global const {xt}* row = x0 + (n * {h} + ih) * {w * c};\n",
            "        if (inside) {\n",
        ]
        if dw == 1:
            lines += [
                f"            __global const {xt}* a{r} = row + (iwt + {r * sw}) * {c};\n"
                for r in range(mr)
            ]
            lines += fma_loop(str(kw * c), "wk", "            ")
        else:
            lines.append(f"            for (int kw = 0; kw < {kw}; ++kw) {{\n")
            lines += [
                f"                __global const {xt}* a{r} = row"
                f" + (iwt + {r * sw} + kw * {dw}) * {c};\n"
                for r in range(mr)
            ]
            lines.append(f"                __global const {real}* wp = wk + kw * {c * nv};\n")
            lines += fma_loop(str(c), "wp", "                ")
            lines.append("            }\n")
        lines += ["        } else {\n", f"            for (int kw = 0; kw < {kw}; ++kw) {{\n"]
        for r in range(mr):
            lines.append(
                f"                const int iw{r} = iwt + {r * sw} + kw * {dw};\n"
                f"                __global const {xt}* a{r} = (iw{r} >= 0 && iw{r} < {w}"
                f" && ow0 + {r} < {ow}) ? row + iw{r} * {c} : x2;\n"
            )
        lines.append(f"                __global const {real}* wp = wk + kw * {c * nv};\n")
        lines += fma_loop(str(c), "wp", "                ")
        lines.append("            }\n        }\n    }\n")
        stores = [(f"acc{{r}}_{v}", f"cg * {nv} + {v}") for v in range(nv)]
        padded = groups * nv * vw > oc
        lines += self._store_row(vw, mr, (oh, ow, tiles_w), stores, oc, True, padded)
        inputs: list[SSAValue | str] = [op.input, self.program.constant(packed), zeros]
        if bias_input is not None:
            inputs.append(bias_input)
        desc += f" (tiled x{vw}) [{mr}x{nv * vw} tile]"
        return self._finish("".join(lines), inputs, n * oh * tiles_w * groups, desc)

    def depthwise(
        self,
        op: nn.Conv2DOp,
        weights: np.ndarray,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        props: dict,
        desc: str,
    ) -> TileKernel | None:
        """Depthwise conv: MR pixels of one output row x one `floatVW` of channels."""
        n, h, w, c = in_shape
        _, kh, kw, _ = weights.shape
        _, oh, ow, _ = out_shape
        vw = vector_width(c) or (4 if c % 4 == 0 else 2 if c % 2 == 0 else 0)
        if not vw:
            return None
        self._begin(op.input)
        sh, sw = get_ints(props, "strides")
        dh, dw = get_ints(props, "dilations")
        pt, pl = get_ints(props, "pads")[:2]
        blocks = c // vw
        whole = WHOLE_ROW_DEPTHWISE if sw == 1 else WHOLE_ROW_DEPTHWISE_STRIDED
        if ow <= whole:  # one tile per row: no edge tiles on both sides
            mr = ow
        else:
            mr = row_tile(ow, DEPTHWISE_TILES if sw == 1 else DEPTHWISE_STRIDED_TILES)
        tiles_w = -(-ow // mr)
        columns = (mr - 1) * sw + (kw - 1) * dw + 1
        vec, real = f"float{vw}", f"REAL{vw}"
        # [C, KH, KW, 1] -> [C/VW][KH][KW][VW]
        packed = weights.reshape(blocks, vw, kh, kw).transpose(0, 2, 3, 1)
        bias = (
            f"WIDEN{vw}(((__global const {real}*)x2)[cb])"
            if op.bias is not None
            else f"({vec})(-0.0f)"
        )
        # a work-item loops over `per_item` channel blocks of its pixels, as many as leave
        # DEPTHWISE_MIN_ITEMS work-items
        tiles = n * oh * tiles_w
        min_items = DEPTHWISE_MIN_ITEMS if self.program.kernel_style == "cpu" else tiles * blocks
        per_item = max(
            d
            for d in range(1, blocks + 1)
            if blocks % d == 0 and tiles * (blocks // d) >= min(min_items, tiles * blocks)
        )
        chunks = blocks // per_item
        lines = [
            f"    const int cb0 = (gid % {chunks}) * {per_item}; int t = gid / {chunks};\n",
            f"    const int ow0 = (t % {tiles_w}) * {mr}; t /= {tiles_w};\n",
            f"    const int oh = t % {oh}; const int n = t / {oh};\n",
            f"    const int iw0 = ow0 * {sw} - {pl};\n",
            f"    const int inside = iw0 >= 0 && iw0 + {columns - 1} < {w};\n",
            f"    for (int cb = cb0; cb < cb0 + {per_item}; ++cb) {{\n",
            f"    __global const {real}* wp = (__global const {real}*)x1 + cb * {kh * kw};\n",
        ]
        lines += [f"    {vec} acc{r} = {bias};\n" for r in range(mr)]
        # a filter row in the padding adds its products with +0.0 (the reference's
        # zero-padded sum): the same for every pixel of the tile
        padded_taps = " + ".join(f"0.0f * WIDEN{vw}(wp[kh * {kw} + {x}])" for x in range(kw))
        lines += [
            f"    for (int kh = 0; kh < {kh}; ++kh) {{\n",
            f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n",
            f"        if (ih < 0 || ih >= {h}) {{\n",
            f"            const {vec} z = {padded_taps};\n",
            *[f"            acc{r} += z;\n" for r in range(mr)],
            "            continue;\n",
            "        }\n",
            f"        __global const {self._x_type(vw)}* xr = (__global const"
            f" {self._x_type(vw)}*)x0 + (n * {h} + ih) * {w * blocks} + cb;\n",
        ]

        def taps(guarded: bool) -> list[str]:
            out = []
            for j in range(columns):
                load = self._x_load(f"xr[(iw0 + {j}) * {blocks}]", vw)
                if guarded:
                    load = f"(iw0 + {j} >= 0 && iw0 + {j} < {w}) ? {load} : ({vec})(0.0f)"
                out.append(f"            const {vec} c{j} = {load};\n")
            for x in range(kw):
                out.append(f"            const {vec} w{x} = WIDEN{vw}(wp[kh * {kw} + {x}]);\n")
                out += [f"            acc{r} += c{r * sw + x * dw} * w{x};\n" for r in range(mr)]
            return out

        # tiles whose columns all lie inside the row load them unguarded
        lines += ["        if (inside) {\n", *taps(False), "        } else {\n", *taps(True)]
        lines.append("        }\n    }\n")
        lines += self._store_row(vw, mr, (oh, ow, tiles_w), [("acc{r}", "cb")], c)
        lines.append("    }\n")
        inputs: list[SSAValue | str] = [op.input, self.program.constant(packed)]
        if op.bias is not None:
            inputs.append(op.bias)
        desc += f" (tiled x{vw}) [{mr}x{vw * per_item} tile]"
        return self._finish("".join(lines), inputs, tiles * chunks, desc)

    def conv_transpose(
        self,
        op: nn.Conv2DTransposeOp,
        weights: np.ndarray,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        props: dict,
        desc: str,
    ) -> TileKernel | None:
        """conv2d_transpose whose stride equals its kernel (2x2 stride 2: no two taps meet;
        dilation 1, no pads, groups 1), or None: a GEMM of the input pixels (rows) x KH*KW*OC
        columns (tap, channel), each column's value stored at its own output pixel. With
        OC divisible by 8, NV `floatVW` channel vectors per work-item (filter packed
        `[KH*KW*OC/NR][C][NV][VW]`); with fewer channels, one vector of all KH*KW*OC columns
        (up to 16) per row, stored lane by lane."""
        n, h, w, c = in_shape
        oc, kh, kw, cg = weights.shape
        if get_int(props, "groups") != 1 or cg != c or any(get_ints(props, "pads")):
            return None
        if tuple(get_ints(props, "strides")) != (kh, kw):
            return None
        if tuple(get_ints(props, "dilations")) != (1, 1) or tuple(out_shape) != (
            n,
            h * kh,
            w * kw,
            oc,
        ):
            return None
        self._begin(None, char=False)  # every tensor REAL
        taps, rows = kh * kw, n * h * w
        oh, ow = h * kh, w * kw
        columns = weights.transpose(1, 2, 0, 3).reshape(taps * oc, c)  # [(tap, oc), C]
        vw = vector_width(oc)
        if vw:
            per_tap = oc // vw
            blocks = taps * per_tap
            nv = vectors_per_item(blocks, vw)
            groups = blocks // nv
            packed = columns.reshape(groups, nv, vw, c).transpose(0, 3, 1, 2)
        else:
            per_tap, nv, groups = 0, 1, 1
            vw = next((width for width in (4, 8, 16) if taps * oc <= width), 0)
            if not vw:
                return None
            packed = np.pad(columns, [(0, vw - taps * oc), (0, 0)]).T  # [C][VW]
        mr = row_tile(rows)
        tiles = -(-rows // mr)
        ragged = tiles * mr > rows
        vec, real = f"float{vw}", f"REAL{vw}"
        lines = [
            f"    const int cg = gid % {groups}; const int m0 = (gid / {groups}) * {mr};\n",
            f"    __global const {real}* wp = (__global const {real}*)x1 + cg * {c * nv};\n",
        ]
        for r in range(mr):
            row = f"min(m0 + {r}, {rows - 1})" if ragged else f"m0 + {r}"
            lines.append(f"    __global const REAL* a{r} = x0 + ({row}) * {c};\n")
        for v in range(nv):
            if per_tap:
                lines.append(
                    f"    const int t{v} = (cg * {nv} + {v}) / {per_tap};"
                    f" const int o{v} = (cg * {nv} + {v}) % {per_tap};\n"
                )
                init = (
                    f"WIDEN{vw}(((__global const {real}*)x2)[o{v}]) + ({vec})(0.0f)"
                    if op.bias is not None
                    else f"({vec})(0.0f)"
                )
            else:
                lanes = [
                    f"WIDEN(x2[{lane % oc}]) + 0.0f"
                    if op.bias is not None and lane < taps * oc
                    else "0.0f"
                    for lane in range(vw)
                ]
                init = f"({vec})({', '.join(lanes)})"
            lines += [f"    {vec} acc{r}_{v} = {init};\n" for r in range(mr)]
        lines.append(f"    for (int k = 0; k < {c}; ++k) {{\n")
        for v in range(nv):
            lines.append(f"        const {vec} w{v} = WIDEN{vw}(wp[k * {nv} + {v}]);\n")
        for r in range(mr):
            lines.append(f"        const float b{r} = a{r}[k];\n")
            lines += [f"        acc{r}_{v} += b{r} * w{v};\n" for v in range(nv)]
        lines.append("    }\n")
        for r in range(mr):
            lines.append(f"    if (m0 + {r} < {rows}) {{\n" if ragged else "    {\n")
            lines.append(
                f"        const int m = m0 + {r}; const int iw = m % {w};"
                f" const int ih = (m / {w}) % {h}; const int nb = m / {w * h};\n"
            )
            for v in range(nv):
                acc = f"acc{r}_{v}"
                if per_tap:
                    pixel = (
                        f"(nb * {oh} + ih * {kh} + t{v} / {kw}) * {ow} + iw * {kw} + t{v} % {kw}"
                    )
                    lines.append(self._store(vw, acc, pixel, f"o{v}", oc))
                    continue
                # without residual reads the epilogue runs once on the vector (one call of a
                # builtin such as sigmoid's exp per row, not one per lane); never on a float16
                # (a builtin call on it is not inlined by PoCL and breaks the AVX2 ABI)
                whole = vw <= 8 and not any(self.residual_pattern.search(e) for e in self.act)
                if whole:
                    body = "".join(f" v = {e};" for e in self.act if e != "v")
                    lines.append(f"        {{ {vec} v = {acc};{body}\n")
                for lane in range(taps * oc):
                    (a, b), channel = divmod(lane // oc, kw), lane % oc
                    element = f"((nb * {oh} + ih * {kh} + {a}) * {ow} + iw * {kw} + {b}) * {oc}"
                    element += f" + {channel}"
                    if whole:
                        lines.append(f"            y[{element}] = v.s{lane:x};\n")
                    else:
                        lines.append(self._lane_store(f"{acc}.s{lane:x}", element, str(channel)))
                if whole:
                    lines.append("        }\n")
            lines.append("    }\n")
        inputs: list[SSAValue | str] = [op.input, self.program.constant(packed)]
        if op.bias is not None:
            inputs.append(op.bias)
        desc += f" (tiled x{vw}) [{mr}x{nv * vw} tile]"
        return self._finish("".join(lines), inputs, tiles * groups, desc)

    def _lane_store(self, value: str, element: str, channel: str) -> str:
        """Apply the epilogue to one float `value` (output element `element`, channel
        `channel`) and store it."""

        def scalar(m: re.Match[str]) -> str:
            if m.group(3) is not None:
                return padded_residual(m, element, channel)
            index = element if m.group(2) is None else channel
            return f"WIDEN(RESIDUAL{m.group(1)}[{index}])"

        exprs = [self.residual_pattern.sub(scalar, e) for e in self.act]
        body = "".join(f" v = {e};" for e in exprs if e != "v")
        return f"        {{ float v = {value};{body} y[{element}] = v; }}\n"

    def conv(
        self,
        op: nn.Conv2DOp,
        in_shape: tuple[int, ...],
        filter_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        props: dict,
        desc: str,
    ) -> TileKernel | None:
        """The register-blocked kernel of a conv with a constant filter, or None."""
        filt = op.filter.owner
        if not isinstance(filt, nn.ConstantOp):
            return None
        n, h, w, c = in_shape
        oc, kh, kw, icg = filter_shape
        groups = get_int(props, "groups")
        weights = array_from_dense(filt.value).astype(np.float32).reshape(filter_shape)
        if groups == c and icg == 1 and oc == c:
            return self.depthwise(op, weights, in_shape, out_shape, props, desc)
        if groups != 1:
            return None
        bias = op.bias
        pads = get_ints(props, "pads")
        pointwise = (kh, kw) == (1, 1) and tuple(get_ints(props, "strides")) == (1, 1)
        if pointwise and not any(pads):
            rows = n * h * w
            return self.gemm(op.input, weights.reshape(oc, c), bias, rows, desc)
        return self.direct_conv(op, weights, bias, in_shape, out_shape, props, desc)
