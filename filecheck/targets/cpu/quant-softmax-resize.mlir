// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-cpu | filecheck %s

// Quantized softmax and log_softmax run natively (quant_kernels.py): the tables of
// `row max - x` are computed at compile time with the reference's helpers and become static
// C tables; the C keeps the row maximum, the sum, GetReciprocal (softmax) or the logarithm
// and cut-off (log_softmax), and the rounding. Input scale 0.5: differences beyond the input
// radius (31) have exp 0, left implicit in the tables. Axis 0 of a 3x4 tensor: rows of 3
// elements 4 apart.
// CHECK-LABEL: delegate.executable private @softmax_cpu target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source =
// CHECK-SAME:      static int64_t irc_softmax_reciprocal(int64_t sum, int *num_bits_over_unit)
// CHECK-SAME:      static int64_t irc_log_sum_q12(int64_t x)
// CHECK-SAME:      void irc_fn_0(const int8_t *in0, const uint8_t *in1, int8_t *out0, uint8_t *out1, int8_t *out2, const void *const *consts, float *ws)
// CHECK-SAME:      /* nn.softmax 2x5 -> 2x5 */
// CHECK-SAME:      static const int32_t summand[256] = {524288, 317997, {{[0-9, ]*}}, 1, 1};
// CHECK-SAME:      static const int32_t exp_q31[256] = {2147483647, 1302515042, {{[0-9, ]*}}, 657, 398};
// CHECK-SAME:      for (long r = 0; r < 2; ++r) {
// CHECK-SAME:      const int8_t *restrict xs = px + r * 5;
// CHECK-SAME:      for (long k = 0; k < 5; ++k) sum += summand[mx - xs[k]];
// CHECK-SAME:      const int64_t recip = irc_softmax_reciprocal(sum, &over);
// CHECK-SAME:      const int exponent = over + 23;
// CHECK-SAME:      const int idx = mx - xs[k];
// CHECK-SAME:      const int64_t y = irc_rdbpot(irc_srdhm(recip, exp_q31[idx]), exponent) + (-128LL);
// CHECK-SAME:      /* nn.softmax 3x4 -> 3x4 */
// CHECK-SAME:      for (long r = 0; r < 4; ++r) {
// CHECK-SAME:      const uint8_t *restrict xs = px + (r / 4) * 12 + r % 4;
// CHECK-SAME:      for (long k = 0; k < 3; ++k) sum += summand[mx - xs[k * 4]];
// CHECK-SAME:      ys[k * 4] = (uint8_t)(y < (0LL) ? (0LL) : (y > (255LL) ? (255LL) : y));
// CHECK-SAME:      /* nn.log_softmax 2x5 -> 2x5 */
// CHECK-SAME:      static const int32_t diff_q5[256] = {0, -33554432, -67108864, {{[-0-9, ]*}}, -1040187392};
// CHECK-SAME:      const int64_t log_sum = irc_log_sum_q12(sum);
// CHECK-SAME:      const int64_t cutoff = irc_rdbpot(irc_srdhm(log_sum + INT32_MIN, 1073741824), 24);
// CHECK-SAME:      const int64_t adjusted = cutoff > (-32LL) ? cutoff : (-32LL);
// CHECK-SAME:      const int64_t y = -idx > adjusted ? irc_rdbpot(diff_q5[idx] - log_sum, 22) + (127LL) : (-128LL);
// CHECK-NOT:       expf
// CHECK:         func.func @entry
// CHECK-NEXT:      %{{.*}}, %{{.*}}, %{{.*}} = cpu.call @kernels "irc_fn_0"
delegate.executable private @softmax_cpu target("cpu") {
  func.func @entry(%x: tensor<2x5x!quant.uniform<i8:f32, 0.5>>, %u: tensor<3x4x!quant.uniform<u8:f32, 0.1:128>>) -> (tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<3x4x!quant.uniform<u8:f32, 0.00390625>>, tensor<2x5x!quant.uniform<i8:f32, 0.0625:127>>) {
    %y = nn.softmax %x axis = 1 : tensor<2x5x!quant.uniform<i8:f32, 0.5>> -> tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>
    %z = nn.softmax %u axis = 0 : tensor<3x4x!quant.uniform<u8:f32, 0.1:128>> -> tensor<3x4x!quant.uniform<u8:f32, 0.00390625>>
    %l = nn.log_softmax %x axis = 1 : tensor<2x5x!quant.uniform<i8:f32, 0.5>> -> tensor<2x5x!quant.uniform<i8:f32, 0.0625:127>>
    func.return %y, %z, %l : tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<3x4x!quant.uniform<u8:f32, 0.00390625>>, tensor<2x5x!quant.uniform<i8:f32, 0.0625:127>>
  }
}

// -----

// Quantized resize: tap tables computed at compile time with the reference's helpers.
// int8 bilinear (half_pixel): 10-bit weights of the high tap, -256 where the coordinate falls
// before the first pixel (both taps 0). uint8 bilinear (align_corners) in NCHW: float32
// weights, N * C = 2 single-channel images. Nearest (asymmetric, floor): a byte gather.
// CHECK-LABEL: delegate.executable private @resize_cpu target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source =
// CHECK-SAME:      IRC_KERNEL(void, resize_bilinear_u8, (
// CHECK-SAME:      /* nn.resize 1x2x2x3 -> 1x4x4x3 */
// CHECK-SAME:      static const int32_t hl[] = {0, 0, 0, 1};
// CHECK-SAME:      static const int32_t hh[] = {0, 1, 1, 1};
// CHECK-SAME:      static const int32_t hw[] = {-256, 256, 768, 256};
// CHECK-SAME:      irc_resize_bilinear_s8(in0, 1, 2, 2, 3, out0, 4, 4, hl, hh, hw, wl, wh, ww);
// CHECK-SAME:      /* nn.resize 1x2x3x2 -> 1x2x5x3 */
// CHECK-SAME:      static const float hw[] = {0.0f, 0.5f, 0.0f, 0.5f, 0.0f};
// CHECK-SAME:      irc_resize_bilinear_u8(in1, 2, 3, 2, 1, out1, 5, 3, hl, hh, hw, wl, wh, ww);
// CHECK-SAME:      /* nn.resize 1x2x2x3 -> 1x3x3x3 */
// CHECK-SAME:      static const int32_t rh[] = {0, 0, 1};
// CHECK-SAME:      irc_resize_nearest_q((const uint8_t *)in0, 1, 2, 2, 3, (uint8_t *)out2, 3, 3, rh, rw);
// CHECK:         func.func @entry
// CHECK-NEXT:      %{{.*}}, %{{.*}}, %{{.*}} = cpu.call @kernels "irc_fn_0"
delegate.executable private @resize_cpu target("cpu") {
  func.func @entry(%x: tensor<1x2x2x3x!quant.uniform<i8:f32, 0.1:-3>>, %u: tensor<1x2x3x2x!quant.uniform<u8:f32, 0.1:128>>) -> (tensor<1x4x4x3x!quant.uniform<i8:f32, 0.1:-3>>, tensor<1x2x5x3x!quant.uniform<u8:f32, 0.1:128>>, tensor<1x3x3x3x!quant.uniform<i8:f32, 0.1:-3>>) {
    %y = nn.resize %x size = [4, 4] mode = "bilinear" layout = "NHWC" : tensor<1x2x2x3x!quant.uniform<i8:f32, 0.1:-3>> -> tensor<1x4x4x3x!quant.uniform<i8:f32, 0.1:-3>>
    %z = nn.resize %u size = [5, 3] mode = "bilinear" coordinate_mode = "align_corners" layout = "NCHW" : tensor<1x2x3x2x!quant.uniform<u8:f32, 0.1:128>> -> tensor<1x2x5x3x!quant.uniform<u8:f32, 0.1:128>>
    %w = nn.resize %x size = [3, 3] coordinate_mode = "asymmetric" nearest_mode = "floor" layout = "NHWC" : tensor<1x2x2x3x!quant.uniform<i8:f32, 0.1:-3>> -> tensor<1x3x3x3x!quant.uniform<i8:f32, 0.1:-3>>
    func.return %y, %z, %w : tensor<1x4x4x3x!quant.uniform<i8:f32, 0.1:-3>>, tensor<1x2x5x3x!quant.uniform<u8:f32, 0.1:128>>, tensor<1x3x3x3x!quant.uniform<i8:f32, 0.1:-3>>
  }
}

// -----

// Rows of 8192 elements could sum to 2^32: refused.
delegate.executable private @long_row_cpu target("cpu") {
  func.func @entry(%x: tensor<1x8192x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x8192x!quant.uniform<i8:f32, 0.00390625:-128>> {
    // expected-error @+1 {{lower-cpu: quantized softmax over 8192 elements (at most 8191: the Q12.19 sum must stay below 2^32) (the reference target runs it)}}
    %y = nn.softmax %x axis = 1 : tensor<1x8192x!quant.uniform<i8:f32, 0.1>> -> tensor<1x8192x!quant.uniform<i8:f32, 0.00390625:-128>>
    func.return %y : tensor<1x8192x!quant.uniform<i8:f32, 0.00390625:-128>>
  }
}

// -----

// Asymmetric int8 bilinear from 2 to 91 pixels: TFLite's taps reach row 2 of 2.
delegate.executable private @taps_cpu target("cpu") {
  func.func @entry(%x: tensor<1x2x2x1x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x91x91x1x!quant.uniform<i8:f32, 0.1>> {
    // expected-error @+1 {{lower-cpu: quantized bilinear 'nn.resize' whose taps leave the input (TFLite reads out of bounds here) (the reference target runs it)}}
    %y = nn.resize %x size = [91, 91] mode = "bilinear" coordinate_mode = "asymmetric" layout = "NHWC" : tensor<1x2x2x1x!quant.uniform<i8:f32, 0.1>> -> tensor<1x91x91x1x!quant.uniform<i8:f32, 0.1>>
    func.return %y : tensor<1x91x91x1x!quant.uniform<i8:f32, 0.1>>
  }
}
