// RUN: irc-opt %s --split-input-file --verify-diagnostics

// The verifiers of ocl.fusion, ocl.yield and ocl.kernel, one case each.

func.func @fusion_without_epilogue(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected a producer, at least one epilogue op and ocl.yield}}
  %f = "ocl.fusion"() ({
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    "ocl.yield"(%y) : (tensor<4xf32>) -> ()
  }) : () -> tensor<4xf32>
  func.return %f : tensor<4xf32>
}

// -----

func.func @fusion_not_a_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.sigmoid' does not read the result of 'nn.relu'}}
  %f = "ocl.fusion"() ({
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    %z = nn.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
    "ocl.yield"(%z) : (tensor<4xf32>) -> ()
  }) : () -> tensor<4xf32>
  func.return %f : tensor<4xf32>
}

// -----

func.func @fusion_value_used_twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the result of 'nn.relu' must have one use (the next fused op)}}
  %f = "ocl.fusion"() ({
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    %z = nn.add %y, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    "ocl.yield"(%z) : (tensor<4xf32>) -> ()
  }) : () -> tensor<4xf32>
  func.return %f : tensor<4xf32>
}

// -----

func.func @fusion_yield_type(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{ocl.yield must yield values of the fusion's result types}}
  %f = "ocl.fusion"() ({
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    %z = nn.sigmoid %y : tensor<4xf32> -> tensor<4xf32>
    "ocl.yield"(%z) : (tensor<4xf32>) -> ()
  }) : () -> tensor<2x2xf32>
  func.return %f : tensor<2x2xf32>
}

// -----

"ocl.program"() <{sym_name = "kernels", source = ""}> ({
  // expected-error @+1 {{bad kernel name 'main'}}
  "ocl.kernel"() <{sym_name = "main", body = "__kernel void KERNEL_NAME(__global float* restrict y) {}", description = "x"}> : () -> ()
}) : () -> ()

// -----

"ocl.program"() <{sym_name = "kernels", source = ""}> ({
  // expected-error @+1 {{the body must define '__kernel void KERNEL_NAME(...)'}}
  "ocl.kernel"() <{sym_name = "k0", body = "__kernel void k0(__global float* restrict y) {}", description = "x"}> : () -> ()
}) : () -> ()

// -----

"ocl.program"() <{sym_name = "kernels", source = ""}> ({
  // expected-error @+1 {{the description must be one line without '*/'}}
  "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global float* restrict y) {}", description = "x */ evil"}> : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{kernel 'k0' is defined twice}}
"ocl.program"() <{sym_name = "kernels", source = ""}> ({
  "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global float* restrict y) {}", description = "x"}> : () -> ()
  "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global float* restrict y) {}", description = "x"}> : () -> ()
}) : () -> ()
