"""irc-translate and irc-run on model files: success paths and bad input (one clear message,
exit 1, no traceback, no output file)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from script_support import console_script

from irc.tools import irc_run, irc_translate


def _onnx_model(path: Path) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "b"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def _run(main, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out = capsys.readouterr()
    return status, out.out, out.err


def test_translate_imports_onnx(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _onnx_model(tmp_path / "m.onnx")
    status, out, err = _run(
        irc_translate.main, ["--import-onnx", str(model), "--input-shape", "x=2x4"], capsys
    )
    assert status == 0, err
    assert "nn.relu" in out
    assert 'irc.input_names = ["x", "b"]' in out
    assert "tensor<2x4xf32>" in out


def test_translate_writes_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _onnx_model(tmp_path / "m.onnx")
    out_file = tmp_path / "m.mlir"
    argv = ["--import-onnx", str(model), "--bind", "b=1.5", "-o", str(out_file)]
    status, out, err = _run(irc_translate.main, argv, capsys)
    assert status == 0, err
    assert out == ""
    text = out_file.read_text()
    assert 'irc.input_names = ["x"]' in text  # b is a constant now


def test_run_specialises_dynamic_dims_to_the_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _onnx_model(tmp_path / "m.onnx")
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    x = np.array([[-1.0, 2.0, -3.0, 4.0]] * 3, np.float32)
    np.savez(inputs, x=x, b=np.array([0.5], np.float32))
    argv = [str(model), "--inputs", str(inputs), "--outputs", str(outputs)]
    status, out, err = _run(irc_run.main, argv, capsys)
    assert status == 0, err
    assert "y: shape=(3, 4)" in out
    with np.load(outputs) as result:
        np.testing.assert_allclose(result["y"], np.maximum(x, 0) + 0.5)


def test_run_drops_bound_inputs_from_the_npz(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _onnx_model(tmp_path / "m.onnx")
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((1, 4), np.float32), b=np.array([9.0], np.float32))
    argv = [str(model), "--inputs", str(inputs), "--bind", "b=2"]
    status, out, err = _run(irc_run.main, argv, capsys)
    assert status == 0, err
    assert "values: [3, 3, 3, 3]" in out


BAD_MODELS = {
    "random.tflite": bytes(range(256)) * 4,
    "random.onnx": bytes(range(255, -1, -1)) * 4,
    "empty.onnx": b"",
    "text.tflite": b"not a model at all\n",
}


@pytest.mark.parametrize("tool", ["irc-translate", "irc-run"])
@pytest.mark.parametrize("name", sorted(BAD_MODELS))
def test_corrupt_models_give_one_clear_error(
    tool: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(BAD_MODELS[name])
    out_file = tmp_path / "out.mlir"
    if tool == "irc-translate":
        flag = "--import-tflite" if name.endswith(".tflite") else "--import-onnx"
        status, _, err = _run(irc_translate.main, [flag, str(path), "-o", str(out_file)], capsys)
    else:
        status, _, err = _run(irc_run.main, [str(path), "--outputs", str(out_file)], capsys)
    assert status == 1
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"{tool}: error: ")
    assert str(path) in err
    assert not out_file.exists()


def test_onnx_renamed_tflite_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    onnx_file = _onnx_model(tmp_path / "m.onnx")
    renamed = tmp_path / "m.tflite"
    renamed.write_bytes(onnx_file.read_bytes())
    status, _, err = _run(irc_run.main, [str(renamed)], capsys)
    assert status == 1
    assert "not a TFLite model" in err


def test_translate_imports_what_the_bytes_say_despite_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _onnx_model(tmp_path / "m.onnx")
    argv = ["--import-tflite", str(model), "--input-shape", "x=2x4"]
    status, out, err = _run(irc_translate.main, argv, capsys)
    assert status == 0
    assert err == (
        f"irc-translate: warning: {model} is an ONNX model, not a TFLite model; "
        "importing it as onnx (--import-onnx)\n"
    )
    assert "nn.relu" in out


@pytest.mark.parametrize("name", ["m.pb", "m", "model.bin"])
def test_onnx_under_any_name_is_found_by_its_bytes(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / name
    model.write_bytes(_onnx_model(tmp_path / "m.onnx").read_bytes())
    np.savez(tmp_path / "in.npz", x=np.ones((2, 4), np.float32), b=np.ones(1, np.float32))
    status, out, err = _run(
        irc_run.main, [str(model), "--inputs", str(tmp_path / "in.npz")], capsys
    )
    assert status == 0, err
    assert out.startswith("y: shape=(2, 4) dtype=float32 min=2 max=2")
    argv = ["--import-onnx", str(model), "--input-shape", "x=2x4"]
    status, out, err = _run(irc_translate.main, argv, capsys)
    assert (status, err) == (0, "")
    assert "nn.relu" in out


def test_text_and_garbage_under_a_model_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "model.pb"
    text.write_text("func.func @main() {\n  func.return\n}\n")
    status, _, err = _run(irc_translate.main, ["--import-onnx", str(text)], capsys)
    assert status == 1
    assert err == (
        f"irc-translate: error: {text}: not a model: neither a TFLite flatbuffer nor an ONNX "
        "protobuf (it is text: IR for irc-opt or irc-run?)\n"
    )
    garbage = tmp_path / "model.bin"
    garbage.write_bytes(bytes(range(256)))
    status, _, err = _run(irc_translate.main, ["--import-onnx", str(garbage)], capsys)
    assert status == 1
    assert err.endswith("not a model: neither a TFLite flatbuffer nor an ONNX protobuf\n")


@pytest.mark.parametrize(
    ("option", "message"),
    [("--bind=b", "bad --bind 'b'"), ("--input-shape=x=2by4", "bad --input-shape 'x=2by4'")],
)
def test_bad_model_options(
    option: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _onnx_model(tmp_path / "m.onnx")
    status, _, err = _run(irc_translate.main, ["--import-onnx", str(model), option], capsys)
    assert status == 1
    assert message in err


def test_console_script(tmp_path: Path) -> None:
    model = _onnx_model(tmp_path / "m.onnx")
    result = subprocess.run(
        [console_script("irc-translate"), "--import-onnx", str(model), "--input-shape", "x=1x4"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "func.func @main" in result.stdout
