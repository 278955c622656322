"""ONNX models for tests, and small ONNX graphs run with onnxruntime (the expected values of
reference-kernel tests).

Test-support module (not part of the package); pytest puts tests/ on sys.path, so test
modules import it as ``onnx_support``::

    from onnx_support import make_onnx_model, run_onnx

    model = make_onnx_model(graph, opset=17)  # IR version ONNX_IR_VERSION
    (y,) = run_onnx(helper.make_node("Relu", ["X"], ["Y"]), {"X": x})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

ONNX_IR_VERSION = 10
"""The IR version of the models tests write. `onnx.helper.make_model` writes its own
package's latest (14 from onnx 1.23), which older onnxruntime releases refuse ("Unsupported
model IR version: 14, max supported IR version: 13" from onnxruntime 1.30); 10 (onnx 1.16)
holds every opset up to 21 and loads on every onnxruntime a user may have."""


def make_onnx_model(
    graph: onnx.GraphProto, opset: int = 18, *, domains: Mapping[str, int] | None = None
) -> onnx.ModelProto:
    """`graph` as a model of IR version `ONNX_IR_VERSION` importing the default domain at
    `opset` (and each of `domains`, name to version)."""
    opsets = [helper.make_opsetid("", opset)]
    opsets += [helper.make_opsetid(name, version) for name, version in (domains or {}).items()]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = ONNX_IR_VERSION
    return model


def run_onnx(
    nodes: onnx.NodeProto | Sequence[onnx.NodeProto],
    inputs: Mapping[str, np.ndarray],
    *,
    constants: Mapping[str, np.ndarray] | None = None,
    opset: int = 18,
) -> list[np.ndarray]:
    """Run a graph of `nodes` on onnxruntime's CPU provider; returns all its outputs.

    `inputs` are the graph inputs, typed like the arrays, and what is fed to them; `constants`
    become initializers. The graph's outputs are the last node's outputs, by name.
    """
    nodes = [nodes] if isinstance(nodes, onnx.NodeProto) else list(nodes)
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
            )
            for name, a in inputs.items()
        ],
        [helper.make_empty_tensor_value_info(name) for name in nodes[-1].output],
        initializer=[numpy_helper.from_array(a, n) for n, a in (constants or {}).items()],
    )
    import onnxruntime  # a test dependency: only the tests that run graphs need it

    model = make_onnx_model(graph, opset)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # errors only: some tests use attributes ONNX deprecates
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, dict(inputs))


# (op type, domain) -> (index of the weight input, index of its zero point)
_WEIGHT_INPUTS = {
    ("MatMulInteger", ""): (1, 3),
    ("ConvInteger", ""): (1, 3),
    ("QLinearMatMul", ""): (3, 5),
    ("QLinearConv", ""): (3, 5),
    ("QGemm", "com.microsoft"): (3, 5),
    ("DynamicQuantizeMatMul", "com.microsoft"): (1, 3),
}


def exact_on_onnxruntime(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with every constant int8 weight of a product with uint8 (or float) activations
    stored as uint8 (`w + 128`, its zero point `+ 128`): the same integers, so the same
    results, but computed exactly by onnxruntime on every CPU.

    onnxruntime's uint8 x int8 kernels on x86-64 without VNNI (AVX2, AVX-512 F/BW) multiply
    with `vpmaddubsw`, which adds pairs of products into int16 and saturates: with weights
    near +-127 and activations near 255 a result is off by thousands of steps (its quantization
    guide's "reduce_range" advice). Its uint8 x uint8 kernels widen to int16 first and never
    saturate. irc computes the exact sums, as onnxruntime does with VNNI; this rewrite makes
    onnxruntime the exact oracle on AVX2 machines too. Other nodes are kept as they are.
    """
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    types = {v.name: v.type.tensor_type.elem_type for v in graph.input}
    inferred = onnx.shape_inference.infer_shapes(model)
    for value in [*inferred.graph.value_info, *inferred.graph.output]:
        types.setdefault(value.name, value.type.tensor_type.elem_type)
    types.update({t.name: t.data_type for t in graph.initializer})
    u8, i8 = onnx.TensorProto.UINT8, onnx.TensorProto.INT8

    def as_uint8(name: str) -> str:
        new = f"{name}__as_uint8"
        if new not in initializers:
            values = numpy_helper.to_array(initializers[name]).astype(np.int16) + 128
            tensor = numpy_helper.from_array(values.astype(np.uint8), new)
            graph.initializer.append(tensor)
            initializers[new] = tensor
        return new

    for node in graph.node:
        where = _WEIGHT_INPUTS.get((node.op_type, node.domain))
        if where is None or len(node.input) <= where[0]:
            continue
        weight, zero_at = node.input[where[0]], where[1]
        if weight not in initializers or initializers[weight].data_type != i8:
            continue
        activation = types.get(node.input[0])
        if activation not in (u8, onnx.TensorProto.FLOAT):
            continue
        zero_point = node.input[zero_at] if len(node.input) > zero_at else ""
        if zero_point and zero_point not in initializers:
            continue  # a run-time zero point: keep the node
        while len(node.input) <= zero_at:
            node.input.append("")
        node.input[where[0]] = as_uint8(weight)
        if zero_point:
            node.input[zero_at] = as_uint8(zero_point)
        else:
            name = f"{weight}__zero_point_128"
            graph.initializer.append(numpy_helper.from_array(np.asarray(128, np.uint8), name))
            node.input[zero_at] = name
    return model
