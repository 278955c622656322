"""Model importers: `.tflite` (flatbuffer) and `.onnx` (protobuf) into the `nn` dialect.

`import_model(path)` picks the importer from the file's content (and checks it against the
extension), imports the graph into `func.func @main` with the model's tensor names as
`irc.input_names` / `irc.output_names` and op names as locations, and verifies the result.
Every failure is a `ModelImportError` with one clear message naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from irc.importers.errors import ModelImportError

__all__ = ["ModelImportError", "detect_format", "import_model", "import_model_bytes"]


def detect_format(data: bytes, path: str | Path) -> str:
    """`tflite` or `onnx`, from the content (`irc.fileio.probe_format`); a `.tflite` or
    `.onnx` name must not contradict it, any other name (`model.pb`, `model`) is not used."""
    from irc.fileio import probe_format

    suffix = Path(path).suffix.lower()
    found = probe_format(data)
    if suffix == ".tflite" and found != "tflite":
        raise ModelImportError(
            f"{path}: not a TFLite model (no 'TFL3' flatbuffer identifier); "
            "is it another format with a .tflite name?"
        )
    if suffix == ".onnx":
        if found == "tflite":
            raise ModelImportError(f"{path}: this is a TFLite flatbuffer, not an ONNX model")
        return "onnx"
    if found == "tflite" or found == "onnx":
        return found
    raise ModelImportError(
        f"{path}: not a model: neither a TFLite flatbuffer nor an ONNX protobuf"
        + (" (it is text: IR for irc-opt or irc-run?)" if found == "mlir" else "")
    )


def import_model(
    path: str | Path,
    *,
    bind: Mapping[str, object] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """Import a `.tflite` or `.onnx` model into a verified `nn` module.

    `bind` fixes inputs to constant values at import (so shape computations and conditions
    depending on them fold); `input_shapes` gives static shapes to inputs with dynamic
    dimensions.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ModelImportError(f"{path}: cannot read the model: {exc.strerror or exc}") from None
    return import_model_bytes(data, path, bind=bind, input_shapes=input_shapes)


def import_model_bytes(
    data: bytes,
    path: str | Path,
    *,
    bind: Mapping[str, object] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """`import_model` of a model already read into memory; `path` names it in messages and
    is the folder ONNX external data must stay inside."""
    from irc.diagnostics import verify_module

    fmt = detect_format(data, path)
    if fmt == "tflite":
        from irc.importers.tflite import import_tflite

        module = import_tflite(data, path, bind=bind, input_shapes=input_shapes)
    else:
        from irc.importers.onnx import import_onnx

        module = import_onnx(data, path, bind=bind, input_shapes=input_shapes)
    try:
        verify_module(module)
    except Exception as exc:  # an importer bug: still one clear message
        raise ModelImportError(f"{path}: the imported IR does not verify: {exc}") from None
    return module
