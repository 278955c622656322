// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-cpu | filecheck %s

// Quantized 8-bit unary ops with their own TFLite algorithm run as 256-entry lookup tables:
// the reference kernel evaluated on every input byte at compile time (a `lut_8bit` constant,
// indexed by the stored byte read as uint8), one `irc_lut8` call (vector lookups) in C.
// int8 sigmoid, input scale 0.5: byte 0 (x = 0) -> 0.5 * 256 - 128 = 0, byte 1 (x = 0.5) ->
// round(0.6225 * 256) - 128 = 31 (0x1F), byte 0x80 (x = -64) -> -128 (0x80).
// uint8 tanh, zero point 128: byte 0x80 (x = 0) -> 128 (0x80), bytes below saturate to 0.
// CHECK-LABEL: delegate.executable private @t_cpu_0 target("cpu") {
// CHECK-NEXT:    cpu.module @kernels source =
// CHECK-SAME:      void irc_fn_0(const int8_t *in0, const uint8_t *in1, int8_t *out0, uint8_t *out1, const void *const *consts, float *ws)
// CHECK-SAME:      /* nn.sigmoid 3x5 -> 3x5 */
// CHECK-SAME:      const uint8_t *restrict px = (const uint8_t *)in0;
// CHECK-SAME:      const int8_t *restrict lut = (const int8_t *)K[0];
// CHECK-SAME:      irc_lut8(px, (uint8_t *)po, 15L, (const uint8_t *)lut);
// CHECK-SAME:      /* nn.tanh 7 -> 7 */
// CHECK-SAME:      const uint8_t *restrict lut = (const uint8_t *)K[1];
// CHECK-SAME:      irc_lut8(px, (uint8_t *)po, 7L, (const uint8_t *)lut);
// CHECK-NOT:       expf
// CHECK-NEXT:      cpu.constant 0 packing = "lut_8bit [256]" dense<"0x001F3B51{{[0-9A-F]*}}7F80808080{{[0-9A-F]*}}C5E1"> : tensor<256xi8>
// CHECK-NEXT:      cpu.constant 1 packing = "lut_8bit [256]" dense<"0x0000{{[0-9A-F]*}}4561809FBB{{[0-9A-F]*}}FFFF"> : tensor<256xi8>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @entry
// CHECK-NEXT:      %{{.*}}, %{{.*}} = cpu.call @kernels "irc_fn_0"
delegate.executable private @t_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<3x5x!quant.uniform<i8:f32, 0.5>>, %u: tensor<7x!quant.uniform<u8:f32, 0.25:128>>) -> (tensor<3x5x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<7x!quant.uniform<u8:f32, 0.0078125:128>>) {
    %y = nn.sigmoid %x : tensor<3x5x!quant.uniform<i8:f32, 0.5>> -> tensor<3x5x!quant.uniform<i8:f32, 0.00390625:-128>>
    %z = nn.tanh %u : tensor<7x!quant.uniform<u8:f32, 0.25:128>> -> tensor<7x!quant.uniform<u8:f32, 0.0078125:128>>
    func.return %y, %z : tensor<3x5x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<7x!quant.uniform<u8:f32, 0.0078125:128>>
  }
}

// -----

// int8 sqrt with zero point 0: TFLite fails at run time on negative inputs, a table cannot.
delegate.executable private @t_cpu_1 target("cpu") {
  func.func @entry(%x: tensor<4x!quant.uniform<i8:f32, 0.1>>) -> tensor<4x!quant.uniform<i8:f32, 0.1>> {
    // expected-error @+1 {{lower-cpu: quantized 'nn.sqrt' refuses some stored inputs at run time (Sqrt is only defined for non-negative values) (the reference target runs it)}}
    %y = nn.sqrt %x : tensor<4x!quant.uniform<i8:f32, 0.1>> -> tensor<4x!quant.uniform<i8:f32, 0.1>>
    func.return %y : tensor<4x!quant.uniform<i8:f32, 0.1>>
  }
}

// -----

// exp has an int8 table only (TFLite's EXP): uint8 is refused.
delegate.executable private @t_cpu_2 target("cpu") {
  func.func @entry(%x: tensor<4x!quant.uniform<u8:f32, 0.1:128>>) -> tensor<4x!quant.uniform<u8:f32, 0.1:128>> {
    // expected-error @+1 {{lower-cpu: quantized 'nn.exp' is defined for int8 storage (TFLite), got ui8 (the reference target runs it)}}
    %y = nn.exp %x : tensor<4x!quant.uniform<u8:f32, 0.1:128>> -> tensor<4x!quant.uniform<u8:f32, 0.1:128>>
    func.return %y : tensor<4x!quant.uniform<u8:f32, 0.1:128>>
  }
}
