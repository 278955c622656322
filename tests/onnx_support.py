"""Run small ONNX graphs with onnxruntime, the expected values of reference-kernel tests.

Test-support module (not part of the package); pytest puts tests/ on sys.path, so test
modules import it as ``onnx_support``::

    from onnx_support import run_onnx

    (y,) = run_onnx(helper.make_node("Relu", ["X"], ["Y"]), {"X": x})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import onnxruntime
from onnx import helper, numpy_helper


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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10  # onnx 1.23 writes 14, which onnxruntime 1.31 refuses
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # errors only: some tests use attributes ONNX deprecates
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, dict(inputs))
