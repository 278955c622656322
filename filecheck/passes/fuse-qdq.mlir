// RUN: irc-opt %s --split-input-file --verify-diagnostics -p fuse-qdq | filecheck %s

// A conv island with per-channel weights and an i32 bias stored at s_x * s_w[c]
// (0.5 * 0.25 and 0.5 * 0.125): the quantized conv writes the qcast's type, the bias
// is the stored integers, and no cast is left inside. The ONNX qcast (half to even) makes
// it requantize with one rounding, as onnxruntime.
// CHECK-LABEL: func.func @conv
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK-DAG:     %[[W:.*]] = nn.constant dense<{{.*}}> : tensor<2x2x1x1xi8> -> tensor<2x2x1x1x!quant.uniform<i8:f32:0, {0.25, 0.125}>>
// CHECK-DAG:     %[[B:.*]] = nn.constant dense<[8, -16]> : tensor<2xi32>
// CHECK:         %[[Y:.*]] = nn.conv2d %[[X]], %[[W]], %[[B]] layout = "NCHW" {irc.rescale_rounding = "single_round"} : {{.*}} -> tensor<1x2x4x4x!quant.uniform<i8:f32, 2.0:1>>
// CHECK-NEXT:    func.return %[[Y]]
// CHECK-NOT:     quant.{{[dq]}}cast
func.func @conv(%x: tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x2x4x4x!quant.uniform<i8:f32, 2.0:1>> {
  %wq = nn.constant dense<[[[[1]], [[-2]]], [[[3]], [[4]]]]> : tensor<2x2x1x1xi8> -> tensor<2x2x1x1x!quant.uniform<i8:f32:0, {0.25, 0.125}>>
  %bq = nn.constant dense<[8, -16]> : tensor<2xi32> -> tensor<2x!quant.uniform<i32:f32:0, {0.125, 0.0625}>>
  %xd = quant.dcast %x : tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x2x4x4xf32>
  %w = quant.dcast %wq : tensor<2x2x1x1x!quant.uniform<i8:f32:0, {0.25, 0.125}>> to tensor<2x2x1x1xf32>
  %b = quant.dcast %bq : tensor<2x!quant.uniform<i32:f32:0, {0.125, 0.0625}>> to tensor<2xf32>
  %y = nn.conv2d %xd, %w, %b layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  %q = quant.qcast %y rounding = "half_to_even" : tensor<1x2x4x4xf32> to tensor<1x2x4x4x!quant.uniform<i8:f32, 2.0:1>>
  func.return %q : tensor<1x2x4x4x!quant.uniform<i8:f32, 2.0:1>>
}

// -----

// ONNX Gemm imports as fully_connected + add of the bias: both fold into one quantized
// fully_connected whose bias is requantized to s_x * s_w = 0.25 (1.0 / 0.25 = 4, 0.5 -> 2).
// CHECK-LABEL: func.func @fully_connected_with_bias_add
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x!quant.uniform<i8:f32, 0.5>>)
// CHECK-DAG:     %[[W:.*]] = nn.constant {{.*}} -> tensor<2x2x!quant.uniform<i8:f32, 0.5>>
// CHECK-DAG:     %[[B:.*]] = nn.constant dense<[4, 2]> : tensor<2xi32>
// CHECK:         %[[Y:.*]] = nn.fully_connected %[[X]], %[[W]], %[[B]]
// CHECK-NOT:     nn.add
// CHECK:         func.return %[[Y]]
func.func @fully_connected_with_bias_add(%x: tensor<1x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x!quant.uniform<i8:f32, 0.1>> {
  %wq = nn.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32, 0.5>>
  %b = nn.constant dense<[1.0, 0.5]> : tensor<2xf32>
  %xd = quant.dcast %x : tensor<1x2x!quant.uniform<i8:f32, 0.5>> to tensor<1x2xf32>
  %w = quant.dcast %wq : tensor<2x2x!quant.uniform<i8:f32, 0.5>> to tensor<2x2xf32>
  %f = nn.fully_connected %xd, %w : tensor<1x2xf32>, tensor<2x2xf32> -> tensor<1x2xf32>
  %y = nn.add %f, %b : tensor<1x2xf32>, tensor<2xf32> -> tensor<1x2xf32>
  %q = quant.qcast %y rounding = "half_to_even" : tensor<1x2xf32> to tensor<1x2x!quant.uniform<i8:f32, 0.1>>
  func.return %q : tensor<1x2x!quant.uniform<i8:f32, 0.1>>
}

// -----

// Add, concat and a pool chained: each op takes the quantized values of the previous one;
// only the island's edges keep their casts (the dcast of the output).
// CHECK-LABEL: func.func @add_concat_pool
// CHECK-SAME:    (%[[A:.*]]: tensor<1x2x2x2x!quant.uniform<i8:f32, 0.1>>, %[[B:.*]]: tensor<1x2x2x2x!quant.uniform<i8:f32, 0.2:4>>)
// CHECK-NEXT:    %[[S:.*]] = nn.add %[[A]], %[[B]] {irc.rescale_rounding = "single_round"} : {{.*}} -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.3:-2>>
// CHECK-NEXT:    %[[C:.*]] = nn.concat %[[S]], %[[A]] axis = 1 {irc.rescale_rounding = "single_round"} : {{.*}} -> tensor<1x4x2x2x!quant.uniform<i8:f32, 0.3:-2>>
// CHECK-NEXT:    %[[P:.*]] = nn.max_pool2d %[[C]]
// CHECK-SAME:      -> tensor<1x4x1x1x!quant.uniform<i8:f32, 0.3:-2>>
// CHECK-NEXT:    %[[D:.*]] = quant.dcast %[[P]]
// CHECK-NEXT:    func.return %[[D]]
func.func @add_concat_pool(%a: tensor<1x2x2x2x!quant.uniform<i8:f32, 0.1>>, %b: tensor<1x2x2x2x!quant.uniform<i8:f32, 0.2:4>>) -> tensor<1x4x1x1xf32> {
  %ad = quant.dcast %a : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.1>> to tensor<1x2x2x2xf32>
  %bd = quant.dcast %b : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.2:4>> to tensor<1x2x2x2xf32>
  %s = nn.add %ad, %bd : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %sq = quant.qcast %s rounding = "half_to_even" : tensor<1x2x2x2xf32> to tensor<1x2x2x2x!quant.uniform<i8:f32, 0.3:-2>>
  %sd = quant.dcast %sq : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.3:-2>> to tensor<1x2x2x2xf32>
  %c = nn.concat %sd, %ad axis = 1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x4x2x2xf32>
  %cq = quant.qcast %c rounding = "half_to_even" : tensor<1x4x2x2xf32> to tensor<1x4x2x2x!quant.uniform<i8:f32, 0.3:-2>>
  %cd = quant.dcast %cq : tensor<1x4x2x2x!quant.uniform<i8:f32, 0.3:-2>> to tensor<1x4x2x2xf32>
  %p = nn.max_pool2d %cd kernel = [2, 2] strides = [2, 2] layout = "NCHW" : tensor<1x4x2x2xf32> -> tensor<1x4x1x1xf32>
  %pq = quant.qcast %p rounding = "half_to_even" : tensor<1x4x1x1xf32> to tensor<1x4x1x1x!quant.uniform<i8:f32, 0.3:-2>>
  %pd = quant.dcast %pq : tensor<1x4x1x1x!quant.uniform<i8:f32, 0.3:-2>> to tensor<1x4x1x1xf32>
  func.return %pd : tensor<1x4x1x1xf32>
}

// -----

// uint8 data with int8 weights: the data moves to int8 exactly (zero point 128 - 128 = 0),
// the conv writes int8 (zero point 100 - 128) and the result moves back to uint8.
// CHECK-LABEL: func.func @uint8_data_int8_weights
// CHECK:         %[[X8:.*]] = quant.rescale %{{.*}} multiplier = [1073741824] shift = [1] : {{.*}}<u8:f32, 0.5:128>> to {{.*}}<i8:f32, 0.5>>
// CHECK:         %[[Y8:.*]] = nn.conv2d %[[X8]], {{.*}} -> tensor<1x1x2x2x!quant.uniform<i8:f32, 1.0:-28>>
// CHECK-NEXT:    %[[Y:.*]] = quant.rescale %[[Y8]] multiplier = [1073741824] shift = [1] : {{.*}} to tensor<1x1x2x2x!quant.uniform<u8:f32, 1.0:100>>
// CHECK-NEXT:    func.return %[[Y]]
func.func @uint8_data_int8_weights(%x: tensor<1x1x2x2x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<1x1x2x2x!quant.uniform<u8:f32, 1.0:100>> {
  %wq = nn.constant dense<3> : tensor<1x1x1x1xi8> -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25>>
  %xd = quant.dcast %x : tensor<1x1x2x2x!quant.uniform<u8:f32, 0.5:128>> to tensor<1x1x2x2xf32>
  %w = quant.dcast %wq : tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25>> to tensor<1x1x1x1xf32>
  %y = nn.conv2d %xd, %w layout = "NCHW" : tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x2x2xf32>
  %q = quant.qcast %y rounding = "half_to_even" : tensor<1x1x2x2xf32> to tensor<1x1x2x2x!quant.uniform<u8:f32, 1.0:100>>
  func.return %q : tensor<1x1x2x2x!quant.uniform<u8:f32, 1.0:100>>
}

// -----

// A ReLU between the conv and its qcast: the conv writes the qcast's type and a quantized
// ReLU clamps in it.
// CHECK-LABEL: func.func @conv_relu
// CHECK:         %[[Y:.*]] = nn.conv2d {{.*}} -> tensor<1x1x2x2x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[Y]] {irc.rescale_rounding = "single_round"} : tensor<1x1x2x2x!quant.uniform<i8:f32, 0.1:-128>> -> tensor<1x1x2x2x!quant.uniform<i8:f32, 0.1:-128>>
// CHECK-NEXT:    func.return %[[R]]
func.func @conv_relu(%x: tensor<1x1x2x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x2x2x!quant.uniform<i8:f32, 0.1:-128>> {
  %wq = nn.constant dense<3> : tensor<1x1x1x1xi8> -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25>>
  %xd = quant.dcast %x : tensor<1x1x2x2x!quant.uniform<i8:f32, 0.5>> to tensor<1x1x2x2xf32>
  %w = quant.dcast %wq : tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25>> to tensor<1x1x1x1xf32>
  %y = nn.conv2d %xd, %w layout = "NCHW" : tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32> -> tensor<1x1x2x2xf32>
  %r = nn.relu %y : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %q = quant.qcast %r rounding = "half_to_even" : tensor<1x1x2x2xf32> to tensor<1x1x2x2x!quant.uniform<i8:f32, 0.1:-128>>
  func.return %q : tensor<1x1x2x2x!quant.uniform<i8:f32, 0.1:-128>>
}

// -----

// Must not fire: a float op whose result has another (float) user, and a reshape that
// requantizes (left to fold-qdq).
// CHECK-LABEL: func.func @not_islands
// CHECK:         %[[S:.*]] = nn.sigmoid %{{.*}} : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    quant.qcast %[[S]]
// CHECK:         %[[R:.*]] = nn.reshape %{{.*}} : tensor<4xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    quant.qcast %[[R]]
func.func @not_islands(%x: tensor<4x!quant.uniform<i8:f32, 0.1>>) -> (tensor<4x!quant.uniform<i8:f32, 0.1>>, tensor<4xf32>, tensor<2x2x!quant.uniform<i8:f32, 0.2>>) {
  %xd = quant.dcast %x : tensor<4x!quant.uniform<i8:f32, 0.1>> to tensor<4xf32>
  %s = nn.sigmoid %xd : tensor<4xf32> -> tensor<4xf32>
  %q = quant.qcast %s rounding = "half_to_even" : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.1>>
  %r = nn.reshape %xd shape = [2, 2] : tensor<4xf32> -> tensor<2x2xf32>
  %rq = quant.qcast %r rounding = "half_to_even" : tensor<2x2xf32> to tensor<2x2x!quant.uniform<i8:f32, 0.2>>
  func.return %q, %s, %rq : tensor<4x!quant.uniform<i8:f32, 0.1>>, tensor<4xf32>, tensor<2x2x!quant.uniform<i8:f32, 0.2>>
}

// -----

// A TFLite-style qcast (half away from zero) keeps TFLite's double rounding: no attribute.
// CHECK-LABEL: func.func @tflite_rounding
// CHECK:         %[[Y:.*]] = nn.add %{{.*}}, %{{.*}} : {{.*}} -> tensor<4x!quant.uniform<i8:f32, 0.3>>
// CHECK-NOT:     irc.rescale_rounding
func.func @tflite_rounding(%a: tensor<4x!quant.uniform<i8:f32, 0.1>>, %b: tensor<4x!quant.uniform<i8:f32, 0.2>>) -> tensor<4x!quant.uniform<i8:f32, 0.3>> {
  %ad = quant.dcast %a : tensor<4x!quant.uniform<i8:f32, 0.1>> to tensor<4xf32>
  %bd = quant.dcast %b : tensor<4x!quant.uniform<i8:f32, 0.2>> to tensor<4xf32>
  %s = nn.add %ad, %bd : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %q = quant.qcast %s : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.3>>
  func.return %q : tensor<4x!quant.uniform<i8:f32, 0.3>>
}

// -----

// ONNX MatMul by a constant quantized per column: a fully_connected whose [N, K] weights
// are the transposed constant, quantized per output channel.
// CHECK-LABEL: func.func @matmul_by_constant
// CHECK-DAG:     %[[W:.*]] = nn.constant dense<{{\[}}[1, 3], [2, 4]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32:0, {0.5, 0.25}>>
// CHECK:         %[[Y:.*]] = nn.fully_connected %{{.*}}, %[[W]] {irc.rescale_rounding = "single_round"}
// CHECK-NOT:     nn.batch_matmul
func.func @matmul_by_constant(%x: tensor<3x2x!quant.uniform<i8:f32, 0.1>>) -> tensor<3x2x!quant.uniform<i8:f32, 0.2>> {
  %wq = nn.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
  %xd = quant.dcast %x : tensor<3x2x!quant.uniform<i8:f32, 0.1>> to tensor<3x2xf32>
  %w = quant.dcast %wq : tensor<2x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>> to tensor<2x2xf32>
  %y = nn.batch_matmul %xd, %w : tensor<3x2xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
  %q = quant.qcast %y rounding = "half_to_even" : tensor<3x2xf32> to tensor<3x2x!quant.uniform<i8:f32, 0.2>>
  func.return %q : tensor<3x2x!quant.uniform<i8:f32, 0.2>>
}

// -----

// Swish (x * sigmoid(x)) and a global average pool, as EfficientNet's QDQ islands.
// CHECK-LABEL: func.func @swish_and_mean
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x2x2x!quant.uniform<i8:f32, 0.1>>)
// CHECK-NEXT:    %[[S:.*]] = nn.sigmoid %[[X]] {{.*}} -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.00390625:-128>>
// CHECK-NEXT:    %[[M:.*]] = nn.mul %[[X]], %[[S]] {{.*}} -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.05:-20>>
// CHECK-NEXT:    %[[R:.*]] = nn.reduce %[[M]] kind = "mean" axes = [2, 3] keepdims = true {{.*}} -> tensor<1x2x1x1x!quant.uniform<i8:f32, 0.05:-20>>
// CHECK-NEXT:    %[[D:.*]] = quant.dcast %[[R]]
// CHECK-NEXT:    func.return %[[D]]
func.func @swish_and_mean(%x: tensor<1x2x2x2x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x2x1x1xf32> {
  %xd = quant.dcast %x : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.1>> to tensor<1x2x2x2xf32>
  %s = nn.sigmoid %xd : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %sq = quant.qcast %s rounding = "half_to_even" : tensor<1x2x2x2xf32> to tensor<1x2x2x2x!quant.uniform<i8:f32, 0.00390625:-128>>
  %sd = quant.dcast %sq : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.00390625:-128>> to tensor<1x2x2x2xf32>
  %m = nn.mul %xd, %sd : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %mq = quant.qcast %m rounding = "half_to_even" : tensor<1x2x2x2xf32> to tensor<1x2x2x2x!quant.uniform<i8:f32, 0.05:-20>>
  %md = quant.dcast %mq : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.05:-20>> to tensor<1x2x2x2xf32>
  %r = nn.reduce %md kind = "mean" axes = [2, 3] keepdims = true : tensor<1x2x2x2xf32> -> tensor<1x2x1x1xf32>
  %rq = quant.qcast %r rounding = "half_to_even" : tensor<1x2x1x1xf32> to tensor<1x2x1x1x!quant.uniform<i8:f32, 0.05:-20>>
  %rd = quant.dcast %rq : tensor<1x2x1x1x!quant.uniform<i8:f32, 0.05:-20>> to tensor<1x2x1x1xf32>
  func.return %rd : tensor<1x2x1x1xf32>
}
