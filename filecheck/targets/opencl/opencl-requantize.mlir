// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-opencl | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'lower-opencl{kernels=gpu compute-units=132}' | filecheck %s

// A fused qcast -> dcast round trip (lowerings/requantize.py) after a relu6 conv, zero point
// at the storage minimum: no zero-point addition, NaN and the low bound in one comparison,
// half away from zero as half up, and no relu6 (6 / scale quantizes to the maximum, 255).
// CHECK-LABEL: "ocl.program"() <{sym_name = "kernels", source = "{{.*}}fused quant.qcast, quant.dcast
// CHECK-SAME:    v = v / 0.023529412f;\0A{{ *}}v = (v >= 0.0f ? (v > 255.0f ? 255.0f : v) : 0.0f);\0A{{ *}}v = (v - ((v + 12582912.0f) - 12582912.0f) == 0.5f ? ((v + 12582912.0f) - 12582912.0f) + 1.0f : ((v + 12582912.0f) - 12582912.0f));\0A{{ *}}v = (0.023529412f * v);\0A
// CHECK-NOT:     6.0f ? 6.0f
// CHECK-NOT:     -128.0f
// CHECK:       func.func @entry
delegate.executable private @relu6_subsumed target("opencl") {
  func.func @entry(%x: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
    %w = nn.constant dense<0.5> : tensor<16x1x1x16xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" activation = "relu6" : tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32> -> tensor<1x4x4x16xf32>
    %q = quant.qcast %c : tensor<1x4x4x16xf32> to tensor<1x4x4x16x!quant.uniform<i8:f32, 0.023529412:-128>>
    %d = quant.dcast %q : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.023529412:-128>> to tensor<1x4x4x16xf32>
    func.return %d : tensor<1x4x4x16xf32>
  }
}

// -----

// A coarser scale (6 / 0.0625 = 96, below the maximum) keeps the relu6; a zero point inside
// the range (low bound -131) keeps the NaN test, both bounds and half away from zero both
// ways. The round trip before the residual add ends in `+ 0.0f` (no contraction into the
// add), the last one does not.
// CHECK-LABEL: "ocl.program"() <{sym_name = "kernels", source = "{{.*}}fused quant.qcast, quant.dcast, nn.add, quant.qcast, quant.dcast
// CHECK-SAME:    v = (v < 0.0f ? 0.0f : v > 6.0f ? 6.0f : v);\0A{{ *}}v = v / 0.0625f;\0A{{ *}}v = (v >= 0.0f ? (v > 255.0f ? 255.0f : v) : 0.0f);
// CHECK-SAME:    v = (0.0625f * v + 0.0f);\0A
// CHECK-SAME:    v = (v != v ? 0.0f : v < -131.0f ? -131.0f : v > 124.0f ? 124.0f : v);\0A{{ *}}v = (v - ((v + 12582912.0f) - 12582912.0f) == 0.5f || v - ((v + 12582912.0f) - 12582912.0f) == -0.5f ? (v < 0.0f ? v - 0.5f : v + 0.5f) : ((v + 12582912.0f) - 12582912.0f));\0A{{ *}}v = (0.25f * v);\0A
// CHECK:       func.func @entry
delegate.executable private @relu6_kept target("opencl") {
  func.func @entry(%x: tensor<1x4x4x16xf32>, %r: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
    %w = nn.constant dense<0.5> : tensor<16x1x1x16xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" activation = "relu6" : tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32> -> tensor<1x4x4x16xf32>
    %q = quant.qcast %c : tensor<1x4x4x16xf32> to tensor<1x4x4x16x!quant.uniform<i8:f32, 0.0625:-128>>
    %d = quant.dcast %q : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.0625:-128>> to tensor<1x4x4x16xf32>
    %a = nn.add %d, %r : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf32>
    %q2 = quant.qcast %a : tensor<1x4x4x16xf32> to tensor<1x4x4x16x!quant.uniform<i8:f32, 0.25:3>>
    %d2 = quant.dcast %q2 : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.25:3>> to tensor<1x4x4x16xf32>
    func.return %d2 : tensor<1x4x4x16xf32>
  }
}
