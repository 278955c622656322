// RUN: irc-opt %s --split-input-file -p lower-cpu | filecheck %s

// A quantized depthwise conv2d (groups = channels) fuses into the column-quad depthwise
// kernel (vpdpbusd over 4 kernel rows): 3x3 taps unrolled, int8 storage read directly (no
// padded copy) and made unsigned by the XOR 0x80 (x + 128), the share -(zp + 128) * sum(w)
// folded into the bias (-(-2 + 128) * (1 + 2 - 1) = -252 for channel 0 with bias 0), the
// filter packed as int8 [C/16][ceil(KH/4)][KW][16][4] with the kernel rows of one channel
// in one int32 lane (channel 0, kw 0: rows 1, 2, -1 and a zero).
// CHECK-LABEL: delegate.executable private @dw_cpu_0 target("cpu") {
// CHECK:         irc_qdepthwise_quads3x3_m0((const uint8_t *)in0, 1, 4, 4, 2, 16, -2, 0x80808080u, (const int8_t *)K[0], (const int32_t *)K[1], (const int64_t *)K[2], 0, 1LL, -128LL, 127LL, (uint8_t *)out0, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1);
// CHECK-NOT:     irc_depthwise_i32(
// CHECK:         cpu.constant 0 packing = "qdepthwise_quads_i8 [Cp16/16][ceil(KH/4)][KW][16][4]" dense<"0x0102FF00{{0*}}050000{{0*}}"> : tensor<1x1x3x16x4xi8>
// CHECK-NEXT:    cpu.constant 1 packing = "qdepthwise_quads_i8 [Cp16/16][ceil(KH/4)][KW][16][4] bias_i32 [Cp16]" dense<[-252, -630, 0, {{.*}}]> : tensor<16xi32>
// CHECK-NEXT:    cpu.constant 2 packing = "qrequant_i64 [1][64]" {{.*}} : tensor<64xi64>
delegate.executable private @dw_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-2>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:1>> {
    %w = nn.constant dense<[[[[1], [0], [0]], [[2], [0], [0]], [[-1], [0], [0]]], [[[0], [0], [0]], [[0], [5], [0]], [[0], [0], [0]]]]> : tensor<2x3x3x1xi8> -> tensor<2x3x3x1x!quant.uniform<i8:f32, 0.125>>
    %y = nn.conv2d %x, %w pads = [1, 1, 1, 1] groups = 2 layout = "NHWC" : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-2>>, tensor<2x3x3x1x!quant.uniform<i8:f32, 0.125>> -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:1>>
    func.return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:1>>
  }
}

// -----

// A quantized fully_connected with one row uses the 1-pixel x 32-channel VNNI tile.
// CHECK-LABEL: delegate.executable private @fc_cpu_0 target("cpu") {
// CHECK:         irc_qconv_m1n2_m0((const uint8_t *)in0, 1, 1, 1, 8, 0x80808080u, (const int8_t *)K[0], (const int32_t *)K[1], (const int64_t *)K[2], 0, -7LL, -128LL, 127LL, (uint8_t *)out0, 1, 1, 3, 1, 1, 1, 1, 1, 1, 2);
// CHECK:         cpu.constant 0 packing = "qconv_vnni_i8 [OC/32][KH][KW][C/4][32][4]" {{.*}} : tensor<1x1x1x2x32x4xi8>
delegate.executable private @fc_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x8x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>> {
    %w = nn.constant dense<1> : tensor<3x8xi8> -> tensor<3x8x!quant.uniform<i8:f32, 0.125>>
    %y = nn.fully_connected %x, %w : tensor<1x8x!quant.uniform<i8:f32, 0.5>>, tensor<3x8x!quant.uniform<i8:f32, 0.125>> -> tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>>
    func.return %y : tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>>
  }
}

// -----

// A quantized add (TFLite's general 8-bit add: inputs minus their zero points, shifted left
// by 20, rescaled to a common scale, summed, rescaled) is one elementwise kernel reading both
// int8 inputs and writing the int8 result; its three rescales are constants.
// CHECK-LABEL: delegate.executable private @add_cpu_0 target("cpu") {
// CHECK:         irc_qadd_s8(in0, in1, 24, -3, 10, 1048576, 1048576, (const int64_t *)K[0], (const int64_t *)K[1], (const int64_t *)K[2], 2LL, -128LL, 127LL, (uint8_t *)out0);
// CHECK-NOT:     quant.rescale
// CHECK:         cpu.constant 0 packing = "qadd_requant_i64 [1][64] lhs"
// CHECK-NEXT:    cpu.constant 1 packing = "qadd_requant_i64 [1][64] rhs"
// CHECK-NEXT:    cpu.constant 2 packing = "qadd_requant_i64 [1][64] sum"
delegate.executable private @add_cpu_0 target("cpu") {
  func.func @entry(%a: tensor<2x3x4x!quant.uniform<i8:f32, 0.05:-3>>, %b: tensor<2x3x4x!quant.uniform<i8:f32, 0.08:10>>) -> tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>> {
    %y = nn.add %a, %b : tensor<2x3x4x!quant.uniform<i8:f32, 0.05:-3>>, tensor<2x3x4x!quant.uniform<i8:f32, 0.08:10>> -> tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>>
    func.return %y : tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>>
  }
}

// -----

// ONNX models requantize with one rounding (`irc.rescale_rounding = "single_round"`:
// (x m + 2^(t-1)) >> t, t = 31 - shift). A factor below 1 (t >= 31) is the mode-0 form with
// K1 = K2 = 2^(t-1) and S = t: the add is the same one kernel as TFLite's; its lhs rescale
// (0.05 / (2 * 0.08) = 0.625 * 2^-1: m = 1342177280, t = 32) holds K1 = K2 = 2^31 and S = 32
// (double rounding would hold K1 = 2^30 + 2^31).
// CHECK-LABEL: delegate.executable private @add_single_cpu_0 target("cpu") {
// CHECK:         irc_qadd_s8(in0, in1, 24, -3, 10, 1048576, 1048576, (const int64_t *)K[0], (const int64_t *)K[1], (const int64_t *)K[2], 2LL, -128LL, 127LL, (uint8_t *)out0);
// CHECK-NOT:     quant.rescale
// CHECK:         cpu.constant 0 packing = "qadd_requant_i64 [1][64] lhs" dense<[1342177280, {{(1342177280, )+}}2147483648, {{(2147483648, )+}}32, {{(32, )+}}32]> : tensor<64xi64>
delegate.executable private @add_single_cpu_0 target("cpu") {
  func.func @entry(%a: tensor<2x3x4x!quant.uniform<i8:f32, 0.05:-3>>, %b: tensor<2x3x4x!quant.uniform<i8:f32, 0.08:10>>) -> tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>> {
    %y = nn.add %a, %b {irc.rescale_rounding = "single_round"} : tensor<2x3x4x!quant.uniform<i8:f32, 0.05:-3>>, tensor<2x3x4x!quant.uniform<i8:f32, 0.08:10>> -> tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>>
    func.return %y : tensor<2x3x4x!quant.uniform<i8:f32, 0.07:2>>
  }
}

// -----

// Not fused: a single-rounding add whose result rescale multiplies by more than 1
// (2 * 0.08 / (2^20 * 1e-7) = 1.53: t = 30, the result may not fit in int32 before the
// clamp) runs as separate kernels.
// CHECK-LABEL: delegate.executable private @add_single_big_cpu_0 target("cpu") {
// CHECK-NOT:     irc_qadd_s8(
// CHECK:         quant.rescale 2x3x4
delegate.executable private @add_single_big_cpu_0 target("cpu") {
  func.func @entry(%a: tensor<2x3x4x!quant.uniform<i8:f32, 0.05:-3>>, %b: tensor<2x3x4x!quant.uniform<i8:f32, 0.08:10>>) -> tensor<2x3x4x!quant.uniform<i8:f32, 1.0e-07:2>> {
    %y = nn.add %a, %b {irc.rescale_rounding = "single_round"} : tensor<2x3x4x!quant.uniform<i8:f32, 0.05:-3>>, tensor<2x3x4x!quant.uniform<i8:f32, 0.08:10>> -> tensor<2x3x4x!quant.uniform<i8:f32, 1.0e-07:2>>
    func.return %y : tensor<2x3x4x!quant.uniform<i8:f32, 1.0e-07:2>>
  }
}

// -----

// A single-rounding fully_connected with a factor below 1 (0.5 * 0.125 / 0.25) takes the
// mode-0 kernel instance (`_m0`, mode argument 0).
// CHECK-LABEL: delegate.executable private @fc_single_cpu_0 target("cpu") {
// CHECK:         irc_qconv_m1n2_m0((const uint8_t *)in0, 1, 1, 1, 8, 0x80808080u, (const int8_t *)K[0], (const int32_t *)K[1], (const int64_t *)K[2], 0, -7LL, -128LL, 127LL, (uint8_t *)out0, 1, 1, 3, 1, 1, 1, 1, 1, 1, 2);
delegate.executable private @fc_single_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x8x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>> {
    %w = nn.constant dense<1> : tensor<3x8xi8> -> tensor<3x8x!quant.uniform<i8:f32, 0.125>>
    %y = nn.fully_connected %x, %w {irc.rescale_rounding = "single_round"} : tensor<1x8x!quant.uniform<i8:f32, 0.5>>, tensor<3x8x!quant.uniform<i8:f32, 0.125>> -> tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>>
    func.return %y : tensor<1x3x!quant.uniform<i8:f32, 0.25:-7>>
  }
}

// -----

// With a factor above 1 (0.5 * 0.125 / 0.025 = 2.5) single rounding keeps the general
// epilogue (mode 1: the kernel instance without `_m0`).
// CHECK-LABEL: delegate.executable private @fc_single_left_cpu_0 target("cpu") {
// CHECK:         irc_qconv_m1n2((const uint8_t *)in0, 1, 1, 1, 8, 0x80808080u, (const int8_t *)K[0], (const int32_t *)K[1], (const int64_t *)K[2], 1, -7LL, -128LL, 127LL, (uint8_t *)out0, 1, 1, 3, 1, 1, 1, 1, 1, 1, 2);
delegate.executable private @fc_single_left_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x8x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x!quant.uniform<i8:f32, 0.025:-7>> {
    %w = nn.constant dense<1> : tensor<3x8xi8> -> tensor<3x8x!quant.uniform<i8:f32, 0.125>>
    %y = nn.fully_connected %x, %w {irc.rescale_rounding = "single_round"} : tensor<1x8x!quant.uniform<i8:f32, 0.5>>, tensor<3x8x!quant.uniform<i8:f32, 0.125>> -> tensor<1x3x!quant.uniform<i8:f32, 0.025:-7>>
    func.return %y : tensor<1x3x!quant.uniform<i8:f32, 0.025:-7>>
  }
}
