"""`ConversionContext`: the state of one ONNX import, as converters see it.

The methods are described in `irc.importers.onnx` (the converter API); a converter is
``(ctx, node) -> Results`` (`Converter`), registered in `irc.importers.onnx.registry`. The
context converts nodes with the converter table it is given, so it does not depend on the
modules that fill that table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from irc.dialects import nn
from irc.importers.common import (
    MAX_TOTAL_CONSTANT_BYTES,
    GraphBuilder,
    ModelImportError,
    Unsupported,
    tensor_size_error,
)
from irc.importers.onnx.dtypes import dtype_for_element, element_for_dtype

__all__ = ["DEFAULT_DOMAINS", "ConversionContext", "Converter", "Results", "op_key"]

DEFAULT_DOMAINS = ("", "ai.onnx")
"""Domain names of the default (ai.onnx) operator set."""

Results = Sequence[SSAValue | np.ndarray | None]
"""What a converter returns: one entry per node output."""


class ConversionContext:
    """State of one import, as converters see it (see the module docstring)."""

    def __init__(
        self,
        path: str,
        model: onnx.ModelProto,
        opset: int,
        builder: GraphBuilder,
        converters: Mapping[str, Converter],
        source_opset: int | None = None,
    ):
        self.path = path
        self.model = model
        self.opset = opset
        """The ai.onnx opset of the model (after any upgrade)."""
        self.source_opset = opset if source_opset is None else source_opset
        """The ai.onnx opset the model was written for (before any upgrade)."""
        self.builder = builder
        self.converters = converters
        """The converter per op key (``"<domain>.<op type>"`` outside ai.onnx)."""
        self.consts: dict[str, np.ndarray] = {}
        """Tensors known at compile time (initializers, bound inputs, folded results)."""
        self.absent: set[str] = set()
        """Outputs that were not produced (unsupported nodes, outputs a converter skipped)."""
        self.uses: Counter[str] = Counter()
        self.node: onnx.NodeProto | None = None
        self.node_index = -1
        self.constant_bytes = 0
        """Bytes of all constants defined so far (bounded by MAX_TOTAL_CONSTANT_BYTES)."""

    # ---- Names and values ----

    @staticmethod
    def input(node: onnx.NodeProto, index: int) -> str:
        """The name of input `index` of `node`; "" when the optional input is absent."""
        return node.input[index] if index < len(node.input) else ""

    @staticmethod
    def has(name: str) -> bool:
        """Whether an (optional) input name is present."""
        return bool(name)

    def is_defined(self, name: str) -> bool:
        return name in self.consts or self.builder.has_value(name)

    def value(self, name: str) -> SSAValue:
        """The SSA value of a tensor; a folded constant becomes an `nn.constant` (once)."""
        if self.builder.has_value(name):
            return self.builder.values[name]
        if name in self.consts:
            array = self.consts[name]
            try:
                element_for_dtype(array.dtype)
            except ValueError:
                raise ModelImportError(
                    f"{self.path}: {self.where()}: tensor '{name}' has unsupported element "
                    f"type {array.dtype}"
                ) from None
            return self.builder.define(name, self._materialise(array, name))
        return self.builder.value(name, self.where())

    def const(self, name: str) -> np.ndarray | None:
        """The compile-time value of a tensor, or None when it is only known at run time."""
        return self.consts.get(name) if name else None

    def consts_of(self, node: onnx.NodeProto) -> list[np.ndarray | None] | None:
        """The constant values of all of `node`'s inputs (None for absent optional ones),
        or None when some present input is not a constant."""
        values: list[np.ndarray | None] = []
        for name in node.input:
            if not name:
                values.append(None)
            elif name in self.consts:
                values.append(self.consts[name])
            else:
                return None
        return values

    def define(self, name: str, value: SSAValue | np.ndarray | None) -> None:
        """Bind a tensor name to a value, a constant, or nothing (absent)."""
        if not name:
            return
        self.absent.discard(name)
        self.consts.pop(name, None)
        self.builder.values.pop(name, None)
        if value is None:
            self.absent.add(name)
        elif isinstance(value, SSAValue):
            self.builder.define(name, value)
        else:
            array = np.asarray(value)
            self.constant_bytes += array.nbytes
            if self.constant_bytes > MAX_TOTAL_CONSTANT_BYTES:
                raise self.error(
                    self.node,
                    f"the model's constants exceed irc's limit of {MAX_TOTAL_CONSTANT_BYTES} bytes",
                )
            self.consts[name] = array

    def check_size(self, shape: Sequence[int], dtype: np.dtype | type) -> None:
        """Refuse (before allocating) a constant too large for irc: see `MAX_TENSOR_BYTES`."""
        error = tensor_size_error([int(d) for d in shape], np.dtype(dtype).itemsize)
        if error is not None:
            raise self.error(self.node, f"cannot fold a constant: {error}")

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape of a tensor (-1 marks a dynamic dimension)."""
        if name in self.consts:
            return tuple(self.consts[name].shape)
        type_ = self.value(name).type
        assert isinstance(type_, TensorType)
        return tuple(type_.get_shape())

    def element(self, name: str) -> Attribute:
        """The element type of a tensor."""
        if name in self.consts:
            return element_for_dtype(self.consts[name].dtype)
        type_ = self.value(name).type
        assert isinstance(type_, TensorType)
        return type_.element_type

    def dtype(self, name: str) -> np.dtype:
        """The numpy dtype of a tensor (the storage type of a quantized one)."""
        if name in self.consts:
            return self.consts[name].dtype
        return dtype_for_element(self.element(name))

    def is_used(self, name: str) -> bool:
        """Whether any node (subgraphs included) or a graph output reads the tensor."""
        return bool(name) and self.uses[name] > 0

    # ---- Attributes ----

    @staticmethod
    def attrs(node: onnx.NodeProto) -> dict[str, Any]:
        """The node's attributes as Python values: ints, floats, str, lists of them,
        `np.ndarray` for tensors, `onnx.GraphProto` for graphs."""
        out: dict[str, Any] = {}
        for attr in node.attribute:
            if attr.ref_attr_name:
                continue  # function-body references: never in a main graph
            value = onnx.helper.get_attribute_value(attr)
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            elif isinstance(value, onnx.TensorProto):
                value = numpy_helper.to_array(value)
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [v.decode("utf-8", "replace") for v in value]
            elif isinstance(value, list) and value and isinstance(value[0], onnx.TensorProto):
                value = [numpy_helper.to_array(v) for v in value]
            out[attr.name] = value
        return out

    # ---- Emitting ----

    def emit(self, op: Operation) -> Operation:
        """Insert `op` at the end of `@main`, located by the current node."""
        return self.builder.emit(op, self._location_name())

    def result(self, op: Operation) -> SSAValue:
        """Emit a single-result op and return its result."""
        return self.emit(op).results[0]

    def constant(self, array: npt.ArrayLike) -> SSAValue:
        """Emit an `nn.constant` holding `array`."""
        return self._materialise(np.asarray(array), self._location_name())

    def _materialise(self, array: np.ndarray, name: str | None) -> SSAValue:
        # Not GraphBuilder.constant: its np.ascontiguousarray turns 0-d arrays into 1-d ones.
        op = self.builder.emit(nn.ConstantOp.from_array(array), name)
        return op.results[0]

    def _location_name(self) -> str | None:
        node = self.node
        if node is None:
            return None
        return node.name or (node.output[0] if node.output else None) or None

    # ---- Failures ----

    def where(self, node: onnx.NodeProto | None = None) -> str:
        """`node 12 'Conv_3' (Conv)`: how messages name the current (or a given) node."""
        node = self.node if node is None else node
        if node is None:
            return "graph"
        name = node.name or (node.output[0] if node.output else "")
        index = self.node_index if node is self.node else "?"
        return f"node {index} '{name}' ({node.op_type})"

    def unsupported(self, node: onnx.NodeProto, reason: str = "") -> list[None]:
        """Record `node` as unsupported; returns its outputs, all absent."""
        self.builder.unsupported.record(op_key(node), self.where(node), reason)
        return [None] * len(node.output)

    def error(self, node: onnx.NodeProto | None, message: str) -> ModelImportError:
        """A `ModelImportError` naming the file and the node (to raise)."""
        return ModelImportError(f"{self.path}: {self.where(node)}: {message}")

    # ---- Converting nodes ----

    def convert_nodes(self, nodes: Iterable[onnx.NodeProto]) -> None:
        """Convert nodes in order in the current scope (the main graph or an inlined body)."""
        saved = self.node, self.node_index
        try:
            for index, node in enumerate(nodes):
                self.node, self.node_index = node, index
                self._convert(node)
        finally:
            self.node, self.node_index = saved

    def _convert(self, node: onnx.NodeProto) -> None:
        fn = self.converters.get(op_key(node))
        if fn is None:
            domain = f" of domain '{node.domain}'" if node.domain not in DEFAULT_DOMAINS else ""
            self._set_outputs(node, self.unsupported(node, f"no converter{domain}"))
            return
        for name in node.input:
            if name and name in self.absent:
                if self.builder.unsupported:
                    self._set_outputs(node, [None] * len(node.output))
                    return
                raise self.error(node, f"input '{name}' is an output the importer did not produce")
            if name and not self.is_defined(name):
                raise self.error(node, f"tensor '{name}' is used before it is defined")
        try:
            results = fn(self, node)
        except Unsupported as exc:
            results = self.unsupported(node, str(exc))
        except ModelImportError:
            raise
        except VerifyException as exc:
            raise self.error(node, str(exc)) from exc
        except Exception as exc:  # a converter bug or an input it did not expect
            raise self.error(node, f"cannot convert: {type(exc).__name__}: {exc}") from exc
        if len(results) > len(node.output):
            raise self.error(node, f"converter returned {len(results)} outputs")
        self._set_outputs(node, results)

    def _set_outputs(self, node: onnx.NodeProto, results: Results) -> None:
        for i, name in enumerate(node.output):
            self.define(name, results[i] if i < len(results) else None)


def op_key(node: onnx.NodeProto) -> str:
    """The registry key of a node: its op type, prefixed by its domain outside ai.onnx."""
    if node.domain in DEFAULT_DOMAINS:
        return node.op_type
    return f"{node.domain}.{node.op_type}"


Converter = Callable[[ConversionContext, onnx.NodeProto], Results]
"""Converts one ONNX node (see `irc.importers.onnx`)."""
