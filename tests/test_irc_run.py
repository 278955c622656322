"""Tests of the irc-run driver, run in-process (plus one run of the installed script)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irc
from irc.tools.irc_run import main, summarize

MODEL = """\
func.func @main(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>)
    attributes {irc.input_names = ["x", "bias"], irc.output_names = ["out", "const"]} {
  %c = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = nn.add %x, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %r = nn.relu %s : tensor<2x3xf32> -> tensor<2x3xf32>
  %d = nn.add %c, %c : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %r, %d : tensor<2x3xf32>, tensor<3xf32>
}
func.func @ints(%i: tensor<2x5xi8>, %u: tensor<6xui8>, %q: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>,
                %h: tensor<3xf16>, %flag: tensor<2xi1>)
    -> (tensor<2x5xi8>, tensor<6xui8>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3xf16>,
        tensor<2xi1>) {
  func.return %i, %u, %q, %h, %flag : tensor<2x5xi8>, tensor<6xui8>,
      tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3xf16>, tensor<2xi1>
}
func.func @dynamic(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %r = nn.relu %x : tensor<?x3xf32> -> tensor<?x3xf32>
  func.return %r : tensor<?x3xf32>
}
func.func @calls(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = func.call @dynamic2(%x) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
func.func private @dynamic2(tensor<3xf32>) -> tensor<3xf32>
"""


@pytest.fixture(scope="module", autouse=True)
def _kernels_registered() -> None:
    from irc.dialects import nn
    from irc.targets.reference import registered_ops

    needed = {nn.AddOp, nn.ReluOp, nn.ConstantOp}
    assert needed <= registered_ops(), "reference kernels of the nn ops used here are missing"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.mlir"
    path.write_text(MODEL)
    return path


def run_tool(
    args: list[str], capsys: pytest.CaptureFixture[str], status: int = 0
) -> tuple[str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code == status, err
    assert "Traceback" not in err
    return out, err


def save_npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def good_inputs() -> dict[str, np.ndarray]:
    return {
        "x": np.array([[-1, 0, 1], [2, -3, 4]], np.float32),
        "bias": np.array([0.5, 0.5, -2], np.float32),
    }


# ---- Success ------------------------------------------------------------------


def test_summary_of_random_inputs(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = run_tool([model], capsys)
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("out: shape=(2, 3) dtype=float32 min=")
    assert lines[1].startswith("  values: [")
    assert lines[2] == "const: shape=(3,) dtype=float32 min=2 max=6 mean=4 std=1.63299"
    assert lines[3] == "  values: [2, 4, 6]"


def test_given_inputs_and_saved_outputs(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = save_npz(tmp_path / "in.npz", **good_inputs())
    outputs = tmp_path / "out.npz"
    out, _ = run_tool([model, "--inputs", inputs, "--outputs", outputs, "--check"], capsys)
    assert out.splitlines()[:2] == [
        "out: shape=(2, 3) dtype=float32 min=0 max=2.5 mean=0.833333 std=1.0274",
        "  values: [0, 0.5, 0, 2.5, 0, 2]",
    ]
    expected = irc.run(model, good_inputs())
    with np.load(outputs) as saved:
        assert saved.files == ["out", "const"]
        for name, value in expected.items():
            np.testing.assert_array_equal(saved[name], value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz", "model.mlir", "out.npz"]


def test_seed_makes_random_inputs_reproducible(
    model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = run_tool([model, "--seed", "7"], capsys)
    again, _ = run_tool([model, "--seed", "7"], capsys)
    other, _ = run_tool([model, "--seed", "8"], capsys)
    assert first == again
    assert first != other


def test_random_inputs_per_dtype(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "out.npz"
    out, _ = run_tool([model, "--entry", "ints", "--outputs", outputs], capsys)
    assert "result0: shape=(2, 5) dtype=int8" in out
    assert "result2: shape=(4,) dtype=int8" in out  # quantized: its storage type
    assert "result4: shape=(2,) dtype=bool" in out
    with np.load(outputs) as saved:
        dtypes = [saved[f"result{i}"].dtype for i in range(5)]
        assert dtypes == [np.int8, np.uint8, np.int8, np.float16, np.bool_]
        assert saved["result0"].min() < -50  # the whole range of int8
        assert saved["result0"].max() > 50


def test_outputs_with_names_numpy_savez_cannot_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "names.mlir"
    path.write_text(
        "func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n"
        '    attributes {irc.output_names = ["file", "model/out:0"]} {\n'
        "  func.return %x, %x : tensor<2xf32>, tensor<2xf32>\n"
        "}\n"
    )
    outputs = tmp_path / "out.npz"
    run_tool([path, "--outputs", outputs], capsys)
    with np.load(outputs) as saved:
        assert saved.files == ["file", "model/out:0"]


def test_summaries() -> None:
    assert summarize("e", np.zeros((0, 3), np.float32)) == "e: shape=(0, 3) dtype=float32 (empty)"
    assert summarize("b", np.array([True, False, True, True])) == (
        "b: shape=(4,) dtype=bool min=0 max=1 mean=0.75 std=0.433013\n"
        "  values: [true, false, true, true]"
    )
    assert summarize("i", np.arange(10, dtype=np.int8)) == (
        "i: shape=(10,) dtype=int8 min=0 max=9 mean=4.5 std=2.87228\n"
        "  values: [0, 1, 2, 3, 4, 5, 6, 7, ...]"
    )


# ---- Errors -------------------------------------------------------------------


def assert_nothing_written(tmp_path: Path, before: set[str]) -> None:
    assert {p.name for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %s = nn.add %x, %x : tensor<4xf32>\n"
            "  func.return %s : tensor<4xf32>\n}\n",
            [
                "{path}:3:3: error: Expected '->'",
                "  func.return %s : tensor<4xf32>",
                "  ^",
            ],
        ),
        (
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %s = nn.relu %x : tensor<4xf32> -> tensor<5xf32>\n"
            "  func.return %s : tensor<5xf32>\n}\n",
            None,  # a verifier error: located at the op
        ),
    ],
)
def test_bad_ir_is_reported_at_its_location(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    expected: list[str] | None,
) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    _, err = run_tool([path, "--outputs", tmp_path / "out.npz"], capsys, status=1)
    if expected is not None:
        assert err.splitlines() == [line.format(path=path) for line in expected]
    else:
        assert err.startswith(f"{path}:2:3: error: ")
        assert len(err.splitlines()) == 3
    assert_nothing_written(tmp_path, {"bad.mlir"})


def test_unsupported_op(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, err = run_tool([model, "--entry", "calls"], capsys, status=1)
    assert err.splitlines() == [
        f"{model}:21:3: error: reference: no kernel for 'func.call'",
        "  %y = func.call @dynamic2(%x) : (tensor<3xf32>) -> tensor<3xf32>",
        "  ^",
    ]


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, err = run_tool([tmp_path / "none.mlir"], capsys, status=1)
    assert err == (
        f"irc-run: error: could not open input file '{tmp_path / 'none.mlir'}': "
        "No such file or directory\n"
    )


def test_unknown_entry(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, err = run_tool([model, "--entry", "nope"], capsys, status=1)
    assert err == (
        f"irc-run: error: {model}: no function @nope in the module "
        "(functions: @main, @ints, @dynamic, @calls, @dynamic2)\n"
    )


def test_dynamic_dims_need_inputs(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = run_tool([model, "--entry", "dynamic"], capsys, status=1)
    assert err == (
        "irc-run: error: input 'arg0' of @dynamic has the dynamic shape (?, 3); "
        "give its values with --inputs FILE.npz\n"
    )
    inputs = save_npz(tmp_path / "in.npz", arg0=np.ones((5, 3), np.float32))
    out, _ = run_tool([model, "--entry", "dynamic", "--inputs", inputs], capsys)
    assert out.startswith("result0: shape=(5, 3) dtype=float32 min=1 max=1")


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        (
            {"x": np.zeros((2, 3), np.float32)},
            "missing input 'bias' for @main (expected inputs: 'x', 'bias')",
        ),
        (
            {**good_inputs(), "extra": np.zeros(1)},
            "unknown input 'extra' for @main (expected inputs: 'x', 'bias')",
        ),
        (
            {**good_inputs(), "x": np.zeros((3, 2), np.float32)},
            "input 'x' of @main: expected shape (2, 3), got (3, 2)",
        ),
        (
            {**good_inputs(), "bias": np.zeros(3, np.float64)},
            "input 'bias' of @main: expected dtype float32, got float64",
        ),
    ],
)
def test_input_mismatches(
    model: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    arrays: dict[str, np.ndarray],
    message: str,
) -> None:
    inputs = save_npz(tmp_path / "in.npz", **arrays)
    _, err = run_tool(
        [model, "--inputs", inputs, "--outputs", tmp_path / "out.npz"], capsys, status=1
    )
    assert err == f"irc-run: error: {inputs}: {message}\n"
    assert_nothing_written(tmp_path, {"model.mlir", "in.npz"})


@pytest.mark.parametrize(
    ("content", "reason"),
    [(None, "No such file or directory"), (b"not a zip", "not an .npz archive")],
)
def test_bad_npz(
    model: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: bytes | None,
    reason: str,
) -> None:
    inputs = tmp_path / "in.npz"
    if content is not None:
        inputs.write_bytes(content)
    _, err = run_tool([model, "--inputs", inputs], capsys, status=1)
    assert err == f"irc-run: error: could not read inputs from '{inputs}': {reason}\n"


def test_object_arrays_are_refused(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.array([object()], dtype=object))
    _, err = run_tool([model, "--inputs", inputs], capsys, status=1)
    assert err.startswith(f"irc-run: error: could not read inputs from '{inputs}': ")
    assert "pickle" in err


def test_unwritable_outputs(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing-dir" / "out.npz"
    _, err = run_tool([model, "--outputs", target], capsys, status=1)
    assert err.startswith(f"irc-run: error: could not write outputs to '{target}': ")


def test_existing_output_is_kept_on_error(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "out.npz"
    outputs.write_bytes(b"previous")
    run_tool([model, "--entry", "calls", "--outputs", outputs], capsys, status=1)
    assert outputs.read_bytes() == b"previous"
    assert_nothing_written(tmp_path, {"model.mlir", "out.npz"})


def test_internal_errors_have_no_traceback(
    model: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import irc.runtime

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(irc.runtime, "compile_function", explode)
    monkeypatch.delenv("IRC_DEBUG", raising=False)
    _, err = run_tool([model], capsys, status=1)
    assert err == (
        "irc-run: error: internal error: RuntimeError: boom (set IRC_DEBUG=1 for a traceback)\n"
    )


@pytest.mark.parametrize(
    ("args", "status"), [([], 2), (["x.mlir", "--seed", "abc"], 2), (["--help"], 0)]
)
def test_usage(args: list[str], status: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == status
    out, err = capsys.readouterr()
    assert "usage: irc-run" in (out + err)


# ---- The installed script -----------------------------------------------------


def test_console_script(model: Path, tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "irc-run"
    assert script.exists(), "run `pip install -e .` to install the irc-run script"
    outputs = tmp_path / "out.npz"
    env = {k: v for k, v in os.environ.items() if k != "IRC_DEBUG"}
    ok = subprocess.run(
        [script, model, "--outputs", outputs], capture_output=True, text=True, env=env
    )
    assert ok.returncode == 0, ok.stderr
    assert "const: shape=(3,) dtype=float32" in ok.stdout
    assert outputs.exists()
    bad = subprocess.run(
        [script, model, "--entry", "calls"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith(f"{model}:21:3: error: reference: no kernel for 'func.call'")
    assert "Traceback" not in bad.stderr
