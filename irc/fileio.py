"""Files: the one atomic writer and the one file-format probe of irc.

Core, passes and tools write every file through `write_atomically` and decide what a file
holds with `file_format` / `probe_format`. Nothing here knows about the command line:
failures are `OSError`s (the tools turn them into one-line messages).

File modes (one policy, as `cc -o`, `cp` and `mlir-opt -o` create files): an output a user
asks for (`irc-compile -o`, `irc-opt -o`, `irc-translate -o`, `irc-run --outputs`,
`CompiledModel.save`, `partition{report=...}`, `--graph`) is an ordinary file, mode 0666
less the process umask (0644 under the usual umask 022), whatever mode an older file of
that name had. Entries of the private on-disk cache (`irc.cache`) are written with
`private=True`: mode 0600, in 0700 directories.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable
from typing import IO, Literal

__all__ = [
    "MODEL_FORMATS",
    "MODEL_SUFFIXES",
    "FileFormat",
    "file_format",
    "is_model_file",
    "is_special_file",
    "probe_format",
    "write_atomically",
    "write_temp",
]

FileFormat = Literal["tflite", "onnx", "mlir"]
"""What a file holds: a TFLite flatbuffer, an ONNX protobuf, or MLIR text."""

MODEL_FORMATS: tuple[FileFormat, ...] = ("tflite", "onnx")
MODEL_SUFFIXES = (".tflite", ".onnx")

PUBLIC_MODE = 0o666
"""Mode of user outputs before the umask (the kernel applies it at creation)."""
PRIVATE_MODE = 0o600
"""Mode of private cache entries."""

_PROBE_BYTES = 4096
"""How much of a file the probe reads."""


# ---- Writing -------------------------------------------------------------------------------------

Content = bytes | str | Callable[[IO[bytes]], None]
"""What to write: bytes, text (UTF-8), or a function writing to a binary stream."""


def write_atomically(
    path: str | os.PathLike[str], content: Content, *, private: bool = False
) -> None:
    """Write `path` all or nothing: a temporary file in the same directory, flushed to disk
    (`fsync`), then renamed over `path`. A reader sees the old file or the whole new one;
    on any error the temporary file is removed and `path` is left as it was.

    The new file's mode is 0666 less the umask, or 0600 with `private=True` (the module
    docstring). A path that exists and is not a regular file (`/dev/null`, a FIFO,
    `/dev/stdout`) is written in place: renaming over it would replace the device.
    Raises `OSError` when the file cannot be written.
    """
    target = os.fspath(path)
    if is_special_file(target):
        with open(target, "wb") as stream:
            _write(stream, content)
        return
    temp = write_temp(target, content, private=private)
    try:
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_temp(path: str | os.PathLike[str], content: Content, *, private: bool = False) -> str:
    """Write `content` to a new temporary file next to `path`, flushed to disk (`fsync`), and
    return its name, for the caller to rename over `path` (`write_atomically` for one file).
    Its mode is that of `write_atomically`; on any error it is removed and `OSError` raised."""
    directory, name = os.path.split(os.path.abspath(os.fspath(path)))
    fd, temp = _create_temp(directory, name, PRIVATE_MODE if private else PUBLIC_MODE)
    try:
        with os.fdopen(fd, "wb") as stream:
            _write(stream, content)
            stream.flush()
            os.fsync(stream.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def is_special_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` exists and is not a regular file (`/dev/null`, a FIFO): written in
    place, never renamed over."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:  # does not exist (yet), or cannot be looked at: the rename decides
        return False


def _create_temp(directory: str, name: str, mode: int) -> tuple[int, str]:
    """A new file `.tmp-<name>.<random>.tmp` in `directory`, opened for writing; the kernel
    applies the umask to `mode`, as for any file a tool creates."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        temp = os.path.join(directory, f".tmp-{name[:64]}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temp, flags, mode), temp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in '{directory}'")


def _write(stream: IO[bytes], content: Content) -> None:
    if isinstance(content, str):
        stream.write(content.encode("utf-8"))
    elif isinstance(content, bytes | bytearray | memoryview):
        stream.write(content)
    else:
        content(stream)


# ---- Probing -------------------------------------------------------------------------------------

_TFLITE_IDENTIFIER = b"TFL3"

# ONNX ModelProto's fields (onnx.proto): number -> protobuf wire type (0 varint, 2 bytes).
_MODEL_PROTO_FIELDS = {
    1: 0,  # ir_version
    2: 2,  # producer_name
    3: 2,  # producer_version
    4: 2,  # domain
    5: 0,  # model_version
    6: 2,  # doc_string
    7: 2,  # graph
    8: 2,  # opset_import
    14: 2,  # metadata_props
    20: 2,  # training_info
    25: 2,  # functions
    26: 2,  # configuration
}


def probe_format(data: bytes) -> FileFormat | None:
    """What the leading bytes of a file hold: `tflite` (the flatbuffer identifier `TFL3`
    at offset 4), `mlir` (UTF-8 text without control characters), `onnx` (a protobuf whose
    leading fields are ModelProto fields), or None when none of them fits."""
    if len(data) >= 8 and data[4:8] == _TFLITE_IDENTIFIER:
        return "tflite"
    if _is_text(data):
        return "mlir"
    if _is_model_proto(data):
        return "onnx"
    return None


def file_format(path: str | os.PathLike[str]) -> FileFormat | None:
    """`probe_format` of the file's first bytes; by the suffix (`.tflite`, `.onnx`, else
    `mlir`) when the file cannot be read, so that the reader reports the real problem."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(_PROBE_BYTES)
    except OSError:
        return _by_suffix(os.fspath(path))
    return probe_format(head)


def is_model_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a model to import (rather than IR text): a `.tflite` / `.onnx`
    name (the importer checks the content against it), or content that probes as a model
    whatever the name (`model.pb`, `model`)."""
    if _by_suffix(os.fspath(path)) in MODEL_FORMATS:
        return True
    return file_format(path) in MODEL_FORMATS


def _by_suffix(path: str) -> FileFormat:
    suffix = os.path.splitext(path)[1].lower()
    return "tflite" if suffix == ".tflite" else "onnx" if suffix == ".onnx" else "mlir"


def _is_text(data: bytes) -> bool:
    head = data[:_PROBE_BYTES]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not just a character cut at the end of the probe
            return False
        text = head[: exc.start].decode("utf-8")
    return not any((ord(c) < 32 and c not in "\t\n\r\f") or c == "\x7f" for c in text)


def _is_model_proto(data: bytes) -> bool:
    """The first fields parse as ModelProto fields (at least one, at most the probe)."""
    position, fields = 0, 0
    end = min(len(data), _PROBE_BYTES)
    while position < end and fields < 16:
        tag, position = _varint(data, position, end)
        if tag is None or _MODEL_PROTO_FIELDS.get(tag >> 3) != tag & 7:
            return False
        value, position = _varint(data, position, end)
        if value is None:
            return fields > 0 or position >= end
        if tag & 7 == 2:
            position += value
        fields += 1
    return fields > 0


def _varint(data: bytes, position: int, end: int) -> tuple[int | None, int]:
    value = shift = 0
    while position < end and shift < 64:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
    return None, position
