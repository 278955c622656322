// RUN: irc-opt %s --split-input-file -p fuse-activations | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'fuse-activations{targets=cpu}' | filecheck %s --check-prefix=CPU

// Whole-module mode: relu, relu6 and clip[0, 6] / clip[-1, 1] after a float conv become the
// conv's fused activation; the conv keeps its operands and properties.
// CHECK-LABEL: func.func @conv_activations
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2xf32>)
// CHECK:         %[[W:.*]] = nn.constant
// CHECK-NEXT:    %[[A:.*]] = nn.conv2d %[[X]], %[[W]] layout = "NHWC" activation = "relu" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.conv2d %[[A]], %[[W]] layout = "NHWC" activation = "relu6"
// CHECK-NEXT:    %[[C:.*]] = nn.conv2d %[[B]], %[[W]] layout = "NHWC" activation = "relu6"
// CHECK-NEXT:    %[[D:.*]] = nn.conv2d %[[C]], %[[W]] layout = "NHWC" activation = "relu_n1_to_1"
// CHECK-NEXT:    func.return %[[D]]
// CPU-LABEL: func.func @conv_activations
// CPU:         nn.relu
// CPU:         nn.relu6
func.func @conv_activations(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = nn.constant dense<0.5> : tensor<2x1x1x2xf32>
  %a = nn.conv2d %x, %w pads = [0, 0, 0, 0] layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
  %ar = nn.relu %a : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %b = nn.conv2d %ar, %w layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
  %br = nn.relu6 %b : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %c = nn.conv2d %br, %w layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
  %cr = nn.clip %c min = 0.0 max = 6.0 : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %d = nn.conv2d %cr, %w layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
  %dr = nn.clip %d min = -1.0 max = 1.0 : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  func.return %dr : tensor<1x4x4x2xf32>
}

// -----

// Left apart: a conv with another user, a conv that already has an activation, a clip with
// other bounds, a relu after an op that is not a conv, and an integer (quantized) conv.
// CHECK-LABEL: func.func @kept_apart
// CHECK:         nn.conv2d {{.*}} layout = "NHWC" : tensor<1x2x2x1xf32>
// CHECK-NEXT:    nn.relu
// CHECK-NEXT:    nn.conv2d {{.*}} activation = "relu6"
// CHECK-NEXT:    nn.relu
// CHECK-NEXT:    nn.conv2d {{.*}} layout = "NHWC" : tensor<1x2x2x1xf32>
// CHECK-NEXT:    nn.clip
// CHECK-NEXT:    nn.add
// CHECK-NEXT:    nn.relu
// CHECK:         nn.conv2d {{.*}} : tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>
// CHECK-NEXT:    nn.relu
func.func @kept_apart(%x: tensor<1x2x2x1xf32>, %q: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>) -> (tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>) {
  %w = nn.constant dense<0.5> : tensor<1x1x1x1xf32>
  %a = nn.conv2d %x, %w layout = "NHWC" : tensor<1x2x2x1xf32>, tensor<1x1x1x1xf32> -> tensor<1x2x2x1xf32>
  %ar = nn.relu %a : tensor<1x2x2x1xf32> -> tensor<1x2x2x1xf32>
  %b = nn.conv2d %x, %w layout = "NHWC" activation = "relu6" : tensor<1x2x2x1xf32>, tensor<1x1x1x1xf32> -> tensor<1x2x2x1xf32>
  %br = nn.relu %b : tensor<1x2x2x1xf32> -> tensor<1x2x2x1xf32>
  %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x2x2x1xf32>, tensor<1x1x1x1xf32> -> tensor<1x2x2x1xf32>
  %cr = nn.clip %c min = 0.0 max = 4.0 : tensor<1x2x2x1xf32> -> tensor<1x2x2x1xf32>
  %d = nn.add %x, %x : tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32> -> tensor<1x2x2x1xf32>
  %dr = nn.relu %d : tensor<1x2x2x1xf32> -> tensor<1x2x2x1xf32>
  %qw = nn.constant dense<3> : tensor<1x1x1x1xi8> -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25>>
  %e = nn.conv2d %q, %qw layout = "NHWC" : tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>, tensor<1x1x1x1x!quant.uniform<i8:f32, 0.25>> -> tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>
  %er = nn.relu %e : tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>> -> tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>
  func.return %a, %ar, %br, %cr, %dr, %er : tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5>>
}

// -----

// With targets: only inside regions of those targets, and only where the region's target
// supports the fused conv (the cpu target computes f32 only: an f64 conv with a fused relu is
// refused, and the pair stays apart with a remark).
// CPU-LABEL: func.func @regions
// CPU:         delegate.region "cpu"
// CPU-NEXT:      nn.constant
// CPU-NEXT:      nn.conv2d {{.*}} activation = "relu" : tensor<1x2x2x1xf32>
// CPU-NEXT:      delegate.yield
// CPU:         delegate.region "cpu"
// CPU-NEXT:      nn.constant
// CPU-NEXT:      nn.conv2d {{.*}} layout = "NHWC" : tensor<1x2x2x1xf64>
// CPU-NEXT:      nn.relu
// CPU:         delegate.region "opencl"
// CPU-NEXT:      nn.constant
// CPU-NEXT:      nn.conv2d {{.*}} layout = "NHWC" : tensor<1x2x2x1xf32>
// CPU-NEXT:      nn.relu
func.func @regions(%x: tensor<1x2x2x1xf32>, %y: tensor<1x2x2x1xf64>) -> (tensor<1x2x2x1xf32>, tensor<1x2x2x1xf64>, tensor<1x2x2x1xf32>) {
  %r0 = delegate.region "cpu" (%a = %x : tensor<1x2x2x1xf32>) -> (tensor<1x2x2x1xf32>) {
    %w = nn.constant dense<0.5> : tensor<1x1x1x1xf32>
    %c = nn.conv2d %a, %w layout = "NHWC" : tensor<1x2x2x1xf32>, tensor<1x1x1x1xf32> -> tensor<1x2x2x1xf32>
    %r = nn.relu %c : tensor<1x2x2x1xf32> -> tensor<1x2x2x1xf32>
    delegate.yield %r : tensor<1x2x2x1xf32>
  }
  %r1 = delegate.region "cpu" (%b = %y : tensor<1x2x2x1xf64>) -> (tensor<1x2x2x1xf64>) {
    %w = nn.constant dense<0.5> : tensor<1x1x1x1xf64>
    %c = nn.conv2d %b, %w layout = "NHWC" : tensor<1x2x2x1xf64>, tensor<1x1x1x1xf64> -> tensor<1x2x2x1xf64>
    // expected-remark @+1 {{fuse-activations: kept apart: cpu: 'nn.conv2d' on f64 tensors (float32 only)}}
    %r = nn.relu %c : tensor<1x2x2x1xf64> -> tensor<1x2x2x1xf64>
    delegate.yield %r : tensor<1x2x2x1xf64>
  }
  %r2 = delegate.region "opencl" (%d = %x : tensor<1x2x2x1xf32>) -> (tensor<1x2x2x1xf32>) {
    %w = nn.constant dense<0.5> : tensor<1x1x1x1xf32>
    %c = nn.conv2d %d, %w layout = "NHWC" : tensor<1x2x2x1xf32>, tensor<1x1x1x1xf32> -> tensor<1x2x2x1xf32>
    %r = nn.relu %c : tensor<1x2x2x1xf32> -> tensor<1x2x2x1xf32>
    delegate.yield %r : tensor<1x2x2x1xf32>
  }
  func.return %r0, %r1, %r2 : tensor<1x2x2x1xf32>, tensor<1x2x2x1xf64>, tensor<1x2x2x1xf32>
}
