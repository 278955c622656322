// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'widen-fp16{targets=cpu precision=fp16}' | filecheck %s

// precision=fp16 on cpu: the ops without a float16 kernel there (softmax, batch_matmul,
// gather of a float16 table...) are widened locally: nn.cast f16 -> f32 on each f16
// operand (one per value), the op on f32, nn.cast f32 -> f16 on each f16 result. The ops
// with float16 kernels (mul, the casts, reshape) keep their f16 tensors. Cast pairs
// between widened ops stay: every op rounds its result to half, as the model's float16
// semantics (and the reference target) say. The module is not marked a widened float16
// model.
// CHECK-NOT:   irc.float16_model
// CHECK-LABEL: func.func @attention_tail
// CHECK-NEXT:    %[[H:.*]] = nn.cast %{{.*}} : tensor<2x8xf32> -> tensor<2x8xf16>
// CHECK-NEXT:    %[[VH:.*]] = nn.cast %{{.*}} : tensor<2x8x4xf32> -> tensor<2x8x4xf16>
// CHECK-NEXT:    %[[VW:.*]] = nn.cast %[[VH]] : tensor<2x8x4xf16> -> tensor<2x8x4xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.constant dense<5.000000e-01> : tensor<f16>
// CHECK-NEXT:    %[[A:.*]] = nn.mul %[[H]], %[[S]] : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
// CHECK-NEXT:    %[[AW:.*]] = nn.cast %[[A]] : tensor<2x8xf16> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[P:.*]] = nn.softmax %[[AW]] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[PH:.*]] = nn.cast %[[P]] : tensor<2x8xf32> -> tensor<2x8xf16>
// CHECK-NEXT:    %[[Q:.*]] = nn.reshape %[[PH]] shape = [2, 1, 8] : tensor<2x8xf16> -> tensor<2x1x8xf16>
// CHECK-NEXT:    %[[QW:.*]] = nn.cast %[[Q]] : tensor<2x1x8xf16> -> tensor<2x1x8xf32>
// CHECK-NEXT:    %[[M:.*]] = nn.batch_matmul %[[QW]], %[[VW]] : tensor<2x1x8xf32>, tensor<2x8x4xf32> -> tensor<2x1x4xf32>
// CHECK-NEXT:    %[[MH:.*]] = nn.cast %[[M]] : tensor<2x1x4xf32> -> tensor<2x1x4xf16>
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %[[MH]] shape = [2, 4] : tensor<2x1x4xf16> -> tensor<2x4xf16>
// CHECK-NEXT:    %[[Y:.*]] = nn.cast %[[R]] : tensor<2x4xf16> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x4xf32>
// expected-remark @+1 {{widen-fp16: @attention_tail computes 2 float16 ops in float32 between casts (no target keeps them in float16): nn.batch_matmul, nn.softmax}}
func.func @attention_tail(%x: tensor<2x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x4xf32> {
  %h = nn.cast %x : tensor<2x8xf32> -> tensor<2x8xf16>
  %vh = nn.cast %v : tensor<2x8x4xf32> -> tensor<2x8x4xf16>
  %s = nn.constant dense<0.5> : tensor<f16>
  %a = nn.mul %h, %s : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
  %p = nn.softmax %a axis = -1 : tensor<2x8xf16> -> tensor<2x8xf16>
  %q = nn.reshape %p shape = [2, 1, 8] : tensor<2x8xf16> -> tensor<2x1x8xf16>
  %m = nn.batch_matmul %q, %vh : tensor<2x1x8xf16>, tensor<2x8x4xf16> -> tensor<2x1x4xf16>
  %r = nn.reshape %m shape = [2, 4] : tensor<2x1x4xf16> -> tensor<2x4xf16>
  %y = nn.cast %r : tensor<2x4xf16> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

// A float16 table read by an op without a float16 kernel gets an f32 twin (the same
// values; the f16 constant goes when nothing else reads it); one widening cast per value,
// shared by both widened readers; the float16 add keeps its operand.
// CHECK-LABEL: func.func @shared
// CHECK-NEXT:    %[[X:.*]] = nn.cast %{{.*}} : tensor<2x4xf32> -> tensor<2x4xf16>
// CHECK-NEXT:    %[[XW:.*]] = nn.cast %[[X]] : tensor<2x4xf16> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[T:.*]] = nn.constant dense<{{.*}}> : tensor<2x4xf32>
// CHECK-NEXT:    %[[G:.*]] = nn.gather %[[T]], %{{.*}} : tensor<2x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[GH:.*]] = nn.cast %[[G]] : tensor<2x4xf32> -> tensor<2x4xf16>
// CHECK-NEXT:    %[[P:.*]] = nn.softmax %[[XW]] : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[PH:.*]] = nn.cast %[[P]] : tensor<2x4xf32> -> tensor<2x4xf16>
// CHECK-NEXT:    %[[L:.*]] = nn.log_softmax %[[XW]] : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[LH:.*]] = nn.cast %[[L]] : tensor<2x4xf32> -> tensor<2x4xf16>
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[GH]], %[[PH]] : tensor<2x4xf16>, tensor<2x4xf16> -> tensor<2x4xf16>
// CHECK-NEXT:    %[[B:.*]] = nn.add %[[A]], %[[LH]] : tensor<2x4xf16>, tensor<2x4xf16> -> tensor<2x4xf16>
// expected-remark @+1 {{widen-fp16: @shared computes 3 float16 ops in float32 between casts (no target keeps them in float16): nn.gather, nn.log_softmax, nn.softmax}}
func.func @shared(%x: tensor<2x4xf32>, %i: tensor<2xi64>) -> tensor<2x4xf32> {
  %h = nn.cast %x : tensor<2x4xf32> -> tensor<2x4xf16>
  %t = nn.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 65504.0]]> : tensor<2x4xf16>
  %g = nn.gather %t, %i : tensor<2x4xf16>, tensor<2xi64> -> tensor<2x4xf16>
  %p = nn.softmax %h axis = -1 : tensor<2x4xf16> -> tensor<2x4xf16>
  %l = nn.log_softmax %h axis = -1 : tensor<2x4xf16> -> tensor<2x4xf16>
  %a = nn.add %g, %p : tensor<2x4xf16>, tensor<2x4xf16> -> tensor<2x4xf16>
  %b = nn.add %a, %l : tensor<2x4xf16>, tensor<2x4xf16> -> tensor<2x4xf16>
  %y = nn.cast %b : tensor<2x4xf16> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

// The cpu target keeps every op of this function in float16: nothing is widened, no remark.
// CHECK-LABEL: func.func @all_kept
// CHECK-NEXT:    nn.cast %{{.*}} : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT:    nn.relu %{{.*}} : tensor<4xf16> -> tensor<4xf16>
// CHECK-NEXT:    nn.cast %{{.*}} : tensor<4xf16> -> tensor<4xf32>
func.func @all_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = nn.cast %x : tensor<4xf32> -> tensor<4xf16>
  %r = nn.relu %h : tensor<4xf16> -> tensor<4xf16>
  %y = nn.cast %r : tensor<4xf16> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// A bad precision is one error at the module.
// RUN: not irc-opt %s -p 'widen-fp16{targets=cpu precision=fp8}' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: widen-fp16: precision must be fp16 or fp32, got 'fp8'
