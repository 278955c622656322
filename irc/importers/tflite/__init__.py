"""Import a `.tflite` model into the `nn` dialect.

`import_tflite(data, path)` reads subgraph 0 of the flatbuffer (`reader`), maps every
operator to `nn`/`quant` ops (`ops` and `shape_ops`, one converter per operator)
and returns a module with `func.func @main`. Conventions (docs/design.md §2):

* data stays NHWC with OHWI filters; a depthwise filter `[1, H, W, C*M]` becomes the grouped
  conv2d filter `[C*M, H, W, 1]` (its per-axis quantized dimension 3 becomes 0);
* SAME padding is resolved into explicit `pads = [top, left, bottom, right]` (the odd cell at
  the bottom/right, as TFLite's ComputePaddingHeightWidth), fused activations become the
  `activation` property;
* quantization parameters become `!quant.uniform` element types (per-axis along the tensor's
  `quantized_dimension`); int32 biases keep their quantized i32 type;
* tensor names survive: graph inputs/outputs as `irc.input_names`/`irc.output_names`, every op
  is located by the name of its operator's first output tensor (an empty or repeated tensor
  name becomes `name#index` in the signature, so that names stay distinct);
* every emitted op is verified at once, and every operator output is checked against the
  shape and type the model declares, so an inconsistency is reported at its operator.

Constants are emitted where first used. `bind` replaces graph inputs by constants;
`input_shapes` fixes dimensions that the model's shape signature leaves dynamic (-1); without
it a dynamic dimension takes the model's default size (batch 1) with a warning. Bound values
of quantized inputs are their stored integers.

Operators without an `nn` equivalent (and unsupported option values) are collected and
reported together in one `ModelImportError`; a corrupt file or an inconsistent graph is a
`ModelImportError` naming the file and the operator.

Modules: `reader` (the flatbuffer, checked as untrusted input), `slices` (StridedSlice
arithmetic), `context` (`TFLiteImporter`, the converters' view of the import), `registry`
(`CONVERTERS`, `converter`), `helpers` (what converters share), the converter modules `ops`
and `shape_ops`, and `driver` (`import_tflite`, which imports every converter module). A new
converter module imports `registry` (and `helpers`) only, and is added to the driver's imports.
"""

from irc.importers.common import Unsupported
from irc.importers.tflite.driver import import_tflite

__all__ = ["Unsupported", "import_tflite"]
