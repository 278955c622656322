"""Seeded smoke run of the differential fuzzer (fuzz/differential.py): 100 small random graphs
(1-2 ops, half with NaN/±Inf/-0.0/denormal/huge inputs) in one module per target, on the
reference, cpu and opencl targets, compared with docs/semantics.md's rule.

Cost: the compiled programs are cached by source (the irc cache), so a warm run takes a few
seconds; a cold one (a fresh cache) compiles ~200 kernels per target, which on the 2-core
Xeon took ~40 s (gcc) and ~80 s (PoCL) while other jobs ran: the long run is
`python -m fuzz.differential --graphs N` (fuzz/README.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cpu_support import needs_compiler
from opencl_support import needs_device

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.differential import run


@pytest.mark.parametrize(
    "target",
    [pytest.param("cpu", marks=needs_compiler), pytest.param("opencl", marks=needs_device)],
)
def test_smoke_run_has_no_mismatch(target: str) -> None:
    summary = run(100, 5000, [target], batch=100, max_ops=2, minimise=False)
    assert summary.graphs == 100
    assert summary.ops >= 100
    assert not summary.findings, "\n".join(
        f"{t} seed {s}: {why}" for t, s, why, _ in summary.findings
    )
