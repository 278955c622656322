// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// Round trip of every `nn` op: custom form -> custom form, and custom -> generic -> custom,
// both checked by the same CHECK lines. Covers every property (printed when it differs from
// its default, elided when equal to it), the optional bias operand, variadic operands and
// results, dynamic dimensions and quantized tensors (per tensor and per axis).

// Constants: float, integer, bool, unsigned, f16, splat, hex, quantized per tensor and
// per axis (the storage data, then the quantized type after `->`), an attribute dictionary.
// CHECK-LABEL: func.func @constant(
// CHECK:           %[[F:.*]] = nn.constant dense<[1.500000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK:           %[[S:.*]] = nn.constant dense<1.000000e+00> : tensor<2x3xf32>
// CHECK:           %[[B:.*]] = nn.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK:           %[[U:.*]] = nn.constant dense<[0, 255]> : tensor<2xui8>
// CHECK:           %[[H:.*]] = nn.constant {tag = "half"} dense<[5.000000e-01, 2.000000e+00]> : tensor<2xf16>
// CHECK:           %[[X:.*]] = nn.constant dense<[1, -2, 3, 4]> : tensor<4xi32>
// CHECK:           func.return %[[F]], %[[S]], %[[B]], %[[U]], %[[H]], %[[X]]
func.func @constant() -> (tensor<2xf32>, tensor<2x3xf32>, tensor<3xi1>, tensor<2xui8>, tensor<2xf16>, tensor<4xi32>) {
  %f = nn.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %s = nn.constant dense<1.0> : tensor<2x3xf32>
  %b = nn.constant dense<[true, false, true]> : tensor<3xi1>
  %u = nn.constant dense<[0, 255]> : tensor<2xui8>
  %h = nn.constant {tag = "half"} dense<[0.5, 2.0]> : tensor<2xf16>
  %x = nn.constant dense<"0x01000000FEFFFFFF0300000004000000"> : tensor<4xi32>
  func.return %f, %s, %b, %u, %h, %x : tensor<2xf32>, tensor<2x3xf32>, tensor<3xi1>, tensor<2xui8>, tensor<2xf16>, tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @constant_quantized(
// CHECK:           %[[T:.*]] = nn.constant dense<[1, -2]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK:           %[[A:.*]] = nn.constant dense<{{\[\[}}1], [2]]> : tensor<2x1xi8> -> tensor<2x1x!quant.uniform<i8:f32:0, {0.1, 0.2:1}>>
// CHECK:           %[[U:.*]] = nn.constant dense<[0, 128, 255]> : tensor<3xui8> -> tensor<3x!quant.uniform<u8:f32, 0.25:128>>
// CHECK:           func.return %[[T]], %[[A]], %[[U]]
func.func @constant_quantized() -> (tensor<2x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<2x1x!quant.uniform<i8:f32:0, {1.000000e-01, 2.000000e-01:1}>>, tensor<3x!quant.uniform<u8:f32, 2.500000e-01:128>>) {
  %t = nn.constant dense<[1, -2]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 0.5:-3>>
  %a = nn.constant dense<[[1], [2]]> : tensor<2x1xi8> -> tensor<2x1x!quant.uniform<i8:f32:0, {0.1, 0.2:1}>>
  %u = nn.constant dense<[0, 128, 255]> : tensor<3xui8> -> tensor<3x!quant.uniform<u8:f32, 0.25:128>>
  func.return %t, %a, %u : tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x1x!quant.uniform<i8:f32:0, {0.1, 0.2:1}>>, tensor<3x!quant.uniform<u8:f32, 0.25:128>>
}

// -----

// Every property at its default: only the required `layout` is printed, also when the
// defaults are written out.
// CHECK-LABEL: func.func @conv2d_defaults(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x8x8x3xf32>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<4x3x3x3xf32>)
// CHECK:           %[[A:.*]] = nn.conv2d %[[X]], %[[W]] layout = "NHWC" :
// CHECK-SAME:        tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x6x6x4xf32>
// CHECK:           %[[B:.*]] = nn.conv2d %[[X]], %[[W]] layout = "NHWC" :
// CHECK-SAME:        tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x6x6x4xf32>
// CHECK:           func.return %[[A]], %[[B]]
func.func @conv2d_defaults(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>) {
  %a = nn.conv2d %x, %w layout = "NHWC" : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x6x6x4xf32>
  %b = nn.conv2d %x, %w strides = [1, 1] pads = [0, 0, 0, 0] dilations = [1, 1] groups = 1 layout = "NHWC" activation = "none" : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x6x4xf32>
  func.return %a, %b : tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>
}

// -----

// CHECK-LABEL: func.func @conv2d_all_properties(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x3x9x9xf32>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<8x3x3x3xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<8xf32>)
// CHECK:           %[[Y:.*]] = nn.conv2d %[[X]], %[[W]], %[[B]] strides = [2, 2] pads = [1, 0, 0, 1] dilations = [2, 2] layout = "NCHW" activation = "relu6" :
// CHECK-SAME:        tensor<1x3x9x9xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>
// CHECK-SAME:        -> tensor<1x8x3x3xf32>
// CHECK:           func.return %[[Y]]
func.func @conv2d_all_properties(%x: tensor<1x3x9x9xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x3x3xf32> {
  %y = nn.conv2d %x, %w, %b strides = [2, 2] pads = [1, 0, 0, 1] dilations = [2, 2] layout = "NCHW" activation = "relu6" : tensor<1x3x9x9xf32>, tensor<8x3x3x3xf32>, tensor<8xf32> -> tensor<1x8x3x3xf32>
  func.return %y : tensor<1x8x3x3xf32>
}

// -----

// Depthwise (groups = C_in, I = 1) and grouped convolutions.
// CHECK-LABEL: func.func @conv2d_groups(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x5x5x4xf32>,
// CHECK-SAME:      %[[DW:[^:]+]]: tensor<4x3x3x1xf32>,
// CHECK-SAME:      %[[GW:[^:]+]]: tensor<6x1x1x2xf32>)
// CHECK:           %[[D:.*]] = nn.conv2d %[[X]], %[[DW]] pads = [1, 1, 1, 1] groups = 4 layout = "NHWC" :
// CHECK-SAME:        tensor<1x5x5x4xf32>, tensor<4x3x3x1xf32> -> tensor<1x5x5x4xf32>
// CHECK:           %[[G:.*]] = nn.conv2d %[[X]], %[[GW]] groups = 2 layout = "NHWC" :
// CHECK-SAME:        tensor<1x5x5x4xf32>, tensor<6x1x1x2xf32> -> tensor<1x5x5x6xf32>
// CHECK:           func.return %[[D]], %[[G]]
func.func @conv2d_groups(%x: tensor<1x5x5x4xf32>, %dw: tensor<4x3x3x1xf32>, %gw: tensor<6x1x1x2xf32>) -> (tensor<1x5x5x4xf32>, tensor<1x5x5x6xf32>) {
  %d = nn.conv2d %x, %dw pads = [1, 1, 1, 1] groups = 4 layout = "NHWC" : tensor<1x5x5x4xf32>, tensor<4x3x3x1xf32> -> tensor<1x5x5x4xf32>
  %g = nn.conv2d %x, %gw groups = 2 layout = "NHWC" : tensor<1x5x5x4xf32>, tensor<6x1x1x2xf32> -> tensor<1x5x5x6xf32>
  func.return %d, %g : tensor<1x5x5x4xf32>, tensor<1x5x5x6xf32>
}

// -----

// CHECK-LABEL: func.func @conv2d_dynamic(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x?x3xf32>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<4x3x3x3xf32>)
// CHECK:           %[[Y:.*]] = nn.conv2d %[[X]], %[[W]] strides = [2, 2] layout = "NHWC" :
// CHECK-SAME:        tensor<?x?x?x3xf32>, tensor<4x3x3x3xf32> -> tensor<?x?x?x4xf32>
// CHECK:           func.return %[[Y]]
func.func @conv2d_dynamic(%x: tensor<?x?x?x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x?x?x4xf32> {
  %y = nn.conv2d %x, %w strides = [2, 2] layout = "NHWC" : tensor<?x?x?x3xf32>, tensor<4x3x3x3xf32> -> tensor<?x?x?x4xf32>
  func.return %y : tensor<?x?x?x4xf32>
}

// -----

// TFLite int8 convolution: per-tensor activations, a filter quantized per output channel
// (dimension 0 of OHWI), an i32 bias.
// CHECK-LABEL: func.func @conv2d_quantized(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.25, 0.125}>>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<2xi32>)
// CHECK:           %[[Y:.*]] = nn.conv2d %[[X]], %[[W]], %[[B]] layout = "NHWC" activation = "relu" :
// CHECK-SAME:        tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.25, 0.125}>>, tensor<2xi32>
// CHECK-SAME:        -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.75:3>>
// CHECK:           func.return %[[Y]]
func.func @conv2d_quantized(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>, %w: tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.25, 0.125}>>, %b: tensor<2xi32>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.75:3>> {
  %y = nn.conv2d %x, %w, %b layout = "NHWC" activation = "relu" : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.25, 0.125}>>, tensor<2xi32> -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.75:3>>
  func.return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.75:3>>
}

// -----

// CHECK-LABEL: func.func @conv2d_transpose(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x4x4x8xf32>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<4x2x2x8xf32>)
// CHECK:           %[[Y:.*]] = nn.conv2d_transpose %[[X]], %[[W]] strides = [2, 2] layout = "NHWC" :
// CHECK-SAME:        tensor<1x4x4x8xf32>, tensor<4x2x2x8xf32> -> tensor<1x8x8x4xf32>
// CHECK:           func.return %[[Y]]
func.func @conv2d_transpose(%x: tensor<1x4x4x8xf32>, %w: tensor<4x2x2x8xf32>) -> tensor<1x8x8x4xf32> {
  %y = nn.conv2d_transpose %x, %w strides = [2, 2] layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<4x2x2x8xf32> -> tensor<1x8x8x4xf32>
  func.return %y : tensor<1x8x8x4xf32>
}

// -----

// NCHW uses IOHW filters: I = C_in, O = C_out / groups.
// CHECK-LABEL: func.func @conv2d_transpose_all_properties(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x4x3x3xf32>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<4x3x3x3xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<6xf32>)
// CHECK:           %[[Y:.*]] = nn.conv2d_transpose %[[X]], %[[W]], %[[B]] strides = [2, 2] pads = [1, 1, 1, 1] output_padding = [1, 1] groups = 2 layout = "NCHW" activation = "relu" :
// CHECK-SAME:        tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>, tensor<6xf32>
// CHECK-SAME:        -> tensor<1x6x6x6xf32>
// CHECK:           func.return %[[Y]]
func.func @conv2d_transpose_all_properties(%x: tensor<1x4x3x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x6x6xf32> {
  %y = nn.conv2d_transpose %x, %w, %b strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] output_padding = [1, 1] groups = 2 layout = "NCHW" activation = "relu" : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>, tensor<6xf32> -> tensor<1x6x6x6xf32>
  func.return %y : tensor<1x6x6x6xf32>
}

// -----

// Quantized transposed convolutions: the per-channel dimension is O, i.e. 0 in OHWI
// and 1 in IOHW.
// CHECK-LABEL: func.func @conv2d_transpose_quantized(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x2x2x3x!quant.uniform<i8:f32, 0.5>>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<2x2x2x3x!quant.uniform<i8:f32:0, {0.1, 0.2}>>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<2xi32>,
// CHECK-SAME:      %[[XN:[^:]+]]: tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>,
// CHECK-SAME:      %[[WN:[^:]+]]: tensor<3x2x2x2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>)
// CHECK:           %[[Y:.*]] = nn.conv2d_transpose %[[X]], %[[W]], %[[B]] strides = [2, 2] layout = "NHWC" :
// CHECK-SAME:        tensor<1x2x2x3x!quant.uniform<i8:f32, 0.5>>, tensor<2x2x2x3x!quant.uniform<i8:f32:0, {0.1, 0.2}>>, tensor<2xi32>
// CHECK-SAME:        -> tensor<1x4x4x2x!quant.uniform<i8:f32, 1.0>>
// CHECK:           %[[Z:.*]] = nn.conv2d_transpose %[[XN]], %[[WN]] layout = "NCHW" :
// CHECK-SAME:        tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x2x2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>
// CHECK-SAME:        -> tensor<1x2x3x3x!quant.uniform<i8:f32, 1.0>>
// CHECK:           func.return %[[Y]], %[[Z]]
func.func @conv2d_transpose_quantized(%x: tensor<1x2x2x3x!quant.uniform<i8:f32, 0.5>>, %w: tensor<2x2x2x3x!quant.uniform<i8:f32:0, {0.1, 0.2}>>, %b: tensor<2xi32>, %xn: tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>, %wn: tensor<3x2x2x2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>) -> (tensor<1x4x4x2x!quant.uniform<i8:f32, 1.0>>, tensor<1x2x3x3x!quant.uniform<i8:f32, 1.0>>) {
  %y = nn.conv2d_transpose %x, %w, %b strides = [2, 2] layout = "NHWC" : tensor<1x2x2x3x!quant.uniform<i8:f32, 0.5>>, tensor<2x2x2x3x!quant.uniform<i8:f32:0, {0.1, 0.2}>>, tensor<2xi32> -> tensor<1x4x4x2x!quant.uniform<i8:f32, 1.0>>
  %z = nn.conv2d_transpose %xn, %wn layout = "NCHW" : tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x2x2x!quant.uniform<i8:f32:1, {0.1, 0.2}>> -> tensor<1x2x3x3x!quant.uniform<i8:f32, 1.0>>
  func.return %y, %z : tensor<1x4x4x2x!quant.uniform<i8:f32, 1.0>>, tensor<1x2x3x3x!quant.uniform<i8:f32, 1.0>>
}

// -----

// CHECK-LABEL: func.func @fully_connected(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<2x8xf32>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<3x8xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<3xf32>,
// CHECK-SAME:      %[[X3:[^:]+]]: tensor<2x5x8xf32>,
// CHECK-SAME:      %[[XD:[^:]+]]: tensor<?x8xf32>)
// CHECK:           %[[Y:.*]] = nn.fully_connected %[[X]], %[[W]], %[[B]] activation = "relu" :
// CHECK-SAME:        tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK:           %[[Z:.*]] = nn.fully_connected %[[X3]], %[[W]] :
// CHECK-SAME:        tensor<2x5x8xf32>, tensor<3x8xf32> -> tensor<2x5x3xf32>
// CHECK:           %[[D:.*]] = nn.fully_connected %[[XD]], %[[W]], %[[B]] :
// CHECK-SAME:        tensor<?x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<?x3xf32>
// CHECK:           func.return %[[Y]], %[[Z]], %[[D]]
func.func @fully_connected(%x: tensor<2x8xf32>, %w: tensor<3x8xf32>, %b: tensor<3xf32>, %x3: tensor<2x5x8xf32>, %xd: tensor<?x8xf32>) -> (tensor<2x3xf32>, tensor<2x5x3xf32>, tensor<?x3xf32>) {
  %y = nn.fully_connected %x, %w, %b activation = "relu" : tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %z = nn.fully_connected %x3, %w : tensor<2x5x8xf32>, tensor<3x8xf32> -> tensor<2x5x3xf32>
  %d = nn.fully_connected %xd, %w, %b : tensor<?x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<?x3xf32>
  func.return %y, %z, %d : tensor<2x3xf32>, tensor<2x5x3xf32>, tensor<?x3xf32>
}

// -----

// CHECK-LABEL: func.func @fully_connected_quantized(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x4x!quant.uniform<u8:f32, 0.5:128>>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<2x4x!quant.uniform<u8:f32, 0.25:120>>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<2xi32>,
// CHECK-SAME:      %[[XI:[^:]+]]: tensor<1x4x!quant.uniform<i8:f32, 0.5>>,
// CHECK-SAME:      %[[WI:[^:]+]]: tensor<2x4x!quant.uniform<i8:f32:0, {0.1, 0.2}>>)
// CHECK:           %[[Y:.*]] = nn.fully_connected %[[X]], %[[W]], %[[B]] :
// CHECK-SAME:        tensor<1x4x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x4x!quant.uniform<u8:f32, 0.25:120>>, tensor<2xi32>
// CHECK-SAME:        -> tensor<1x2x!quant.uniform<u8:f32, 1.0:128>>
// CHECK:           %[[Z:.*]] = nn.fully_connected %[[XI]], %[[WI]] :
// CHECK-SAME:        tensor<1x4x!quant.uniform<i8:f32, 0.5>>, tensor<2x4x!quant.uniform<i8:f32:0, {0.1, 0.2}>>
// CHECK-SAME:        -> tensor<1x2x!quant.uniform<i8:f32, 1.0>>
// CHECK:           func.return %[[Y]], %[[Z]]
func.func @fully_connected_quantized(%x: tensor<1x4x!quant.uniform<u8:f32, 0.5:128>>, %w: tensor<2x4x!quant.uniform<u8:f32, 0.25:120>>, %b: tensor<2xi32>, %xi: tensor<1x4x!quant.uniform<i8:f32, 0.5>>, %wi: tensor<2x4x!quant.uniform<i8:f32:0, {0.1, 0.2}>>) -> (tensor<1x2x!quant.uniform<u8:f32, 1.0:128>>, tensor<1x2x!quant.uniform<i8:f32, 1.0>>) {
  %y = nn.fully_connected %x, %w, %b : tensor<1x4x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x4x!quant.uniform<u8:f32, 0.25:120>>, tensor<2xi32> -> tensor<1x2x!quant.uniform<u8:f32, 1.0:128>>
  %z = nn.fully_connected %xi, %wi : tensor<1x4x!quant.uniform<i8:f32, 0.5>>, tensor<2x4x!quant.uniform<i8:f32:0, {0.1, 0.2}>> -> tensor<1x2x!quant.uniform<i8:f32, 1.0>>
  func.return %y, %z : tensor<1x2x!quant.uniform<u8:f32, 1.0:128>>, tensor<1x2x!quant.uniform<i8:f32, 1.0>>
}

// -----

// Batch dimensions broadcast; adj_x / adj_y transpose the last two dimensions.
// CHECK-LABEL: func.func @batch_matmul(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<2x3x4xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<2x4x5xf32>,
// CHECK-SAME:      %[[AT:[^:]+]]: tensor<2x4x3xf32>,
// CHECK-SAME:      %[[BT:[^:]+]]: tensor<1x5x4xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x3x4xf32>)
// CHECK:           %[[Y:.*]] = nn.batch_matmul %[[A]], %[[B]] :
// CHECK-SAME:        tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
// CHECK:           %[[Z:.*]] = nn.batch_matmul %[[AT]], %[[BT]] adj_x = true adj_y = true :
// CHECK-SAME:        tensor<2x4x3xf32>, tensor<1x5x4xf32> -> tensor<2x3x5xf32>
// CHECK:           %[[W:.*]] = nn.batch_matmul %[[D]], %[[B]] :
// CHECK-SAME:        tensor<?x3x4xf32>, tensor<2x4x5xf32> -> tensor<?x3x5xf32>
// CHECK:           func.return %[[Y]], %[[Z]], %[[W]]
func.func @batch_matmul(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %at: tensor<2x4x3xf32>, %bt: tensor<1x5x4xf32>, %d: tensor<?x3x4xf32>) -> (tensor<2x3x5xf32>, tensor<2x3x5xf32>, tensor<?x3x5xf32>) {
  %y = nn.batch_matmul %a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  %z = nn.batch_matmul %at, %bt adj_x = true adj_y = true : tensor<2x4x3xf32>, tensor<1x5x4xf32> -> tensor<2x3x5xf32>
  %w = nn.batch_matmul %d, %b adj_x = false : tensor<?x3x4xf32>, tensor<2x4x5xf32> -> tensor<?x3x5xf32>
  func.return %y, %z, %w : tensor<2x3x5xf32>, tensor<2x3x5xf32>, tensor<?x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @batch_matmul_quantized(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<2x3x!quant.uniform<i8:f32, 0.5>>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<3x4x!quant.uniform<i8:f32, 0.25:2>>)
// CHECK:           %[[Y:.*]] = nn.batch_matmul %[[A]], %[[B]] :
// CHECK-SAME:        tensor<2x3x!quant.uniform<i8:f32, 0.5>>, tensor<3x4x!quant.uniform<i8:f32, 0.25:2>>
// CHECK-SAME:        -> tensor<2x4x!quant.uniform<i8:f32, 2.0:-5>>
// CHECK:           func.return %[[Y]]
func.func @batch_matmul_quantized(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5>>, %b: tensor<3x4x!quant.uniform<i8:f32, 0.25:2>>) -> tensor<2x4x!quant.uniform<i8:f32, 2.0:-5>> {
  %y = nn.batch_matmul %a, %b : tensor<2x3x!quant.uniform<i8:f32, 0.5>>, tensor<3x4x!quant.uniform<i8:f32, 0.25:2>> -> tensor<2x4x!quant.uniform<i8:f32, 2.0:-5>>
  func.return %y : tensor<2x4x!quant.uniform<i8:f32, 2.0:-5>>
}

// -----

// Binary arithmetic: numpy broadcasting (dynamic dimensions included), fused activations,
// plain integers.
// CHECK-LABEL: func.func @binary_arithmetic(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<2x3xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<3xf32>,
// CHECK-SAME:      %[[C:[^:]+]]: tensor<2x1xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x3xf32>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<4xi32>)
// CHECK:           %[[ADD:.*]] = nn.add %[[A]], %[[B]] activation = "relu" :
// CHECK-SAME:        tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK:           %[[SUB:.*]] = nn.sub %[[C]], %[[B]] activation = "relu_n1_to_1" :
// CHECK-SAME:        tensor<2x1xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK:           %[[MUL:.*]] = nn.mul %[[B]], %[[C]] activation = "tanh" :
// CHECK-SAME:        tensor<3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
// CHECK:           %[[DIV:.*]] = nn.div %[[A]], %[[C]] activation = "relu6" :
// CHECK-SAME:        tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
// CHECK:           %[[DYN:.*]] = nn.add %[[D]], %[[B]] :
// CHECK-SAME:        tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
// CHECK:           %[[INT:.*]] = nn.div %[[I]], %[[I]] :
// CHECK-SAME:        tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
// CHECK:           func.return %[[ADD]], %[[SUB]], %[[MUL]], %[[DIV]], %[[DYN]], %[[INT]]
func.func @binary_arithmetic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %d: tensor<?x3xf32>, %i: tensor<4xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<?x3xf32>, tensor<4xi32>) {
  %add = nn.add %a, %b activation = "relu" : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %sub = nn.sub %c, %b activation = "relu_n1_to_1" : tensor<2x1xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %mul = nn.mul %b, %c activation = "tanh" : tensor<3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
  %div = nn.div %a, %c activation = "relu6" : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
  %dyn = nn.add %d, %b activation = "none" : tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
  %int = nn.div %i, %i : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return %add, %sub, %mul, %div, %dyn, %int : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<?x3xf32>, tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @binary_other(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<2x3xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<3xf32>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<3xi64>,
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x2x2x3xf32>)
// CHECK:           %[[MAX:.*]] = nn.maximum %[[A]], %[[B]] :
// CHECK-SAME:        tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK:           %[[MIN:.*]] = nn.minimum %[[A]], %[[B]] :
// CHECK-SAME:        tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK:           %[[POW:.*]] = nn.pow %[[A]], %[[B]] :
// CHECK-SAME:        tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK:           %[[SQD:.*]] = nn.squared_difference %[[B]], %[[A]] :
// CHECK-SAME:        tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:           %[[IMAX:.*]] = nn.maximum %[[I]], %[[I]] :
// CHECK-SAME:        tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
// CHECK:           %[[PRELU:.*]] = nn.prelu %[[X]], %[[B]] :
// CHECK-SAME:        tensor<1x2x2x3xf32>, tensor<3xf32> -> tensor<1x2x2x3xf32>
// CHECK:           func.return %[[MAX]], %[[MIN]], %[[POW]], %[[SQD]], %[[IMAX]], %[[PRELU]]
func.func @binary_other(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<3xi64>, %x: tensor<1x2x2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi64>, tensor<1x2x2x3xf32>) {
  %max = nn.maximum %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %min = nn.minimum %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %pow = nn.pow %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %sqd = nn.squared_difference %b, %a : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %imax = nn.maximum %i, %i : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  %prelu = nn.prelu %x, %b : tensor<1x2x2x3xf32>, tensor<3xf32> -> tensor<1x2x2x3xf32>
  func.return %max, %min, %pow, %sqd, %imax, %prelu : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi64>, tensor<1x2x2x3xf32>
}

// -----

// Quantized operands may each have their own scale and zero point.
// CHECK-LABEL: func.func @binary_quantized(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<3x!quant.uniform<i8:f32, 0.25:-2>>,
// CHECK-SAME:      %[[S:[^:]+]]: tensor<3x!quant.uniform<i8:f32, 0.125>>)
// CHECK:           %[[ADD:.*]] = nn.add %[[A]], %[[B]] activation = "relu" :
// CHECK-SAME:        tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.25:-2>>
// CHECK-SAME:        -> tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>
// CHECK:           %[[MUL:.*]] = nn.mul %[[A]], %[[B]] :
// CHECK-SAME:        tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.25:-2>>
// CHECK-SAME:        -> tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>
// CHECK:           %[[SQD:.*]] = nn.squared_difference %[[A]], %[[B]] :
// CHECK-SAME:        tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.25:-2>>
// CHECK-SAME:        -> tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>
// CHECK:           %[[PRELU:.*]] = nn.prelu %[[A]], %[[S]] :
// CHECK-SAME:        tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.125>>
// CHECK-SAME:        -> tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>
// CHECK:           func.return %[[ADD]], %[[MUL]], %[[SQD]], %[[PRELU]]
func.func @binary_quantized(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, %b: tensor<3x!quant.uniform<i8:f32, 0.25:-2>>, %s: tensor<3x!quant.uniform<i8:f32, 0.125>>) -> (tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>, tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>, tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>, tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>) {
  %add = nn.add %a, %b activation = "relu" : tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.25:-2>> -> tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>
  %mul = nn.mul %a, %b : tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.25:-2>> -> tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>
  %sqd = nn.squared_difference %a, %b : tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.25:-2>> -> tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>
  %prelu = nn.prelu %a, %s : tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.125>> -> tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>
  func.return %add, %mul, %sqd, %prelu : tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>, tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>, tensor<2x3x!quant.uniform<i8:f32, 1.0:-1>>, tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>
}

// -----

// CHECK-LABEL: func.func @unary(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<2x?xf32>)
// CHECK:           %[[V0:.*]] = nn.relu %[[X]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V1:.*]] = nn.relu6 %[[V0]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V2:.*]] = nn.sigmoid %[[V1]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V3:.*]] = nn.tanh %[[V2]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V4:.*]] = nn.hard_swish %[[V3]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V5:.*]] = nn.erf %[[V4]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V6:.*]] = nn.exp %[[V5]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V7:.*]] = nn.log %[[V6]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V8:.*]] = nn.sqrt %[[V7]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V9:.*]] = nn.rsqrt %[[V8]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V10:.*]] = nn.abs %[[V9]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           %[[V11:.*]] = nn.neg %[[V10]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xf32>
// CHECK:           func.return %[[V11]]
func.func @unary(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = nn.relu %x : tensor<2x?xf32> -> tensor<2x?xf32>
  %1 = nn.relu6 %0 : tensor<2x?xf32> -> tensor<2x?xf32>
  %2 = nn.sigmoid %1 : tensor<2x?xf32> -> tensor<2x?xf32>
  %3 = nn.tanh %2 : tensor<2x?xf32> -> tensor<2x?xf32>
  %4 = nn.hard_swish %3 : tensor<2x?xf32> -> tensor<2x?xf32>
  %5 = nn.erf %4 : tensor<2x?xf32> -> tensor<2x?xf32>
  %6 = nn.exp %5 : tensor<2x?xf32> -> tensor<2x?xf32>
  %7 = nn.log %6 : tensor<2x?xf32> -> tensor<2x?xf32>
  %8 = nn.sqrt %7 : tensor<2x?xf32> -> tensor<2x?xf32>
  %9 = nn.rsqrt %8 : tensor<2x?xf32> -> tensor<2x?xf32>
  %10 = nn.abs %9 : tensor<2x?xf32> -> tensor<2x?xf32>
  %11 = nn.neg %10 : tensor<2x?xf32> -> tensor<2x?xf32>
  func.return %11 : tensor<2x?xf32>
}

// -----

// Unary ops with properties: optional bounds of clip, float defaults elided.
// CHECK-LABEL: func.func @unary_properties(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<4xf16>)
// CHECK:           %[[C0:.*]] = nn.clip %[[X]] :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[C1:.*]] = nn.clip %[[X]] min = 0.0 :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[C2:.*]] = nn.clip %[[X]] max = 6.0 :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[C3:.*]] = nn.clip %[[X]] min = -1.5 max = 1500.0 :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[L0:.*]] = nn.leaky_relu %[[X]] :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[L1:.*]] = nn.leaky_relu %[[X]] alpha = 0.2 :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[H0:.*]] = nn.hard_sigmoid %[[X]] :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[H1:.*]] = nn.hard_sigmoid %[[X]] alpha = 0.1666 beta = 0.25 :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[G0:.*]] = nn.gelu %[[X]] :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           %[[G1:.*]] = nn.gelu %[[X]] approximate = "tanh" :
// CHECK-SAME:        tensor<4xf16> -> tensor<4xf16>
// CHECK:           func.return %[[C0]], %[[C1]], %[[C2]], %[[C3]], %[[L0]], %[[L1]], %[[H0]], %[[H1]], %[[G0]], %[[G1]]
func.func @unary_properties(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) {
  %c0 = nn.clip %x : tensor<4xf16> -> tensor<4xf16>
  %c1 = nn.clip %x min = 0.0 : tensor<4xf16> -> tensor<4xf16>
  %c2 = nn.clip %x max = 6 : tensor<4xf16> -> tensor<4xf16>
  %c3 = nn.clip %x min = -1.5 max = 1.5e3 : tensor<4xf16> -> tensor<4xf16>
  %l0 = nn.leaky_relu %x alpha = 0.01 : tensor<4xf16> -> tensor<4xf16>
  %l1 = nn.leaky_relu %x alpha = 0.2 : tensor<4xf16> -> tensor<4xf16>
  %h0 = nn.hard_sigmoid %x alpha = 0.2 beta = 0.5 : tensor<4xf16> -> tensor<4xf16>
  %h1 = nn.hard_sigmoid %x alpha = 0.1666 beta = 0.25 : tensor<4xf16> -> tensor<4xf16>
  %g0 = nn.gelu %x approximate = "none" : tensor<4xf16> -> tensor<4xf16>
  %g1 = nn.gelu %x approximate = "tanh" : tensor<4xf16> -> tensor<4xf16>
  func.return %c0, %c1, %c2, %c3, %l0, %l1, %h0, %h1, %g0, %g1 : tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>
}

// -----

// Quantized activations: input and result may have different quantization parameters.
// CHECK-LABEL: func.func @unary_quantized(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>)
// CHECK:           %[[R:.*]] = nn.relu6 %[[X]] :
// CHECK-SAME:        tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK-SAME:        -> tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK:           %[[S:.*]] = nn.sigmoid %[[X]] :
// CHECK-SAME:        tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK-SAME:        -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
// CHECK:           %[[T:.*]] = nn.tanh %[[X]] :
// CHECK-SAME:        tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK-SAME:        -> tensor<1x4x!quant.uniform<i8:f32, 0.0078125>>
// CHECK:           %[[C:.*]] = nn.clip %[[X]] min = 0.0 max = 6.0 :
// CHECK-SAME:        tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK-SAME:        -> tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK:           %[[L:.*]] = nn.leaky_relu %[[X]] alpha = 0.1 :
// CHECK-SAME:        tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK-SAME:        -> tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK:           %[[H:.*]] = nn.hard_swish %[[X]] :
// CHECK-SAME:        tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK-SAME:        -> tensor<1x4x!quant.uniform<i8:f32, 0.05>>
// CHECK:           func.return %[[R]], %[[S]], %[[T]], %[[C]], %[[L]], %[[H]]
func.func @unary_quantized(%x: tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>) -> (tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>, tensor<1x4x!quant.uniform<i8:f32, 3.906250e-03:-128>>, tensor<1x4x!quant.uniform<i8:f32, 7.812500e-03>>, tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>, tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>, tensor<1x4x!quant.uniform<i8:f32, 0.05>>) {
  %r = nn.relu6 %x : tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>> -> tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
  %s = nn.sigmoid %x : tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>> -> tensor<1x4x!quant.uniform<i8:f32, 3.906250e-03:-128>>
  %t = nn.tanh %x : tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>> -> tensor<1x4x!quant.uniform<i8:f32, 7.812500e-03>>
  %c = nn.clip %x min = 0.0 max = 6.0 : tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>> -> tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
  %l = nn.leaky_relu %x alpha = 0.1 : tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>> -> tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>
  %h = nn.hard_swish %x : tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>> -> tensor<1x4x!quant.uniform<i8:f32, 0.05>>
  func.return %r, %s, %t, %c, %l, %h : tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>, tensor<1x4x!quant.uniform<i8:f32, 3.906250e-03:-128>>, tensor<1x4x!quant.uniform<i8:f32, 7.812500e-03>>, tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>, tensor<1x4x!quant.uniform<i8:f32, 0.1:-128>>, tensor<1x4x!quant.uniform<i8:f32, 0.05>>
}

// -----

// CHECK-LABEL: func.func @cast(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<2x?xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<3xi1>)
// CHECK:           %[[I:.*]] = nn.cast %[[X]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xi32>
// CHECK:           %[[F:.*]] = nn.cast %[[B]] :
// CHECK-SAME:        tensor<3xi1> -> tensor<3xf16>
// CHECK:           %[[Z:.*]] = nn.cast %[[X]] :
// CHECK-SAME:        tensor<2x?xf32> -> tensor<2x?xi1>
// CHECK:           func.return %[[I]], %[[F]], %[[Z]]
func.func @cast(%x: tensor<2x?xf32>, %b: tensor<3xi1>) -> (tensor<2x?xi32>, tensor<3xf16>, tensor<2x?xi1>) {
  %i = nn.cast %x : tensor<2x?xf32> -> tensor<2x?xi32>
  %f = nn.cast %b : tensor<3xi1> -> tensor<3xf16>
  %z = nn.cast %x : tensor<2x?xf32> -> tensor<2x?xi1>
  func.return %i, %f, %z : tensor<2x?xi32>, tensor<3xf16>, tensor<2x?xi1>
}

// -----

// Comparisons of floats and integers (broadcasting, dynamic dimensions) into i1 masks.
// CHECK-LABEL: func.func @compare(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<2x3xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<3xf32>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<?x1xi64>,
// CHECK-SAME:      %[[J:[^:]+]]: tensor<4xi64>,
// CHECK-SAME:      %[[M:[^:]+]]: tensor<3xi1>)
// CHECK:           %[[EQ:.*]] = nn.compare %[[A]], %[[B]] kind = "eq" :
// CHECK-SAME:        tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
// CHECK:           %[[NE:.*]] = nn.compare %[[B]], %[[A]] kind = "ne" :
// CHECK-SAME:        tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK:           %[[LT:.*]] = nn.compare %[[A]], %[[B]] kind = "lt" :
// CHECK-SAME:        tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
// CHECK:           %[[LE:.*]] = nn.compare %[[A]], %[[A]] kind = "le" :
// CHECK-SAME:        tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK:           %[[GT:.*]] = nn.compare %[[I]], %[[J]] kind = "gt" :
// CHECK-SAME:        tensor<?x1xi64>, tensor<4xi64> -> tensor<?x4xi1>
// CHECK:           %[[GE:.*]] = nn.compare %[[J]], %[[J]] kind = "ge" :
// CHECK-SAME:        tensor<4xi64>, tensor<4xi64> -> tensor<4xi1>
// CHECK:           %[[BEQ:.*]] = nn.compare %[[M]], %[[M]] kind = "eq" :
// CHECK-SAME:        tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
// CHECK:           func.return %[[EQ]], %[[NE]], %[[LT]], %[[LE]], %[[GT]], %[[GE]], %[[BEQ]]
func.func @compare(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<?x1xi64>, %j: tensor<4xi64>, %m: tensor<3xi1>) -> (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<?x4xi1>, tensor<4xi1>, tensor<3xi1>) {
  %eq = nn.compare %a, %b kind = "eq" : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  %ne = nn.compare %b, %a kind = "ne" : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  %lt = nn.compare %a, %b kind = "lt" : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %le = nn.compare %a, %a kind = "le" : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  %gt = nn.compare %i, %j kind = "gt" : tensor<?x1xi64>, tensor<4xi64> -> tensor<?x4xi1>
  %ge = nn.compare %j, %j kind = "ge" : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1>
  %beq = nn.compare %m, %m kind = "eq" : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
  func.return %eq, %ne, %lt, %le, %gt, %ge, %beq : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<?x4xi1>, tensor<4xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @logical(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<2x1xi1>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<3xi1>)
// CHECK:           %[[NOT:.*]] = nn.logical_not %[[A]] :
// CHECK-SAME:        tensor<2x1xi1> -> tensor<2x1xi1>
// CHECK:           %[[AND:.*]] = nn.logical_and %[[NOT]], %[[B]] :
// CHECK-SAME:        tensor<2x1xi1>, tensor<3xi1> -> tensor<2x3xi1>
// CHECK:           %[[OR:.*]] = nn.logical_or %[[B]], %[[A]] :
// CHECK-SAME:        tensor<3xi1>, tensor<2x1xi1> -> tensor<2x3xi1>
// CHECK:           %[[XOR:.*]] = nn.logical_xor %[[AND]], %[[OR]] :
// CHECK-SAME:        tensor<2x3xi1>, tensor<2x3xi1> -> tensor<2x3xi1>
// CHECK:           func.return %[[NOT]], %[[XOR]]
func.func @logical(%a: tensor<2x1xi1>, %b: tensor<3xi1>) -> (tensor<2x1xi1>, tensor<2x3xi1>) {
  %not = nn.logical_not %a : tensor<2x1xi1> -> tensor<2x1xi1>
  %and = nn.logical_and %not, %b : tensor<2x1xi1>, tensor<3xi1> -> tensor<2x3xi1>
  %or = nn.logical_or %b, %a : tensor<3xi1>, tensor<2x1xi1> -> tensor<2x3xi1>
  %xor = nn.logical_xor %and, %or : tensor<2x3xi1>, tensor<2x3xi1> -> tensor<2x3xi1>
  func.return %not, %xor : tensor<2x1xi1>, tensor<2x3xi1>
}

// -----

// Select broadcasts all three operands; the values may be float, integer or quantized.
// CHECK-LABEL: func.func @select(
// CHECK-SAME:      %[[C:[^:]+]]: tensor<2x1xi1>,
// CHECK-SAME:      %[[A:[^:]+]]: tensor<3xf32>,
// CHECK-SAME:      %[[S:[^:]+]]: tensor<f32>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<?x3xi32>,
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<3x!quant.uniform<i8:f32, 0.5:-1>>)
// CHECK:           %[[F:.*]] = nn.select %[[C]], %[[A]], %[[S]] :
// CHECK-SAME:        tensor<2x1xi1>, tensor<3xf32>, tensor<f32> -> tensor<2x3xf32>
// CHECK:           %[[N:.*]] = nn.select %[[C]], %[[I]], %[[I]] :
// CHECK-SAME:        tensor<2x1xi1>, tensor<?x3xi32>, tensor<?x3xi32> -> tensor<2x3xi32>
// CHECK:           %[[R:.*]] = nn.select %[[C]], %[[Q]], %[[Q]] :
// CHECK-SAME:        tensor<2x1xi1>, tensor<3x!quant.uniform<i8:f32, 0.5:-1>>, tensor<3x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-SAME:        -> tensor<2x3x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK:           func.return %[[F]], %[[N]], %[[R]]
func.func @select(%c: tensor<2x1xi1>, %a: tensor<3xf32>, %s: tensor<f32>, %i: tensor<?x3xi32>, %q: tensor<3x!quant.uniform<i8:f32, 0.5:-1>>) -> (tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3x!quant.uniform<i8:f32, 0.5:-1>>) {
  %f = nn.select %c, %a, %s : tensor<2x1xi1>, tensor<3xf32>, tensor<f32> -> tensor<2x3xf32>
  %n = nn.select %c, %i, %i : tensor<2x1xi1>, tensor<?x3xi32>, tensor<?x3xi32> -> tensor<2x3xi32>
  %r = nn.select %c, %q, %q : tensor<2x1xi1>, tensor<3x!quant.uniform<i8:f32, 0.5:-1>>, tensor<3x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<2x3x!quant.uniform<i8:f32, 0.5:-1>>
  func.return %f, %n, %r : tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3x!quant.uniform<i8:f32, 0.5:-1>>
}

// -----

// CHECK-LABEL: func.func @pooling(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x8x8x4xf32>,
// CHECK-SAME:      %[[N:[^:]+]]: tensor<1x4x8x8xf32>)
// CHECK:           %[[M:.*]] = nn.max_pool2d %[[X]] kernel = [2, 2] strides = [2, 2] layout = "NHWC" :
// CHECK-SAME:        tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
// CHECK:           %[[P:.*]] = nn.max_pool2d %[[X]] kernel = [3, 3] pads = [1, 1, 1, 1] layout = "NHWC" activation = "relu" :
// CHECK-SAME:        tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
// CHECK:           %[[A:.*]] = nn.avg_pool2d %[[N]] count_include_pad = true kernel = [3, 3] pads = [1, 1, 1, 1] layout = "NCHW" :
// CHECK-SAME:        tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK:           %[[D:.*]] = nn.avg_pool2d %[[N]] kernel = [2, 2] strides = [3, 3] dilations = [2, 2] layout = "NCHW" activation = "relu6" :
// CHECK-SAME:        tensor<1x4x8x8xf32> -> tensor<1x4x2x2xf32>
// CHECK:           func.return %[[M]], %[[P]], %[[A]], %[[D]]
func.func @pooling(%x: tensor<1x8x8x4xf32>, %n: tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x8x8x4xf32>, tensor<1x4x8x8xf32>, tensor<1x4x2x2xf32>) {
  %m = nn.max_pool2d %x kernel = [2, 2] strides = [2, 2] layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  %p = nn.max_pool2d %x kernel = [3, 3] pads = [1, 1, 1, 1] layout = "NHWC" activation = "relu" : tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
  %a = nn.avg_pool2d %n kernel = [3, 3] pads = [1, 1, 1, 1] count_include_pad = true layout = "NCHW" : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %d = nn.avg_pool2d %n kernel = [2, 2] strides = [3, 3] dilations = [2, 2] count_include_pad = false layout = "NCHW" activation = "relu6" : tensor<1x4x8x8xf32> -> tensor<1x4x2x2xf32>
  func.return %m, %p, %a, %d : tensor<1x4x4x4xf32>, tensor<1x8x8x4xf32>, tensor<1x4x8x8xf32>, tensor<1x4x2x2xf32>
}

// -----

// CHECK-LABEL: func.func @pooling_dynamic_quantized(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>)
// CHECK:           %[[M:.*]] = nn.max_pool2d %[[X]] kernel = [2, 2] strides = [2, 2] layout = "NHWC" :
// CHECK-SAME:        tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-SAME:        -> tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK:           %[[A:.*]] = nn.avg_pool2d %[[X]] kernel = [2, 2] layout = "NHWC" :
// CHECK-SAME:        tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-SAME:        -> tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK:           func.return %[[M]], %[[A]]
func.func @pooling_dynamic_quantized(%x: tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>) -> (tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>, tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>) {
  %m = nn.max_pool2d %x kernel = [2, 2] strides = [2, 2] layout = "NHWC" : tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>
  %a = nn.avg_pool2d %x kernel = [2, 2] layout = "NHWC" : tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>
  func.return %m, %a : tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>, tensor<?x?x?x4x!quant.uniform<i8:f32, 0.5:-1>>
}

// -----

// CHECK-LABEL: func.func @batch_norm(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x4x8x8xf32>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<2x3x4xf32>,
// CHECK-SAME:      %[[P:[^:]+]]: tensor<4xf32>)
// CHECK:           %[[N:.*]] = nn.batch_norm %[[X]], %[[P]], %[[P]], %[[P]], %[[P]] epsilon = 0.001 layout = "NCHW" :
// CHECK-SAME:        tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-SAME:        -> tensor<1x4x8x8xf32>
// CHECK:           %[[H:.*]] = nn.batch_norm %[[Y]], %[[P]], %[[P]], %[[P]], %[[P]] layout = "NHWC" :
// CHECK-SAME:        tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-SAME:        -> tensor<2x3x4xf32>
// CHECK:           func.return %[[N]], %[[H]]
func.func @batch_norm(%x: tensor<1x4x8x8xf32>, %y: tensor<2x3x4xf32>, %p: tensor<4xf32>) -> (tensor<1x4x8x8xf32>, tensor<2x3x4xf32>) {
  %n = nn.batch_norm %x, %p, %p, %p, %p epsilon = 0.001 layout = "NCHW" : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
  %h = nn.batch_norm %y, %p, %p, %p, %p epsilon = 1.0e-5 layout = "NHWC" : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  func.return %n, %h : tensor<1x4x8x8xf32>, tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x7x7x64xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x5xf32>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<2x3xi32>)
// CHECK:           %[[MEAN:.*]] = nn.reduce %[[X]] kind = "mean" axes = [1, 2] keepdims = true :
// CHECK-SAME:        tensor<1x7x7x64xf32> -> tensor<1x1x1x64xf32>
// CHECK:           %[[SUM:.*]] = nn.reduce %[[X]] kind = "sum" axes = [-2, -3] :
// CHECK-SAME:        tensor<1x7x7x64xf32> -> tensor<1x64xf32>
// CHECK:           %[[MAX:.*]] = nn.reduce %[[D]] kind = "max" axes = [1] :
// CHECK-SAME:        tensor<?x5xf32> -> tensor<?xf32>
// CHECK:           %[[MIN:.*]] = nn.reduce %[[D]] kind = "min" axes = [0, 1] :
// CHECK-SAME:        tensor<?x5xf32> -> tensor<f32>
// CHECK:           %[[PROD:.*]] = nn.reduce %[[I]] kind = "prod" axes = [1] :
// CHECK-SAME:        tensor<2x3xi32> -> tensor<2xi32>
// CHECK:           func.return %[[MEAN]], %[[SUM]], %[[MAX]], %[[MIN]], %[[PROD]]
func.func @reduce(%x: tensor<1x7x7x64xf32>, %d: tensor<?x5xf32>, %i: tensor<2x3xi32>) -> (tensor<1x1x1x64xf32>, tensor<1x64xf32>, tensor<?xf32>, tensor<f32>, tensor<2xi32>) {
  %mean = nn.reduce %x kind = "mean" axes = [1, 2] keepdims = true : tensor<1x7x7x64xf32> -> tensor<1x1x1x64xf32>
  %sum = nn.reduce %x kind = "sum" axes = [-2, -3] keepdims = false : tensor<1x7x7x64xf32> -> tensor<1x64xf32>
  %max = nn.reduce %d kind = "max" axes = [1] : tensor<?x5xf32> -> tensor<?xf32>
  %min = nn.reduce %d kind = "min" axes = [0, 1] : tensor<?x5xf32> -> tensor<f32>
  %prod = nn.reduce %i kind = "prod" axes = [1] : tensor<2x3xi32> -> tensor<2xi32>
  func.return %mean, %sum, %max, %min, %prod : tensor<1x1x1x64xf32>, tensor<1x64xf32>, tensor<?xf32>, tensor<f32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @reduce_quantized(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:3>>)
// CHECK:           %[[Y:.*]] = nn.reduce %[[X]] kind = "mean" axes = [1, 2] keepdims = true :
// CHECK-SAME:        tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:3>>
// CHECK-SAME:        -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
// CHECK:           func.return %[[Y]]
func.func @reduce_quantized(%x: tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>> {
  %y = nn.reduce %x kind = "mean" axes = [1, 2] keepdims = true : tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:3>> -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
  func.return %y : tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
}

// -----

// The default axis (-1) and beta (1.0) are not printed.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<2x10xf32>,
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<1x4x!quant.uniform<i8:f32, 0.1>>)
// CHECK:           %[[A:.*]] = nn.softmax %[[X]] :
// CHECK-SAME:        tensor<2x10xf32> -> tensor<2x10xf32>
// CHECK:           %[[B:.*]] = nn.softmax %[[X]] :
// CHECK-SAME:        tensor<2x10xf32> -> tensor<2x10xf32>
// CHECK:           %[[C:.*]] = nn.softmax %[[X]] beta = 0.5 axis = 0 :
// CHECK-SAME:        tensor<2x10xf32> -> tensor<2x10xf32>
// CHECK:           %[[D:.*]] = nn.log_softmax %[[X]] axis = 0 :
// CHECK-SAME:        tensor<2x10xf32> -> tensor<2x10xf32>
// CHECK:           %[[E:.*]] = nn.softmax %[[Q]] :
// CHECK-SAME:        tensor<1x4x!quant.uniform<i8:f32, 0.1>>
// CHECK-SAME:        -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
// CHECK:           func.return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]]
func.func @softmax(%x: tensor<2x10xf32>, %q: tensor<1x4x!quant.uniform<i8:f32, 0.1>>) -> (tensor<2x10xf32>, tensor<2x10xf32>, tensor<2x10xf32>, tensor<2x10xf32>, tensor<1x4x!quant.uniform<i8:f32, 3.906250e-03:-128>>) {
  %a = nn.softmax %x : tensor<2x10xf32> -> tensor<2x10xf32>
  %b = nn.softmax %x beta = 1.0 axis = -1 : tensor<2x10xf32> -> tensor<2x10xf32>
  %c = nn.softmax %x beta = 0.5 axis = 0 : tensor<2x10xf32> -> tensor<2x10xf32>
  %d = nn.log_softmax %x axis = 0 : tensor<2x10xf32> -> tensor<2x10xf32>
  %e = nn.softmax %q : tensor<1x4x!quant.uniform<i8:f32, 0.1>> -> tensor<1x4x!quant.uniform<i8:f32, 3.906250e-03:-128>>
  func.return %a, %b, %c, %d, %e : tensor<2x10xf32>, tensor<2x10xf32>, tensor<2x10xf32>, tensor<2x10xf32>, tensor<1x4x!quant.uniform<i8:f32, 3.906250e-03:-128>>
}

// -----

// CHECK-LABEL: func.func @log_softmax(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x3xf32>)
// CHECK:           %[[Y:.*]] = nn.log_softmax %[[X]] :
// CHECK-SAME:        tensor<?x3xf32> -> tensor<?x3xf32>
// CHECK:           func.return %[[Y]]
func.func @log_softmax(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %y = nn.log_softmax %x : tensor<?x3xf32> -> tensor<?x3xf32>
  func.return %y : tensor<?x3xf32>
}

// -----

// -1 is the inferred dimension; a dynamic input gives a dynamic result there.
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x7x7x4xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x4xf32>,
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<2x3x!quant.uniform<i8:f32, 0.5>>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<6xi64>)
// CHECK:           %[[A:.*]] = nn.reshape %[[X]] shape = [1, -1] :
// CHECK-SAME:        tensor<1x7x7x4xf32> -> tensor<1x196xf32>
// CHECK:           %[[B:.*]] = nn.reshape %[[D]] shape = [-1, 2, 2] :
// CHECK-SAME:        tensor<?x4xf32> -> tensor<?x2x2xf32>
// CHECK:           %[[C:.*]] = nn.reshape %[[Q]] shape = [3, 2] :
// CHECK-SAME:        tensor<2x3x!quant.uniform<i8:f32, 0.5>>
// CHECK-SAME:        -> tensor<3x2x!quant.uniform<i8:f32, 0.5>>
// CHECK:           %[[E:.*]] = nn.reshape %[[I]] shape = [2, 1, 3] :
// CHECK-SAME:        tensor<6xi64> -> tensor<2x1x3xi64>
// CHECK:           func.return %[[A]], %[[B]], %[[C]], %[[E]]
func.func @reshape(%x: tensor<1x7x7x4xf32>, %d: tensor<?x4xf32>, %q: tensor<2x3x!quant.uniform<i8:f32, 0.5>>, %i: tensor<6xi64>) -> (tensor<1x196xf32>, tensor<?x2x2xf32>, tensor<3x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x1x3xi64>) {
  %a = nn.reshape %x shape = [1, -1] : tensor<1x7x7x4xf32> -> tensor<1x196xf32>
  %b = nn.reshape %d shape = [-1, 2, 2] : tensor<?x4xf32> -> tensor<?x2x2xf32>
  %c = nn.reshape %q shape = [3, 2] : tensor<2x3x!quant.uniform<i8:f32, 0.5>> -> tensor<3x2x!quant.uniform<i8:f32, 0.5>>
  %e = nn.reshape %i shape = [2, 1, 3] : tensor<6xi64> -> tensor<2x1x3xi64>
  func.return %a, %b, %c, %e : tensor<1x196xf32>, tensor<?x2x2xf32>, tensor<3x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x1x3xi64>
}

// -----

// A per-axis quantized dimension moves with the data: OHWI dimension 0 becomes HWIO dimension 3.
// CHECK-LABEL: func.func @transpose(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x8x?x3xf32>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.5, 0.25}>>)
// CHECK:           %[[Y:.*]] = nn.transpose %[[X]] perm = [0, 3, 1, 2] :
// CHECK-SAME:        tensor<1x8x?x3xf32> -> tensor<1x3x8x?xf32>
// CHECK:           %[[T:.*]] = nn.transpose %[[W]] perm = [1, 2, 3, 0] :
// CHECK-SAME:        tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.5, 0.25}>>
// CHECK-SAME:        -> tensor<3x3x1x2x!quant.uniform<i8:f32:3, {0.5, 0.25}>>
// CHECK:           func.return %[[Y]], %[[T]]
func.func @transpose(%x: tensor<1x8x?x3xf32>, %w: tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.5, 0.25}>>) -> (tensor<1x3x8x?xf32>, tensor<3x3x1x2x!quant.uniform<i8:f32:3, {0.5, 0.25}>>) {
  %y = nn.transpose %x perm = [0, 3, 1, 2] : tensor<1x8x?x3xf32> -> tensor<1x3x8x?xf32>
  %t = nn.transpose %w perm = [1, 2, 3, 0] : tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.5, 0.25}>> -> tensor<3x3x1x2x!quant.uniform<i8:f32:3, {0.5, 0.25}>>
  func.return %y, %t : tensor<1x3x8x?xf32>, tensor<3x3x1x2x!quant.uniform<i8:f32:3, {0.5, 0.25}>>
}

// -----

// Concat is variadic: one input, several, a negative axis, a dynamic axis.
// CHECK-LABEL: func.func @concat(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<1x2x2xf32>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<1x2x3xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<1x2x?xf32>)
// CHECK:           %[[ONE:.*]] = nn.concat %[[A]] axis = 2 :
// CHECK-SAME:        tensor<1x2x2xf32> -> tensor<1x2x2xf32>
// CHECK:           %[[THREE:.*]] = nn.concat %[[A]], %[[B]], %[[A]] axis = -1 activation = "relu" :
// CHECK-SAME:        tensor<1x2x2xf32>, tensor<1x2x3xf32>, tensor<1x2x2xf32>
// CHECK-SAME:        -> tensor<1x2x7xf32>
// CHECK:           %[[DYN:.*]] = nn.concat %[[A]], %[[D]] axis = 2 :
// CHECK-SAME:        tensor<1x2x2xf32>, tensor<1x2x?xf32> -> tensor<1x2x?xf32>
// CHECK:           %[[BATCH:.*]] = nn.concat %[[A]], %[[A]] axis = 0 :
// CHECK-SAME:        tensor<1x2x2xf32>, tensor<1x2x2xf32> -> tensor<2x2x2xf32>
// CHECK:           func.return %[[ONE]], %[[THREE]], %[[DYN]], %[[BATCH]]
func.func @concat(%a: tensor<1x2x2xf32>, %b: tensor<1x2x3xf32>, %d: tensor<1x2x?xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x7xf32>, tensor<1x2x?xf32>, tensor<2x2x2xf32>) {
  %one = nn.concat %a axis = 2 : tensor<1x2x2xf32> -> tensor<1x2x2xf32>
  %three = nn.concat %a, %b, %a axis = -1 activation = "relu" : tensor<1x2x2xf32>, tensor<1x2x3xf32>, tensor<1x2x2xf32> -> tensor<1x2x7xf32>
  %dyn = nn.concat %a, %d axis = 2 : tensor<1x2x2xf32>, tensor<1x2x?xf32> -> tensor<1x2x?xf32>
  %batch = nn.concat %a, %a axis = 0 : tensor<1x2x2xf32>, tensor<1x2x2xf32> -> tensor<2x2x2xf32>
  func.return %one, %three, %dyn, %batch : tensor<1x2x2xf32>, tensor<1x2x7xf32>, tensor<1x2x?xf32>, tensor<2x2x2xf32>
}

// -----

// Quantized inputs of a concat may have different scales; the result has its own.
// CHECK-LABEL: func.func @concat_quantized(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<1x2x!quant.uniform<i8:f32, 0.5:1>>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<1x3x!quant.uniform<i8:f32, 0.25:-4>>)
// CHECK:           %[[Y:.*]] = nn.concat %[[A]], %[[B]] axis = 1 :
// CHECK-SAME:        tensor<1x2x!quant.uniform<i8:f32, 0.5:1>>, tensor<1x3x!quant.uniform<i8:f32, 0.25:-4>>
// CHECK-SAME:        -> tensor<1x5x!quant.uniform<i8:f32, 0.5>>
// CHECK:           func.return %[[Y]]
func.func @concat_quantized(%a: tensor<1x2x!quant.uniform<i8:f32, 0.5:1>>, %b: tensor<1x3x!quant.uniform<i8:f32, 0.25:-4>>) -> tensor<1x5x!quant.uniform<i8:f32, 0.5>> {
  %y = nn.concat %a, %b axis = 1 : tensor<1x2x!quant.uniform<i8:f32, 0.5:1>>, tensor<1x3x!quant.uniform<i8:f32, 0.25:-4>> -> tensor<1x5x!quant.uniform<i8:f32, 0.5>>
  func.return %y : tensor<1x5x!quant.uniform<i8:f32, 0.5>>
}

// -----

// CHECK-LABEL: func.func @split(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x8xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x6xi32>)
// CHECK:           %[[A:.*]], %[[B:.*]] = nn.split %[[X]] axis = 1 sizes = [2, 6] :
// CHECK-SAME:        tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x6xf32>
// CHECK:           %[[P0:.*]], %[[P1:.*]], %[[P2:.*]] = nn.split %[[D]] axis = -1 sizes = [1, 2, 3] :
// CHECK-SAME:        tensor<?x6xi32> -> tensor<?x1xi32>, tensor<?x2xi32>, tensor<?x3xi32>
// CHECK:           %[[WHOLE:.*]] = nn.split %[[X]] axis = 0 sizes = [1] :
// CHECK-SAME:        tensor<1x8xf32> -> tensor<1x8xf32>
// CHECK:           func.return %[[A]], %[[B]], %[[P0]], %[[P1]], %[[P2]], %[[WHOLE]]
func.func @split(%x: tensor<1x8xf32>, %d: tensor<?x6xi32>) -> (tensor<1x2xf32>, tensor<1x6xf32>, tensor<?x1xi32>, tensor<?x2xi32>, tensor<?x3xi32>, tensor<1x8xf32>) {
  %a, %b = nn.split %x axis = 1 sizes = [2, 6] : tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x6xf32>
  %p:3 = nn.split %d axis = -1 sizes = [1, 2, 3] : tensor<?x6xi32> -> tensor<?x1xi32>, tensor<?x2xi32>, tensor<?x3xi32>
  %whole = nn.split %x axis = 0 sizes = [1] : tensor<1x8xf32> -> tensor<1x8xf32>
  func.return %a, %b, %p#0, %p#1, %p#2, %whole : tensor<1x2xf32>, tensor<1x6xf32>, tensor<?x1xi32>, tensor<?x2xi32>, tensor<?x3xi32>, tensor<1x8xf32>
}

// -----

// CHECK-LABEL: func.func @split_quantized(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<4x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>)
// CHECK:           %[[A:.*]], %[[B:.*]] = nn.split %[[X]] axis = 0 sizes = [1, 3] :
// CHECK-SAME:        tensor<4x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
// CHECK-SAME:        -> tensor<1x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>, tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
// CHECK:           func.return %[[A]], %[[B]]
func.func @split_quantized(%x: tensor<4x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>) -> (tensor<1x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>, tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>) {
  %a, %b = nn.split %x axis = 0 sizes = [1, 3] : tensor<4x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>> -> tensor<1x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>, tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
  func.return %a, %b : tensor<1x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>, tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
}

// -----

// Negative strides walk backwards; end = -1 with a negative stride runs through index 0.
// CHECK-LABEL: func.func @slice(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<2x8xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x8xf32>,
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<4x!quant.uniform<u8:f32, 0.5:10>>)
// CHECK:           %[[A:.*]] = nn.slice %[[X]] begin = [0, 1] end = [2, 7] strides = [1, 2] :
// CHECK-SAME:        tensor<2x8xf32> -> tensor<2x3xf32>
// CHECK:           %[[B:.*]] = nn.slice %[[X]] begin = [1, 7] end = [-1, -1] strides = [-1, -1] :
// CHECK-SAME:        tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK:           %[[C:.*]] = nn.slice %[[X]] begin = [1, 6] end = [0, 1] strides = [-1, -3] :
// CHECK-SAME:        tensor<2x8xf32> -> tensor<1x2xf32>
// CHECK:           %[[E:.*]] = nn.slice %[[D]] begin = [0, 3] end = [4, 3] strides = [2, 1] :
// CHECK-SAME:        tensor<?x8xf32> -> tensor<?x0xf32>
// CHECK:           %[[F:.*]] = nn.slice %[[Q]] begin = [3] end = [-1] strides = [-2] :
// CHECK-SAME:        tensor<4x!quant.uniform<u8:f32, 0.5:10>>
// CHECK-SAME:        -> tensor<2x!quant.uniform<u8:f32, 0.5:10>>
// CHECK:           func.return %[[A]], %[[B]], %[[C]], %[[E]], %[[F]]
func.func @slice(%x: tensor<2x8xf32>, %d: tensor<?x8xf32>, %q: tensor<4x!quant.uniform<u8:f32, 0.5:10>>) -> (tensor<2x3xf32>, tensor<2x8xf32>, tensor<1x2xf32>, tensor<?x0xf32>, tensor<2x!quant.uniform<u8:f32, 0.5:10>>) {
  %a = nn.slice %x begin = [0, 1] end = [2, 7] strides = [1, 2] : tensor<2x8xf32> -> tensor<2x3xf32>
  %b = nn.slice %x begin = [1, 7] end = [-1, -1] strides = [-1, -1] : tensor<2x8xf32> -> tensor<2x8xf32>
  %c = nn.slice %x begin = [1, 6] end = [0, 1] strides = [-1, -3] : tensor<2x8xf32> -> tensor<1x2xf32>
  %e = nn.slice %d begin = [0, 3] end = [4, 3] strides = [2, 1] : tensor<?x8xf32> -> tensor<?x0xf32>
  %f = nn.slice %q begin = [3] end = [-1] strides = [-2] : tensor<4x!quant.uniform<u8:f32, 0.5:10>> -> tensor<2x!quant.uniform<u8:f32, 0.5:10>>
  func.return %a, %b, %c, %e, %f : tensor<2x3xf32>, tensor<2x8xf32>, tensor<1x2xf32>, tensor<?x0xf32>, tensor<2x!quant.uniform<u8:f32, 0.5:10>>
}

// -----

// CHECK-LABEL: func.func @pad(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x4x4x2xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x3xf32>,
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<2x2x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK:           %[[A:.*]] = nn.pad %[[X]] pads = [0, 0, 1, 1, 1, 1, 0, 0] :
// CHECK-SAME:        tensor<1x4x4x2xf32> -> tensor<1x6x6x2xf32>
// CHECK:           %[[B:.*]] = nn.pad %[[X]] pads = [0, 0, 2, 0, 0, 2, 0, 0] value = -1.5 :
// CHECK-SAME:        tensor<1x4x4x2xf32> -> tensor<1x6x6x2xf32>
// CHECK:           %[[C:.*]] = nn.pad %[[D]] pads = [0, 0, 2, 2] mode = "reflect" :
// CHECK-SAME:        tensor<?x3xf32> -> tensor<?x7xf32>
// CHECK:           %[[E:.*]] = nn.pad %[[D]] pads = [1, 0, 0, 1] mode = "edge" :
// CHECK-SAME:        tensor<?x3xf32> -> tensor<?x4xf32>
// CHECK:           %[[F:.*]] = nn.pad %[[Q]] pads = [1, 1, 0, 1] value = -3.0 :
// CHECK-SAME:        tensor<2x2x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-SAME:        -> tensor<4x3x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK:           func.return %[[A]], %[[B]], %[[C]], %[[E]], %[[F]]
func.func @pad(%x: tensor<1x4x4x2xf32>, %d: tensor<?x3xf32>, %q: tensor<2x2x!quant.uniform<i8:f32, 0.5:-3>>) -> (tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>, tensor<?x7xf32>, tensor<?x4xf32>, tensor<4x3x!quant.uniform<i8:f32, 0.5:-3>>) {
  %a = nn.pad %x pads = [0, 0, 1, 1, 1, 1, 0, 0] : tensor<1x4x4x2xf32> -> tensor<1x6x6x2xf32>
  %b = nn.pad %x pads = [0, 0, 2, 0, 0, 2, 0, 0] mode = "constant" value = -1.5 : tensor<1x4x4x2xf32> -> tensor<1x6x6x2xf32>
  %c = nn.pad %d pads = [0, 0, 2, 2] mode = "reflect" : tensor<?x3xf32> -> tensor<?x7xf32>
  %e = nn.pad %d pads = [1, 0, 0, 1] mode = "edge" value = 0.0 : tensor<?x3xf32> -> tensor<?x4xf32>
  %f = nn.pad %q pads = [1, 1, 0, 1] value = -3.0 : tensor<2x2x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<4x3x!quant.uniform<i8:f32, 0.5:-3>>
  func.return %a, %b, %c, %e, %f : tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>, tensor<?x7xf32>, tensor<?x4xf32>, tensor<4x3x!quant.uniform<i8:f32, 0.5:-3>>
}

// -----

// CHECK-LABEL: func.func @resize(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x8x8x3xf32>,
// CHECK-SAME:      %[[N:[^:]+]]: tensor<?x3x4x4xf32>,
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>)
// CHECK:           %[[A:.*]] = nn.resize %[[X]] size = [16, 16] mode = "bilinear" layout = "NHWC" :
// CHECK-SAME:        tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
// CHECK:           %[[B:.*]] = nn.resize %[[X]] size = [4, 4] coordinate_mode = "align_corners" nearest_mode = "floor" layout = "NHWC" :
// CHECK-SAME:        tensor<1x8x8x3xf32> -> tensor<1x4x4x3xf32>
// CHECK:           %[[C:.*]] = nn.resize %[[N]] size = [6, 10] scales = [1.5, 2.5] coordinate_mode = "asymmetric" layout = "NCHW" :
// CHECK-SAME:        tensor<?x3x4x4xf32> -> tensor<?x3x6x10xf32>
// CHECK:           %[[D:.*]] = nn.resize %[[Q]] size = [4, 4] coordinate_mode = "tf_half_pixel_for_nn" nearest_mode = "round_prefer_ceil" layout = "NHWC" :
// CHECK-SAME:        tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>
// CHECK-SAME:        -> tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5>>
// CHECK:           func.return %[[A]], %[[B]], %[[C]], %[[D]]
func.func @resize(%x: tensor<1x8x8x3xf32>, %n: tensor<?x3x4x4xf32>, %q: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>) -> (tensor<1x16x16x3xf32>, tensor<1x4x4x3xf32>, tensor<?x3x6x10xf32>, tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5>>) {
  %a = nn.resize %x size = [16, 16] mode = "bilinear" coordinate_mode = "half_pixel" layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
  %b = nn.resize %x size = [4, 4] mode = "nearest" coordinate_mode = "align_corners" nearest_mode = "floor" layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x4x4x3xf32>
  %c = nn.resize %n size = [6, 10] scales = [1.5, 2.5] coordinate_mode = "asymmetric" nearest_mode = "round_prefer_floor" layout = "NCHW" : tensor<?x3x4x4xf32> -> tensor<?x3x6x10xf32>
  %d = nn.resize %q size = [4, 4] coordinate_mode = "tf_half_pixel_for_nn" nearest_mode = "round_prefer_ceil" layout = "NHWC" : tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>> -> tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5>>
  func.return %a, %b, %c, %d : tensor<1x16x16x3xf32>, tensor<1x4x4x3xf32>, tensor<?x3x6x10xf32>, tensor<1x4x4x1x!quant.uniform<i8:f32, 0.5>>
}

// -----

// CHECK-LABEL: func.func @gather(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<2x5xf32>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<3xi32>,
// CHECK-SAME:      %[[J:[^:]+]]: tensor<2x4xi64>,
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<6x2x!quant.uniform<i8:f32, 0.5>>,
// CHECK-SAME:      %[[K:[^:]+]]: tensor<i32>)
// CHECK:           %[[A:.*]] = nn.gather %[[X]], %[[I]] axis = 1 :
// CHECK-SAME:        tensor<2x5xf32>, tensor<3xi32> -> tensor<2x3xf32>
// CHECK:           %[[B:.*]] = nn.gather %[[X]], %[[J]] :
// CHECK-SAME:        tensor<2x5xf32>, tensor<2x4xi64> -> tensor<2x4x5xf32>
// CHECK:           %[[C:.*]] = nn.gather %[[X]], %[[J]] axis = -1 batch_dims = 1 :
// CHECK-SAME:        tensor<2x5xf32>, tensor<2x4xi64> -> tensor<2x4xf32>
// CHECK:           %[[D:.*]] = nn.gather %[[Q]], %[[K]] :
// CHECK-SAME:        tensor<6x2x!quant.uniform<i8:f32, 0.5>>, tensor<i32>
// CHECK-SAME:        -> tensor<2x!quant.uniform<i8:f32, 0.5>>
// CHECK:           func.return %[[A]], %[[B]], %[[C]], %[[D]]
func.func @gather(%x: tensor<2x5xf32>, %i: tensor<3xi32>, %j: tensor<2x4xi64>, %q: tensor<6x2x!quant.uniform<i8:f32, 0.5>>, %k: tensor<i32>) -> (tensor<2x3xf32>, tensor<2x4x5xf32>, tensor<2x4xf32>, tensor<2x!quant.uniform<i8:f32, 0.5>>) {
  %a = nn.gather %x, %i axis = 1 : tensor<2x5xf32>, tensor<3xi32> -> tensor<2x3xf32>
  %b = nn.gather %x, %j axis = 0 batch_dims = 0 : tensor<2x5xf32>, tensor<2x4xi64> -> tensor<2x4x5xf32>
  %c = nn.gather %x, %j axis = -1 batch_dims = 1 : tensor<2x5xf32>, tensor<2x4xi64> -> tensor<2x4xf32>
  %d = nn.gather %q, %k : tensor<6x2x!quant.uniform<i8:f32, 0.5>>, tensor<i32> -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  func.return %a, %b, %c, %d : tensor<2x3xf32>, tensor<2x4x5xf32>, tensor<2x4xf32>, tensor<2x!quant.uniform<i8:f32, 0.5>>
}

// -----

// broadcast_to adds leading dimensions and stretches size-1 ones; a per-axis quantized
// dimension moves right by the number of added dimensions.
// CHECK-LABEL: func.func @broadcast_to(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<3x1xf32>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x1xi64>,
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<3x1x!quant.uniform<i8:f32:0, {0.5, 0.25, 0.125}>>)
// CHECK:           %[[A:.*]] = nn.broadcast_to %[[X]] shape = [2, 3, 4] :
// CHECK-SAME:        tensor<3x1xf32> -> tensor<2x3x4xf32>
// CHECK:           %[[B:.*]] = nn.broadcast_to %[[D]] shape = [5, 2] :
// CHECK-SAME:        tensor<?x1xi64> -> tensor<5x2xi64>
// CHECK:           %[[C:.*]] = nn.broadcast_to %[[Q]] shape = [2, 3, 4] :
// CHECK-SAME:        tensor<3x1x!quant.uniform<i8:f32:0, {0.5, 0.25, 0.125}>>
// CHECK-SAME:        -> tensor<2x3x4x!quant.uniform<i8:f32:1, {0.5, 0.25, 0.125}>>
// CHECK:           func.return %[[A]], %[[B]], %[[C]]
func.func @broadcast_to(%x: tensor<3x1xf32>, %d: tensor<?x1xi64>, %q: tensor<3x1x!quant.uniform<i8:f32:0, {0.5, 0.25, 0.125}>>) -> (tensor<2x3x4xf32>, tensor<5x2xi64>, tensor<2x3x4x!quant.uniform<i8:f32:1, {0.5, 0.25, 0.125}>>) {
  %a = nn.broadcast_to %x shape = [2, 3, 4] : tensor<3x1xf32> -> tensor<2x3x4xf32>
  %b = nn.broadcast_to %d shape = [5, 2] : tensor<?x1xi64> -> tensor<5x2xi64>
  %c = nn.broadcast_to %q shape = [2, 3, 4] : tensor<3x1x!quant.uniform<i8:f32:0, {0.5, 0.25, 0.125}>> -> tensor<2x3x4x!quant.uniform<i8:f32:1, {0.5, 0.25, 0.125}>>
  func.return %a, %b, %c : tensor<2x3x4xf32>, tensor<5x2xi64>, tensor<2x3x4x!quant.uniform<i8:f32:1, {0.5, 0.25, 0.125}>>
}

// -----

// Ops written in the generic form re-print in the custom form; extra attributes are kept.
// CHECK-LABEL: func.func @generic_input(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<2x3xf32>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<4x3x3x3xf32>,
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x8x8x3xf32>)
// CHECK:           %[[S:.*]] = nn.add %[[A]], %[[A]] activation = "relu" :
// CHECK-SAME:        tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:           %[[C:.*]] = nn.conv2d %[[X]], %[[W]] layout = "NHWC" :
// CHECK-SAME:        tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x6x6x4xf32>
// CHECK:           %[[R:.*]] = nn.relu %[[A]] {irc.name = "act0"} :
// CHECK-SAME:        tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:           func.return %[[S]], %[[C]], %[[R]]
func.func @generic_input(%a: tensor<2x3xf32>, %w: tensor<4x3x3x3xf32>, %x: tensor<1x8x8x3xf32>) -> (tensor<2x3xf32>, tensor<1x6x6x4xf32>, tensor<2x3xf32>) {
  %s = "nn.add"(%a, %a) <{activation = #nn<activation "relu">}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = "nn.conv2d"(%x, %w) <{layout = #nn<layout "NHWC">, groups = 1 : i64, strides = array<i64: 1, 1>}> : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x6x4xf32>
  %r = nn.relu %a {irc.name = "act0"} : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %s, %c, %r : tensor<2x3xf32>, tensor<1x6x6x4xf32>, tensor<2x3xf32>
}

// -----

// Integer semantics (the form lower-quantized produces): exact accumulation into i32.
// CHECK-LABEL: func.func @integer_arithmetic
// CHECK:         nn.conv2d %{{.*}}, %{{.*}}, %{{.*}} pads = [1, 1, 1, 1] layout = "NHWC" : tensor<1x4x4x2xi16>, tensor<3x3x3x2xi16>, tensor<3xi32> -> tensor<1x4x4x3xi32>
// CHECK:         nn.fully_connected %{{.*}}, %{{.*}} : tensor<2x8xi8>, tensor<3x8xi8> -> tensor<2x3xi32>
// CHECK:         nn.batch_matmul %{{.*}}, %{{.*}} : tensor<2x3xi32>, tensor<3x4xi32> -> tensor<2x4xi64>
// CHECK:         nn.avg_pool2d %{{.*}} kernel = [2, 2] layout = "NHWC" : tensor<1x4x4x2xi16> -> tensor<1x3x3x2xi16>
// CHECK:         nn.clip %{{.*}} min = -128.0 max = 127.0 : tensor<2x3xi32> -> tensor<2x3xi32>
func.func @integer_arithmetic(%x: tensor<1x4x4x2xi16>, %w: tensor<3x3x3x2xi16>, %b: tensor<3xi32>,
                              %v: tensor<2x8xi8>, %m: tensor<3x8xi8>, %p: tensor<2x3xi32>,
                              %q: tensor<3x4xi32>) {
  %c = nn.conv2d %x, %w, %b pads = [1, 1, 1, 1] layout = "NHWC" : tensor<1x4x4x2xi16>, tensor<3x3x3x2xi16>, tensor<3xi32> -> tensor<1x4x4x3xi32>
  %f = nn.fully_connected %v, %m : tensor<2x8xi8>, tensor<3x8xi8> -> tensor<2x3xi32>
  %mm = nn.batch_matmul %p, %q : tensor<2x3xi32>, tensor<3x4xi32> -> tensor<2x4xi64>
  %a = nn.avg_pool2d %x kernel = [2, 2] layout = "NHWC" : tensor<1x4x4x2xi16> -> tensor<1x3x3x2xi16>
  %k = nn.clip %f min = -128.0 max = 127.0 : tensor<2x3xi32> -> tensor<2x3xi32>
  func.return
}
