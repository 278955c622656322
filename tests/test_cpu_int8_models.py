"""The shared int8 models (../shared/models) compiled for the CPU target end to end: every
op on the CPU, outputs bit-exact against the reference target (the op families one by one:
test_cpu_int8.py; a file of its own so that `--dist loadfile` can run it beside them)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from cpu_support import SHARED_MODELS, needs_compiler

pytestmark = [needs_compiler, pytest.mark.private_cache]


@pytest.mark.parametrize("name", ["small_cnn_int8", "mobilenet_v2_int8"])
def test_shared_int8_models(name: str) -> None:
    import irc

    path = SHARED_MODELS / name / f"{name}.tflite"
    if not path.exists():
        pytest.skip(
            f"shared model {path} not found (../shared/models is optional; this test needs it)"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = irc.compile(path, targets=["cpu", "reference"])
        reference = irc.compile(path, targets=["reference"])
    assert not model.refusals
    assert "@main: cpu:" in model.summary
    for k in range(2):
        inputs = dict(np.load(SHARED_MODELS / name / f"inputs_{k}.npz"))
        got, want = model.run(inputs), reference.run(inputs)
        assert got.keys() == want.keys()
        for key in got:
            assert got[key].dtype == want[key].dtype
            np.testing.assert_array_equal(got[key], want[key])
