// RUN: irc-opt %s --split-input-file -p canonicalize | filecheck %s

// A float16 model's transformer patterns fuse as the float32 model's do (so that after
// widen-fp16 it runs the float32 model's kernels): canonicalize's GELU patterns accept the
// float16 roundings of their constants (sqrt(2) is 1.4140625 in half, sqrt(2/pi)
// 0.797851562, 0.044715 0.0447082520), and GPT-2's Where(keep, scores, finfo.min) mask
// accepts half's lowest, -65504, which float16 conversions clip finfo.min to.

// CHECK-LABEL: func.func @erf_gelu_f16
// CHECK-NEXT:    %[[Y:.*]] = nn.gelu %x : tensor<2x8xf16> -> tensor<2x8xf16>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x8xf16>
func.func @erf_gelu_f16(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %sqrt2 = nn.constant dense<1.4140625> : tensor<f16>
  %one = nn.constant dense<1.0> : tensor<f16>
  %half = nn.constant dense<0.5> : tensor<f16>
  %d = nn.div %x, %sqrt2 : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
  %e = nn.erf %d : tensor<2x8xf16> -> tensor<2x8xf16>
  %a = nn.add %e, %one : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
  %m = nn.mul %x, %a : tensor<2x8xf16>, tensor<2x8xf16> -> tensor<2x8xf16>
  %y = nn.mul %m, %half : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
  func.return %y : tensor<2x8xf16>
}

// -----

// Not the half rounding of sqrt(2) (one half ulp off): no GELU.
// CHECK-LABEL: func.func @erf_gelu_f16_other_constant
// CHECK-NOT:     nn.gelu
// CHECK:         nn.erf
func.func @erf_gelu_f16_other_constant(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %sqrt2 = nn.constant dense<1.41503906> : tensor<f16>
  %one = nn.constant dense<1.0> : tensor<f16>
  %half = nn.constant dense<0.5> : tensor<f16>
  %d = nn.div %x, %sqrt2 : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
  %e = nn.erf %d : tensor<2x8xf16> -> tensor<2x8xf16>
  %a = nn.add %e, %one : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
  %m = nn.mul %x, %a : tensor<2x8xf16>, tensor<2x8xf16> -> tensor<2x8xf16>
  %y = nn.mul %m, %half : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
  func.return %y : tensor<2x8xf16>
}

// -----

// GPT-2's tanh form with its constants in half.
// CHECK-LABEL: func.func @tanh_gelu_f16
// CHECK-NEXT:    %[[Y:.*]] = nn.gelu %x approximate = "tanh" : tensor<4xf16> -> tensor<4xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @tanh_gelu_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %three = nn.constant dense<3.0> : tensor<f16>
  %c = nn.constant dense<0.044708252> : tensor<f16>
  %k = nn.constant dense<0.797851562> : tensor<f16>
  %one = nn.constant dense<1.0> : tensor<f16>
  %half = nn.constant dense<0.5> : tensor<f16>
  %p = nn.pow %x, %three : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
  %pc = nn.mul %p, %c : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
  %in = nn.add %x, %pc : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  %s = nn.mul %in, %k : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
  %t = nn.tanh %s : tensor<4xf16> -> tensor<4xf16>
  %h = nn.mul %x, %half : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
  %a = nn.add %t, %one : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
  %y = nn.mul %h, %a : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  func.return %y : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @attention_where_mask_f16
// CHECK-DAG:     %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<f16>
// CHECK-DAG:     %[[L:.*]] = nn.constant dense<-6.550400e+04> : tensor<f16>
// CHECK:         %[[M:.*]] = nn.select %keep, %[[Z]], %[[L]] : tensor<1x1x8x8xi1>, tensor<f16>, tensor<f16> -> tensor<1x1x8x8xf16>
// CHECK-NEXT:    %[[O:.*]] = nn.attention %q, %kt, %v, %[[M]] scale = 0.5 key_transposed = true
// CHECK-NEXT:    func.return %[[O]]
func.func @attention_where_mask_f16(%q: tensor<1x2x8x4xf16>, %kt: tensor<1x2x4x8xf16>, %v: tensor<1x2x8x4xf16>, %keep: tensor<1x1x8x8xi1>) -> tensor<1x2x8x4xf16> {
  %d = nn.constant dense<2.0> : tensor<f16>
  %low = nn.constant dense<-65504.0> : tensor<f16>
  %s = nn.batch_matmul %q, %kt : tensor<1x2x8x4xf16>, tensor<1x2x4x8xf16> -> tensor<1x2x8x8xf16>
  %sc = nn.div %s, %d : tensor<1x2x8x8xf16>, tensor<f16> -> tensor<1x2x8x8xf16>
  %w = nn.select %keep, %sc, %low : tensor<1x1x8x8xi1>, tensor<1x2x8x8xf16>, tensor<f16> -> tensor<1x2x8x8xf16>
  %p = nn.softmax %w axis = -1 : tensor<1x2x8x8xf16> -> tensor<1x2x8x8xf16>
  %o = nn.batch_matmul %p, %v : tensor<1x2x8x8xf16>, tensor<1x2x8x4xf16> -> tensor<1x2x8x4xf16>
  func.return %o : tensor<1x2x8x4xf16>
}

// -----

// In half, a floor above -65504 is not softmax-negligible: the graph stays.
// CHECK-LABEL: func.func @attention_where_f16_small_floor
// CHECK-NOT:     nn.attention
// CHECK:         nn.softmax
func.func @attention_where_f16_small_floor(%q: tensor<1x2x8x4xf16>, %kt: tensor<1x2x4x8xf16>, %v: tensor<1x2x8x4xf16>, %keep: tensor<1x1x8x8xi1>) -> tensor<1x2x8x4xf16> {
  %d = nn.constant dense<2.0> : tensor<f16>
  %low = nn.constant dense<-1000.0> : tensor<f16>
  %s = nn.batch_matmul %q, %kt : tensor<1x2x8x4xf16>, tensor<1x2x4x8xf16> -> tensor<1x2x8x8xf16>
  %sc = nn.div %s, %d : tensor<1x2x8x8xf16>, tensor<f16> -> tensor<1x2x8x8xf16>
  %w = nn.select %keep, %sc, %low : tensor<1x1x8x8xi1>, tensor<1x2x8x8xf16>, tensor<f16> -> tensor<1x2x8x8xf16>
  %p = nn.softmax %w axis = -1 : tensor<1x2x8x8xf16> -> tensor<1x2x8x8xf16>
  %o = nn.batch_matmul %p, %v : tensor<1x2x8x8xf16>, tensor<1x2x8x4xf16> -> tensor<1x2x8x4xf16>
  func.return %o : tensor<1x2x8x4xf16>
}
