// RUN: irc-opt %s --split-input-file -p canonicalize | filecheck %s

// canonicalize's batch-norm patterns (passes/batch_norm_patterns.py). With scale [2, 1],
// offset [1, -1], mean [1, 0], variance [1, 4] and epsilon 0 the affine map is
// a = scale / sqrt(variance) = [2, 0.5], b = offset - mean * a = [-1, -1].

// A batch norm after a concat (DenseNet's pre-activation) becomes a per-channel
// multiply-add; NCHW broadcasts the constants as [C, 1, 1].
// CHECK-LABEL: func.func @decompose_nchw
// CHECK:         %[[CAT:.*]] = nn.concat
// CHECK:         %[[A:.*]] = nn.constant dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}5.000000e-01]]]> : tensor<2x1x1xf32>
// CHECK:         %[[M:.*]] = nn.mul %[[CAT]], %[[A]] : tensor<1x2x4x4xf32>, tensor<2x1x1xf32> -> tensor<1x2x4x4xf32>
// CHECK:         %[[B:.*]] = nn.constant dense<-1.000000e+00> : tensor<2x1x1xf32>
// CHECK:         %[[Y:.*]] = nn.add %[[M]], %[[B]] : tensor<1x2x4x4xf32>, tensor<2x1x1xf32> -> tensor<1x2x4x4xf32>
// CHECK-NOT:     nn.batch_norm
// CHECK:         func.return %[[Y]]
func.func @decompose_nchw(%x: tensor<1x1x4x4xf32>, %z: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %scale = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %offset = nn.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %c = nn.concat %x, %z axis = 1 : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32> -> tensor<1x2x4x4xf32>
  %y = nn.batch_norm %c, %scale, %offset, %mean, %var epsilon = 0.0 layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// NHWC broadcasts them as [C]; dynamic dimensions keep their type.
// CHECK-LABEL: func.func @decompose_nhwc_dynamic
// CHECK:         %[[A:.*]] = nn.constant dense<[2.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK:         %[[M:.*]] = nn.mul %{{.*}}, %[[A]] : tensor<?x4x4x2xf32>, tensor<2xf32> -> tensor<?x4x4x2xf32>
// CHECK:         %[[B:.*]] = nn.constant dense<-1.000000e+00> : tensor<2xf32>
// CHECK:         %[[Y:.*]] = nn.add %[[M]], %[[B]] : tensor<?x4x4x2xf32>, tensor<2xf32> -> tensor<?x4x4x2xf32>
// CHECK:         func.return %[[Y]]
func.func @decompose_nhwc_dynamic(%x: tensor<?x4x4x2xf32>) -> tensor<?x4x4x2xf32> {
  %scale = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %offset = nn.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %y = nn.batch_norm %x, %scale, %offset, %mean, %var epsilon = 0.0 layout = "NHWC" : tensor<?x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<?x4x4x2xf32>
  func.return %y : tensor<?x4x4x2xf32>
}

// -----

// A batch norm feeding an unpadded conv folds into it: w * a per input channel and
// bias + sum(w * b) per output channel (w = 1, so the bias is -1 + -1 = -2).
// CHECK-LABEL: func.func @fold_into_next_conv
// CHECK-SAME:    (%[[X:[^:]*]]:
// CHECK-DAG:     %[[W:.*]] = nn.constant dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}5.000000e-01]]]]> : tensor<1x2x1x1xf32>
// CHECK-DAG:     %[[B:.*]] = nn.constant dense<-2.000000e+00> : tensor<1xf32>
// CHECK:         %[[Y:.*]] = nn.conv2d %[[X]], %[[W]], %[[B]] layout = "NCHW"
// CHECK-NOT:     nn.batch_norm
// CHECK-NOT:     nn.mul
// CHECK:         func.return %[[Y]]
func.func @fold_into_next_conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %scale = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %offset = nn.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %w = nn.constant dense<1.0> : tensor<1x2x1x1xf32>
  %n = nn.batch_norm %x, %scale, %offset, %mean, %var epsilon = 0.0 layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  %y = nn.conv2d %n, %w layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32> -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}

// -----

// Must not fold into a padded conv (its border would read 0, not b): decomposed instead.
// CHECK-LABEL: func.func @no_fold_into_padded_conv
// CHECK:         nn.mul
// CHECK:         nn.add
// CHECK:         nn.conv2d %{{.*}}, %{{.*}} pads = [1, 1, 1, 1] layout = "NCHW"
func.func @no_fold_into_padded_conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %s = nn.constant dense<2.0> : tensor<2xf32>
  %w = nn.constant dense<1.0> : tensor<1x2x3x3xf32>
  %n = nn.batch_norm %x, %s, %s, %s, %s layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  %y = nn.conv2d %n, %w layout = "NCHW" pads = [1, 1, 1, 1] : tensor<1x2x4x4xf32>, tensor<1x2x3x3xf32> -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}

// -----

// Must not fire: a runtime parameter has no compile-time scale and shift.
// CHECK-LABEL: func.func @keep_runtime_parameters
// CHECK:         nn.batch_norm
// CHECK-NOT:     nn.mul
func.func @keep_runtime_parameters(%x: tensor<1x2x4x4xf32>, %var: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %s = nn.constant dense<1.0> : tensor<2xf32>
  %y = nn.batch_norm %x, %s, %s, %s, %var layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Must not fire on float16: the multiply and the add would each round, the reference once.
// CHECK-LABEL: func.func @keep_float16
// CHECK:         nn.batch_norm
// CHECK-NOT:     nn.mul
func.func @keep_float16(%x: tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16> {
  %s = nn.constant dense<1.0> : tensor<2xf16>
  %y = nn.batch_norm %x, %s, %s, %s, %s layout = "NCHW" : tensor<1x2x4x4xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16> -> tensor<1x2x4x4xf16>
  func.return %y : tensor<1x2x4x4xf16>
}

// -----

// A batch norm after a conv2d_transpose (DBNet's head) folds into it: the IOHW filter is
// scaled along its output-channel axis (a = [2, 0.5]) and the bias becomes bias * a + b.
// CHECK-LABEL: func.func @fold_into_conv_transpose
// CHECK:         %[[W:.*]] = nn.constant dense<{{\[\[\[\[}}2.000000e+00, 2.000000e+00], [2.000000e+00, 2.000000e+00]], {{\[\[}}5.000000e-01, 5.000000e-01], [5.000000e-01, 5.000000e-01]]]]> : tensor<1x2x2x2xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[5.000000e+00, -5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.conv2d_transpose %{{.*}}, %[[W]], %[[B]] strides = [2, 2] layout = "NCHW" : tensor<1x1x2x2xf32>, tensor<1x2x2x2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
// CHECK-NOT:     nn.batch_norm
// CHECK:         func.return %[[Y]]
func.func @fold_into_conv_transpose(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x4x4xf32> {
  %w = nn.constant dense<1.0> : tensor<1x2x2x2xf32>
  %bias = nn.constant dense<[3.0, 1.0]> : tensor<2xf32>
  %scale = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %offset = nn.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %t = nn.conv2d_transpose %x, %w, %bias strides = [2, 2] layout = "NCHW" : tensor<1x1x2x2xf32>, tensor<1x2x2x2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  %y = nn.batch_norm %t, %scale, %offset, %mean, %var epsilon = 0.0 layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Not when the conv2d_transpose has another user (it would be computed twice).
// CHECK-LABEL: func.func @conv_transpose_with_two_users
// CHECK:         nn.conv2d_transpose
// CHECK:         nn.mul
// CHECK:         nn.add
func.func @conv_transpose_with_two_users(%x: tensor<1x1x2x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = nn.constant dense<1.0> : tensor<1x2x2x2xf32>
  %scale = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %offset = nn.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %t = nn.conv2d_transpose %x, %w strides = [2, 2] layout = "NCHW" : tensor<1x1x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x4x4xf32>
  %y = nn.batch_norm %t, %scale, %offset, %mean, %var epsilon = 0.0 layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y, %t : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
