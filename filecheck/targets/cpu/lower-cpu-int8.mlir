// RUN: env IRC_CPU_FUSE_INT8=0 irc-opt %s -p lower-cpu | filecheck %s
// RUN: irc-opt %s -p lower-cpu | filecheck %s --check-prefix=FUSED

// With fusion off (IRC_CPU_FUSE_INT8=0), op by op:
// a quantized conv2d runs natively: lower-cpu gives it the lower-quantized integer form
// first (scast, cast to i32, zero point subtracted, i32 convolution, quant.rescale, integer
// clamp of the fused relu), the C function takes and returns the storage integers, the cast
// is folded into the zero-point subtraction (it reads the int8 input directly), the filter
// is packed to int32 at compile time and the requantization runs on 8 vector lanes
// (irc_mbqm_q8) with a scalar tail (irc_mbqm).
// By default the whole chain is one fused kernel: the int8 input is padded to 4 channels
// with its zero point (-1 = 0xff), the vpdpbusd kernel reads it XORed with 0x80 (unsigned),
// the correction -(zp + 128) * sum(w) is folded into the bias at compile time
// (-127 * 6 = -762, -127 * -5 = 635), and the epilogue requantizes with the relu's clamp
// (zero point 3, range [3, 127]) straight into the int8 result: no i32 tensor.
// FUSED-LABEL: delegate.executable private @q_cpu_0 target("cpu") {
// FUSED:         void irc_fn_0(const int8_t *in0, int8_t *out0, const void *const *consts, float *ws)
// FUSED-SAME:      /* nn.conv2d 1x2x2x3, 2x1x1x3 -> 1x2x2x2 */
// FUSED-SAME:      irc_qpad((uint8_t *)(ws + 0), (const uint8_t *)in0, 1, 1, 4, 3, 4, 0, 0, 0, 0, 255);
// FUSED-SAME:      irc_qconv_m8n1_m0((const uint8_t *)(ws + 0), 1, 1, 4, 4, 0x80808080u, (const int8_t *)K[0], (const int32_t *)K[1], (const int64_t *)K[2], 0, 3LL, 3LL, 127LL, (uint8_t *)out0, 1, 4, 2, 1, 1, 1, 1, 1, 1, 1);
// FUSED-NOT:       irc_mbqm_q8(
// FUSED-NEXT:      cpu.constant 0 packing = "qconv_vnni_i8 [OC/16][KH][KW][C/4][16][4]" dense<{{\[\[\[\[\[\[}}1, 2, 3, 0], [-4, 5, -6, 0], [0, 0, 0, 0]
// FUSED-NEXT:      cpu.constant 1 packing = "qconv_vnni_bias_i32 [16]" dense<[-762, 635, 0, {{.*}}]> : tensor<16xi32>
// The requantization of a block of 16 channels in even/odd lane order: multiplier 2^30,
// right shift 1 folded into K1 = 2^30 + 2^31, K2 = 2^30 and one shift by 31 + 1.
// FUSED-NEXT:      cpu.constant 2 packing = "qrequant_i64 [1][64]" dense<[1073741824, 0, 0, 0, 0, 0, 0, 0, 1073741824, 0, 0, 0, 0, 0, 0, 0, 3221225472, {{.*}}, 1073741824, {{.*}}, 32, {{.*}}]> : tensor<64xi64>
// FUSED-NEXT:    }
// FUSED-NEXT:    func.func @entry
// FUSED-NEXT:      cpu.call @kernels "irc_fn_0"

// CHECK-LABEL: delegate.executable private @q_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}IRC_INLINE int64_t irc_mbqm(
// CHECK-SAME:      void irc_fn_0(const int8_t *in0, int8_t *out0, const void *const *consts, float *ws)
// CHECK-SAME:      const int8_t *restrict pa = in0;
// CHECK-SAME:      po[i0] = (int32_t)((uint32_t)a - (uint32_t)b);
// CHECK-SAME:      irc_conv2d_i32(((int32_t *)(ws + {{[0-9]+}})), 1, 2, 2, 3, (const int32_t *)K[1], NULL, ((int32_t *)(ws + {{[0-9]+}})), 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 3, 2);
// CHECK-SAME:      irc_mbqm_q8(
// CHECK-SAME:      const int64_t v = 3LL + irc_mbqm((int64_t)px[k] - (0LL), mc, sc, 0);
// CHECK-SAME:      po[k] = (int8_t)(v < (-128LL) ? (-128LL) : (v > 127LL ? 127LL : v));
// CHECK-SAME:      /* nn.clip 1x2x2x2 -> 1x2x2x2 */
// CHECK-NEXT:      cpu.constant 0 packing = "raw" dense<-1> : tensor<1xi32>
// CHECK-NEXT:      cpu.constant 1 packing = "conv2d_filter_i32 [G][OCg/16][KH][KW][Cg][16]" dense<{{.*}}> : tensor<1x1x1x1x3x16xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @entry(%[[X:.*]]: tensor<1x2x2x3x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:3>> {
// CHECK-NEXT:      %[[Y:.*]] = cpu.call @kernels "irc_fn_0" (%[[X]]) workspace = {{[1-9][0-9]*}}
// CHECK-NEXT:      func.return %[[Y]]
delegate.executable private @q_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x2x2x3x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:3>> {
    %w = nn.constant dense<[[[[1, 2, 3]]], [[[-4, 5, -6]]]]> : tensor<2x1x1x3xi8> -> tensor<2x1x1x3x!quant.uniform<i8:f32, 0.125>>
    %y = nn.conv2d %x, %w layout = "NHWC" activation = "relu" : tensor<1x2x2x3x!quant.uniform<i8:f32, 0.5:-1>>, tensor<2x1x1x3x!quant.uniform<i8:f32, 0.125>> -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:3>>
    func.return %y : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:3>>
  }
}
