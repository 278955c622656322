// RUN: irc-opt %s --split-input-file -p lower-quantized | filecheck %s

// `irc.rescale_rounding = "single_round"` (ONNX models: onnxruntime requantizes with one
// rounding) makes every rescale of the op's integer form round once.
// CHECK-LABEL: func.func @fully_connected_single_round
// CHECK:         %[[ACC:.*]] = nn.fully_connected {{.*}} -> tensor<1x2xi32>
// CHECK:         quant.rescale %[[ACC]] multiplier = [{{.*}}] shift = [{{.*}}] rounding = "single_round"
func.func @fully_connected_single_round(%x: tensor<1x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x!quant.uniform<i8:f32, 0.3>> {
  %w = nn.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32, 0.25>>
  %y = nn.fully_connected %x, %w {irc.rescale_rounding = "single_round"} : tensor<1x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x2x!quant.uniform<i8:f32, 0.25>> -> tensor<1x2x!quant.uniform<i8:f32, 0.3>>
  func.return %y : tensor<1x2x!quant.uniform<i8:f32, 0.3>>
}

// -----

// Without the attribute: TFLite's MultiplyByQuantizedMultiplier (double rounding).
// CHECK-LABEL: func.func @fully_connected_tflite
// CHECK:         quant.rescale
// CHECK-NOT:     single_round
func.func @fully_connected_tflite(%x: tensor<1x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x!quant.uniform<i8:f32, 0.3>> {
  %w = nn.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8> -> tensor<2x2x!quant.uniform<i8:f32, 0.25>>
  %y = nn.fully_connected %x, %w : tensor<1x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x2x!quant.uniform<i8:f32, 0.25>> -> tensor<1x2x!quant.uniform<i8:f32, 0.3>>
  func.return %y : tensor<1x2x!quant.uniform<i8:f32, 0.3>>
}

// -----

// A pool whose result parameters differ requantizes with the op's rounding too.
// CHECK-LABEL: func.func @pool_single_round
// CHECK:         quant.rescale {{.*}} rounding = "single_round"
func.func @pool_single_round(%x: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.3>> {
  %y = nn.max_pool2d %x kernel = [2, 2] layout = "NHWC" {irc.rescale_rounding = "single_round"} : tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>> -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.3>>
  func.return %y : tensor<1x1x1x1x!quant.uniform<i8:f32, 0.3>>
}
