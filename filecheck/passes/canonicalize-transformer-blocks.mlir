// RUN: irc-opt %s --split-input-file -p canonicalize | filecheck %s

// canonicalize's transformer patterns (passes/transformer_patterns.py): LayerNorm, SiLU and
// scaled dot-product attention as exporters decompose them become one op each.

// torch's LayerNorm before opset 17: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add.
// CHECK-LABEL: func.func @layer_norm_torch
// CHECK-NEXT:    %[[Y:.*]] = nn.layer_norm %x, %g, %b epsilon = 1.0e-12 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x4x8xf32>
func.func @layer_norm_torch(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %eps = nn.constant dense<1.0e-12> : tensor<f32>
  %m = nn.reduce %x kind = "mean" axes = [-1] keepdims = true : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %c = nn.sub %x, %m : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %p = nn.pow %c, %two : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %v = nn.reduce %p kind = "mean" axes = [2] keepdims = true : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %a = nn.add %v, %eps : tensor<2x4x1xf32>, tensor<f32> -> tensor<2x4x1xf32>
  %s = nn.sqrt %a : tensor<2x4x1xf32> -> tensor<2x4x1xf32>
  %n = nn.div %c, %s : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %y1 = nn.mul %n, %g : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %y = nn.add %b, %y1 : tensor<8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// -----

// The ONNX importer's LayerNormalization (c * c, rsqrt, multiply), over the last two axes,
// without a bias.
// CHECK-LABEL: func.func @layer_norm_rsqrt_two_axes
// CHECK-NEXT:    %[[Y:.*]] = nn.layer_norm %x, %g axis = -2 : tensor<3x4x8xf32>, tensor<4x8xf32> -> tensor<3x4x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @layer_norm_rsqrt_two_axes(%x: tensor<3x4x8xf32>, %g: tensor<4x8xf32>) -> tensor<3x4x8xf32> {
  %eps = nn.constant dense<1.0e-05> : tensor<1xf32>
  %m = nn.reduce %x kind = "mean" axes = [1, 2] keepdims = true : tensor<3x4x8xf32> -> tensor<3x1x1xf32>
  %c = nn.sub %x, %m : tensor<3x4x8xf32>, tensor<3x1x1xf32> -> tensor<3x4x8xf32>
  %p = nn.mul %c, %c : tensor<3x4x8xf32>, tensor<3x4x8xf32> -> tensor<3x4x8xf32>
  %v = nn.reduce %p kind = "mean" axes = [1, 2] keepdims = true : tensor<3x4x8xf32> -> tensor<3x1x1xf32>
  %a = nn.add %eps, %v : tensor<1xf32>, tensor<3x1x1xf32> -> tensor<3x1x1xf32>
  %r = nn.rsqrt %a : tensor<3x1x1xf32> -> tensor<3x1x1xf32>
  %n = nn.mul %c, %r : tensor<3x4x8xf32>, tensor<3x1x1xf32> -> tensor<3x4x8xf32>
  %y = nn.mul %n, %g : tensor<3x4x8xf32>, tensor<4x8xf32> -> tensor<3x4x8xf32>
  func.return %y : tensor<3x4x8xf32>
}

// -----

// No affine part: the scale becomes a constant of ones.
// CHECK-LABEL: func.func @layer_norm_plain
// CHECK-NEXT:    %[[ONES:.*]] = nn.constant dense<1.000000e+00> : tensor<8xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.layer_norm %x, %[[ONES]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @layer_norm_plain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %eps = nn.constant dense<1.0e-05> : tensor<f32>
  %m = nn.reduce %x kind = "mean" axes = [1] keepdims = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = nn.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %p = nn.pow %c, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %v = nn.reduce %p kind = "mean" axes = [1] keepdims = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %a = nn.add %v, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %s = nn.sqrt %a : tensor<4x1xf32> -> tensor<4x1xf32>
  %n = nn.div %c, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  func.return %n : tensor<4x8xf32>
}

// -----

// The variance over other axes than the mean: not a layer norm, nothing changes.
// CHECK-LABEL: func.func @layer_norm_axes_differ
// CHECK-NOT:     nn.layer_norm
// CHECK:         nn.sqrt
func.func @layer_norm_axes_differ(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %eps = nn.constant dense<1.0e-05> : tensor<f32>
  %m = nn.reduce %x kind = "mean" axes = [1] keepdims = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = nn.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %p = nn.pow %c, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %v = nn.reduce %p kind = "mean" axes = [0, 1] keepdims = true : tensor<4x8xf32> -> tensor<1x1xf32>
  %a = nn.add %v, %eps : tensor<1x1xf32>, tensor<f32> -> tensor<1x1xf32>
  %s = nn.sqrt %a : tensor<1x1xf32> -> tensor<1x1xf32>
  %n = nn.div %c, %s : tensor<4x8xf32>, tensor<1x1xf32> -> tensor<4x8xf32>
  func.return %n : tensor<4x8xf32>
}

// -----

// The centred value is also returned: fusing would lose it, nothing changes.
// CHECK-LABEL: func.func @layer_norm_centred_escapes
// CHECK-NOT:     nn.layer_norm
// CHECK:         func.return
func.func @layer_norm_centred_escapes(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = nn.constant dense<2.0> : tensor<f32>
  %eps = nn.constant dense<1.0e-05> : tensor<f32>
  %m = nn.reduce %x kind = "mean" axes = [1] keepdims = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = nn.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %p = nn.pow %c, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %v = nn.reduce %p kind = "mean" axes = [1] keepdims = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %a = nn.add %v, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %s = nn.sqrt %a : tensor<4x1xf32> -> tensor<4x1xf32>
  %n = nn.div %c, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  func.return %n, %c : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @silu
// CHECK-NEXT:    %[[Y:.*]] = nn.silu %x : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @silu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = nn.sigmoid %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %y = nn.mul %s, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// -----

// The sigmoid of another value than the factor: not a SiLU.
// CHECK-LABEL: func.func @silu_other_factor
// CHECK-NOT:     nn.silu
// CHECK:         nn.sigmoid
func.func @silu_other_factor(%x: tensor<8xf32>, %z: tensor<8xf32>) -> tensor<8xf32> {
  %s = nn.sigmoid %x : tensor<8xf32> -> tensor<8xf32>
  %y = nn.mul %z, %s : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// BERT's attention: q @ k^T (k already transposed), / sqrt(d), + mask, softmax, @ v.
// CHECK-LABEL: func.func @attention_bert
// CHECK-NEXT:    %[[O:.*]] = nn.attention %q, %kt, %v, %mask scale = 0.5 key_transposed = true : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>, tensor<1x1x1x8xf32> -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    func.return %[[O]]
func.func @attention_bert(%q: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x8xf32>, %v: tensor<1x2x8x4xf32>, %mask: tensor<1x1x1x8xf32>) -> tensor<1x2x8x4xf32> {
  %d = nn.constant dense<2.0> : tensor<f32>
  %s = nn.batch_matmul %q, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %sc = nn.div %s, %d : tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xf32>
  %m = nn.add %sc, %mask : tensor<1x2x8x8xf32>, tensor<1x1x1x8xf32> -> tensor<1x2x8x8xf32>
  %p = nn.softmax %m axis = -1 : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %o = nn.batch_matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  func.return %o : tensor<1x2x8x4xf32>
}

// -----

// No mask, the scale a multiply (constant first), k read through adj_y.
// CHECK-LABEL: func.func @attention_adj_y_no_mask
// CHECK-NEXT:    %[[O:.*]] = nn.attention %q, %k, %v scale = 0.125 : tensor<3x8x4xf32>, tensor<3x6x4xf32>, tensor<3x6x5xf32> -> tensor<3x8x5xf32>
// CHECK-NEXT:    func.return %[[O]]
func.func @attention_adj_y_no_mask(%q: tensor<3x8x4xf32>, %k: tensor<3x6x4xf32>, %v: tensor<3x6x5xf32>) -> tensor<3x8x5xf32> {
  %c = nn.constant dense<0.125> : tensor<1xf32>
  %s = nn.batch_matmul %q, %k adj_y = true : tensor<3x8x4xf32>, tensor<3x6x4xf32> -> tensor<3x8x6xf32>
  %sc = nn.mul %c, %s : tensor<1xf32>, tensor<3x8x6xf32> -> tensor<3x8x6xf32>
  %p = nn.softmax %sc axis = 2 : tensor<3x8x6xf32> -> tensor<3x8x6xf32>
  %o = nn.batch_matmul %p, %v : tensor<3x8x6xf32>, tensor<3x6x5xf32> -> tensor<3x8x5xf32>
  func.return %o : tensor<3x8x5xf32>
}

// -----

// The probabilities are used twice: the attention is kept decomposed.
// CHECK-LABEL: func.func @attention_probs_escape
// CHECK-NOT:     nn.attention
// CHECK:         nn.softmax
func.func @attention_probs_escape(%q: tensor<8x4xf32>, %kt: tensor<4x8xf32>, %v: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>) {
  %s = nn.batch_matmul %q, %kt : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %p = nn.softmax %s axis = 1 : tensor<8x8xf32> -> tensor<8x8xf32>
  %o = nn.batch_matmul %p, %v : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  func.return %o, %p : tensor<8x4xf32>, tensor<8x8xf32>
}

// -----

// Batch dimensions that broadcast (one key head for all query heads): kept decomposed.
// CHECK-LABEL: func.func @attention_broadcast_batch
// CHECK-NOT:     nn.attention
// CHECK:         nn.softmax
func.func @attention_broadcast_batch(%q: tensor<2x8x4xf32>, %kt: tensor<1x4x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %s = nn.batch_matmul %q, %kt : tensor<2x8x4xf32>, tensor<1x4x8xf32> -> tensor<2x8x8xf32>
  %p = nn.softmax %s axis = -1 : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %o = nn.batch_matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  func.return %o : tensor<2x8x4xf32>
}

// -----

// torch's Linear as exported: MatMul by a constant [K, N] matrix, then the bias Add.
// CHECK-LABEL: func.func @linear
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.fully_connected %x, %[[W]], %b : tensor<4x5x3xf32>, tensor<2x3xf32>, tensor<2xf32> -> tensor<4x5x2xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @linear(%x: tensor<4x5x3xf32>, %b: tensor<2xf32>) -> tensor<4x5x2xf32> {
  %w = nn.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %m = nn.batch_matmul %x, %w : tensor<4x5x3xf32>, tensor<3x2xf32> -> tensor<4x5x2xf32>
  %y = nn.add %b, %m : tensor<2xf32>, tensor<4x5x2xf32> -> tensor<4x5x2xf32>
  func.return %y : tensor<4x5x2xf32>
}

// -----

// A matrix read through adj_y is [N, K] already; an add of another shape is not a bias.
// CHECK-LABEL: func.func @linear_adj_y_no_bias
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<1x3xf32>
// CHECK-NEXT:    %[[F:.*]] = nn.fully_connected %x, %[[W]] : tensor<5x3xf32>, tensor<1x3xf32> -> tensor<5x1xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.add %[[F]], %r
// CHECK-NEXT:    func.return %[[Y]]
func.func @linear_adj_y_no_bias(%x: tensor<5x3xf32>, %r: tensor<5x1xf32>) -> tensor<5x1xf32> {
  %w = nn.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>
  %m = nn.batch_matmul %x, %w adj_y = true : tensor<5x3xf32>, tensor<1x3xf32> -> tensor<5x1xf32>
  %y = nn.add %m, %r : tensor<5x1xf32>, tensor<5x1xf32> -> tensor<5x1xf32>
  func.return %y : tensor<5x1xf32>
}

// -----

// A run-time right operand (attention's q @ k^T) stays a batch_matmul.
// CHECK-LABEL: func.func @matmul_of_activations
// CHECK-NOT:     nn.fully_connected
// CHECK:         nn.batch_matmul
func.func @matmul_of_activations(%x: tensor<2x5x3xf32>, %w: tensor<3x2xf32>) -> tensor<2x5x2xf32> {
  %m = nn.batch_matmul %x, %w : tensor<2x5x3xf32>, tensor<3x2xf32> -> tensor<2x5x2xf32>
  func.return %m : tensor<2x5x2xf32>
}

// -----

// GPT-2's causal mask: Where(keep, scores, finfo.min) becomes the additive mask
// select(keep, 0, finfo.min) of one nn.attention.
// CHECK-LABEL: func.func @attention_where_mask
// CHECK-DAG:     %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG:     %[[L:.*]] = nn.constant dense<-3.40282347e+38> : tensor<f32>
// CHECK:         %[[M:.*]] = nn.select %keep, %[[Z]], %[[L]] : tensor<1x1x8x8xi1>, tensor<f32>, tensor<f32> -> tensor<1x1x8x8xf32>
// CHECK-NEXT:    %[[O:.*]] = nn.attention %q, %kt, %v, %[[M]] scale = 0.5 key_transposed = true
// CHECK-NEXT:    func.return %[[O]]
func.func @attention_where_mask(%q: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x8xf32>, %v: tensor<1x2x8x4xf32>, %keep: tensor<1x1x8x8xi1>) -> tensor<1x2x8x4xf32> {
  %d = nn.constant dense<2.0> : tensor<f32>
  %low = nn.constant dense<-3.40282347e+38> : tensor<f32>
  %s = nn.batch_matmul %q, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %sc = nn.div %s, %d : tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xf32>
  %w = nn.select %keep, %sc, %low : tensor<1x1x8x8xi1>, tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xf32>
  %p = nn.softmax %w axis = -1 : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %o = nn.batch_matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  func.return %o : tensor<1x2x8x4xf32>
}

// -----

// A select whose other value is not a softmax-negligible floor keeps the graph.
// CHECK-LABEL: func.func @attention_where_small_floor
// CHECK-NOT:     nn.attention
// CHECK:         nn.softmax
func.func @attention_where_small_floor(%q: tensor<8x4xf32>, %kt: tensor<4x8xf32>, %v: tensor<8x4xf32>, %keep: tensor<8x8xi1>) -> tensor<8x4xf32> {
  %low = nn.constant dense<-100.0> : tensor<f32>
  %s = nn.batch_matmul %q, %kt : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %w = nn.select %keep, %s, %low : tensor<8x8xi1>, tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
  %p = nn.softmax %w axis = 1 : tensor<8x8xf32> -> tensor<8x8xf32>
  %o = nn.batch_matmul %p, %v : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  func.return %o : tensor<8x4xf32>
}

// -----

// Whisper's eager attention: the query is scaled before the heads are split (q_proj(x) *
// head_dim^-0.5, then reshape, transpose, reshape to [batch * heads, seq, head_dim]); the
// factor moves into the attention's scale through the reshapes and the transpose.
// CHECK-LABEL: func.func @attention_prescaled_query
// CHECK-NEXT:    %[[Q4:.*]] = nn.reshape %qp shape = [1, 8, 2, 4]
// CHECK-NEXT:    %[[QT:.*]] = nn.transpose %[[Q4]]
// CHECK-NEXT:    %[[Q:.*]] = nn.reshape %[[QT]]
// CHECK-NEXT:    %[[O:.*]] = nn.attention %[[Q]], %kt, %v scale = 0.5 key_transposed = true : tensor<2x8x4xf32>
// CHECK-NEXT:    func.return %[[O]]
func.func @attention_prescaled_query(%qp: tensor<1x8x8xf32>, %kt: tensor<2x4x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %c = nn.constant dense<0.5> : tensor<f32>
  %qs = nn.mul %qp, %c : tensor<1x8x8xf32>, tensor<f32> -> tensor<1x8x8xf32>
  %q4 = nn.reshape %qs shape = [1, 8, 2, 4] : tensor<1x8x8xf32> -> tensor<1x8x2x4xf32>
  %qt = nn.transpose %q4 perm = [0, 2, 1, 3] : tensor<1x8x2x4xf32> -> tensor<1x2x8x4xf32>
  %q = nn.reshape %qt shape = [2, -1, 4] : tensor<1x2x8x4xf32> -> tensor<2x8x4xf32>
  %s = nn.batch_matmul %q, %kt : tensor<2x8x4xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
  %p = nn.softmax %s axis = -1 : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %o = nn.batch_matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  func.return %o : tensor<2x8x4xf32>
}

// -----

// torch's export of scaled_dot_product_attention: q and k^T each times sqrt(scale) (constant
// first on one side), the product unscaled; both factors move into the scale (0.5 * 0.25).
// CHECK-LABEL: func.func @attention_sdpa_export
// CHECK-NEXT:    %[[O:.*]] = nn.attention %q, %kt, %v scale = 0.125 key_transposed = true
// CHECK-NEXT:    func.return %[[O]]
func.func @attention_sdpa_export(%q: tensor<2x8x4xf32>, %kt: tensor<2x4x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %a = nn.constant dense<0.5> : tensor<f32>
  %b = nn.constant dense<0.25> : tensor<1xf32>
  %qs = nn.mul %q, %a : tensor<2x8x4xf32>, tensor<f32> -> tensor<2x8x4xf32>
  %ks = nn.mul %b, %kt : tensor<1xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %s = nn.batch_matmul %qs, %ks : tensor<2x8x4xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
  %p = nn.softmax %s axis = -1 : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %o = nn.batch_matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  func.return %o : tensor<2x8x4xf32>
}

// -----

// A scaled query that is used elsewhere too, or scaled per channel (not a splat), keeps its
// multiply; the attention still forms, with the scale of the product alone.
// CHECK-LABEL: func.func @attention_prescale_kept
// CHECK:         %[[QS:.*]] = nn.mul %q, %w
// CHECK:         %[[KS:.*]] = nn.mul %kt, %c
// CHECK:         nn.attention %[[QS]], %[[KS]], %v key_transposed = true
// CHECK:         func.return
func.func @attention_prescale_kept(%q: tensor<2x8x4xf32>, %kt: tensor<2x4x8xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %w = nn.constant dense<[0.5, 1.0, 2.0, 4.0]> : tensor<4xf32>
  %c = nn.constant dense<0.5> : tensor<f32>
  %qs = nn.mul %q, %w : tensor<2x8x4xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
  %ks = nn.mul %kt, %c : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %s = nn.batch_matmul %qs, %ks : tensor<2x8x4xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
  %p = nn.softmax %s axis = -1 : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %o = nn.batch_matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  func.return %o, %ks : tensor<2x8x4xf32>, tensor<2x4x8xf32>
}
