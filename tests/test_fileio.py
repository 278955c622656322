"""irc.fileio: the one atomic writer (all or nothing, one mode policy) and the one
file-format probe used by the API, the tools and the passes."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from irc.fileio import file_format, is_model_file, probe_format, write_atomically

TFLITE_HEAD = b"\x1c\x00\x00\x00TFL3" + bytes(24)


def _onnx_bytes() -> bytes:
    from onnx import TensorProto, helper
    from onnx_support import make_onnx_model

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return make_onnx_model(graph).SerializeToString()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


# ---- write_atomically ----------------------------------------------------------------------------


def test_writes_bytes_text_and_streams(tmp_path: Path) -> None:
    write_atomically(tmp_path / "a", b"\x00\x01")
    write_atomically(tmp_path / "b", "é\n")
    write_atomically(str(tmp_path / "c"), lambda stream: stream.write(b"streamed"))
    assert (tmp_path / "a").read_bytes() == b"\x00\x01"
    assert (tmp_path / "b").read_text(encoding="utf-8") == "é\n"
    assert (tmp_path / "c").read_bytes() == b"streamed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]  # no temp file left


def test_user_outputs_follow_the_umask_and_cache_entries_are_private(
    tmp_path: Path, umask_022: None
) -> None:
    old = tmp_path / "out.mlir"
    old.write_text("old")
    old.chmod(0o600)  # an older file's mode is not kept: the new file is created afresh
    write_atomically(old, "new")
    assert _mode(old) == 0o644
    write_atomically(tmp_path / "entry", b"x", private=True)
    assert _mode(tmp_path / "entry") == 0o600
    os.umask(0o077)
    write_atomically(tmp_path / "strict-umask", "x")
    assert _mode(tmp_path / "strict-umask") == 0o600


def test_a_failing_writer_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.npz"
    target.write_bytes(b"previous")

    def fail(stream) -> None:
        stream.write(b"half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        write_atomically(target, fail)
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.npz"]


def test_an_unwritable_place_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "no such dir" / "out", "x")
    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomically(tmp_path / "dir", "x")  # the rename would replace a directory
    assert (tmp_path / "dir").is_dir()


def test_a_fifo_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_atomically(fifo, "through the pipe")
    reader.join(timeout=10)
    assert received == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # `-o /dev/null` must not replace the device


# ---- probe_format --------------------------------------------------------------------------------


def test_probe_tells_the_formats_apart() -> None:
    assert probe_format(TFLITE_HEAD) == "tflite"
    assert probe_format(_onnx_bytes()) == "onnx"
    assert probe_format(_onnx_bytes()[:7]) == "onnx"  # a cut protobuf still probes
    assert probe_format(b"func.func @main() {\n  func.return\n}\n") == "mlir"
    assert probe_format("// é\nbuiltin.module {}\n".encode()[:4]) == "mlir"  # cut in a char
    assert probe_format(b"") == "mlir"
    assert probe_format(bytes(range(256))) is None
    assert probe_format(b"\x0a\x03abc") is None  # a TF GraphDef's first field, not ONNX's


def test_file_format_reads_the_bytes_whatever_the_name(tmp_path: Path) -> None:
    onnx_file = tmp_path / "model.pb"
    onnx_file.write_bytes(_onnx_bytes())
    plain = tmp_path / "model"
    plain.write_bytes(TFLITE_HEAD)
    assert (file_format(onnx_file), file_format(plain)) == ("onnx", "tflite")
    assert is_model_file(onnx_file)
    assert is_model_file(plain)
    ir = tmp_path / "ir.onnx.txt"
    ir.write_text("func.func @f() {\n  func.return\n}\n")
    assert not is_model_file(ir)
    # Unreadable: by the name, so that the reader reports the real problem.
    assert file_format(tmp_path / "missing.tflite") == "tflite"
    assert is_model_file(tmp_path / "missing.onnx")
    assert not is_model_file(tmp_path / "missing.mlir")
