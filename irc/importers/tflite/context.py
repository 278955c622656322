"""`TFLiteImporter`: the state of one TFLite import, as converters see it.

It walks subgraph 0 (`run`) with the converter table it is given (`registry.CONVERTERS`), so
it does not depend on the modules that fill that table. Converters read inputs, options and
declared types through its accessors and bind outputs with `set_output`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import (
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from irc.dialects import nn, quant
from irc.dialects.nn.base import format_shape
from irc.dialects.quant import UniformQuantizedType, storage_bounds
from irc.importers.common import (
    GraphBuilder,
    ModelImportError,
    Unsupported,
    fit_scalar_binding,
    ssa_name_hint,
)
from irc.importers.tflite.reader import (
    NUMPY_DTYPES,
    ModelInfo,
    OperatorInfo,
    Options,
    TensorInfo,
    constant_array,
    read_options,
)

__all__ = ["Converter", "TFLiteImporter", "unsupported_reason"]

ui8 = IntegerType(8, Signedness.UNSIGNED)

_ELEMENTS: dict[str, Attribute] = {
    "FLOAT32": f32,
    "FLOAT16": f16,
    "FLOAT64": f64,
    "INT64": i64,
    "INT32": i32,
    "INT16": i16,
    "INT8": i8,
    "UINT8": ui8,
    "BOOL": i1,
}
_QUANTIZED_STORAGE = ("INT8", "UINT8", "INT16", "INT32")
"""Storage types a `!quant.uniform` type can have (irc's quant dialect: 8, 16, 32 bits)."""


class TFLiteImporter:
    """Walks subgraph 0 and builds `@main` through a `GraphBuilder`.

    Converters (`ops`, `shape_ops`) use the accessors below: `input`/`optional_input` for operand
    values, `constant` for data they need at import time, `element` for declared element
    types, `emit` to insert ops located at the current operator and `set_output` to bind an
    operator output.
    """

    def __init__(
        self,
        model: ModelInfo,
        path: str | Path,
        bind: Mapping[str, object],
        input_shapes: Mapping[str, Sequence[int]],
    ):
        self.model = model
        self.path = str(path)
        self.tensors = model.tensors
        self.keys = _unique_keys(model.tensors)
        self.arrays: dict[int, np.ndarray] = {}
        self.poisoned: set[int] = set()
        self.shapes_overridden = False
        self.current: OperatorInfo | None = None
        self.where = ""
        self.builder = self._start(bind, input_shapes)

    # ---- Graph inputs ----

    def _start(
        self, bind: Mapping[str, object], input_shapes: Mapping[str, Sequence[int]]
    ) -> GraphBuilder:
        from irc.diagnostics import Diagnostic, Severity, SourceLocation, emit

        by_name = {self.tensors[i].name: i for i in self.model.inputs}
        for what, given in (("bind", bind), ("input_shapes", input_shapes)):
            for name in given:
                if name not in by_name:
                    raise ModelImportError(
                        f"{self.path}: {what}: the model has no input named '{name}' "
                        f"(inputs: {', '.join(repr(n) for n in by_name) or 'none'})"
                    )
        names: list[str] = []
        types: list[Attribute] = []
        bound: list[tuple[int, np.ndarray]] = []
        for index in self.model.inputs:
            tensor = self.tensors[index]
            self.where = f"input '{tensor.name}'"
            if tensor.name in bind:
                bound.append((index, self._bound_value(tensor, bind[tensor.name])))
                continue
            shape = self._input_shape(tensor, input_shapes.get(tensor.name))
            if shape is None:
                shape = tensor.shape
                dynamic = [d for d, s in enumerate(tensor.signature or ()) if s < 0]
                emit(
                    Diagnostic(
                        Severity.WARNING,
                        f"input '{tensor.name}' has dynamic dimension"
                        f"{'s' if len(dynamic) != 1 else ''} {dynamic} (shape signature "
                        f"{list(tensor.signature or ())}); using the model's default shape "
                        f"{list(shape)} (give input_shapes to choose)",
                        SourceLocation(self.path, 0, 0),
                    )
                )
            names.append(self.keys[index])
            types.append(TensorType(self._input_element(index), list(shape)))
        builder = GraphBuilder(self.path, names, types)
        for index, array in bound:
            self.where = f"input '{self.tensors[index].name}'"
            self._input_element(index)
            self.arrays[index] = array
            builder.define(self.keys[index], self._emit_constant(builder, index, array))
        self.where = ""
        return builder

    def _input_element(self, index: int) -> Attribute:
        try:
            return self.element(index)
        except Unsupported as exc:
            raise self.fail(exc.reason) from None

    def _input_shape(
        self, tensor: TensorInfo, given: Sequence[int] | None
    ) -> tuple[int, ...] | None:
        """The shape of a graph input: the given one, the static one, or None (default it)."""
        signature = tensor.signature or tensor.shape
        if given is None:
            return tuple(tensor.shape) if all(d >= 0 for d in signature) else None
        shape = tuple(int(d) for d in given)
        if len(shape) != len(signature) or any(
            d < 0 or (s >= 0 and d != s) for d, s in zip(shape, signature)
        ):
            raise ModelImportError(
                f"{self.path}: input_shapes: shape {list(shape)} does not fit input "
                f"'{tensor.name}' of shape {list(signature)} (-1: dynamic)"
            )
        if shape != tuple(tensor.shape):
            self.shapes_overridden = True
        return shape

    def _bound_value(self, tensor: TensorInfo, value: object) -> np.ndarray:
        dtype = NUMPY_DTYPES.get(tensor.type)
        if dtype is None:
            raise ModelImportError(
                f"{self.path}: bind: input '{tensor.name}' has unsupported type {tensor.type_name}"
            )
        try:
            array = np.asarray(value).astype(np.dtype(dtype).newbyteorder("="))
        except (TypeError, ValueError) as exc:
            raise ModelImportError(f"{self.path}: bind: input '{tensor.name}': {exc}") from None
        signature = tensor.signature or tensor.shape
        array = fit_scalar_binding(array, signature)
        if array.ndim != len(signature) or any(
            s >= 0 and d != s for d, s in zip(array.shape, signature)
        ):
            raise ModelImportError(
                f"{self.path}: bind: value of shape {list(array.shape)} does not fit input "
                f"'{tensor.name}' of shape {list(signature)}"
            )
        if array.shape != tuple(tensor.shape):
            self.shapes_overridden = True
        return array

    # ---- The walk ----

    def run(self, converters: Mapping[str, Converter]) -> ModuleOp:
        """Convert every operator with `converters` (by operator name) and finish `@main`."""
        for op in self.model.operators:
            self.current = op
            first = self.tensors[op.outputs[0]].name
            self.where = f"operator #{op.index} {op.op_type} '{first}'"
            place = f"#{op.index} '{first}'"
            converter = converters.get(op.op_type)
            if converter is None:
                self.builder.unsupported.record(op.op_type, place, unsupported_reason(op))
                self.poisoned.update(op.outputs)
                continue
            if any(i in self.poisoned for i in op.inputs if i >= 0):
                self.poisoned.update(op.outputs)
                continue
            try:
                converter(self, op)
            except Unsupported as exc:
                self.builder.unsupported.record(op.op_type, place, exc.reason)
                self.poisoned.update(op.outputs)
            except ModelImportError:
                raise
            except VerifyException as exc:
                raise ModelImportError(f"{self.path}: {self.where}: {exc}") from None
            except (ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError) as exc:
                raise ModelImportError(f"{self.path}: {self.where}: {exc}") from None
            except Exception as exc:  # an importer bug: name the operator it failed on
                raise ModelImportError(
                    f"{self.path}: {self.where}: cannot convert ({type(exc).__name__}: {exc})"
                ) from exc
        self.current = None
        self.where = "graph outputs"
        if not self.builder.unsupported:
            for index in self.model.outputs:
                try:
                    self.value(index)  # a constant returned directly is emitted here
                except Unsupported as exc:
                    raise self.fail(exc.reason) from None
        return self.builder.finish([self.keys[i] for i in self.model.outputs])

    # ---- Accessors for converters ----

    def fail(self, message: str) -> ModelImportError:
        """An error about the current operator (raise it)."""
        return ModelImportError(f"{self.path}: {self.where}: {message}")

    def tensor(self, op: OperatorInfo, k: int) -> TensorInfo | None:
        """Input `k` of `op` (None when omitted or absent)."""
        if k >= len(op.inputs) or op.inputs[k] < 0:
            return None
        return self.tensors[op.inputs[k]]

    def input_tensor(self, op: OperatorInfo, k: int, what: str = "") -> TensorInfo:
        tensor = self.tensor(op, k)
        if tensor is None:
            raise self.fail(f"missing input #{k}{f' ({what})' if what else ''}")
        return tensor

    def output_tensor(self, op: OperatorInfo, k: int = 0) -> TensorInfo:
        if k >= len(op.outputs):
            raise self.fail(f"missing output #{k}")
        return self.tensors[op.outputs[k]]

    def input(self, op: OperatorInfo, k: int, what: str = "") -> SSAValue:
        """The value of input `k`."""
        return self.value(self.input_tensor(op, k, what).index)

    def optional_input(self, op: OperatorInfo, k: int) -> SSAValue | None:
        tensor = self.tensor(op, k)
        return None if tensor is None else self.value(tensor.index)

    def inputs(self, op: OperatorInfo) -> list[SSAValue]:
        return [self.input(op, k) for k in range(len(op.inputs))]

    def value(self, index: int) -> SSAValue:
        """The SSA value of a tensor; constants are emitted at their first use."""
        key = self.keys[index]
        if self.builder.has_value(key):
            return self.builder.values[key]
        tensor = self.tensors[index]
        if tensor.is_constant:
            return self.builder.define(
                key, self._emit_constant(self.builder, index, self.array(index))
            )
        return self.builder.value(key, self.where)

    def is_constant(self, op: OperatorInfo, k: int) -> bool:
        tensor = self.tensor(op, k)
        return tensor is not None and (tensor.is_constant or tensor.index in self.arrays)

    def array(self, index: int) -> np.ndarray:
        """The data of a constant (or bound) tensor, decoded once."""
        if index not in self.arrays:
            tensor = self.tensors[index]
            if not tensor.is_constant:
                raise Unsupported(f"tensor '{tensor.name}' must be constant")
            try:
                self.arrays[index] = constant_array(tensor)
            except ValueError as exc:
                raise self.fail(f"constant tensor '{tensor.name}' {exc}") from None
        return self.arrays[index]

    def constant(self, op: OperatorInfo, k: int, what: str) -> np.ndarray:
        """The data of input `k`, which irc needs at import time (shapes, axes, ...)."""
        tensor = self.input_tensor(op, k, what)
        if not (tensor.is_constant or tensor.index in self.arrays):
            raise Unsupported(f"non-constant {what}")
        return self.array(tensor.index)

    def ints(self, op: OperatorInfo, k: int, what: str) -> list[int]:
        """A constant integer input as a list (scalars become one-element lists)."""
        array = self.constant(op, k, what)
        if array.dtype.kind not in "iu":
            raise self.fail(f"{what} must be integers, got {array.dtype}")
        return [int(v) for v in array.reshape(-1)]

    def options(self, op: OperatorInfo, table_name: str) -> Options:
        try:
            return read_options(op, table_name)
        except ValueError as exc:
            raise self.fail(str(exc)) from None

    # ---- Types ----

    def element(self, index: int) -> Attribute:
        """The element type of a tensor, quantized when the model says so."""
        tensor = self.tensors[index]
        name = tensor.type_name
        element = _ELEMENTS.get(name)
        if element is None:
            raise Unsupported(f"tensor '{tensor.name}' has type {name}")
        q = tensor.quantization
        if q is None:
            return element
        if q.custom:
            raise Unsupported(f"tensor '{tensor.name}' uses a custom quantization")
        if name not in _QUANTIZED_STORAGE:
            return element  # float tensors may carry calibration ranges only; int64: no type
        return self._quantized(tensor, element)

    def _quantized(self, tensor: TensorInfo, storage: Attribute) -> Attribute:
        assert isinstance(storage, IntegerType)
        q = tensor.quantization
        assert q is not None
        scales = q.scales
        zero_points = q.zero_points or (0,) * len(scales)
        if len(zero_points) == 1 and len(scales) > 1:
            zero_points = zero_points * len(scales)
        positive = np.asarray(scales, dtype=np.float64)  # one numpy pass: thousands of scales
        bad = len(zero_points) != len(scales) or not (np.isfinite(positive) & (positive > 0)).all()
        if len(scales) > 1:
            axis = q.axis
            bad = bad or not 0 <= axis < len(tensor.shape) or tensor.shape[axis] != len(scales)
        low, high = storage_bounds(storage)
        bad = bad or not all(low <= z <= high for z in zero_points)
        if not bad:
            try:
                if len(scales) == 1:
                    return UniformQuantizedType.per_tensor(storage, f32, scales[0], zero_points[0])
                return UniformQuantizedType.per_axis(storage, f32, q.axis, scales, zero_points)
            except VerifyException:
                pass
        if tensor.type_name == "INT32" and tensor.is_constant:
            return storage  # a bias whose parameters do not fit: its plain integers serve
        raise self.fail(
            f"tensor '{tensor.name}' has invalid quantization parameters (scales "
            f"{list(scales)[:4]}, zero points {list(zero_points)[:4]}, dimension {q.axis})"
        )

    def out_element(self, op: OperatorInfo, k: int = 0) -> Attribute:
        return self.element(self.output_tensor(op, k).index)

    def in_element(self, op: OperatorInfo, k: int) -> Attribute:
        return self.element(self.input_tensor(op, k).index)

    def moved_element(self, op: OperatorInfo, value: SSAValue) -> Attribute:
        """The result element of data movement on `value`: its own, except that a per-axis
        quantized type takes the output's declared axis (the dimension moves with the data)."""
        type_ = value.type
        assert isinstance(type_, TensorType)
        source, declared = type_.element_type, self.out_element(op)
        if (
            isinstance(source, UniformQuantizedType)
            and isinstance(declared, UniformQuantizedType)
            and source.is_per_axis
            and declared.is_per_axis
            and source.with_axis(0) == declared.with_axis(0)
        ):
            return declared
        return source

    # ---- Emission ----

    def emit(self, operation: Operation) -> SSAValue:
        """Insert an op located at the current operator; its first result."""
        return self.emit_all(operation)[0]

    def emit_all(self, operation: Operation) -> list[SSAValue]:
        """Insert an op located at the current operator, verified here so that a model irc
        cannot type consistently is reported at its operator."""
        operation.verify()
        self.builder.emit(operation, self._location())
        return list(operation.results)

    def _location(self) -> str | None:
        if self.current is None:
            return None
        return self.tensors[self.current.outputs[0]].name or None

    def constant_value(
        self, array: np.ndarray, result_type: Attribute | None = None, name: str | None = None
    ) -> SSAValue:
        """A new `nn.constant`, located by `name` (default: the current operator's)."""
        operation = nn.ConstantOp.from_array(np.asarray(array, order="C"), result_type)
        self.builder.emit(operation, name or self._location())
        if name:
            operation.results[0].name_hint = ssa_name_hint(name)
        return operation.results[0]

    def _emit_constant(self, builder: GraphBuilder, index: int, array: np.ndarray) -> SSAValue:
        element = self.element(index)
        result = None
        if isinstance(element, UniformQuantizedType):
            dtype = np.dtype(f"{'' if element.is_signed else 'u'}int{element.storage_width}")
            array = array.astype(dtype, copy=False)
            result = TensorType(element, array.shape)
        operation = nn.ConstantOp.from_array(np.asarray(array, order="C"), result)
        builder.emit(operation, self.tensors[index].name or None)
        return operation.results[0]

    def set_output(self, op: OperatorInfo, value: SSAValue, k: int = 0) -> None:
        """Bind output `k` of `op` to `value`, checking it against the model's declaration."""
        tensor = self.output_tensor(op, k)
        got = value.type
        assert isinstance(got, TensorType)
        shape = got.get_shape()
        if not self.shapes_overridden and not tensor.is_constant:
            declared = tensor.shape
            if (declared or not shape) and (
                len(declared) != len(shape)
                or any(d >= 0 and s >= 0 and d != s for d, s in zip(declared, shape))
            ):
                raise self.fail(
                    f"output '{tensor.name}' has shape {format_shape(shape)} in irc but "
                    f"{format_shape(declared)} in the model"
                )
        element = self.element(tensor.index)
        if got.element_type != element:
            raise self.fail(
                f"output '{tensor.name}' has element type {got.element_type} in irc but "
                f"{element} in the model"
            )
        self.builder.define(self.keys[tensor.index], value)

    def set_moved_output(self, op: OperatorInfo, value: SSAValue, k: int = 0) -> None:
        """`set_output` for data movement: TFLite copies stored values, so an output declared
        with other quantization parameters reinterprets them (`quant.scast` twice)."""
        declared = self.out_element(op, k)
        got = value.type
        assert isinstance(got, TensorType)
        element = got.element_type
        if (
            element != declared
            and isinstance(element, UniformQuantizedType)
            and isinstance(declared, UniformQuantizedType)
            and element.storage_type == declared.storage_type
        ):
            shape = got.get_shape()
            stored = self.emit(quant.SCastOp(value, TensorType(element.storage_type, shape)))
            value = self.emit(quant.SCastOp(stored, TensorType(declared, shape)))
        self.set_output(op, value, k)


def _unique_keys(tensors: Sequence[TensorInfo]) -> list[str]:
    """A distinct key per tensor: its name, suffixed with `#index` when empty or repeated."""
    counts = Counter(t.name for t in tensors)
    return [
        t.name if t.name and counts[t.name] == 1 else f"{t.name or 'tensor'}#{t.index}"
        for t in tensors
    ]


Converter = Callable[[TFLiteImporter, OperatorInfo], None]
"""Converts one TFLite operator: reads its inputs, emits ops, binds its outputs."""

_CONTROL_FLOW = ("WHILE", "IF", "CALL_ONCE", "CALL")


def unsupported_reason(op: OperatorInfo) -> str:
    """Why an operator without a converter is refused (for the report)."""
    if op.op_type in _CONTROL_FLOW:
        return "control flow between subgraphs is not supported"
    if op.custom:
        return "custom operator"
    return "no nn equivalent"
