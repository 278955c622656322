"""Checks of an ONNX model as untrusted input, before the importer allocates or opens anything.

* Subgraphs (`If`/`Loop`/`Scan` bodies) nest at most `MAX_SUBGRAPH_DEPTH` deep, so that no walk
  over them exhausts Python's stack.
* External data (`data_location: EXTERNAL`) is read only from files inside the model's folder:
  the location must be a relative path that, resolved with symlinks, stays in that folder;
  offset and length must lie inside the file, and the size within `MAX_TENSOR_BYTES`. The data
  is then copied into the tensor (`raw_data`), so the rest of the importer sees an ordinary
  model. A model given as bytes without a folder (`path` None) may not use external data.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import onnx

from irc.importers.common import MAX_TENSOR_BYTES, MAX_TOTAL_CONSTANT_BYTES, ModelImportError

MAX_SUBGRAPH_DEPTH = 16
"""How deep `If`/`Loop`/`Scan` bodies may nest (real models nest two or three levels)."""

_GRAPH_ATTRS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def model_tensors(model: onnx.ModelProto, path: str | None) -> Iterator[onnx.TensorProto]:
    """Every tensor of the model: initializers and tensor attributes, in subgraphs too.

    Raises `ModelImportError` when subgraphs nest deeper than `MAX_SUBGRAPH_DEPTH`.
    """
    stack: list[tuple[onnx.GraphProto, int]] = [(model.graph, 0)]
    while stack:
        graph, depth = stack.pop()
        if depth > MAX_SUBGRAPH_DEPTH:
            raise ModelImportError(
                f"{path}: subgraphs nest more than {MAX_SUBGRAPH_DEPTH} levels deep"
            )
        yield from graph.initializer
        for sparse in graph.sparse_initializer:
            yield sparse.values
            yield sparse.indices
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t
                elif attr.type == onnx.AttributeProto.TENSORS:
                    yield from attr.tensors
                elif attr.type == onnx.AttributeProto.SPARSE_TENSOR:
                    yield from (attr.sparse_tensor.values, attr.sparse_tensor.indices)
                elif attr.type == onnx.AttributeProto.SPARSE_TENSORS:
                    for sparse in attr.sparse_tensors:
                        yield from (sparse.values, sparse.indices)
                elif attr.type in _GRAPH_ATTRS:
                    stack.extend((g, depth + 1) for g in (attr.g, *attr.graphs))


def check_model_tensors(model: onnx.ModelProto, path: str | None) -> None:
    """Check nesting depth and load external data (see the module docstring)."""
    folder = None if path is None else Path(os.path.abspath(path)).parent.resolve()
    total = 0
    for tensor in model_tensors(model, path):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            _inline_external_data(tensor, folder, path)
        total += len(tensor.raw_data)
        if total > MAX_TOTAL_CONSTANT_BYTES:
            raise ModelImportError(
                f"{path}: the model's constants exceed irc's limit of "
                f"{MAX_TOTAL_CONSTANT_BYTES} bytes"
            )


def _inline_external_data(tensor: onnx.TensorProto, folder: Path | None, path: str | None) -> None:
    entries = {entry.key: entry.value for entry in tensor.external_data}
    what = f"{path}: tensor '{tensor.name}': external data"
    location = entries.get("location", "")
    if folder is None:
        raise ModelImportError(f"{what} needs the model's folder; import the model from a file")
    if not isinstance(location, str):  # protobuf hands invalid UTF-8 over as bytes
        raise ModelImportError(f"{what} location is not valid UTF-8")
    if not location or "\x00" in location or os.path.isabs(location):
        raise ModelImportError(
            f"{what} location {location!r} must be a file name relative to the model's folder"
        )
    target = (folder / location).resolve()  # follows symlinks: a link out of the folder fails
    if not target.is_relative_to(folder) or target == folder:
        raise ModelImportError(
            f"{what} location {location!r} lies outside the model's folder; refused"
        )
    try:
        offset = int(entries.get("offset", "0"))
        length = int(entries["length"]) if "length" in entries else None
    except ValueError:
        raise ModelImportError(f"{what} has a non-integer offset or length") from None
    try:
        size = target.stat().st_size
        if not target.is_file():
            raise ModelImportError(f"{what} location {location!r} is not a regular file")
    except OSError as exc:
        raise ModelImportError(
            f"{what} file {location!r} cannot be read: {exc.strerror or exc}"
        ) from None
    if length is None:
        length = size - offset
    if offset < 0 or length < 0 or offset + length > size:
        raise ModelImportError(
            f"{what}: offset {offset} and length {length} lie outside the {size}-byte file "
            f"{location!r}"
        )
    if length > MAX_TENSOR_BYTES:
        raise ModelImportError(
            f"{what} of {length} bytes is over irc's limit of {MAX_TENSOR_BYTES} bytes per tensor"
        )
    try:
        with open(target, "rb") as stream:
            stream.seek(offset)
            data = stream.read(length)
    except OSError as exc:
        raise ModelImportError(
            f"{what} file {location!r} cannot be read: {exc.strerror or exc}"
        ) from None
    tensor.raw_data = data
    del tensor.external_data[:]
    tensor.data_location = onnx.TensorProto.DEFAULT
