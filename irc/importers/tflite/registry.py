"""The TFLite converter registry: the one module converter modules import to register.

    from irc.importers.tflite.registry import TFLiteImporter, Unsupported, converter

    @converter("RELU")
    def relu(imp: TFLiteImporter, op: OperatorInfo) -> None:
        imp.set_output(op, imp.emit(nn.ReluOp.make(imp.input(op, 0))))

An operator name (custom operators: their custom code) registers once: a second registration
is a bug and raises `ValueError` when the second module is imported. The driver
(`irc.importers.tflite.driver`) imports every converter module, so `CONVERTERS` is complete
once `irc.importers.tflite` is imported.
"""

from __future__ import annotations

from irc.importers.common import Unsupported, registrar
from irc.importers.tflite.context import Converter, TFLiteImporter

__all__ = ["CONVERTERS", "Converter", "TFLiteImporter", "Unsupported", "converter"]

CONVERTERS: dict[str, Converter] = {}
"""Converter per TFLite operator name (custom ops by their custom code)."""


converter = registrar(CONVERTERS, "TFLite operator")
"""Register a converter for TFLite operators (each name once): `@converter("Name", ...)`."""
