// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'opencl-fuse,opencl-bufferize' | filecheck %s --check-prefixes=CHECK,CPU
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'opencl-fuse,opencl-bufferize{kernels=gpu compute-units=132}' | filecheck %s --check-prefixes=CHECK,GPU

// 8-bit storage between kernels (targets/opencl/int8_storage.py). The model input's dcast is
// not launched: the first conv reads the int8 input and dequantizes it (cpu style through a
// table of the 256 values from -128, 0.5 * (c - 1), the last regular input; gpu style by
// arithmetic). Its round trip stores the rounded integer (no `scale * v` product) as a
// uchar (its zero point is the storage minimum: 0 <= q <= 255, no zero point to add or
// subtract); the second conv reads it twice, as its input and as the residual of its
// epilogue (`+ 0.0f`: no contraction into the add). Two launches, one planned buffer of one
// byte per element.
// CHECK-LABEL: "ocl.program"() <{sym_name = "kernels", source = ""}>
// CPU:         "ocl.upload"() <{index = 1 : i64, value = dense<"0x000081C2000080C2{{.*}}000000000000003F{{.*}}"> : tensor<256xf32>}>
// CPU:         "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global const char* restrict x0, __global const float* restrict x1, __global const float* restrict x2, __global uchar* restrict y)
// CPU-SAME:      const float b0 = (x2 + 128)[a0[k]];
// CPU-SAME:      v = (v - ((v + 12582912.0f) - 12582912.0f) == 0.5f ? ((v + 12582912.0f) - 12582912.0f) + 1.0f : ((v + 12582912.0f) - 12582912.0f));\0A{{ *}}((__global uchar16*)y)[(m0 + 0) * 1 + cg * 1 + 0] = convert_uchar16(v); }
// GPU:         "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global const char* restrict x0, __global const float* restrict x1, __global uchar* restrict y)
// GPU-SAME:      acc0 += (0.5f * ((float)(a0[k]) - 1.0f)) * w;
// GPU-SAME:      ((__global uchar4*)y)[(m0 + 0) * 4 + cv] = convert_uchar4(v); }
// CHECK-NOT:     0.023529412f * v
// CHECK-SAME:    description = "nn.conv2d 1x4x4x16, 16x1x1x16 -> 1x4x4x16
// CPU:         "ocl.kernel"() <{sym_name = "k1", body = "__kernel void KERNEL_NAME(__global const uchar* restrict x0, __global const float* restrict x1, __global const float* restrict x2, __global const uchar* restrict x3, __global float* restrict y)
// CPU-SAME:      const float b0 = (x2 + 0)[a0[k]];
// CPU-SAME:      v = (v + (0.023529412f * convert_float16(((__global const uchar16*)x3)[(m0 + 0) * 1 + cg * 1 + 0]) + 0.0f));\0A{{ *}}((__global float16*)y)
// GPU:         "ocl.kernel"() <{sym_name = "k1", body = "__kernel void KERNEL_NAME(__global const uchar* restrict x0, __global const float* restrict x1, __global const uchar* restrict x2, __global float* restrict y)
// GPU-SAME:      acc0 += (0.023529412f * (float)(a0[k])) * w;
// GPU-SAME:      v = (v + (0.023529412f * convert_float4(((__global const uchar4*)x2)[(m0 + 0) * 4 + cv]) + 0.0f));
// CHECK:       "ocl.execute"(%{{.*}}) <{program = @kernels, peak_bytes = 256 : i64}> ({
// CHECK-NEXT:    "ocl.alloc"() <{id = 0 : i64, bytes = 256 : i64}> : () -> ()
// CPU-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "c1", "b0"], global = [2 : i64], local = []}> : () -> ()
// CPU-NEXT:      "ocl.launch"() <{kernel = "k1", args = ["b0", "c2", "c3", "b0", "out0"], global = [2 : i64], local = []}> : () -> ()
// GPU-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "b0"], global = [64 : i64], local = []}> : () -> ()
// GPU-NEXT:      "ocl.launch"() <{kernel = "k1", args = ["b0", "c1", "b0", "out0"], global = [64 : i64], local = []}> : () -> ()
// CHECK-NEXT:  })
delegate.executable private @chain target("opencl") {
  func.func @entry(%x: tensor<1x4x4x16x!quant.uniform<i8:f32, 0.5:1>>) -> tensor<1x4x4x16xf32> {
    %w = nn.constant dense<0.5> : tensor<16x1x1x16xf32>
    %x1 = quant.dcast %x : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.5:1>> to tensor<1x4x4x16xf32>
    %c = nn.conv2d %x1, %w layout = "NHWC" activation = "relu6" : tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32> -> tensor<1x4x4x16xf32>
    %q = quant.qcast %c : tensor<1x4x4x16xf32> to tensor<1x4x4x16x!quant.uniform<i8:f32, 0.023529412:-128>>
    %d = quant.dcast %q : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.023529412:-128>> to tensor<1x4x4x16xf32>
    %c2 = nn.conv2d %d, %w layout = "NHWC" : tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32> -> tensor<1x4x4x16xf32>
    %q2 = quant.qcast %c2 : tensor<1x4x4x16xf32> to tensor<1x4x4x16x!quant.uniform<i8:f32, 0.25:3>>
    %d2 = quant.dcast %q2 : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.25:3>> to tensor<1x4x4x16xf32>
    %a = nn.add %d2, %d : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf32>
    func.return %a : tensor<1x4x4x16xf32>
  }
}

// -----

// Not offered: a round trip read by a reduce (no generator dequantizes its input) and one
// that is an entry result stay float; so does a dcast read by the reduce (launched).
// CHECK-LABEL: "ocl.program"() <{sym_name = "kernels", source = ""}>
// CHECK-NOT:     char* restrict y
// CHECK:         description = "quant.dcast 1x4x4x16 -> 1x4x4x16"
// CHECK-NOT:     char* restrict y
// CHECK:       "ocl.execute"
// CHECK-NEXT:    "ocl.alloc"() <{id = 0 : i64, bytes = 1024 : i64}> : () -> ()
// CHECK-NEXT:    "ocl.alloc"() <{id = 1 : i64, bytes = 64 : i64}> : () -> ()
// CHECK-NEXT:    "ocl.alloc"() <{id = 2 : i64, bytes = 1024 : i64}> : () -> ()
// CHECK:         "ocl.launch"() <{kernel = "{{k[0-9]+}}", args = ["in0", {{(.*, )?}}"b0"]
delegate.executable private @float_readers target("opencl") {
  func.func @entry(%x: tensor<1x4x4x16x!quant.uniform<i8:f32, 0.5:1>>, %y: tensor<1x4x4x16xf32>) -> (tensor<1x16xf32>, tensor<1x4x4x16xf32>) {
    %w = nn.constant dense<0.5> : tensor<16x1x1x16xf32>
    %x1 = quant.dcast %x : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.5:1>> to tensor<1x4x4x16xf32>
    %r0 = nn.reduce %x1 kind = "mean" axes = [1, 2] keepdims = false : tensor<1x4x4x16xf32> -> tensor<1x16xf32>
    %c = nn.conv2d %y, %w layout = "NHWC" : tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32> -> tensor<1x4x4x16xf32>
    %q = quant.qcast %c : tensor<1x4x4x16xf32> to tensor<1x4x4x16x!quant.uniform<i8:f32, 0.25:3>>
    %d = quant.dcast %q : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.25:3>> to tensor<1x4x4x16xf32>
    %r = nn.reduce %d kind = "mean" axes = [1, 2] keepdims = false : tensor<1x4x4x16xf32> -> tensor<1x16xf32>
    %s = nn.add %r, %r0 : tensor<1x16xf32>, tensor<1x16xf32> -> tensor<1x16xf32>
    %c2 = nn.conv2d %y, %w layout = "NHWC" : tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32> -> tensor<1x4x4x16xf32>
    %q2 = quant.qcast %c2 : tensor<1x4x4x16xf32> to tensor<1x4x4x16x!quant.uniform<i8:f32, 0.25:3>>
    %d2 = quant.dcast %q2 : tensor<1x4x4x16x!quant.uniform<i8:f32, 0.25:3>> to tensor<1x4x4x16xf32>
    func.return %s, %d2 : tensor<1x16xf32>, tensor<1x4x4x16xf32>
  }
}
