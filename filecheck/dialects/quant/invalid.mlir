// RUN: irc-opt %s --split-input-file --verify-diagnostics

// Verifier messages of the quant dialect. Type parameter errors are raised while the type
// is parsed and reported at the op (or function) being parsed.

// expected-error @+1 {{storage type must be 8, 16 or 32 bits wide, got 4}}
func.func @storage_width(%x: tensor<4x!quant.uniform<i4:f32, 0.5>>) {
  func.return
}

// -----

// expected-error @+1 {{storage type must be 8, 16 or 32 bits wide, got 64}}
func.func @storage_width_64(%x: tensor<4x!quant.uniform<u64:f32, 0.5>>) {
  func.return
}

// -----

// expected-error @+1 {{expected a storage type such as i8 or u8}}
func.func @storage_not_an_integer(%x: tensor<4x!quant.uniform<f32:f32, 0.5>>) {
  func.return
}

// -----

// expected-error @+1 {{expected a storage type such as i8 or u8}}
func.func @storage_signed_prefix(%x: tensor<4x!quant.uniform<si8:f32, 0.5>>) {
  func.return
}

// -----

// expected-error @+1 {{parameter 'expressed_type' does not verify}}
func.func @expressed_not_float(%x: tensor<4x!quant.uniform<i8:i32, 0.5>>) {
  func.return
}

// -----

func.func @zero_point_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{zero point 300 is out of the storage range [-128, 127]}}
  %q = quant.qcast %x : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5:300>>
  func.return
}

// -----

func.func @unsigned_zero_point_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{zero point -1 is out of the storage range [0, 255]}}
  %q = quant.qcast %x : tensor<4xf32> to tensor<4x!quant.uniform<u8:f32, 0.5:-1>>
  func.return
}

// -----

// The storage range narrows the zero points too.
func.func @zero_point_outside_storage_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{zero point -128 is out of the storage range [-127, 127]}}
  %q = quant.qcast %x : tensor<4xf32> to tensor<4x!quant.uniform<i8<-127:127>:f32, 0.5:-128>>
  func.return
}

// -----

func.func @per_axis_zero_point(%x: tensor<2xf32>) {
  // expected-error @+1 {{zero point 128 is out of the storage range [-128, 127]}}
  %q = quant.qcast %x : tensor<2xf32> to tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.5:128}>>
  func.return
}

// -----

// expected-error @+1 {{storage range [-200, 127] is not within [-128, 127] of i8}}
func.func @storage_range_too_wide(%x: tensor<4x!quant.uniform<i8<-200:127>:f32, 0.5>>) {
  func.return
}

// -----

// expected-error @+1 {{storage range [0, 256] is not within [0, 255] of u8}}
func.func @unsigned_storage_range_too_wide(%x: tensor<4x!quant.uniform<u8<0:256>:f32, 0.5>>) {
  func.return
}

// -----

// expected-error @+1 {{storage range [5, 1] is not within [-128, 127] of i8}}
func.func @storage_range_inverted(%x: tensor<4x!quant.uniform<i8<5:1>:f32, 0.5>>) {
  func.return
}

// -----

// expected-error @+1 {{scale must be positive and finite, got 0.0}}
func.func @scale_zero(%x: tensor<4x!quant.uniform<i8:f32, 0.0>>) {
  func.return
}

// -----

// expected-error @+1 {{scale must be positive and finite, got -0.5}}
func.func @scale_negative(%x: tensor<4x!quant.uniform<i8:f32, -0.5>>) {
  func.return
}

// -----

// expected-error @+1 {{scale must be positive and finite, got inf}}
func.func @scale_overflows_to_inf(%x: tensor<4x!quant.uniform<i8:f32, 1.0e400>>) {
  func.return
}

// -----

// expected-error @+1 {{scale must be positive and finite, got -0.25}}
func.func @per_axis_scale_negative(%x: tensor<2x!quant.uniform<i8:f32:0, {0.5, -0.25}>>) {
  func.return
}

// -----

// expected-error @+1 {{a per-axis type needs at least one scale}}
func.func @per_axis_no_scales(%x: tensor<2x!quant.uniform<i8:f32:0, {}>>) {
  func.return
}

// -----

// The quantized dimension is a non-negative integer literal.
// expected-error @+1 {{Expected integer literal}}
func.func @per_axis_negative_axis(%x: tensor<2x!quant.uniform<i8:f32:-1, {0.5}>>) {
  func.return
}

// -----

// As in MLIR, `1e-5` is not a float literal (the lexer reads the integer `1`): scales need a `.`.
// expected-error @+1 {{'>' expected}}
func.func @scale_without_dot(%x: tensor<4x!quant.uniform<i8:f32, 1e-5>>) {
  func.return
}

// -----

// expected-error @+1 {{Expected integer literal}}
func.func @zero_point_not_integer(%x: tensor<4x!quant.uniform<i8:f32, 0.5:1.5>>) {
  func.return
}

// -----

func.func @qcast_bad_rounding(%x: tensor<4xf32>) {
  // expected-error @+1 {{rounding must be one of half_away_from_zero, half_to_even, got 'nearest'}}
  %q = quant.qcast %x rounding = "nearest" : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

func.func @qcast_quantized_input(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{expected a float input, got !quant.uniform<i8:f32, 0.5>}}
  %q = quant.qcast %x : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

func.func @qcast_integer_input(%x: tensor<4xi8>) {
  // expected-error @+1 {{expected a float input, got i8}}
  %q = quant.qcast %x : tensor<4xi8> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

func.func @qcast_float_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected a quantized result, got f32}}
  %q = quant.qcast %x : tensor<4xf32> to tensor<4xf32>
  func.return
}

// -----

func.func @qcast_integer_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected a quantized result, got i8}}
  %q = quant.qcast %x : tensor<4xf32> to tensor<4xi8>
  func.return
}

// -----

func.func @qcast_expressed_type_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{result expresses f16 but the input is f32}}
  %q = quant.qcast %x : tensor<4xf32> to tensor<4x!quant.uniform<i8:f16, 0.5>>
  func.return
}

// -----

func.func @qcast_shape_mismatch(%x: tensor<2x2xf32>) {
  // expected-error @+1 {{result shape [4] differs from input shape [2, 2]}}
  %q = quant.qcast %x : tensor<2x2xf32> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

func.func @qcast_dynamic_shape_mismatch(%x: tensor<?x2xf32>) {
  // expected-error @+1 {{result shape [2, 2] differs from input shape [?, 2]}}
  %q = quant.qcast %x : tensor<?x2xf32> to tensor<2x2x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

func.func @qcast_axis_beyond_rank(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result is quantized along dimension 2 but has rank 2}}
  %q = quant.qcast %x : tensor<2x3xf32> to tensor<2x3x!quant.uniform<i8:f32:2, {0.5, 0.5}>>
  func.return
}

// -----

func.func @qcast_axis_size_mismatch(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{result has 3 slices along quantized dimension 0 but its type has 2 scales}}
  %q = quant.qcast %x : tensor<3x2xf32> to tensor<3x2x!quant.uniform<i8:f32:0, {0.5, 0.25}>>
  func.return
}

// -----

func.func @qcast_not_a_tensor(%x: f32) {
  // expected-error @+1 {{operand 'input' at position 0 does not verify}}
  %q = "quant.qcast"(%x) : (f32) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

func.func @dcast_float_input(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected a quantized input, got f32}}
  %d = quant.dcast %x : tensor<4xf32> to tensor<4xf32>
  func.return
}

// -----

func.func @dcast_wrong_expressed_type(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{result element type must be the expressed type f32, got f16}}
  %d = quant.dcast %x : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4xf16>
  func.return
}

// -----

func.func @dcast_quantized_result(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{result element type must be the expressed type f32, got !quant.uniform<i8:f32, 0.25>}}
  %d = quant.dcast %x : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4x!quant.uniform<i8:f32, 0.25>>
  func.return
}

// -----

func.func @dcast_shape_mismatch(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{result shape [1, 4] differs from input shape [4]}}
  %d = quant.dcast %x : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<1x4xf32>
  func.return
}

// -----

func.func @dcast_axis_beyond_rank(%x: tensor<2x!quant.uniform<i8:f32:1, {0.5, 0.5}>>) {
  // expected-error @+1 {{input is quantized along dimension 1 but has rank 1}}
  %d = quant.dcast %x : tensor<2x!quant.uniform<i8:f32:1, {0.5, 0.5}>> to tensor<2xf32>
  func.return
}

// -----

func.func @dcast_axis_size_mismatch(%x: tensor<2x4x!quant.uniform<i8:f32:1, {0.5, 0.5}>>) {
  // expected-error @+1 {{input has 4 slices along quantized dimension 1 but its type has 2 scales}}
  %d = quant.dcast %x : tensor<2x4x!quant.uniform<i8:f32:1, {0.5, 0.5}>> to tensor<2x4xf32>
  func.return
}

// -----

func.func @rescale_per_axis_input(%x: tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.5}>>) {
  // expected-error @+1 {{input must be per-tensor quantized}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [0]
      : tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.5}>> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_per_axis_result(%x: tensor<2xi32>) {
  // expected-error @+1 {{result must be per-tensor quantized}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [0]
      : tensor<2xi32> to tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.5}>>
  func.return
}

// -----

func.func @rescale_float_input(%x: tensor<2xf32>) {
  // expected-error @+1 {{input must be an integer or quantized tensor, got f32}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [0] : tensor<2xf32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_float_result(%x: tensor<2xi32>) {
  // expected-error @+1 {{result must be an integer or quantized tensor, got f16}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [0] : tensor<2xi32> to tensor<2xf16>
  func.return
}

// -----

func.func @rescale_shape_mismatch(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{result shape [3, 2] differs from input shape [2, 3]}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [0] : tensor<2x3xi32> to tensor<3x2xi8>
  func.return
}

// -----

func.func @rescale_bad_rounding(%x: tensor<2xi32>) {
  // expected-error @+1 {{rounding must be one of double_round, single_round, got 'half_to_even'}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [0] rounding = "half_to_even"
      : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_count_mismatch(%x: tensor<2xi32>) {
  // expected-error @+1 {{got 2 multipliers but 1 shift}}
  %r = quant.rescale %x multiplier = [1073741824, 1073741824] shift = [0] axis = 0
      : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_no_multiplier(%x: tensor<2xi32>) {
  // expected-error @+1 {{expected at least one multiplier}}
  %r = quant.rescale %x multiplier = [] shift = [] : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_multiplier_negative(%x: tensor<2xi32>) {
  // expected-error @+1 {{multiplier -1073741824 is not in [0, 2^31)}}
  %r = quant.rescale %x multiplier = [-1073741824] shift = [0] : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_per_channel_multiplier_out_of_range(%x: tensor<2xi32>) {
  // expected-error @+1 {{multiplier -1 is not in [0, 2^31)}}
  %r = quant.rescale %x multiplier = [1073741824, -1] shift = [0, 0] axis = 0
      : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_multiplier_not_i32(%x: tensor<2xi32>) {
  // expected-error @+1 {{multiplier 2147483648 does not fit in i32}}
  %r = quant.rescale %x multiplier = [2147483648] shift = [0] : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_shift_not_i32(%x: tensor<2xi32>) {
  // expected-error @+1 {{shift -2147483649 does not fit in i32}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [-2147483649] : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_shift_too_large(%x: tensor<2xi32>) {
  // expected-error @+1 {{shift 31 is out of range [-31, 30]}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [31] : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_shift_too_small(%x: tensor<2xi32>) {
  // expected-error @+1 {{shift -32 is out of range [-31, 30]}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [-32] : tensor<2xi32> to tensor<2xi8>
  func.return
}

// -----

func.func @rescale_per_channel_without_axis(%x: tensor<3xi32>) {
  // expected-error @+1 {{per-channel rescale needs an axis, got 3 multipliers}}
  %r = quant.rescale %x multiplier = [1073741824, 1073741824, 1073741824] shift = [0, 0, 0]
      : tensor<3xi32> to tensor<3xi8>
  func.return
}

// -----

func.func @rescale_axis_beyond_rank(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [0] axis = 2
      : tensor<2x3xi32> to tensor<2x3xi8>
  func.return
}

// -----

func.func @rescale_negative_axis(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %r = quant.rescale %x multiplier = [1073741824] shift = [0] axis = -1
      : tensor<2x3xi32> to tensor<2x3xi8>
  func.return
}

// -----

func.func @rescale_axis_count_mismatch(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{expected 1 or 3 multipliers along axis 1 of size 3, got 2}}
  %r = quant.rescale %x multiplier = [1073741824, 1073741824] shift = [0, 0] axis = 1
      : tensor<2x3xi32> to tensor<2x3xi8>
  func.return
}

// -----

func.func @rescale_axis_of_size_one(%x: tensor<2x1xi32>) {
  // expected-error @+1 {{expected 1 multiplier along axis 1 of size 1, got 2}}
  %r = quant.rescale %x multiplier = [1073741824, 1073741824] shift = [0, 0] axis = 1
      : tensor<2x1xi32> to tensor<2x1xi8>
  func.return
}

// -----

func.func @dcast_one_slice_many_scales(%x: tensor<1x!quant.uniform<i8:f32:0, {0.5, 0.5}>>) {
  // expected-error @+1 {{input has 1 slice along quantized dimension 0 but its type has 2 scales}}
  %d = quant.dcast %x : tensor<1x!quant.uniform<i8:f32:0, {0.5, 0.5}>> to tensor<1xf32>
  func.return
}

// -----

func.func @qcast_many_slices_one_scale(%x: tensor<3xf32>) {
  // expected-error @+1 {{result has 3 slices along quantized dimension 0 but its type has 1 scale}}
  %q = quant.qcast %x : tensor<3xf32> to tensor<3x!quant.uniform<i8:f32:0, {0.5}>>
  func.return
}

// -----

func.func @scast_two_integers(%x: tensor<4xi8>) {
  // expected-error @+1 {{expected one quantized and one integer side, got i8 and i8}}
  %s = quant.scast %x : tensor<4xi8> to tensor<4xi8>
  func.return
}

// -----

func.func @scast_wrong_width(%q: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{integer side must be the 8-bit storage type of !quant.uniform<i8:f32, 0.5>, got i32}}
  %s = quant.scast %q : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4xi32>
  func.return
}

// -----

func.func @scast_float(%q: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{integer side must be the 8-bit storage type of !quant.uniform<i8:f32, 0.5>, got f32}}
  %s = quant.scast %q : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4xf32>
  func.return
}

// -----

func.func @scast_shape(%q: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  // expected-error @+1 {{result shape [2] differs from input shape [4]}}
  %s = quant.scast %q : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<2xi8>
  func.return
}
