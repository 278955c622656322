"""Seeded smoke run of the differential fuzzer (fuzz/differential.py): 100 small random graphs
(one op each, a tenth with a quantized int8/uint8 tail; half with NaN/±Inf/-0.0/denormal/huge
inputs) in one module per target, on the reference, cpu and opencl targets, compared with
docs/semantics.md's rule.

Cost: programs are cached by source (the irc cache, PoCL's own kernel cache), so a warm run
takes ~3 s; a cold one builds ~180 kernels per target (~30 s of CPU: ~10 s of gcc, ~17 s of
PoCL). The cpu and opencl targets compile on threads of their own (`run(concurrent=True)`),
so gcc and PoCL overlap: cold on the 2-core Xeon at load 15-19 from other jobs, 96-152 s
(one target after the other: 156-177 s). The long run is `python -m fuzz.differential`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cpu_support import needs_compiler
from opencl_support import needs_device

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.differential import run

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules


@needs_compiler
@needs_device
def test_smoke_run_has_no_mismatch() -> None:
    summary = run(
        100, 5000, ["cpu", "opencl"], batch=100, max_ops=1, minimise=False, quantized_share=0.1
    )
    assert summary.graphs == 100
    assert summary.ops >= 100
    found = [f"{t} seed {s}: {why}" for t, s, why, _ in summary.findings]
    assert not found, "\n".join(found)
