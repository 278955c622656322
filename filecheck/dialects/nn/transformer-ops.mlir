// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// Round trip of the transformer ops of `nn` (dialects/nn/transformer.py): every property
// printed when it differs from its default, the optional bias and mask operands, dynamic
// dimensions.

// CHECK-LABEL: func.func @layer_norm(
// CHECK:           %[[A:.*]] = nn.layer_norm %x, %g, %b epsilon = 1.0e-12 :
// CHECK-SAME:        tensor<?x8x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<?x8x32xf32>
// CHECK:           %[[B:.*]] = nn.layer_norm %x, %g2 axis = 1 :
// CHECK-SAME:        tensor<?x8x32xf32>, tensor<8x32xf32> -> tensor<?x8x32xf32>
// CHECK:           func.return %[[A]], %[[B]]
func.func @layer_norm(%x: tensor<?x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %g2: tensor<8x32xf32>) -> (tensor<?x8x32xf32>, tensor<?x8x32xf32>) {
  %a = nn.layer_norm %x, %g, %b epsilon = 1.0e-12 : tensor<?x8x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<?x8x32xf32>
  %c = nn.layer_norm %x, %g2 axis = 1 epsilon = 1.0e-05 : tensor<?x8x32xf32>, tensor<8x32xf32> -> tensor<?x8x32xf32>
  func.return %a, %c : tensor<?x8x32xf32>, tensor<?x8x32xf32>
}

// -----

// CHECK-LABEL: func.func @silu(
// CHECK:           %[[Y:.*]] = nn.silu %x : tensor<2x?xf16> -> tensor<2x?xf16>
// CHECK:           func.return %[[Y]]
func.func @silu(%x: tensor<2x?xf16>) -> tensor<2x?xf16> {
  %y = nn.silu %x : tensor<2x?xf16> -> tensor<2x?xf16>
  func.return %y : tensor<2x?xf16>
}

// -----

// CHECK-LABEL: func.func @attention(
// CHECK:           %[[A:.*]] = nn.attention %q, %kt, %v, %m scale = 0.125 key_transposed = true :
// CHECK-SAME:        tensor<1x2x8x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x6x5xf32>, tensor<1x1x1x6xf32> -> tensor<1x2x8x5xf32>
// CHECK:           %[[B:.*]] = nn.attention %q, %k, %v :
// CHECK-SAME:        tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x5xf32> -> tensor<1x2x8x5xf32>
// CHECK:           func.return %[[A]], %[[B]]
func.func @attention(%q: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x6xf32>, %k: tensor<1x2x6x4xf32>, %v: tensor<1x2x6x5xf32>, %m: tensor<1x1x1x6xf32>) -> (tensor<1x2x8x5xf32>, tensor<1x2x8x5xf32>) {
  %a = nn.attention %q, %kt, %v, %m scale = 0.125 key_transposed = true : tensor<1x2x8x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x6x5xf32>, tensor<1x1x1x6xf32> -> tensor<1x2x8x5xf32>
  %b = nn.attention %q, %k, %v scale = 1.0 : tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x5xf32> -> tensor<1x2x8x5xf32>
  func.return %a, %b : tensor<1x2x8x5xf32>, tensor<1x2x8x5xf32>
}
