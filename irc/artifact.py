"""Compiled artifacts on disk: the IR text and, next to it, a binary weights file.

`CompiledModel.save("model.irc.mlir")` writes two files:

* `model.irc.mlir`, the compiled module as IR text. Every dense constant of at least
  `INLINE_LIMIT` bytes (weights, packed filters, embedded OpenCL binaries) prints as MLIR's
  `dense_resource<wN> : tensor<...>` instead of `dense<"0x...">`, and the file opens with an
  `external_resources` section (MLIR's file metadata syntax) that names the weights file, its
  size and SHA-256, and where every handle's bytes lie in it::

      {-# external_resources: {irc_weights: {
          file: "model.irc.weights",
          sha256: "9f86...",
          bytes: "14049664",
          w0: "64:3456",
          w1: "3520:1280",
          ...
      }} #-}
      builtin.module attributes {irc.format_version = 2 : i64} {
        ...
        cpu.constant 0 packing = "conv2d_filter" dense_resource<w0> : tensor<...xf32>

* `model.irc.weights`, the raw bytes of those constants (little-endian, as
  `DenseIntOrFPElementsAttr` holds them): a 64-byte header starting with `WEIGHTS_MAGIC`, then
  every distinct constant once, each at a 64-byte aligned offset.

Loading (`irc.load`, every tool, through `irc.diagnostics.LocatingParser`) reads the weights
file named by the section, from the artifact's own folder, checks its size and SHA-256, and
builds each `dense_resource<wN>` as an ordinary `DenseIntOrFPElementsAttr` while parsing: the
module in memory is the one that was saved. The store belongs to one parse (not to xDSL's
process-global blob store, see docs/design.md §2), and the weights never pass through hex text,
so loading MobileNetV2 takes a fraction of the time the all-text form takes (benchmarks/
artifact_load.py). A missing, truncated or altered weights file is one `ParseError` at the
section, naming the file.

The SHA-256 is computed on a thread while the rest of the text is parsed (hashlib releases
the GIL); the parser checks it before it returns the module.

Both files are written to temporary files first and renamed into place only when both are
complete (the weights first), so a failed save leaves the previous artifact as it was; only a
crash between the two renames (microseconds apart) leaves new weights beside the old text,
which the SHA-256 check then refuses with that one error.
`save(path, inline_weights=True)`, a save onto a special file (`-o /dev/null`) and
`CompiledModel.to_text()` give one self-contained text instead (the weights as
`dense<"0x...">`, as format version 1 wrote them); format-1 artifacts still load.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr
from xdsl.ir import Attribute

from irc.fileio import is_special_file, write_atomically
from irc.fileio import write_temp as _write_temp

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.parser import Parser

__all__ = [
    "INLINE_LIMIT",
    "WEIGHTS_MAGIC",
    "WEIGHTS_RESOURCE",
    "ExternalWeights",
    "WeightsWriter",
    "artifact_text",
    "dense_from_weights",
    "externalizes",
    "iter_dense",
    "parse_external_resources",
    "save_artifact",
    "weights_path",
]

WEIGHTS_RESOURCE = "irc_weights"
"""The key of irc's weights in the file's `external_resources` section."""

WEIGHTS_MAGIC = b"IRC-WEIGHTS-1\n"
"""The first bytes of a weights file (the rest of its 64-byte header is zero)."""

INLINE_LIMIT = 64
"""Dense constants smaller than this many bytes (and splats) stay in the text."""

_ALIGNMENT = 64
_HEADER = WEIGHTS_MAGIC.ljust(_ALIGNMENT, b"\0")


def weights_path(path: str | os.PathLike[str]) -> str:
    """The weights file saved next to the artifact `path`: `model.irc.mlir` →
    `model.irc.weights`, `model.mlir` → `model.weights`, anything else + `.weights`."""
    text = os.fspath(path)
    stem = text[: -len(".mlir")] if text.endswith(".mlir") else text
    return stem + ".weights"


# ---- Writing ---------------------------------------------------------------------------------


@dataclass
class WeightsWriter:
    """Collects the bytes of the constants an artifact keeps outside its text.

    `add(data)` returns the handle of those bytes (`w0`, `w1`, ...; equal bytes share one
    handle); `blob()` is the weights file, `section(name)` the `external_resources` text
    that points into it.
    """

    _handles: dict[bytes, str] = field(default_factory=dict)
    _entries: list[tuple[str, int, int]] = field(default_factory=list)
    _chunks: list[bytes] = field(default_factory=lambda: [_HEADER])
    _size: int = len(_HEADER)

    def add(self, data: bytes) -> str:
        """The handle of `data`, appending it to the file when it is new."""
        handle = self._handles.get(data)
        if handle is None:
            handle = f"w{len(self._entries)}"
            self._handles[data] = handle
            self._entries.append((handle, self._size, len(data)))
            padding = -len(data) % _ALIGNMENT
            self._chunks.append(data if not padding else data + b"\0" * padding)
            self._size += len(data) + padding
        return handle

    def __len__(self) -> int:
        return len(self._entries)

    def blob(self) -> bytes:
        """The weights file's bytes."""
        return b"".join(self._chunks)

    def section(self, file_name: str, blob: bytes) -> str:
        """The `{-# external_resources ... #-}` text naming `file_name` (holding `blob`)."""
        fields = [
            f'file: "{file_name}"',
            f'sha256: "{hashlib.sha256(blob).hexdigest()}"',
            f'bytes: "{len(blob)}"',
            *(f'{handle}: "{offset}:{size}"' for handle, offset, size in self._entries),
        ]
        body = ",\n    ".join(fields)
        return f"{{-# external_resources: {{{WEIGHTS_RESOURCE}: {{\n    {body}\n}}}} #-}}\n"


def _is_splat(attr: DenseIntOrFPElementsAttr) -> bool:
    import numpy as np  # not at import: the tools start without numpy

    data = attr.data.data
    count = len(attr)
    if count <= 1 or len(data) % count:
        return count <= 1
    rows = np.frombuffer(data, np.uint8).reshape(count, len(data) // count)
    return bool((rows == rows[0]).all())


def externalizes(attr: Attribute) -> bool:
    """Whether a saved artifact keeps `attr` in its weights file (a dense constant of at
    least `INLINE_LIMIT` bytes that is not a splat)."""
    return (
        isinstance(attr, DenseIntOrFPElementsAttr)
        and len(attr.data.data) >= INLINE_LIMIT
        and not _is_splat(attr)
    )


def artifact_text(module: ModuleOp, weights_name: str | None) -> tuple[str, bytes | None]:
    """The text of an artifact, and the bytes of its weights file named `weights_name`
    (None: every constant inline, and no weights file)."""
    from irc.printing import print_ir

    writer = None if weights_name is None else WeightsWriter()
    text = print_ir(module, weights=writer) + "\n"
    if weights_name is None or writer is None or not len(writer):
        return text, None
    blob = writer.blob()
    return writer.section(weights_name, blob) + text, blob


def save_artifact(
    path: str | os.PathLike[str], module: ModuleOp, *, inline_weights: bool = False
) -> None:
    """Write `module` to `path` and its weights to `weights_path(path)`, all or nothing.

    With `inline_weights`, or when `path` is a special file (`/dev/null`), one
    self-contained text is written and no weights file. Raises `OSError` when a file cannot
    be written; the previous files are then left as they were.
    """
    target = os.fspath(path)
    weights_file = weights_path(target)
    inline = inline_weights or is_special_file(target)
    text, blob = artifact_text(module, None if inline else os.path.basename(weights_file))
    if blob is None:
        write_atomically(target, text)
    else:
        _write_all([(weights_file, blob), (target, text.encode())])


def _write_all(files: list[tuple[str, bytes]]) -> None:
    """Write every file to a temporary file next to it, then rename them in order; on any
    error before the renames nothing has changed and the temporary files are removed."""
    temps: list[str] = []
    try:
        for target, data in files:
            temps.append(_write_temp(target, data))
        for (target, _data), temp in zip(files, temps, strict=True):
            os.replace(temp, target)
    finally:
        for temp in temps:
            with contextlib.suppress(OSError):
                os.unlink(temp)


# ---- Reading ---------------------------------------------------------------------------------


class _HashCheck:
    """The SHA-256 check of a weights file, computed on a thread while the parser goes on
    (hashlib releases the GIL): `result()` is None when the bytes match, else the error."""

    def __init__(self, path: str, data: bytes, expected: str) -> None:
        self._path = path
        self._data = data
        self._expected = expected
        self._digest: str | None = None
        self._thread = threading.Thread(target=self._hash, daemon=True)
        self._thread.start()

    def _hash(self) -> None:
        self._digest = hashlib.sha256(self._data).hexdigest()

    def result(self) -> str | None:
        self._thread.join()
        if self._digest == self._expected:
            return None
        return (
            f"weights file '{self._path}' does not match this artifact (its SHA-256 differs: "
            "the file was changed, or belongs to another save); save the artifact again"
        )


@dataclass(frozen=True)
class ExternalWeights:
    """The weights of one artifact, read and size-checked: `handle → bytes`; `verify()`
    says whether they also match the artifact's SHA-256 (the parser asks before it
    returns the module, so nothing built from altered bytes gets out)."""

    file: str
    entries: dict[str, memoryview]
    where: tuple[int, int]
    """Start and end of the `irc_weights` entry in the text (for errors)."""
    _check: _HashCheck

    def lookup(self, handle: str) -> memoryview | None:
        return self.entries.get(handle)

    def verify(self) -> str | None:
        """None when the file's SHA-256 is the one recorded, else the error message."""
        return self._check.result()


def parse_external_resources(parser: Parser, base_dir: str) -> ExternalWeights | None:
    """Parse the body of an `external_resources:` metadata entry (after the colon) and
    read the weights it names from `base_dir`; raises `ParseError` at the entry when the
    section or the file is bad. Returns None when the section names no irc weights."""
    weights: ExternalWeights | None = None

    def parse_group() -> None:
        nonlocal weights
        start = parser.pos
        key = parser.parse_identifier(" for an external resource key")
        if key != WEIGHTS_RESOURCE:
            parser.raise_error(
                f"unknown external resource '{key}' (irc reads '{WEIGHTS_RESOURCE}')",
                start,
                parser.pos,
            )
        parser.parse_punctuation(":")
        fields: dict[str, str] = {}

        def parse_field() -> None:
            name = parser.parse_identifier(f" for a field of '{WEIGHTS_RESOURCE}'")
            parser.parse_punctuation(":")
            fields[name] = parser.parse_str_literal(f" for '{name}'")

        parser.parse_comma_separated_list(parser.Delimiter.BRACES, parse_field)
        if weights is not None:
            parser.raise_error(f"'{WEIGHTS_RESOURCE}' given twice", start, parser.pos)
        try:
            weights = _read_weights(fields, base_dir, (start, parser.pos))
        except ValueError as exc:
            parser.raise_error(str(exc), start, parser.pos)

    parser.parse_comma_separated_list(parser.Delimiter.BRACES, parse_group)
    return weights


def _read_weights(fields: dict[str, str], base_dir: str, where: tuple[int, int]) -> ExternalWeights:
    """Read and check the weights file a section describes (ValueError when it is bad)."""
    for required in ("file", "sha256", "bytes"):
        if required not in fields:
            raise ValueError(f"'{WEIGHTS_RESOURCE}' has no '{required}'")
    name = fields.pop("file")
    if not name or os.path.basename(name) != name or name in (".", ".."):
        raise ValueError(f"weights file '{name}' must be a file name in the artifact's folder")
    path = os.path.join(base_dir, name)
    size = _number(fields.pop("bytes"), "bytes")
    sha256 = fields.pop("sha256")
    try:
        with open(path, "rb") as stream:
            data = stream.read(size + 1)
    except OSError as exc:
        raise ValueError(
            f"cannot read the artifact's weights file '{path}': {exc.strerror}"
        ) from None
    if len(data) != size or not data.startswith(WEIGHTS_MAGIC):
        raise ValueError(
            f"weights file '{path}' is not the one this artifact was saved with "
            f"({len(data) if len(data) <= size else 'more than ' + str(size)} bytes, expected "
            f"{size}); save the artifact again"
        )
    view = memoryview(data)
    entries: dict[str, memoryview] = {}
    for handle, place in fields.items():
        offset_text, sep, length_text = place.partition(":")
        offset = _number(offset_text, handle)
        length = _number(length_text, handle) if sep else -1
        if length < 0 or offset < len(_HEADER) or offset + length > size:
            raise ValueError(f"'{handle}: \"{place}\"' is outside the weights file")
        entries[handle] = view[offset : offset + length]
    return ExternalWeights(name, entries, where, _HashCheck(path, data, sha256))


def _number(text: str, what: str) -> int:
    if not text.isdigit() or len(text) > 18:
        raise ValueError(f"'{what}' must be a byte count or offset, got '{text}'")
    return int(text)


def dense_from_weights(
    parser: Parser, weights: ExternalWeights, handle: str, type_: Attribute, span: tuple[int, int]
) -> DenseIntOrFPElementsAttr:
    """The constant `dense_resource<handle> : type_` of an artifact (`ParseError` when the
    handle is unknown or its size does not fit the type)."""
    data = weights.lookup(handle)
    if data is None:
        parser.raise_error(f"dense_resource<{handle}> is not in '{weights.file}'", *span)
    try:
        # The constructor checks the type; a wrong one raises, reported below.
        attr = DenseIntOrFPElementsAttr(type_, BytesAttr(bytes(data)))  # pyright: ignore[reportArgumentType]
    except Exception as exc:  # not a ranked tensor of ints or floats
        parser.raise_error(f"dense_resource<{handle}>: {exc}", *span)
    shape = attr.get_shape()
    if (
        -1 in shape
        or len(attr) * attr.type.element_type.compile_time_size != len(data)
        or len(attr) != math.prod(shape)
    ):
        parser.raise_error(
            f"dense_resource<{handle}> holds {len(data)} bytes, which do not fit {type_}", *span
        )
    return attr


def iter_dense(module: ModuleOp) -> Iterator[DenseIntOrFPElementsAttr]:
    """Every dense constant of `module` that a saved artifact keeps in its weights file
    (properties and attributes of every op, nested arrays and dictionaries too)."""
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

    def walk(attr: Attribute) -> Iterator[DenseIntOrFPElementsAttr]:
        if isinstance(attr, DenseIntOrFPElementsAttr):
            if externalizes(attr):
                yield attr
        elif isinstance(attr, ArrayAttr):
            for item in attr.data:
                yield from walk(item)
        elif isinstance(attr, DictionaryAttr):
            for item in attr.data.values():
                yield from walk(item)

    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            yield from walk(attr)
