// RUN: irc-opt %s --split-input-file --verify-diagnostics

// Every verifier message of the transformer ops of `nn` (dialects/nn/transformer.py).

func.func @layer_norm_scale_shape(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{expected scale of the normalised shape 8, got 4}}
  %y = nn.layer_norm %x, %g : tensor<2x8xf32>, tensor<4xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<2x8xf32>, %g: tensor<2x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{expected bias of the normalised shape 2x8, got 8}}
  %y = nn.layer_norm %x, %g, %b axis = 0 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = nn.layer_norm %x, %g axis = 2 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{epsilon must be non-negative, got -1.0}}
  %y = nn.layer_norm %x, %g epsilon = -1.0 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @layer_norm_integer(%x: tensor<2x8xi32>, %g: tensor<8xi32>) {
  // expected-error @+1 {{input must be a float tensor, got i32}}
  %y = nn.layer_norm %x, %g : tensor<2x8xi32>, tensor<8xi32> -> tensor<2x8xi32>
  func.return
}

// -----

func.func @layer_norm_mixed(%x: tensor<2x8xf32>, %g: tensor<8xf16>) {
  // expected-error @+1 {{scale element type f16 differs from input element type f32}}
  %y = nn.layer_norm %x, %g : tensor<2x8xf32>, tensor<8xf16> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @silu_quantized(%x: tensor<4x!quant.uniform<i8:f32, 0.5:-1>>) {
  // expected-error @+1 {{input must be a float tensor, got !quant.uniform<i8:f32, 0.5:-1>}}
  %y = nn.silu %x : tensor<4x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<4x!quant.uniform<i8:f32, 0.5:-1>>
  func.return
}

// -----

func.func @silu_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{inferred result shape 4 is incompatible with declared shape 5}}
  %y = nn.silu %x : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @attention_rank(%q: tensor<8x4xf32>, %k: tensor<1x8x4xf32>, %v: tensor<8x4xf32>) {
  // expected-error @+1 {{expected query, key and value of one rank >= 2, got ranks 2, 3 and 2}}
  %y = nn.attention %q, %k, %v : tensor<8x4xf32>, tensor<1x8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @attention_batch(%q: tensor<2x8x4xf32>, %k: tensor<1x8x4xf32>, %v: tensor<2x8x4xf32>) {
  // expected-error @+1 {{key batch dimensions 1 differ from the query's 2}}
  %y = nn.attention %q, %k, %v : tensor<2x8x4xf32>, tensor<1x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  func.return
}

// -----

func.func @attention_depth(%q: tensor<8x4xf32>, %k: tensor<6x5xf32>, %v: tensor<6x4xf32>) {
  // expected-error @+1 {{query depth 4 differs from key depth 5}}
  %y = nn.attention %q, %k, %v : tensor<8x4xf32>, tensor<6x5xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @attention_length(%q: tensor<8x4xf32>, %kt: tensor<4x6xf32>, %v: tensor<7x4xf32>) {
  // expected-error @+1 {{key length 6 differs from value length 7}}
  %y = nn.attention %q, %kt, %v key_transposed = true : tensor<8x4xf32>, tensor<4x6xf32>, tensor<7x4xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @attention_mask_rank(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>, %v: tensor<6x4xf32>, %m: tensor<1x8x6xf32>) {
  // expected-error @+1 {{mask of rank 3 is above the scores' rank 2}}
  %y = nn.attention %q, %k, %v, %m : tensor<8x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<1x8x6xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @attention_mask_shape(%q: tensor<1x4xf32>, %k: tensor<6x4xf32>, %v: tensor<6x4xf32>, %m: tensor<8x6xf32>) {
  // expected-error @+1 {{mask shape 8x6 does not broadcast to the scores shape 1x6}}
  %y = nn.attention %q, %k, %v, %m : tensor<1x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<8x6xf32> -> tensor<1x4xf32>
  func.return
}

// -----

func.func @attention_mask_mismatch(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>, %v: tensor<6x4xf32>, %m: tensor<8x5xf32>) {
  // expected-error @+1 {{shapes 8x5 and 8x6 are not broadcastable}}
  %y = nn.attention %q, %k, %v, %m : tensor<8x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<8x5xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @attention_mask_type(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>, %v: tensor<6x4xf32>, %m: tensor<8x6xi1>) {
  // expected-error @+1 {{mask element type i1 differs from query element type f32}}
  %y = nn.attention %q, %k, %v, %m : tensor<8x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<8x6xi1> -> tensor<8x4xf32>
  func.return
}
