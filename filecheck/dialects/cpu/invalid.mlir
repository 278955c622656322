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

// -----

func.func @unknown_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown fusion kind 'epilogue' (expected one of qconv, qadd, conv_add, dynamic_fc, qtable, qmul, qsum, attention)}}
  %f = "cpu.fusion"() <{kind = "epilogue"}> ({
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    %z = nn.exp %y : tensor<4xf32> -> tensor<4xf32>
    "cpu.yield"(%z) : (tensor<4xf32>) -> ()
  }) : () -> tensor<4xf32>
  func.return %f : tensor<4xf32>
}

// -----

func.func @one_op(%x: tensor<1x4x4x8xf32>, %w: tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32> {
  // expected-error @+1 {{expected at least two fused ops and cpu.yield}}
  %f = "cpu.fusion"() <{kind = "conv_add"}> ({
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    "cpu.yield"(%c) : (tensor<1x4x4x8xf32>) -> ()
  }) : () -> tensor<1x4x4x8xf32>
  func.return %f : tensor<1x4x4x8xf32>
}

// -----

func.func @no_producer(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a 'qconv' fusion holds exactly one 'nn.conv2d' or 'nn.fully_connected'}}
  %f = "cpu.fusion"() <{kind = "qconv"}> ({
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    %z = nn.exp %y : tensor<4xf32> -> tensor<4xf32>
    "cpu.yield"(%z) : (tensor<4xf32>) -> ()
  }) : () -> tensor<4xf32>
  func.return %f : tensor<4xf32>
}

// -----

func.func @conv_relu(%x: tensor<1x4x4x8xf32>, %w: tensor<8x1x1x8xf32>) -> tensor<1x4x4x8xf32> {
  // expected-error @+1 {{a 'conv_add' fusion holds an nn.conv2d and the nn.add of it}}
  %f = "cpu.fusion"() <{kind = "conv_add"}> ({
    %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x4x4x8xf32>
    %r = nn.relu %c : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
    "cpu.yield"(%r) : (tensor<1x4x4x8xf32>) -> ()
  }) : () -> tensor<1x4x4x8xf32>
  func.return %f : tensor<1x4x4x8xf32>
}

// -----

func.func @yield_types(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{cpu.yield must yield values of the fusion's result types}}
  %f = "cpu.fusion"() <{kind = "qadd"}> ({
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    %z = nn.add %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    "cpu.yield"(%z) : (tensor<4xf32>) -> ()
  }) : () -> tensor<2x2xf32>
  func.return %f : tensor<2x2xf32>
}

// -----

func.func @attention_with_add(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{an 'attention' fusion holds an nn.attention and nn.transposes}}
  %f = "cpu.fusion"() <{kind = "attention"}> ({
    %o = nn.attention %q, %k, %v : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
    %a = nn.add %o, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
    "cpu.yield"(%a) : (tensor<1x2x4x8xf32>) -> ()
  }) : () -> tensor<1x2x4x8xf32>
  func.return %f : tensor<1x2x4x8xf32>
}
