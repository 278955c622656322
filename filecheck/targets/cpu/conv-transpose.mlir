// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-cpu | filecheck %s

// A float conv2d_transpose is one inline gather loop nest in the entry: per output row the
// kernel rows that reach it are computed once (bounds, then the first tap congruent to the
// row modulo the stride 2, then every 2nd tap), likewise per column; the 3 output channels
// accumulate in one 4-lane vector, in two partial sums over the 2 input channels; the
// epilogue adds the bias, applies the fused relu (code 1) and stores the 3 valid lanes.
// The filter is packed at compile time as [G][KH][KW][Cg][OCg] with OCg padded to 4.
// CHECK-LABEL: delegate.executable private @float_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}void irc_fn_0(const float *in0, float *out0, const void *const *consts, float *ws)
// CHECK-SAME:      /* nn.conv2d_transpose 1x3x3x2, 3x2x2x2, 3 -> 1x7x5x3 */
// CHECK-SAME:      const float *restrict pw = (const float *)K[0];
// CHECK-SAME:      const float *restrict pb = K[1];
// CHECK-SAME:      typedef float irc_tv __attribute__((vector_size(16)));
// CHECK-SAME:      for (long r = 0; r < 7; ++r) {
// CHECK-SAME:      long i0 = ti - 4;
// CHECK-SAME:      if (i1 > 1) i1 = 1;
// CHECK-SAME:      if (i0 <= i1) i0 += (ti - i0) % 2;
// CHECK-SAME:      for (long ox = 0; ox < 5; ++ox) {
// CHECK-SAME:      irc_tv a0_0 = {0}, a1_0 = {0};
// CHECK-SAME:      for (long i = i0; i <= i1; i += 2) {
// CHECK-SAME:      const long hh = (ti - i * 1) / 2;
// CHECK-SAME:      a1_0 += xp[k + 1] * *(const irc_tvu *)(wp + (k + 1) * 4 + 0);
// CHECK-SAME:      a0_0 += a1_0;
// CHECK-SAME:      for (long o = 0; o < 3; ++o) yo[g * 3 + 0 + o] = irc_act(lane[o] + pb[g * 3 + 0 + o], 1);
// CHECK-NEXT:      cpu.constant 0 packing = "conv2d_transpose_filter_float [G][KH][KW][Cg][OCg+1]" dense<{{.*}}> : tensor<1x2x2x2x4xf32>
// CHECK-NEXT:      cpu.constant 1 packing = "raw" dense<[5.000000e-01, -5.000000e-01, 1.500000e+00]> : tensor<3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @entry(%[[X:.*]]: tensor<1x3x3x2xf32>) -> tensor<1x7x5x3xf32> {
// CHECK-NEXT:      %[[Y:.*]] = cpu.call @kernels "irc_fn_0" (%[[X]]) workspace = 0
// CHECK-NEXT:      func.return %[[Y]]
delegate.executable private @float_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x3x3x2xf32>) -> tensor<1x7x5x3xf32> {
    %w = nn.constant dense<0.25> : tensor<3x2x2x2xf32>
    %b = nn.constant dense<[0.5, -0.5, 1.5]> : tensor<3xf32>
    %y = nn.conv2d_transpose %x, %w, %b strides = [2, 2] pads = [0, 0, 0, 1] output_padding = [1, 0] layout = "NHWC" activation = "relu" : tensor<1x3x3x2xf32>, tensor<3x2x2x2xf32>, tensor<3xf32> -> tensor<1x7x5x3xf32>
    func.return %y : tensor<1x7x5x3xf32>
  }
}

// -----

// A quantized conv2d_transpose runs natively on its lower-quantized form: the i32
// conv2d_transpose reads the int8 input itself and subtracts its zero point (-3), so the
// form's cast and sub are aliases (no i32 copy of the input). Its sums are bounded by
// 130 * (1 + 2 + ... + 12) < 2**24, so it accumulates exactly in float32: the input is
// converted to floats once (x + 3), the filter packed as floats at compile time; the
// epilogue converts to int32 and adds the i32 bias with wrapping arithmetic, then
// quant.rescale requantizes.
// CHECK-LABEL: delegate.executable private @q_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}void irc_fn_0(const int8_t *in0, int8_t *out0, const void *const *consts, float *ws)
// CHECK-NOT:       nn.sub
// CHECK-SAME:      /* nn.conv2d_transpose 1x2x2x3, 2x2x2x3, 2 -> 1x4x4x2 */
// CHECK-SAME:      ((float *)(ws + [[XF:[0-9]+]]))[i0] = (float)((int32_t)in0[i0] - (-3));
// CHECK-SAME:      const float *restrict px = ((float *)(ws + [[XF]]));
// CHECK-SAME:      const float *restrict pw = (const float *)K[0];
// CHECK-SAME:      int32_t *restrict py = ((int32_t *)(ws + {{[0-9]+}}));
// CHECK-SAME:      typedef float irc_tv __attribute__((vector_size(16)));
// CHECK-SAME:      a0_0 += xp[k] * *(const irc_tvu *)(wp + (k) * 4 + 0);
// CHECK-SAME:      yo[g * 2 + 0 + o] = (int32_t)((uint32_t)(int32_t)lane[o] + (uint32_t)pb[g * 2 + 0 + o]);
// CHECK-SAME:      /* quant.rescale 1x4x4x2 -> 1x4x4x2 */
// CHECK-NEXT:      cpu.constant 0 packing = "conv2d_transpose_filter_float [G][KH][KW][Cg][OCg+2]" dense<{{\[\[\[\[\[}}1.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00], [-2.000000e+00,
// CHECK-NEXT:      cpu.constant 1 packing = "raw" dense<[7, -7]> : tensor<2xi32>
// CHECK-NEXT:    }
delegate.executable private @q_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x2x2x3x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:4>> {
    %w = nn.constant dense<[[[[1, -2, 3], [4, -5, 6]], [[-7, 8, -9], [10, -11, 12]]], [[[1, 1, 1], [2, 2, 2]], [[3, 3, 3], [4, 4, 4]]]]> : tensor<2x2x2x3xi8> -> tensor<2x2x2x3x!quant.uniform<i8:f32, 0.01>>
    %b = nn.constant dense<[7, -7]> : tensor<2xi32>
    %y = nn.conv2d_transpose %x, %w, %b strides = [2, 2] layout = "NHWC" : tensor<1x2x2x3x!quant.uniform<i8:f32, 0.05:-3>>, tensor<2x2x2x3x!quant.uniform<i8:f32, 0.01>>, tensor<2xi32> -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:4>>
    func.return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:4>>
  }
}

// -----

// Wide rows: the interior columns of each column phase (even and odd output columns at
// stride 2: input columns 0..9 for both, first kernel column 0 and 1) go in tiles of 8
// pixels that share each filter vector they load; the one-pixel path skips them.
// CHECK-LABEL: delegate.executable private @tiles_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}/* nn.conv2d_transpose 1x1x10x1, 1x2x2x1 -> 1x2x20x1 */
// CHECK-SAME:      static const long tlo[] = {0, 0};
// CHECK-SAME:      static const long thi[] = {9, 9};
// CHECK-SAME:      static const long jfirst[] = {0, 1};
// CHECK-SAME:      for (long t0 = tlo[p]; t0 <= thi[p]; t0 += 8) {
// CHECK-SAME:      const long t = t0 + 7 <= thi[p] ? t0 : thi[p] - 7;
// CHECK-SAME:      const long ww = t + (p + 0 - j * 1) / 2;
// CHECK-SAME:      const irc_tv w0 = *(const irc_tvu *)(wp + (k) * 4 + 0);
// CHECK-SAME:      c7_0 += xp[7 + k] * w0;
// CHECK-SAME:      float *restrict yt7 = py + (r * 20 + p + (t + 7) * 2) * 1;
// CHECK-SAME:      for (long ox = 0; ox < 20; ++ox) {
// CHECK-SAME:      if (t >= tlo[p] && t <= thi[p]) continue;
delegate.executable private @tiles_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x1x10x1xf32>) -> tensor<1x2x20x1xf32> {
    %w = nn.constant dense<2.0> : tensor<1x2x2x1xf32>
    %y = nn.conv2d_transpose %x, %w strides = [2, 2] layout = "NHWC" : tensor<1x1x10x1xf32>, tensor<1x2x2x1xf32> -> tensor<1x2x20x1xf32>
    func.return %y : tensor<1x2x20x1xf32>
  }
}

// -----

// Where float32 could round (int16 input: 32768 * 127 * 12 > 2**24), the integer kernel
// accumulates in 32-bit unsigned lanes (wrapping, like the reference's int64 -> int32
// cast), the filter packed as int32.
// CHECK-LABEL: delegate.executable private @int_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source = "{{.*}}void irc_fn_0(const int16_t *in0, int32_t *out0, const void *const *consts, float *ws)
// CHECK-SAME:      const int16_t *restrict px = in0;
// CHECK-SAME:      const int32_t *restrict pw = (const int32_t *)K[0];
// CHECK-SAME:      typedef uint32_t irc_tv __attribute__((vector_size(16)));
// CHECK-SAME:      a0_0 += (uint32_t)(int32_t)xp[k] * *(const irc_tvu *)(wp + (k) * 4 + 0);
// CHECK-SAME:      yo[g * 2 + 0 + o] = (int32_t)(lane[o]);
// CHECK-NEXT:      cpu.constant 0 packing = "conv2d_transpose_filter_int32_t [G][KH][KW][Cg][OCg+2]" dense<{{.*}}> : tensor<1x2x2x3x4xi32>
delegate.executable private @int_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x2x2x3xi16>) -> tensor<1x4x4x2xi32> {
    %w = nn.constant dense<127> : tensor<2x2x2x3xi8>
    %y = nn.conv2d_transpose %x, %w strides = [2, 2] layout = "NHWC" : tensor<1x2x2x3xi16>, tensor<2x2x2x3xi8> -> tensor<1x4x4x2xi32>
    func.return %y : tensor<1x4x4x2xi32>
  }
}

// -----

// The integer kernel runs NHWC only: an i32 NCHW conv2d_transpose is refused.
delegate.executable private @nchw_int_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x2x3x3xi32>) -> tensor<1x2x5x5xi32> {
    %w = nn.constant dense<1> : tensor<2x2x3x3xi8>
    // expected-error @+1 {{lower-cpu: integer 'nn.conv2d_transpose' in NCHW (NHWC only)}}
    %y = nn.conv2d_transpose %x, %w layout = "NCHW" : tensor<1x2x3x3xi32>, tensor<2x2x3x3xi8> -> tensor<1x2x5x5xi32>
    func.return %y : tensor<1x2x5x5xi32>
  }
}
