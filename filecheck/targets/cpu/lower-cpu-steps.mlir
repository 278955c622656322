// RUN: irc-opt %s -p lower-cpu | filecheck %s
// RUN: irc-opt %s -p cpu-fuse,cpu-plan-memory,cpu-codegen | filecheck %s
// RUN: irc-opt %s -p cpu-fuse,cpu-plan-memory,cpu-codegen --print-ir-after-all 2>&1 | filecheck %s --check-prefix=STEPS

// lower-cpu is cpu-fuse, cpu-plan-memory and cpu-codegen; --print-ir-after-all shows the
// fusion, then the plan (the fused conv's 512-byte result at 0, its 1152-byte padded input
// at 512, the reshape an alias, the exp writing the entry's result), then the C.
// STEPS:      IR Dump After cpu-fuse
// STEPS:      "cpu.fusion"() <{kind = "conv_add"}> ({
// STEPS-NOT:  cpu.offsets
// STEPS:      IR Dump After cpu-plan-memory
// STEPS:      attributes {cpu.workspace = 1664 : i64}
// STEPS:      }) {cpu.offsets = array<i64: 0>, cpu.scratch = array<i64: 512>} : () -> tensor<1x4x4x8xf32>
// STEPS-NEXT: nn.reshape %{{.*}} shape = [128] {cpu.alias}
// STEPS-NEXT: nn.exp %{{.*}} {cpu.offsets = array<i64: -1>}
// STEPS:      IR Dump After cpu-codegen
// STEPS-NOT:  cpu.fusion
// STEPS:      cpu.call @kernels "irc_fn_0" (%{{.*}}, %{{.*}}) workspace = 1664

// CHECK-LABEL: delegate.executable private @e target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}/* irc_fn_0: 3 ops, workspace 1664 bytes. */
// CHECK-SAME:      irc_pad_nhwc((ws + 128), in0, 1, 4, 4, 8, 1, 1, 1, 1);
// CHECK-SAME:      irc_conv2d(1, (ws + 128), 1, 6, 6, 8, K[0], NULL, (ws + 0), 4, 4, 8, 3, 3, 1, 1, 1, 1, 1, 8, 8, 0, in1, 1);
// CHECK-SAME:      const float *restrict px = (ws + 0);
// CHECK-SAME:      float *restrict po = out0;
// CHECK-NOT:     cpu.fusion
// CHECK:         cpu.call @kernels "irc_fn_0" (%{{.*}}, %{{.*}}) workspace = 1664
delegate.executable private @e target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<128xf32> {
    %w = nn.constant dense<0.5> : tensor<8x3x3x8xf32>
    %c = nn.conv2d %x, %w pads = [1, 1, 1, 1] layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x3x3x8xf32> -> tensor<1x4x4x8xf32>
    %a = nn.add %c, %r activation = "relu" : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %s = nn.reshape %a shape = [128] : tensor<1x4x4x8xf32> -> tensor<128xf32>
    %e = nn.exp %s : tensor<128xf32> -> tensor<128xf32>
    func.return %e : tensor<128xf32>
  }
}
