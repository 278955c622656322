"""Tests of the `convert-layout` pass: numerics and transposes on the shared models, the
numerics of every case of its FileCheck file, delegate regions, options and helpers.

Numerics: the reference target gives the same outputs before and after the pass, within
1e-5 x max|output| (quantized outputs exactly). Model tests skip without ../shared/models.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, Region
from xdsl.passes import PassPipeline
from xdsl.rewriter import InsertPoint, Rewriter

import irc
from irc.context import get_all_passes, make_context
from irc.diagnostics import IrcDiagnosticError, verify_module
from irc.dialects import delegate, nn
from irc.dialects.nn.base import ints_of
from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import numpy_dtype
from irc.passes.convert_layout import (
    ConvertLayoutPass,
    compose,
    inverse,
    needs_conversion,
    plan_for,
    reshape_through_transpose,
)

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
MANIFEST = MODELS / "manifest.json"
FILECHECK = Path(__file__).resolve().parents[1] / "filecheck" / "passes" / "convert-layout.mlir"

TRANSPOSES_NCHW = {
    "face_detection_short_range": 5,  # the input, and 4 reshapes merging H, W and C
    "mobilenet_v2_int8": 1,
    "mobilenet_v2_float32": 1,
    "small_cnn_float32": 2,  # the input, and the flatten before the dense layer
    "small_cnn_int8": 2,
    "ppocr_mobile_v2_cls": 0,  # NCHW already
}
"""Transposes left by `convert-layout{to=NCHW},canonicalize` on the shared models."""

TRANSPOSES_NHWC = {
    "face_detection_short_range": 0,  # NHWC already
    "mobilenet_v2_int8": 0,
    "mobilenet_v2_float32": 0,
    "small_cnn_float32": 0,
    "small_cnn_int8": 0,
    "ppocr_mobile_v2_cls": 1,  # the input
}
"""Transposes left by `convert-layout{to=NHWC},canonicalize` on the shared models."""


@pytest.fixture(scope="module")
def ctx() -> Context:
    return make_context()


def apply(ctx: Context, module: ModuleOp, spec: str) -> ModuleOp:
    PassPipeline.parse_spec(get_all_passes(), spec).apply(ctx, module)
    verify_module(module)
    return module


def transposes(module: ModuleOp) -> list[nn.TransposeOp]:
    return [op for op in module.walk() if isinstance(op, nn.TransposeOp)]


def assert_close(before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> None:
    assert before.keys() == after.keys()
    for name, want in before.items():
        got = after[name]
        assert got.shape == want.shape, name
        assert got.dtype == want.dtype, name
        if np.issubdtype(want.dtype, np.integer) or want.dtype == np.bool_:
            np.testing.assert_array_equal(got, want, err_msg=name)
            continue
        scale = float(np.abs(want).max()) if want.size else 0.0
        diff = float(np.abs(got.astype(np.float64) - want).max()) if want.size else 0.0
        assert diff <= 1e-5 * scale, f"{name}: max |difference| {diff:.3g}, max |output| {scale}"


# ---- Shared models -----------------------------------------------------------------------------


def _entries() -> list[dict]:
    if not MANIFEST.is_file():
        return []
    return json.loads(MANIFEST.read_text())["models"]


ENTRIES = _entries()
needs_models = pytest.mark.skipif(not ENTRIES, reason="no ../shared/models")


_imported: dict[str, ModuleOp] = {}
_host_outputs: dict[str, dict[str, np.ndarray]] = {}


def import_entry(entry: dict) -> ModuleOp:
    """A copy of the model's module (imported once per model in this module)."""
    if entry["name"] not in _imported:
        shapes = {spec["name"]: spec["shape"] for spec in entry["inputs"]}
        _imported[entry["name"]] = irc.import_model(MODELS / entry["file"], input_shapes=shapes)
    return _imported[entry["name"]].clone()


def host_outputs(entry: dict) -> dict[str, np.ndarray]:
    """The imported model's outputs on the host for `model_inputs` (run once per model)."""
    if entry["name"] not in _host_outputs:
        _host_outputs[entry["name"]] = irc.run(import_entry(entry), model_inputs(entry))
    return _host_outputs[entry["name"]]


def model_inputs(entry: dict) -> dict[str, np.ndarray]:
    folder = (MODELS / entry["file"]).parent
    with np.load(folder / "inputs_0.npz") as data:
        return {name: data[name] for name in data.files}


def boundary_ok(transpose: nn.TransposeOp) -> bool:
    """Whether a transpose left by the pass sits at a layout boundary: on a graph input,
    before a graph output, or beside an op that the transpose cannot cross."""
    if isinstance(transpose.input, BlockArgument):
        return True
    perm = ints_of(transpose.perm)
    for use in transpose.output.uses:
        user = use.operation
        if isinstance(user, func.ReturnOp):
            continue
        if plan_for(user, perm) is None or isinstance(user, nn.ReshapeOp):
            continue  # an op the pass does not understand, or a reshape mixing dims
        return False
    return True


@needs_models
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_shared_model(ctx: Context, entry: dict) -> None:
    """Numerics hold for to=NCHW and to=NHWC; transposes only at boundaries, counted."""
    module = import_entry(entry)
    inputs = model_inputs(entry)
    before = host_outputs(entry)
    for to, expected in (("NCHW", TRANSPOSES_NCHW), ("NHWC", TRANSPOSES_NHWC)):
        converted = apply(ctx, module.clone(), f"convert-layout{{to={to}}},canonicalize")
        layouts = {op.layout.data for op in converted.walk() if isinstance(op, nn.Conv2DOp)}
        assert layouts <= {to}
        left = transposes(converted)
        assert all(boundary_ok(t) for t in left), [str(t) for t in left]
        if entry["name"] in expected:
            assert len(left) == expected[entry["name"]], (to, [str(t) for t in left])
        assert_close(before, irc.run(converted, inputs))


@needs_models
@pytest.mark.parametrize("name", ["mobilenet_v2_float32", "mobilenet_v2_int8"])
def test_mobilenet_v2_keeps_only_its_input_transpose(ctx: Context, name: str) -> None:
    (entry,) = [e for e in ENTRIES if e["name"] == name]
    module = apply(ctx, import_entry(entry), "convert-layout{to=NCHW},canonicalize")
    (transpose,) = transposes(module)
    assert isinstance(transpose.input, BlockArgument)
    assert ints_of(transpose.perm) == (0, 3, 1, 2)


@needs_models
def test_converted_model_prints_and_parses(ctx: Context) -> None:
    """Name hints stay unique: the converted model's text parses back."""
    (entry,) = [e for e in ENTRIES if e["name"] == "small_cnn_float32"]
    module = apply(ctx, import_entry(entry), "convert-layout{to=NCHW},canonicalize")
    assert str(irc.parse_module(str(module))) == str(module)


@needs_models
def test_model_inside_a_region(ctx: Context) -> None:
    """targets=npu: the transposes stay inside the region, whose signature keeps NHWC."""
    (entry,) = [e for e in ENTRIES if e["name"] == "mobilenet_v2_int8"]
    module = import_entry(entry)
    inputs = model_inputs(entry)
    before = host_outputs(entry)
    region = wrap_in_region(the_main(module), "npu")
    signature = [c.type for c in region.captures], [r.type for r in region.outputs]
    apply(ctx, module, "convert-layout{targets=npu},canonicalize")
    assert ([c.type for c in region.captures], [r.type for r in region.outputs]) == signature
    (transpose,) = transposes(module)
    assert transpose.parent_op() is region
    inline_regions(module)
    assert_close(before, irc.run(module, inputs))


# ---- Regions -----------------------------------------------------------------------------------


def the_main(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


def wrap_in_region(function: func.FuncOp, target: str) -> delegate.RegionOp:
    """Move the whole body of `function` into one `delegate.region` capturing its arguments."""
    block = function.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    body = Block(arg_types=[a.type for a in block.args])
    for arg, inner in zip(block.args, body.args):
        arg.replace_all_uses_with(inner)
    for op in [op for op in block.ops if op is not ret]:
        op.detach()
        body.add_op(op)
    body.add_op(delegate.YieldOp(*ret.arguments))
    region = delegate.RegionOp(
        target, list(block.args), [v.type for v in ret.arguments], Region(body)
    )
    Rewriter.insert_op(region, InsertPoint.before(ret))
    for index, result in enumerate(region.outputs):
        ret.operands[index] = result
    return region


def inline_regions(module: ModuleOp) -> None:
    """Replace every `delegate.region` by its body, so the reference target can run it."""
    for region in [op for op in module.walk() if isinstance(op, delegate.RegionOp)]:
        block = region.body.block
        for arg, capture in zip(block.args, region.captures):
            arg.replace_all_uses_with(capture)
        yield_op = block.last_op
        assert isinstance(yield_op, delegate.YieldOp)
        for result, value in zip(region.outputs, yield_op.values):
            result.replace_all_uses_with(value)
        for op in [op for op in block.ops if op is not yield_op]:
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(region))
        Rewriter.erase_op(region, safe_erase=False)


# ---- The FileCheck cases, run -------------------------------------------------------------------


def filecheck_cases() -> list[tuple[str, str]]:
    """(name, IR) of each `// -----` chunk of the FileCheck file that the reference runs."""
    cases = []
    for chunk in FILECHECK.read_text().split("// -----"):
        lines = [line for line in chunk.splitlines() if not line.startswith("//")]
        text = "\n".join(lines)
        if "func.func" not in text or "func.call" in text:
            continue
        name = text.split("func.func @", 1)[1].split("(", 1)[0]
        cases.append((name, text))
    return cases


def random_inputs(function: func.FuncOp, rng: np.random.Generator) -> dict[str, np.ndarray]:
    inputs = {}
    for index, arg in enumerate(function.body.block.args):
        type_ = arg.type
        assert isinstance(type_, TensorType)
        shape = [1 if d < 0 else d for d in type_.get_shape()]
        element = type_.element_type
        if isinstance(element, UniformQuantizedType):
            inputs[f"arg{index}"] = rng.integers(-128, 128, shape).astype(np.int8)
        elif np.issubdtype(numpy_dtype(type_), np.integer):
            inputs[f"arg{index}"] = (
                (np.arange(np.prod(shape)) % 2).reshape(shape).astype(numpy_dtype(type_))
            )
        elif len(shape) == 1:  # batch_norm parameters: a positive variance
            inputs[f"arg{index}"] = rng.uniform(0.5, 2.0, shape).astype(numpy_dtype(type_))
        else:
            inputs[f"arg{index}"] = rng.standard_normal(shape).astype(numpy_dtype(type_))
    return inputs


def changed_signature(function: func.FuncOp) -> tuple[list[bool], list[bool]]:
    """Which arguments and results keep-signature=false gives the layout NCHW: rank-4
    ones but filters, in functions with ops to convert."""
    if not any(needs_conversion(op, "NCHW") for op in function.walk()):
        return [False] * len(function.body.block.args), [False] * len(
            function.function_type.outputs.data
        )
    args = [
        len(arg.type.get_shape()) == 4  # type: ignore[attr-defined]
        and not any(
            isinstance(use.operation, nn.Conv2DOp | nn.Conv2DTransposeOp) and use.index == 1
            for use in arg.uses
        )
        for arg in function.body.block.args
    ]
    results = [len(t.get_shape()) == 4 for t in function.function_type.outputs.data]  # type: ignore[attr-defined]
    return args, results


def transposed(
    values: dict[str, np.ndarray], prefix: str, which: list[bool], perm: tuple[int, ...]
) -> dict[str, np.ndarray]:
    """`values` (`arg0..` or `result0..`) with the chosen ones transposed by `perm`."""
    result = dict(values)
    for index, chosen in enumerate(which):
        if chosen:
            key = f"{prefix}{index}"
            result[key] = np.ascontiguousarray(values[key].transpose(perm))
    return result


CASES = filecheck_cases()


@pytest.mark.parametrize("text", [c[1] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize(
    "spec",
    [
        "convert-layout{to=NCHW}",
        "convert-layout{to=NHWC}",
        "convert-layout{to=NCHW},convert-layout{to=NHWC}",
        "convert-layout{to=NCHW keep-signature=false}",
        "convert-layout{targets=npu}",
    ],
)
def test_filecheck_case_numerics(ctx: Context, text: str, spec: str) -> None:
    module = irc.parse_module(text)
    function = the_main(module)
    entry = function.sym_name.data
    args, results = changed_signature(function) if "keep-signature=false" in spec else ([], [])
    inputs = random_inputs(function, np.random.default_rng(0))
    reference = module.clone()
    inline_regions(reference)
    before = irc.run(reference, inputs, entry=entry)
    apply(ctx, module, spec)
    inline_regions(module)
    after = irc.run(module, transposed(inputs, "arg", args, (0, 3, 1, 2)), entry=entry)
    assert_close(before, transposed(after, "result", results, (0, 2, 3, 1)))


# ---- Behaviour ---------------------------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    return irc.parse_module(text)


CONV = """
func.func @f(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = nn.constant dense<1.0> : tensor<2x1x1x2xf32>
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>
    -> tensor<1x4x4x2xf32>
  %r = nn.relu %y : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  func.return %r : tensor<1x4x4x2xf32>
}
"""


def test_pass_is_idempotent(ctx: Context) -> None:
    once = apply(ctx, parse(CONV), "convert-layout{to=NCHW}")
    twice = apply(ctx, once.clone(), "convert-layout{to=NCHW}")
    assert str(twice) == str(once)
    assert len(transposes(once)) == 2


def test_unknown_target_is_a_no_op(ctx: Context) -> None:
    module = apply(ctx, parse(CONV), "convert-layout{targets=nothing}")
    assert str(module) == str(parse(CONV))


def test_options() -> None:
    (pass_,) = PassPipeline.parse_spec(
        get_all_passes(), "convert-layout{to=NHWC targets=a,b keep-signature=true}"
    ).passes
    assert pass_ == ConvertLayoutPass(to="NHWC", targets=("a", "b"), keep_signature=True)
    assert ConvertLayoutPass() == ConvertLayoutPass(to="NCHW", targets=(), keep_signature=True)
    with pytest.raises(ValueError, match="cannot be combined with targets"):
        ConvertLayoutPass(targets=("a",), keep_signature=False)
    with pytest.raises(ValueError, match="Incompatible types"):
        PassPipeline.parse_spec(get_all_passes(), "convert-layout{to=NWHC}")


def test_called_function_keeps_its_signature(ctx: Context) -> None:
    text = (
        CONV
        + """
func.func @g(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %y = func.call @f(%x) : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  func.return %y : tensor<1x4x4x2xf32>
}
"""
    )
    with pytest.raises(IrcDiagnosticError, match=r"'func\.call' refers to it") as info:
        apply(ctx, parse(text), "convert-layout{keep-signature=false}")
    assert isinstance(info.value.diagnostic.op, func.FuncOp)
    apply(ctx, parse(text), "convert-layout")  # keeping the signature is fine


@pytest.mark.parametrize(
    ("source", "perm", "target", "expected"),
    [
        # NCHW data viewed as NHWC, flattened after a global pool: only size-1 dims move.
        ((1, 8, 1, 1), (0, 2, 3, 1), (1, 8), ((1, 8), (0, 1))),
        # Folding H and W of the NHWC view: [N, C, H*W], then C goes last again.
        ((1, 2, 4, 4), (0, 2, 3, 1), (1, 16, 2), ((1, 2, 16), (0, 2, 1))),
        # Merging W with C needs the NHWC order of the data: no such pair.
        ((1, 2, 4, 4), (0, 2, 3, 1), (1, 4, 8), None),
        ((1, 2, 4, 4), (0, 2, 3, 1), (1, 32), None),
        # A rank-3 reshape that splits a dim: [6, 4] viewed as [4, 6], split to [4, 2, 3].
        ((6, 4), (1, 0), (4, 2, 3), ((2, 3, 4), (2, 0, 1))),
        # Dynamic sizes are refused.
        ((-1, 2, 4, 4), (0, 2, 3, 1), (-1, 32), None),
    ],
)
def test_reshape_through_transpose(
    source: tuple[int, ...],
    perm: tuple[int, ...],
    target: tuple[int, ...],
    expected: tuple[tuple[int, ...], tuple[int, ...]] | None,
) -> None:
    found = reshape_through_transpose(source, perm, target)
    assert found == expected
    if found is not None:
        data = np.arange(int(np.prod(source))).reshape(source)
        shape, result_perm = found
        want = data.transpose(perm).reshape(target)
        np.testing.assert_array_equal(data.reshape(shape).transpose(result_perm), want)


def test_permutation_helpers() -> None:
    perm = (0, 3, 1, 2)
    data = np.arange(24).reshape(1, 2, 3, 4)
    assert inverse(perm) == (0, 2, 3, 1)
    np.testing.assert_array_equal(data.transpose(perm).transpose(inverse(perm)), data)
    second = (2, 0, 3, 1)
    np.testing.assert_array_equal(
        data.transpose(perm).transpose(second), data.transpose(compose(perm, second))
    )


def test_quantized_filter_axis_moves(ctx: Context) -> None:
    """A per-axis filter transposed at compile time keeps its scales on the O dimension."""
    text = """
func.func @f(%x: tensor<1x2x2x2xQX>) -> tensor<1x2x2x3xQY> {
  %w = nn.constant dense<[[[[1, 2]]], [[[3, 4]]], [[[5, 6]]]]> : tensor<3x1x1x2xi8>
    -> tensor<3x1x1x2xQW>
  %y = nn.conv2d_transpose %x, %w layout = "NHWC" : tensor<1x2x2x2xQX>, tensor<3x1x1x2xQW>
    -> tensor<1x2x2x3xQY>
  func.return %y : tensor<1x2x2x3xQY>
}
"""
    for name, element in (
        ("QX", "!quant.uniform<i8:f32, 0.5>"),
        ("QY", "!quant.uniform<i8:f32, 0.25>"),
        ("QW", "!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>"),
    ):
        text = text.replace(name, element)
    module = apply(ctx, parse(text), "convert-layout{to=NCHW}")
    (conv,) = [op for op in module.walk() if isinstance(op, nn.Conv2DTransposeOp)]
    filter_op = conv.filter.owner
    assert isinstance(filter_op, nn.ConstantOp)
    assert filter_op.to_array().tolist() == [[[[1]], [[3]], [[5]]], [[[2]], [[4]], [[6]]]]
    element = filter_op.output.type.element_type  # type: ignore[attr-defined]
    assert isinstance(element, UniformQuantizedType)
    assert element.axis == 1
    assert element.scale_values == (0.1, 0.2, 0.3)
