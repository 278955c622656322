"""Ahead-of-time artifacts: the format version, loading without the model and without any
pass, a fresh process with the model deleted, and embedded OpenCL binaries (used only on a
matching device, never when their bytes do not match their hash).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from opencl_support import AVAILABLE, needs_device
from test_dynamic_shapes import expected, write_model

import irc
import irc.compiler
import irc.context
import irc.pipelines
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
    """No OpenCL program in memory or on disk: a program that loads without a build came
    from an embedded binary."""
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ocl_runtime, "_programs", {})


# ---- The format version ------------------------------------------------------------------------


def test_save_load_round_trip_runs_no_pass(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = compiled(model_path)
    path = tmp_path / "model.irc.mlir"
    model.save(path)
    text = path.read_text()
    assert text.startswith("builtin.module attributes {irc.format_version = 1 : i64} {")
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


@pytest.mark.parametrize("version", ["2 : i64", "0 : i64", '"one"'])
def test_unknown_format_version_is_refused(
    model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str
) -> None:
    path = tmp_path / "future.mlir"
    compiled(model_path, ["reference"]).save(path)
    text = path.read_text().replace(
        "irc.format_version = 1 : i64", f"irc.format_version = {version}"
    )
    path.write_text(text)
    shown = re.sub(r" : i64", "", version)
    message = (
        f"{path}: artifact format version {shown} is not supported (this irc reads versions 1 "
        "to 1); compile the model again with this irc"
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
    bin_dir = Path(sys.executable).parent
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
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


# ---- Embedded OpenCL binaries ------------------------------------------------------------------


@needs_device
def test_embedded_binary_loads_without_a_build(
    model_path: Path, tmp_path: Path, fresh_program_cache: None
) -> None:
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
    ocl_runtime._programs.clear()
    loaded = irc.load(path)
    (executable,) = loaded.program.loaded.values()
    assert executable.from_cache  # no cache anywhere: the embedded binary was used
    got = loaded.run(inputs())["y"]
    np.testing.assert_allclose(got, expected(inputs()["x"]), rtol=1e-4, atol=1e-5)


def _program(module: irc.CompiledModel) -> ocl.ProgramOp:
    return next(op for op in module.module.walk() if isinstance(op, ocl.ProgramOp))


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
        (
            lambda t, d: re.sub(
                r'(binary = dense<"0x[0-9A-F]{64})([0-9A-F])',
                lambda m: m.group(1) + ("0" if m.group(2) != "0" else "1"),
                t,
                count=1,
            ),
            "binary does not match its SHA-256",
        ),
        (
            lambda t, d: re.sub(r'source_sha256 = "[0-9a-f]+"', 'source_sha256 = "00"', t),
            "built from other source",
        ),
    ],
    ids=["driver", "device", "tampered", "source"],
)
def test_mismatched_or_tampered_binary_is_not_loaded(
    model_path: Path, tmp_path: Path, fresh_program_cache: None, edit: object, reason: str
) -> None:
    model = compiled(model_path)
    device = get_device()
    text = model.to_text(embed_binaries=True)
    edited = edit(text, device.device)  # type: ignore[operator]
    assert edited != text
    path = tmp_path / "edited.mlir"
    path.write_text(edited)
    ocl_runtime._programs.clear()
    loaded = irc.load(path)
    binary, why = describe_embedded(device, _program(loaded))
    assert binary is None
    assert why == reason
    (executable,) = loaded.program.loaded.values()
    assert not executable.from_cache  # built from the source instead
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
