// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-opencl | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'lower-opencl{kernels=gpu}' | filecheck %s --check-prefix=GPU

// A BERT block's pieces (targets/opencl/lowerings/transformer.py, casts.py, typed.py):
// layer_norm one row per work-item on float16 lanes, silu from exp on float8 blocks, the
// i64 attention mask reshaped (a long copy) and compared with an i64 zero uploaded as its
// 8 bytes (`c0`), the i1 result selecting finfo.min, attention with an online softmax over
// blocks of 8 keys (float8 scores, the 3 keys of a short row in the tail lanes at -inf)
// and an i64 -> f32 cast. i64 buffers take 8 bytes per element (b1: 6 x 8).
// CHECK-LABEL: delegate.executable private @bert_opencl_0
// CHECK:       "ocl.program"() <{sym_name = "kernels", source = "{{.*}}/* nn.layer_norm 2x3x16, 16, 16 -> 2x3x16 [x16 lanes] */
// CHECK-SAME:  __global const float16* xr = (__global const float16*)(x0 + gid * 16);
// CHECK-SAME:  const float inv = 1.0f / sqrt({{.*}} / 16.0f + 1e-12f);
// CHECK-SAME:  /* nn.silu 2x3x16 -> 2x3x16 [x8 per item] */
// CHECK-SAME:  ((__global float8*)y)[gid] = v / (1.0f + exp(-v));
// CHECK-SAME:  /* copy long */
// CHECK-SAME:  __kernel void k3(__global const long* restrict x0, __global const long* restrict x1, __global uchar* restrict y)
// CHECK-SAME:  y[gid] = (uchar)(a == b);
// CHECK-SAME:  y[gid] = (float)(a != 0 ? b : c);
// CHECK-SAME:  /* nn.attention 2x2x3x8, 2x2x8x3, 2x2x3x8, 2x1x1x3 -> 2x2x3x8 [3 rows x 8 keys per step] */
// CHECK-SAME:  for (int n0 = 0; n0 < 3; n0 += 8) {
// CHECK-SAME:  s0 = n0 + (int8)(0, 1, 2, 3, 4, 5, 6, 7) < 3 ? s0 : (float8)(-INFINITY);
// CHECK-SAME:  const float corr0 = nm0 == mx0 ? 1.0f : exp(mx0 - nm0);
// CHECK-SAME:  const float8 p0 = nm0 == -INFINITY ? (float8)(0.0f)
// CHECK-SAME:  /* nn.cast 2x3 -> 2x3 */
// CHECK-SAME:  __kernel void k6(__global const long* restrict x0, __global float* restrict y)
// CHECK:       "ocl.upload"() <{index = 0 : i64, value = dense<0> : tensor<8xui8>}>
// CHECK:       "ocl.alloc"() <{id = 1 : i64, bytes = 48 : i64}>
// CHECK:       "ocl.launch"() <{kernel = "k0", args = ["in0", "in1", "in1", "out0"], global = [6 : i64]
// CHECK-NEXT:  "ocl.launch"() <{kernel = "k1", args = ["out0", "b0"], global = [12 : i64]
// CHECK-NEXT:  "ocl.launch"() <{kernel = "k2", args = ["in2", "b1"], global = [6 : i64]
// CHECK-NEXT:  "ocl.launch"() <{kernel = "k3", args = ["b1", "c0", "b2"], global = [6 : i64]
// CHECK-NEXT:  "ocl.launch"() <{kernel = "k4", args = ["b2", "c1", "c2", "b1"], global = [6 : i64]
// CHECK-NEXT:  "ocl.launch"() <{kernel = "k5", args = ["in3", "in4", "in5", "b1", "out1"], global = [4 : i64]
// CHECK-NEXT:  "ocl.launch"() <{kernel = "k6", args = ["in2", "b1"], global = [6 : i64]
// kernels=gpu: layer_norm and attention take one work-group of 64 per row (sums, maxima in
// local memory; the attention's scores too).
// GPU-LABEL:   delegate.executable private @bert_opencl_0
// GPU:         /* nn.layer_norm 2x3x16, 16, 16 -> 2x3x16 (gpu) [one work-group per row] */
// GPU-SAME:    __kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k0(
// GPU-SAME:    /* nn.attention 2x2x3x8, 2x2x8x3, 2x2x3x8, 2x1x1x3 -> 2x2x3x8 (gpu) [one work-group per query row] */
// GPU-SAME:    __local float sc[3];
// GPU:         "ocl.launch"() <{kernel = "k0", args = ["in0", "in1", "in1", "out0"], global = [384 : i64], local = [64 : i64]}>
// GPU:         "ocl.launch"() <{kernel = "k5", args = ["in3", "in4", "in5", "b1", "out1"], global = [768 : i64], local = [64 : i64]}>
delegate.executable private @bert_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<2x3x16xf32>, %g: tensor<16xf32>, %ids: tensor<2x3xi64>, %q: tensor<2x2x3x8xf32>, %k: tensor<2x2x8x3xf32>, %v: tensor<2x2x3x8xf32>) -> (tensor<2x3x16xf32>, tensor<2x2x3x8xf32>, tensor<2x3x16xf32>) {
    %y = nn.layer_norm %x, %g, %g epsilon = 1.0e-12 : tensor<2x3x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x3x16xf32>
    %s = nn.silu %y : tensor<2x3x16xf32> -> tensor<2x3x16xf32>
    %u = nn.reshape %ids shape = [2, 1, 1, 3] : tensor<2x3xi64> -> tensor<2x1x1x3xi64>
    %zero = nn.constant dense<0> : tensor<i64>
    %eq = nn.compare %u, %zero kind = "eq" : tensor<2x1x1x3xi64>, tensor<i64> -> tensor<2x1x1x3xi1>
    %min = nn.constant dense<-3.40282347e+38> : tensor<f32>
    %z = nn.constant dense<0.0> : tensor<f32>
    %m = nn.select %eq, %min, %z : tensor<2x1x1x3xi1>, tensor<f32>, tensor<f32> -> tensor<2x1x1x3xf32>
    %o = nn.attention %q, %k, %v, %m scale = 0.25 key_transposed = true : tensor<2x2x3x8xf32>, tensor<2x2x8x3xf32>, tensor<2x2x3x8xf32>, tensor<2x1x1x3xf32> -> tensor<2x2x3x8xf32>
    %f = nn.cast %ids : tensor<2x3xi64> -> tensor<2x3xf32>
    %r = nn.reshape %f shape = [2, 3, 1] : tensor<2x3xf32> -> tensor<2x3x1xf32>
    %w = nn.add %s, %r : tensor<2x3x16xf32>, tensor<2x3x1xf32> -> tensor<2x3x16xf32>
    func.return %y, %o, %w : tensor<2x3x16xf32>, tensor<2x2x3x8xf32>, tensor<2x3x16xf32>
  }
}

// -----

// Keys a multiple of 8 and a [B, 1, 1, N] mask: the scores' keys and the mask are float8
// loads; float to i64 saturates to the reference's bound (NaN -> 0, from the bits).
// CHECK-LABEL: delegate.executable private @aligned_opencl_0
// CHECK:       const float8 kv = ((__global const float8*)(kb + k * 16 + n0))[0];
// CHECK-SAME:  s0 = s0 * 0.125f + ((__global const float8*)(mr0 + n0))[0];
// CHECK-SAME:  y[gid] = (!((as_uint(a) & 0x7fffffffu) <= 0x7f800000u) ? 0L : a >= 9223372036854775808.0f ? 9223372036854774784L : convert_long_sat_rtz(a));
delegate.executable private @aligned_opencl_0 target("opencl") {
  func.func @entry(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x16x8xf32>, %m: tensor<1x1x1x16xf32>, %f: tensor<5xf32>) -> (tensor<1x2x4x8xf32>, tensor<5xi64>) {
    %o = nn.attention %q, %k, %v, %m scale = 0.125 key_transposed = true : tensor<1x2x4x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>, tensor<1x1x1x16xf32> -> tensor<1x2x4x8xf32>
    %i = nn.cast %f : tensor<5xf32> -> tensor<5xi64>
    func.return %o, %i : tensor<1x2x4x8xf32>, tensor<5xi64>
  }
}

// -----

// Casts and comparisons of other integer types have no OpenCL kernel: the pass fails at the op.
delegate.executable private @bad_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<4xi16>) -> tensor<4xf32> {
    // expected-error @+1 {{lower-opencl: opencl: 'nn.cast' on i16 tensors (float32 only)}}
    %y = nn.cast %x : tensor<4xi16> -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}
