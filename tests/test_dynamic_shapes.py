"""Dynamic shapes (`irc.specialize`): re-specialisation per input shape (cached, LRU),
`CompiledModel.resize`, and shape buckets behind one guarded entry, from Python and through
`irc-compile --shape-buckets` / `irc-run`.

The pipeline runs are counted by wrapping `irc.compiler._run_pipeline`, which every
specialisation goes through once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import irc
import irc.compiler
import irc.specialize
from irc.runtime import InputError
from irc.specialize import expand_buckets, parse_shape_buckets
from irc.tools.irc_compile import main as compile_main
from irc.tools.irc_run import main as run_main
from irc.tools.irc_translate import main as translate_main

RNG = np.random.default_rng(7)
W = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal((3,)).astype(np.float32)


def expected(x: np.ndarray) -> np.ndarray:
    """What the test model computes: relu(x @ W + B)."""
    return np.maximum(x @ W + B, 0.0)


def write_model(path: Path) -> Path:
    """An ONNX model y = relu(x @ W + B) with x of shape [N, 4] (N dynamic)."""
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
        ],
        "dynamic_batch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        initializer=[numpy_helper.from_array(W, "w"), numpy_helper.from_array(B, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    return write_model(tmp_path / "dyn.onnx")


@pytest.fixture
def pipeline_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one on every run of the default pipeline."""
    runs: list[int] = []
    original = irc.compiler._run_pipeline

    def counting(*args: object, **kwargs: object) -> object:
        runs.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(irc.compiler, "_run_pipeline", counting)
    return runs


def batch(n: int) -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((n, 4)).astype(np.float32)}


def check(model: irc.CompiledModel, inputs: dict[str, np.ndarray]) -> None:
    got = model.run(inputs)["y"]
    np.testing.assert_allclose(got, expected(inputs["x"]), rtol=1e-4, atol=1e-5)


# ---- Re-specialisation on run ------------------------------------------------------------------


def test_run_respecialises_once_per_shape(model_path: Path, pipeline_runs: list[int]) -> None:
    model = irc.compile(model_path, ["reference"])
    assert pipeline_runs == [1]
    assert model.inputs[0].shape == (1, 4)  # the importer's default batch
    check(model, batch(1))
    assert len(pipeline_runs) == 1
    check(model, batch(4))
    assert len(pipeline_runs) == 2
    check(model, batch(4))  # cached
    check(model, batch(1))  # the original specialisation
    assert len(pipeline_runs) == 2
    assert model.specializations == 2  # the first one included
    with pytest.raises(InputError, match="does not fit input 'x' of shape"):
        model.run({"x": np.zeros((2, 5), np.float32)})  # the static dimension differs


def test_specialisation_cache_is_bounded(
    model_path: Path, pipeline_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(irc.specialize, "SHAPE_CACHE_SIZE", 2)
    model = irc.compile(model_path, ["reference"], input_shapes={"x": (1, 4)})
    for n in (2, 3, 5):
        check(model, batch(n))
    assert model.specializations == 2
    assert len(pipeline_runs) == 4
    check(model, batch(5))  # the most recent ones stay
    assert len(pipeline_runs) == 4
    check(model, batch(2))  # the least recently used one was dropped
    assert len(pipeline_runs) == 5


def test_threads_running_different_shapes(model_path: Path, pipeline_runs: list[int]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    model = irc.compile(model_path, ["reference"], input_shapes={"x": (1, 4)})
    work = [batch(n) for n in (1, 2, 3, 2, 3, 1, 2, 3)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(model.run, work))
    for inputs, got in zip(work, results, strict=True):
        np.testing.assert_allclose(got["y"], expected(inputs["x"]), rtol=1e-4, atol=1e-5)
    assert len(pipeline_runs) == 3  # 1x4, then 2x4 and 3x4 once each


def test_static_model_keeps_no_source(tmp_path: Path, pipeline_runs: list[int]) -> None:
    path = tmp_path / "static.mlir"
    path.write_text(
        "func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> "
        'attributes {irc.input_names = ["x"], irc.output_names = ["y"]} {\n'
        "  %y = nn.relu %x : tensor<2x4xf32> -> tensor<2x4xf32>\n"
        "  func.return %y : tensor<2x4xf32>\n}\n"
    )
    model = irc.compile(path, ["reference"])
    with pytest.raises(InputError, match=r"expected shape \(2, 4\), got \(3, 4\)"):
        model.run({"x": np.zeros((3, 4), np.float32)})
    with pytest.raises(ValueError, match="has no dynamic dimensions to re-specialise"):
        model.resize({"x": (3, 4)})
    assert len(pipeline_runs) == 1


DYNAMIC_IR = """\
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32>
    attributes {irc.input_names = ["x"], irc.output_names = ["y"]} {
  %r = nn.relu %x : tensor<?x4xf32> -> tensor<?x4xf32>
  %y = nn.add %r, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
"""


def test_ir_module_with_dynamic_dimension(pipeline_runs: list[int]) -> None:
    source = irc.parse_module(DYNAMIC_IR)
    model = irc.compile(source, ["reference"])
    assert model.inputs[0].shape[0] < 0
    assert model.inputs[0].shape[1] == 4
    for n in (2, 3, 2):
        x = RNG.standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_array_equal(model.run({"x": x})["y"], np.maximum(x, 0) + x)
    assert len(pipeline_runs) == 3  # the dynamic compile, then 2x4 and 3x4
    model.resize({"x": (3, 4)})
    assert model.inputs[0].shape == (3, 4)
    assert "tensor<3x4xf32>" in str(model.module)
    assert "tensor<?x4xf32>" in str(source)  # the caller's module is never modified
    fixed = irc.compile(source, ["reference"], input_shapes={"x": (5, 4)})
    assert fixed.inputs[0].shape == (5, 4)


# ---- resize ------------------------------------------------------------------------------------


def test_resize(model_path: Path, pipeline_runs: list[int]) -> None:
    model = irc.compile(model_path, ["reference"])
    model.resize({"x": (8, 4)})
    assert len(pipeline_runs) == 2
    assert model.inputs[0].shape == (8, 4)
    assert model.outputs[0].shape == (8, 3)
    check(model, batch(8))
    model.resize({"x": (8, 4)})
    model.resize({"x": (1, 4)})  # back to the first: cached
    assert len(pipeline_runs) == 2
    with pytest.raises(ValueError, match="resize: no input named 'z'"):
        model.resize({"z": (1, 4)})
    with pytest.raises(ValueError, match="does not fit input 'x'"):
        model.resize({"x": (1, 5)})


# ---- Shape buckets -----------------------------------------------------------------------------


def test_shape_buckets(model_path: Path, tmp_path: Path, pipeline_runs: list[int]) -> None:
    model = irc.compile(model_path, ["reference"], shape_buckets={"x": [1, 4, 8]})
    assert len(pipeline_runs) == 3
    assert model.buckets == ({"x": (1, 4)}, {"x": (4, 4)}, {"x": (8, 4)})
    text = model.to_text()
    assert "irc.shape_guard = [@main_s0, @main_s1, @main_s2]" in text
    assert "func.func private @main(tensor<?x4xf32>) -> tensor<?x3xf32>" in text
    for n in (1, 4, 8):
        check(model, batch(n))
    model.resize({"x": (4, 4)})
    assert len(pipeline_runs) == 3  # a bucketed shape compiles nothing
    check(model, batch(3))  # outside the buckets, the model at hand: specialised
    assert len(pipeline_runs) == 4

    path = tmp_path / "buckets.mlir"
    model.save(path)
    loaded = irc.load(path)
    for n in (1, 4, 8):
        check(loaded, batch(n))
    assert len(pipeline_runs) == 4
    with pytest.raises(InputError, match="no specialisation of @main for x=3x4: the compiled"):
        loaded.run(batch(3))
    with pytest.raises(ValueError, match="resize: no specialisation of @main for x=2x4"):
        loaded.resize({"x": (2, 4)})


def test_parse_and_expand_buckets() -> None:
    assert parse_shape_buckets(["x=1,4", "y=2x3,5x3"]) == {"x": [1, 4], "y": [(2, 3), (5, 3)]}
    for bad in ("x", "x=", "x=1,,2", "=1", "x=a"):
        with pytest.raises(ValueError, match="bad --shape-buckets"):
            parse_shape_buckets([bad])
    with pytest.raises(ValueError, match="names input 'x' twice"):
        parse_shape_buckets(["x=1", "x=2"])
    signature = {"x": (-1, 4), "y": (-1, -1)}
    assert expand_buckets({"x": [1, (2, 4)]}, signature, {"y": (1, 1)}) == [
        {"y": (1, 1), "x": (1, 4)},
        {"y": (1, 1), "x": (2, 4)},
    ]
    errors = [
        ({"x": [1], "y": [(1, 1), (2, 2)]}, "same number of buckets"),
        ({"z": [1]}, "no input named 'z'"),
        ({"y": [2]}, "has 2 dynamic dimensions; give whole shapes"),
        ({"x": [(2, 5)]}, "shape 2x5 does not fit input 'x' of shape ?x4"),
        ({"x": [2, 2]}, "bucket #1 repeats an earlier one"),
    ]
    for buckets, message in errors:
        with pytest.raises(ValueError, match=re.escape(message)):
            expand_buckets(buckets, signature)


# ---- Through the tools -------------------------------------------------------------------------


def _tool(
    main: Callable[[list[str]], int], args: Sequence[object], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_irc_compile_shape_buckets(
    model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "out.mlir"
    args = [model_path, "--targets", "reference", "-o", out_file, "--shape-buckets", "x=2,4"]
    code, out, err = _tool(compile_main, args, capsys)
    assert code == 0, err
    assert out.startswith("bucket @main_s0 (x=2x4):\ntargets: reference")
    inputs = batch(4)
    np.savez(tmp_path / "in.npz", **inputs)
    outputs = tmp_path / "out.npz"
    run_args = [out_file, "--inputs", tmp_path / "in.npz", "--outputs", outputs]
    code, out, err = _tool(run_main, run_args, capsys)
    assert code == 0, err
    with np.load(outputs) as saved:
        np.testing.assert_allclose(saved["y"], expected(inputs["x"]), rtol=1e-4, atol=1e-5)
    code, out, err = _tool(run_main, [out_file], capsys)  # random inputs: the first bucket
    assert code == 0, err
    assert out.startswith("y: shape=(2, 3) dtype=float32")
    np.savez(tmp_path / "in.npz", **batch(3))
    code, _, err = _tool(run_main, run_args, capsys)
    assert code == 1
    assert err == (
        f"irc-run: error: {tmp_path / 'in.npz'}: no specialisation of @main for x=3x4: the "
        "compiled buckets are x=2x4; x=4x4; compile with a bucket for these shapes, or compile "
        "from the model to re-specialise\n"
    )


@pytest.mark.parametrize(
    ("buckets", "message"),
    [
        ("x=1x5", "shape buckets: shape 1x5 does not fit input 'x' of shape ?x4"),
        (
            "x=",
            "bad --shape-buckets 'x=': expected NAME=SIZES or NAME=SHAPES, e.g. x=1,4,8 or "
            "x=1x4,8x4",
        ),
        ("q=1", "shape buckets: no input named 'q' (inputs: 'x')"),
    ],
)
def test_irc_compile_bad_shape_buckets(
    model_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    buckets: str,
    message: str,
) -> None:
    out_file = tmp_path / "never.mlir"
    args = [model_path, "--targets", "reference", "-o", out_file, "--shape-buckets", buckets]
    code, _, err = _tool(compile_main, args, capsys)
    assert code == 1
    assert err == f"irc-compile: error: {message}\n"
    assert not out_file.exists()


# ---- Compiled before the shapes are known ------------------------------------------------------

FILTER = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)


def write_conv_model(path: Path) -> Path:
    """An ONNX model y = relu(conv3x3(x)) with x of shape [N, 3, H, W] (N, H, W dynamic)."""
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        "dynamic_image",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, "H", "W"])],
        initializer=[numpy_helper.from_array(FILTER, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def conv_expected(x: np.ndarray) -> np.ndarray:
    """relu(conv3x3(x)) with zero padding 1, in numpy."""
    n, _, h, w = x.shape
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    out = np.zeros((n, 4, h, w), np.float64)
    for i in range(3):
        for j in range(3):
            out += np.einsum(
                "nchw,oc->nohw", padded[:, :, i : i + h, j : j + w], FILTER[:, :, i, j]
            )
    return np.maximum(out, 0.0).astype(np.float32)


@pytest.fixture
def conv_path(tmp_path: Path) -> Path:
    return write_conv_model(tmp_path / "dynconv.onnx")


def image(*shape: int) -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal(shape).astype(np.float32)}


def test_compile_without_shapes(conv_path: Path, pipeline_runs: list[int]) -> None:
    model = irc.compile(conv_path, ["reference"])
    assert pipeline_runs == []  # nothing to compile before the shapes are known
    assert model.unspecialised
    assert "dynamic inputs: x=?x3x?x?" in model.summary
    assert "func.func private @main(tensor<?x3x?x?xf32>) -> tensor<?x4x?x?xf32>" in str(
        model.module
    )
    for shape in ((2, 3, 10, 7), (1, 3, 5, 5), (2, 3, 10, 7)):
        inputs = image(*shape)
        got = model.run(inputs)["y"]
        np.testing.assert_allclose(got, conv_expected(inputs["x"]), rtol=1e-4, atol=1e-5)
    assert len(pipeline_runs) == 2  # once per input-shape signature
    assert model.specializations == 2
    assert model.unspecialised  # running does not change the current shapes
    with pytest.raises(InputError, match="does not fit input 'x' of shape"):
        model.run({"x": np.zeros((1, 2, 4, 4), np.float32)})
    with pytest.raises(InputError, match="input 'x'"):
        model.run({})
    with pytest.raises(ValueError, match=r"has dynamic input dimensions \(x=\?x3x\?x\?\)"):
        model.save(conv_path.with_suffix(".mlir"))
    with pytest.raises(InputError, match=r"run it through CompiledModel\.run"):
        model.program.run(image(1, 3, 4, 4))


def test_unspecialised_threads(conv_path: Path, pipeline_runs: list[int]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    model = irc.compile(conv_path, ["reference"])
    work = [image(1, 3, h, 6) for h in (4, 5, 6, 4, 5, 6, 4, 5)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(model.run, work))
    for inputs, got in zip(work, results, strict=True):
        np.testing.assert_allclose(got["y"], conv_expected(inputs["x"]), rtol=1e-4, atol=1e-5)
    assert len(pipeline_runs) == 3


def test_unspecialised_resize_and_buckets(
    conv_path: Path, tmp_path: Path, pipeline_runs: list[int]
) -> None:
    model = irc.compile(conv_path, ["reference"])
    with pytest.raises(ValueError, match=r"resize: give a static shape .* x \(\?x3x\?x\?\)"):
        model.resize({})
    model.resize({"x": (2, 3, 6, 6)})
    assert not model.unspecialised
    assert model.inputs[0].shape == (2, 3, 6, 6)
    assert "compiled on its first run" not in model.summary  # the specialisation's summary
    assert model.summary.startswith("targets: reference\n@main: reference: ")
    inputs = image(2, 3, 6, 6)
    np.testing.assert_allclose(
        model.run(inputs)["y"], conv_expected(inputs["x"]), rtol=1e-4, atol=1e-5
    )
    model.save(tmp_path / "resized.mlir")  # static now: an artifact like any other
    assert len(pipeline_runs) == 1
    bucketed = irc.compile(
        conv_path, ["reference"], shape_buckets={"x": [(1, 3, 4, 4), (1, 3, 8, 8)]}
    )
    assert bucketed.buckets == ({"x": (1, 3, 4, 4)}, {"x": (1, 3, 8, 8)})
    inputs = image(1, 3, 8, 8)
    np.testing.assert_allclose(
        bucketed.run(inputs)["y"], conv_expected(inputs["x"]), rtol=1e-4, atol=1e-5
    )


def test_unspecialised_ir_keeps_dynamic_dims(tmp_path: Path) -> None:
    """A graph whose converters all handle dynamic sizes imports whole with `?` dims, and
    `infer-shapes` refines them once the arguments are static."""
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
        ],
        "dynamic_sequence",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "S", 3])],
        initializer=[numpy_helper.from_array(W, "w"), numpy_helper.from_array(B, "b")],
    )
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx_model.ir_version = 10
    path = tmp_path / "seq.onnx"
    onnx.save(onnx_model, path)
    model = irc.compile(path, ["reference"])
    text = str(model.module)
    assert "func.func @main(%x: tensor<?x?x4xf32>) -> tensor<?x?x3xf32>" in text, text
    assert "nn.relu" in text
    refined = irc.specialize.ModelSource("<module>", module=model.module).instantiate(
        {"x": (2, 5, 4)}
    )
    assert "tensor<?" not in str(refined)
    assert "tensor<2x5x3xf32>" in str(refined)
    x = RNG.standard_normal((2, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(model.run({"x": x})["y"], expected(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(irc.run(path, {"x": x})["y"], expected(x), rtol=1e-4, atol=1e-5)


def test_irc_run_names_input_shape(
    conv_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _tool(run_main, [conv_path], capsys)
    assert code == 1
    assert err == (
        f"irc-run: error: {conv_path}: inputs with dynamic dimensions need static shapes: "
        "'x' [?, 3, ?, ?]; give them with --input-shape x=DIMS (e.g. x=1x3x16x16), or give "
        "input values with --inputs FILE.npz\n"
    )
    code, out, err = _tool(run_main, [conv_path, "--input-shape", "x=2x3x5x6"], capsys)
    assert code == 0, err
    assert out.startswith("y: shape=(2, 4, 5, 6) dtype=float32")
    inputs = image(1, 3, 7, 4)
    np.savez(tmp_path / "in.npz", **inputs)
    outputs = tmp_path / "out.npz"
    args = [conv_path, "--targets", "reference", "--inputs", tmp_path / "in.npz"]
    code, _, err = _tool(run_main, [*args, "--outputs", outputs], capsys)
    assert code == 0, err
    with np.load(outputs) as saved:
        np.testing.assert_allclose(saved["y"], conv_expected(inputs["x"]), rtol=1e-4, atol=1e-5)
    code, _, err = _tool(
        compile_main, [conv_path, "--targets", "reference", "-o", tmp_path / "c.mlir"], capsys
    )
    assert code == 1
    assert err == (
        f"irc-compile: error: {conv_path}: inputs with dynamic dimensions need static shapes: "
        "'x' [?, 3, ?, ?]; give them with --input-shape x=DIMS (e.g. x=1x3x16x16), or sizes "
        "to compile with --shape-buckets\n"
    )
    assert not (tmp_path / "c.mlir").exists()
    code, _, err = _tool(translate_main, ["--import-onnx", conv_path], capsys)
    assert code == 1
    assert err.endswith(
        "need static shapes: 'x' [?, 3, ?, ?]; give them with --input-shape "
        "x=DIMS (e.g. x=1x3x16x16)\n"
    )


def test_irc_run_without_targets_takes_input_shapes(conv_path: Path) -> None:
    inputs = image(1, 3, 6, 9)
    np.testing.assert_allclose(
        irc.run(conv_path, inputs)["y"], conv_expected(inputs["x"]), rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(
        irc.run(conv_path, inputs, targets="reference")["y"],
        conv_expected(inputs["x"]),
        rtol=1e-4,
        atol=1e-5,
    )


def test_unspecialised_model_with_an_unknown_op(tmp_path: Path) -> None:
    """A node without any converter fails the compile, shapes or not."""
    graph = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"])],
        "unknown_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", "S"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])],
    )
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx_model.ir_version = 10
    path = tmp_path / "det.onnx"
    onnx.save(onnx_model, path)
    from irc.importers import ModelImportError

    with pytest.raises(ModelImportError, match="Det"):
        irc.compile(path, ["reference"])
