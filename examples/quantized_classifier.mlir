// An int8 classifier head as TFLite defines it: per-channel quantized weights, an i32 bias,
// requantization and a float output through quant.dcast.
//
//   irc-opt examples/quantized_classifier.mlir -p canonicalize

func.func @main(%x: tensor<1x4x4x8x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<1x10xf32> {
  %mean = nn.reduce %x kind = "mean" axes = [1, 2]
      : tensor<1x4x4x8x!quant.uniform<i8:f32, 0.05:-3>> -> tensor<1x8x!quant.uniform<i8:f32, 0.04:-5>>
  %w = nn.constant dense<3> : tensor<10x8xi8>
      -> tensor<10x8x!quant.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.01, 0.03, 0.01, 0.02, 0.01, 0.02, 0.01, 0.05}>>
  %b = nn.constant dense<100> : tensor<10xi32>
  %fc = nn.fully_connected %mean, %w, %b
      : tensor<1x8x!quant.uniform<i8:f32, 0.04:-5>>,
        tensor<10x8x!quant.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.01, 0.03, 0.01, 0.02, 0.01, 0.02, 0.01, 0.05}>>,
        tensor<10xi32>
      -> tensor<1x10x!quant.uniform<i8:f32, 0.1:2>>
  %probs = nn.softmax %fc : tensor<1x10x!quant.uniform<i8:f32, 0.1:2>>
      -> tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>>
  %out = quant.dcast %probs : tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>> to tensor<1x10xf32>
  func.return %out : tensor<1x10xf32>
}
