"""Read a `.tflite` flatbuffer into plain Python records, checking it as untrusted input.

The `tflite` package's generated accessors read straight from the byte buffer; on a corrupt
or truncated file they raise whatever `struct`, `numpy` or slicing raise, or return garbage
offsets. `read_model` therefore copies what the importer needs (tensors, operators, buffers of
subgraph 0) into dataclasses in one guarded pass, checks every index and length against the
file, and turns any failure into one `ModelImportError`. Constant data is decoded (and
densified, for TFLite's sparse tensors) on demand by `constant_array`.

Nothing here evaluates model content: names are decoded as text and only stored.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import flatbuffers
import numpy as np
import tflite
from tflite.utils import BUILTIN_OPCODE2NAME

from irc.importers.common import ModelImportError

_IDENTIFIER = b"TFL3"

NUMPY_DTYPES: dict[int, str] = {
    tflite.TensorType.FLOAT32: "<f4",
    tflite.TensorType.FLOAT16: "<f2",
    tflite.TensorType.FLOAT64: "<f8",
    tflite.TensorType.INT64: "<i8",
    tflite.TensorType.INT32: "<i4",
    tflite.TensorType.INT16: "<i2",
    tflite.TensorType.INT8: "i1",
    tflite.TensorType.UINT8: "u1",
    tflite.TensorType.BOOL: "?",
}
"""Tensor types the importer handles, with the numpy dtype of their little-endian data."""

TYPE_NAMES: dict[int, str] = {
    value: name for name, value in vars(tflite.TensorType).items() if not name.startswith("_")
}

DENSE, SPARSE_CSR = tflite.DimensionType.DENSE, tflite.DimensionType.SPARSE_CSR


@dataclass(frozen=True)
class Quantization:
    """Affine quantization parameters of a tensor (per tensor when one scale)."""

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int
    custom: bool = False
    """The tensor uses a custom quantization scheme (`details`), which irc cannot express."""


@dataclass(frozen=True)
class DimMetadata:
    """One level of a sparse tensor's traversal: dense with a size, or CSR."""

    format: int
    dense_size: int
    segments: np.ndarray
    indices: np.ndarray


@dataclass(frozen=True)
class Sparsity:
    """TFLite's sparse tensor encoding (`SparsityParameters`)."""

    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    dim_metadata: tuple[DimMetadata, ...]


@dataclass
class TensorInfo:
    """A tensor of the subgraph: what the importer needs, copied out of the flatbuffer."""

    index: int
    name: str
    type: int
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None
    quantization: Quantization | None
    raw: np.ndarray | None
    """The bytes of a constant (uint8), None for activations and graph inputs."""
    sparsity: Sparsity | None
    is_variable: bool

    @property
    def is_constant(self) -> bool:
        return self.raw is not None

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, f"type {self.type}")


@dataclass
class OperatorInfo:
    """An operator of the subgraph."""

    index: int
    op_type: str
    """The builtin operator name (`CONV_2D`) or, for a custom op, its custom code."""
    custom: bool
    version: int
    inputs: tuple[int, ...]
    """Tensor indices; -1 marks an omitted optional input."""
    outputs: tuple[int, ...]
    options_type: int
    options: flatbuffers.table.Table | None
    custom_options: bytes


@dataclass
class ModelInfo:
    """Subgraph 0 of a model (irc imports the main subgraph; others belong to control flow)."""

    tensors: list[TensorInfo]
    operators: list[OperatorInfo]
    inputs: list[int]
    outputs: list[int]
    subgraph_count: int
    description: str = ""


# ---- Reading -----------------------------------------------------------------------------------


class _Corrupt(Exception):
    """A structural problem found while reading; becomes a ModelImportError."""


_T = TypeVar("_T")


def _present(value: _T | None, what: str) -> _T:
    """A table the generated accessors return, refused when its offset is absent (None)."""
    if value is None:
        raise _Corrupt(f"{what} is missing")
    return value


def read_model(data: bytes, path: str | Path) -> ModelInfo:
    """Parse and check the flatbuffer; every failure is one `ModelImportError` naming `path`."""
    if len(data) < 8 or data[4:8] != _IDENTIFIER:
        raise ModelImportError(f"{path}: not a TFLite model (no 'TFL3' flatbuffer identifier)")
    try:
        return _Reader(data).model()
    except _Corrupt as exc:
        raise ModelImportError(f"{path}: corrupt TFLite flatbuffer: {exc}") from None
    except struct.error:  # a read past the end of the data
        raise ModelImportError(
            f"{path}: corrupt or truncated TFLite flatbuffer (an offset points past the end "
            f"of its {len(data)} bytes)"
        ) from None
    except Exception as exc:  # the generated accessors fail in many ways on bad offsets
        raise ModelImportError(
            f"{path}: corrupt or truncated TFLite flatbuffer ({type(exc).__name__}: {exc})"
        ) from None


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.root = tflite.Model.GetRootAsModel(data, 0)

    def count(self, n: int, what: str, item_size: int = 4) -> int:
        """A vector length, refused when the vector could not fit in the file."""
        if n < 0 or n * item_size > len(self.data):
            raise _Corrupt(f"{what} claims {n} entries, more than the file can hold")
        return n

    def model(self) -> ModelInfo:
        root = self.root
        subgraphs = self.count(root.SubgraphsLength(), "the subgraph list")
        if subgraphs == 0:
            raise _Corrupt("the model has no subgraphs")
        codes = [
            self.opcode(_present(root.OperatorCodes(i), f"operator code {i}"))
            for i in range(self.count(root.OperatorCodesLength(), "the operator code list"))
        ]
        buffers = self.count(root.BuffersLength(), "the buffer list")
        graph = _present(root.Subgraphs(0), "subgraph 0")
        tensor_count = self.count(graph.TensorsLength(), "the tensor list")
        tensors = [
            self.tensor(i, _present(graph.Tensors(i), f"tensor {i}"), buffers)
            for i in range(tensor_count)
        ]
        operators = [
            self.operator(i, _present(graph.Operators(i), f"operator {i}"), codes, tensor_count)
            for i in range(self.count(graph.OperatorsLength(), "the operator list"))
        ]
        inputs = self.indices(graph.InputsAsNumpy(), tensor_count, "subgraph inputs")
        outputs = self.indices(graph.OutputsAsNumpy(), tensor_count, "subgraph outputs")
        if any(i < 0 for i in (*inputs, *outputs)):
            raise _Corrupt("a subgraph input or output is -1")
        description = root.Description()
        return ModelInfo(
            tensors,
            operators,
            list(inputs),
            list(outputs),
            subgraphs,
            description.decode("utf-8", "replace") if description else "",
        )

    @staticmethod
    def opcode(code: tflite.OperatorCode) -> tuple[str, bool, int]:
        # TFLite's GetBuiltinCode: codes above 127 live in `builtin_code`, older models only
        # fill `deprecated_builtin_code`; the larger of the two is the operator.
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        version = code.Version()
        if builtin == tflite.BuiltinOperator.CUSTOM:
            custom = code.CustomCode()
            return (custom.decode("utf-8", "replace") if custom else "CUSTOM"), True, version
        return BUILTIN_OPCODE2NAME.get(builtin, f"BUILTIN_{builtin}"), False, version

    def indices(self, array: object, tensor_count: int, what: str) -> tuple[int, ...]:
        if isinstance(array, int):  # the accessors return 0 for an absent vector
            return ()
        values = tuple(int(v) for v in np.asarray(array))
        for v in values:
            if not -1 <= v < tensor_count:
                raise _Corrupt(f"{what} refer to tensor {v}, but there are {tensor_count}")
        return values

    def tensor(self, index: int, t: tflite.Tensor, buffer_count: int) -> TensorInfo:
        name = t.Name()
        shape = t.ShapeAsNumpy()
        shape = () if isinstance(shape, int) else tuple(int(d) for d in shape)
        signature = t.ShapeSignatureAsNumpy()
        signature = None if isinstance(signature, int) else tuple(int(d) for d in signature)
        if signature is not None and len(signature) != len(shape):
            signature = None  # an inconsistent signature: trust the static shape
        if any(d < 0 for d in shape):
            raise _Corrupt(f"tensor {index} has a negative dimension in its shape {list(shape)}")
        buffer = t.Buffer()
        if not 0 <= buffer < max(buffer_count, 1):
            raise _Corrupt(
                f"tensor {index} refers to buffer {buffer}, but there are {buffer_count}"
            )
        return TensorInfo(
            index=index,
            name=name.decode("utf-8", "replace") if name else "",
            type=t.Type(),
            shape=shape,
            signature=signature,
            quantization=self.quantization(t.Quantization()),
            raw=self.buffer(buffer) if buffer_count else None,
            sparsity=self.sparsity(t.Sparsity()),
            is_variable=bool(t.IsVariable()),
        )

    def buffer(self, index: int) -> np.ndarray | None:
        if index == 0:
            return None  # buffer 0 is the empty sentinel of every model
        buffer = _present(self.root.Buffers(index), f"buffer {index}")
        offset, size = buffer.Offset(), buffer.Size()
        if offset > 1:  # models over 2 GB keep their data after the flatbuffer
            if offset + size > len(self.data):
                raise _Corrupt(f"buffer {index} lies beyond the end of the file")
            return np.frombuffer(self.data, np.uint8, size, offset)
        raw = buffer.DataAsNumpy()
        if isinstance(raw, int) or raw.size == 0:
            return None
        return raw

    @staticmethod
    def quantization(q: tflite.QuantizationParameters | None) -> Quantization | None:
        if q is None:
            return None
        custom = q.DetailsType() != tflite.QuantizationDetails.NONE
        scales = q.ScaleAsNumpy()
        if isinstance(scales, int) or scales.size == 0:
            return Quantization((), (), 0, custom) if custom else None
        zero_points = q.ZeroPointAsNumpy()
        zps = () if isinstance(zero_points, int) else tuple(int(z) for z in zero_points)
        return Quantization(
            tuple(float(s) for s in scales), zps, int(q.QuantizedDimension()), custom
        )

    def sparsity(self, s: tflite.SparsityParameters | None) -> Sparsity | None:
        if s is None:
            return None
        order = s.TraversalOrderAsNumpy()
        block_map = s.BlockMapAsNumpy()
        levels = self.count(s.DimMetadataLength(), "the sparsity metadata")
        return Sparsity(
            () if isinstance(order, int) else tuple(int(v) for v in order),
            () if isinstance(block_map, int) else tuple(int(v) for v in block_map),
            tuple(
                self.dim_metadata(_present(s.DimMetadata(i), f"sparsity level {i}"))
                for i in range(levels)
            ),
        )

    @staticmethod
    def dim_metadata(m: tflite.DimensionMetadata) -> DimMetadata:
        def index_vector(kind: int, table: flatbuffers.table.Table | None) -> np.ndarray:
            vector_class = {
                tflite.SparseIndexVector.Int32Vector: tflite.Int32Vector,
                tflite.SparseIndexVector.Uint16Vector: tflite.Uint16Vector,
                tflite.SparseIndexVector.Uint8Vector: tflite.Uint8Vector,
            }.get(kind)
            if vector_class is None or table is None:
                return np.zeros(0, np.int64)
            vector = vector_class()
            vector.Init(table.Bytes, table.Pos)
            values = vector.ValuesAsNumpy()
            return np.zeros(0, np.int64) if isinstance(values, int) else values.astype(np.int64)

        return DimMetadata(
            m.Format(),
            m.DenseSize(),
            index_vector(m.ArraySegmentsType(), m.ArraySegments()),
            index_vector(m.ArrayIndicesType(), m.ArrayIndices()),
        )

    def operator(
        self,
        index: int,
        op: tflite.Operator,
        codes: Sequence[tuple[str, bool, int]],
        tensor_count: int,
    ) -> OperatorInfo:
        code = op.OpcodeIndex()
        if not 0 <= code < len(codes):
            raise _Corrupt(
                f"operator {index} uses operator code {code}, but there are {len(codes)}"
            )
        op_type, custom, version = codes[code]
        inputs = self.indices(op.InputsAsNumpy(), tensor_count, f"operator {index}'s inputs")
        outputs = self.indices(op.OutputsAsNumpy(), tensor_count, f"operator {index}'s outputs")
        if not outputs or any(o < 0 for o in outputs):
            raise _Corrupt(f"operator {index} has no output or an output of -1")
        custom_options = b""
        if custom:
            raw = op.CustomOptionsAsNumpy()
            if not isinstance(raw, int):
                custom_options = raw.tobytes()
            offset, size = op.LargeCustomOptionsOffset(), op.LargeCustomOptionsSize()
            if offset > 1:
                if offset + size > len(self.data):
                    raise _Corrupt(f"operator {index}'s custom options lie beyond the file")
                custom_options = self.data[offset : offset + size]
        return OperatorInfo(
            index=index,
            op_type=op_type,
            custom=custom,
            version=version,
            inputs=inputs,
            outputs=outputs,
            options_type=op.BuiltinOptionsType(),
            options=op.BuiltinOptions(),
            custom_options=custom_options,
        )


# ---- Options -----------------------------------------------------------------------------------


def _empty_table() -> bytes:
    builder = flatbuffers.Builder(16)
    builder.StartObject(0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())


_EMPTY_TABLE = _empty_table()
"""A flatbuffer whose root table has no fields: options read from it are the defaults."""


class Options:
    """Builtin options read eagerly: `o.StrideH()` returns the value read at import.

    The generated accessors read lazily from the buffer and fail in arbitrary ways on a corrupt
    table; reading every field up front turns that into one ValueError.
    """

    def __init__(self, table_name: str, values: dict[str, object]):
        self._table_name = table_name
        self._values = values

    def __getattr__(self, name: str) -> Callable[[], Any]:
        try:
            value = self._values[name]
        except KeyError:
            raise AttributeError(f"{self._table_name} has no field {name}") from None
        return lambda: value


def read_options(op: OperatorInfo, table_name: str) -> Options:
    """The op's builtin options of the `tflite` table `table_name`; defaults when absent.

    Raises ValueError when the op carries options of another type or a corrupt table.
    """
    options_class = getattr(tflite, table_name)
    expected = getattr(tflite.BuiltinOptions, table_name)
    if op.options is None or op.options_type == tflite.BuiltinOptions.NONE:
        options = options_class.GetRootAs(_EMPTY_TABLE, 0)
    elif op.options_type != expected:
        raise ValueError(
            f"carries options of union type {op.options_type}, expected {table_name} ({expected})"
        )
    else:
        options = options_class()
        options.Init(op.options.Bytes, op.options.Pos)
    values: dict[str, object] = {}
    try:
        for name in _field_accessors(options_class):
            values[name] = getattr(options, name)()
    except Exception as exc:
        raise ValueError(f"has a corrupt {table_name} table ({type(exc).__name__})") from None
    return Options(table_name, values)


def _field_accessors(options_class: type) -> list[str]:
    """The argument-less field accessors of a generated options class (`StrideH`, ...)."""
    names = []
    for name, member in vars(options_class).items():
        if not name[:1].isupper() or name.startswith(("GetRootAs", "Init")):
            continue
        if name.endswith("BufferHasIdentifier") or not callable(member):
            continue
        if member.__code__.co_argcount == 1:  # only `self`
            names.append(name)
    return names


def options_vector(values: object) -> list[int]:
    """An int vector option (`...AsNumpy()`), empty when absent."""
    return [] if isinstance(values, int) else [int(v) for v in np.asarray(values)]


# ---- Constant data -----------------------------------------------------------------------------


def constant_array(tensor: TensorInfo) -> np.ndarray:
    """The value of a constant tensor, densified when it is stored sparse.

    Raises ValueError with a precise message when the data does not match the tensor.
    """
    assert tensor.raw is not None
    dtype = NUMPY_DTYPES.get(tensor.type)
    if dtype is None:
        raise ValueError(f"constant tensors of type {tensor.type_name} are not supported")
    itemsize = np.dtype(dtype).itemsize
    if tensor.raw.size % itemsize:
        raise ValueError(f"holds {tensor.raw.size} bytes, not a whole number of {dtype} values")
    values = np.frombuffer(tensor.raw, dtype, tensor.raw.size // itemsize)
    if dtype == "?":
        values = values.view(np.uint8) != 0  # any non-zero byte is true
    if tensor.sparsity is not None:
        return densify(values, tensor.shape, tensor.sparsity)
    count = math.prod(tensor.shape)
    if values.size != count:
        raise ValueError(
            f"holds {values.size} values but its shape {list(tensor.shape)} needs {count}"
        )
    return values.reshape(tensor.shape)


_MAX_DENSIFY_RATIO = 1024
"""Dense elements per stored value beyond which a sparse constant is taken as corrupt (no
real model is 99.9 % zeros; the limit keeps a forged shape from allocating gigabytes)."""


def densify(values: np.ndarray, shape: Sequence[int], sparsity: Sparsity) -> np.ndarray:
    """Expand TFLite's sparse encoding (the FormatConverter's SparseToDense) into a dense array.

    Levels are walked in traversal order; a dense level enumerates `dense_size` positions, a
    CSR level the `indices` of the segment its parent position selects. Leaves, in that order,
    take successive stored values; the block levels (after the original rank) refine the
    coordinate of the dimension `block_map` names.
    """
    rank = len(shape)
    order = list(sparsity.traversal_order)
    block_map = list(sparsity.block_map)
    levels = sparsity.dim_metadata
    total = len(order)
    if total != rank + len(block_map) or len(levels) != total:
        raise ValueError(
            f"sparsity has {total} traversal levels and {len(levels)} metadata entries for a "
            f"rank-{rank} tensor with {len(block_map)} block dimensions"
        )
    if sorted(order) != list(range(total)):
        raise ValueError(f"traversal order {order} is not a permutation")
    if any(not 0 <= d < rank for d in block_map):
        raise ValueError(f"block map {block_map} names a dimension outside rank {rank}")
    block_sizes = [levels[order[rank + k]].dense_size for k in range(len(block_map))]
    if any(b <= 0 for b in block_sizes):
        raise ValueError(f"block sizes {block_sizes} must be positive")
    dense_count = math.prod(shape)
    if dense_count > _MAX_DENSIFY_RATIO * values.size + 2**20:
        raise ValueError(
            f"a dense shape {list(shape)} for {values.size} stored values is implausibly large"
        )
    parents = np.zeros(1, np.int64)  # per partial coordinate: its position in the level
    coords = np.zeros((1, 0), np.int64)
    for level, meta in enumerate(levels):
        if meta.format == DENSE:
            size = meta.dense_size
            if size < 0 or parents.size * size > dense_count:
                raise ValueError(f"level {level} has an implausible dense size {size}")
            children = np.tile(np.arange(size, dtype=np.int64), parents.size)
            parents = np.repeat(parents, size) * size + children
            coords = np.concatenate([np.repeat(coords, size, axis=0), children[:, None]], axis=1)
        elif meta.format == SPARSE_CSR:
            segments, indices = meta.segments, meta.indices
            if parents.size and (parents.max() + 1 >= segments.size):
                raise ValueError(f"level {level} has too few segments")
            starts, ends = segments[parents], segments[parents + 1]
            counts = ends - starts
            if (counts < 0).any() or (ends > indices.size).any():
                raise ValueError(f"level {level} has inconsistent segments")
            total_children = int(counts.sum())
            if total_children > values.size:
                raise ValueError(f"level {level} selects more elements than are stored")
            offsets = np.repeat(ends - counts.cumsum(), counts)
            positions = np.arange(total_children, dtype=np.int64) + offsets
            coords = np.concatenate(
                [np.repeat(coords, counts, axis=0), indices[positions][:, None]], axis=1
            )
            parents = positions
        else:
            raise ValueError(f"level {level} has an unknown format {meta.format}")
    if parents.size > values.size:
        raise ValueError(f"the sparse layout has {parents.size} elements, {values.size} stored")
    original = np.zeros((parents.size, rank), np.int64)
    for level in range(rank):
        original[:, order[level]] = coords[:, level]
    for level in range(rank, total):
        block = order[level] - rank
        if not 0 <= block < len(block_map):
            raise ValueError(f"traversal level {level} is not a block dimension")
        dim = block_map[block]
        original[:, dim] = original[:, dim] * block_sizes[block] + coords[:, level]
    if ((original < 0) | (original >= np.asarray(shape, np.int64))).any():
        raise ValueError("a sparse index lies outside the dense shape")
    dense = np.zeros(dense_count, values.dtype)
    if parents.size:
        dense[np.ravel_multi_index(original.T, tuple(shape))] = values[: parents.size]
    return dense.reshape(shape)
