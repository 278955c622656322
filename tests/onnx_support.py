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
