// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// CHECK-LABEL: delegate.executable private @main_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "void irc_fn_0(const float *in0, float *out0, const void *const *consts, float *ws) {\0A}\0A" {
// CHECK-NEXT:      cpu.constant 0 packing = "raw" dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:      cpu.constant 1 packing = "conv2d_filter" dense<5.000000e-01> : tensor<1x1x1x1x2x16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @entry(%[[X:.*]]: tensor<2xf32>) -> tensor<2xf32> {
// CHECK-NEXT:      %[[Y:.*]] = cpu.call @kernels "irc_fn_0" (%[[X]]) workspace = 64 : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:      func.return %[[Y]] : tensor<2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @pair(%[[A:.*]]: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
// CHECK-NEXT:      %[[P:.*]], %[[Q:.*]] = cpu.call @kernels "irc_fn_1" (%[[A]]) workspace = 0 {note = "kept"} : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT:      func.return %[[P]], %[[Q]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @none() {
// CHECK-NEXT:      cpu.call @kernels "irc_fn_2" () workspace = 0 : () -> ()
delegate.executable private @main_cpu_0 target("cpu") {
  cpu.module @kernels source = "void irc_fn_0(const float *in0, float *out0, const void *const *consts, float *ws) {\0A}\0A" {
    cpu.constant 0 packing = "raw" dense<[1.0, 2.0]> : tensor<2xf32>
    cpu.constant 1 packing = "conv2d_filter" dense<0.5> : tensor<1x1x1x1x2x16xf32>
  }
  func.func @entry(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = cpu.call @kernels "irc_fn_0" (%x) workspace = 64 : (tensor<2xf32>) -> tensor<2xf32>
    func.return %y : tensor<2xf32>
  }
  func.func @pair(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    %p, %q = cpu.call @kernels "irc_fn_1" (%x) workspace = 0 {note = "kept"} : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    func.return %p, %q : tensor<2xf32>, tensor<2xf32>
  }
  func.func @none() {
    cpu.call @kernels "irc_fn_2" () workspace = 0 : () -> ()
    func.return
  }
}
