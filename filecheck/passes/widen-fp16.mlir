// RUN: irc-opt %s --split-input-file --verify-diagnostics -p widen-fp16 | filecheck %s

// keep_io_types: float32 in and out, a float16 body. The constant holds the same values in
// f32 (65504, the largest half, stays exact), the ops compute in f32, the two casts go.
// The module is marked as a float16 model's (irc.pipelines gives its executables each
// target's float16_lowering_passes: 16-bit storage on opencl).
// CHECK:       builtin.module attributes {irc.float16_model} {
// CHECK-LABEL: func.func @keep_io_types
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<[1.000000e+00, -2.000000e+00, 5.000000e-01, 6.550400e+04]> : tensor<4xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[X]], %[[W]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[A]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<4xf32>
func.func @keep_io_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = nn.cast %x : tensor<4xf32> -> tensor<4xf16>
  %w = nn.constant dense<[1.0, -2.0, 0.5, 65504.0]> : tensor<4xf16>
  %a = nn.add %h, %w : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  %r = nn.relu %a : tensor<4xf16> -> tensor<4xf16>
  %y = nn.cast %r : tensor<4xf16> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// A float16 signature stays: casts at the entry and before the return, with a remark.
// Integer casts from f16 read the widened value.
// CHECK-LABEL: func.func @half_signature
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf16>) -> (tensor<2x3xf16>, tensor<2x3xi32>)
// CHECK-NEXT:    %[[W:.*]] = nn.cast %[[X]] : tensor<2x3xf16> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.sigmoid %[[W]] : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[I:.*]] = nn.cast %[[S]] : tensor<2x3xf32> -> tensor<2x3xi32>
// CHECK-NEXT:    %[[H:.*]] = nn.cast %[[S]] : tensor<2x3xf32> -> tensor<2x3xf16>
// CHECK-NEXT:    func.return %[[H]], %[[I]] : tensor<2x3xf16>, tensor<2x3xi32>
// expected-remark @+1 {{widen-fp16: @half_signature keeps its float16 signature (arguments [0], results [0]): cast to float32 at the entry and back before the return}}
func.func @half_signature(%x: tensor<2x3xf16>) -> (tensor<2x3xf16>, tensor<2x3xi32>) {
  %s = nn.sigmoid %x : tensor<2x3xf16> -> tensor<2x3xf16>
  %i = nn.cast %s : tensor<2x3xf16> -> tensor<2x3xi32>
  func.return %s, %i : tensor<2x3xf16>, tensor<2x3xi32>
}

// -----

// Must not fire on float32 or float64 modules: nothing changes, no remark, no mark.
// CHECK:       builtin.module {
// CHECK-LABEL: func.func @no_half
// CHECK-NEXT:    %[[C:.*]] = nn.cast %{{.*}} : tensor<4xf32> -> tensor<4xf64>
// CHECK-NEXT:    %[[E:.*]] = nn.exp %[[C]] : tensor<4xf64> -> tensor<4xf64>
// CHECK-NEXT:    func.return %[[E]]
func.func @no_half(%x: tensor<4xf32>) -> tensor<4xf64> {
  %c = nn.cast %x : tensor<4xf32> -> tensor<4xf64>
  %e = nn.exp %c : tensor<4xf64> -> tensor<4xf64>
  func.return %e : tensor<4xf64>
}
