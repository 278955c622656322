"""`insert-qdq`: float emulation of int8 models (`fold-qdq`'s patterns: test_fold_qdq.py).

Model tests run the shared int8 models (../shared/models; skipped cleanly without them) on the
reference target twice: as imported (TFLite's integer semantics through `lower-quantized`)
and after `insert-qdq` in whole-graph mode (dcast -> float op -> qcast), with
emulate-rounding true and false. Bounds, over all output elements of a model and both golden
inputs, in quantization steps of the outputs: >= 98 % within one step, mean <= 0.5 step, and
the same arg-max for every classifier output. The bounds hold per model rather than per
output: small_cnn_int8's 10-class softmax amplifies a one-step change of a logit into about
three output steps (TFLite's XNNPACK and reference kernels already disagree by 0.4-0.5 steps
on average there). Statistics print with ``pytest -s``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SHARED_MODELS
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i8, i32

import irc
from irc.context import get_all_passes, make_context
from irc.diagnostics import IrcDiagnosticError, verify_module
from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType, quantized_element
from irc.passes.insert_qdq import InsertQDQPass, QDQStatistics, dequantize_array, insert_qdq
from irc.targets import reference

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

MANIFEST = SHARED_MODELS / "manifest.json"
INT8_MODELS = ("mobilenet_v2_int8", "small_cnn_int8")

rng = np.random.default_rng(20240917)


def _entries() -> dict[str, dict]:
    if not MANIFEST.is_file():
        return {}
    entries = json.loads(MANIFEST.read_text())["models"]
    return {e["name"]: e for e in entries if e["name"] in INT8_MODELS}


ENTRIES = _entries()


# ---- Helpers -----------------------------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    return irc.parse_module(text)


def run(module: ModuleOp, *inputs: np.ndarray) -> list[np.ndarray]:
    """Run @main on the reference target (lower-quantized first, as `irc.run` does)."""
    outputs = irc.run(module, {f"arg{i}": x for i, x in enumerate(inputs)})
    return list(outputs.values())


def ops_named(module: ModuleOp, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


def quantized_compute_ops(module: ModuleOp) -> list[str]:
    """Quantized `nn` ops other than constants and data movement (none may stay)."""
    movement = (nn.ReshapeOp, nn.TransposeOp, nn.PadOp, nn.ConcatOp, nn.SliceOp, nn.SplitOp)
    return [
        op.name
        for op in module.walk()
        if isinstance(op, nn.NNOp)
        and not isinstance(op, (nn.ConstantOp, *movement))
        and reference.is_quantized_op(op)
    ]


def qtensor(shape: tuple[int, ...], element: UniformQuantizedType) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}>"


# ---- The shared int8 models --------------------------------------------------------------------


def _step_errors(
    base: dict[str, np.ndarray], other: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Absolute differences of int8 outputs, in quantization steps."""
    return {
        name: np.abs(base[name].astype(np.int64) - other[name].astype(np.int64)).ravel()
        for name in base
    }


def _summary(errors: np.ndarray) -> str:
    return (
        f"max {int(errors.max())}, mean {errors.mean():.3f}, "
        f"within-1 {float((errors <= 1).mean()):.4f}"
    )


@pytest.fixture(scope="module")
def model_runs() -> dict[str, dict]:
    """Per model: outputs of the int8 run and of both float emulations, and statistics."""
    results: dict[str, dict] = {}
    for name, entry in ENTRIES.items():
        imported = irc.import_model(SHARED_MODELS / entry["file"])
        variants: dict[str, tuple[ModuleOp, QDQStatistics | None]] = {"int8": (imported, None)}
        for emulate in (True, False):
            module = imported.clone()
            stats = insert_qdq(module, emulate_rounding=emulate)
            verify_module(module)
            variants[f"emulate-rounding={str(emulate).lower()}"] = (module, stats)
        runs: dict[str, list[dict[str, np.ndarray]]] = {key: [] for key in variants}
        goldens = []
        for sample in entry["golden"]["samples"]:
            inputs = dict(np.load(SHARED_MODELS / sample["inputs"]))
            goldens.append(dict(np.load(SHARED_MODELS / sample["outputs"])))
            for key, (module, _) in variants.items():
                runs[key].append(irc.run(module, inputs))
        results[name] = {"variants": variants, "runs": runs, "goldens": goldens}
    return results


def _check_variant(name: str, runs: dict, variant: str) -> None:
    """Print per-output statistics; assert the per-model bounds and the arg-max."""
    pooled = []
    for k, (base, emulated, golden) in enumerate(
        zip(runs["runs"]["int8"], runs["runs"][variant], runs["goldens"], strict=True)
    ):
        for output, errors in _step_errors(base, emulated).items():
            to_golden = np.abs(emulated[output].astype(np.int64).ravel() - golden[output].ravel())
            print(
                f"{name} [{variant}] sample {k} {output}: vs int8 {_summary(errors)}; "
                f"vs TFLite golden {_summary(to_golden.ravel())}"
            )
            pooled.append(errors)
            value = base[output]
            if value.ndim == 2 and value.shape[0] == 1 and value.shape[1] > 1:
                assert int(emulated[output].argmax()) == int(value.argmax()), (
                    f"{name} {output}: arg-max differs"
                )
    errors = np.concatenate(pooled)
    print(f"{name} [{variant}] all outputs: {_summary(errors)}")
    assert float((errors <= 1).mean()) >= 0.98
    assert float(errors.mean()) <= 0.5


@pytest.mark.skipif(not ENTRIES, reason="../shared/models is not available")
@pytest.mark.parametrize("name", INT8_MODELS)
@pytest.mark.parametrize("emulate", [True, False], ids=["emulate", "no-emulate"])
def test_model_numerics(model_runs: dict, name: str, emulate: bool) -> None:
    if name not in model_runs:
        pytest.skip(f"{name} is not in the model corpus")
    variant = f"emulate-rounding={str(emulate).lower()}"
    module, stats = model_runs[name]["variants"][variant]
    print(f"{name} [{variant}] QDQ statistics: {stats}")
    assert quantized_compute_ops(module) == []
    _check_variant(name, model_runs[name], variant)


@pytest.mark.skipif(not ENTRIES, reason="../shared/models is not available")
def test_model_statistics(model_runs: dict) -> None:
    """Casts per mode: with emulation every converted result is rounded (one qcast each, one
    dcast per value read by converted ops); without, only the graph's edges keep casts."""
    if "mobilenet_v2_int8" not in model_runs:
        pytest.skip("mobilenet_v2_int8 is not in the model corpus")
    variants = model_runs["mobilenet_v2_int8"]["variants"]
    _, emulated = variants["emulate-rounding=true"]
    _, fast = variants["emulate-rounding=false"]
    assert emulated is not None
    assert fast is not None
    assert emulated.converted == fast.converted == 65
    assert (emulated.dcasts, emulated.qcasts, emulated.cancelled) == (65, 65, 0)
    assert (fast.dcasts, fast.qcasts, fast.cancelled) == (1, 1, 64)
    assert emulated.folded_constants == fast.folded_constants > 0
    if "small_cnn_int8" in model_runs:
        variants = model_runs["small_cnn_int8"]["variants"]
        _, emulated = variants["emulate-rounding=true"]
        _, fast = variants["emulate-rounding=false"]
        assert emulated is not None
        assert fast is not None
        # Under emulation the concat of the two pools keeps its stored integers.
        assert (emulated.kept_quantized, fast.kept_quantized) == (1, 0)
        assert (fast.dcasts, fast.qcasts) == (1, 2)  # the input; the two outputs


# ---- Single ops against the integer semantics --------------------------------------------------


def _conv_module(bias: tuple[str, str]) -> str:
    bias_data, bias_type = bias
    x = UniformQuantizedType.per_tensor(i8, f32, 0.05, -4)
    w = UniformQuantizedType.per_axis(i8, f32, 0, [0.01, 0.02, 0.005])
    y = UniformQuantizedType.per_tensor(i8, f32, 0.04, 3)
    weights = rng.integers(-127, 128, size=(3, 3, 3, 2)).astype(np.int8)
    w_text = str(weights.tolist()).replace(" ", "")
    return f"""
    func.func @main(%x: {qtensor((1, 6, 6, 2), x)}) -> {qtensor((1, 4, 4, 3), y)} {{
      %w = nn.constant dense<{w_text}> : tensor<3x3x3x2xi8> -> {qtensor((3, 3, 3, 2), w)}
      %b = nn.constant dense<[900, -1500, 4000]> : {bias_data}
      %y = nn.conv2d %x, %w, %b layout = "NHWC" activation = "relu6"
        : {qtensor((1, 6, 6, 2), x)}, {qtensor((3, 3, 3, 2), w)}, {bias_type}
        -> {qtensor((1, 4, 4, 3), y)}
      func.return %y : {qtensor((1, 4, 4, 3), y)}
    }}
    """


_QUANTIZED_BIAS = "tensor<3x!quant.uniform<i32:f32:0, {1.0, 1.0, 1.0}>>"


@pytest.mark.parametrize(
    "bias",
    [
        ("tensor<3xi32>", "tensor<3xi32>"),
        (f"tensor<3xi32> -> {_QUANTIZED_BIAS}", _QUANTIZED_BIAS),
    ],
    ids=["plain-i32", "quantized-i32"],
)
def test_conv_bias_scale(bias: tuple[str, str]) -> None:
    """The bias is worth ``stored * s_in * s_w[c]`` whatever scale its type records (here a
    wrong 1.0): the float conv matches the integer one within a step."""
    module = parse(_conv_module(bias))
    x = rng.integers(-128, 128, size=(1, 6, 6, 2)).astype(np.int8)
    (want,) = run(module, x)
    converted = module.clone()
    insert_qdq(converted)
    verify_module(converted)
    assert not [op for op in ops_named(converted, "nn.constant") if reference.is_quantized_op(op)]
    (got,) = run(converted, x)
    errors = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert errors.max() <= 1
    assert (errors == 0).mean() >= 0.9


def test_folded_weights_equal_reference_dcast() -> None:
    """Folded constants are exactly what the reference `quant.dcast` kernel computes."""
    scales, zero_points = [0.013, 0.5, 0.0071], [3, -2, 0]
    element = UniformQuantizedType.per_axis(i8, f32, 1, scales, zero_points)
    stored = rng.integers(-128, 128, size=(2, 3, 4)).astype(np.int8)
    constant = nn.ConstantOp.from_array(stored, TensorType(element, [2, 3, 4]))
    dcast = quant.DCastOp(constant.output)
    (want,) = reference.evaluate(dcast, stored)
    got = dequantize_array(stored, scales, zero_points, 1, np.dtype(np.float32))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_emulate_rounding_keeps_intermediates_on_the_grid() -> None:
    """emulate-rounding=true rounds each converted result as the int8 program does; false
    hands unrounded values on, which shows when a later op scales the rounding error up."""
    a = UniformQuantizedType.per_tensor(i8, f32, 0.5)
    b = UniformQuantizedType.per_tensor(i8, f32, 1.0)
    c = UniformQuantizedType.per_tensor(i8, f32, 0.125)
    text = f"""
    func.func @main(%x: tensor<4x{a}>, %y: tensor<4x{a}>) -> tensor<4x{c}> {{
      %s = nn.add %x, %y : tensor<4x{a}>, tensor<4x{a}> -> tensor<4x{b}>
      %m = nn.mul %s, %x : tensor<4x{b}>, tensor<4x{a}> -> tensor<4x{c}>
      func.return %m : tensor<4x{c}>
    }}
    """
    x = np.array([1, 3, 5, -7], np.int8)  # 0.5, 1.5, 2.5, -3.5
    y = np.array([0, 0, 0, 0], np.int8)
    (want,) = run(parse(text), x, y)
    emulated, fast = parse(text), parse(text)
    insert_qdq(emulated, emulate_rounding=True)
    insert_qdq(fast, emulate_rounding=False)
    np.testing.assert_array_equal(run(emulated, x, y)[0], want)
    # Unrounded: s = x, m = x * x = 0.25, 2.25, 6.25, 12.25 -> 2, 18, 50, 98.
    np.testing.assert_array_equal(run(fast, x, y)[0], np.array([2, 18, 50, 98], np.int8))


def test_targets_leave_other_regions_alone() -> None:
    element = UniformQuantizedType.per_tensor(i8, f32, 0.5, -3)
    t = f"tensor<4x{element}>"
    text = f"""
    func.func @main(%x: {t}) -> {t} {{
      %r = delegate.region "opencl" (%a = %x : {t}) -> ({t}) {{
        %s = nn.relu %a : {t} -> {t}
        delegate.yield %s : {t}
      }}
      %q = delegate.region "cpu" (%b = %r : {t}) -> ({t}) {{
        %s = nn.relu %b : {t} -> {t}
        delegate.yield %s : {t}
      }}
      func.return %q : {t}
    }}
    """
    module = parse(text)
    stats = insert_qdq(module, targets=("opencl",))
    verify_module(module)
    assert (stats.converted, stats.dcasts, stats.qcasts) == (1, 1, 1)
    opencl, cpu = (op for op in module.walk() if op.name == "delegate.region")
    assert [op.name for op in opencl.body.block.ops] == [
        "quant.dcast",
        "nn.relu",
        "quant.qcast",
        "delegate.yield",
    ]
    assert [op.name for op in cpu.body.block.ops] == ["nn.relu", "delegate.yield"]
    assert quantized_element(opencl.results[0].type) == element


def test_pass_is_registered_with_its_options() -> None:
    assert get_all_passes()["insert-qdq"]() is InsertQDQPass
    assert InsertQDQPass().targets == ()
    assert InsertQDQPass().emulate_rounding is True


def test_refused_op_is_a_located_error() -> None:
    element = UniformQuantizedType.per_tensor(i32, f32, 0.5)
    text = f"""
    func.func @main(%x: tensor<4x{element}>) -> tensor<4x{element}> {{
      %y = nn.relu %x : tensor<4x{element}> -> tensor<4x{element}>
      func.return %y : tensor<4x{element}>
    }}
    """
    module = parse(text)
    before = str(module)
    with pytest.raises(IrcDiagnosticError, match="32-bit quantized values") as info:
        InsertQDQPass().apply(make_context(), module)
    assert info.value.op is not None
    assert info.value.op.name == "nn.relu"
    assert str(module) == before  # checked before anything changed
