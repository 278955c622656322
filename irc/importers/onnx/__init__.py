"""Import ONNX models (protobuf, via the `onnx` package) into the `nn` dialect.

`import_onnx(data, path, bind=..., input_shapes=...)` parses and checks the model, upgrades
models older than opset 11 to opset 13 (`onnx.version_converter`), gives every graph input a
static shape, and converts the nodes in order, one *converter* per ONNX op type. The result is
`func.func @main` (ONNX layouts as they are: NCHW data, OIHW conv filters, IOHW
ConvTranspose filters, all with ``layout = "NCHW"``), located by node names. Unsupported nodes
are collected and reported together in one `ModelImportError`.

Converter API
=============

Converters live in a registry (`irc.importers.onnx.registry`, the one module a converter
module imports besides `helpers`) that converter modules extend::

    CONVERTERS: dict[str, Converter]        # ONNX op type -> converter

    @converter("Relu", "Sigmoid")           # ai.onnx ops; "com.microsoft.Gelu" for a domain
    def convert_activation(ctx: ConversionContext, node: onnx.NodeProto) -> Results:
        x = ctx.value(node.input[0])
        return [ctx.result(nn.ReluOp.make(x))]

A `Converter` is ``(ctx, node) -> Sequence[SSAValue | np.ndarray | None]``, one entry per node
output (a shorter list leaves the trailing outputs absent):

* an `SSAValue`: the output is that value (usually the result of an op given to `ctx.emit`);
* an `np.ndarray`: the output is a *compile-time constant*. It is kept in a table of folded
  tensors and only becomes an `nn.constant` when an `nn` op needs it (`ctx.value`), so shape
  computations (Shape -> Gather -> Concat -> Reshape ...) fold away in numpy. Converters fold
  whenever all their inputs are constants (`ctx.const(name)` is not None);
* `None`: the output is not produced (e.g. Dropout's mask). A node that later uses it is an
  error (skipped silently instead when unsupported nodes are being reported anyway).

Any other exception from a converter (a `VerifyException` from `Op.make`, a bug) becomes a
`ModelImportError` naming the node.

An op type registers once (a second registration raises `ValueError`). Keys are op types
of the default domain (``""`` / ``"ai.onnx"``); ops of another domain register as
``"<domain>.<op type>"``.

`ConversionContext`, the converter's view of the import (see its methods for details):

* `ctx.opset`: the model's ai.onnx opset version (>= 11, after any upgrade);
  `ctx.source_opset`: the opset before the upgrade; `ctx.path`: the model's file name.
* `ctx.input(node, i)`: the name of input `i` ("" when absent); `ctx.has(name)`: a non-empty
  name, i.e. an optional input that is present.
* `ctx.value(name)`: the SSA value of a tensor, materialising a folded constant as an
  `nn.constant` (once per tensor).
* `ctx.const(name)`: the folded constant (`np.ndarray`) or None when only known at run time;
  `ctx.consts_of(node)`: all input constants (None for absent optional inputs), or None.
* `ctx.attrs(node)`: the node's attributes decoded to Python (`onnx.helper.
  get_attribute_value`; strings as `str`, tensors as `np.ndarray`, graphs as `GraphProto`).
* `ctx.shape(name)` (a tuple, -1 for a dynamic dimension), `ctx.element(name)` (the xDSL
  element type), `ctx.dtype(name)` (the numpy dtype).
* `ctx.emit(op)`: insert an op, located by the node's name (or its first output's name);
  `ctx.result(op)` emits and returns the single result; `ctx.constant(array)` emits an
  `nn.constant`.
* `ctx.unsupported(node, reason)`: record the node as unsupported and return its (absent)
  outputs: ``return ctx.unsupported(node, "mode 'cubic'")``. Import goes on so that every
  unsupported node is reported at the end, in one message. From a helper deep inside a
  converter, ``raise Unsupported("mode 'cubic'")`` does the same. Nodes that only consume
  outputs of unsupported nodes are skipped silently.
* `ctx.error(node, message)`: a `ModelImportError` for a malformed model
  (``raise ctx.error(node, "expects 3 inputs")``).
* `ctx.is_used(name)`: whether a node or a graph output reads the tensor.
* `ctx.define(name, value)` and `ctx.convert_nodes(nodes)`: bind a name, convert a list of
  nodes in the current scope (inline a subgraph, e.g. the taken branch of an `If`).

Modules: `registry` (`CONVERTERS`, `converter`), `context` (`ConversionContext`), `dtypes`
(element types), `helpers` (what converters share: `const_ints`, `const_floats`,
`static_shape`, `reshape`, `cast_value`, `cast_array`, `normalize_axis`), the converter modules
`ops` (convolution, matrix products, pooling, normalisation, elementwise, reductions, softmax),
`shape` (constants, data movement, resize) and `extra` (recurrent layers, `If`, logic,
normalisation layers, QDQ), `untrusted` (checks of the model as untrusted input) and `driver`
(`import_onnx`, which imports every converter module). A new converter module imports
`registry` (and `helpers`) only, and is added to the driver's imports.

Element types: float32, float16, float64, int8, int16, int32, int64, uint8 and bool
(`i1`). External data is read only from inside the model's folder, and every size is checked
before allocation (`untrusted`). No model content is ever evaluated as code.
"""

from irc.importers.common import Unsupported
from irc.importers.onnx.context import ConversionContext, Converter, Results
from irc.importers.onnx.driver import import_onnx
from irc.importers.onnx.dtypes import element_for_dtype
from irc.importers.onnx.registry import CONVERTERS, converter

__all__ = [
    "CONVERTERS",
    "ConversionContext",
    "Converter",
    "Results",
    "Unsupported",
    "converter",
    "element_for_dtype",
    "import_onnx",
]
