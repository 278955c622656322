// RUN: irc-opt %s --split-input-file -p opencl-fuse | filecheck %s
// RUN: irc-opt %s --split-input-file -p opencl-fuse | irc-opt --split-input-file | filecheck %s

// A conv, its residual add (the other operand an entry argument of the same shape) and
// a relu6: one ocl.fusion where the add was, yielding the relu6.
// CHECK-LABEL: delegate.executable private @residual
// CHECK:         %[[F:.*]] = "ocl.fusion"() ({
// CHECK-NEXT:      %[[C:.*]] = nn.conv2d %x, %w layout = "NHWC"
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[C]], %r
// CHECK-NEXT:      %[[R:.*]] = nn.relu6 %[[A]]
// CHECK-NEXT:      "ocl.yield"(%[[R]]) : (tensor<1x4x4x8xf32>) -> ()
// CHECK-NEXT:    }) : () -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    func.return %[[F]]
delegate.executable private @residual target("opencl") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %a = nn.add %c, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %y = nn.relu6 %a : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    func.return %y : tensor<1x4x4x8xf32>
  }
}

// -----

// The residual is computed after the producer (a transpose pair): the fusion goes where
// the chain ends, below it; the residual may be on the left (sub).
// CHECK-LABEL: delegate.executable private @later_residual
// CHECK:         %[[T:.*]] = nn.transpose %x
// CHECK-NEXT:    %[[U:.*]] = nn.transpose %[[T]]
// CHECK-NEXT:    %{{.*}} = "ocl.fusion"() ({
// CHECK-NEXT:      %[[M:.*]] = nn.fully_connected %x, %w
// CHECK-NEXT:      %{{.*}} = nn.sub %[[U]], %[[M]]
// CHECK-NEXT:      "ocl.yield"
delegate.executable private @later_residual target("opencl") {
  func.func @entry(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %w = nn.constant dense<0.5> : tensor<4x4xf32>
    %m = nn.fully_connected %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %t = nn.transpose %x perm = [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %u = nn.transpose %t perm = [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %s = nn.sub %u, %m : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    func.return %s : tensor<4x4xf32>
  }
}

// -----

// Not fused: a producer whose result has two uses, an add whose operand broadcasts along
// another axis than the last (a per-channel vector would fuse), and ops of other targets.
// CHECK-LABEL: delegate.executable private @unfusable
// CHECK-NOT:     ocl.fusion
// CHECK:         nn.relu %c
// CHECK-NEXT:    nn.add %c, %r
// CHECK-NEXT:    nn.add %a, %b
// CHECK-LABEL: delegate.executable private @other_target target("cpu")
// CHECK-NOT:     ocl.fusion
delegate.executable private @unfusable target("opencl") {
  func.func @entry(%x: tensor<2x4xf32>, %r: tensor<2x4xf32>, %b: tensor<2x1xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %c = nn.sigmoid %x : tensor<2x4xf32> -> tensor<2x4xf32>
    %y = nn.relu %c : tensor<2x4xf32> -> tensor<2x4xf32>
    %a = nn.add %c, %r : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %z = nn.add %a, %b : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
    func.return %y, %z : tensor<2x4xf32>, tensor<2x4xf32>
  }
}
delegate.executable private @other_target target("cpu") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c = nn.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
    %y = nn.relu %c : tensor<4xf32> -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----

// A decomposed hard-swish, x * relu6(x + 3) / 6: the add produces (its one-element
// constant is a literal, whatever its broadcast shape), the mul reads x as a residual.
// CHECK-LABEL: delegate.executable private @hard_swish_parts
// CHECK:         "ocl.fusion"() ({
// CHECK-NEXT:      nn.add %x, %three
// CHECK-NEXT:      nn.relu6
// CHECK-NEXT:      nn.mul %x,
// CHECK-NEXT:      nn.div %{{.*}}, %six
// CHECK-NEXT:      "ocl.yield"
delegate.executable private @hard_swish_parts target("opencl") {
  func.func @entry(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %three = nn.constant dense<3.0> : tensor<1xf32>
    %six = nn.constant dense<6.0> : tensor<1x1x1x1xf32>
    %a = nn.add %x, %three : tensor<1x4x4x8xf32>, tensor<1xf32> -> tensor<1x4x4x8xf32>
    %r = nn.relu6 %a : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %m = nn.mul %x, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %d = nn.div %m, %six : tensor<1x4x4x8xf32>, tensor<1x1x1x1xf32> -> tensor<1x4x4x8xf32>
    func.return %d : tensor<1x4x4x8xf32>
  }
}

// -----

// A per-channel vector (a MatMul's bias, a squeeze-excite scale) fuses: read at the channel.
// CHECK-LABEL: delegate.executable private @per_channel
// CHECK:         "ocl.fusion"() ({
// CHECK-NEXT:      nn.batch_matmul
// CHECK-NEXT:      nn.add %{{.*}}, %bias
// CHECK-NEXT:      nn.mul %scale, %{{.*}}
// CHECK-NEXT:      "ocl.yield"
delegate.executable private @per_channel target("opencl") {
  func.func @entry(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %bias: tensor<5xf32>, %scale: tensor<1x1x5xf32>) -> tensor<2x3x5xf32> {
    %m = nn.batch_matmul %a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
    %s = nn.add %m, %bias : tensor<2x3x5xf32>, tensor<5xf32> -> tensor<2x3x5xf32>
    %t = nn.mul %scale, %s : tensor<1x1x5xf32>, tensor<2x3x5xf32> -> tensor<2x3x5xf32>
    func.return %t : tensor<2x3x5xf32>
  }
}

// -----

// An int8 model's ops in float (insert-qdq): conv -> qcast -> dcast -> residual add ->
// qcast -> dcast becomes one fusion (the 8-bit tensors are never stored). A qcast with a
// second user (here returned), and a per-axis qcast, stay outside.
// CHECK-LABEL: delegate.executable private @qdq
// CHECK:         %[[F:.*]] = "ocl.fusion"() ({
// CHECK-NEXT:      %[[C:.*]] = nn.conv2d %x, %w layout = "NHWC"
// CHECK-NEXT:      %[[Q:.*]] = quant.qcast %[[C]]
// CHECK-NEXT:      %[[D:.*]] = quant.dcast %[[Q]]
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[D]], %r
// CHECK-NEXT:      %[[Q2:.*]] = quant.qcast %[[A]]
// CHECK-NEXT:      %[[D2:.*]] = quant.dcast %[[Q2]]
// CHECK-NEXT:      "ocl.yield"(%[[D2]])
// CHECK:         %[[C2:.*]] = nn.conv2d %[[F]], %w layout = "NHWC"
// CHECK-NEXT:    %[[Q3:.*]] = quant.qcast %[[C2]]
// CHECK-NEXT:    %{{.*}} = quant.dcast %[[Q3]]
// CHECK:         %[[H:.*]] = nn.fully_connected
// CHECK-NEXT:    %[[Q4:.*]] = quant.qcast %[[H]]
delegate.executable private @qdq target("opencl") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>, %m: tensor<2x8xf32>)
      -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8x!quant.uniform<i8:f32, 0.25:1>>, tensor<2x8x!quant.uniform<i8:f32:1, {0.5:0, 0.25:0, 0.5:0, 0.25:0, 0.5:0, 0.25:0, 0.5:0, 0.25:0}>>) {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %q = quant.qcast %c : tensor<1x4x4x8xf32> to tensor<1x4x4x8x!quant.uniform<i8:f32, 0.5:3>>
    %d = quant.dcast %q : tensor<1x4x4x8x!quant.uniform<i8:f32, 0.5:3>> to tensor<1x4x4x8xf32>
    %a = nn.add %d, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %q2 = quant.qcast %a rounding = "half_to_even" : tensor<1x4x4x8xf32> to tensor<1x4x4x8x!quant.uniform<u8:f32, 0.125:128>>
    %d2 = quant.dcast %q2 : tensor<1x4x4x8x!quant.uniform<u8:f32, 0.125:128>> to tensor<1x4x4x8xf32>
    %c2 = nn.conv2d %d2, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %q3 = quant.qcast %c2 : tensor<1x4x4x8xf32> to tensor<1x4x4x8x!quant.uniform<i8:f32, 0.25:1>>
    %d3 = quant.dcast %q3 : tensor<1x4x4x8x!quant.uniform<i8:f32, 0.25:1>> to tensor<1x4x4x8xf32>
    %wm = nn.constant dense<0.5> : tensor<8x8xf32>
    %h = nn.fully_connected %m, %wm : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    %q4 = quant.qcast %h : tensor<2x8xf32> to tensor<2x8x!quant.uniform<i8:f32:1, {0.5:0, 0.25:0, 0.5:0, 0.25:0, 0.5:0, 0.25:0, 0.5:0, 0.25:0}>>
    func.return %d3, %q3, %q4 : tensor<1x4x4x8xf32>, tensor<1x4x4x8x!quant.uniform<i8:f32, 0.25:1>>, tensor<2x8x!quant.uniform<i8:f32:1, {0.5:0, 0.25:0, 0.5:0, 0.25:0, 0.5:0, 0.25:0, 0.5:0, 0.25:0}>>
  }
}

// -----

// A 2x2 stride-2 conv2d_transpose is a producer too: DBNet's head batch norm (a per-channel
// multiply, then add with relu) and its sigmoid go into its kernel.
// CHECK-LABEL: delegate.executable private @transposed_conv
// CHECK:         %[[F:.*]] = "ocl.fusion"() ({
// CHECK-NEXT:      %[[T:.*]] = nn.conv2d_transpose %x, %w
// CHECK-NEXT:      %[[M:.*]] = nn.mul %[[T]], %s
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[M]], %b activation = "relu"
// CHECK-NEXT:      %[[S:.*]] = nn.sigmoid %[[A]]
// CHECK-NEXT:      "ocl.yield"(%[[S]]) : (tensor<1x4x4x8xf32>) -> ()
// CHECK-NEXT:    }) : () -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    func.return %[[F]]
delegate.executable private @transposed_conv target("opencl") {
  func.func @entry(%x: tensor<1x2x2x4xf32>, %s: tensor<1x1x8xf32>, %b: tensor<8xf32>) -> tensor<1x4x4x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x2x2x4xf32>
    %t = nn.conv2d_transpose %x, %w strides = [2, 2] layout = "NHWC" : tensor<1x2x2x4xf32>, tensor<8x2x2x4xf32> -> tensor<1x4x4x8xf32>
    %m = nn.mul %t, %s : tensor<1x4x4x8xf32>, tensor<1x1x8xf32> -> tensor<1x4x4x8xf32>
    %a = nn.add %m, %b activation = "relu" : tensor<1x4x4x8xf32>, tensor<8xf32> -> tensor<1x4x4x8xf32>
    %y = nn.sigmoid %a : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    func.return %y : tensor<1x4x4x8xf32>
  }
}
