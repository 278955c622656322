"""Tests of the irc-run driver, run in-process (plus one run of the installed script)."""

from __future__ import annotations

import json
import os
import re
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
    out, _ = run_tool([model, "--inputs", inputs, "--outputs", outputs, "--check-kernels"], capsys)
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
        "irc-run: error: input 'x' of @dynamic has the dynamic shape (?, 3); "
        "give its values with --inputs FILE.npz\n"
    )
    inputs = save_npz(tmp_path / "in.npz", x=np.ones((5, 3), np.float32))
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


# ---- --benchmark, --profile, --check ------------------------------------------

PLUGIN = "tests.plugins.testplugin:TestPluginTarget"

LAYERS = """\
func.func @main(%x: tensor<1x4x4x2xf32>, %b: tensor<2xf32>) -> tensor<1x4x4x2xf32> {
  %s = nn.add %x, %b : tensor<1x4x4x2xf32>, tensor<2xf32> -> tensor<1x4x4x2xf32>
  %r = nn.relu %s : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %t = nn.tanh %r : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %u = nn.relu %t : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  func.return %u : tensor<1x4x4x2xf32>
}
"""
"""add and relu go to testplugin, tanh (and the relu after it) to the reference target."""

TARGETS = ["--plugin", PLUGIN, "--targets", "testplugin,reference"]


@pytest.fixture
def layers(tmp_path: Path) -> Path:
    path = tmp_path / "layers.mlir"
    path.write_text(LAYERS)
    return path


def test_benchmark_text(layers: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = run_tool([layers, *TARGETS, "--benchmark", "--warmup", "1", "--runs", "4"], capsys)
    lines = out.splitlines()
    assert len(lines) == 4, out  # no output summary
    assert re.fullmatch(r"init: \d+\.\d{3} ms \(import/parse \+ compile\)", lines[0])
    assert re.fullmatch(r"first run: \d+\.\d{3} ms", lines[1])
    assert lines[2] == "warmup: 1 runs"
    match = re.fullmatch(
        r"runs: 4: min (\S+) ms, median (\S+) ms, mean (\S+) ms, p90 (\S+) ms, std (\S+) ms",
        lines[3],
    )
    assert match, lines[3]
    low, median, mean, p90, std = (float(v) for v in match.groups())
    assert 0 < low <= median <= p90
    assert low <= mean
    assert std >= 0


def test_benchmark_json_with_profile(
    layers: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    outputs = tmp_path / "out.npz"
    args = [layers, *TARGETS, "--benchmark", "--json", "--profile", "--runs", "3", "--threads"]
    out, _ = run_tool([*args, "2", "--outputs", outputs], capsys)
    report = json.loads(out)
    assert set(report) == {
        "init_ms",
        "first_run_ms",
        "warmup",
        "threads",
        "runs",
        "profile",
        "kernels",
    }
    assert report["kernels"] == []  # the plugin's target times no kernel launches
    assert report["init_ms"] > 0
    assert report["first_run_ms"] > 0
    assert report["warmup"] == 3
    assert report["threads"] == 2
    assert os.environ["OMP_NUM_THREADS"] == "2"
    runs = report["runs"]
    assert runs["count"] == 3
    assert runs["min_ms"] <= runs["median_ms"] <= runs["p90_ms"]
    rows = report["profile"]
    kinds = sorted(row["kind"] for row in rows)
    assert kinds == ["dispatch", "dispatch", "transfer"]
    assert all(row["calls"] == 3 for row in rows)
    totals = [row["total_ms"] for row in rows]
    assert totals == sorted(totals, reverse=True)
    assert sum(row["percent"] for row in rows) == pytest.approx(100)
    with np.load(outputs) as archive:
        assert archive["result0"].shape == (1, 4, 4, 2)


def test_profile_of_one_run(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = run_tool([model, "--profile"], capsys)
    lines = out.splitlines()
    assert lines[0].startswith("out: shape=(2, 3)")
    header = lines[4].split()
    assert header == "# kind target op location calls total ms mean ms %".split()
    rows = [line.split() for line in lines[5:-1]]
    assert sorted(row[3] for row in rows) == ["nn.add", "nn.add", "nn.relu"]
    totals = [float(row[-3]) for row in rows]
    assert totals == sorted(totals, reverse=True)
    assert sum(float(row[-1]) for row in rows) == pytest.approx(100, abs=0.2)
    assert lines[-1].startswith("1 runs, ")


def test_check_compares_every_dispatch(layers: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = run_tool([layers, *TARGETS, "--check"], capsys)
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("result0: shape=(1, 4, 4, 2)")
    assert lines[2:] == [
        "@main_testplugin_0::@entry [testplugin]: max abs 0, max rel 0",
        "@main_reference_0::@entry [reference]: max abs 0, max rel 0",
        "check: 2 of 2 dispatches compared with the reference; largest abs 0 "
        "(@main_testplugin_0::@entry), largest rel 0 (@main_testplugin_0::@entry)",
    ]


def test_check_reports_differences(
    layers: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.plugins import testplugin

    real = testplugin.TestPluginValue.to_host

    def off_by_a_bit(self: testplugin.TestPluginValue) -> np.ndarray:
        return real(self) + np.float32(1e-3)

    monkeypatch.setattr(testplugin.TestPluginValue, "to_host", off_by_a_bit)
    out, _ = run_tool([layers, *TARGETS, "--check"], capsys)
    line = next(line for line in out.splitlines() if line.startswith("@main_testplugin_0"))
    match = re.fullmatch(r".*: max abs (\S+), max rel (\S+)", line)
    assert match, line
    assert float(match[1]) == pytest.approx(1e-3, rel=1e-3)
    assert float(match[2]) > 1e-4


def test_check_of_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx_support import make_onnx_model

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    path = tmp_path / "model.onnx"
    onnx.save(make_onnx_model(graph), path)
    out, _ = run_tool([path, *TARGETS, "--check"], capsys)
    assert "[testplugin]: max abs 0, max rel 0" in out
    assert "check: 1 of 1 dispatches compared with the reference" in out


def test_check_kernels_flags_a_bad_kernel(
    model: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import irc.targets.reference as reference
    from irc.dialects import nn

    real = reference.kernel_for

    def wrong_dtype(op: object) -> object:
        kernel = real(op)  # type: ignore[arg-type]
        if not isinstance(op, nn.ReluOp):
            return kernel
        return lambda *args: tuple(v.astype(np.float64) for v in kernel(*args))

    monkeypatch.setattr(reference, "kernel_for", wrong_dtype)
    run_tool([model], capsys)  # unchecked: the wrong dtype goes through
    _, err = run_tool([model, "--check-kernels"], capsys, status=1)
    assert "nn.relu" in err
    assert "dtype float64, expected float32" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--benchmark", "--runs", "0"], "argument --runs: must be at least 1, got 0"),
        (["--benchmark", "--warmup", "-1"], "argument --warmup: must be at least 0, got -1"),
        (["--threads", "0"], "argument --threads: must be at least 1, got 0"),
        (["--runs", "5"], "--runs needs --benchmark"),
        (["--json"], "--json needs --benchmark"),
        (["--check"], "--check needs --targets"),
        (["--check", "--benchmark", "--targets", "reference"], "--check and --benchmark do not"),
    ],
)
def test_benchmark_and_check_usage(
    model: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = run_tool([model, *args], capsys, status=2)
    assert f"irc-run: error: {message}" in err


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
