"""The ONNX import driver: load and check the model, give its inputs static shapes, convert.

`import_onnx(data, path, bind=..., input_shapes=...)` parses and checks the model (and its
external data, `untrusted`), upgrades models older than opset 11 to opset 13
(`onnx.version_converter`), gives every graph input a static shape and converts the nodes in
order with the registered converters. Importing this module imports every converter module
(`ops`, `shape`, `extra`, `quantized`), which fills `registry.CONVERTERS`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import ModuleOp

from irc.importers.common import GraphBuilder, ModelImportError, fit_scalar_binding, tensor_type
from irc.importers.errors import MissingShapesError
from irc.importers.onnx import (  # noqa: F401  (they register the converters)
    extra,
    ops,
    quantized,
    shape,
    transformer,
)
from irc.importers.onnx.context import DEFAULT_DOMAINS, ConversionContext
from irc.importers.onnx.dtypes import dtype_for_onnx, element_for_dtype, onnx_type_name
from irc.importers.onnx.registry import CONVERTERS
from irc.importers.onnx.untrusted import check_model_tensors

__all__ = ["MIN_NATIVE_OPSET", "UPGRADE_OPSET", "MissingShapesError", "import_onnx"]

MIN_NATIVE_OPSET = 11
"""Older models are upgraded to `UPGRADE_OPSET` first."""

UPGRADE_OPSET = 13


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
        if entry.domain in DEFAULT_DOMAINS:
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
    keep_dynamic: bool = False,
) -> dict[str, list[int]]:
    """Static shapes of the graph inputs; dynamic batch dims default to 1 (with a warning).
    With `keep_dynamic`, dimensions not given stay dynamic (-1)."""
    shapes: dict[str, list[int]] = {}
    missing: list[str] = []
    names: list[str] = []
    example: list[int] = []
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
            names.append(info.name)
            continue
        dims = list(declared)
        if keep_dynamic:
            shapes[info.name] = dims
            continue
        if any(d < 0 for d in dims[1:]):
            missing.append(f"'{info.name}' {_format_dims(declared)}")
            names.append(info.name)
            if not example:  # dynamic sizes shown as 1 (batch) and 16
                example = [d if d >= 0 else (1 if i == 0 else 16) for i, d in enumerate(dims)]
            continue
        if dims and dims[0] < 0:
            dims[0] = 1
            print(
                f"{path}: warning: input '{info.name}' has a dynamic batch dimension; using 1 "
                "(pass input_shapes to choose another)",
                file=sys.stderr,
            )
        shapes[info.name] = dims
    if missing:
        raise MissingShapesError(path, missing, names, example)
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
    keep_dynamic: bool = False,
) -> ModuleOp:
    """Import an ONNX model (its serialized bytes) into an `nn` module.

    `bind` turns inputs into constants (so shapes and conditions that depend on them fold);
    `input_shapes` fixes the shapes of inputs with dynamic dimensions (a dynamic first
    dimension alone defaults to 1, with a warning; other dynamic dimensions raise
    `MissingShapesError`). `keep_dynamic=True` keeps the dimensions `input_shapes` does not
    give dynamic (`?`): the unspecialised model, which imports only where every converter
    on the way handles dynamic sizes. Raises `ModelImportError`.
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
    shapes = _resolve_input_shapes(free, input_shapes, path, keep_dynamic)
    types = [tensor_type(element_for_dtype(dtypes[i.name]), shapes[i.name]) for i in free]
    builder = GraphBuilder(path, [i.name for i in free], types)
    ctx = ConversionContext(path, model, opset, builder, CONVERTERS, source_opset)
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
