// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-fuse | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-fuse,cpu-fuse | irc-opt --split-input-file | filecheck %s

// A quantized global average pool: lower-quantized's widening cast, zero-point sub and
// int32 sum over the contiguous axes [1, 2] are one "qsum" fusion (the bytes read once);
// the zero point's constant stays above it, the rescale after it.
// CHECK-LABEL: delegate.executable private @gap
// CHECK:         %[[X:.*]] = quant.scast %x
// CHECK-NEXT:    %[[ZP:.*]] = nn.constant dense<-5>
// CHECK-NEXT:    %[[F:.*]] = "cpu.fusion"() <{kind = "qsum"}> ({
// CHECK-NEXT:      %[[W:.*]] = nn.cast %[[X]]
// CHECK-NEXT:      %[[C:.*]] = nn.sub %[[W]], %[[ZP]]
// CHECK-NEXT:      %[[S:.*]] = nn.reduce %[[C]] kind = "sum" axes = [1, 2] keepdims = true
// CHECK-NEXT:      "cpu.yield"(%[[S]])
// CHECK-NEXT:    }) : () -> tensor<1x1x1x16xi32>
// CHECK-NEXT:    quant.rescale %[[F]]
delegate.executable private @gap target("cpu") {
  func.func @entry(%x: tensor<1x7x7x16x!quant.uniform<i8:f32, 0.05:-5>>) -> tensor<1x1x1x16x!quant.uniform<i8:f32, 0.02:3>> {
    %y = nn.reduce %x kind = "mean" axes = [1, 2] keepdims = true : tensor<1x7x7x16x!quant.uniform<i8:f32, 0.05:-5>> -> tensor<1x1x1x16x!quant.uniform<i8:f32, 0.02:3>>
    func.return %y : tensor<1x1x1x16x!quant.uniform<i8:f32, 0.02:3>>
  }
}


// -----

// Not fused: axes that are not one contiguous run, a centered value with another use (the
// function returns it), a max, a float sum.
// CHECK-LABEL: delegate.executable private @not_sums
// CHECK-NOT:     cpu.fusion
// CHECK:         func.return

delegate.executable private @not_sums target("cpu") {
  func.func @entry(%x: tensor<2x5x3x7xi8>, %f: tensor<2x5x3x7xf32>) -> (tensor<2x1x3x1xi32>, tensor<2x5xi32>, tensor<2x5x3x7xi32>, tensor<2x1x1x7xf32>) {
    %w = nn.cast %x : tensor<2x5x3x7xi8> -> tensor<2x5x3x7xi32>
    %zp = nn.constant dense<-5> : tensor<i32>
    %c = nn.sub %w, %zp : tensor<2x5x3x7xi32>, tensor<i32> -> tensor<2x5x3x7xi32>
    %a = nn.reduce %c kind = "sum" axes = [1, 3] keepdims = true : tensor<2x5x3x7xi32> -> tensor<2x1x3x1xi32>
    %w2 = nn.cast %x : tensor<2x5x3x7xi8> -> tensor<2x5x3x7xi32>
    %c2 = nn.sub %w2, %zp : tensor<2x5x3x7xi32>, tensor<i32> -> tensor<2x5x3x7xi32>
    %b = nn.reduce %c2 kind = "sum" axes = [2, 3] keepdims = false : tensor<2x5x3x7xi32> -> tensor<2x5xi32>
    %m = nn.reduce %c2 kind = "max" axes = [1, 2] keepdims = true : tensor<2x5x3x7xi32> -> tensor<2x1x1x7xi32>
    %g = nn.reduce %f kind = "sum" axes = [1, 2] keepdims = true : tensor<2x5x3x7xf32> -> tensor<2x1x1x7xf32>
    func.return %a, %b, %c2, %g : tensor<2x1x3x1xi32>, tensor<2x5xi32>, tensor<2x5x3x7xi32>, tensor<2x1x1x7xf32>
  }
}


// -----

// A zero point of 0: the cast alone (uint8), the last axis summed away.
// CHECK-LABEL: delegate.executable private @sum_of_cast
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "qsum"}> ({
// CHECK-NEXT:      nn.cast %x
// CHECK-NEXT:      nn.reduce
// CHECK-NEXT:      "cpu.yield"
// CHECK-NEXT:    }) : () -> tensor<3xi32>
// CHECK-NEXT:    func.return %[[F]]

delegate.executable private @sum_of_cast target("cpu") {
  func.func @entry(%x: tensor<3x40xui8>) -> tensor<3xi32> {
    %w = nn.cast %x : tensor<3x40xui8> -> tensor<3x40xi32>
    %s = nn.reduce %w kind = "sum" axes = [-1] : tensor<3x40xi32> -> tensor<3xi32>
    func.return %s : tensor<3xi32>
  }
}
