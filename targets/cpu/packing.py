"""Weight packing of the CPU target: constant filters in the layouts its kernels read.

The packed layouts are the ones the C kernels of `csrc` read (and `irc_pack_filter` produces
at run time when a filter is not a constant): `lower-cpu` packs constant weights once, at
compile time, and stores them packed in `cpu.constant` ops, so loading only copies bytes.
"""

from __future__ import annotations

import numpy as np

LANES = 16
"""float32 lanes of one 512-bit vector: the unit of output-channel blocks."""


def vectors_per_block(out_channels_per_group: int) -> int:
    """Vectors (NV) per output-channel block: two (32 channels) unless one is enough."""
    return 2 if out_channels_per_group > LANES else 1


def float_vectors_per_block(out_channels_per_group: int) -> int:
    """NV of a float conv's or fully connected layer's packed filter: blocks as wide as the
    register tile of the ISA profile that lowers it (`isa.select()`), so a tile reads whole
    weight rows, one after the other: 32 channels for AVX-512's 8 x 32 tile (its tile on two
    16-channel blocks side by side ran 8-12 % slower: two weight streams), 16 for AVX2's 6 x
    16 tile (on 32-channel blocks it read half of each row's two lines: its 1x1 convs with K
    = 320-960 at 49-56 GFLOP/s, on 16-channel blocks 72-80, AVX2 peak 85; 1 thread, Xeon @
    2.50GHz) and the other profiles. The kernels compute either packing with any profile,
    the same sums (kernels/common/conv2d.c): a lowered executable loaded with another
    profile only runs at the other packing's speed."""
    from irc.targets.cpu import isa

    try:
        _, nr = isa.select().tiles.get("conv_f32", (0, 0))
    except isa.IsaError:
        nr = 0
    return vectors_per_block(out_channels_per_group) if nr >= 2 * LANES else 1


def pack_filter(
    ohwi: np.ndarray, groups: int, nv: int, dtype: type[np.generic] = np.float32
) -> np.ndarray:
    """OHWI `[G*OCg, KH, KW, Cg]` -> `[G, ceil(OCg/NB), KH, KW, Cg, NB]` (NB = 16 * nv),
    output channels beyond OCg zero: the GEMM micro-kernel's B panels (int32 ones for the
    integer kernels)."""
    oc, kh, kw, cg = ohwi.shape
    ocg = oc // groups
    nb = LANES * nv
    blocks = -(-ocg // nb)
    padded = np.zeros((groups, blocks * nb, kh, kw, cg), dtype=dtype)
    padded[:, :ocg] = ohwi.reshape(groups, ocg, kh, kw, cg)
    packed = padded.reshape(groups, blocks, nb, kh, kw, cg).transpose(0, 1, 3, 4, 5, 2)
    return np.ascontiguousarray(packed)


def pack_depthwise(ohwi: np.ndarray, dtype: type[np.generic] = np.float32) -> np.ndarray:
    """Depthwise OHWI `[C, KH, KW, 1]` -> `[KH, KW, C]`: channels innermost."""
    c, kh, kw, _ = ohwi.shape
    return np.ascontiguousarray(ohwi.reshape(c, kh, kw).transpose(1, 2, 0)).astype(dtype)


def packed_filter_size(out_channels: int, kh: int, kw: int, cg: int, groups: int, nv: int) -> int:
    """Floats of a filter packed by `pack_filter` (or by `irc_pack_filter` at run time)."""
    ocg = out_channels // groups
    nb = LANES * nv
    return groups * (-(-ocg // nb)) * kh * kw * cg * nb
