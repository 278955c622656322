// RUN: irc-opt %s --split-input-file --verify-diagnostics -p fuse-qdq | filecheck %s

// Islands that match but cannot become integer ops stay in float, with a remark at the op.

// Weights only known at run time (a dcast of an argument): no integer kernel takes them.
// CHECK-LABEL: func.func @run_time_weights
// CHECK:         nn.conv2d %{{.*}} : tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x2x2xf32>
// CHECK-NEXT:    quant.qcast
func.func @run_time_weights(%x: tensor<1x1x2x2x!quant.uniform<i8:f32, 0.5>>, %wq: tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x1x2x2x!quant.uniform<i8:f32, 1.0>> {
  %xd = quant.dcast %x : tensor<1x1x2x2x!quant.uniform<i8:f32, 0.5>> to tensor<1x1x2x2xf32>
  %w = quant.dcast %wq : tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25>> to tensor<1x1x1x1xf32>
  // expected-remark @+1 {{fuse-qdq: kept in float: weights only known at run time (integer kernels need constant weights)}}
  %y = nn.conv2d %xd, %w layout = "NCHW" : tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x2x2xf32>
  %q = quant.qcast %y rounding = "half_to_even" : tensor<1x1x2x2xf32> to tensor<1x1x2x2x!quant.uniform<i8:f32, 1.0>>
  func.return %q : tensor<1x1x2x2x!quant.uniform<i8:f32, 1.0>>
}

// -----

// A per-axis quantized activation (zero points per channel): the integer kernels take one
// zero point per activation tensor.
// CHECK-LABEL: func.func @per_axis_activation
// CHECK:         nn.add %{{.*}} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
func.func @per_axis_activation(%a: tensor<2x2x!quant.uniform<i8:f32:1, {0.5:1, 0.25:-2}>>, %b: tensor<2x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x2x!quant.uniform<i8:f32, 1.0>> {
  %ad = quant.dcast %a : tensor<2x2x!quant.uniform<i8:f32:1, {0.5:1, 0.25:-2}>> to tensor<2x2xf32>
  %bd = quant.dcast %b : tensor<2x2x!quant.uniform<i8:f32, 0.5>> to tensor<2x2xf32>
  // expected-remark @+1 {{fuse-qdq: kept in float: a per-axis quantized activation has no integer kernel}}
  %s = nn.add %ad, %bd : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %q = quant.qcast %s rounding = "half_to_even" : tensor<2x2xf32> to tensor<2x2x!quant.uniform<i8:f32, 1.0>>
  func.return %q : tensor<2x2x!quant.uniform<i8:f32, 1.0>>
}

// -----

// 16-bit activations.
// CHECK-LABEL: func.func @int16_activation
// CHECK:         nn.sigmoid %{{.*}} : tensor<4xf32> -> tensor<4xf32>
func.func @int16_activation(%x: tensor<4x!quant.uniform<i16:f32, 0.001>>) -> tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %xd = quant.dcast %x : tensor<4x!quant.uniform<i16:f32, 0.001>> to tensor<4xf32>
  // expected-remark @+1 {{fuse-qdq: kept in float: i16 activations (8-bit only)}}
  %s = nn.sigmoid %xd : tensor<4xf32> -> tensor<4xf32>
  %q = quant.qcast %s rounding = "half_to_even" : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %q : tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// -----

// A softmax quantized to onnxruntime's 1/255: the integer softmax writes 1/256 only.
// CHECK-LABEL: func.func @softmax_scale
// CHECK:         nn.softmax %{{.*}} : tensor<1x4xf32> -> tensor<1x4xf32>
func.func @softmax_scale(%x: tensor<1x4x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00392156862745098:-128>> {
  %xd = quant.dcast %x : tensor<1x4x!quant.uniform<i8:f32, 0.1>> to tensor<1x4xf32>
  // expected-remark @+1 {{fuse-qdq: kept in float: a softmax quantized to scale 0.00392157 and zero point -128 (integer softmax writes scale 1/256 and the storage minimum)}}
  %s = nn.softmax %xd axis = 1 : tensor<1x4xf32> -> tensor<1x4xf32>
  %q = quant.qcast %s rounding = "half_to_even" : tensor<1x4xf32> to tensor<1x4x!quant.uniform<i8:f32, 0.00392156862745098:-128>>
  func.return %q : tensor<1x4x!quant.uniform<i8:f32, 0.00392156862745098:-128>>
}

// -----

// The same softmax quantized to 1/256 and the storage minimum fuses.
// CHECK-LABEL: func.func @softmax_fuses
// CHECK:         nn.softmax %{{.*}} -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
// CHECK-NOT:     quant.qcast
func.func @softmax_fuses(%x: tensor<1x4x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %xd = quant.dcast %x : tensor<1x4x!quant.uniform<i8:f32, 0.1>> to tensor<1x4xf32>
  %s = nn.softmax %xd axis = 1 : tensor<1x4xf32> -> tensor<1x4xf32>
  %q = quant.qcast %s rounding = "half_to_even" : tensor<1x4xf32> to tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %q : tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// -----

// A bias only known at run time.
// CHECK-LABEL: func.func @run_time_bias
// CHECK:         nn.fully_connected %{{.*}} : tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<1x2xf32>
func.func @run_time_bias(%x: tensor<1x2x!quant.uniform<i8:f32, 0.5>>, %b: tensor<2xf32>) -> tensor<1x2x!quant.uniform<i8:f32, 0.1>> {
  %wq = nn.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32, 0.5>>
  %xd = quant.dcast %x : tensor<1x2x!quant.uniform<i8:f32, 0.5>> to tensor<1x2xf32>
  %w = quant.dcast %wq : tensor<2x2x!quant.uniform<i8:f32, 0.5>> to tensor<2x2xf32>
  // expected-remark @+1 {{fuse-qdq: kept in float: a bias only known at run time}}
  %f = nn.fully_connected %xd, %w, %b : tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<1x2xf32>
  %q = quant.qcast %f rounding = "half_to_even" : tensor<1x2xf32> to tensor<1x2x!quant.uniform<i8:f32, 0.1>>
  func.return %q : tensor<1x2x!quant.uniform<i8:f32, 0.1>>
}
