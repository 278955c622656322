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

from collections.abc import Callable

from irc.importers.common import Unsupported
from irc.importers.tflite.context import Converter, TFLiteImporter

__all__ = ["CONVERTERS", "Converter", "TFLiteImporter", "Unsupported", "converter"]

CONVERTERS: dict[str, Converter] = {}
"""Converter per TFLite operator name (custom ops by their custom code)."""


def converter(*names: str) -> Callable[[Converter], Converter]:
    """Register a converter for TFLite operators (each name once)."""

    def register(function: Converter) -> Converter:
        for name in names:
            earlier = CONVERTERS.get(name)
            if earlier is not None and earlier is not function:
                raise ValueError(
                    f"TFLite operator '{name}' has two converters: "
                    f"{earlier.__module__}.{earlier.__qualname__} and "
                    f"{function.__module__}.{function.__qualname__}"
                )
            CONVERTERS[name] = function
        return function

    return register
