"""Write small ``.tflite`` flatbuffers and run them with TFLite's reference kernels.

Test-support module (not part of the package).  It builds models with the ``tflite`` package's
generated flatbuffer builder functions (schema version 3) and runs them with
``ai_edge_litert.interpreter.Interpreter(..., experimental_op_resolver_type=BUILTIN_REF)`` —
TFLite's *reference* kernels, the semantics irc implements.

API (stable; other tests rely on it)::

    from tflite_builder import T, Op, build_model, build_op_model, quantize, run_model, run_op

(pytest puts tests/ on sys.path — there is no tests/__init__.py — so test modules import it
as ``tflite_builder``.)

    T(shape, dtype="int8", scale=None, zero_point=None, quantized_dimension=0,
      data=None, name="")
        A tensor.  ``dtype`` is a numpy dtype name ("int8", "uint8", "int16", "int32",
        "int64", "float32", "bool").  ``scale``/``zero_point`` are scalars (per-tensor) or
        sequences (per-axis along ``quantized_dimension``); ``None`` = not quantized.
        ``data`` (array-like) makes it a constant with a buffer; it is cast to ``dtype``.

    build_op_model(op, inputs, outputs, options=None, *, version=1) -> bytes
        One operator.  ``op`` is a BuiltinOperator name ("CONV_2D") or code.  ``inputs`` may
        contain ``None`` for omitted optional inputs (index -1).  Tensors without ``data``
        among ``inputs`` are the model inputs, in order; ``outputs`` are the model outputs.
        ``options`` is ``(table_name, {field: value})``, e.g.
        ``("Conv2DOptions", {"padding": "SAME", "stride_w": 2, "stride_h": 2,
        "fused_activation_function": "RELU6"})``.  Field names are the schema's snake_case
        names (or the generated CamelCase ones); list values become int32 vectors
        (``("ReshapeOptions", {"new_shape": [1, 8]})``); string values of
        ``fused_activation_function`` / ``padding`` / ``mode`` are looked up in
        ActivationFunctionType / Padding / MirrorPadMode.  Plain ints and bools pass through.
        Tables from the ``BuiltinOptions2`` union (StableHLO*) are not supported.

    build_model(tensors, operators, inputs, outputs) -> bytes
        General form: ``tensors`` a list of T, ``operators`` a list of
        ``Op(op, inputs=[tensor indices, -1 for none], outputs=[...], options=None, version=1)``,
        ``inputs``/``outputs`` the subgraph's tensor indices.

    run_model(model: bytes, inputs: Sequence[np.ndarray], *, reference=True) -> list[np.ndarray]
        Runs with BUILTIN_REF (``reference=False``: TFLite's optimized builtin kernels,
        BUILTIN_WITHOUT_DEFAULT_DELEGATES, i.e. without the XNNPACK delegate), feeding
        ``inputs`` in subgraph-input order (cast to each input's dtype; shapes must match),
        returning the outputs in subgraph-output order.

    run_op(op, inputs, outputs, options=None, *, feed, version=1, reference=True)
        ``run_model(build_op_model(...), feed)``.

    quantize(x, scale, zero_point, dtype="int8") -> np.ndarray
        TFLite's float -> quantized rounding (round half away from zero, saturate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import flatbuffers
import numpy as np
import tflite

__all__ = ["Op", "T", "build_model", "build_op_model", "quantize", "run_model", "run_op"]

_TENSOR_TYPES = {
    "float32": tflite.TensorType.FLOAT32,
    "float16": tflite.TensorType.FLOAT16,
    "int32": tflite.TensorType.INT32,
    "uint8": tflite.TensorType.UINT8,
    "int64": tflite.TensorType.INT64,
    "bool": tflite.TensorType.BOOL,
    "int16": tflite.TensorType.INT16,
    "int8": tflite.TensorType.INT8,
    "float64": tflite.TensorType.FLOAT64,
}

_ENUM_FIELDS = {
    "FusedActivationFunction": tflite.ActivationFunctionType,
    "Padding": tflite.Padding,
    "Mode": tflite.MirrorPadMode,
}


@dataclass
class T:
    """A tensor of the model (see the module docstring)."""

    shape: Sequence[int]
    dtype: str = "int8"
    scale: float | Sequence[float] | None = None
    zero_point: int | Sequence[int] | None = None
    quantized_dimension: int = 0
    data: object = None
    name: str = ""


@dataclass
class Op:
    """One operator of a model built with :func:`build_model`."""

    op: str | int
    inputs: Sequence[int]
    outputs: Sequence[int]
    options: tuple[str, dict] | None = None
    version: int = 1


@dataclass
class _Builder:
    b: flatbuffers.Builder = field(default_factory=lambda: flatbuffers.Builder(1024))

    def int32_vector(self, values) -> int:
        return self.b.CreateNumpyVector(np.asarray(values, dtype=np.int32).reshape(-1))

    def int64_vector(self, values) -> int:
        return self.b.CreateNumpyVector(np.asarray(values, dtype=np.int64).reshape(-1))

    def float_vector(self, values) -> int:
        return self.b.CreateNumpyVector(np.asarray(values, dtype=np.float32).reshape(-1))


def _camel(name: str) -> str:
    if "_" not in name and name[:1].isupper():
        return name
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _opcode(op: str | int) -> int:
    if isinstance(op, str):
        return getattr(tflite.BuiltinOperator, op)
    return int(op)


def _options(bb: _Builder, options: tuple[str, dict]) -> tuple[int, int]:
    table, fields = options
    b = bb.b
    # Vectors must be created before the table is started.
    values = {}
    for key, value in fields.items():
        camel = _camel(key)
        if isinstance(value, (list, tuple, np.ndarray)):
            value = bb.int32_vector(value)
        elif isinstance(value, str):
            value = getattr(_ENUM_FIELDS[camel], value.upper())
        values[camel] = value
    getattr(tflite, f"{table}Start")(b)
    for camel, value in values.items():
        getattr(tflite, f"{table}Add{camel}")(b, value)
    offset = getattr(tflite, f"{table}End")(b)
    return getattr(tflite.BuiltinOptions, table), offset


def _quantization(bb: _Builder, t: T) -> int | None:
    if t.scale is None:
        return None
    scales = np.atleast_1d(np.asarray(t.scale, dtype=np.float32))
    zps = np.atleast_1d(np.asarray(0 if t.zero_point is None else t.zero_point, dtype=np.int64))
    if zps.size == 1 and scales.size > 1:
        zps = np.repeat(zps, scales.size)
    scale_vec = bb.float_vector(scales)
    zp_vec = bb.int64_vector(zps)
    b = bb.b
    tflite.QuantizationParametersStart(b)
    tflite.QuantizationParametersAddScale(b, scale_vec)
    tflite.QuantizationParametersAddZeroPoint(b, zp_vec)
    tflite.QuantizationParametersAddQuantizedDimension(b, t.quantized_dimension)
    return tflite.QuantizationParametersEnd(b)


def build_model(
    tensors: Sequence[T], operators: Sequence[Op], inputs: Sequence[int], outputs: Sequence[int]
) -> bytes:
    """Serialise a one-subgraph model (see the module docstring)."""
    bb = _Builder()
    b = bb.b

    # Buffers: 0 is the empty sentinel; each constant tensor gets its own.
    buffer_data: list[bytes | None] = [None]
    tensor_buffer: list[int] = []
    for t in tensors:
        if t.data is None:
            buffer_data.append(None)
        else:
            arr = np.asarray(t.data).astype(np.dtype(t.dtype))
            if arr.size != int(np.prod(t.shape, dtype=np.int64)):
                n = arr.size
                raise ValueError(f"tensor {t.name!r}: {n} data elements for shape {t.shape}")
            buffer_data.append(np.ascontiguousarray(arr).tobytes())
        tensor_buffer.append(len(buffer_data) - 1)

    buffer_offsets = []
    for data in buffer_data:
        vec = b.CreateNumpyVector(np.frombuffer(data, dtype=np.uint8)) if data else None
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        buffer_offsets.append(tflite.BufferEnd(b))

    tensor_offsets = []
    for i, t in enumerate(tensors):
        name = b.CreateString(t.name or f"t{i}")
        shape = bb.int32_vector(list(t.shape))
        quant = _quantization(bb, t)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, _TENSOR_TYPES[np.dtype(t.dtype).name])
        tflite.TensorAddBuffer(b, tensor_buffer[i])
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        tensor_offsets.append(tflite.TensorEnd(b))

    codes: list[tuple[int, int]] = []
    op_offsets = []
    for op in operators:
        key = (_opcode(op.op), op.version)
        if key not in codes:
            codes.append(key)
        opts = _options(bb, op.options) if op.options is not None else None
        ins = bb.int32_vector(list(op.inputs))
        outs = bb.int32_vector(list(op.outputs))
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, codes.index(key))
        tflite.OperatorAddInputs(b, ins)
        tflite.OperatorAddOutputs(b, outs)
        if opts is not None:
            tflite.OperatorAddBuiltinOptionsType(b, opts[0])
            tflite.OperatorAddBuiltinOptions(b, opts[1])
        op_offsets.append(tflite.OperatorEnd(b))

    code_offsets = []
    for code, version in codes:
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddVersion(b, version)
        code_offsets.append(tflite.OperatorCodeEnd(b))

    def table_vector(start, offsets) -> int:
        start(b, len(offsets))
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    tensors_vec = table_vector(tflite.SubGraphStartTensorsVector, tensor_offsets)
    ops_vec = table_vector(tflite.SubGraphStartOperatorsVector, op_offsets)
    in_vec = bb.int32_vector(list(inputs))
    out_vec = bb.int32_vector(list(outputs))
    sg_name = b.CreateString("main")
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors_vec)
    tflite.SubGraphAddInputs(b, in_vec)
    tflite.SubGraphAddOutputs(b, out_vec)
    tflite.SubGraphAddOperators(b, ops_vec)
    tflite.SubGraphAddName(b, sg_name)
    subgraph = tflite.SubGraphEnd(b)

    subgraphs_vec = table_vector(tflite.ModelStartSubgraphsVector, [subgraph])
    codes_vec = table_vector(tflite.ModelStartOperatorCodesVector, code_offsets)
    buffers_vec = table_vector(tflite.ModelStartBuffersVector, buffer_offsets)
    desc = b.CreateString("irc tests/tflite_builder")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, buffers_vec)
    model = tflite.ModelEnd(b)
    b.Finish(model, file_identifier=b"TFL3")
    return bytes(b.Output())


def build_op_model(
    op: str | int,
    inputs: Sequence[T | None],
    outputs: Sequence[T],
    options: tuple[str, dict] | None = None,
    *,
    version: int = 1,
) -> bytes:
    """A model with one operator (see the module docstring)."""
    tensors: list[T] = []
    op_inputs: list[int] = []
    graph_inputs: list[int] = []
    for t in inputs:
        if t is None:
            op_inputs.append(-1)
            continue
        op_inputs.append(len(tensors))
        if t.data is None:
            graph_inputs.append(len(tensors))
        tensors.append(t)
    op_outputs = list(range(len(tensors), len(tensors) + len(outputs)))
    tensors.extend(outputs)
    return build_model(
        tensors, [Op(op, op_inputs, op_outputs, options, version)], graph_inputs, op_outputs
    )


def run_model(
    model: bytes, inputs: Sequence[np.ndarray], *, reference: bool = True
) -> list[np.ndarray]:
    """Run ``model`` on ``inputs`` (subgraph-input order); outputs in subgraph-output order."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = (
        OpResolverType.BUILTIN_REF
        if reference
        else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    interp = Interpreter(model_content=model, experimental_op_resolver_type=resolver)
    interp.allocate_tensors()
    details = interp.get_input_details()
    if len(details) != len(inputs):
        raise ValueError(f"model takes {len(details)} inputs, got {len(inputs)}")
    for d, x in zip(details, inputs, strict=True):
        interp.set_tensor(d["index"], np.ascontiguousarray(np.asarray(x).astype(d["dtype"])))
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def run_op(
    op: str | int,
    inputs: Sequence[T | None],
    outputs: Sequence[T],
    options: tuple[str, dict] | None = None,
    *,
    feed: Sequence[np.ndarray],
    version: int = 1,
    reference: bool = True,
) -> list[np.ndarray]:
    """Build a one-operator model and run it on ``feed``."""
    model = build_op_model(op, inputs, outputs, options, version=version)
    return run_model(model, feed, reference=reference)


def quantize(x, scale, zero_point, dtype: str = "int8") -> np.ndarray:
    """TFLite's quantization: round half away from zero, add the zero point, saturate."""
    info = np.iinfo(np.dtype(dtype))
    q = np.trunc(np.asarray(x, dtype=np.float64) / scale + np.copysign(0.5, x)) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)
