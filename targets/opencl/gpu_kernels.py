"""GPU-shaped OpenCL kernels (`opencl-bufferize{kernels=gpu}`): many light work-items.

`conv_kernels.py` gives each work-item a register tile of up to 8 pixels x 48 channels (a CPU
core's view: few, heavy work-items); a GPU with 100+ compute units then gets a few hundred
work-items per conv and idles. Here every work-item computes one `float4` of output channels
(`REAL4` storage) for `R` output pixels (1, 2 or 4), adjacent work-items taking adjacent
channel vectors, so the filter loads of a sub-group are one contiguous line and the input
loads are one broadcast address (TFLite GPU's and clDNN's choice for NHWC/PHWC4):

- `gemm`: 1x1 convs with unit strides and no padding, and fully_connected, as
  `y[M, N] = x[M, K] * w[N, K]^T`; filter packed `[K][N/4]` as `REAL4`. When the tiles alone
  would not fill the device (`target_items`), the K loop is split over `KS` work-items of one
  work-group (`KS` partial sums reduced in local memory in a fixed order, the epilogue run by
  the first slice): the small, deep layers at the end of a CNN (7x7x960 -> 320) get 4-8x the
  work-items. Work-groups are then `reqd_work_group_size(KS * L)`.
- `direct_conv`: any other groups-1 conv; filter packed `[KH][KW][C][OC/4]`; taps outside
  the image read a zero row (a lowering constant) so the channel loop has no branch.
- `depthwise`: one `float4` of channels for `R` consecutive output pixels of a row; filter
  packed `[KH][KW][C/4]`.
- `softmax`: a last-axis softmax with one work-group of `SOFTMAX_GROUP` work-items per row
  (max and sum reduced in local memory; NaN propagates as the reference's np.max does).

Output channel counts not divisible by 4 are padded with zero filter rows (and a constant bias
alike); the padding lanes are not stored. One-work-item-per-output-vector launches are padded
to a multiple of `GROUP_MULTIPLE` work-items (the extra ones return at once), so that the
work-group rule always finds a GPU-sized group. Accumulation is float in every precision
(`WIDEN`/`NARROW` as in program.py), with the reference's sign of a zero sum: from -0.0 (the
exact additive identity) in depthwise, from +0.0 with the bias added last in the GEMM and
direct conv (matrix products on the reference); taps in the padding multiply +0.0, as in the
reference's zero-padded sums. The fused epilogue runs on the accumulator before its store.
8-bit inputs and results as conv_kernels.py's (int8_storage.py), dequantized by arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue

from irc.dialects import nn
from irc.dialects.nn import array_from_dense
from irc.dialects.nn.base import get_float, get_ints
from irc.targets.opencl.conv_kernels import TiledKernels, TileKernel

VW = 4
"""Output channels per work-item vector (`float4`)."""

GROUP_MULTIPLE = 64
"""One-vector-per-work-item launches are padded to a multiple of this many work-items."""

ITEMS_PER_UNIT = 512
"""Work-items per compute unit that a launch should offer before K is split (`target_items`):
sixteen 32-wide sub-groups per unit keep loads in flight on every unit. Measured on an H100
(132 units, MobileNetV2, kernels' device time per run): 128 -> 0.608 ms, 512 -> 0.559 ms,
32 -> 0.868 ms (benchmarks/opencl_gpu.py's gpu / gpu-wide / gpu-narrow)."""

MAX_K_SPLIT = 32
MIN_K_PER_SLICE = 32
MAX_GROUP = 256
"""Largest work-group the K-split GEMM asks for (every OpenCL GPU runs 256)."""

SOFTMAX_GROUP = 256
SOFTMAX_MIN_COLUMNS = 128
"""Rows shorter than this keep lowerings/softmax.py's one-work-item-per-row softmax."""


@dataclass(frozen=True)
class GemmShape:
    """How a GPU GEMM launch is shaped."""

    rows_per_item: int
    """R: output rows (pixels) per work-item."""
    k_split: int
    """KS: work-items sharing one output tile's K loop (1: no split, no local memory)."""
    lanes: int
    """L: channel vectors per work-group when `k_split` > 1 (the work-group is KS * L)."""


def target_items(compute_units: int) -> int:
    """Work-items a launch should offer the device before its K loop is split."""
    return max(1, compute_units) * ITEMS_PER_UNIT


def gemm_shape(rows: int, vectors: int, k: int, compute_units: int) -> GemmShape:
    """The default GEMM shape: the largest R (4, 2, 1) whose launch still offers
    `target_items`; with R = 1 and too few items, K split over up to `MAX_K_SPLIT` slices
    (at least `MIN_K_PER_SLICE` of K each)."""
    want = target_items(compute_units)
    for r in (4, 2):
        if -(-rows // r) * vectors >= want:
            return GemmShape(r, 1, 1)
    items = rows * vectors
    split = 1
    while split < MAX_K_SPLIT and items * split < want and k // (2 * split) >= MIN_K_PER_SLICE:
        split *= 2
    if split == 1:
        return GemmShape(1, 1, 1)
    # lanes: a power of two from 8 to 32 dividing the channel vectors (no idle lanes), else
    # the smallest power of two covering them, at most 32
    lanes = next(
        (n for n in (32, 16, 8) if vectors % n == 0), min(32, 1 << (vectors - 1).bit_length())
    )
    while lanes * split > MAX_GROUP:
        lanes //= 2
    return GemmShape(1, split, lanes)


def pixels_per_item(pixels: int, vectors: int, compute_units: int) -> int:
    """R of direct and depthwise convs: 2 when the launch still offers `target_items`."""
    return 2 if -(-pixels // 2) * vectors >= target_items(compute_units) else 1


def _padded_launch(total: int) -> int:
    return -(-total // GROUP_MULTIPLE) * GROUP_MULTIPLE


def required_group(size: int) -> str:
    """The kernel attribute fixing its work-group size (`opencl-codegen` reads it back)."""
    return f"__attribute__((reqd_work_group_size({size}, 1, 1)))"


def _row_tile_prologue(total: int, vectors: int, tiles_w: int, r_count: int, oh: int) -> list[str]:
    """The first lines of a direct / depthwise kernel: work-item `gid` (past `total`: none) is
    channel vector `cv` of the `r_count` pixels from `ow0` of row `oh` of image `n`, its
    filter vectors at `wp`."""
    return [
        f"    if (gid >= {total}) return;\n",
        f"    const int cv = gid % {vectors}; int t = gid / {vectors};\n",
        f"    const int ow0 = (t % {tiles_w}) * {r_count}; t /= {tiles_w};\n",
        f"    const int oh = t % {oh}; const int n = t / {oh};\n",
        "    __global const REAL4* wp = (__global const REAL4*)x1 + cv;\n",
    ]


class GpuKernels(TiledKernels):
    """Generates the GPU-shaped kernels of one op into a `program.Program` (the epilogue
    stores of `TiledKernels`, on `float4` vectors)."""

    compute_units: int = 64
    scalar_table = False  # a GPU has arithmetic to spare; a table load adds latency

    def _vectors(
        self, channels: int, bias: SSAValue | np.ndarray | None
    ) -> tuple[int, SSAValue | str | None] | None:
        """(channel vectors, bias input: a constant padded to whole vectors, or the computed
        bias), or None when a computed bias would need padding."""
        if isinstance(bias, SSAValue) and isinstance(bias.owner, nn.ConstantOp):
            bias = array_from_dense(bias.owner.value).astype(np.float32)
        vectors = -(-channels // VW)
        if isinstance(bias, np.ndarray):
            if bias.size != channels:
                return None
            padded = np.pad(bias.reshape(-1).astype(np.float32), (0, vectors * VW - channels))
            return vectors, self.program.constant(padded)
        if bias is not None and channels % VW:
            return None
        return vectors, bias

    @staticmethod
    def _pad_rows(weights: np.ndarray, vectors: int) -> np.ndarray:
        extra = [(0, vectors * VW - weights.shape[0])] + [(0, 0)] * (weights.ndim - 1)
        return np.pad(weights, extra)

    def _gpu_finish(
        self, body: str, inputs: list[SSAValue | str], total: int, desc: str, group: int = 0
    ) -> TileKernel:
        text = self._make(body, inputs)
        if group:
            text = text.replace("__kernel void", f"__kernel {required_group(group)} void", 1)
        name = self.program.kernel(text, desc)
        return name, inputs, [total]

    def gemm(
        self,
        x: SSAValue,
        weights: np.ndarray,
        bias: SSAValue | np.ndarray | None,
        rows: int,
        desc: str,
        shape: GemmShape | None = None,
    ) -> TileKernel | None:
        """y[rows, N] = x[rows, K] * weights[N, K]^T (+ bias): one float4 of N for R rows."""
        n_out, k = weights.shape
        layout = self._vectors(n_out, bias)
        if layout is None or k == 0:
            return None
        self._begin(x)
        vectors, bias_input = layout
        if shape is None:
            shape = gemm_shape(rows, vectors, k, self.compute_units)
        r_count, split, lanes = shape.rows_per_item, shape.k_split, shape.lanes
        # [N, K] -> [K][N/4][4]
        packed = self._pad_rows(weights, vectors).reshape(vectors, VW, k).transpose(2, 0, 1)
        tiles = -(-rows // r_count)
        lines: list[str] = []
        if split == 1:
            lines += [
                f"    if (gid >= {tiles * vectors}) return;\n",
                f"    const int cv = gid % {vectors};"
                f" const int m0 = (gid / {vectors}) * {r_count};\n",
                f"    const int k0 = 0; const int k1 = {k};\n",
            ]
        else:
            blocks = -(-vectors // lanes)
            chunk = -(-k // split)
            lines += [
                f"    const int lid = get_local_id(0); const int j = lid % {lanes};"
                f" const int s = lid / {lanes};\n",
                f"    const int grp = get_group_id(0); const int cb = grp % {blocks};\n",
                f"    const int m0 = (grp / {blocks}) * {r_count};\n",
                f"    const int cv_own = cb * {lanes} + j;"
                f" const int cv = min(cv_own, {vectors - 1});\n",
                f"    const int k0 = s * {chunk}; const int k1 = min(k0 + {chunk}, {k});\n",
            ]
        lines.append("    __global const REAL4* wp = (__global const REAL4*)x1 + cv;\n")
        for r in range(r_count):
            row = f"min(m0 + {r}, {rows - 1})" if tiles * r_count > rows else f"m0 + {r}"
            lines.append(f"    __global const {self._x_type()}* a{r} = x0 + ({row}) * {k};\n")
            lines.append(f"    float4 acc{r} = (float4)(0.0f);\n")
        lines.append("    for (int k = k0; k < k1; ++k) {\n")
        lines.append(f"        const float4 w = WIDEN4(wp[k * {vectors}]);\n")
        for r in range(r_count):
            lines.append(f"        acc{r} += {self._x_load(f'a{r}[k]')} * w;\n")
        lines.append("    }\n")
        if split > 1:
            lines.append(f"    __local float4 partial[{(split - 1) * r_count * lanes}];\n")
            lines.append("    if (s > 0) {\n")
            for r in range(r_count):
                lines.append(
                    f"        partial[((s - 1) * {r_count} + {r}) * {lanes} + j] = acc{r};\n"
                )
            lines.append("    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n")
            lines.append(f"    if (s > 0 || cv_own >= {vectors}) return;\n")
            for t in range(1, split):
                for r in range(r_count):
                    lines.append(
                        f"    acc{r} += partial[({t - 1} * {r_count} + {r}) * {lanes} + j];\n"
                    )
        if bias_input is not None:
            lines.append("    const float4 bias = WIDEN4(((__global const REAL4*)x2)[cv]);\n")
            lines += [f"    acc{r} += bias;\n" for r in range(r_count)]
        for r in range(r_count):
            guard = f"    if (m0 + {r} < {rows}) {{\n" if tiles * r_count > rows else "    {\n"
            lines.append(guard)
            lines.append(self._store(VW, f"acc{r}", f"m0 + {r}", "cv", n_out))
            lines.append("    }\n")
        inputs: list[SSAValue | str] = [x, self.program.constant(packed)]
        if bias_input is not None:
            inputs.append(bias_input)
        if split == 1:
            desc += f" (gpu) [{r_count}x{VW} per item]"
            return self._gpu_finish("".join(lines), inputs, _padded_launch(tiles * vectors), desc)
        blocks = -(-vectors // lanes)
        desc += f" (gpu) [{r_count}x{VW} per item, K split {split}]"
        group = split * lanes
        return self._gpu_finish("".join(lines), inputs, tiles * blocks * group, desc, group)

    def direct_conv(
        self,
        op: nn.Conv2DOp,
        weights: np.ndarray,
        bias: SSAValue | np.ndarray | None,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        props: dict,
        desc: str,
        r_count: int | None = None,
    ) -> TileKernel | None:
        """Groups-1 conv: one float4 of output channels for R pixels of an output row."""
        n, h, w, c = in_shape
        oc, kh, kw, _ = weights.shape
        _, oh, ow, _ = out_shape
        layout = self._vectors(oc, bias)
        if layout is None or c == 0:
            return None
        self._begin(op.input)
        vectors, bias_input = layout
        if r_count is None:
            r_count = pixels_per_item(n * oh * ow, vectors, self.compute_units)
        sh, sw = get_ints(props, "strides")
        dh, dw = get_ints(props, "dilations")
        pt, pl = get_ints(props, "pads")[:2]
        tiles_w = -(-ow // r_count)
        total = n * oh * tiles_w * vectors
        # [OC, KH, KW, C] -> [KH][KW][C][OC/4][4]
        padded = self._pad_rows(weights, vectors)
        packed = padded.reshape(vectors, VW, kh, kw, c).transpose(2, 3, 4, 0, 1)
        zeros = self._zero_taps(c)
        if self._char_x is not None:
            self._char_params[2] = self._char_x.ctype
        xt = self._x_type()
        lines = [
            *_row_tile_prologue(total, vectors, tiles_w, r_count, oh),
        ]
        lines += [f"    float4 acc{r} = (float4)(0.0f);\n" for r in range(r_count)]
        # taps in the padding (rows included) read the zeros: their products with +0.0
        # count, as in the reference's zero-padded sum
        lines += [
            f"    for (int kh = 0; kh < {kh}; ++kh) {{\n",
            f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n",
            f"        const int row_in = ih >= 0 && ih < {h};\n",
            f"        __global const {xt}* row = x0 + (n * {h} + (row_in ? ih : 0)) * {w * c};\n",
            f"        for (int kw = 0; kw < {kw}; ++kw) {{\n",
        ]
        for r in range(r_count):
            lines.append(
                f"            const int iw{r} = (ow0 + {r}) * {sw} - {pl} + kw * {dw};\n"
                f"            __global const {xt}* a{r} = (row_in && iw{r} >= 0 && iw{r} < {w}"
                f" && ow0 + {r} < {ow}) ? row + iw{r} * {c} : x2;\n"
            )
        lines += [
            f"            __global const REAL4* wk = wp + (kh * {kw} + kw) * {c * vectors};\n",
            f"            for (int ic = 0; ic < {c}; ++ic) {{\n",
            f"                const float4 wv = WIDEN4(wk[ic * {vectors}]);\n",
        ]
        lines += [
            f"                acc{r} += {self._x_load(f'a{r}[ic]')} * wv;\n" for r in range(r_count)
        ]
        lines.append("            }\n        }\n    }\n")
        if bias_input is not None:
            lines.append("    const float4 bias = WIDEN4(((__global const REAL4*)x3)[cv]);\n")
            lines += [f"    acc{r} += bias;\n" for r in range(r_count)]
        lines += self._store_row(VW, r_count, (oh, ow, tiles_w), [("acc{r}", "cv")], oc, wrap=True)
        inputs: list[SSAValue | str] = [op.input, self.program.constant(packed), zeros]
        if bias_input is not None:
            inputs.append(bias_input)
        desc += f" (gpu) [{r_count}x{VW} per item]"
        return self._gpu_finish("".join(lines), inputs, _padded_launch(total), desc)

    def depthwise(
        self,
        op: nn.Conv2DOp,
        weights: np.ndarray,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        props: dict,
        desc: str,
        r_count: int | None = None,
    ) -> TileKernel | None:
        """Depthwise conv: one float4 of channels for R consecutive pixels of an output row."""
        n, h, w, c = in_shape
        _, kh, kw, _ = weights.shape
        _, oh, ow, _ = out_shape
        if c % VW:
            return None
        self._begin(op.input)
        vectors = c // VW
        if r_count is None:
            r_count = pixels_per_item(n * oh * ow, vectors, self.compute_units)
        sh, sw = get_ints(props, "strides")
        dh, dw = get_ints(props, "dilations")
        pt, pl = get_ints(props, "pads")[:2]
        tiles_w = -(-ow // r_count)
        total = n * oh * tiles_w * vectors
        # [C, KH, KW, 1] -> [KH][KW][C]
        packed = weights.reshape(c, kh, kw).transpose(1, 2, 0)
        lines = [
            *_row_tile_prologue(total, vectors, tiles_w, r_count, oh),
        ]
        init = (
            "WIDEN4(((__global const REAL4*)x2)[cv])" if op.bias is not None else "(float4)(-0.0f)"
        )
        xt = self._x_type(VW)
        lines += [f"    float4 acc{r} = {init};\n" for r in range(r_count)]
        # a tap in the padding (rows included) multiplies +0.0, as the reference's
        # zero-padded sum does
        lines += [
            f"    for (int kh = 0; kh < {kh}; ++kh) {{\n",
            f"        const int ih = oh * {sh} - {pt} + kh * {dh};\n",
            f"        const int row_in = ih >= 0 && ih < {h};\n",
            f"        __global const {xt}* xr = (__global const {xt}*)x0"
            f" + (n * {h} + (row_in ? ih : 0)) * {w * vectors} + cv;\n",
            f"        for (int kw = 0; kw < {kw}; ++kw) {{\n",
            f"            const float4 wv = WIDEN4(wp[(kh * {kw} + kw) * {vectors}]);\n",
        ]
        for r in range(r_count):
            lines.append(
                f"            {{ const int iw = (ow0 + {r}) * {sw} - {pl} + kw * {dw};\n"
                f"              acc{r} += (row_in && iw >= 0 && iw < {w}"
                f" ? {self._x_load(f'xr[iw * {vectors}]', VW)} : (float4)(0.0f)) * wv; }}\n"
            )
        lines.append("        }\n    }\n")
        lines += self._store_row(VW, r_count, (oh, ow, tiles_w), [("acc{r}", "cv")], c)
        inputs: list[SSAValue | str] = [op.input, self.program.constant(packed)]
        if op.bias is not None:
            inputs.append(op.bias)
        desc += f" (gpu) [{r_count}x{VW} per item]"
        return self._gpu_finish("".join(lines), inputs, _padded_launch(total), desc)

    def softmax(
        self, op: nn.SoftmaxOp, shape: tuple[int, ...], z: str, shift: str, desc: str
    ) -> TileKernel | None:
        """Last-axis softmax (beta >= 0) of a tensor of `shape`: one work-group of
        `SOFTMAX_GROUP` per row. `z` is the scaled element `i` of row `xp` (lowerings/softmax.py's
        `beta * WIDEN(xp[i])`), `shift` its `z - m` (lowerings.helpers.softmax_shift)."""
        cols = shape[-1] if shape else 0
        beta = get_float(op.all_properties(), "beta")
        if cols < SOFTMAX_MIN_COLUMNS or self.act or (beta is not None and beta < 0):
            return None
        self._begin(None, char=False)
        rows = int(np.prod(shape)) // cols
        group = SOFTMAX_GROUP
        body = (
            f"    const int lid = get_local_id(0); const int row = get_group_id(0);\n"
            f"    __global const REAL* xp = x0 + row * {cols};\n"
            f"    __global REAL* yp = y + row * {cols};\n"
            f"    __local float red[{group}];\n"
            "    float m = -INFINITY;\n"
            f"    for (int i = lid; i < {cols}; i += {group}) {{ const float xv = {z};"
            " m = (xv > m || isnan(xv) ? xv : m); }\n"
            "    red[lid] = m; barrier(CLK_LOCAL_MEM_FENCE);\n"
            f"    for (int stride = {group // 2}; stride > 0; stride >>= 1) {{\n"
            "        if (lid < stride) { const float xv = red[lid + stride]; const float acc ="
            " red[lid]; red[lid] = (xv > acc || isnan(xv) ? xv : acc); }\n"
            "        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n"
            "    m = red[0]; barrier(CLK_LOCAL_MEM_FENCE);\n"
            "    float s = 0.0f;\n"
            f"    for (int i = lid; i < {cols}; i += {group}) {{ const float e = exp({shift});"
            " yp[i] = e; s += e; }\n"
            "    red[lid] = s; barrier(CLK_LOCAL_MEM_FENCE);\n"
            f"    for (int stride = {group // 2}; stride > 0; stride >>= 1) {{\n"
            "        if (lid < stride) red[lid] += red[lid + stride];\n"
            "        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n"
            "    const float inv = 1.0f / red[0];\n"
            f"    for (int i = lid; i < {cols}; i += {group}) yp[i] = WIDEN(yp[i]) * inv;\n"
        )
        desc += " (gpu) [one work-group per row]"
        return self._gpu_finish(body, [op.input], rows * group, desc, group)
