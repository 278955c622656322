// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-fuse,cpu-plan-memory,cpu-codegen | filecheck %s

// The "fc" fusions as `irc_fc` calls: the gelu's code in the epilogue (17: tanh form), the
// residual (the entry's second input) and its activation (1: relu); the product alone
// runs `irc_fc` too. Each call's last argument is its packed-input scratch.
// CHECK-LABEL: delegate.executable private @fc_kernels
// CHECK:         cpu.module @kernels source =
// CHECK-SAME:      irc_fc(in0, 10, 24, K[0], 32, K[1], (ws + {{[0-9]+}}), 40, 17, NULL, 0, (ws + {{[0-9]+}}));
// CHECK-SAME:      irc_fc((ws + {{[0-9]+}}), 10, 40, K[2], 32, NULL, (ws + {{[0-9]+}}), 24, 0, in1, 1, (ws + {{[0-9]+}}));
// CHECK-SAME:      irc_fc((ws + {{[0-9]+}}), 10, 24, K[3], 16, NULL, out0, 8, 1, NULL, 0, (ws + {{[0-9]+}}));
// CHECK:         cpu.constant 0 packing = "conv2d_filter [1][N/32][1][1][K][32]"
delegate.executable private @fc_kernels target("cpu") {
  func.func @entry(%x: tensor<2x5x24xf32>, %r: tensor<2x5x24xf32>) -> tensor<2x5x8xf32> {
    %w = nn.constant dense<0.25> : tensor<40x24xf32>
    %b = nn.constant dense<-0.5> : tensor<40xf32>
    %p = nn.fully_connected %x, %w, %b : tensor<2x5x24xf32>, tensor<40x24xf32>, tensor<40xf32> -> tensor<2x5x40xf32>
    %g = nn.gelu %p approximate = "tanh" : tensor<2x5x40xf32> -> tensor<2x5x40xf32>
    %w2 = nn.constant dense<0.125> : tensor<24x40xf32>
    %q = nn.fully_connected %g, %w2 : tensor<2x5x40xf32>, tensor<24x40xf32> -> tensor<2x5x24xf32>
    %s = nn.add %q, %r : tensor<2x5x24xf32>, tensor<2x5x24xf32> -> tensor<2x5x24xf32>
    %y = nn.relu %s : tensor<2x5x24xf32> -> tensor<2x5x24xf32>
    %w3 = nn.constant dense<0.5> : tensor<8x24xf32>
    %o = nn.fully_connected %y, %w3 activation = "relu" : tensor<2x5x24xf32>, tensor<8x24xf32> -> tensor<2x5x8xf32>
    func.return %o : tensor<2x5x8xf32>
  }
}

// -----

// An "fc" fusion the kernel cannot run: a gelu after a product with its own activation.
delegate.executable private @fc_wrong target("cpu") {
  func.func @entry(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x8xf32>
    // expected-error @+1 {{cpu-plan-memory: the 'fc' fusion does not hold a chain of its kind}}
    %f = "cpu.fusion"() <{kind = "fc"}> ({
      %p = nn.fully_connected %x, %w activation = "relu" : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
      %g = nn.gelu %p : tensor<3x8xf32> -> tensor<3x8xf32>
      "cpu.yield"(%g) : (tensor<3x8xf32>) -> ()
    }) : () -> tensor<3x8xf32>
    func.return %f : tensor<3x8xf32>
  }
}
