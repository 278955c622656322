"""Several-result ops and run-time int64 indices on the OpenCL target, through `irc.compile`.

A split whose pieces feed other kernels (planned buffers written by one launch, `writes`
= number of pieces) and a gather on int64 indices given at run time (8-byte argument
buffers) must run wholly on the device and match the reference target.
"""

from __future__ import annotations

import numpy as np
import pytest
from opencl_support import needs_device
from xdsl.parser import Parser

from irc.compiler import compile as irc_compile
from irc.context import make_context
from irc.dialects import delegate, ocl

pytestmark = pytest.mark.usefixtures("fresh_cache")

RNG = np.random.default_rng(7)

GRAPH = """
func.func @main(%x: tensor<1x4x5x6xf32>, %i: tensor<3xi64>)
    -> (tensor<1x4x5x2xf32>, tensor<1x4x5x3xf32>, tensor<1x4x3x6xf32>) {
  %a, %b, %c = nn.split %x axis = 3 sizes = [2, 1, 3]
      : tensor<1x4x5x6xf32> -> tensor<1x4x5x2xf32>, tensor<1x4x5x1xf32>, tensor<1x4x5x3xf32>
  %s = nn.mul %a, %b : tensor<1x4x5x2xf32>, tensor<1x4x5x1xf32> -> tensor<1x4x5x2xf32>
  %r = nn.relu %c : tensor<1x4x5x3xf32> -> tensor<1x4x5x3xf32>
  %g = nn.gather %x, %i axis = 2 : tensor<1x4x5x6xf32>, tensor<3xi64> -> tensor<1x4x3x6xf32>
  func.return %s, %r, %g : tensor<1x4x5x2xf32>, tensor<1x4x5x3xf32>, tensor<1x4x3x6xf32>
}
"""


@needs_device
def test_split_pieces_feed_kernels_and_int64_indices_run_on_device() -> None:
    module = Parser(make_context(), GRAPH, "graph.mlir").parse_module()
    model = irc_compile(module, targets=["opencl"])
    reference = irc_compile(module, targets=["reference"])
    executables = [op for op in model.module.walk() if isinstance(op, delegate.ExecutableOp)]
    assert [e.target.data for e in executables] == ["opencl"]
    assert [op.name for op in model.module.walk() if op.name.startswith("nn.")] == []
    launches = [op for op in model.module.walk() if isinstance(op, ocl.LaunchOp)]
    split = [launch for launch in launches if launch.written_count == 3]
    assert len(split) == 1
    assert len(split[0].written) == 3
    assert all(name.startswith("b") for name in split[0].written)
    x = RNG.standard_normal((1, 4, 5, 6)).astype(np.float32)
    for indices in ([4, 0, -2], [-5, 3, 3]):
        inputs = dict(zip(model.input_names, [x, np.array(indices, np.int64)], strict=True))
        got, want = model.run(inputs), reference.run(inputs)
        assert got.keys() == want.keys()
        for key, ref in want.items():
            np.testing.assert_allclose(got[key], ref, rtol=1e-4, atol=1e-5, err_msg=key)
