// RUN: irc-opt %s --split-input-file --verify-diagnostics -p opencl-bufferize | filecheck %s

// A fused tiled conv with a residual add (what opencl-fuse makes), then a transpose. The
// program holds the packed filter to upload and one ocl.kernel per kernel (sources are
// assembled by opencl-codegen); the fused kernel takes the residual as its last input
// (x2: after input and packed filter) and adds it to its float8 accumulators before the
// relu. One ocl.alloc per intermediate tensor (no reuse yet), local sizes left empty.
// CHECK:       "ocl.program"() <{sym_name = "kernels", source = ""}> ({
// CHECK-NEXT:    "ocl.upload"() <{index = 0 : i64, value = dense<5.000000e-01> : tensor<1x8x1x8xf32>}> : () -> ()
// CHECK-NEXT:    "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global const float* restrict x0, __global const float* restrict x1, __global const float* restrict x2, __global float* restrict y){{.*}}float8 v = acc0_0;\0A            v = (v + ((__global const float8*)x2)[(m0 + 0) * 1 + cg * 1 + 0]);\0A            v = (v < 0.0f ? 0.0f : v);{{.*}}", description = "nn.conv2d 1x4x4x8, 8x1x1x8 -> 1x4x4x8 (tiled x8) [8x8 tile] + fused nn.add, nn.relu"}> : () -> ()
// CHECK-NEXT:    "ocl.kernel"() <{sym_name = "k1", body = "{{.*}}", description = "nn.transpose 1x4x4x8 -> 1x8x4x4"}> : () -> ()
// CHECK-NEXT:  }) : () -> ()
// CHECK:       "ocl.execute"(%{{.*}}, %{{.*}}) <{program = @kernels, peak_bytes = 512 : i64}> ({
// CHECK-NEXT:    "ocl.alloc"() <{id = 0 : i64, bytes = 512 : i64}> : () -> ()
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "in1", "b0"], global = [2 : i64], local = []}> : () -> ()
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k1", args = ["b0", "out0"], global = [128 : i64], local = []}> : () -> ()
// CHECK-NEXT:  }) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
delegate.executable private @residual target("opencl") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32> {
    %w = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %f = "ocl.fusion"() ({
      %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
      %a = nn.add %c, %r : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
      %y = nn.relu %a : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
      "ocl.yield"(%y) : (tensor<1x4x4x8xf32>) -> ()
    }) : () -> tensor<1x4x4x8xf32>
    %t = nn.transpose %f perm = [0, 3, 1, 2] : tensor<1x4x4x8xf32> -> tensor<1x8x4x4xf32>
    func.return %t : tensor<1x8x4x4xf32>
  }
}

// -----

// The residual on the left of a sub, in the scalar (untiled) conv kernel.
// CHECK:       "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global const float* restrict x0, __global const float* restrict x1, __global const float* restrict x2, __global float* restrict y){{.*}}float v = acc;\0A    v = (x2[gid] - v);\0A    y[gid] = v;{{.*}}", description = "nn.conv2d 1x4x4x3, 3x1x1x3 -> 1x4x4x3 + fused nn.sub"}>
// CHECK:       "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "in1", "out0"], global = [48 : i64], local = []}>
delegate.executable private @residual_left target("opencl") {
  func.func @entry(%x: tensor<1x4x4x3xf32>, %r: tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> {
    %w = nn.constant dense<0.5> : tensor<3x1x1x3xf32>
    %f = "ocl.fusion"() ({
      %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x3xf32>, tensor<3x1x1x3xf32> -> tensor<1x4x4x3xf32>
      %s = nn.sub %r, %c : tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32> -> tensor<1x4x4x3xf32>
      "ocl.yield"(%s) : (tensor<1x4x4x3xf32>) -> ()
    }) : () -> tensor<1x4x4x3xf32>
    func.return %f : tensor<1x4x4x3xf32>
  }
}

// -----

delegate.executable private @unsupported target("opencl") {
  func.func @entry(%x: tensor<4xf16>) -> tensor<4xf16> {
    // expected-error @+1 {{opencl-bufferize: opencl: 'nn.relu' on f16 tensors (float32 only)}}
    %y = nn.relu %x : tensor<4xf16> -> tensor<4xf16>
    func.return %y : tensor<4xf16>
  }
}

// -----

// One-element constants are literals in the epilogue (not uploaded, not kernel inputs);
// maximum keeps the (vector) value first.
// CHECK:       "ocl.program"() <{sym_name = "kernels", source = ""}> ({
// CHECK-NEXT:    "ocl.upload"() <{index = 0 : i64, value = dense<5.000000e-01> : tensor<1x4x1x8xf32>}> : () -> ()
// CHECK-NEXT:    "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global const float* restrict x0, __global const float* restrict x1, __global float* restrict y){{.*}}float8 v = acc0_0;\0A            v = ((v > 0.25f || isnan(v) ? v : 0.25f));\0A            v = (0.25f - v);\0A{{.*}}", description = "nn.conv2d 1x3x3x4, 8x1x1x4 -> 1x3x3x8 (tiled x8) [6x8 tile] + fused nn.maximum, nn.sub"}> : () -> ()
// CHECK-NEXT:  }) : () -> ()
// CHECK:         "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "out0"], global = [2 : i64], local = []}>
delegate.executable private @scalar_literals target("opencl") {
  func.func @entry(%x: tensor<1x3x3x4xf32>) -> tensor<1x3x3x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x1x1x4xf32>
    %f = nn.constant dense<0.25> : tensor<1xf32>
    %s = "ocl.fusion"() ({
      %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x3x3x4xf32>, tensor<8x1x1x4xf32> -> tensor<1x3x3x8xf32>
      %m = nn.maximum %f, %c : tensor<1xf32>, tensor<1x3x3x8xf32> -> tensor<1x3x3x8xf32>
      %t = nn.sub %f, %m : tensor<1xf32>, tensor<1x3x3x8xf32> -> tensor<1x3x3x8xf32>
      "ocl.yield"(%t) : (tensor<1x3x3x8xf32>) -> ()
    }) : () -> tensor<1x3x3x8xf32>
    func.return %s : tensor<1x3x3x8xf32>
  }
}

// -----

// An i1 mask between a comparison and a select lives in a uchar buffer: one byte per element.
// CHECK-LABEL: delegate.executable private @mask_bytes
// CHECK:         "ocl.alloc"() <{id = 0 : i64, bytes = 6 : i64}>
delegate.executable private @mask_bytes target("opencl") {
  func.func @entry(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %m = nn.compare %x, %y kind = "lt" : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
    %s = nn.select %m, %x, %y : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    func.return %s : tensor<2x3xf32>
  }
}

// -----

// Two ops sharing one kernel (elementwise kernels index by work-item, so the text holds no
// shape): the kernel's comment describes the first, the other launch carries its own label.
// CHECK-LABEL: delegate.executable private @shared_kernel
// CHECK:         "ocl.launch"() <{kernel = "k0", args = ["in0", "out0"], global = [128 : i64], local = []}>
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k0", args = ["in1", "out1"], global = [6 : i64], local = [], label = "nn.tanh 2x3 -> 2x3"}>
delegate.executable private @shared_kernel target("opencl") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %y: tensor<2x3xf32>) -> (tensor<1x4x4x8xf32>, tensor<2x3xf32>) {
    %a = nn.tanh %x : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    %b = nn.tanh %y : tensor<2x3xf32> -> tensor<2x3xf32>
    func.return %a, %b : tensor<1x4x4x8xf32>, tensor<2x3xf32>
  }
}
