"""Import ONNX models (protobuf, via the `onnx` package) into the `nn` dialect.

`import_onnx(data, path, bind=..., input_shapes=...)` parses and checks the model, upgrades
models older than opset 11 to opset 13 (`onnx.version_converter`), gives every graph input a
static shape, and converts the nodes in order, one *converter* per ONNX op type. The result is
`func.func @main` (ONNX layouts as they are: NCHW data, OIHW conv filters, IOHW
ConvTranspose filters, all with ``layout = "NCHW"``), located by node names. Unsupported nodes
are collected and reported together in one `ModelImportError`.

Converter API
=============

Converters live in a registry that other modules extend::

    CONVERTERS: dict[str, Converter]        # ONNX op type -> converter

    @converter("Relu", "Sigmoid")           # ai.onnx ops; "com.microsoft.Gelu" for a domain
    def convert_activation(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
        x = ctx.value(node.input[0])
        return [ctx.result(nn.ReluOp.make(x))]

A `Converter` is ``(ctx, node) -> Sequence[SSAValue | np.ndarray | None]``, one entry per node
output (a shorter list leaves the trailing outputs absent):

* an `SSAValue`: the output is that value (usually the result of an op given to `ctx.emit`);
* an `np.ndarray`: the output is a *compile-time constant*. It is kept in a table of folded
  tensors and only becomes an `nn.constant` when an `nn` op needs it (`ctx.value`), so shape
  computations (Shape -> Gather -> Concat -> Reshape ...) fold away in numpy. Converters fold
  whenever all their inputs are constants (`ctx.const(name)` is not None);
* `None`: the output is not produced (e.g. Dropout's mask). A node that later uses it is an
  error (skipped silently instead when unsupported nodes are being reported anyway).

Any other exception from a converter (a `VerifyException` from `Op.make`, a bug) becomes a
`ModelImportError` naming the node.

Registering a type again replaces the earlier converter: `onnx_extra` is imported last, so
its converters win. Keys are op types of the default domain (``""`` / ``"ai.onnx"``); ops of
another domain register as ``"<domain>.<op type>"``.

`ConversionContext`, the converter's view of the import (see its methods for details):

* `ctx.opset`: the model's ai.onnx opset version (>= 11, after any upgrade);
  `ctx.source_opset`: the opset before the upgrade; `ctx.path`: the model's file name.
* `ctx.input(node, i)`: the name of input `i` ("" when absent); `ctx.has(name)`: a non-empty
  name, i.e. an optional input that is present.
* `ctx.value(name)`: the SSA value of a tensor, materialising a folded constant as an
  `nn.constant` (once per tensor).
* `ctx.const(name)`: the folded constant (`np.ndarray`) or None when only known at run time;
  `ctx.consts_of(node)`: all input constants (None for absent optional inputs), or None.
* `ctx.attrs(node)`: the node's attributes decoded to Python (`onnx.helper.
  get_attribute_value`; strings as `str`, tensors as `np.ndarray`, graphs as `GraphProto`).
* `ctx.shape(name)` (a tuple, -1 for a dynamic dimension), `ctx.element(name)` (the xDSL
  element type), `ctx.dtype(name)` (the numpy dtype).
* `ctx.emit(op)`: insert an op, located by the node's name (or its first output's name);
  `ctx.result(op)` emits and returns the single result; `ctx.constant(array)` emits an
  `nn.constant`.
* `ctx.unsupported(node, reason)`: record the node as unsupported and return its (absent)
  outputs: ``return ctx.unsupported(node, "mode 'cubic'")``. Import goes on so that every
  unsupported node is reported at the end, in one message. From a helper deep inside a
  converter, ``raise Unsupported("mode 'cubic'")`` does the same. Nodes that only consume
  outputs of unsupported nodes are skipped silently.
* `ctx.error(node, message)`: a `ModelImportError` for a malformed model
  (``raise ctx.error(node, "expects 3 inputs")``).
* `ctx.is_used(name)`: whether a node or a graph output reads the tensor.
* `ctx.define(name, value)` and `ctx.convert_nodes(nodes)`: bind a name, convert a list of
  nodes in the current scope (inline a subgraph, e.g. the taken branch of an `If`).

Converters live in `onnx_ops` (convolution, matrix products, pooling, normalisation,
elementwise, reductions, softmax), `onnx_shape` (constants, data movement, resize; also the
helpers converters share: `const_ints`, `const_floats`, `static_shape`, `reshape`,
`cast_value`, `cast_array`, `normalize_axis`) and `onnx_extra` (recurrent layers, `If`, logic,
normalisation layers, QDQ), imported in that order at the end of this module.

Element types: float32, float16, float64, int8, int16, int32, int64, uint8 and bool
(`i1`). External data is read only from inside the model's folder, and every size is checked
before allocation (`onnx_untrusted`). No model content is ever evaluated as code.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from irc.dialects import nn
from irc.importers.common import (
    MAX_TOTAL_CONSTANT_BYTES,
    GraphBuilder,
    ModelImportError,
    fit_scalar_binding,
    tensor_size_error,
    tensor_type,
)
from irc.importers.onnx_untrusted import check_model_tensors

__all__ = [
    "CONVERTERS",
    "ConversionContext",
    "Converter",
    "Results",
    "Unsupported",
    "converter",
    "element_for_dtype",
    "import_onnx",
]

Results = Sequence[SSAValue | np.ndarray | None]
"""What a converter returns: one entry per node output."""

Converter = Callable[["ConversionContext", onnx.NodeProto], Results]
"""Converts one ONNX node (see the module docstring)."""

CONVERTERS: dict[str, Converter] = {}
"""ONNX op type (``"<domain>.<type>"`` outside ai.onnx) -> converter."""

MIN_NATIVE_OPSET = 11
"""Older models are upgraded to `UPGRADE_OPSET` first."""

UPGRADE_OPSET = 13

_DEFAULT_DOMAINS = ("", "ai.onnx")


class Unsupported(Exception):
    """Raised inside a converter: the node is unsupported for the reason given."""


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register a converter for ONNX op types (a later registration replaces an earlier one)."""

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            CONVERTERS[op_type] = fn
        return fn

    return register


# ---- Element types -----------------------------------------------------------------------------

_ONNX_DTYPES: dict[int, np.dtype] = {
    onnx.TensorProto.FLOAT: np.dtype(np.float32),
    onnx.TensorProto.FLOAT16: np.dtype(np.float16),
    onnx.TensorProto.DOUBLE: np.dtype(np.float64),
    onnx.TensorProto.INT8: np.dtype(np.int8),
    onnx.TensorProto.INT16: np.dtype(np.int16),
    onnx.TensorProto.INT32: np.dtype(np.int32),
    onnx.TensorProto.INT64: np.dtype(np.int64),
    onnx.TensorProto.UINT8: np.dtype(np.uint8),
    onnx.TensorProto.BOOL: np.dtype(np.bool_),
}


def onnx_type_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type {elem_type}"


def dtype_for_onnx(elem_type: int) -> np.dtype | None:
    """The numpy dtype of an ONNX element type, or None when irc has no such element type."""
    return _ONNX_DTYPES.get(elem_type)


def element_for_dtype(dtype: np.dtype) -> Attribute:
    """The xDSL element type of a numpy dtype (ValueError when irc has none)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return Float32Type()
    if dtype == np.float16:
        return Float16Type()
    if dtype == np.float64:
        return Float64Type()
    if dtype == np.bool_:
        return IntegerType(1)
    if dtype == np.uint8:
        return IntegerType(8, Signedness.UNSIGNED)
    if dtype.kind == "i" and dtype.itemsize in (1, 2, 4, 8):
        return IntegerType(dtype.itemsize * 8)
    raise ValueError(f"unsupported element type {dtype}")


def dtype_for_element(element: Attribute) -> np.dtype:
    """The numpy dtype of an xDSL element type (the storage type for quantized ones)."""
    storage = getattr(element, "storage_type", element)
    if isinstance(storage, Float32Type):
        return np.dtype(np.float32)
    if isinstance(storage, Float16Type):
        return np.dtype(np.float16)
    if isinstance(storage, Float64Type):
        return np.dtype(np.float64)
    if isinstance(storage, IntegerType):
        width = storage.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if storage.signedness.data == Signedness.UNSIGNED:
            return np.dtype(f"uint{width}")
        return np.dtype(f"int{width}")
    raise ValueError(f"no numpy dtype for {element}")


# ---- The conversion context --------------------------------------------------------------------


class ConversionContext:
    """State of one import, as converters see it (see the module docstring)."""

    def __init__(
        self,
        path: str,
        model: onnx.ModelProto,
        opset: int,
        builder: GraphBuilder,
        source_opset: int | None = None,
    ):
        self.path = path
        self.model = model
        self.opset = opset
        """The ai.onnx opset of the model (after any upgrade)."""
        self.source_opset = opset if source_opset is None else source_opset
        """The ai.onnx opset the model was written for (before any upgrade)."""
        self.builder = builder
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

    def constant(self, array: np.ndarray) -> SSAValue:
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
        self.builder.unsupported.record(_op_key(node), self.where(node), reason)
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
        fn = CONVERTERS.get(_op_key(node))
        if fn is None:
            domain = f" of domain '{node.domain}'" if node.domain not in _DEFAULT_DOMAINS else ""
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


def _op_key(node: onnx.NodeProto) -> str:
    if node.domain in _DEFAULT_DOMAINS:
        return node.op_type
    return f"{node.domain}.{node.op_type}"


# ---- Loading and checking the model ------------------------------------------------------------


def _load_model(data: bytes, path: str) -> onnx.ModelProto:
    from google.protobuf.message import DecodeError

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise ModelImportError(
            f"{path}: not a valid ONNX model (protobuf parsing failed: {exc})"
        ) from None
    if not model.HasField("graph") or model.ir_version <= 0:
        raise ModelImportError(f"{path}: not a valid ONNX model (no graph or no IR version)")
    check_model_tensors(model, path)
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # onnx.checker.ValidationError and friends
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelImportError(f"{path}: invalid ONNX model: {first}") from None
    return model


def _default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in _DEFAULT_DOMAINS:
            return entry.version
    return 1 if model.ir_version < 3 else 0


def _upgrade(model: onnx.ModelProto, opset: int, path: str) -> onnx.ModelProto:
    from onnx import version_converter

    try:
        return version_converter.convert_version(model, UPGRADE_OPSET)
    except Exception as exc:
        text = str(exc).strip().splitlines()
        reason = text[0] if text else type(exc).__name__
        raise ModelImportError(
            f"{path}: cannot upgrade the model from opset {opset} to {UPGRADE_OPSET} "
            f"(irc imports opset {MIN_NATIVE_OPSET} and newer natively): {reason}"
        ) from None


def _count_uses(ctx: ConversionContext, graph: onnx.GraphProto) -> None:
    for node in graph.node:
        for name in node.input:
            if name:
                ctx.uses[name] += 1
        for attr in node.attribute:
            for sub in (attr.g, *attr.graphs) if attr.type in _GRAPH_ATTRS else ():
                _count_uses(ctx, sub)
    for output in graph.output:
        ctx.uses[output.name] += 1


_GRAPH_ATTRS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


# ---- Graph inputs ------------------------------------------------------------------------------


def _input_dtype(value_info: onnx.ValueInfoProto, path: str) -> np.dtype:
    type_ = value_info.type
    if type_.WhichOneof("value") != "tensor_type":
        raise ModelImportError(
            f"{path}: input '{value_info.name}' is not a tensor "
            f"({type_.WhichOneof('value') or 'no type'}); irc imports tensor inputs only"
        )
    elem = type_.tensor_type.elem_type
    dtype = dtype_for_onnx(elem)
    if dtype is None:
        raise ModelImportError(
            f"{path}: input '{value_info.name}' has unsupported element type {onnx_type_name(elem)}"
        )
    return dtype


def _declared_shape(value_info: onnx.ValueInfoProto) -> list[int] | None:
    """The declared shape (-1 for dynamic dimensions), or None when the rank is unknown."""
    tensor = value_info.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]


def _resolve_input_shapes(
    inputs: Sequence[onnx.ValueInfoProto],
    input_shapes: Mapping[str, Sequence[int]],
    path: str,
) -> dict[str, list[int]]:
    """Static shapes of the graph inputs; dynamic batch dims default to 1 (with a warning)."""
    shapes: dict[str, list[int]] = {}
    missing: list[str] = []
    for info in inputs:
        declared = _declared_shape(info)
        if info.name in input_shapes:
            given = [int(d) for d in input_shapes[info.name]]
            if any(d < 0 for d in given):
                raise ModelImportError(
                    f"{path}: input_shapes['{info.name}'] = {given} has a negative dimension"
                )
            if declared is not None and (
                len(declared) != len(given)
                or any(d >= 0 and d != g for d, g in zip(declared, given))
            ):
                raise ModelImportError(
                    f"{path}: input_shapes['{info.name}'] = {given} does not match the "
                    f"model's shape {_format_dims(declared)}"
                )
            shapes[info.name] = given
            continue
        if declared is None:
            missing.append(f"'{info.name}' (unknown rank)")
            continue
        dims = list(declared)
        if dims and dims[0] < 0:
            dims[0] = 1
            print(
                f"{path}: warning: input '{info.name}' has a dynamic batch dimension; using 1 "
                "(pass input_shapes to choose another)",
                file=sys.stderr,
            )
        if any(d < 0 for d in dims):
            missing.append(f"'{info.name}' {_format_dims(declared)}")
        shapes[info.name] = dims
    if missing:
        raise ModelImportError(
            f"{path}: inputs with dynamic dimensions need static shapes: {', '.join(missing)}; "
            "pass input_shapes={name: shape}"
        )
    return shapes


def _format_dims(dims: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d < 0 else str(d) for d in dims) + "]"


def _bound_array(
    info: onnx.ValueInfoProto, value: object, dtype: np.dtype, path: str
) -> np.ndarray:
    try:
        array = np.array(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ModelImportError(
            f"{path}: bind['{info.name}']: not a {dtype} tensor: {exc}"
        ) from None
    declared = _declared_shape(info)
    array = fit_scalar_binding(array, declared)
    if declared is not None and (
        len(declared) != array.ndim or any(d >= 0 and d != s for d, s in zip(declared, array.shape))
    ):
        raise ModelImportError(
            f"{path}: bind['{info.name}'] has shape {list(array.shape)}, the model expects "
            f"{_format_dims(declared)}"
        )
    return array


# ---- The importer ------------------------------------------------------------------------------


def import_onnx(
    data: bytes,
    path: str | Path,
    *,
    bind: Mapping[str, object] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """Import an ONNX model (its serialized bytes) into an `nn` module.

    `bind` turns inputs into constants (so shapes and conditions that depend on them fold);
    `input_shapes` fixes the shapes of inputs with dynamic dimensions (a dynamic first
    dimension alone defaults to 1, with a warning). Raises `ModelImportError`.
    """
    path = str(path)
    bind = dict(bind or {})
    input_shapes = dict(input_shapes or {})
    model = _load_model(data, path)
    opset = source_opset = _default_opset(model)
    if opset < MIN_NATIVE_OPSET:
        model = _upgrade(model, opset, path)
        opset = _default_opset(model)
    graph = model.graph

    initializers = {t.name: t for t in graph.initializer}
    if graph.sparse_initializer:
        raise ModelImportError(f"{path}: sparse initializers are not supported")
    inputs = [i for i in graph.input if i.name not in initializers]
    input_names = {i.name for i in inputs}
    for what, names in (("bind", bind), ("input_shapes", input_shapes)):
        unknown = sorted(set(names) - input_names)
        if unknown:
            raise ModelImportError(
                f"{path}: {what} names unknown inputs {', '.join(map(repr, unknown))}; the "
                f"model's inputs are {', '.join(repr(i.name) for i in inputs) or 'none'}"
            )
    free = [i for i in inputs if i.name not in bind]
    dtypes = {i.name: _input_dtype(i, path) for i in inputs}
    shapes = _resolve_input_shapes(free, input_shapes, path)
    types = [tensor_type(element_for_dtype(dtypes[i.name]), shapes[i.name]) for i in free]
    builder = GraphBuilder(path, [i.name for i in free], types)
    ctx = ConversionContext(path, model, opset, builder, source_opset)
    for info in inputs:
        if info.name in bind:
            ctx.consts[info.name] = _bound_array(info, bind[info.name], dtypes[info.name], path)
    for name, tensor in initializers.items():
        try:
            ctx.consts[name] = numpy_helper.to_array(tensor)
        except Exception as exc:
            raise ModelImportError(f"{path}: initializer '{name}' cannot be read: {exc}") from None
    _count_uses(ctx, graph)

    ctx.convert_nodes(graph.node)

    if builder.unsupported:
        raise ModelImportError(builder.unsupported.message(path))
    output_names = [o.name for o in graph.output]
    for name in output_names:
        if name in ctx.absent:
            raise ModelImportError(f"{path}: graph output '{name}' is not produced")
        if not ctx.is_defined(name):
            raise ModelImportError(f"{path}: graph output '{name}' is never defined")
        if name not in builder.values:
            ctx.node = None
            ctx.value(name)  # a constant output: materialise it
    return builder.finish(output_names)


# The converter modules register into CONVERTERS when imported; `onnx_extra` (written
# separately) comes last, so its registrations win, and may be missing.
from irc.importers import onnx_ops, onnx_shape  # noqa: E402, F401

if importlib.util.find_spec("irc.importers.onnx_extra") is not None:
    from irc.importers import onnx_extra  # noqa: F401
