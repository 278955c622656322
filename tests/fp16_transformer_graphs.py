"""float16 conversions of the transformer test graphs (test-support module).

`to_float16` does what onnxconverter_common's `convert_float_to_float16(model,
keep_io_types=True)` does to the graphs of `transformer_graphs` and `zoo_graphs`
(onnxconverter_common is not installed): float32 initializers, `Constant` values and
`ConstantOfShape` fills become float16, with values beyond float16's range clipped to
+-65504 and nonzero ones below its smallest subnormal to +-5.96e-8 (as its
`convert_np_to_float16` does: the exporters' `finfo(float32).min` mask fill becomes
-65504, not -inf); `Cast(to=FLOAT)` inside the graph casts to FLOAT16; every float32 value
becomes float16, and the graph's float32 inputs and outputs stay float32 through a
`Cast(to=FLOAT16)` after each input and a `Cast(to=FLOAT)` before each output.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["half_tensor", "to_float16"]

MAX_HALF = 65504.0
MIN_POSITIVE_HALF = 5.96e-08


def half_tensor(tensor: onnx.TensorProto) -> onnx.TensorProto:
    """`tensor` as float16 when it is float32 (clipped as onnxconverter_common clips), else
    unchanged."""
    if tensor.data_type != TensorProto.FLOAT:
        return tensor
    values = numpy_helper.to_array(tensor).astype(np.float32)
    tiny = (values != 0) & (np.abs(values) < MIN_POSITIVE_HALF)
    values = np.where(tiny, np.sign(values) * MIN_POSITIVE_HALF, values)
    values = np.clip(values, -MAX_HALF, MAX_HALF)
    return numpy_helper.from_array(values.astype(np.float16), tensor.name)


def _convert_node(node: onnx.NodeProto) -> None:
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.TENSOR:
            attribute.t.CopyFrom(half_tensor(attribute.t))
        if node.op_type == "Cast" and attribute.name == "to" and attribute.i == TensorProto.FLOAT:
            attribute.i = TensorProto.FLOAT16


def to_float16(model: onnx.ModelProto) -> onnx.ModelProto:
    """The float16 conversion of `model` (module docstring); checked with onnx's checker."""
    converted = onnx.ModelProto()
    converted.CopyFrom(model)
    graph = converted.graph
    for i, init in enumerate(graph.initializer):
        graph.initializer[i].CopyFrom(half_tensor(init))
    floats = [i for i in graph.input if i.type.tensor_type.elem_type == TensorProto.FLOAT]
    renamed = {i.name: f"{i.name}_fp16" for i in floats}
    outputs = {
        o.name: f"{o.name}_fp16"
        for o in graph.output
        if o.type.tensor_type.elem_type == TensorProto.FLOAT
    }
    casts_in = [
        helper.make_node("Cast", [name], [half], to=TensorProto.FLOAT16)
        for name, half in renamed.items()
    ]
    casts_out = [
        helper.make_node("Cast", [half], [name], to=TensorProto.FLOAT)
        for name, half in outputs.items()
    ]
    nodes = []
    for node in graph.node:
        new = onnx.NodeProto()
        new.CopyFrom(node)
        new.input[:] = [renamed.get(n, n) for n in node.input]
        new.output[:] = [outputs.get(n, n) for n in node.output]
        _convert_node(new)
        nodes.append(new)
    del graph.node[:]
    graph.node.extend([*casts_in, *nodes, *casts_out])
    del graph.value_info[:]
    onnx.checker.check_model(converted)
    return converted
