"""What the TFLite and ONNX importers share: errors, the unsupported-op report, and a builder
that assembles the `func.func @main` of an imported graph.

An importer walks the model's operators in order and, for each, emits `nn` ops through
`GraphBuilder.emit(...)`, mapping the model's tensor names to SSA values. Ops it cannot map
are *recorded* (`GraphBuilder.unsupported(...)`), not raised at once, so that a model is
refused with one message listing every unsupported op type with counts and where they are.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects.builtin import (
    ArrayAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects import nn
from irc.importers.errors import ModelImportError

INPUT_NAMES_ATTR = "irc.input_names"
OUTPUT_NAMES_ATTR = "irc.output_names"

_MAX_PLACES = 3
"""How many places the unsupported-op report names per op type."""


class Unsupported(Exception):
    """Raised inside a converter: the node (operator) or one of its option values is one irc
    cannot express, for `reason`. The importer records it in the unsupported-op report and goes
    on with the next node, so that every unsupported node is reported at once."""

    def __init__(self, reason: str = ""):
        super().__init__(reason)
        self.reason = reason


F = TypeVar("F", bound=Callable[..., object])


def registrar(table: dict[str, F], kind: str) -> Callable[..., Callable[[F], F]]:
    """The `@converter(*names)` decorator of one importer's converter table.

    Each name registers once: a second registration is a bug (two modules claiming one op)
    and raises `ValueError` naming both converters when the second module is imported.
    `kind` names what a key is in that message ("ONNX op type", "TFLite operator").
    """

    def converter(*names: str) -> Callable[[F], F]:
        def register(function: F) -> F:
            for name in names:
                earlier = table.get(name)
                if earlier is not None and earlier is not function:
                    raise ValueError(
                        f"{kind} '{name}' has two converters: "
                        f"{earlier.__module__}.{earlier.__qualname__} and "
                        f"{function.__module__}.{function.__qualname__}"
                    )
                table[name] = function
            return function

        return register

    return converter


@dataclass
class UnsupportedOps:
    """Unsupported operators of a model, collected during import."""

    places: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    reasons: dict[str, str] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)

    def record(self, op_type: str, where: str, reason: str = "") -> None:
        self.counts[op_type] += 1
        self.places[op_type].append(where)
        if reason and op_type not in self.reasons:
            self.reasons[op_type] = reason

    def __bool__(self) -> bool:
        return bool(self.counts)

    def message(self, path: str | Path) -> str:
        """One message listing every unsupported op type, with counts and places."""
        total = sum(self.counts.values())
        lines = [
            f"{path}: cannot import: {total} unsupported operator"
            f"{'s' if total != 1 else ''} of {len(self.counts)} type"
            f"{'s' if len(self.counts) != 1 else ''}:"
        ]
        for op_type, count in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])):
            places = self.places[op_type]
            shown = ", ".join(places[:_MAX_PLACES]) + (", ..." if len(places) > _MAX_PLACES else "")
            reason = f" ({self.reasons[op_type]})" if op_type in self.reasons else ""
            lines.append(f"  {op_type} x{count}{reason}: {shown}")
        return "\n".join(lines)


class GraphBuilder:
    """Builds `func.func @main` from a model graph: named values, located ops, signature."""

    def __init__(
        self, path: str | Path, input_names: Sequence[str], input_types: Sequence[Attribute]
    ):
        self.path = str(path)
        self.block = Block(arg_types=list(input_types))
        self.builder = Builder(InsertPoint.at_end(self.block))
        self.values: dict[str, SSAValue] = {}
        self.input_names = list(input_names)
        self.unsupported = UnsupportedOps()
        for name, arg in zip(self.input_names, self.block.args, strict=True):
            self.values[name] = arg
            arg.name_hint = ssa_name_hint(name)
            self._check_declared_size(arg.type, f"input '{name}'")

    def _check_declared_size(self, type_: Attribute, what: str) -> None:
        """Refuse a graph input or output whose declared size is beyond `MAX_TENSOR_BYTES`
        (the runtime would allocate it for every run)."""
        if not isinstance(type_, TensorType):
            return
        shape = [d for d in type_.get_shape() if d >= 0]
        bits = getattr(type_.element_type, "bitwidth", 8)
        error = tensor_size_error(shape, max(1, int(bits) // 8))
        if error is not None:
            raise ModelImportError(f"{self.path}: {what}: {error}")

    # ---- Values ----

    def value(self, name: str, where: str) -> SSAValue:
        """The SSA value of a model tensor; a clear error when the graph never defined it."""
        if name not in self.values:
            raise ModelImportError(
                f"{self.path}: {where}: tensor '{name}' is used before it is defined"
            )
        return self.values[name]

    def has_value(self, name: str) -> bool:
        return name in self.values

    def define(self, name: str, value: SSAValue) -> SSAValue:
        """Bind a model tensor name to a value (the last definition wins, as in the model)."""
        self.values[name] = value
        if value.name_hint is None:
            value.name_hint = ssa_name_hint(name)
        return value

    # ---- Ops ----

    def emit(self, op: Operation, location_name: str | None = None) -> Operation:
        """Insert `op` at the end of the function, located by the model's op/tensor name."""
        if location_name:
            op.location = NameLoc(StringAttr(location_name), UnknownLoc())
        self.builder.insert(op)
        return op

    def constant(
        self, array: np.ndarray, result_type: Attribute | None = None, name: str | None = None
    ) -> SSAValue:
        """An `nn.constant` holding `array` (quantized when `result_type` says so)."""
        op = self.emit(nn.ConstantOp.from_array(np.asarray(array, order="C"), result_type), name)
        value = op.results[0]
        if name:
            value.name_hint = ssa_name_hint(name)
        return value

    # ---- Finishing ----

    def finish(self, output_names: Sequence[str], func_name: str = "main") -> ModuleOp:
        """Return the outputs, check that nothing was unsupported, and wrap up the module."""
        if self.unsupported:
            raise ModelImportError(self.unsupported.message(self.path))
        outputs = [self.value(name, "graph outputs") for name in output_names]
        for name, output in zip(output_names, outputs, strict=True):
            self._check_declared_size(output.type, f"output '{name}'")
        self.builder.insert(ReturnOp(*outputs))
        function = FuncOp(
            func_name,
            ([a.type for a in self.block.args], [v.type for v in outputs]),
            Region(self.block),
        )
        function.attributes[INPUT_NAMES_ATTR] = ArrayAttr([StringAttr(n) for n in self.input_names])
        function.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr([StringAttr(n) for n in output_names])
        return ModuleOp([function])


def ssa_name_hint(name: str) -> str | None:
    """An SSA name hint from a model tensor name (letters, digits, `_`), or None."""
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_")
    if not cleaned or not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = f"t_{cleaned}" if cleaned else ""
    return cleaned or None


def tensor_type(element: Attribute, shape: Sequence[int]) -> TensorType:
    """A ranked tensor type; negative sizes (-1 in models) become dynamic dimensions."""
    from irc.dialects.nn import DYNAMIC

    return TensorType(element, [d if d >= 0 else DYNAMIC for d in shape])


def fit_scalar_binding(array: np.ndarray, declared: Sequence[int] | None) -> np.ndarray:
    """A scalar bound to an input declared with a single element (`[1]`, `[1, 1]`, `[?]`)
    takes that input's rank, as `--bind sr=16000` means for a `[1]` input."""
    if array.ndim == 0 and declared is not None and all(d == 1 or d < 0 for d in declared):
        return array.reshape([1] * len(declared))
    return array


MAX_TENSOR_BYTES = 2**31
"""The most bytes one tensor of an imported model may hold (2 GiB): declared constants, external
data and constants the importer folds (ConstantOfShape, Expand, Tile, Pad, ...) alike. Checked
before anything is allocated, so a forged shape in a small file cannot exhaust memory."""

MAX_TOTAL_CONSTANT_BYTES = 2**31
"""The most bytes all constants of one import may hold together (2 GiB)."""


def tensor_size_error(shape: Sequence[int], itemsize: int) -> str | None:
    """Why a tensor of `shape` and `itemsize`-byte elements may not be allocated, or None."""
    if any(d < 0 for d in shape):
        return f"shape {list(shape)} has a negative dimension"
    count = 1
    for d in shape:
        count *= int(d)
    if count * itemsize > MAX_TENSOR_BYTES:
        return (
            f"shape {list(shape)} needs {count * itemsize} bytes, over irc's limit of "
            f"{MAX_TENSOR_BYTES} bytes per tensor"
        )
    return None
