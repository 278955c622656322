// RUN: irc-opt %s --split-input-file --verify-diagnostics -p infer-shapes | filecheck %s

// The conv2d result is declared fully dynamic; its shape rule knows every dimension, and
// the function's result type follows the refined func.return operand.
// CHECK-LABEL: func.func @conv2d_result
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8x8x3xf32>, %[[W:.*]]: tensor<16x3x3x3xf32>) -> tensor<1x4x4x16xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.conv2d %[[X]], %[[W]] strides = [2, 2] pads = [0, 0, 1, 1] layout = "NHWC"
// CHECK-SAME:      -> tensor<1x4x4x16xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<1x4x4x16xf32>
func.func @conv2d_result(%x: tensor<1x8x8x3xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<?x?x?x16xf32> {
  %y = nn.conv2d %x, %w strides = [2, 2] pads = [0, 0, 1, 1] layout = "NHWC" : tensor<1x8x8x3xf32>, tensor<16x3x3x3xf32> -> tensor<?x?x?x16xf32>
  func.return %y : tensor<?x?x?x16xf32>
}

// -----

// Refinements flow downstream in program order.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:.*]]: tensor<8xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %[[X]] shape = [2, -1] : tensor<8xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.add %[[R]], %[[R]] : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[T:.*]] = nn.relu %[[S]] : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[T]] : tensor<2x4xf32>
func.func @chain(%x: tensor<8xf32>) -> tensor<?x?xf32> {
  %r = nn.reshape %x shape = [2, -1] : tensor<8xf32> -> tensor<?x?xf32>
  %s = nn.add %r, %r : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %t = nn.relu %s : tensor<?x?xf32> -> tensor<?x?xf32>
  func.return %t : tensor<?x?xf32>
}

// -----

// A dynamic batch stays dynamic; the other dimensions become static.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-SAME:    -> tensor<?x4x4x16xf32>
// CHECK:         nn.max_pool2d %{{.*}} kernel = [2, 2] strides = [2, 2] layout = "NHWC" : tensor<?x8x8x16xf32> -> tensor<?x4x4x16xf32>
func.func @dynamic_batch(%x: tensor<?x8x8x16xf32>) -> tensor<?x?x?x?xf32> {
  %y = nn.max_pool2d %x kernel = [2, 2] strides = [2, 2] layout = "NHWC" : tensor<?x8x8x16xf32> -> tensor<?x?x?x?xf32>
  func.return %y : tensor<?x?x?x?xf32>
}

// -----

// A declared static size is never made dynamic again.
// CHECK-LABEL: func.func @never_less_static
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.relu %[[X]] : tensor<?x4xf32> -> tensor<2x4xf32>
func.func @never_less_static(%x: tensor<?x4xf32>) -> tensor<2x4xf32> {
  %y = nn.relu %x : tensor<?x4xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @split_results
// CHECK:         nn.split %{{.*}} axis = 1 sizes = [2, 6] : tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x6xf32>
// CHECK-NEXT:    func.return %{{.*}}, %{{.*}} : tensor<1x2xf32>, tensor<1x6xf32>
func.func @split_results(%x: tensor<1x8xf32>) -> (tensor<?x?xf32>, tensor<1x?xf32>) {
  %a, %b = nn.split %x axis = 1 sizes = [2, 6] : tensor<1x8xf32> -> tensor<?x?xf32>, tensor<1x?xf32>
  func.return %a, %b : tensor<?x?xf32>, tensor<1x?xf32>
}

// -----

// The quant casts keep their input's shape, so they follow it.
// CHECK-LABEL: func.func @through_quant_casts
// CHECK-SAME:    -> tensor<2x4xf32>
// CHECK:         %[[Q:.*]] = quant.qcast %{{.*}} : tensor<2x4xf32> to tensor<2x4x!quant.uniform<i8:f32, 0.5>>
// CHECK-NEXT:    %[[D:.*]] = quant.dcast %[[Q]] : tensor<2x4x!quant.uniform<i8:f32, 0.5>> to tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[D]] : tensor<2x4xf32>
func.func @through_quant_casts(%x: tensor<8xf32>) -> tensor<?x4xf32> {
  %r = nn.reshape %x shape = [2, 4] : tensor<8xf32> -> tensor<?x4xf32>
  %q = quant.qcast %r : tensor<?x4xf32> to tensor<?x4x!quant.uniform<i8:f32, 0.5>>
  %d = quant.dcast %q : tensor<?x4x!quant.uniform<i8:f32, 0.5>> to tensor<?x4xf32>
  func.return %d : tensor<?x4xf32>
}

// -----

// A captured value refines the region's block argument; the yielded one its result.
// CHECK-LABEL: func.func @through_delegate_region
// CHECK-SAME:    -> tensor<2x4xf32>
// CHECK:         %[[R:.*]] = nn.reshape %{{.*}} shape = [2, 4] : tensor<8xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[G:.*]] = delegate.region "cpu" (%[[A:.*]] = %[[R]] : tensor<2x4xf32>) -> (tensor<2x4xf32>) {
// CHECK-NEXT:      %[[S:.*]] = nn.relu %[[A]] : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:      delegate.yield %[[S]] : tensor<2x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[T:.*]] = nn.neg %[[G]] : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[T]] : tensor<2x4xf32>
func.func @through_delegate_region(%x: tensor<8xf32>) -> tensor<?x4xf32> {
  %r = nn.reshape %x shape = [2, 4] : tensor<8xf32> -> tensor<?x4xf32>
  %g = delegate.region "cpu" (%a = %r : tensor<?x4xf32>) -> (tensor<?x4xf32>) {
    %s = nn.relu %a : tensor<?x4xf32> -> tensor<?x4xf32>
    delegate.yield %s : tensor<?x4xf32>
  }
  %t = nn.neg %g : tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %t : tensor<?x4xf32>
}

// -----

// Must not fire: func.call needs its operand types to match the callee's signature
// exactly, so %r keeps its declared type, and the called function keeps its signature.
// CHECK-LABEL: func.func @callee
// CHECK-SAME:    (%{{.*}}: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-LABEL: func.func @used_by_call
// CHECK:         %[[R:.*]] = nn.reshape %{{.*}} shape = [2, 4] : tensor<8xf32> -> tensor<?x4xf32>
// CHECK-NEXT:    %{{.*}} = func.call @callee(%[[R]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
func.func @callee(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %b = nn.relu %a : tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %b : tensor<?x4xf32>
}
func.func @used_by_call(%x: tensor<8xf32>) -> tensor<?x4xf32> {
  %r = nn.reshape %x shape = [2, 4] : tensor<8xf32> -> tensor<?x4xf32>
  %c = func.call @callee(%r) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %c : tensor<?x4xf32>
}

// -----

// Valid as written (%r may be any ?x4), but once %r is known to be 2x4 the declared 3x4
// result of the add contradicts the shape rule.
func.func @contradiction(%x: tensor<8xf32>) -> tensor<3x4xf32> {
  %r = nn.reshape %x shape = [2, 4] : tensor<8xf32> -> tensor<?x4xf32>
  // expected-error @+1 {{inferred result shape 2x4 of 'nn.add' is incompatible with declared shape 3x4}}
  %s = nn.add %r, %r : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<3x4xf32>
  func.return %s : tensor<3x4xf32>
}
