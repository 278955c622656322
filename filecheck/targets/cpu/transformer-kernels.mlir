// RUN: irc-translate --emit-c %s | filecheck %s

// The kernels of targets/cpu/lowerings/transformer.py: layer_norm, silu and attention call the
// "transformer" snippet (the kernel library's part "transformer", declared in the code: see
// targets/cpu/library.py); gather, compare, select and the i64 / i1 casts are loop nests on
// their C types (`_Bool` for i1, `int64_t` for i64).

// layer_norm over the last axis: 2x4 rows of 8, bias read from its argument.
// CHECK:       IRC_KERNEL(void, layer_norm, (
// CHECK:       IRC_KERNEL(void, attention, (
// CHECK:       /* nn.layer_norm 2x4x8, 8, 8 -> 2x4x8 */
// CHECK-NEXT:  {
// CHECK-NEXT:    irc_layer_norm(in0, in1, in2, out0, 8, 8, 9.99999996e-13f);
delegate.executable private @layer_norm target("cpu") {
  func.func @entry(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
    %y = nn.layer_norm %x, %g, %b epsilon = 1.0e-12 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
    func.return %y : tensor<2x4x8xf32>
  }
}

// CHECK:       /* nn.silu 3x5 -> 3x5 */
// CHECK-NEXT:  {
// CHECK-NEXT:    irc_silu(in0, out0, 15);
delegate.executable private @silu target("cpu") {
  func.func @entry(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %y = nn.silu %x : tensor<3x5xf32> -> tensor<3x5xf32>
    func.return %y : tensor<3x5xf32>
  }
}

// A [1, 1, 1, 6] mask over 2 heads: the same offset for both, zero row stride, unit column
// stride. Each head's query, keys ([D][N]: k_t = 0), values and result contiguous, one
// after the other (irc_att_layout: offsets per head, then row strides).
// CHECK:       /* nn.attention 1x2x8x4, 1x2x4x6, 1x2x6x5, 1x1x1x6 -> 1x2x8x5 */
// CHECK-NEXT:  {
// CHECK-NEXT:    static const long mo[] = {0, 0};
// CHECK-NEXT:    static const long qo[] = {0, 32};
// CHECK-NEXT:    static const long ko[] = {0, 24};
// CHECK-NEXT:    static const long vo[] = {0, 30};
// CHECK-NEXT:    static const long oo[] = {0, 40};
// CHECK-NEXT:    static const irc_att_layout lay = {qo, ko, vo, oo, 4, 6, 5, 5, 0};
// CHECK-NEXT:    irc_attention(in0, in1, in2, in3, out0, 2, 8, 6, 4, 5, 0.125f, mo, 0, 1, &lay);
delegate.executable private @attention target("cpu") {
  func.func @entry(%q: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x6xf32>, %v: tensor<1x2x6x5xf32>, %m: tensor<1x1x1x6xf32>) -> tensor<1x2x8x5xf32> {
    %o = nn.attention %q, %kt, %v, %m scale = 0.125 key_transposed = true : tensor<1x2x8x4xf32>, tensor<1x2x4x6xf32>, tensor<1x2x6x5xf32>, tensor<1x1x1x6xf32> -> tensor<1x2x8x5xf32>
    func.return %o : tensor<1x2x8x5xf32>
  }
}

// Embedding lookup with i64 indices: whole rows copied, the index wrapped and clamped.
// CHECK:       /* nn.gather 10x16, 1x3 -> 1x3x16 */
// CHECK:         const int64_t *restrict pi = in1;
// CHECK:             k = k < 0 ? k + 10 : k;
// CHECK-NEXT:        k = k < 0 ? 0 : (k >= 10 ? 9 : k);
// CHECK-NEXT:        memcpy(po + (o * 3 + j) * 16, px + (o * 10 + k) * 16, 16 * sizeof(float));
delegate.executable private @gather target("cpu") {
  func.func @entry(%t: tensor<10x16xf32>, %i: tensor<1x3xi64>) -> tensor<1x3x16xf32> {
    %y = nn.gather %t, %i : tensor<10x16xf32>, tensor<1x3xi64> -> tensor<1x3x16xf32>
    func.return %y : tensor<1x3x16xf32>
  }
}

// BERT's mask: compare to a splat zero, select between two splats, cast i64 to float.
// CHECK:       /* nn.compare 1x8, 1 -> 1x8 */
// CHECK:         const int64_t b = 0LL;
// CHECK:         _Bool *restrict po = [[T:.*]];
// CHECK:           po[i0] = a == b;
// CHECK:       /* nn.select 1x8, 1, 1 -> 1x8 */
// CHECK:         const float c = 0.0f;
// CHECK:         const float b = (-3.40282347e+38f);
// CHECK:           po[i0] = a ? b : c;
// CHECK:       /* nn.cast 1x8 -> 1x8 */
// CHECK:         const int64_t *restrict pa = in0;
// CHECK:           po[i0] = (float)a;
delegate.executable private @mask target("cpu") {
  func.func @entry(%m: tensor<1x8xi64>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
    %zero = nn.constant dense<0> : tensor<1xi64>
    %low = nn.constant dense<-3.40282347e+38> : tensor<1xf32>
    %none = nn.constant dense<0.0> : tensor<1xf32>
    %eq = nn.compare %m, %zero kind = "eq" : tensor<1x8xi64>, tensor<1xi64> -> tensor<1x8xi1>
    %bias = nn.select %eq, %low, %none : tensor<1x8xi1>, tensor<1xf32>, tensor<1xf32> -> tensor<1x8xf32>
    %f = nn.cast %m : tensor<1x8xi64> -> tensor<1x8xf32>
    func.return %bias, %f : tensor<1x8xf32>, tensor<1x8xf32>
  }
}

// float32 gelu is a vector kernel here (erf form 0, tanh form 1).
// CHECK:       /* nn.gelu 2x9 -> 2x9 */
// CHECK-NEXT:  {
// CHECK-NEXT:    irc_gelu(in0, out0, 18, 1);
delegate.executable private @gelu target("cpu") {
  func.func @entry(%x: tensor<2x9xf32>) -> tensor<2x9xf32> {
    %y = nn.gelu %x approximate = "tanh" : tensor<2x9xf32> -> tensor<2x9xf32>
    func.return %y : tensor<2x9xf32>
  }
}
