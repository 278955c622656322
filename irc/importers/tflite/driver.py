"""The TFLite import driver: read the flatbuffer, convert every operator of subgraph 0.

`import_tflite(data, path)` reads the model (`reader`) and walks it with a `TFLiteImporter`
(`context`) and the registered converters; importing this module imports every converter
module (`ops`, `shape_ops`), which fills `registry.CONVERTERS`. See `irc.importers.tflite`
for the conventions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from irc.importers.common import ModelImportError
from irc.importers.tflite import ops, shape_ops  # noqa: F401  (they register the converters)
from irc.importers.tflite.context import TFLiteImporter
from irc.importers.tflite.reader import read_model
from irc.importers.tflite.registry import CONVERTERS

__all__ = ["import_tflite"]


def import_tflite(
    data: bytes,
    path: str | Path,
    *,
    bind: Mapping[str, object] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """Import a TFLite flatbuffer (subgraph 0) into a module with `func.func @main`.

    Raises ModelImportError for a corrupt file, unsupported operators (all of them, in one
    message), bad `bind`/`input_shapes` entries, or a graph irc cannot make consistent.
    """
    model = read_model(data, path)
    try:
        return TFLiteImporter(model, path, bind or {}, input_shapes or {}).run(CONVERTERS)
    except ModelImportError:
        raise
    except Exception as exc:  # a model this importer mishandles: still one clear message
        raise ModelImportError(f"{path}: cannot import: {type(exc).__name__}: {exc}") from exc
