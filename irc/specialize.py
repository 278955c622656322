"""Dynamic shapes: specialising a model on concrete input shapes (`Kernel::ReSize`).

A model with dynamic input dimensions (an ONNX `N`, a TFLite shape signature `-1`, an IR
function taking `tensor<?x4xf32>`) is compiled for concrete shapes. `ModelSource` keeps what
the model was compiled from (the model file's bytes, or the IR module before specialisation)
so that `CompiledModel` can compile it again for other shapes:

* a model file is imported again with `input_shapes` (the importers fold every shape
  computation for static shapes);
* an IR module gets the concrete types on its entry's arguments and `infer-shapes` runs.

Specialisations are cached per shape signature (the input shapes in signature order) in an
LRU of `SHAPE_CACHE_SIZE` entries per compiled model.

Shape buckets (`irc.compile(..., shape_buckets=[...])`, `irc-compile --shape-buckets
x=1,4,8`) put several specialisations into one module behind one guarded entry::

    func.func @main_s0(%x: tensor<1x4xf32>) -> tensor<1x3xf32> {...}
    func.func @main_s1(%x: tensor<4x4xf32>) -> tensor<4x3xf32> {...}
    func.func private @main(tensor<?x4xf32>) -> tensor<?x3xf32>
        attributes {irc.shape_guard = [@main_s0, @main_s1], irc.input_names = ..., ...}

The guard is a declaration: its types are the buckets' types merged (a dimension that
differs between buckets is `?`), and `irc.shape_guard` lists the specialisations, whose
argument types are the guards: a call runs the specialisation whose input shapes equal the
given ones. Every specialisation is compiled ahead of time and loaded with the module, so
running a bucketed shape compiles nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp
    from xdsl.ir import Attribute

__all__ = [
    "GUARD_ATTR",
    "SHAPE_CACHE_SIZE",
    "ModelSource",
    "ShapeKey",
    "Shapes",
    "build_guard",
    "expand_buckets",
    "find_function",
    "fits",
    "format_shape",
    "guarded_specializations",
    "parse_shape_buckets",
    "shape_key",
]

SHAPE_CACHE_SIZE = 8
"""Specialisations a compiled model keeps (least recently used ones are dropped)."""

GUARD_ATTR = "irc.shape_guard"
"""The guarded entry's list of specialisations (symbol references)."""

Shapes = Mapping[str, Sequence[int]]
"""Input shapes by input name."""

ShapeKey = tuple[tuple[str, tuple[int, ...]], ...]
"""A specialisation's cache key: (input name, shape) in signature order."""


def shape_key(names: Sequence[str], shapes: Shapes) -> ShapeKey:
    """The cache key of `shapes`: (name, shape) in signature order."""
    return tuple((name, tuple(int(d) for d in shapes[name])) for name in names)


def fits(signature: Sequence[int], shape: Sequence[int]) -> bool:
    """Whether `shape` is an instance of `signature` (-1: any size)."""
    return len(signature) == len(shape) and all(
        s < 0 or s == d for s, d in zip(signature, shape, strict=True)
    )


def format_shape(shape: Sequence[int]) -> str:
    """`1x?x4` (`scalar` for rank 0)."""
    return "x".join("?" if d < 0 else str(d) for d in shape) or "scalar"


def find_function(module: ModuleOp, name: str) -> FuncOp | None:
    """The top-level `func.func @name` of `module`, or None."""
    from xdsl.dialects.func import FuncOp

    for op in module.body.block.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    return None


# ---- What a model was compiled from ------------------------------------------------------------


@dataclass
class ModelSource:
    """A model before specialisation: a model file's bytes, or an IR module."""

    path: str
    data: bytes | None = None
    """The model file's content (`.tflite` / `.onnx`)."""
    module: ModuleOp | None = None
    """The IR module (never modified: specialisations work on clones)."""
    bind: Mapping[str, int | float] = field(default_factory=dict)
    entry: str = "main"
    _signature: dict[str, tuple[int, ...]] | None = None

    @staticmethod
    def read(path: str, bind: Mapping[str, int | float] | None) -> ModelSource:
        """The model file at `path` (ModelImportError when it cannot be read)."""
        from pathlib import Path

        from irc.importers import ModelImportError

        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ModelImportError(
                f"{path}: cannot read the model: {exc.strerror or exc}"
            ) from None
        return ModelSource(path, data=data, bind=dict(bind or {}))

    def signature(self) -> dict[str, tuple[int, ...]]:
        """Every free input's declared shape, -1 for a dynamic dimension."""
        if self._signature is None:
            self._signature = (
                _module_signature(self.module, self.entry)
                if self.module is not None
                else _model_signature(self.data or b"", self.path, self.bind)
            )
        return self._signature

    @property
    def is_dynamic(self) -> bool:
        """Whether some input has a dynamic dimension."""
        return any(d < 0 for shape in self.signature().values() for d in shape)

    def check(self, shapes: Shapes) -> None:
        """ValueError unless every named input exists and `shapes` fit its signature."""
        signature = self.signature()
        for name, shape in shapes.items():
            if name not in signature:
                known = ", ".join(repr(n) for n in signature) or "none"
                raise ValueError(f"{self.path}: no input named '{name}' (inputs: {known})")
            if not fits(signature[name], shape):
                raise ValueError(
                    f"{self.path}: shape {format_shape(shape)} does not fit input '{name}' of "
                    f"shape {format_shape(signature[name])}"
                )

    def instantiate(self, shapes: Shapes | None) -> ModuleOp:
        """The model as a fresh module, specialised to `shapes` where given."""
        if self.module is not None:
            if not shapes:
                return self.module.clone()
            self.check(shapes)
            return _specialize_module(self.module, self.entry, shapes)
        from irc.diagnostics import verify_module
        from irc.importers import ModelImportError, detect_format

        data = self.data or b""
        if detect_format(data, self.path) == "tflite":
            from irc.importers.tflite import import_tflite

            module = import_tflite(data, self.path, bind=self.bind, input_shapes=shapes)
        else:
            from irc.importers.onnx import import_onnx

            module = import_onnx(data, self.path, bind=self.bind, input_shapes=shapes)
        try:
            verify_module(module)
        except Exception as exc:  # an importer bug: still one clear message
            raise ModelImportError(f"{self.path}: the imported IR does not verify: {exc}") from None
        return module

    def unspecialised(self, shapes: Shapes | None = None) -> ModuleOp:
        """The model before specialisation: dimensions `shapes` does not give stay dynamic
        (`?`). An ONNX model imports whole where every converter on the way handles dynamic
        sizes (`infer-shapes` refines it once its arguments are static); otherwise (shape
        computations that fold only for static shapes) it is the entry's declaration with
        the model's declared input and output types. `ModelImportError` when the model
        cannot be imported for any shapes (a node without a converter)."""
        if self.module is not None:
            return self.module.clone()
        from irc.importers import ModelImportError, detect_format

        data = self.data or b""
        if detect_format(data, self.path) == "tflite":
            return self.instantiate(shapes)
        from irc.importers.onnx import import_onnx

        try:
            return import_onnx(
                data, self.path, bind=self.bind, input_shapes=shapes, keep_dynamic=True
            )
        except ModelImportError as exc:
            declaration = _onnx_declaration(data, self.path, self.bind, self.entry, shapes or {})
            if declaration is None:
                raise exc from None  # a node without any converter: the importer's report
            return declaration


def _onnx_declaration(
    data: bytes, path: str, bind: Mapping[str, object], entry: str, shapes: Shapes
) -> ModuleOp | None:
    """`func.func private @entry(inputs) -> outputs` with the ONNX graph's declared types
    (`shapes` where given); None when a node has no converter (no shapes would help)."""
    import onnx
    from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
    from xdsl.dialects.func import FuncOp

    from irc.importers import ModelImportError
    from irc.importers.common import tensor_type
    from irc.importers.onnx.context import op_key
    from irc.importers.onnx.dtypes import dtype_for_onnx, element_for_dtype
    from irc.importers.onnx.registry import CONVERTERS

    graph = onnx.load_model_from_string(data).graph
    if any(op_key(n) not in CONVERTERS for n in graph.node):
        return None
    initializers = {t.name for t in graph.initializer}

    def declared(info: onnx.ValueInfoProto) -> TensorType:
        tensor = info.type.tensor_type
        dtype = dtype_for_onnx(tensor.elem_type)
        if dtype is None or not tensor.HasField("shape"):
            raise ModelImportError(
                f"{path}: '{info.name}' needs a declared element type and rank to be "
                "compiled before its shapes are known; give input shapes"
            )
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        if info.name in shapes:
            dims = [int(d) for d in shapes[info.name]]
        return tensor_type(element_for_dtype(dtype), dims)

    inputs = [i for i in graph.input if i.name not in initializers and i.name not in bind]
    func = FuncOp.external(
        entry, [declared(i) for i in inputs], [declared(o) for o in graph.output]
    )
    func.attributes["irc.input_names"] = ArrayAttr([StringAttr(i.name) for i in inputs])
    func.attributes["irc.output_names"] = ArrayAttr([StringAttr(o.name) for o in graph.output])
    return ModuleOp([func])


def _module_signature(module: ModuleOp, entry: str) -> dict[str, tuple[int, ...]]:
    from xdsl.dialects.builtin import TensorType

    func = find_function(module, entry)
    if func is None:
        return {}
    names = _input_names(func)
    out: dict[str, tuple[int, ...]] = {}
    for name, t in zip(names, func.function_type.inputs.data, strict=True):
        out[name] = tuple(t.get_shape()) if isinstance(t, TensorType) else ()
    return out


def _input_names(func: FuncOp) -> list[str]:
    from xdsl.dialects.builtin import ArrayAttr, StringAttr

    attr = func.attributes.get("irc.input_names")
    count = len(func.function_type.inputs.data)
    if isinstance(attr, ArrayAttr) and len(attr.data) == count:
        return [a.data if isinstance(a, StringAttr) else f"arg{i}" for i, a in enumerate(attr.data)]
    return [f"arg{i}" for i in range(count)]


def _model_signature(
    data: bytes, path: str, bind: Mapping[str, object]
) -> dict[str, tuple[int, ...]]:
    from irc.importers import detect_format

    if detect_format(data, path) == "tflite":
        from irc.importers.tflite.reader import read_model

        model = read_model(data, path)
        return {
            t.name: tuple(int(d) for d in (t.signature or t.shape))
            for t in (model.tensors[i] for i in model.inputs)
            if t.name not in bind
        }
    import onnx

    from irc.importers import ModelImportError

    try:
        graph = onnx.load_model_from_string(data).graph
    except Exception as exc:
        raise ModelImportError(f"{path}: not a readable ONNX model: {exc}") from None
    initializers = {t.name for t in graph.initializer}
    out: dict[str, tuple[int, ...]] = {}
    for info in graph.input:
        if info.name in initializers or info.name in bind:
            continue
        dims = info.type.tensor_type.shape.dim
        out[info.name] = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in dims)
    return out


def _specialize_module(module: ModuleOp, entry: str, shapes: Shapes) -> ModuleOp:
    """A clone of `module` whose `@entry` takes `shapes`, with `infer-shapes` run."""
    from xdsl.dialects.builtin import FunctionType, TensorType
    from xdsl.rewriter import Rewriter

    from irc.context import get_all_passes
    from irc.pipelines import run_passes

    clone = module.clone()
    func = find_function(clone, entry)
    if func is None:
        raise ValueError(f"no function @{entry} to specialise")
    names = _input_names(func)
    types = list(func.function_type.inputs.data)
    for index, (name, arg) in enumerate(zip(names, func.args, strict=True)):
        t = arg.type
        if name in shapes and isinstance(t, TensorType):
            new = TensorType(t.element_type, [int(d) for d in shapes[name]])
            if new != t:
                Rewriter.replace_value_with_new_type(arg, new)
                types[index] = new
    func.function_type = FunctionType.from_lists(types, list(func.function_type.outputs.data))
    run_passes(clone, [get_all_passes()["infer-shapes"]()()])
    return clone


# ---- Shape buckets -----------------------------------------------------------------------------

_DIMS = re.compile(r"\d+(x\d+)*")


def parse_shape_buckets(items: Sequence[str]) -> dict[str, list[int | tuple[int, ...]]]:
    """`--shape-buckets` options: `name=1,4,8` (sizes of the input's dynamic dimension) or
    `name=1x4,8x4` (whole shapes). ValueError for a bad item."""
    out: dict[str, list[int | tuple[int, ...]]] = {}
    for item in items:
        name, sep, text = item.rpartition("=")
        values = [v.strip() for v in text.split(",")]
        if not sep or not name or not all(_DIMS.fullmatch(v) for v in values):
            raise ValueError(
                f"bad --shape-buckets '{item}': expected NAME=SIZES or NAME=SHAPES, "
                "e.g. x=1,4,8 or x=1x4,8x4"
            )
        if name in out:
            raise ValueError(f"--shape-buckets names input '{name}' twice")
        out[name] = [tuple(int(d) for d in v.split("x")) if "x" in v else int(v) for v in values]
    return out


def expand_buckets(
    buckets: Mapping[str, Sequence[int | Sequence[int]]],
    signature: Mapping[str, Sequence[int]],
    input_shapes: Shapes | None = None,
) -> list[dict[str, tuple[int, ...]]]:
    """One shape map per bucket: the lists are zipped (all must have the same length); a
    size sets the input's only dynamic dimension; other inputs take `input_shapes`.
    ValueError when a bucket does not fit the signature."""
    lengths = {len(values) for values in buckets.values()}
    if len(lengths) != 1 or 0 in lengths:
        raise ValueError("shape buckets: every input needs the same number of buckets (>= 1)")
    out: list[dict[str, tuple[int, ...]]] = []
    for index in range(lengths.pop()):
        shapes = {name: tuple(int(d) for d in s) for name, s in (input_shapes or {}).items()}
        for name, values in buckets.items():
            if name not in signature:
                known = ", ".join(repr(n) for n in signature) or "none"
                raise ValueError(f"shape buckets: no input named '{name}' (inputs: {known})")
            declared = tuple(signature[name])
            value = values[index]
            if isinstance(value, int):
                dynamic = [d for d, size in enumerate(declared) if size < 0]
                if len(dynamic) != 1:
                    raise ValueError(
                        f"shape buckets: input '{name}' of shape {format_shape(declared)} has "
                        f"{len(dynamic)} dynamic dimensions; give whole shapes, e.g. "
                        f"{name}=1x4,8x4"
                    )
                shape = list(declared)
                shape[dynamic[0]] = value
                value = tuple(shape)
            value = tuple(int(d) for d in value)
            if not fits(declared, value):
                raise ValueError(
                    f"shape buckets: shape {format_shape(value)} does not fit input '{name}' "
                    f"of shape {format_shape(declared)}"
                )
            shapes[name] = value
        if shapes in out:
            raise ValueError(f"shape buckets: bucket #{index} repeats an earlier one")
        out.append(shapes)
    return out


def _merged_type(types: Sequence[Attribute]) -> Attribute:
    from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType

    first = types[0]
    tensors = [t for t in types if isinstance(t, TensorType)]
    if (
        not isinstance(first, TensorType)
        or len(tensors) != len(types)
        or not all(
            t.element_type == first.element_type and len(t.get_shape()) == len(first.get_shape())
            for t in tensors
        )
    ):
        return first
    shapes = [t.get_shape() for t in tensors]
    dims = [d if all(s[i] == d for s in shapes) else DYNAMIC_INDEX for i, d in enumerate(shapes[0])]
    return TensorType(first.element_type, dims)


def build_guard(entry: str, specializations: Sequence[FuncOp]) -> FuncOp:
    """The guarded entry `@entry` over `specializations` (see the module docstring)."""
    from xdsl.dialects.builtin import ArrayAttr, SymbolRefAttr
    from xdsl.dialects.func import FuncOp

    inputs = [
        _merged_type(ts)
        for ts in zip(*(f.function_type.inputs.data for f in specializations), strict=True)
    ]
    outputs = [
        _merged_type(ts)
        for ts in zip(*(f.function_type.outputs.data for f in specializations), strict=True)
    ]
    guard = FuncOp.external(entry, inputs, outputs)
    for name in ("irc.input_names", "irc.output_names"):
        if name in specializations[0].attributes:
            guard.attributes[name] = specializations[0].attributes[name]
    guard.attributes[GUARD_ATTR] = ArrayAttr(
        [SymbolRefAttr(f.sym_name.data) for f in specializations]
    )
    return guard


def guarded_specializations(module: ModuleOp, entry: str) -> list[str] | None:
    """The specialisations behind `@entry` when it is a guarded entry, else None."""
    from xdsl.dialects.builtin import ArrayAttr, SymbolRefAttr

    func = find_function(module, entry)
    attr = None if func is None else func.attributes.get(GUARD_ATTR)
    if not isinstance(attr, ArrayAttr):
        return None
    names = [ref.root_reference.data for ref in attr.data if isinstance(ref, SymbolRefAttr)]
    missing = [name for name in names if find_function(module, name) is None]
    if missing or not names:
        raise ValueError(
            f"@{entry}: {GUARD_ATTR} names no function "
            + (", ".join(f"@{n}" for n in missing) if missing else "(empty list)")
        )
    return names
