// RUN: irc-opt %s -p lower-opencl | filecheck %s
// RUN: irc-opt %s -p lower-opencl | irc-opt | filecheck %s
// RUN: irc-opt %s -p opencl-fuse,opencl-bufferize,opencl-plan-memory,opencl-codegen | filecheck %s
// RUN: irc-opt %s -p opencl-fuse,opencl-bufferize,opencl-plan-memory,opencl-codegen --print-ir-after-all 2>&1 | filecheck %s --check-prefix=STEPS

// STEPS: IR Dump After opencl-fuse
// STEPS: "ocl.fusion"
// STEPS: IR Dump After opencl-bufferize
// STEPS: "ocl.kernel"() <{sym_name = "k0"
// STEPS: peak_bytes = 1152
// STEPS: IR Dump After opencl-plan-memory
// STEPS: peak_bytes = 1152
// STEPS: IR Dump After opencl-codegen
// STEPS-NOT: "ocl.kernel"

// A conv with constant filter and bias, a relu fused into its epilogue, then a transpose
// pair: the entry becomes one ocl.execute with the buffer plan (two planned buffers,
// reused by liveness; peak_bytes is their sum) and three launches with the rule's local
// size (16: the largest power of two up to 64 dividing 144); the constants are uploaded
// once by the program; the source holds generated identifiers only. The last RUN line
// shows lower-opencl is the four passes in order.
// CHECK:       "ocl.program"() <{sym_name = "kernels", source = "{{.*}}__kernel void k0(__global const float* restrict x0, __global const float* restrict x1, __global const float* restrict x2, __global float* restrict y){{.*}}v = (v < 0.0f ? 0.0f : v);{{.*}}__kernel void k1({{.*}}"}> ({
// CHECK-NEXT:    "ocl.upload"() <{index = 0 : i64, value = dense<5.000000e-01> : tensor<4x3x3x3xf32>}> : () -> ()
// CHECK-NEXT:    "ocl.upload"() <{index = 1 : i64, value = dense<2.500000e-01> : tensor<4xf32>}> : () -> ()
// CHECK-NEXT:  }) : () -> ()
// CHECK:       func.func @entry(%{{.*}}: tensor<1x6x6x3xf32>) -> tensor<1x6x6x4xf32> {
// CHECK-NEXT:    %{{.*}} = "ocl.execute"(%{{.*}}) <{program = @kernels, peak_bytes = 1152 : i64}> ({
// CHECK-NEXT:      "ocl.alloc"() <{id = 0 : i64, bytes = 576 : i64}> : () -> ()
// CHECK-NEXT:      "ocl.alloc"() <{id = 1 : i64, bytes = 576 : i64}> : () -> ()
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "c1", "b0"], global = [144 : i64], local = [16 : i64]}> : () -> ()
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k1", args = ["b0", "b1"], global = [144 : i64], local = [16 : i64]}> : () -> ()
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k2", args = ["b1", "out0"], global = [144 : i64], local = [16 : i64]}> : () -> ()
// CHECK-NEXT:    }) : (tensor<1x6x6x3xf32>) -> tensor<1x6x6x4xf32>
// CHECK-NEXT:    func.return %{{.*}} : tensor<1x6x6x4xf32>
// CHECK-NOT:   secret_model_name
delegate.executable private @main_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<1x6x6x3xf32>) -> tensor<1x6x6x4xf32> {
    %w = nn.constant dense<0.5> : tensor<4x3x3x3xf32>
    %b = nn.constant dense<0.25> : tensor<4xf32>
    %c = nn.conv2d %x, %w, %b pads = [1, 1, 1, 1] layout = "NHWC"
        : tensor<1x6x6x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x6x6x4xf32>
    %r = nn.relu %c {secret_model_name} : tensor<1x6x6x4xf32> -> tensor<1x6x6x4xf32>
    %t = nn.transpose %r perm = [0, 3, 1, 2] : tensor<1x6x6x4xf32> -> tensor<1x4x6x6xf32>
    %u = nn.transpose %t perm = [0, 2, 3, 1] : tensor<1x4x6x6xf32> -> tensor<1x6x6x4xf32>
    func.return %u : tensor<1x6x6x4xf32>
  }
}
