// RUN: irc-opt %s --split-input-file -p canonicalize | filecheck %s

// Two transposes become one with the composed permutation: out[i] = x[p1[p2[i]]].
// CHECK-LABEL: func.func @transpose_pair_composes
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[T:.*]] = nn.transpose %[[X]] perm = [2, 1, 0] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT:    func.return %[[T]] : tensor<4x3x2xf32>
func.func @transpose_pair_composes(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %a = nn.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %b = nn.transpose %a perm = [0, 2, 1] : tensor<4x2x3xf32> -> tensor<4x3x2xf32>
  func.return %b : tensor<4x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_pair_cancels
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8x8x3xf32>)
// CHECK-NEXT:    func.return %[[X]] : tensor<1x8x8x3xf32>
func.func @transpose_pair_cancels(%x: tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32> {
  %a = nn.transpose %x perm = [0, 3, 1, 2] : tensor<1x8x8x3xf32> -> tensor<1x3x8x8xf32>
  %b = nn.transpose %a perm = [0, 2, 3, 1] : tensor<1x3x8x8xf32> -> tensor<1x8x8x3xf32>
  func.return %b : tensor<1x8x8x3xf32>
}

// -----

// A cancelling pair saves the outer op even when the inner one has another user.
// CHECK-LABEL: func.func @transpose_pair_cancels_with_second_user
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[A:.*]] = nn.transpose %[[X]] perm = [1, 0]
// CHECK-NEXT:    %[[S:.*]] = nn.add %[[X]], %[[X]]
// CHECK-NEXT:    func.return %[[A]], %[[S]] : tensor<3x2xf32>, tensor<2x3xf32>
func.func @transpose_pair_cancels_with_second_user(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %a = nn.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %b = nn.transpose %a perm = [1, 0] : tensor<3x2xf32> -> tensor<2x3xf32>
  %s = nn.add %b, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a, %s : tensor<3x2xf32>, tensor<2x3xf32>
}

// -----

// Must not fire: the inner transpose has a second user, so fusing would save nothing.
// CHECK-LABEL: func.func @transpose_pair_second_user
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[A:.*]] = nn.transpose %[[X]] perm = [2, 0, 1]
// CHECK-NEXT:    %[[B:.*]] = nn.transpose %[[A]] perm = [0, 2, 1]
// CHECK-NEXT:    func.return %[[A]], %[[B]]
func.func @transpose_pair_second_user(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<4x3x2xf32>) {
  %a = nn.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %b = nn.transpose %a perm = [0, 2, 1] : tensor<4x2x3xf32> -> tensor<4x3x2xf32>
  func.return %a, %b : tensor<4x2x3xf32>, tensor<4x3x2xf32>
}

// -----

// The pair cancels, but %x is less static than the result: replacing the result by %x
// would change the type seen by func.return, so one transpose (with the identity
// permutation) stays to keep the declared type.
// CHECK-LABEL: func.func @transpose_pair_type_would_change
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    %[[T:.*]] = nn.transpose %[[X]] perm = [0, 1] : tensor<?x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[T]] : tensor<2x4xf32>
func.func @transpose_pair_type_would_change(%x: tensor<?x4xf32>) -> tensor<2x4xf32> {
  %a = nn.transpose %x perm = [1, 0] : tensor<?x4xf32> -> tensor<4x2xf32>
  %b = nn.transpose %a perm = [1, 0] : tensor<4x2xf32> -> tensor<2x4xf32>
  func.return %b : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @identity_transpose
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    func.return %[[X]] : tensor<2x3xf32>
func.func @identity_transpose(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = nn.transpose %x perm = [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_pair_folds
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %[[X]] shape = [4, -1] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<4x6xf32>
func.func @reshape_pair_folds(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %a = nn.reshape %x shape = [6, 4] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %b = nn.reshape %a shape = [4, -1] : tensor<6x4xf32> -> tensor<4x6xf32>
  func.return %b : tensor<4x6xf32>
}

// -----

// A reshape there and back folds into an identity reshape, which goes away.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    func.return %[[X]] : tensor<?x4xf32>
func.func @reshape_round_trip(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %a = nn.reshape %x shape = [-1] : tensor<?x4xf32> -> tensor<?xf32>
  %b = nn.reshape %a shape = [-1, 4] : tensor<?xf32> -> tensor<?x4xf32>
  func.return %b : tensor<?x4xf32>
}

// -----

// Must not fire: the inner reshape has a second user.
// CHECK-LABEL: func.func @reshape_pair_second_user
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[A:.*]] = nn.reshape %[[X]] shape = [6, 4]
// CHECK-NEXT:    %[[B:.*]] = nn.reshape %[[A]] shape = [24]
// CHECK-NEXT:    func.return %[[A]], %[[B]]
func.func @reshape_pair_second_user(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<24xf32>) {
  %a = nn.reshape %x shape = [6, 4] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %b = nn.reshape %a shape = [24] : tensor<6x4xf32> -> tensor<24xf32>
  func.return %a, %b : tensor<6x4xf32>, tensor<24xf32>
}

// -----

// CHECK-LABEL: func.func @identity_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<?x3xf32>)
// CHECK-NEXT:    func.return %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<?x3xf32>
func.func @identity_reshape(%x: tensor<2x3xf32>, %y: tensor<?x3xf32>) -> (tensor<2x3xf32>, tensor<?x3xf32>) {
  %a = nn.reshape %x shape = [2, -1] : tensor<2x3xf32> -> tensor<2x3xf32>
  %b = nn.reshape %y shape = [-1, 3] : tensor<?x3xf32> -> tensor<?x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<?x3xf32>
}

// -----

// Must not fire: the reshape moves no data, but removing it would change the result type
// from tensor<2x4xf32> to tensor<?x4xf32>.
// CHECK-LABEL: func.func @reshape_type_would_change
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %[[X]] shape = [2, 4] : tensor<?x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<2x4xf32>
func.func @reshape_type_would_change(%x: tensor<?x4xf32>) -> tensor<2x4xf32> {
  %r = nn.reshape %x shape = [2, 4] : tensor<?x4xf32> -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

// Must not fire: same types, but a 2x8 input becomes 4x4.
// CHECK-LABEL: func.func @reshape_same_type_not_identity
// CHECK:         nn.reshape %{{.*}} shape = [4, -1] : tensor<?x?xf32> -> tensor<?x?xf32>
func.func @reshape_same_type_not_identity(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = nn.reshape %x shape = [4, -1] : tensor<?x?xf32> -> tensor<?x?xf32>
  func.return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @full_slice
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT:    %[[S:.*]] = nn.slice %[[X]] begin = [0, 0] end = [2, 8] strides = [1, 2]
// CHECK-NEXT:    func.return %[[X]], %[[S]]
func.func @full_slice(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x4xf32>) {
  %a = nn.slice %x begin = [0, 0] end = [2, 8] strides = [1, 1] : tensor<2x8xf32> -> tensor<2x8xf32>
  %b = nn.slice %x begin = [0, 0] end = [2, 8] strides = [1, 2] : tensor<2x8xf32> -> tensor<2x4xf32>
  func.return %a, %b : tensor<2x8xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @zero_pad
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2xf32>)
// CHECK-NEXT:    func.return %[[X]] : tensor<1x4x4x2xf32>
func.func @zero_pad(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %p = nn.pad %x pads = [0, 0, 0, 0, 0, 0, 0, 0] mode = "reflect" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  func.return %p : tensor<1x4x4x2xf32>
}

// -----

// CHECK-LABEL: func.func @same_type_cast
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[C:.*]] = nn.cast %[[X]] : tensor<4xf32> -> tensor<4xi32>
// CHECK-NEXT:    func.return %[[X]], %[[C]]
func.func @same_type_cast(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %a = nn.cast %x : tensor<4xf32> -> tensor<4xf32>
  %b = nn.cast %x : tensor<4xf32> -> tensor<4xi32>
  func.return %a, %b : tensor<4xf32>, tensor<4xi32>
}

// -----

// An unbounded clip goes; a clip with one bound stays.
// CHECK-LABEL: func.func @unbounded_clip
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[C:.*]] = nn.clip %[[X]] min = 0.0
// CHECK-NEXT:    func.return %[[X]], %[[C]]
func.func @unbounded_clip(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = nn.clip %x : tensor<4xf32> -> tensor<4xf32>
  %b = nn.clip %x min = 0.0 : tensor<4xf32> -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Must not fire on a quantized clip that requantizes (different result scale).
// CHECK-LABEL: func.func @requantizing_clip
// CHECK:         nn.clip
func.func @requantizing_clip(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.25>> {
  %a = nn.clip %x : tensor<4x!quant.uniform<i8:f32, 0.5>> -> tensor<4x!quant.uniform<i8:f32, 0.25>>
  func.return %a : tensor<4x!quant.uniform<i8:f32, 0.25>>
}

// -----

// A one-input concat goes unless it fuses an activation.
// CHECK-LABEL: func.func @single_input_concat
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[R:.*]] = nn.concat %[[X]] axis = 1 activation = "relu"
// CHECK-NEXT:    func.return %[[X]], %[[R]]
func.func @single_input_concat(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = nn.concat %x axis = 1 : tensor<2x3xf32> -> tensor<2x3xf32>
  %b = nn.concat %x axis = 1 activation = "relu" : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @single_piece_split
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8xf32>)
// CHECK-NEXT:    func.return %[[X]] : tensor<1x8xf32>
func.func @single_piece_split(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %a = nn.split %x axis = 1 sizes = [8] : tensor<1x8xf32> -> tensor<1x8xf32>
  func.return %a : tensor<1x8xf32>
}

// -----

// Nearest-neighbour resizes to the input size go (align_corners and half_pixel); a
// bilinear one and a tf_half_pixel_for_nn one that rounds up (it samples i + 1) stay.
// CHECK-LABEL: func.func @same_size_resize
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2xf32>)
// CHECK-NEXT:    %[[B:.*]] = nn.resize %[[X]] size = [4, 4] mode = "bilinear"
// CHECK-NEXT:    %[[C:.*]] = nn.resize %[[X]] size = [4, 4] coordinate_mode = "tf_half_pixel_for_nn" nearest_mode = "ceil"
// CHECK-NEXT:    func.return %[[X]], %[[X]], %[[B]], %[[C]]
func.func @same_size_resize(%x: tensor<1x4x4x2xf32>) -> (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) {
  %a = nn.resize %x size = [4, 4] coordinate_mode = "align_corners" layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %h = nn.resize %x size = [4, 4] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %b = nn.resize %x size = [4, 4] mode = "bilinear" layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %c = nn.resize %x size = [4, 4] coordinate_mode = "tf_half_pixel_for_nn" nearest_mode = "ceil" layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  func.return %a, %h, %b, %c : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>
}

// -----

// Ops left without users by the rewrites, and ones that had none, are erased.
// CHECK-LABEL: func.func @dead_ops
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT:     nn.
// CHECK:         func.return %[[X]] : tensor<4xf32>
func.func @dead_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
  %b = nn.exp %a : tensor<4xf32> -> tensor<4xf32>
  func.return %x : tensor<4xf32>
}

// -----

// xDSL's own canonicalizations and folders run too (arith here).
// CHECK-LABEL: func.func @xdsl_patterns
// CHECK-NEXT:    %[[C:.*]] = arith.constant 5 : i32
// CHECK-NEXT:    func.return %[[C]] : i32
func.func @xdsl_patterns() -> i32 {
  %a = arith.constant 2 : i32
  %b = arith.constant 3 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}

// -----

// Elementwise ops on constants fold, evaluated with the reference kernels.
// CHECK-LABEL: func.func @fold_elementwise
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<[3.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    func.return %[[C]] : tensor<2xf32>
func.func @fold_elementwise() -> tensor<2xf32> {
  %a = nn.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %b = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %s = nn.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %r = nn.relu %a : tensor<2xf32> -> tensor<2xf32>
  %m = nn.maximum %s, %r : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %m : tensor<2xf32>
}

// -----

// Transposes, reshapes and casts of constants fold.
// CHECK-LABEL: func.func @fold_data_movement
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<{{\[}}[1, 3], [2, 4]]> : tensor<2x2xi32>
// CHECK-NEXT:    func.return %[[C]] : tensor<2x2xi32>
func.func @fold_data_movement() -> tensor<2x2xi32> {
  %a = nn.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = nn.transpose %a perm = [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
  %r = nn.reshape %t shape = [4] : tensor<2x2xf32> -> tensor<4xf32>
  %b = nn.reshape %r shape = [2, 2] : tensor<4xf32> -> tensor<2x2xf32>
  %c = nn.cast %b : tensor<2x2xf32> -> tensor<2x2xi32>
  func.return %c : tensor<2x2xi32>
}

// -----

// Dequantizing constant weights happens at compile time.
// CHECK-LABEL: func.func @fold_dequantized_weights
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<[-2.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @fold_dequantized_weights() -> tensor<2xf32> {
  %q = nn.constant dense<[-4, 1]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  %d = quant.dcast %q : tensor<2x!quant.uniform<i8:f32, 0.5>> to tensor<2xf32>
  func.return %d : tensor<2xf32>
}

// -----

// Must not fire: a quantized add needs lower-quantized first, and a non-constant operand.
// CHECK-LABEL: func.func @no_fold
// CHECK:         nn.add
// CHECK:         nn.mul
func.func @no_fold(%x: tensor<2xf32>) -> (tensor<2x!quant.uniform<i8:f32, 0.5>>, tensor<2xf32>) {
  %q = nn.constant dense<[-4, 1]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  %s = nn.add %q, %q : tensor<2x!quant.uniform<i8:f32, 0.5>>, tensor<2x!quant.uniform<i8:f32, 0.5>> -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  %c = nn.constant dense<2.0> : tensor<2xf32>
  %m = nn.mul %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %s, %m : tensor<2x!quant.uniform<i8:f32, 0.5>>, tensor<2xf32>
}

// -----

// Must not fire: a broadcast that would grow a splat into a large constant.
// CHECK-LABEL: func.func @no_fold_growth
// CHECK:         nn.add
func.func @no_fold_growth() -> tensor<1x256x512xf32> {
  %a = nn.constant dense<1.0> : tensor<1x256x512xf32>
  %b = nn.constant dense<2.0> : tensor<1xf32>
  %s = nn.add %a, %b : tensor<1x256x512xf32>, tensor<1xf32> -> tensor<1x256x512xf32>
  func.return %s : tensor<1x256x512xf32>
}

// -----

// batch_norm folds into the preceding conv2d: w * k and (b - mean) * k + offset with
// k = scale / sqrt(variance + epsilon) = [2, 0.5].
// CHECK-LABEL: func.func @fold_batch_norm
// CHECK-DAG:     %[[W:.*]] = nn.constant dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}5.000000e-01]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG:     %[[B:.*]] = nn.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK:         %[[Y:.*]] = nn.conv2d %{{.*}}, %[[W]], %[[B]] layout = "NCHW"
// CHECK-NOT:     nn.batch_norm
// CHECK:         func.return %[[Y]]
func.func @fold_batch_norm(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = nn.constant dense<1.0> : tensor<2x1x1x1xf32>
  %b = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %scale = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %offset = nn.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %c = nn.conv2d %x, %w, %b layout = "NCHW" : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  %y = nn.batch_norm %c, %scale, %offset, %mean, %var epsilon = 0.0 layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Must not fire: the conv has a fused activation, so the batch norm cannot move before it
// (it becomes a multiply-add instead: canonicalize-batch-norm.mlir).
// CHECK-LABEL: func.func @no_fold_batch_norm_after_activation
// CHECK:         nn.conv2d %{{.*}}, %{{.*}} layout = "NCHW" activation = "relu"
// CHECK-NEXT:    nn.constant
// CHECK-NEXT:    nn.mul
func.func @no_fold_batch_norm_after_activation(%x: tensor<1x1x4x4xf32>, %p: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %w = nn.constant dense<1.0> : tensor<2x1x1x1xf32>
  %s = nn.constant dense<1.0> : tensor<2xf32>
  %c = nn.conv2d %x, %w layout = "NCHW" activation = "relu" : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x4x4xf32>
  %y = nn.batch_norm %c, %s, %s, %s, %s layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
