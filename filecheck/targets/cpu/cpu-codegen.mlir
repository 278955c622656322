// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-codegen | filecheck %s

// A fused, planned entry: one C function in which the "conv_add" fusion is one conv2d
// kernel call with the residual (in1) in its epilogue, writing the planned workspace
// offset (256 bytes: ws + 64 floats), and the relu writes the entry's result buffer. The
// cpu.call's workspace is the plan's; the plan attributes are gone.
// CHECK-LABEL: delegate.executable private @planned
// CHECK:         cpu.module @kernels source = "{{.*}}/* irc_fn_0: 2 ops, workspace 1024 bytes. */
// CHECK-SAME:      op 0 result: ws[64..+128]
// CHECK-SAME:      op 1 result: out0
// CHECK-SAME:      irc_conv2d(1, in0, 1, 1, 16, 8, K[0], NULL, (ws + 64), 1, 16, 8, 1, 1, 1, 1, 1, 1, 1, 8, 8, 0, in1, 0);
// CHECK-SAME:      const float *restrict px = (ws + 64);
// CHECK-SAME:      float *restrict po = out0;
// CHECK:           cpu.constant 0 packing = "conv2d_filter [G][OCg/16][KH][KW][Cg][16]"
// CHECK:         func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT:      %0 = cpu.call @kernels "irc_fn_0" (%x, %r) workspace = 1024
// CHECK-NEXT:      func.return %0
delegate.executable private @planned target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> attributes {cpu.workspace = 1024 : i64} {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %f = "cpu.fusion"() <{kind = "conv_add"}> ({
      %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
      %a = nn.add %c, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
      "cpu.yield"(%a) : (tensor<1x4x4x8xf32>) -> ()
    }) {cpu.offsets = array<i64: 256>} : () -> tensor<1x4x4x8xf32>
    %y = nn.relu %f {cpu.offsets = array<i64: -1>} : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    func.return %y : tensor<1x4x4x8xf32>
  }
}

// -----

// Without cpu-plan-memory's attributes there is nothing to generate.
delegate.executable private @unplanned target("cpu") {
  // expected-error @+1 {{cpu-codegen: the entry has no buffer plan ('cpu.workspace'): run cpu-plan-memory}}
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----

// A planned offset outside the workspace (or not 64-byte aligned) is refused.
delegate.executable private @outside target("cpu") {
  func.func @entry(%x: tensor<16xf32>) -> tensor<16xf32> attributes {cpu.workspace = 64 : i64} {
    // expected-error @+1 {{cpu-codegen: planned offset 64 (+64 bytes) is not 64-byte aligned inside the 64-byte workspace}}
    %a = nn.relu %x {cpu.offsets = array<i64: 64>} : tensor<16xf32> -> tensor<16xf32>
    %y = nn.exp %a {cpu.offsets = array<i64: -1>} : tensor<16xf32> -> tensor<16xf32>
    func.return %y : tensor<16xf32>
  }
}

// -----

// An op that runs a kernel needs its offsets.
delegate.executable private @no_offsets target("cpu") {
  func.func @entry(%x: tensor<16xf32>) -> tensor<16xf32> attributes {cpu.workspace = 0 : i64} {
    // expected-error @+1 {{cpu-codegen: expected 'cpu.offsets' with one offset per result (the plan)}}
    %y = nn.relu %x : tensor<16xf32> -> tensor<16xf32>
    func.return %y : tensor<16xf32>
  }
}

// -----

// A fusion whose ops are not a chain of its kind (a float fully_connected is no int8 chain).
delegate.executable private @wrong_kind target("cpu") {
  func.func @entry(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {cpu.workspace = 0 : i64} {
    %w = nn.constant dense<0.5> : tensor<4x4xf32>
    // expected-error @+1 {{cpu-codegen: the 'qconv' fusion does not hold a chain of its kind}}
    %f = "cpu.fusion"() <{kind = "qconv"}> ({
      %m = nn.fully_connected %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
      %r = nn.relu %m : tensor<2x4xf32> -> tensor<2x4xf32>
      "cpu.yield"(%r) : (tensor<2x4xf32>) -> ()
    }) {cpu.offsets = array<i64: -1>} : () -> tensor<2x4xf32>
    func.return %f : tensor<2x4xf32>
  }
}
