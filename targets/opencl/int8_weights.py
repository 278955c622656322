"""Constant GEMM weights that are 8-bit integers times a per-output-channel float32 scale.

An int8 model's weights reach the OpenCL target as float constants, each the float32 product
`scale[n] * q` of its channel's scale and an integer in [-128, 127] (what `fold-qdq` leaves of
a constant `quant.dcast`). A GEMM whose weights stream from memory for few rows (a
classifier's fully_connected: 1000 x 1280 floats, 5 MB, read once per run) can read them as
bytes and multiply by the scale in registers instead: `convert_float16(q) * scale` is the
same float32 product, so the sums are bit for bit the float ones. `int8_weights` recovers
`(q, scale)` and checks every weight exactly; any weight that is not such a product (a float
model) gives None.
"""

from __future__ import annotations

import numpy as np

MAX_ROWS = 8
"""GEMMs with at most this many rows (pixels) read 8-bit weights: their weights are read once
per run and dominate the kernel's memory traffic. On PoCL (2 threads, Xeon @ 2.50GHz
AVX-512) MobileNetV2 int8's classifier (1 row) ran in 0.31x the time; its 7x7 1x1 convs (49
rows, 7-row tiles) in 1.0-1.2x (the conversion costs more than the bytes save)."""

MIN_WEIGHTS = 1 << 16
"""Smaller weight matrices stay in cache: not worth the conversion."""


def int8_weights(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """`(q, scale)` with `weights[n, k] == float32(scale[n]) * float32(q[n, k])` exactly
    (`q` int8, `scale` float32 per row), or None. The scale of a row is found from its
    largest magnitude, taken as `scale * 127` or `scale * 128` (symmetric per-channel
    quantization), among a few float32 neighbours; an all-zero row takes scale 1."""
    w = np.asarray(weights, np.float32)
    if w.ndim != 2 or not np.all(np.isfinite(w)):
        return None
    q = np.zeros(w.shape, np.int8)
    scales = np.ones(w.shape[0], np.float32)
    for n, row in enumerate(w):
        peak = float(np.max(np.abs(row)))
        if peak == 0.0:
            continue
        found = _row_scale(row, peak)
        if found is None:
            return None
        scales[n], q[n] = found
    return q, scales


def _row_scale(row: np.ndarray, peak: float) -> tuple[np.float32, np.ndarray] | None:
    for top in (127, 128):
        center = np.float32(peak / top)
        for step in range(-3, 4):
            s = center
            direction = np.float32(np.inf) if step > 0 else np.float32(-np.inf)
            for _ in range(abs(step)):
                s = np.nextafter(s, direction)
            if s <= 0:
                continue
            with np.errstate(all="ignore"):
                q = np.rint(row / s)
            if np.any(q < -128) or np.any(q > 127):
                continue
            if np.array_equal(s * q.astype(np.float32), row):
                return s, q.astype(np.int8)
    return None
