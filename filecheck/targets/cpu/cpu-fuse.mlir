// RUN: irc-opt %s --split-input-file -p cpu-fuse | filecheck %s
// RUN: irc-opt %s --split-input-file -p cpu-fuse,cpu-fuse | irc-opt --split-input-file | filecheck %s

// A float conv2d whose only use is a residual add of a same-shaped tensor: one
// "conv_add" fusion where the add was (the add's activation runs in the epilogue).
// CHECK-LABEL: delegate.executable private @residual
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "conv_add"}> ({
// CHECK-NEXT:      %[[C:.*]] = nn.conv2d %x, %w layout = "NHWC"
// CHECK-NEXT:      %[[A:.*]] = nn.add %r, %[[C]] activation = "relu"
// CHECK-NEXT:      "cpu.yield"(%[[A]]) : (tensor<1x4x4x8xf32>) -> ()
// CHECK-NEXT:    }) : () -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    func.return %[[F]]
delegate.executable private @residual target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %a = nn.add %r, %c activation = "relu" : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    func.return %a : tensor<1x4x4x8xf32>
  }
}

// -----

// A residual add without an activation whose only use is a relu: the relu joins the
// "conv_add" fusion (it is the add's activation in the epilogue).
// CHECK-LABEL: delegate.executable private @residual_relu
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "conv_add"}> ({
// CHECK-NEXT:      %[[C:.*]] = nn.conv2d %x, %w layout = "NHWC"
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[C]], %r :
// CHECK-NEXT:      %[[R:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      "cpu.yield"(%[[R]]) : (tensor<1x4x4x8xf32>) -> ()
// CHECK-NEXT:    }) : () -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    func.return %[[F]]
// A relu after an add with its own activation, or beside another use of the add, stays a
// separate op.
// CHECK-LABEL: delegate.executable private @residual_relu_kept
// CHECK:         "cpu.fusion"() <{kind = "conv_add"}> ({
// CHECK:           nn.add {{.*}} activation = "relu6"
// CHECK-NEXT:      "cpu.yield"
// CHECK:         nn.relu
// CHECK:         "cpu.fusion"() <{kind = "conv_add"}> ({
// CHECK:           nn.add
// CHECK-NEXT:      "cpu.yield"
// CHECK:         nn.relu
// CHECK:         func.return
delegate.executable private @residual_relu target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %a = nn.add %c, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %y = nn.relu %a : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    func.return %y : tensor<1x4x4x8xf32>
  }
}
delegate.executable private @residual_relu_kept target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %a = nn.add %c, %r activation = "relu6" : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %y = nn.relu %a : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %d = nn.conv2d %r, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %b = nn.add %d, %x : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %z = nn.relu %b : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    func.return %y, %b, %z : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>
  }
}

// -----

// Not fused: a conv2d with two uses, a depthwise conv2d, a broadcasting add, and an
// executable of another target.
// CHECK-LABEL: delegate.executable private @unfusable
// CHECK-NOT:     cpu.fusion
// CHECK-LABEL: delegate.executable private @other_target target("opencl")
// CHECK-NOT:     cpu.fusion
delegate.executable private @unfusable target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>, %b: tensor<8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %a = nn.add %c, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %dw = nn.constant dense<0.5> : tensor<8x3x3x1xf32>
    %d = nn.conv2d %x, %dw pads = [1, 1, 1, 1] groups = 8 layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x3x3x1xf32> -> tensor<1x4x4x8xf32>
    %e = nn.add %d, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %g = nn.conv2d %r, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %h = nn.add %g, %b : tensor<1x4x4x8xf32>, tensor<8xf32> -> tensor<1x4x4x8xf32>
    func.return %c, %a, %e, %h : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>
  }
}
delegate.executable private @other_target target("opencl") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %a = nn.add %c, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    func.return %a : tensor<1x4x4x8xf32>
  }
}

// -----

// A quantized fully_connected (given lower-quantized's integer form first): the widening
// cast, the zero-point subtraction, the int32 product and the rescale are one "qconv"
// fusion; the filter and zero-point constants stay above it.
// CHECK-LABEL: delegate.executable private @qfc
// CHECK:         %[[S:.*]] = quant.scast %x
// CHECK:         nn.constant
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "qconv"}> ({
// CHECK-NEXT:      nn.cast %[[S]]
// CHECK-NEXT:      nn.sub
// CHECK-NEXT:      nn.fully_connected
// CHECK-NEXT:      %[[R:.*]] = quant.rescale
// CHECK-NEXT:      "cpu.yield"(%[[R]])
// CHECK-NEXT:    }) : () -> tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>>
// CHECK-NEXT:    func.return %[[F]]
delegate.executable private @qfc target("cpu") {
  func.func @entry(%x: tensor<1x8x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>> {
    %w = nn.constant dense<1> : tensor<3x8xi8> -> tensor<3x8x!quant.uniform<i8:f32, 0.125>>
    %y = nn.fully_connected %x, %w : tensor<1x8x!quant.uniform<i8:f32, 0.5:3>>, tensor<3x8x!quant.uniform<i8:f32, 0.125>> -> tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>>
    func.return %y : tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>>
  }
}

// -----

// A quantized add: both inputs' widening, shift and rescale, the sum and its rescale are
// one "qadd" fusion.
// CHECK-LABEL: delegate.executable private @qadd
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "qadd"}> ({
// CHECK:           nn.add
// CHECK-NEXT:      %[[R:.*]] = quant.rescale
// CHECK-NEXT:      "cpu.yield"(%[[R]])
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return %[[F]]
delegate.executable private @qadd target("cpu") {
  func.func @entry(%a: tensor<2x3x4x!quant.uniform<i8:f32, 0.05:-3>>, %b: tensor<2x3x4x!quant.uniform<i8:f32, 0.08:10>>) -> tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>> {
    %y = nn.add %a, %b : tensor<2x3x4x!quant.uniform<i8:f32, 0.05:-3>>, tensor<2x3x4x!quant.uniform<i8:f32, 0.08:10>> -> tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>>
    func.return %y : tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>>
  }
}

// -----

// A quantized conv2d with a relu6: the clamp (scast, clip) joins the "qconv" fusion, whose
// result is the clipped int8 storage; the final scast back to the quantized type is an alias.
// CHECK-LABEL: delegate.executable private @qconv_relu6
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "qconv"}> ({
// CHECK-NEXT:      nn.cast
// CHECK-NEXT:      nn.sub
// CHECK-NEXT:      nn.conv2d
// CHECK-NEXT:      quant.rescale
// CHECK-NEXT:      quant.scast
// CHECK-NEXT:      %[[K:.*]] = nn.clip %{{.*}} min = -7.0 max = 17.0
// CHECK-NEXT:      "cpu.yield"(%[[K]]) : (tensor<1x4x4x8xi8>) -> ()
// CHECK-NEXT:    }) : () -> tensor<1x4x4x8xi8>
// CHECK-NEXT:    quant.scast %[[F]]
delegate.executable private @qconv_relu6 target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x4x4x8x!quant.uniform<i8:f32, 0.25:-7>> {
    %w = nn.constant dense<1> : tensor<8x1x1x8xi8> -> tensor<8x1x1x8x!quant.uniform<i8:f32, 0.125>>
    %c = nn.conv2d %x, %w activation = "relu6" layout = "NHWC" : tensor<1x4x4x8x!quant.uniform<i8:f32, 0.5:3>>, tensor<8x1x1x8x!quant.uniform<i8:f32, 0.125>> -> tensor<1x4x4x8x!quant.uniform<i8:f32, 0.25:-7>>
    func.return %c : tensor<1x4x4x8x!quant.uniform<i8:f32, 0.25:-7>>
  }
}
