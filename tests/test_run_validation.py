"""Input validation at `CompiledModel.run()` on every target: names, rank and shape, exact
dtype (no conversion), non-contiguous arrays (accepted, never written), and the NaN/Inf policy
(not checked by default, `check_finite=True` rejects them), each error naming the input.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import irc
from irc.runtime import InputError
from irc.targets.cpu.target import CpuTarget
from irc.targets.opencl.target import OpenCLTarget

MODEL = """\
func.func @main(%x: tensor<4x6xf32>, %bias: tensor<6xf32>) -> tensor<4x6xf32>
    attributes {irc.input_names = ["x", "bias"], irc.output_names = ["out"]} {
  %a = nn.add %x, %bias : tensor<4x6xf32>, tensor<6xf32> -> tensor<4x6xf32>
  %m = nn.mul %a, %x : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  func.return %m : tensor<4x6xf32>
}
"""


def _available(target: str) -> bool:
    if target == "cpu":
        return bool(CpuTarget().available())
    if target == "opencl":
        return bool(OpenCLTarget().available())
    return True


TARGETS = [
    pytest.param(t, marks=pytest.mark.skipif(not _available(t), reason=f"{t} not available"))
    for t in ("reference", "cpu", "opencl")
]
_models: dict[str, irc.CompiledModel] = {}


# The run's build cache (conftest.py), never the user's.
pytestmark = pytest.mark.private_cache


@pytest.fixture(autouse=True, scope="module")
def compiled_models() -> Iterator[None]:
    """The module's compiled models are dropped after its tests."""
    yield
    _models.clear()


def model_for(target: str) -> irc.CompiledModel:
    if target not in _models:
        _models[target] = irc.compile(irc.parse_module(MODEL), [target])
        assert _models[target].targets == (target,)
    return _models[target]


def good() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {
        "x": rng.standard_normal((4, 6)).astype(np.float32),
        "bias": rng.standard_normal(6).astype(np.float32),
    }


def expected(inputs: dict[str, np.ndarray]) -> np.ndarray:
    return (inputs["x"] + inputs["bias"]) * inputs["x"]


BAD_INPUTS = [
    ("unknown", lambda d: d | {"y": d["x"]}, "unknown input 'y' for @main"),
    ("missing", lambda d: {"x": d["x"]}, "missing input 'bias' for @main"),
    ("not-a-mapping", lambda d: [d["x"], d["bias"]], "must be a mapping from input name"),
    ("list", lambda d: d | {"bias": d["bias"].tolist()}, "input 'bias' of @main: expected a numpy"),
    ("rank", lambda d: d | {"x": d["x"].reshape(24)}, "input 'x' of @main: expected shape (4, 6)"),
    ("size", lambda d: d | {"bias": np.zeros(5, np.float32)}, "input 'bias' of @main: expected"),
    ("float64", lambda d: d | {"x": d["x"].astype(np.float64)}, "expected dtype float32, got f"),
    ("float16", lambda d: d | {"x": d["x"].astype(np.float16)}, "'x' of @main: expected dtype"),
    ("int32", lambda d: d | {"bias": d["bias"].astype(np.int32)}, "got int32"),
    ("big-endian", lambda d: d | {"x": d["x"].astype(">f4")}, "expected dtype float32, got >f4"),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("change", "message"), [case[1:] for case in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS]
)
def test_bad_inputs_are_refused_naming_the_input(target: str, change, message: str) -> None:
    with pytest.raises(InputError) as info:
        model_for(target).run(change(good()))
    assert message in str(info.value)


@pytest.mark.parametrize("target", TARGETS)
def test_non_contiguous_inputs_are_accepted_and_not_written(target: str) -> None:
    base = good()
    wide = np.random.default_rng(5).standard_normal((6, 8)).astype(np.float32)
    inputs = {
        "x": wide[:, ::-1][1:5, 1:7].T.T,  # a strided view with a negative step
        "bias": np.repeat(base["bias"], 2)[::2],
    }
    assert not inputs["x"].flags.c_contiguous
    assert not inputs["bias"].flags.c_contiguous
    before = {name: value.copy() for name, value in inputs.items()}
    got = model_for(target).run(inputs)["out"]
    np.testing.assert_allclose(got, expected(before), rtol=1e-4, atol=1e-5)
    for name, value in inputs.items():
        np.testing.assert_array_equal(value, before[name])
    transposed = {"x": np.ascontiguousarray(base["x"].T).T, "bias": base["bias"]}
    np.testing.assert_allclose(
        model_for(target).run(transposed)["out"], expected(base), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("target", ["reference", TARGETS[1]])
def test_nan_and_inf_propagate_unchecked(target: str) -> None:
    inputs = good()
    inputs["x"][1, 2] = np.nan
    inputs["bias"][4] = np.inf
    got = model_for(target).run(inputs)["out"]
    want = expected(inputs)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_check_finite_rejects_nan_and_inf(target: str) -> None:
    model = model_for(target)
    inputs = good()
    np.testing.assert_allclose(
        model.run(inputs, check_finite=True)["out"], expected(inputs), rtol=1e-4, atol=1e-5
    )
    nan = inputs | {"x": inputs["x"].copy()}
    nan["x"][2, 3] = np.nan
    with pytest.raises(
        InputError, match=r"input 'x' of @main: non-finite value nan at index \[2, 3\]"
    ):
        model.run(nan, check_finite=True)
    inf = inputs | {"bias": inputs["bias"].copy()}
    inf["bias"][5] = -np.inf
    with pytest.raises(
        InputError, match=r"input 'bias' of @main: non-finite value -inf at index \[5\]"
    ):
        model.run(inf, check_finite=True)


def test_check_finite_positional_and_integer_inputs() -> None:
    program = irc.compile_function(
        irc.parse_module(
            """\
func.func @main(%i: tensor<3xi32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %c = nn.cast %i : tensor<3xi32> -> tensor<3xf32>
  %s = nn.add %c, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
"""
        )
    )
    ints = np.array([1, 2, 3], np.int32)
    (out,) = program.run_positional([ints, np.ones(3, np.float32)], check_finite=True)
    np.testing.assert_array_equal(out, [2, 3, 4])
    with pytest.raises(InputError, match=r"input 'arg1' of @main: non-finite value inf"):
        program.run_positional([ints, np.array([0, np.inf, 0], np.float32)], check_finite=True)
