// RUN: irc-opt %s --split-input-file --verify-diagnostics

delegate.executable private @e target("cpu") {
  // expected-error @+1 {{constant #0 has index 1; indices must count 0, 1, ... in order}}
  cpu.module @kernels source = "" {
    cpu.constant 1 packing = "raw" dense<1.0> : tensor<2xf32>
  }
}

// -----

delegate.executable private @e target("cpu") {
  // expected-error @+1 {{expected only cpu.constant ops in the body, got nn.constant}}
  cpu.module @kernels source = "" {
    %c = nn.constant dense<1.0> : tensor<2xf32>
  }
}

// -----

func.func @outside() {
  // expected-error @+1 {{'cpu.constant' expects parent op 'cpu.module'}}
  cpu.constant 0 packing = "raw" dense<1.0> : tensor<2xf32>
  func.return
}
