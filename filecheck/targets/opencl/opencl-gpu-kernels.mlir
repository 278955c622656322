// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'lower-opencl{kernels=gpu compute-units=132}' | filecheck %s

// kernels=gpu: a deep 1x1 conv on few pixels (7x7x960 -> 320, as at the end of MobileNetV2)
// splits K over 16 work-items of a work-group of 256 (16 lanes x 16 slices, local-memory
// reduction; 16 lanes divide the 80 channel vectors), which the kernel declares with reqd_work_group_size and opencl-codegen copies to
// the launch; the fused residual add reads a float4 at the accumulator's output vector. The
// depthwise conv takes one float4 of channels per work-item (global size padded to 64), the
// softmax one work-group of 256 per row.
// CHECK:       "ocl.program"() <{sym_name = "kernels", source = "{{.*}}/* nn.conv2d 1x7x7x960, 320x1x1x960 -> 1x7x7x320 (gpu) [1x4 per item, K split 16] + fused nn.add */\0A\0A__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void k0({{.*}}__local float4 partial[240];{{.*}}barrier(CLK_LOCAL_MEM_FENCE);{{.*}}v = (v + ((__global const float4*)x2)[(m0 + 0) * 80 + cv]);{{.*}}/* nn.conv2d 1x7x7x320, 320x3x3x1 -> 1x7x7x320 (gpu) [1x4 per item] */\0A\0A__kernel void k1({{.*}}if (gid >= 3920) return;{{.*}}/* nn.softmax 1x15680 -> 1x15680 (gpu) [one work-group per row] */\0A\0A__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void k3({{.*}}"}>
// CHECK:       "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "in1", "b0"], global = [62720 : i64], local = [256 : i64]}>
// CHECK-NEXT:  "ocl.launch"() <{kernel = "k1", args = ["b0", "c1", "b1"], global = [3968 : i64], local = [64 : i64]}>
// CHECK:       "ocl.launch"() <{kernel = "k3", args = ["b{{[0-9]}}", "out0"], global = [256 : i64], local = [256 : i64]}>
delegate.executable private @tail target("opencl") {
  func.func @entry(%x: tensor<1x7x7x960xf32>, %r: tensor<1x7x7x320xf32>) -> tensor<1x15680xf32> {
    %w = nn.constant dense<0.5> : tensor<320x1x1x960xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x7x7x960xf32>, tensor<320x1x1x960xf32> -> tensor<1x7x7x320xf32>
    %a = nn.add %c, %r : tensor<1x7x7x320xf32>, tensor<1x7x7x320xf32> -> tensor<1x7x7x320xf32>
    %dw = nn.constant dense<0.25> : tensor<320x3x3x1xf32>
    %d = nn.conv2d %a, %dw groups = 320 pads = [1, 1, 1, 1] layout = "NHWC" : tensor<1x7x7x320xf32>, tensor<320x3x3x1xf32> -> tensor<1x7x7x320xf32>
    %f = nn.reshape %d shape = [1, 15680] : tensor<1x7x7x320xf32> -> tensor<1x15680xf32>
    %s = nn.softmax %f axis = 1 : tensor<1x15680xf32> -> tensor<1x15680xf32>
    func.return %s : tensor<1x15680xf32>
  }
}
