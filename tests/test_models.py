"""Every shared real model imports, runs on the reference target and matches its goldens.

Tolerances (the Importers issue): float outputs within 2e-3 x max|golden|; int8 outputs
against either TFLite golden set (XNNPACK `outputs_K.npz` or the reference kernels'
`outputs_refkernels_K.npz`) with >= 98 % of elements within one quantization step, a mean
error <= 0.5 step and the same arg-max for classifiers. Skips cleanly without
../shared/models.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

import irc

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
MANIFEST = MODELS / "manifest.json"


def _entries() -> list[dict]:
    if not MANIFEST.is_file():
        return []
    return [e for e in json.loads(MANIFEST.read_text())["models"] if e["golden"]["samples"]]


ENTRIES = _entries()


def compare_float(got: np.ndarray, want: np.ndarray) -> tuple[bool, str]:
    scale = max(float(np.abs(want).max()), 1e-6)
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    return err <= 2e-3, f"rel-to-scale {err:.2e}"


def compare_steps(got: np.ndarray, want: np.ndarray, step: float) -> tuple[bool, str]:
    """Quantized outputs in units of their quantization step."""
    steps = np.rint(np.abs(got.astype(np.float64) - want.astype(np.float64)) / step)
    within = float((steps <= 1).mean())
    ok = within >= 0.98 and float(steps.mean()) <= 0.5
    if want.ndim == 2 and want.shape[0] == 1 and want.shape[1] > 10:
        ok = ok and int(got.argmax()) == int(want.argmax())
    return ok, f"max {int(steps.max())} steps, mean {steps.mean():.3f}, within-1 {within:.4f}"


def check_outputs(entry: dict, got: dict[str, np.ndarray], gold: dict[str, np.ndarray]) -> list:
    """Per output: (ok, text)."""
    rows = []
    for spec in entry["outputs"]:
        name = spec["name"]
        want = gold[name]
        value = got[name].reshape(want.shape) if got[name].size == want.size else got[name]
        assert value.shape == want.shape, f"{name}: shape {value.shape} != {want.shape}"
        quantization = spec.get("quantization")
        if np.issubdtype(want.dtype, np.integer):
            rows.append(compare_steps(value, want, 1.0))
        elif quantization:  # a quantized model with float outputs: in its output's steps
            rows.append(compare_steps(value, want, float(quantization["scale"])))
        else:
            rows.append(compare_float(value, want))
    return rows


@pytest.mark.skipif(not ENTRIES, reason="../shared/models is not available")
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_model_matches_goldens(entry: dict) -> None:
    samples = entry["golden"]["samples"]
    with np.load(MODELS / samples[0]["inputs"]) as inputs:
        shapes = {k: inputs[k].shape for k in inputs.files}
    start = time.perf_counter()
    # Dynamic input dimensions take the golden inputs' shapes (as irc-run --inputs does).
    module = irc.import_model(MODELS / entry["file"], input_shapes=shapes)
    imported = time.perf_counter() - start
    for sample in samples:
        with np.load(MODELS / sample["inputs"]) as inputs:
            feed = {k: inputs[k] for k in inputs.files}
        got = irc.run(module, feed)
        goldens = [sample["outputs"]]
        if sample.get("outputs_builtin_ref_kernels"):
            goldens.append(sample["outputs_builtin_ref_kernels"])
        reports = []
        for golden in goldens:
            with np.load(MODELS / golden) as gold:
                rows = check_outputs(entry, got, {k: gold[k] for k in gold.files})
            reports.append(f"{golden}: " + "; ".join(text for _, text in rows))
            if all(ok for ok, _ in rows):
                break
        else:
            pytest.fail(f"{entry['name']} does not match its goldens: " + " | ".join(reports))
        print(f"{entry['name']}: import {imported:.2f} s; {reports[-1]}")
