"""The ONNX converter registry: the one module converter modules import to register.

    from irc.importers.onnx.registry import ConversionContext, Results, Unsupported, converter

    @converter("Relu")                      # ai.onnx ops; "com.microsoft.Gelu" for a domain
    def convert_relu(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
        return [ctx.result(nn.ReluOp.make(ctx.value(node.input[0])))]

An op type registers once: a second registration is a bug (two modules claiming one op) and
raises `ValueError` when the second module is imported. The driver
(`irc.importers.onnx.driver`) imports every converter module, so `CONVERTERS` is complete
once `irc.importers.onnx` is imported.
"""

from __future__ import annotations

from irc.importers.common import Unsupported, registrar
from irc.importers.onnx.context import ConversionContext, Converter, Results

__all__ = ["CONVERTERS", "ConversionContext", "Converter", "Results", "Unsupported", "converter"]

CONVERTERS: dict[str, Converter] = {}
"""ONNX op type (``"<domain>.<type>"`` outside ai.onnx) -> converter."""


converter = registrar(CONVERTERS, "ONNX op type")
"""Register a converter for ONNX op types (each name once): `@converter("Name", ...)`."""
