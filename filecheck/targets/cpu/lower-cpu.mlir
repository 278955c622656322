// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-cpu | filecheck %s

// A conv with a constant filter and bias, then an add: the entry becomes one C call (the
// conv of 2 input channels pads through its tasks' windows, no padded copy); the filter is
// packed in the IR ([G][OC blocks][KH][KW][Cg][16 lanes]), the bias stays raw and is shared
// by both ops; the dispatch still verifies against the unchanged signature.
// CHECK-LABEL: delegate.executable private @main_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}void irc_fn_0(const float *in0, float *out0, const void *const *consts, float *ws)
// CHECK-SAME:      irc_conv2d_pad(1, in0, 1, 5, 5, 2, 1, 1, 1, 1, K[0], K[1], (ws + {{[0-9]+}}), 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 2, 4, 1, NULL, 0);
// CHECK-SAME:      po[i0 * 4 + i1] = (a + b);
// CHECK-NEXT:      cpu.constant 0 packing = "conv2d_filter [G][OCg/16][KH][KW][Cg][16]" dense<{{.*}}> : tensor<1x1x3x3x2x16xf32>
// CHECK-NEXT:      cpu.constant 1 packing = "raw" dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @entry(%[[X:.*]]: tensor<1x5x5x2xf32>) -> tensor<1x5x5x4xf32> {
// CHECK-NEXT:      %[[Y:.*]] = cpu.call @kernels "irc_fn_0" (%[[X]]) workspace = {{[1-9][0-9]*}} : (tensor<1x5x5x2xf32>) -> tensor<1x5x5x4xf32>
// CHECK-NEXT:      func.return %[[Y]] : tensor<1x5x5x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @main
// CHECK:         delegate.dispatch @main_cpu_0::@entry
delegate.executable private @main_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x5x5x2xf32>) -> tensor<1x5x5x4xf32> {
    %w = nn.constant dense<0.25> : tensor<4x3x3x2xf32>
    %b = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %c = nn.conv2d %x, %w, %b pads = [1, 1, 1, 1] layout = "NHWC" activation = "relu" : tensor<1x5x5x2xf32>, tensor<4x3x3x2xf32>, tensor<4xf32> -> tensor<1x5x5x4xf32>
    %y = nn.add %c, %b : tensor<1x5x5x4xf32>, tensor<4xf32> -> tensor<1x5x5x4xf32>
    func.return %y : tensor<1x5x5x4xf32>
  }
}
func.func @main(%x: tensor<1x5x5x2xf32>) -> tensor<1x5x5x4xf32> {
  %y = delegate.dispatch @main_cpu_0::@entry(%x) : (tensor<1x5x5x2xf32>) -> tensor<1x5x5x4xf32>
  func.return %y : tensor<1x5x5x4xf32>
}

// -----

// A residual add of a float conv's result and a tensor of the same shape runs in the conv's
// epilogue: the conv writes the add's result, act(conv + bias) then relu6(. + %r) tile by
// tile (residual pointer and activation code 2 are the last arguments); no add loop.
// CHECK-LABEL: delegate.executable private @res_cpu_0 target("cpu") {
// CHECK:         /* nn.conv2d 1x4x4x8, 16x1x1x8 -> 1x4x4x16 */
// CHECK-SAME:      irc_conv2d(1, in0, 1, 1, 16, 8, K[0], NULL, out0, 1, 16, 16, 1, 1, 1, 1, 1, 1, 1, 8, 16, 0, in1, 2);
// CHECK-NOT:       nn.add
// CHECK-SAME:    "
delegate.executable private @res_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8xf32>, %r: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
    %w = nn.constant dense<0.5> : tensor<16x1x1x8xf32>
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<16x1x1x8xf32> -> tensor<1x4x4x16xf32>
    %y = nn.add %r, %c activation = "relu6" : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf32>
    func.return %y : tensor<1x4x4x16xf32>
  }
}

// -----

// Reshapes are free: the result shares its input's buffer, here the output buffer itself,
// so the function needs no workspace and no copy.
// CHECK-LABEL: delegate.executable private @reshape_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}void irc_fn_0(const float *in0, float *out0, const void *const *consts, float *ws)
// CHECK-SAME:      float *restrict po = out0;
// CHECK-NOT:       memcpy(out0
// CHECK:         cpu.call @kernels "irc_fn_0" (%{{.*}}) workspace = 0
delegate.executable private @reshape_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
    %r = nn.relu %x : tensor<2x6xf32> -> tensor<2x6xf32>
    %y = nn.reshape %r shape = [3, 4] : tensor<2x6xf32> -> tensor<3x4xf32>
    func.return %y : tensor<3x4xf32>
  }
}

// -----

// A constant whose elements are all equal is a literal in the loop, not a table entry.
// CHECK-LABEL: delegate.executable private @splat_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}const float b = 0.5f;
// CHECK-SAME:      po[i0] = irc_act((a * b), 2);
// CHECK-NOT:       cpu.constant
// CHECK:         cpu.call
delegate.executable private @splat_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %h = nn.constant dense<0.5> : tensor<2x3xf32>
    %y = nn.mul %x, %h activation = "relu6" : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    func.return %y : tensor<2x3xf32>
  }
}

// -----

// Must not fire on another target's executable.
// CHECK-LABEL: delegate.executable private @main_opencl_0 target("opencl") {
// CHECK-NOT:     cpu.module
// CHECK:         nn.relu
delegate.executable private @main_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----

delegate.executable private @bad_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x4xf16>) -> tensor<1x4xf16> {
    // float16 relu, conv, elementwise and reduce ops have kernels; softmax has none
    // expected-error @+1 {{lower-cpu: 'nn.softmax' on f16 tensors (float32 only)}}
    %y = nn.softmax %x {axis = -1 : i64} : tensor<1x4xf16> -> tensor<1x4xf16>
    func.return %y : tensor<1x4xf16>
  }
}
