// RUN: irc-opt %s --split-input-file --verify-diagnostics

// Every verifier and parser message of the `nn` dialect that IR can trigger, one per case.

//===----------------------------------------------------------------------===//
// Syntax
//===----------------------------------------------------------------------===//

func.func @unknown_property(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.add' has no property 'foo' (expected one of: activation)}}
  %y = nn.add %a, %a foo = 1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @property_twice(%a: tensor<4xf32>) {
  // expected-error @+1 {{property 'axis' is given twice}}
  %y = nn.softmax %a axis = 0 axis = 0 : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @property_of_wrong_kind(%a: tensor<4xf32>) {
  // expected-error @+1 {{Expected integer literal}}
  %y = nn.softmax %a axis = "last" : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @missing_required_property(%x: tensor<1x4x4x1xf32>) {
  // expected-error @+1 {{property 'kernel' expected in operation 'nn.max_pool2d'}}
  %y = nn.max_pool2d %x layout = "NHWC" : tensor<1x4x4x1xf32> -> tensor<1x4x4x1xf32>
  func.return
}

// -----

func.func @operand_types_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected 2 operand types, got 1}}
  %y = nn.add %a, %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @operand_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.add' expects 2 operands, got 1}}
  %y = nn.add %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @result_types_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected 1 result type, got 2}}
  %y = nn.relu %a : tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  func.return
}

// -----

func.func @unranked_operand(%a: tensor<*xf32>) {
  // expected-error @+1 {{operand 'input' at position 0 does not verify}}
  %y = nn.relu %a : tensor<*xf32> -> tensor<*xf32>
  func.return
}

// -----

func.func @constant_not_dense() {
  // expected-error @+1 {{expected a dense elements attribute}}
  %c = nn.constant array<i64: 1, 2> : tensor<2xi64>
  func.return
}

// -----

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

func.func @constant_element_type() {
  // expected-error @+1 {{value element type f32 differs from result type f16}}
  %c = nn.constant dense<[1.0, 2.0]> : tensor<2xf32> -> tensor<2xf16>
  func.return
}

// -----

func.func @constant_quantized_storage() {
  // expected-error @+1 {{a quantized constant stores i8, got i16 data}}
  %c = nn.constant dense<[1, 2]> : tensor<2xi16> -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

func.func @constant_shape() {
  // expected-error @+1 {{inferred result shape 2 is incompatible with declared shape 3}}
  %c = nn.constant dense<[1, 2]> : tensor<2xi8> -> tensor<3x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

func.func @constant_per_axis_scales() {
  // expected-error @+1 {{result #0 has 2 slices along quantized dimension 0 but its type has 3 scales}}
  %c = nn.constant dense<[1, 2]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>>
  func.return
}

// -----

func.func @constant_per_axis_rank() {
  // expected-error @+1 {{result #0 is quantized along dimension 1 but has rank 1}}
  %c = nn.constant dense<[1, 2]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>
  func.return
}

// -----

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

func.func @conv2d_filter_rank(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{expected a 4-D filter, got rank 3}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_input_rank(%x: tensor<8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{expected input of rank 4, got rank 3}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_layout(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{layout must be one of NHWC, NCHW, got 'NWHC'}}
  %y = nn.conv2d %x, %w layout = "NWHC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_activation(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{activation must be one of none, relu, relu6, relu_n1_to_1, tanh, got 'gelu'}}
  %y = nn.conv2d %x, %w layout = "NHWC" activation = "gelu" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_strides_length(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{expected 2 values in strides, got 3}}
  %y = nn.conv2d %x, %w strides = [1, 1, 1] layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_zero_stride(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{strides must be positive, got [0, 1]}}
  %y = nn.conv2d %x, %w strides = [0, 1] layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_dilations_length(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{expected 2 values in dilations, got 1}}
  %y = nn.conv2d %x, %w dilations = [2] layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x4x4x4xf32>
  func.return
}

// -----

func.func @conv2d_zero_dilation(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{dilations must be positive, got [1, 0]}}
  %y = nn.conv2d %x, %w dilations = [1, 0] layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_pads_length(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{expected 4 values in pads, got 2}}
  %y = nn.conv2d %x, %w pads = [1, 1] layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x8x8x4xf32>
  func.return
}

// -----

func.func @conv2d_negative_pad(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{pads must be non-negative, got [0, -1, 0, 0]}}
  %y = nn.conv2d %x, %w pads = [0, -1, 0, 0] layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x6x5x4xf32>
  func.return
}

// -----

func.func @conv2d_zero_groups(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{groups must be positive, got 0}}
  %y = nn.conv2d %x, %w groups = 0 layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_input_channels_groups(%x: tensor<1x8x8x6xf32>, %w: tensor<4x3x3x1xf32>) {
  // expected-error @+1 {{input channels 6 are not divisible by groups 4}}
  %y = nn.conv2d %x, %w groups = 4 layout = "NHWC" : tensor<1x8x8x6xf32>, tensor<4x3x3x1xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_output_channels_groups(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x3x2xf32>) {
  // expected-error @+1 {{output channels 3 are not divisible by groups 2}}
  %y = nn.conv2d %x, %w groups = 2 layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<3x3x3x2xf32> -> tensor<1x6x6x3xf32>
  func.return
}

// -----

func.func @conv2d_filter_input_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{filter expects 2 input channels (2 per group x 1 group), input has 4}}
  %y = nn.conv2d %x, %w layout = "NCHW" : tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv2d_bias_shape(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{expected a bias of shape 4, got 8}}
  %y = nn.conv2d %x, %w, %b layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<8xf32> -> tensor<1x6x6x4xf32>
  func.return
}

// -----

func.func @conv2d_window_too_large(%x: tensor<1x2x2x1xf32>, %w: tensor<1x3x3x1xf32>) {
  // expected-error @+1 {{window of size 3 (kernel 3, dilation 1) does not fit in an input of size 2 padded by 0}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x2x2x1xf32>, tensor<1x3x3x1xf32> -> tensor<1x1x1x1xf32>
  func.return
}

// -----

func.func @conv2d_declared_shape(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{inferred result shape 1x6x6x4 is incompatible with declared shape 1x8x8x4}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32> -> tensor<1x8x8x4xf32>
  func.return
}

// -----

// Integer convolutions (lower-quantized's form) accumulate into i32 or i64.
func.func @conv2d_integer_narrow_accumulator(%x: tensor<1x4x4x1xi8>, %w: tensor<1x1x1x1xi8>) {
  // expected-error @+1 {{an integer product accumulates into i32 or i64, got i8}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x1xi8>, tensor<1x1x1x1xi8> -> tensor<1x4x4x1xi8>
  func.return
}

// -----

func.func @conv2d_bias_element_type(%x: tensor<1x4x4x1xf32>, %w: tensor<1x1x1x1xf32>, %b: tensor<1xf16>) {
  // expected-error @+1 {{bias element type f16 differs from input element type f32}}
  %y = nn.conv2d %x, %w, %b layout = "NHWC" : tensor<1x4x4x1xf32>, tensor<1x1x1x1xf32>, tensor<1xf16> -> tensor<1x4x4x1xf32>
  func.return
}

// -----

// A float input with a quantized filter (dynamic-range quantization) is not an nn form.
!qw = !quant.uniform<i8:f32, 0.5>
func.func @conv2d_float_input_quantized_filter(%x: tensor<1x4x4x1xf32>, %w: tensor<1x1x1x1x!qw>) {
  // expected-error @+1 {{filter element type !quant.uniform<i8:f32, 0.5> differs from input element type f32}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x1xf32>, tensor<1x1x1x1x!qw> -> tensor<1x4x4x1xf32>
  func.return
}

// -----

!qx = !quant.uniform<i8:f32, 0.5>
func.func @conv2d_quantized_input_float_filter(%x: tensor<1x4x4x1x!qx>, %w: tensor<1x1x1x1xf32>) {
  // expected-error @+1 {{filter must be quantized when the input is, got f32}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x1x!qx>, tensor<1x1x1x1xf32> -> tensor<1x4x4x1x!qx>
  func.return
}

// -----

!qx = !quant.uniform<i8:f32, 0.5>
func.func @conv2d_quantized_input_float_result(%x: tensor<1x4x4x1x!qx>, %w: tensor<1x1x1x1x!qx>) {
  // expected-error @+1 {{result must be quantized when the input is, got f32}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x1x!qx>, tensor<1x1x1x1x!qx> -> tensor<1x4x4x1xf32>
  func.return
}

// -----

!qx = !quant.uniform<i8:f32, 0.5>
!qy = !quant.uniform<u8:f32, 0.5:128>
func.func @conv2d_quantized_result_storage(%x: tensor<1x4x4x1x!qx>, %w: tensor<1x1x1x1x!qx>) {
  // expected-error @+1 {{result stores ui8 but the input stores i8}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x1x!qx>, tensor<1x1x1x1x!qx> -> tensor<1x4x4x1x!qy>
  func.return
}

// -----

// The filter of an OHWI conv2d is quantized per output channel, i.e. along dimension 0.
!qx = !quant.uniform<i8:f32, 0.5>
!qw = !quant.uniform<i8:f32:3, {0.1, 0.2}>
func.func @conv2d_per_axis_filter_dimension(%x: tensor<1x4x4x2x!qx>, %w: tensor<2x1x1x2x!qw>) {
  // expected-error @+1 {{filter must be quantized per tensor or along the output-channel dimension 0, got dimension 3}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x2x!qx>, tensor<2x1x1x2x!qw> -> tensor<1x4x4x2x!qx>
  func.return
}

// -----

!qx = !quant.uniform<i8:f32, 0.5>
!qw = !quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>
func.func @conv2d_per_axis_filter_scales(%x: tensor<1x4x4x2x!qx>, %w: tensor<2x1x1x2x!qw>) {
  // expected-error @+1 {{operand #1 has 2 slices along quantized dimension 0 but its type has 3 scales}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x2x!qx>, tensor<2x1x1x2x!qw> -> tensor<1x4x4x2x!qx>
  func.return
}

// -----

!qx = !quant.uniform<i8:f32, 0.5>
func.func @conv2d_quantized_float_bias(%x: tensor<1x4x4x1x!qx>, %w: tensor<1x1x1x1x!qx>, %b: tensor<1xf32>) {
  // expected-error @+1 {{bias of a quantized op must be i32 or i64, got f32}}
  %y = nn.conv2d %x, %w, %b layout = "NHWC" : tensor<1x4x4x1x!qx>, tensor<1x1x1x1x!qx>, tensor<1xf32> -> tensor<1x4x4x1x!qx>
  func.return
}

// -----

!qx = !quant.uniform<i8:f32, 0.5>
func.func @conv2d_quantized_i8_bias(%x: tensor<1x4x4x1x!qx>, %w: tensor<1x1x1x1x!qx>, %b: tensor<1xi8>) {
  // expected-error @+1 {{bias of a quantized op must be i32 or i64, got i8}}
  %y = nn.conv2d %x, %w, %b layout = "NHWC" : tensor<1x4x4x1x!qx>, tensor<1x1x1x1x!qx>, tensor<1xi8> -> tensor<1x4x4x1x!qx>
  func.return
}

// -----

func.func @conv2d_transpose_filter_rank(%x: tensor<1x4x4x8xf32>, %w: tensor<4x2x8xf32>) {
  // expected-error @+1 {{expected a 4-D filter, got rank 3}}
  %y = nn.conv2d_transpose %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<4x2x8xf32> -> tensor<1x5x5x4xf32>
  func.return
}

// -----

func.func @conv2d_transpose_zero_groups(%x: tensor<1x4x4x8xf32>, %w: tensor<4x2x2x8xf32>) {
  // expected-error @+1 {{groups must be positive, got 0}}
  %y = nn.conv2d_transpose %x, %w groups = 0 layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<4x2x2x8xf32> -> tensor<1x5x5x4xf32>
  func.return
}

// -----

func.func @conv2d_transpose_input_channels(%x: tensor<1x4x4x4xf32>, %w: tensor<4x2x2x8xf32>) {
  // expected-error @+1 {{filter expects 8 input channels, input has 4}}
  %y = nn.conv2d_transpose %x, %w layout = "NHWC" : tensor<1x4x4x4xf32>, tensor<4x2x2x8xf32> -> tensor<1x5x5x4xf32>
  func.return
}

// -----

func.func @conv2d_transpose_output_padding_length(%x: tensor<1x4x4x8xf32>, %w: tensor<4x2x2x8xf32>) {
  // expected-error @+1 {{expected 2 values in output_padding, got 1}}
  %y = nn.conv2d_transpose %x, %w output_padding = [1] layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<4x2x2x8xf32> -> tensor<1x5x5x4xf32>
  func.return
}

// -----

func.func @conv2d_transpose_negative_output_padding(%x: tensor<1x4x4x8xf32>, %w: tensor<4x2x2x8xf32>) {
  // expected-error @+1 {{output_padding must be non-negative, got [0, -1]}}
  %y = nn.conv2d_transpose %x, %w output_padding = [0, -1] layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<4x2x2x8xf32> -> tensor<1x5x4x4xf32>
  func.return
}

// -----

func.func @conv2d_transpose_empty_output(%x: tensor<1x1x1x1xf32>, %w: tensor<1x1x1x1xf32>) {
  // expected-error @+1 {{output size 0 along spatial dimension 0 is empty}}
  %y = nn.conv2d_transpose %x, %w pads = [1, 0, 0, 0] layout = "NHWC" : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32> -> tensor<1x0x1x1xf32>
  func.return
}

// -----

func.func @conv2d_transpose_bias_shape(%x: tensor<1x4x4x8xf32>, %w: tensor<4x2x2x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{expected a bias of shape 4, got 8}}
  %y = nn.conv2d_transpose %x, %w, %b layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<4x2x2x8xf32>, tensor<8xf32> -> tensor<1x5x5x4xf32>
  func.return
}

// -----

// An IOHW filter (NCHW) is quantized per output channel along dimension 1, not 0.
!qx = !quant.uniform<i8:f32, 0.5>
!qw = !quant.uniform<i8:f32:0, {0.1, 0.2}>
func.func @conv2d_transpose_per_axis_filter_dimension(%x: tensor<1x2x2x2x!qx>, %w: tensor<2x2x1x1x!qw>) {
  // expected-error @+1 {{filter must be quantized per tensor or along the output-channel dimension 1, got dimension 0}}
  %y = nn.conv2d_transpose %x, %w layout = "NCHW" : tensor<1x2x2x2x!qx>, tensor<2x2x1x1x!qw> -> tensor<1x2x2x2x!qx>
  func.return
}

// -----

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

func.func @fully_connected_scalar_input(%x: tensor<f32>, %w: tensor<3x1xf32>) {
  // expected-error @+1 {{expected an input of rank >= 1, got a scalar}}
  %y = nn.fully_connected %x, %w : tensor<f32>, tensor<3x1xf32> -> tensor<3xf32>
  func.return
}

// -----

func.func @fully_connected_weights_rank(%x: tensor<2x8xf32>, %w: tensor<1x3x8xf32>) {
  // expected-error @+1 {{expected weights of rank 2, got rank 3}}
  %y = nn.fully_connected %x, %w : tensor<2x8xf32>, tensor<1x3x8xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @fully_connected_features(%x: tensor<2x8xf32>, %w: tensor<3x4xf32>) {
  // expected-error @+1 {{input has 8 features but the weights expect 4}}
  %y = nn.fully_connected %x, %w : tensor<2x8xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @fully_connected_bias_shape(%x: tensor<2x8xf32>, %w: tensor<3x8xf32>, %b: tensor<1x3xf32>) {
  // expected-error @+1 {{expected a bias of shape 3, got 1x3}}
  %y = nn.fully_connected %x, %w, %b : tensor<2x8xf32>, tensor<3x8xf32>, tensor<1x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

!qx = !quant.uniform<i8:f32, 0.5>
!qw = !quant.uniform<i8:f32:1, {0.1, 0.2}>
func.func @fully_connected_per_axis_weights_dimension(%x: tensor<1x2x!qx>, %w: tensor<3x2x!qw>) {
  // expected-error @+1 {{weights must be quantized per tensor or along the output-channel dimension 0, got dimension 1}}
  %y = nn.fully_connected %x, %w : tensor<1x2x!qx>, tensor<3x2x!qw> -> tensor<1x3x!qx>
  func.return
}

// -----

func.func @batch_matmul_rank(%a: tensor<4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{expected operands of rank >= 2, got ranks 1 and 2}}
  %y = nn.batch_matmul %a, %b : tensor<4xf32>, tensor<4x5xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @batch_matmul_contraction(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+1 {{contraction sizes differ: 4 and 5}}
  %y = nn.batch_matmul %a, %b : tensor<3x4xf32>, tensor<5x6xf32> -> tensor<3x6xf32>
  func.return
}

// -----

// adj_y transposes the rhs: [5, 4] is read as [4, 5], so the contraction sizes differ.
func.func @batch_matmul_adjoint_contraction(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{contraction sizes differ: 4 and 5}}
  %y = nn.batch_matmul %a, %b adj_y = true : tensor<3x4xf32>, tensor<4x5xf32> -> tensor<3x4xf32>
  func.return
}

// -----

func.func @batch_matmul_batch_broadcast(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+1 {{shapes 2 and 3 are not broadcastable}}
  %y = nn.batch_matmul %a, %b : tensor<2x3x4xf32>, tensor<3x4x5xf32> -> tensor<2x3x5xf32>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @batch_matmul_mixed_quantized(%a: tensor<3x4x!q>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{rhs must be quantized when lhs is, got f32}}
  %y = nn.batch_matmul %a, %b : tensor<3x4x!q>, tensor<4x5xf32> -> tensor<3x5x!q>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @batch_matmul_float_lhs_quantized_rhs(%a: tensor<3x4xf32>, %b: tensor<4x5x!q>) {
  // expected-error @+1 {{rhs element type !quant.uniform<i8:f32, 0.5> differs from lhs element type f32}}
  %y = nn.batch_matmul %a, %b : tensor<3x4xf32>, tensor<4x5x!q> -> tensor<3x5xf32>
  func.return
}

// -----

//===----------------------------------------------------------------------===//
// Pooling and normalisation
//===----------------------------------------------------------------------===//

func.func @pool_kernel_length(%x: tensor<1x4x4x1xf32>) {
  // expected-error @+1 {{expected 2 values in kernel, got 1}}
  %y = nn.max_pool2d %x kernel = [2] layout = "NHWC" : tensor<1x4x4x1xf32> -> tensor<1x3x3x1xf32>
  func.return
}

// -----

func.func @pool_zero_kernel(%x: tensor<1x4x4x1xf32>) {
  // expected-error @+1 {{kernel must be positive, got [0, 2]}}
  %y = nn.avg_pool2d %x kernel = [0, 2] layout = "NHWC" : tensor<1x4x4x1xf32> -> tensor<1x4x3x1xf32>
  func.return
}

// -----

func.func @pool_pads_not_smaller_than_kernel(%x: tensor<1x4x4x1xf32>) {
  // expected-error @+1 {{pads [2, 0, 0, 0] must be smaller than kernel [2, 2]}}
  %y = nn.max_pool2d %x kernel = [2, 2] pads = [2, 0, 0, 0] layout = "NHWC" : tensor<1x4x4x1xf32> -> tensor<1x5x3x1xf32>
  func.return
}

// -----

func.func @pool_input_rank(%x: tensor<4x4x1xf32>) {
  // expected-error @+1 {{expected input of rank 4, got rank 3}}
  %y = nn.max_pool2d %x kernel = [2, 2] layout = "NHWC" : tensor<4x4x1xf32> -> tensor<3x3x1xf32>
  func.return
}

// -----

func.func @pool_layout(%x: tensor<1x4x4x1xf32>) {
  // expected-error @+1 {{layout must be one of NHWC, NCHW, got 'nhwc'}}
  %y = nn.avg_pool2d %x kernel = [2, 2] layout = "nhwc" : tensor<1x4x4x1xf32> -> tensor<1x3x3x1xf32>
  func.return
}

// -----

func.func @pool_declared_shape(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{inferred result shape 1x1x2x2 is incompatible with declared shape 1x2x2x1}}
  %y = nn.max_pool2d %x kernel = [2, 2] strides = [2, 2] layout = "NCHW" : tensor<1x1x4x4xf32> -> tensor<1x2x2x1xf32>
  func.return
}

// -----

func.func @batch_norm_input_rank(%x: tensor<4xf32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{expected an input of rank >= 2, got rank 1}}
  %y = nn.batch_norm %x, %p, %p, %p, %p layout = "NHWC" : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @batch_norm_negative_epsilon(%x: tensor<1x4xf32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{epsilon must be non-negative, got -0.001}}
  %y = nn.batch_norm %x, %p, %p, %p, %p epsilon = -0.001 layout = "NHWC" : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x4xf32>
  func.return
}

// -----

// The channel dimension of NCHW is 1: the parameters must have 2 elements, not 4.
func.func @batch_norm_parameter_shape(%x: tensor<1x2x4x4xf32>, %p: tensor<2xf32>, %v: tensor<4xf32>) {
  // expected-error @+1 {{expected variance of shape 2, got 4}}
  %y = nn.batch_norm %x, %p, %p, %p, %v layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4xf32> -> tensor<1x2x4x4xf32>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @batch_norm_quantized(%x: tensor<1x2x!q>, %p: tensor<2x!q>) {
  // expected-error @+1 {{operand #0 must not be quantized, got !quant.uniform<i8:f32, 0.5>}}
  %y = nn.batch_norm %x, %p, %p, %p, %p layout = "NHWC" : tensor<1x2x!q>, tensor<2x!q>, tensor<2x!q>, tensor<2x!q>, tensor<2x!q> -> tensor<1x2x!q>
  func.return
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

func.func @binary_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{shapes 2x3 and 4 are not broadcastable}}
  %y = nn.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @binary_declared_shape(%a: tensor<2x1xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{inferred result shape 2x3 is incompatible with declared shape 2x1}}
  %y = nn.mul %a, %b : tensor<2x1xf32>, tensor<3xf32> -> tensor<2x1xf32>
  func.return
}

// -----

func.func @binary_activation(%a: tensor<4xf32>) {
  // expected-error @+1 {{activation must be one of none, relu, relu6, relu_n1_to_1, tanh, got 'sigmoid'}}
  %y = nn.sub %a, %a activation = "sigmoid" : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @binary_operand_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{rhs element type f16 differs from lhs element type f32}}
  %y = nn.maximum %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  func.return
}

// -----

func.func @binary_result_element_type(%a: tensor<4xi32>) {
  // expected-error @+1 {{result element type i64 differs from lhs element type i32}}
  %y = nn.div %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi64>
  func.return
}

// -----

// nn.pow, like nn.squared_difference, takes no plain integers.
func.func @pow_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{lhs must be a float or quantized tensor, got i32}}
  %y = nn.pow %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @pow_quantized(%a: tensor<4x!q>) {
  // expected-error @+1 {{lhs must not be quantized, got !quant.uniform<i8:f32, 0.5>}}
  %y = nn.pow %a, %a : tensor<4x!q>, tensor<4x!q> -> tensor<4x!q>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @binary_quantized_float_rhs(%a: tensor<4x!q>, %b: tensor<4xf32>) {
  // expected-error @+1 {{rhs must be quantized like lhs, got f32}}
  %y = nn.add %a, %b : tensor<4x!q>, tensor<4xf32> -> tensor<4x!q>
  func.return
}

// -----

!qi = !quant.uniform<i8:f32, 0.5>
!qu = !quant.uniform<u8:f32, 0.5:128>
func.func @binary_quantized_storage(%a: tensor<4x!qi>, %b: tensor<4x!qu>) {
  // expected-error @+1 {{rhs stores ui8 but lhs stores i8}}
  %y = nn.mul %a, %b : tensor<4x!qi>, tensor<4x!qu> -> tensor<4x!qi>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @binary_quantized_float_result(%a: tensor<4x!q>) {
  // expected-error @+1 {{result must be quantized like lhs, got f32}}
  %y = nn.squared_difference %a, %a : tensor<4x!q>, tensor<4x!q> -> tensor<4xf32>
  func.return
}

// -----

func.func @prelu_slope_grows_input(%x: tensor<1x3xf32>, %s: tensor<2x3xf32>) {
  // expected-error @+1 {{slope of shape [2, 3] does not broadcast to the input shape [1, 3]}}
  %y = nn.prelu %x, %s : tensor<1x3xf32>, tensor<2x3xf32> -> tensor<1x3xf32>
  func.return
}

// -----

func.func @unary_declared_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{inferred result shape 4 is incompatible with declared shape 5}}
  %y = nn.sigmoid %x : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @unary_result_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 element type f16 differs from operand #0 element type f32}}
  %y = nn.tanh %x : tensor<4xf32> -> tensor<4xf16>
  func.return
}

// -----

func.func @unary_integer(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be a float or quantized tensor, got i32}}
  %y = nn.tanh %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

func.func @unary_index(%x: tensor<4xindex>) {
  // expected-error @+1 {{operand #0 has unsupported element type index}}
  %y = nn.abs %x : tensor<4xindex> -> tensor<4xindex>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @erf_quantized(%x: tensor<4x!q>) {
  // expected-error @+1 {{operand #0 must not be quantized, got !quant.uniform<i8:f32, 0.5>}}
  %y = nn.erf %x : tensor<4x!q> -> tensor<4x!q>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @hard_sigmoid_quantized(%x: tensor<4x!q>) {
  // expected-error @+1 {{operand #0 must not be quantized, got !quant.uniform<i8:f32, 0.5>}}
  %y = nn.hard_sigmoid %x : tensor<4x!q> -> tensor<4x!q>
  func.return
}

// -----

!qi = !quant.uniform<i8:f32, 0.5>
!qs = !quant.uniform<i16:f32, 0.5>
func.func @unary_quantized_storage(%x: tensor<4x!qi>) {
  // expected-error @+1 {{result #0 stores i16 but operand #0 stores i8}}
  %y = nn.relu %x : tensor<4x!qi> -> tensor<4x!qs>
  func.return
}

// -----

func.func @clip_bounds(%x: tensor<4xf32>) {
  // expected-error @+1 {{min 6.0 is greater than max 0.0}}
  %y = nn.clip %x min = 6.0 max = 0.0 : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @gelu_approximate(%x: tensor<4xf32>) {
  // expected-error @+1 {{approximate must be one of none, tanh, got 'sigmoid'}}
  %y = nn.gelu %x approximate = "sigmoid" : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @compare_kind(%a: tensor<4xf32>) {
  // expected-error @+1 {{kind must be one of eq, ne, lt, le, gt, ge, got 'lte'}}
  %y = nn.compare %a, %a kind = "lte" : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  func.return
}

// -----

func.func @compare_missing_kind(%a: tensor<4xf32>) {
  // expected-error @+1 {{property 'kind' expected in operation 'nn.compare'}}
  %y = nn.compare %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  func.return
}

// -----

func.func @compare_result_not_boolean(%a: tensor<4xf32>) {
  // expected-error @+1 {{result must be an i1 tensor, got f32}}
  %y = nn.compare %a, %a kind = "eq" : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @compare_operand_element_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{rhs element type i32 differs from lhs element type f32}}
  %y = nn.compare %a, %b kind = "lt" : tensor<4xf32>, tensor<4xi32> -> tensor<4xi1>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @compare_quantized(%a: tensor<4x!q>) {
  // expected-error @+1 {{lhs must not be quantized, got !quant.uniform<i8:f32, 0.5>}}
  %y = nn.compare %a, %a kind = "gt" : tensor<4x!q>, tensor<4x!q> -> tensor<4xi1>
  func.return
}

// -----

func.func @compare_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{shapes 2x3 and 2 are not broadcastable}}
  %y = nn.compare %a, %b kind = "ge" : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xi1>
  func.return
}

// -----

func.func @logical_operand_not_boolean(%a: tensor<4xi1>, %b: tensor<4xi8>) {
  // expected-error @+1 {{rhs must be an i1 tensor, got i8}}
  %y = nn.logical_and %a, %b : tensor<4xi1>, tensor<4xi8> -> tensor<4xi1>
  func.return
}

// -----

func.func @logical_result_not_boolean(%a: tensor<4xi1>) {
  // expected-error @+1 {{result must be an i1 tensor, got i32}}
  %y = nn.logical_xor %a, %a : tensor<4xi1>, tensor<4xi1> -> tensor<4xi32>
  func.return
}

// -----

func.func @logical_declared_shape(%a: tensor<2x1xi1>, %b: tensor<3xi1>) {
  // expected-error @+1 {{inferred result shape 2x3 is incompatible with declared shape 2x1}}
  %y = nn.logical_or %a, %b : tensor<2x1xi1>, tensor<3xi1> -> tensor<2x1xi1>
  func.return
}

// -----

func.func @logical_not_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{input must be an i1 tensor, got f32}}
  %y = nn.logical_not %x : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @select_condition_not_boolean(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{condition must be an i1 tensor, got f32}}
  %y = nn.select %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @select_value_element_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{on_false element type f16 differs from result type f32}}
  %y = nn.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  func.return
}

// -----

!qa = !quant.uniform<i8:f32, 0.5>
!qb = !quant.uniform<i8:f32, 0.25>
func.func @select_quantized_parameters(%c: tensor<4xi1>, %a: tensor<4x!qa>, %b: tensor<4x!qb>) {
  // expected-error @+1 {{on_true element type !quant.uniform<i8:f32, 0.5> differs from result type !quant.uniform<i8:f32, 0.25>}}
  %y = nn.select %c, %a, %b : tensor<4xi1>, tensor<4x!qa>, tensor<4x!qb> -> tensor<4x!qb>
  func.return
}

// -----

func.func @select_index(%c: tensor<4xi1>, %a: tensor<4xindex>) {
  // expected-error @+1 {{result has unsupported element type index}}
  %y = nn.select %c, %a, %a : tensor<4xi1>, tensor<4xindex>, tensor<4xindex> -> tensor<4xindex>
  func.return
}

// -----

func.func @select_not_broadcastable(%c: tensor<2xi1>, %a: tensor<3xf32>) {
  // expected-error @+1 {{shapes 2 and 3 are not broadcastable}}
  %y = nn.select %c, %a, %a : tensor<2xi1>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return
}

// -----

func.func @select_declared_shape(%c: tensor<2x1xi1>, %a: tensor<3xf32>) {
  // expected-error @+1 {{inferred result shape 2x3 is incompatible with declared shape 3}}
  %y = nn.select %c, %a, %a : tensor<2x1xi1>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @cast_quantized_input(%x: tensor<4x!q>) {
  // expected-error @+1 {{input must not be quantized; use quant.qcast or quant.dcast}}
  %y = nn.cast %x : tensor<4x!q> -> tensor<4xf32>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @cast_quantized_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{result must not be quantized; use quant.qcast or quant.dcast}}
  %y = nn.cast %x : tensor<4xf32> -> tensor<4x!q>
  func.return
}

// -----

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

func.func @reshape_two_inferred(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{shape [-1, -1] has more than one -1}}
  %y = nn.reshape %x shape = [-1, -1] : tensor<2x3xf32> -> tensor<6x1xf32>
  func.return
}

// -----

func.func @reshape_negative(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{shape [-2, 3] has a negative dimension other than -1}}
  %y = nn.reshape %x shape = [-2, 3] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @reshape_not_divisible(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape 2x3 (6 elements) into [4, -1]}}
  %y = nn.reshape %x shape = [4, -1] : tensor<2x3xf32> -> tensor<4x1xf32>
  func.return
}

// -----

func.func @reshape_element_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape 2x3 (6 elements) into 4x2 (8 elements)}}
  %y = nn.reshape %x shape = [4, 2] : tensor<2x3xf32> -> tensor<4x2xf32>
  func.return
}

// -----

func.func @reshape_declared_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{inferred result shape 3x2 is incompatible with declared shape 6}}
  %y = nn.reshape %x shape = [3, 2] : tensor<2x3xf32> -> tensor<6xf32>
  func.return
}

// -----

func.func @reshape_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result element type f16 differs from input f32}}
  %y = nn.reshape %x shape = [6] : tensor<2x3xf32> -> tensor<6xf16>
  func.return
}

// -----

!qa = !quant.uniform<i8:f32, 0.5>
!qb = !quant.uniform<i8:f32, 0.25>
func.func @reshape_requantizes(%x: tensor<2x3x!qa>) {
  // expected-error @+1 {{result element type !quant.uniform<i8:f32, 0.25> differs from input !quant.uniform<i8:f32, 0.5>}}
  %y = nn.reshape %x shape = [6] : tensor<2x3x!qa> -> tensor<6x!qb>
  func.return
}

// -----

func.func @transpose_not_a_permutation(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{perm [0, 0] is not a permutation of the 2 input dimensions}}
  %y = nn.transpose %x perm = [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

func.func @transpose_declared_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{inferred result shape 3x2 is incompatible with declared shape 2x3}}
  %y = nn.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

// The per-axis dimension must follow the data: dimension 0 of the input is dimension 1
// of the result.
!qa = !quant.uniform<i8:f32:0, {0.5, 0.25}>
func.func @transpose_quantized_dimension(%x: tensor<2x2x!qa>) {
  // expected-error @+1 {{the quantized dimension 0 must move to 1 in the result}}
  %y = nn.transpose %x perm = [1, 0] : tensor<2x2x!qa> -> tensor<2x2x!qa>
  func.return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+1 {{expected at least one input}}
  %y = nn.concat axis = 0 : tensor<2xf32>
  func.return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = nn.concat %a, %a axis = 2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  func.return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{input #1 has rank 3, input #0 has rank 2}}
  %y = nn.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x3x1xf32> -> tensor<2x6xf32>
  func.return
}

// -----

func.func @concat_size(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{input #1 has size 3 in dimension 0, expected 2}}
  %y = nn.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  func.return
}

// -----

func.func @concat_element_type(%a: tensor<2xf16>, %b: tensor<2xf32>) {
  // expected-error @+1 {{input #0 element type f16 differs from result type f32}}
  %y = nn.concat %a, %b axis = 0 : tensor<2xf16>, tensor<2xf32> -> tensor<4xf32>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @concat_quantized_float_input(%a: tensor<2x!q>, %b: tensor<2xf32>) {
  // expected-error @+1 {{input #1 must be quantized with storage i8, got f32}}
  %y = nn.concat %a, %b axis = 0 : tensor<2x!q>, tensor<2xf32> -> tensor<4x!q>
  func.return
}

// -----

func.func @split_sizes_sum(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{sizes [2, 5] add up to 7, but dimension 1 has 8 elements}}
  %a, %b = nn.split %x axis = 1 sizes = [2, 5] : tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x5xf32>
  func.return
}

// -----

func.func @split_empty_sizes(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{sizes must not be empty}}
  %a = nn.split %x axis = 1 sizes = [] : tensor<1x8xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @split_negative_size(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{sizes must be non-negative, got [-1, 9]}}
  %a, %b = nn.split %x axis = 1 sizes = [-1, 9] : tensor<1x8xf32> -> tensor<1x1xf32>, tensor<1x9xf32>
  func.return
}

// -----

func.func @split_axis(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %a, %b = nn.split %x axis = -3 sizes = [4, 4] : tensor<1x8xf32> -> tensor<1x4xf32>, tensor<1x4xf32>
  func.return
}

// -----

func.func @split_result_count(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{expected 2 results, got 3}}
  %a, %b, %c = nn.split %x axis = 1 sizes = [4, 4] : tensor<1x8xf32> -> tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  func.return
}

// -----

func.func @split_declared_shape(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{inferred result #1 shape 1x6 is incompatible with declared shape 1x5}}
  %a, %b = nn.split %x axis = 1 sizes = [2, 6] : tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x5xf32>
  func.return
}

// -----

func.func @split_element_type(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{result #1 element type f16 differs from input f32}}
  %a, %b = nn.split %x axis = 1 sizes = [2, 6] : tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x6xf16>
  func.return
}

// -----

func.func @slice_lengths(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{expected 2 values in end, got 1}}
  %y = nn.slice %x begin = [0, 0] end = [2] strides = [1, 1] : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @slice_zero_stride(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{stride of dimension 1 is zero}}
  %y = nn.slice %x begin = [0, 0] end = [2, 8] strides = [1, 0] : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @slice_end_out_of_range(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{slice [0:9:1] of dimension 1 is out of range for size 8}}
  %y = nn.slice %x begin = [0, 0] end = [2, 9] strides = [1, 1] : tensor<2x8xf32> -> tensor<2x9xf32>
  func.return
}

// -----

// Negative indices are resolved at import; only end = -1 (with a negative stride) remains.
func.func @slice_negative_begin(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{slice [-1:0:-1] of dimension 0 is out of range for size 2}}
  %y = nn.slice %x begin = [-1, 0] end = [0, 8] strides = [-1, 1] : tensor<2x8xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @slice_negative_end_positive_stride(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{slice [0:-1:1] of dimension 1 is out of range for size 8}}
  %y = nn.slice %x begin = [0, 0] end = [2, -1] strides = [1, 1] : tensor<2x8xf32> -> tensor<2x7xf32>
  func.return
}

// -----

// Walking backwards from index 8 of a dimension of size 8 reads out of bounds.
func.func @slice_reverse_begin(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{begin 8 of dimension 1 is out of range for size 8}}
  %y = nn.slice %x begin = [0, 8] end = [2, -1] strides = [1, -1] : tensor<2x8xf32> -> tensor<2x9xf32>
  func.return
}

// -----

func.func @slice_declared_shape(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{inferred result shape 2x4 is incompatible with declared shape 2x3}}
  %y = nn.slice %x begin = [0, 0] end = [2, 8] strides = [1, 2] : tensor<2x8xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @pad_length(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expected 4 values in pads, got 2}}
  %y = nn.pad %x pads = [1, 1] : tensor<2x3xf32> -> tensor<4x3xf32>
  func.return
}

// -----

func.func @pad_negative(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{pads must be non-negative, got [0, -1, 0, 0]}}
  %y = nn.pad %x pads = [0, -1, 0, 0] : tensor<2x3xf32> -> tensor<1x3xf32>
  func.return
}

// -----

func.func @pad_mode(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{mode must be one of constant, reflect, edge, got 'wrap'}}
  %y = nn.pad %x pads = [0, 0, 1, 1] mode = "wrap" : tensor<2x3xf32> -> tensor<2x5xf32>
  func.return
}

// -----

func.func @pad_reflect_too_wide(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{reflect padding 3 of dimension 1 needs a size larger than the padding, got 3}}
  %y = nn.pad %x pads = [0, 0, 3, 0] mode = "reflect" : tensor<2x3xf32> -> tensor<2x6xf32>
  func.return
}

// -----

func.func @pad_edge_of_empty(%x: tensor<0x3xf32>) {
  // expected-error @+1 {{edge padding of empty dimension 0}}
  %y = nn.pad %x pads = [1, 0, 0, 0] mode = "edge" : tensor<0x3xf32> -> tensor<1x3xf32>
  func.return
}

// -----

func.func @pad_declared_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{inferred result shape 3x5 is incompatible with declared shape 4x4}}
  %y = nn.pad %x pads = [1, 0, 1, 1] : tensor<2x3xf32> -> tensor<4x4xf32>
  func.return
}

// -----

func.func @resize_input_rank(%x: tensor<8x8x3xf32>) {
  // expected-error @+1 {{expected input of rank 4, got rank 3}}
  %y = nn.resize %x size = [16, 16] layout = "NHWC" : tensor<8x8x3xf32> -> tensor<16x16x3xf32>
  func.return
}

// -----

func.func @resize_size_length(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+1 {{expected 2 values in size, got 3}}
  %y = nn.resize %x size = [1, 16, 16] layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
  func.return
}

// -----

func.func @resize_zero_size(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+1 {{size must be positive, got [0, 16]}}
  %y = nn.resize %x size = [0, 16] layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x0x16x3xf32>
  func.return
}

// -----

func.func @resize_mode(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+1 {{mode must be one of nearest, bilinear, got 'bicubic'}}
  %y = nn.resize %x size = [16, 16] mode = "bicubic" layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
  func.return
}

// -----

func.func @resize_coordinate_mode(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+1 {{coordinate_mode must be one of half_pixel, align_corners, asymmetric, pytorch_half_pixel, tf_half_pixel_for_nn, got 'tf_crop_and_resize'}}
  %y = nn.resize %x size = [16, 16] coordinate_mode = "tf_crop_and_resize" layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
  func.return
}

// -----

func.func @resize_nearest_mode(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+1 {{nearest_mode must be one of round_prefer_floor, round_prefer_ceil, floor, ceil, got 'round'}}
  %y = nn.resize %x size = [16, 16] nearest_mode = "round" layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
  func.return
}

// -----

func.func @resize_layout(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+1 {{layout must be one of NHWC, NCHW, got 'HWC'}}
  %y = nn.resize %x size = [16, 16] layout = "HWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
  func.return
}

// -----

func.func @resize_scales_length(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+1 {{expected 2 values in scales, got 4}}
  %y = nn.resize %x size = [16, 16] scales = [1.0, 2.0, 2.0, 1.0] layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
  func.return
}

// -----

func.func @resize_scales_positive(%x: tensor<1x8x8x3xf32>) {
  // expected-error @+1 {{scales must be positive, got [0.0, 2.0]}}
  %y = nn.resize %x size = [16, 16] scales = [0.0, 2.0] layout = "NHWC" : tensor<1x8x8x3xf32> -> tensor<1x16x16x3xf32>
  func.return
}

// -----

// The size applies to H and W of the layout: NCHW resizes dimensions 2 and 3.
func.func @resize_declared_shape(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{inferred result shape 1x3x16x16 is incompatible with declared shape 1x16x16x3}}
  %y = nn.resize %x size = [16, 16] layout = "NCHW" : tensor<1x3x8x8xf32> -> tensor<1x16x16x3xf32>
  func.return
}

// -----

func.func @gather_scalar_input(%x: tensor<f32>, %i: tensor<2xi32>) {
  // expected-error @+1 {{expected an input of rank >= 1, got a scalar}}
  %y = nn.gather %x, %i : tensor<f32>, tensor<2xi32> -> tensor<2xf32>
  func.return
}

// -----

func.func @gather_axis(%x: tensor<2x5xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %y = nn.gather %x, %i axis = -3 : tensor<2x5xf32>, tensor<3xi32> -> tensor<3x5xf32>
  func.return
}

// -----

func.func @gather_batch_dims(%x: tensor<2x5xf32>, %i: tensor<2x3xi32>) {
  // expected-error @+1 {{batch_dims 2 must be in [0, 1]}}
  %y = nn.gather %x, %i axis = 1 batch_dims = 2 : tensor<2x5xf32>, tensor<2x3xi32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @gather_float_indices(%x: tensor<2x5xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{indices must be integers, got f32}}
  %y = nn.gather %x, %i axis = 1 : tensor<2x5xf32>, tensor<3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @gather_declared_shape(%x: tensor<2x5xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{inferred result shape 2x3 is incompatible with declared shape 3x5}}
  %y = nn.gather %x, %i axis = 1 : tensor<2x5xf32>, tensor<3xi32> -> tensor<3x5xf32>
  func.return
}

// -----

func.func @broadcast_to_incompatible(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{input shape 2x3 does not broadcast to shape [4, 3]}}
  %y = nn.broadcast_to %x shape = [4, 3] : tensor<2x3xf32> -> tensor<4x3xf32>
  func.return
}

// -----

// broadcast_to never drops dimensions (numpy.broadcast_to; ONNX Expand imports with the
// broadcast of both shapes).
func.func @broadcast_to_lower_rank(%x: tensor<1x3xf32>) {
  // expected-error @+1 {{input shape 1x3 does not broadcast to shape [3]}}
  %y = nn.broadcast_to %x shape = [3] : tensor<1x3xf32> -> tensor<3xf32>
  func.return
}

// -----

func.func @broadcast_to_negative(%x: tensor<3xf32>) {
  // expected-error @+1 {{shape must be non-negative, got [-1, 3]}}
  %y = nn.broadcast_to %x shape = [-1, 3] : tensor<3xf32> -> tensor<?x3xf32>
  func.return
}

// -----

func.func @broadcast_to_declared_shape(%x: tensor<3xf32>) {
  // expected-error @+1 {{inferred result shape 2x3 is incompatible with declared shape 3x2}}
  %y = nn.broadcast_to %x shape = [2, 3] : tensor<3xf32> -> tensor<3x2xf32>
  func.return
}

// -----

func.func @broadcast_to_element_type(%x: tensor<3xf32>) {
  // expected-error @+1 {{result element type f16 differs from input f32}}
  %y = nn.broadcast_to %x shape = [2, 3] : tensor<3xf32> -> tensor<2x3xf16>
  func.return
}

// -----

!q0 = !quant.uniform<i8:f32:0, {0.5, 0.25, 0.125}>
func.func @broadcast_to_quantized_axis(%x: tensor<3x1x!q0>) {
  // expected-error @+1 {{the quantized dimension 0 must move to 1 in the result}}
  %y = nn.broadcast_to %x shape = [3, 3, 4] : tensor<3x1x!q0> -> tensor<3x3x4x!q0>
  func.return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

func.func @reduce_kind(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{kind must be one of mean, sum, max, min, prod, got 'avg'}}
  %y = nn.reduce %x kind = "avg" axes = [1] : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @reduce_no_axes(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axes must not be empty}}
  %y = nn.reduce %x kind = "sum" axes = [] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @reduce_axis_range(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = nn.reduce %x kind = "sum" axes = [2] : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @reduce_repeated_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axes [1, -1] repeat a dimension}}
  %y = nn.reduce %x kind = "max" axes = [1, -1] : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @reduce_keepdims_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{inferred result shape 2x1 is incompatible with declared shape 2}}
  %y = nn.reduce %x kind = "mean" axes = [1] keepdims = true : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @reduce_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result element type f16 differs from input f32}}
  %y = nn.reduce %x kind = "min" axes = [0] : tensor<2x3xf32> -> tensor<3xf16>
  func.return
}

// -----

!q = !quant.uniform<i8:f32, 0.5>
func.func @reduce_quantized_float_result(%x: tensor<2x3x!q>) {
  // expected-error @+1 {{result must be quantized like the input, got f32}}
  %y = nn.reduce %x kind = "mean" axes = [1] : tensor<2x3x!q> -> tensor<2xf32>
  func.return
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = nn.softmax %x axis = 2 : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @softmax_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{expected an input of rank >= 1, got a scalar}}
  %y = nn.log_softmax %x : tensor<f32> -> tensor<f32>
  func.return
}

// -----

func.func @softmax_integer(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{operand #0 must be a float or quantized tensor, got i32}}
  %y = nn.softmax %x : tensor<2x3xi32> -> tensor<2x3xi32>
  func.return
}

// -----

func.func @conv2d_integer_float_filter(%x: tensor<1x4x4x1xi8>, %w: tensor<1x1x1x1xf32>) {
  // expected-error @+1 {{filter must be an integer tensor like the input, got f32}}
  %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x1xi8>, tensor<1x1x1x1xf32> -> tensor<1x4x4x1xi32>
  func.return
}

// -----

func.func @conv2d_integer_bias(%x: tensor<1x4x4x1xi8>, %w: tensor<1x1x1x1xi8>, %b: tensor<1xi64>) {
  // expected-error @+1 {{bias element type i64 differs from the accumulator i32}}
  %y = nn.conv2d %x, %w, %b layout = "NHWC" : tensor<1x4x4x1xi8>, tensor<1x1x1x1xi8>, tensor<1xi64> -> tensor<1x4x4x1xi32>
  func.return
}

// -----

func.func @batch_matmul_integer_narrow(%a: tensor<2x3xi8>, %b: tensor<3x4xi8>) {
  // expected-error @+1 {{an integer product accumulates into i32 or i64, got i16}}
  %y = nn.batch_matmul %a, %b : tensor<2x3xi8>, tensor<3x4xi8> -> tensor<2x4xi16>
  func.return
}
