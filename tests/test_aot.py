"""Ahead-of-time artifacts: the format version, loading without the model and without any
pass, a fresh process with the model deleted, the binary weights file next to the text
(checked against its SHA-256, written all or nothing, format-1 text still loads), and
embedded OpenCL binaries (used only on a matching device, never when their bytes do not match
their hash).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from opencl_support import AVAILABLE, needs_device
from test_dynamic_shapes import expected, write_model

import irc
import irc.artifact as artifact
import irc.cache
import irc.compiler
import irc.context
import irc.pipelines
from irc.artifact import iter_dense
from irc.compiler import ArtifactError
from irc.dialects import ocl
from irc.targets.opencl import runtime as ocl_runtime
from irc.targets.opencl.aot import BINARIES_ATTR, describe_embedded
from irc.targets.opencl.device import get_device
from irc.tools.irc_compile import main as compile_main
from irc.tools.irc_run import main as run_main

TARGETS = ["opencl", "reference"] if AVAILABLE else ["reference"]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    return write_model(tmp_path / "model.onnx")


def inputs(n: int = 2) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)}


def compiled(model_path: Path, targets: list[str] = TARGETS) -> irc.CompiledModel:
    return irc.compile(model_path, targets, input_shapes={"x": (2, 4)})


@pytest.fixture
def fresh_program_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No OpenCL program in memory or in the disk cache before the test (a compile in the
    test fills both: see `forget_programs`)."""
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ocl_runtime, "_programs", {})


def forget_programs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """From here on no OpenCL program in memory or on disk (an empty `IRC_CACHE_DIR`): a
    program that then loads without a source build came from an embedded binary. (Where
    irc keeps binaries on disk, as on NVIDIA's driver or with `IRC_OPENCL_BINARY_CACHE=on`,
    the compile before a load has cached the program of the same source.)"""
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "load-cache"))
    ocl_runtime._programs.clear()


@pytest.fixture
def driver_builds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | bytes]]:
    """Every program handed to the OpenCL driver from now on, in order: `("source", text)`
    or `("binary", bytes)` (embedded, cached or built: one `build` function takes them all)."""
    import irc.targets.opencl.build as ocl_build

    calls: list[tuple[str, str | bytes]] = []
    original = ocl_build.build

    def recording(device: object, *, source: str | None = None, binary: bytes | None = None):
        calls.append(("source", source) if source is not None else ("binary", bytes(binary or b"")))
        return original(device, source=source, binary=binary)  # type: ignore[arg-type]

    monkeypatch.setattr(ocl_build, "build", recording)
    monkeypatch.setattr(ocl_runtime, "build", recording)
    return calls


# ---- The format version ------------------------------------------------------------------------


def test_save_load_round_trip_runs_no_pass(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = compiled(model_path)
    path = tmp_path / "model.irc.mlir"
    model.save(path)
    text = path.read_text()
    # the weights section first where a constant is big enough to leave the text (gpu-style
    # kernels upload W's 4x3 floats padded to a float4 of outputs: 64 bytes, INLINE_LIMIT)
    weights = text.startswith("{-# external_resources: {irc_weights: {")
    assert weights == ('\n    file: "model.irc.weights",' in text[:80])
    body = text[text.index("#-}\n") + 4 :] if weights else text
    assert body.startswith("builtin.module attributes {irc.format_version = 2 : i64} {")
    assert path.with_name("model.irc.weights").exists() == bool(weights)
    if AVAILABLE:
        assert '"ocl.program"' in text  # lowered: the kernel sources are in the artifact
    want = model.run(inputs())
    with monkeypatch.context() as patch:
        for factory in irc.context.get_all_passes().values():
            patch.setattr(factory(), "apply", _forbidden)
        patch.setattr(irc.compiler, "_run_pipeline", _forbidden)
        patch.setattr(irc.pipelines, "lower_executables", _forbidden)
        again = irc.load(path)
        got = again.run(inputs())
    assert again.targets == tuple(TARGETS[:1])
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)
    np.testing.assert_allclose(got["y"], expected(inputs()["x"]), rtol=1e-4, atol=1e-5)


def _forbidden(*args: object, **kwargs: object) -> None:
    raise AssertionError("a pass ran on load")


@pytest.mark.parametrize("version", ["3 : i64", "0 : i64", '"one"'])
def test_unknown_format_version_is_refused(
    model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str
) -> None:
    path = tmp_path / "future.mlir"
    compiled(model_path, ["reference"]).save(path)
    text = path.read_text().replace(
        "irc.format_version = 2 : i64", f"irc.format_version = {version}"
    )
    path.write_text(text)
    shown = re.sub(r" : i64", "", version)
    message = (
        f"{path}: artifact format version {shown} is not supported (this irc reads versions 1 "
        "to 2); compile the model again with this irc"
    )
    with pytest.raises(ArtifactError, match=re.escape(message)):
        irc.load(path)
    assert run_main([str(path)]) == 1
    _out, err = capsys.readouterr()
    assert err == f"irc-run: error: {message}\n"


def test_plain_ir_files_still_load(tmp_path: Path) -> None:
    path = tmp_path / "plain.mlir"
    path.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %y = nn.relu %x : tensor<2xf32> -> tensor<2xf32>\n"
        "  func.return %y : tensor<2xf32>\n}\n"
    )
    model = irc.load(path)
    got = model.run({"arg0": np.array([-1.0, 2.0], np.float32)})
    np.testing.assert_array_equal(got["result0"], [0.0, 2.0])


def _console(args: list[str]) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / args[0]
    assert script.exists(), f"{args[0]} is not installed next to this Python: pip install -e ."
    return subprocess.run(
        [str(script), *args[1:]],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_artifact_runs_in_a_fresh_process_without_the_model(
    model_path: Path, tmp_path: Path
) -> None:
    artifact = tmp_path / "model.irc.mlir"
    extra = ["--embed-binaries"] if AVAILABLE else []
    result = _console(
        [
            "irc-compile",
            str(model_path),
            "--targets",
            ",".join(TARGETS),
            "--input-shape",
            "x=2x4",
            "-o",
            str(artifact),
            *extra,
        ]
    )
    assert result.returncode == 0, result.stderr
    model_path.unlink()
    np.savez(tmp_path / "in.npz", **inputs())
    out = tmp_path / "out.npz"
    ran = _console(
        ["irc-run", str(artifact), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(out)]
    )
    assert ran.returncode == 0, ran.stderr
    with np.load(out) as saved:
        np.testing.assert_allclose(saved["y"], expected(inputs()["x"]), rtol=1e-4, atol=1e-5)


# ---- The weights file --------------------------------------------------------------------------

WIDE_W = np.random.default_rng(7).standard_normal((64, 32)).astype(np.float32)
WIDE_B = np.random.default_rng(8).standard_normal((32,)).astype(np.float32)


def write_wide_model(path: Path) -> Path:
    """An ONNX model y = relu(x @ W + B) with an 8 KiB filter (x of shape [2, 64])."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
        ],
        "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32])],
        initializer=[numpy_helper.from_array(WIDE_W, "w"), numpy_helper.from_array(WIDE_B, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def wide_inputs() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(9).standard_normal((2, 64)).astype(np.float32)}


def wide_expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ WIDE_W + WIDE_B, 0.0)


@pytest.fixture
def wide_artifact(tmp_path: Path) -> tuple[irc.CompiledModel, Path]:
    """A compiled wide model saved as `wide.irc.mlir` + `wide.irc.weights`."""
    model = irc.compile(write_wide_model(tmp_path / "wide.onnx"), TARGETS)
    path = tmp_path / "wide.irc.mlir"
    model.save(path)
    return model, path


def test_weights_are_saved_as_binary_next_to_the_text(
    wide_artifact: tuple[irc.CompiledModel, Path],
) -> None:
    model, path = wide_artifact
    weights = path.with_name("wide.irc.weights")
    text = path.read_text()
    assert text.startswith('{-# external_resources: {irc_weights: {\n    file: "wide.irc.weights",')
    assert "dense_resource<w0> : tensor<" in text
    assert 'dense<"0x' not in text  # the 8 KiB filter is not in the text
    blob = weights.read_bytes()
    assert blob.startswith(b"IRC-WEIGHTS-1\n")
    assert WIDE_W.tobytes() in blob or WIDE_W.T.copy().tobytes() in blob
    dense = sum(len(a.data.data) for a in iter_dense(model.module))
    assert dense >= WIDE_W.nbytes
    assert len(blob) <= 1.1 * dense + 64 * 8  # header and alignment only
    again = irc.load(path)
    for name, value in model.run(wide_inputs()).items():
        np.testing.assert_array_equal(again.run(wide_inputs())[name], value)
    got = again.run(wide_inputs())["y"]
    np.testing.assert_allclose(got, wide_expected(wide_inputs()["x"]), rtol=1e-4, atol=1e-5)


def test_loaded_module_is_the_saved_one(wide_artifact: tuple[irc.CompiledModel, Path]) -> None:
    model, path = wide_artifact
    assert irc.load(path).to_text() == model.to_text()


def test_format_1_text_artifacts_still_load(
    wide_artifact: tuple[irc.CompiledModel, Path], tmp_path: Path
) -> None:
    model, _path = wide_artifact
    old = tmp_path / "old.irc.mlir"
    old.write_text(model.to_text().replace("irc.format_version = 2", "irc.format_version = 1"))
    assert 'dense<"0x' in old.read_text()
    got = irc.load(old).run(wide_inputs())["y"]
    np.testing.assert_allclose(got, wide_expected(wide_inputs()["x"]), rtol=1e-4, atol=1e-5)


def test_inline_weights_and_special_files_get_one_text(
    wide_artifact: tuple[irc.CompiledModel, Path], tmp_path: Path
) -> None:
    model, _path = wide_artifact
    inline = tmp_path / "inline.irc.mlir"
    model.save(inline, inline_weights=True)
    assert not inline.with_name("inline.irc.weights").exists()
    assert inline.read_text() == model.to_text()
    fifo = tmp_path / "pipe.irc.mlir"  # a special file (as /dev/null): written in place
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    model.save(fifo)
    reader.join(timeout=60)
    assert received == [model.to_text().encode()]
    assert not fifo.with_name("pipe.irc.weights").exists()


def test_two_artifacts_in_one_process_keep_their_own_weights(tmp_path: Path) -> None:
    """The store belongs to one parse (xDSL's dense_resource blobs are process-global)."""
    first = tmp_path / "a" / "m.irc.mlir"
    second = tmp_path / "b" / "m.irc.mlir"
    for path, scale in ((first, 1.0), (second, -1.0)):
        path.parent.mkdir()
        model = irc.compile(write_wide_model(tmp_path / "wide.onnx"), ["reference"])
        if scale < 0:
            model = irc.compile(_negated(tmp_path / "neg.onnx"), ["reference"])
        model.save(path)
    x = wide_inputs()["x"]
    a = irc.load(first).run({"x": x})["y"]
    b = irc.load(second).run({"x": x})["y"]
    np.testing.assert_allclose(a, wide_expected(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b, np.maximum(x @ -WIDE_W + WIDE_B, 0.0), rtol=1e-4, atol=1e-5)


def _negated(path: Path) -> Path:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(write_wide_model(path))
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(-WIDE_W, "w"))
    onnx.save(model, path)
    return path


def _flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda w: w.unlink(), "cannot read the artifact's weights file '{w}': No such file"),
        (
            _flip_one_byte,
            "weights file '{w}' does not match this artifact (its SHA-256 differs: the file "
            "was changed, or belongs to another save); save the artifact again",
        ),
        (
            lambda w: w.write_bytes(w.read_bytes()[:-64]),
            "weights file '{w}' is not the one this artifact was saved with",
        ),
    ],
    ids=["missing", "altered", "truncated"],
)
def test_bad_weights_file_is_one_clear_error(
    wide_artifact: tuple[irc.CompiledModel, Path],
    capsys: pytest.CaptureFixture[str],
    damage: object,
    message: str,
) -> None:
    from xdsl.utils.exceptions import ParseError

    _model, path = wide_artifact
    weights = path.with_name("wide.irc.weights")
    damage(weights)  # type: ignore[operator]
    expected_message = message.format(w=weights)
    with pytest.raises(ParseError, match=re.escape(expected_message)):
        irc.load(path)
    assert run_main([str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{path}:1:")
    assert expected_message in err
    assert "Traceback" not in err
    assert err.count("error") == 1


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace('file: "wide.irc.weights"', 'file: "../wide.irc.weights"'),
            "weights file '../wide.irc.weights' must be a file name in the artifact's folder",
        ),
        (
            lambda t: t.replace("dense_resource<w0>", "dense_resource<w99>"),
            "dense_resource<w99> is not in 'wide.irc.weights'",
        ),
        (
            lambda t: re.sub(r'w0: "(\d+):(\d+)"', r'w0: "\1:4"', t),
            "dense_resource<w0> holds 4 bytes, which do not fit",
        ),
        (lambda t: re.sub(r'w0: "(\d+):', 'w0: "99999999:', t), "is outside the weights file"),
        (
            lambda t: t.replace("irc_weights:", "other_weights:"),
            "unknown external resource 'other_weights' (irc reads 'irc_weights')",
        ),
    ],
    ids=["path", "handle", "size", "offset", "resource"],
)
def test_bad_weights_section_is_a_located_error(
    wide_artifact: tuple[irc.CompiledModel, Path], edit: object, message: str
) -> None:
    from xdsl.utils.exceptions import ParseError

    _model, path = wide_artifact
    text = path.read_text()
    edited = edit(text)  # type: ignore[operator]
    assert edited != text
    path.write_text(edited)
    with pytest.raises(ParseError, match=re.escape(message)):
        irc.load(path)


def test_failed_save_leaves_the_previous_artifact(
    wide_artifact: tuple[irc.CompiledModel, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, path = wide_artifact
    weights = path.with_name("wide.irc.weights")
    before = (path.read_bytes(), weights.read_bytes())
    writes: list[str] = []
    original = artifact._write_temp

    def failing_second_write(target: str, data: bytes) -> str:
        writes.append(target)
        if len(writes) == 2:
            raise OSError(28, "No space left on device")
        return original(target, data)

    monkeypatch.setattr(artifact, "_write_temp", failing_second_write)
    other = irc.compile(_negated(path.with_name("neg.onnx")), TARGETS)
    with pytest.raises(OSError, match="No space left"):
        other.save(path)
    assert writes == [str(weights), str(path)]  # the weights first, then the text
    assert (path.read_bytes(), weights.read_bytes()) == before
    assert sorted(p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")) == []
    np.testing.assert_array_equal(
        irc.load(path).run(wide_inputs())["y"], model.run(wide_inputs())["y"]
    )


def test_irc_opt_prints_an_artifact_self_contained(
    wide_artifact: tuple[irc.CompiledModel, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from irc.tools.irc_opt import main as opt_main

    _model, path = wide_artifact
    assert opt_main([str(path)]) == 0
    out, _err = capsys.readouterr()
    assert "dense_resource" not in out
    assert 'dense<"0x' in out


# ---- Embedded OpenCL binaries ------------------------------------------------------------------


@needs_device
@pytest.mark.parametrize("disk_cache", ["on", "off"])
def test_embedded_binary_loads_without_a_build(
    model_path: Path,
    tmp_path: Path,
    fresh_program_cache: None,
    driver_builds: list[tuple[str, str | bytes]],
    monkeypatch: pytest.MonkeyPatch,
    disk_cache: str,
) -> None:
    monkeypatch.setenv(ocl_runtime.BINARY_CACHE_ENV, disk_cache)
    model = compiled(model_path)
    text = model.to_text(embed_binaries=True)
    assert f"{BINARIES_ATTR} = [{{platform = " in text
    assert 'binary = dense<"0x' in text
    assert BINARIES_ATTR not in model.to_text()  # the in-memory module is left alone
    device = get_device()
    tag = device.device
    for field in (tag.platform.name, tag.name, tag.driver_version, tag.version):
        assert f'"{field}"' in text
    path = tmp_path / "embedded.mlir"
    path.write_text(text)
    forget_programs(monkeypatch, tmp_path)
    driver_builds.clear()
    loaded = irc.load(path)
    (executable,) = loaded.program.loaded.values()
    assert executable.from_cache  # no cache anywhere: the embedded binary was used
    embedded, why = describe_embedded(device, _program(loaded))
    assert why == "matches"
    assert driver_builds == [("binary", embedded)]
    got = loaded.run(inputs())["y"]
    np.testing.assert_allclose(got, expected(inputs()["x"]), rtol=1e-4, atol=1e-5)


def _program(module: irc.CompiledModel) -> ocl.ProgramOp:
    return next(op for op in module.module.walk() if isinstance(op, ocl.ProgramOp))


def _tamper_binary(text: str) -> str:
    """`text` with one hex digit of its first embedded binary changed."""
    return re.sub(
        r'(binary = dense<"0x[0-9A-F]{64})([0-9A-F])',
        lambda m: m.group(1) + ("0" if m.group(2) != "0" else "1"),
        text,
        count=1,
    )


@needs_device
@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (
            lambda t, d: t.replace(f'driver = "{d.driver_version}"', 'driver = "0.0-other"'),
            "built for another device",
        ),
        (
            lambda t, d: t.replace(f'device = "{d.name}"', 'device = "Another GPU"'),
            "built for another device",
        ),
        (lambda t, d: _tamper_binary(t), "binary does not match its SHA-256"),
        (
            lambda t, d: re.sub(r'source_sha256 = "[0-9a-f]+"', 'source_sha256 = "00"', t),
            "built from other source",
        ),
    ],
    ids=["driver", "device", "tampered", "source"],
)
@pytest.mark.parametrize("disk_cache", ["on", "off"])
def test_mismatched_or_tampered_binary_is_not_loaded(
    model_path: Path,
    tmp_path: Path,
    fresh_program_cache: None,
    driver_builds: list[tuple[str, str | bytes]],
    monkeypatch: pytest.MonkeyPatch,
    edit: object,
    reason: str,
    disk_cache: str,
) -> None:
    monkeypatch.setenv(ocl_runtime.BINARY_CACHE_ENV, disk_cache)
    model = compiled(model_path)
    device = get_device()
    text = model.to_text(embed_binaries=True)
    edited = edit(text, device.device)  # type: ignore[operator]
    assert edited != text
    path = tmp_path / "edited.mlir"
    path.write_text(edited)
    forget_programs(monkeypatch, tmp_path)
    driver_builds.clear()
    loaded = irc.load(path)
    binary, why = describe_embedded(device, _program(loaded))
    assert binary is None
    assert why == reason
    (executable,) = loaded.program.loaded.values()
    assert not executable.from_cache  # built from the source instead
    assert [kind for kind, _ in driver_builds] == ["source"]  # no binary reached the driver
    got = loaded.run(inputs())["y"]
    np.testing.assert_allclose(got, expected(inputs()["x"]), rtol=1e-4, atol=1e-5)


@needs_device
def test_rejected_embedded_binary_leaves_the_disk_cache_usable(
    model_path: Path,
    tmp_path: Path,
    fresh_program_cache: None,
    driver_builds: list[tuple[str, str | bytes]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where irc caches binaries on disk (NVIDIA, `IRC_OPENCL_BINARY_CACHE=on`), an
    embedded binary that does not match is skipped, and the verified disk entry of the same
    source (the compile's) may load instead: never the embedded bytes."""
    monkeypatch.setenv(ocl_runtime.BINARY_CACHE_ENV, "on")
    model = compiled(model_path)
    device = get_device()
    source = _program(model).source.data
    cached = irc.cache.read_verified(
        ocl_runtime.CACHE_NAMESPACE, ocl_runtime.program_key(device, source), ".bin"
    )
    assert cached is not None  # the compile saved its binary
    text = model.to_text(embed_binaries=True)
    tampered = _tamper_binary(text)
    assert tampered != text
    path = tmp_path / "tampered.mlir"
    path.write_text(tampered)
    ocl_runtime._programs.clear()  # the disk cache stays
    driver_builds.clear()
    loaded = irc.load(path)
    assert describe_embedded(device, _program(loaded)) == (
        None,
        "binary does not match its SHA-256",
    )
    (executable,) = loaded.program.loaded.values()
    assert executable.from_cache
    assert driver_builds == [("binary", cached)]
    got = loaded.run(inputs())["y"]
    np.testing.assert_allclose(got, expected(inputs()["x"]), rtol=1e-4, atol=1e-5)


@needs_device
def test_irc_compile_embed_binaries(
    model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "out.mlir"
    args = [model_path, "--targets", "opencl,reference", "--input-shape", "x=2x4"]
    assert compile_main([*map(str, args), "-o", str(out_file), "--embed-binaries"]) == 0
    capsys.readouterr()
    assert BINARIES_ATTR in out_file.read_text()
    loaded = irc.load(out_file)
    _, why = describe_embedded(get_device(), _program(loaded))
    assert why == "matches"
    assert compile_main([*map(str, args), "-o", str(out_file)]) == 0
    assert BINARIES_ATTR not in out_file.read_text()
    _, why = describe_embedded(get_device(), _program(irc.load(out_file)))
    assert why == "no embedded binary"
