// RUN: irc-opt %s --split-input-file -p canonicalize | filecheck %s

// canonicalize's transformer patterns (passes/transformer_patterns.py): GELU as
// torch.onnx.export decomposes it becomes one nn.gelu.

// The exact (erf) form: x * (1 + erf(x / sqrt(2))) * 0.5.
// CHECK-LABEL: func.func @erf_gelu
// CHECK-NEXT:    %[[Y:.*]] = nn.gelu %x : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x8xf32>
func.func @erf_gelu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %e = nn.erf %d : tensor<2x8xf32> -> tensor<2x8xf32>
  %a = nn.add %e, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %m = nn.mul %x, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %y = nn.mul %m, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// -----

// The half first, the divide as a multiply by 1/sqrt(2), operands swapped.
// CHECK-LABEL: func.func @erf_gelu_half_first
// CHECK-NEXT:    %[[Y:.*]] = nn.gelu %x : tensor<?x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @erf_gelu_half_first(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = nn.constant dense<0.707106769> : tensor<1xf32>
  %one = nn.constant dense<1.0> : tensor<1xf32>
  %half = nn.constant dense<0.5> : tensor<1xf32>
  %d = nn.mul %r, %x : tensor<1xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %e = nn.erf %d : tensor<?x4xf32> -> tensor<?x4xf32>
  %a = nn.add %one, %e : tensor<1xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %h = nn.mul %half, %x : tensor<1xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %y = nn.mul %h, %a : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// -----

// x * ((1 + erf(...)) * 0.5).
// CHECK-LABEL: func.func @erf_gelu_half_inside
// CHECK-NEXT:    nn.gelu %x : tensor<3xf32> -> tensor<3xf32>
// CHECK-NEXT:    func.return
func.func @erf_gelu_half_inside(%x: tensor<3xf32>) -> tensor<3xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %d = nn.div %x, %sqrt2 : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %e = nn.erf %d : tensor<3xf32> -> tensor<3xf32>
  %a = nn.add %e, %one : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %h = nn.mul %a, %half : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %y = nn.mul %x, %h : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// The tanh form (GPT-2's gelu_new), the cube as pow(x, 3).
// CHECK-LABEL: func.func @tanh_gelu
// CHECK-NEXT:    %[[Y:.*]] = nn.gelu %x approximate = "tanh" : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @tanh_gelu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %three = nn.constant dense<3.0> : tensor<f32>
  %c = nn.constant dense<0.044715> : tensor<f32>
  %k = nn.constant dense<0.797884583> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %p = nn.pow %x, %three : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %q = nn.mul %p, %c : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %s = nn.add %x, %q : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %t = nn.mul %s, %k : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %u = nn.tanh %t : tensor<2x8xf32> -> tensor<2x8xf32>
  %a = nn.add %u, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %h = nn.mul %x, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %y = nn.mul %h, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// -----

// The cube as x * x * x, the sum and products the other way round.
// CHECK-LABEL: func.func @tanh_gelu_products
// CHECK-NEXT:    nn.gelu %x approximate = "tanh"
// CHECK-NEXT:    func.return
func.func @tanh_gelu_products(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = nn.constant dense<0.044715> : tensor<f32>
  %k = nn.constant dense<0.797884583> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %sq = nn.mul %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %p = nn.mul %sq, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %q = nn.mul %c, %p : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %s = nn.add %q, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %t = nn.mul %k, %s : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %u = nn.tanh %t : tensor<4xf32> -> tensor<4xf32>
  %a = nn.add %one, %u : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %m = nn.mul %a, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %y = nn.mul %half, %m : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// Not a GELU: an intermediate value has another user, a wrong constant, a different x.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT:     nn.gelu
// CHECK:         func.return
func.func @not_gelu(%x: tensor<3xf32>, %z: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  // the erf is used twice
  %d0 = nn.div %x, %sqrt2 : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %e0 = nn.erf %d0 : tensor<3xf32> -> tensor<3xf32>
  %a0 = nn.add %e0, %one : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %m0 = nn.mul %x, %a0 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %y0 = nn.mul %m0, %half : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  // divided by 2, not sqrt(2)
  %d1 = nn.div %x, %two : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %e1 = nn.erf %d1 : tensor<3xf32> -> tensor<3xf32>
  %a1 = nn.add %e1, %one : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %m1 = nn.mul %x, %a1 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %y1 = nn.mul %m1, %half : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  // multiplied by another tensor than the erf's
  %d2 = nn.div %x, %sqrt2 : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %e2 = nn.erf %d2 : tensor<3xf32> -> tensor<3xf32>
  %a2 = nn.add %e2, %one : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %m2 = nn.mul %z, %a2 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %y2 = nn.mul %m2, %half : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  func.return %y0, %e0, %y1, %y2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// The half broadcasts the result to a larger shape: left as it is.
// CHECK-LABEL: func.func @broadcasting_half
// CHECK-NOT:     nn.gelu
// CHECK:         nn.erf
func.func @broadcasting_half(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<2x3xf32>
  %d = nn.div %x, %sqrt2 : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %e = nn.erf %d : tensor<3xf32> -> tensor<3xf32>
  %a = nn.add %e, %one : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %m = nn.mul %x, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %y = nn.mul %m, %half : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
