// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-plan-memory | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-plan-memory,cpu-plan-memory | filecheck %s

// A chain of 1 KiB intermediates: two workspace buffers reused by liveness (byte
// offsets 0 and 1024), the reshape a free alias of its input, the last op writing the
// entry's result buffer directly (-1).
// CHECK-LABEL: delegate.executable private @chain
// CHECK:         func.func @entry(%x: tensor<256xf32>) -> tensor<16x16xf32> attributes {cpu.workspace = 2048 : i64} {
// CHECK-NEXT:      %a = nn.relu %x {cpu.offsets = array<i64: 0>}
// CHECK-NEXT:      %b = nn.exp %a {cpu.offsets = array<i64: 1024>}
// CHECK-NEXT:      %c = nn.exp %b {cpu.offsets = array<i64: 0>}
// CHECK-NEXT:      %r = nn.reshape %c shape = [16, 16] {cpu.alias}
// CHECK-NEXT:      %d = nn.neg %r {cpu.offsets = array<i64: -1>}
// CHECK-NEXT:      func.return %d
delegate.executable private @chain target("cpu") {
  func.func @entry(%x: tensor<256xf32>) -> tensor<16x16xf32> {
    %a = nn.relu %x : tensor<256xf32> -> tensor<256xf32>
    %b = nn.exp %a : tensor<256xf32> -> tensor<256xf32>
    %c = nn.exp %b : tensor<256xf32> -> tensor<256xf32>
    %r = nn.reshape %c shape = [16, 16] : tensor<256xf32> -> tensor<16x16xf32>
    %d = nn.neg %r : tensor<16x16xf32> -> tensor<16x16xf32>
    func.return %d : tensor<16x16xf32>
  }
}


// -----

// A padded convolution of 8 input channels needs scratch (its zero-padded input, 1568
// bytes; one of up to 4 channels pads through its tasks' windows instead); its result is the
// entry's. Constants get no plan.
// CHECK-LABEL: delegate.executable private @conv
// CHECK:         attributes {cpu.workspace = 1600 : i64}
// CHECK-NEXT:      nn.constant dense<5.000000e-01> : tensor<4x3x3x8xf32>{{$}}
// CHECK-NEXT:      nn.conv2d {{.*}} {cpu.offsets = array<i64: -1>, cpu.scratch = array<i64: 0>}

delegate.executable private @conv target("cpu") {
  func.func @entry(%x: tensor<1x5x5x8xf32>) -> tensor<1x5x5x4xf32> {
    %w = nn.constant dense<0.5> : tensor<4x3x3x8xf32>
    %y = nn.conv2d %x, %w pads = [1, 1, 1, 1] layout = "NHWC" : tensor<1x5x5x8xf32>, tensor<4x3x3x8xf32> -> tensor<1x5x5x4xf32>
    func.return %y : tensor<1x5x5x4xf32>
  }
}

// -----

// A fusion is planned as one op: its inner ops get nothing.
// CHECK-LABEL: delegate.executable private @fused
// CHECK:         "cpu.fusion"() <{kind = "conv_add"}> ({
// CHECK-NEXT:      %c = nn.conv2d %x, %w layout = "NHWC" : tensor
// CHECK-NEXT:      %a = nn.add %c, %r : tensor
// CHECK-NEXT:      "cpu.yield"
// CHECK-NEXT:    }) {cpu.offsets = array<i64: 0>} : () -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    nn.relu %{{.*}} {cpu.offsets = array<i64: -1>}
delegate.executable private @fused target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %f = "cpu.fusion"() <{kind = "conv_add"}> ({
      %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
      %a = nn.add %c, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
      "cpu.yield"(%a) : (tensor<1x4x4x8xf32>) -> ()
    }) : () -> tensor<1x4x4x8xf32>
    %y = nn.relu %f : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    func.return %y : tensor<1x4x4x8xf32>
  }
}

// -----

// An op the target has no kernel for fails the pass at that op.
delegate.executable private @unsupported target("cpu") {
  func.func @entry(%a: tensor<1x2x2x2xf32>, %s: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
    // expected-error @+1 {{cpu-plan-memory: no kernel for 'nn.batch_norm'}}
    %y = nn.batch_norm %a, %s, %s, %s, %s layout = "NHWC" : tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
    func.return %y : tensor<1x2x2x2xf32>
  }
}
