// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-opencl | filecheck %s

// Kernels of targets/opencl/lowerings/ (once kernels_extra.py): a transposed convolution gathers the input
// pixels whose scatter lands on the output pixel (stride divides the offset), reflect
// padding mirrors indices, gelu's tanh form (8 elements: one float8 work-item), and an i1 mask travels as uchar from the
// comparison (NaN tested on the bits: the build is -cl-fast-relaxed-math) to the select. Shapes are literals; buffers as for every other kernel.
// CHECK-LABEL: delegate.executable private @main_opencl_0
// CHECK:       "ocl.program"() <{sym_name = "kernels", source = "{{.*}}/* nn.conv2d_transpose 1x3x4x2, 2x3x3x2 -> 1x7x9x2 */{{.*}}if (th < 0 || th % 2 != 0) continue;{{.*}}const int ih = th / 2;{{.*}}if (i1 < 0) i1 = -i1;\0A    if (i1 >= 3) i1 = 4 - i1;{{.*}}v / (1.0f + exp(-1.5957692f * (v + 0.044715f * v * v * v))){{.*}}__global uchar* restrict y){{.*}}y[gid] = (uchar)(!(((as_uint(a) & 0x7fffffffu) > 0x7f800000u || {{.*}})) && a < b);{{.*}}(__global const uchar* restrict x0, __global const float* restrict x1, __global const float* restrict x2, __global float* restrict y){{.*}}y[gid] = (float)(a != 0 ? b : c);{{.*}}"}> ({
// CHECK:         "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "out0"], global = [126 : i64]
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k1", args = ["in0", "out1"], global = [60 : i64]
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k2", args = ["in1", "b0"], global = [1 : i64]
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k3", args = ["in1", "b0", "b1"], global = [8 : i64]
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k4", args = ["b1", "in1", "b0", "out2"], global = [8 : i64]
delegate.executable private @main_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<1x3x4x2xf32>, %m: tensor<4x2xf32>) -> (tensor<1x7x9x2xf32>, tensor<1x5x6x2xf32>, tensor<4x2xf32>) {
    %w = nn.constant dense<0.5> : tensor<2x3x3x2xf32>
    %t = nn.conv2d_transpose %x, %w strides = [2, 2] pads = [0, 0, 0, 0] layout = "NHWC"
        : tensor<1x3x4x2xf32>, tensor<2x3x3x2xf32> -> tensor<1x7x9x2xf32>
    %p = nn.pad %x pads = [0, 0, 1, 1, 1, 1, 0, 0] mode = "reflect" : tensor<1x3x4x2xf32> -> tensor<1x5x6x2xf32>
    %g = nn.gelu %m approximate = "tanh" : tensor<4x2xf32> -> tensor<4x2xf32>
    %c = nn.compare %m, %g kind = "lt" : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xi1>
    %s = nn.select %c, %m, %g : tensor<4x2xi1>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
    func.return %t, %p, %s : tensor<1x7x9x2xf32>, tensor<1x5x6x2xf32>, tensor<4x2xf32>
  }
}

// -----

// Softmax over a leading axis: one work-item per row, elements `inner` apart.
// CHECK-LABEL: delegate.executable private @softmax_opencl_0
// CHECK:         for (int i = 0; i < 3; ++i) { const float xv = xp[i * 5]; m = (xv > m || isnan(xv) ? xv : m); }
// CHECK:         "ocl.launch"() <{kernel = "k0", args = ["in0", "out0"], global = [5 : i64]
delegate.executable private @softmax_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %y = nn.softmax %x axis = 0 : tensor<3x5xf32> -> tensor<3x5xf32>
    func.return %y : tensor<3x5xf32>
  }
}

// -----

// split: one launch over the input writes every piece (`writes`), uneven and empty pieces
// included; the piece a later kernel reads lives in a planned buffer.
// CHECK-LABEL: delegate.executable private @split_opencl_0
// CHECK:         __kernel void k0(__global const float* restrict x0, __global float* restrict y0, __global float* restrict y1, __global float* restrict y2) {
// CHECK-SAME:    const int a = (gid / 3) % 5;
// CHECK-SAME:    if (a < 3) y0[(outer * 3 + a - 0) * 3 + inner] = x0[gid];
// CHECK-SAME:    else if (a < 5) y2[(outer * 2 + a - 3) * 3 + inner] = x0[gid];
// CHECK:         "ocl.launch"() <{kernel = "k0", args = ["in0", "out0", "b0", "b1"], global = [30 : i64], local = [{{.*}}], writes = 3 : i64}>
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k1", args = ["b1", "out1"], global = [12 : i64]
delegate.executable private @split_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<2x5x3xf32>) -> (tensor<2x3x3xf32>, tensor<2x2x3xf32>) {
    %a, %e, %b = nn.split %x axis = -2 sizes = [3, 0, 2] : tensor<2x5x3xf32> -> tensor<2x3x3xf32>, tensor<2x0x3xf32>, tensor<2x2x3xf32>
    %r = nn.relu %b : tensor<2x2x3xf32> -> tensor<2x2x3xf32>
    func.return %a, %r : tensor<2x3x3xf32>, tensor<2x2x3xf32>
  }
}

// -----

// Run-time int64 gather indices: read as long, counted from the end when negative and
// clamped in 64 bits (a huge index cannot wrap into range).
// CHECK-LABEL: delegate.executable private @gather_opencl_0
// CHECK:         (__global const float* restrict x0, __global const long* restrict x1, __global float* restrict y)
// CHECK-SAME:    long w = (long)x1[j0 * 1];
// CHECK-SAME:    if (w < 0) w += 4;
// CHECK-SAME:    w = clamp(w, (long)0, (long)3);
// CHECK:         "ocl.launch"() <{kernel = "k0", args = ["in0", "in1", "out0"], global = [2 : i64]
delegate.executable private @gather_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<4xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
    %y = nn.gather %x, %i : tensor<4xf32>, tensor<2xi64> -> tensor<2xf32>
    func.return %y : tensor<2xf32>
  }
}

// -----

// A quantized bilinear resize reaches the target as float through insert-qdq; on stored
// integers (TFLite's fixed-point interpolation) it is refused at the op.
delegate.executable private @resize_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x3x3x1x!quant.uniform<i8:f32, 0.5:-3>> {
    // expected-error @+1 {{lower-opencl: bilinear resize on quantized storage (run insert-qdq)}}
    %y = nn.resize %x size = [3, 3] mode = "bilinear" layout = "NHWC" : tensor<1x2x2x1x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<1x3x3x1x!quant.uniform<i8:f32, 0.5:-3>>
    func.return %y : tensor<1x3x3x1x!quant.uniform<i8:f32, 0.5:-3>>
  }
}
