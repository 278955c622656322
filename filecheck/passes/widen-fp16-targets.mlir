// RUN: irc-opt %s -p 'widen-fp16{targets=cpu precision=fp16}' | filecheck %s --check-prefix=NATIVE
// RUN: env IRC_CPU_PRECISION=fp16 irc-opt %s -p 'widen-fp16{targets=cpu}' | filecheck %s --check-prefix=NATIVE
// RUN: env -u IRC_CPU_PRECISION irc-opt %s -p 'widen-fp16{targets=cpu}' | filecheck %s --check-prefix=WIDENED
// RUN: env IRC_CPU_PRECISION=fp16 irc-opt %s -p 'widen-fp16{targets=cpu precision=fp32}' | filecheck %s --check-prefix=PINNED
// RUN: irc-opt %s -p 'widen-fp16{targets=opencl precision=fp16}' | filecheck %s --check-prefix=PINNED16
// RUN: irc-opt %s -p 'widen-fp16' | filecheck %s --check-prefix=WIDENED

// widen-fp16{targets=...} asks each target per op (`computes_float16_op(op, precision)`).
// The cpu target keeps float16 storage only at precision=fp16 (the pass's option, else
// IRC_CPU_PRECISION): the model keeps its f16 constants, values and casts for the ops it
// has float16 kernels for. Its default (fp32), an explicit precision=fp32 and no targets
// widen the whole model: float32 activations with the float16 weights' values. A precision
// the pipeline asks for is recorded on the mark, so that the targets' float16 lowering (the
// OpenCL target's storage) follows it rather than its own default or variable.
// NATIVE-LABEL: func.func @keep_io_types
// NATIVE-NEXT:    %[[H:.*]] = nn.cast %{{.*}} : tensor<4xf32> -> tensor<4xf16>
// NATIVE-NEXT:    %[[W:.*]] = nn.constant {{.*}} : tensor<4xf16>
// NATIVE-NEXT:    %[[A:.*]] = nn.add %[[H]], %[[W]] : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
// NATIVE-NEXT:    %[[Y:.*]] = nn.cast %[[A]] : tensor<4xf16> -> tensor<4xf32>
// NATIVE-NEXT:    func.return %[[Y]] : tensor<4xf32>
// WIDENED:       builtin.module attributes {irc.float16_model}
// WIDENED-LABEL: func.func @keep_io_types
// WIDENED-NEXT:    %[[W:.*]] = nn.constant {{.*}} : tensor<4xf32>
// WIDENED-NEXT:    %[[A:.*]] = nn.add %{{.*}}, %[[W]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// WIDENED-NEXT:    func.return %[[A]] : tensor<4xf32>
// PINNED:       builtin.module attributes {irc.float16_model = "fp32"}
// PINNED-LABEL: func.func @keep_io_types
// PINNED-NEXT:    nn.constant {{.*}} : tensor<4xf32>
// PINNED16:       builtin.module attributes {irc.float16_model = "fp16"}
// PINNED16-LABEL: func.func @keep_io_types
// PINNED16-NEXT:    nn.constant {{.*}} : tensor<4xf32>
func.func @keep_io_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = nn.cast %x : tensor<4xf32> -> tensor<4xf16>
  %w = nn.constant dense<[1.0, -2.0, 0.5, 65504.0]> : tensor<4xf16>
  %a = nn.add %h, %w : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  %y = nn.cast %a : tensor<4xf16> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
