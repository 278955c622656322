// RUN: irc-opt %s --split-input-file -p 'convert-layout{to=NCHW},canonicalize' | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'convert-layout{to=NCHW keep-signature=false},canonicalize' \
// RUN:   | filecheck %s --check-prefix=NOSIG
// RUN: irc-opt %s --split-input-file -p 'convert-layout{to=NHWC},canonicalize' | filecheck %s --check-prefix=NHWC
// RUN: irc-opt %s --split-input-file -p 'convert-layout{targets=npu},canonicalize' | filecheck %s --check-prefix=TARGET
// RUN: not irc-opt %s -p 'convert-layout{targets=npu keep-signature=false}' 2>&1 | filecheck %s --check-prefix=OPTIONS

// keep-signature=false only means something for whole-graph conversion.
// OPTIONS: irc-opt: error: convert-layout: keep-signature=false cannot be combined with targets

// ---- Layout-sensitive ops ------------------------------------------------------------------

// Two convolutions with an activation between them: one transpose at the input, one at the
// output; the pair between the convolutions cancels. A filter argument gets a transpose
// (OHWI -> OIHW), a constant filter is transposed at compile time, and the [C] bias of an
// NHWC add becomes [C, 1, 1].
// CHECK-LABEL: func.func @conv_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8x8x3xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32>
// CHECK-DAG:     %[[XT:.*]] = nn.transpose %[[X]] perm = [0, 3, 1, 2] : tensor<1x8x8x3xf32> -> tensor<1x3x8x8xf32>
// CHECK-DAG:     %[[WT:.*]] = nn.transpose %[[W]] perm = [0, 3, 1, 2] : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf32>
// CHECK-DAG:     %[[W2:.*]] = nn.constant dense<5.000000e-01> : tensor<4x4x1x1xf32>
// CHECK:         %[[Y:.*]] = nn.conv2d %[[XT]], %[[WT]] pads = [1, 1, 1, 1] layout = "NCHW" activation = "relu"
// CHECK-SAME:      -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.sigmoid %[[Y]] : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %[[Z:.*]] = nn.conv2d %[[R]], %[[W2]] layout = "NCHW"
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]], {{\[\[}}3.000000e+00]], {{\[\[}}4.000000e+00]]]> : tensor<4x1x1xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.add %[[Z]], %[[B]] : tensor<1x4x8x8xf32>, tensor<4x1x1xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %[[O:.*]] = nn.transpose %[[S]] perm = [0, 2, 3, 1] : tensor<1x4x8x8xf32> -> tensor<1x8x8x4xf32>
// CHECK-NEXT:    func.return %[[O]] : tensor<1x8x8x4xf32>
// With keep-signature=false the activations cross the signature in NCHW: no transpose
// is left; the filter argument keeps its layout and is converted in the body.
// NOSIG-LABEL: func.func @conv_chain
// NOSIG-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// NOSIG:         %[[WT:.*]] = nn.transpose %[[W]] perm = [0, 3, 1, 2]
// NOSIG:         nn.conv2d %[[X]], %[[WT]] pads = [1, 1, 1, 1] layout = "NCHW"
// NOSIG-NOT:     nn.transpose
// NOSIG:         func.return %{{.*}} : tensor<1x4x8x8xf32>
// The graph is NHWC already: nothing to do.
// NHWC-LABEL:  func.func @conv_chain
// NHWC-NOT:      nn.transpose
// NHWC:          func.return
// No delegate.region "npu" here: targets=npu converts nothing (and it is not an error).
// TARGET-LABEL: func.func @conv_chain
// TARGET-NOT:    nn.transpose
// TARGET-NOT:    "NCHW"
// TARGET:        func.return
func.func @conv_chain(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32> {
  %w2 = nn.constant dense<0.5> : tensor<4x1x1x4xf32>
  %b = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y = nn.conv2d %x, %w pads = [1, 1, 1, 1] layout = "NHWC" activation = "relu" : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x8x8x4xf32>
  %r = nn.sigmoid %y : tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
  %z = nn.conv2d %r, %w2 layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4x1x1x4xf32> -> tensor<1x8x8x4xf32>
  %s = nn.add %z, %b : tensor<1x8x8x4xf32>, tensor<4xf32> -> tensor<1x8x8x4xf32>
  func.return %s : tensor<1x8x8x4xf32>
}

// -----

// A depthwise conv2d (groups = C) keeps its [C, 1, 1, 1] filter shape; the batch may be
// dynamic.
// CHECK-LABEL: func.func @depthwise
// CHECK-DAG:     %[[XT:.*]] = nn.transpose %{{.*}} perm = [0, 3, 1, 2] : tensor<?x8x8x4xf32> -> tensor<?x4x8x8xf32>
// CHECK-DAG:     %[[W:.*]] = nn.constant dense<{{.*}}> : tensor<4x1x1x1xf32>
// CHECK:         %[[Y:.*]] = nn.conv2d %[[XT]], %[[W]] strides = [2, 2] groups = 4 layout = "NCHW"
// CHECK-SAME:      : tensor<?x4x8x8xf32>, tensor<4x1x1x1xf32> -> tensor<?x4x4x4xf32>
// CHECK-NEXT:    %[[O:.*]] = nn.transpose %[[Y]] perm = [0, 2, 3, 1] : tensor<?x4x4x4xf32> -> tensor<?x4x4x4xf32>
// CHECK-NEXT:    func.return %[[O]]
// NOSIG-LABEL: func.func @depthwise
// NOSIG-SAME:    tensor<?x4x8x8xf32>) -> tensor<?x4x4x4xf32>
// NOSIG-NOT:     nn.transpose
// NOSIG:         func.return
func.func @depthwise(%x: tensor<?x8x8x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]> : tensor<4x1x1x1xf32>
  %y = nn.conv2d %x, %w strides = [2, 2] groups = 4 layout = "NHWC" : tensor<?x8x8x4xf32>, tensor<4x1x1x1xf32> -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// conv2d_transpose filters go OHWI -> IOHW.
// CHECK-LABEL: func.func @conv_transpose
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2xf32>, %[[W:.*]]: tensor<3x2x2x2xf32>)
// CHECK-DAG:     %[[XT:.*]] = nn.transpose %[[X]] perm = [0, 3, 1, 2]
// CHECK-DAG:     %[[WT:.*]] = nn.transpose %[[W]] perm = [3, 0, 1, 2] : tensor<3x2x2x2xf32> -> tensor<2x3x2x2xf32>
// CHECK:         %[[Y:.*]] = nn.conv2d_transpose %[[XT]], %[[WT]] strides = [2, 2] layout = "NCHW"
// CHECK-SAME:      : tensor<1x2x4x4xf32>, tensor<2x3x2x2xf32> -> tensor<1x3x8x8xf32>
// CHECK-NEXT:    nn.transpose %[[Y]] perm = [0, 2, 3, 1]
// Only the filter argument keeps its layout under keep-signature=false.
// NOSIG-LABEL: func.func @conv_transpose
// NOSIG-SAME:    (%[[X:.*]]: tensor<1x2x4x4xf32>, %[[W:.*]]: tensor<3x2x2x2xf32>) -> tensor<1x3x8x8xf32>
// NOSIG-NEXT:    %[[WT:.*]] = nn.transpose %[[W]] perm = [3, 0, 1, 2]
// NOSIG-NEXT:    %[[Y:.*]] = nn.conv2d_transpose %[[X]], %[[WT]] strides = [2, 2] layout = "NCHW"
// NOSIG-NEXT:    func.return %[[Y]]
func.func @conv_transpose(%x: tensor<1x4x4x2xf32>, %w: tensor<3x2x2x2xf32>) -> tensor<1x8x8x3xf32> {
  %y = nn.conv2d_transpose %x, %w strides = [2, 2] layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<3x2x2x2xf32> -> tensor<1x8x8x3xf32>
  func.return %y : tensor<1x8x8x3xf32>
}

// -----

// A grouped conv2d_transpose: OHWI [G*Og, H, W, Ig] regroups into IOHW [G*Ig, Og, H, W].
// CHECK-LABEL: func.func @conv_transpose_grouped
// CHECK:         %[[W:.*]] = nn.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}3.000000e+00]]], {{\[\[\[}}2.000000e+00]], {{\[\[}}4.000000e+00]]], {{\[\[\[}}5.000000e+00]], {{\[\[}}7.000000e+00]]], {{\[\[\[}}6.000000e+00]], {{\[\[}}8.000000e+00]]]]> : tensor<4x2x1x1xf32>
// CHECK:         nn.conv2d_transpose %{{.*}}, %[[W]] groups = 2 layout = "NCHW" : tensor<1x4x4x4xf32>, tensor<4x2x1x1xf32> -> tensor<1x4x4x4xf32>
func.func @conv_transpose_grouped(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = nn.constant dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]], [[[5.0, 6.0]]], [[[7.0, 8.0]]]]> : tensor<4x1x1x2xf32>
  %y = nn.conv2d_transpose %x, %w groups = 2 layout = "NHWC" : tensor<1x4x4x4xf32>, tensor<4x1x1x2xf32> -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @pools_resize_batch_norm
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8x8x4xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[XT:.*]] = nn.transpose %[[X]] perm = [0, 3, 1, 2]
// CHECK-NEXT:    %[[M:.*]] = nn.max_pool2d %[[XT]] kernel = [2, 2] strides = [2, 2] layout = "NCHW" : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.avg_pool2d %[[M]] kernel = [3, 3] pads = [1, 1, 1, 1] layout = "NCHW" : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.resize %[[A]] size = [8, 8] mode = "bilinear" layout = "NCHW" : tensor<1x4x4x4xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.batch_norm %[[R]], %[[S]], %[[S]], %[[S]], %[[S]] layout = "NCHW"
// CHECK-NEXT:    %[[O:.*]] = nn.transpose %[[B]] perm = [0, 2, 3, 1]
// CHECK-NEXT:    func.return %[[O]]
func.func @pools_resize_batch_norm(%x: tensor<1x8x8x4xf32>, %s: tensor<4xf32>) -> tensor<1x8x8x4xf32> {
  %m = nn.max_pool2d %x kernel = [2, 2] strides = [2, 2] layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  %a = nn.avg_pool2d %m kernel = [3, 3] pads = [1, 1, 1, 1] layout = "NHWC" : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xf32>
  %r = nn.resize %a size = [8, 8] mode = "bilinear" layout = "NHWC" : tensor<1x4x4x4xf32> -> tensor<1x8x8x4xf32>
  %b = nn.batch_norm %r, %s, %s, %s, %s layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x8x8x4xf32>
  func.return %b : tensor<1x8x8x4xf32>
}

// -----

// A residual block: the convolution output has two users; every inner transpose cancels,
// and the shared filter argument is converted once. Its transpose only moves size-1
// dims, so it ends up a reshape.
// CHECK-LABEL: func.func @residual
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2xf32>, %[[W:.*]]: tensor<2x1x1x2xf32>)
// CHECK-DAG:     %[[WT:.*]] = nn.reshape %[[W]] shape = [2, 2, 1, 1] : tensor<2x1x1x2xf32> -> tensor<2x2x1x1xf32>
// CHECK-DAG:     %[[XT:.*]] = nn.transpose %[[X]] perm = [0, 3, 1, 2]
// CHECK:         %[[C:.*]] = nn.conv2d %[[XT]], %[[WT]] layout = "NCHW"
// CHECK-NEXT:    %[[D:.*]] = nn.conv2d %[[C]], %[[WT]] layout = "NCHW"
// CHECK-NEXT:    %[[S:.*]] = nn.add %[[C]], %[[D]] activation = "relu6" : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[E:.*]] = nn.conv2d %[[S]], %[[WT]] layout = "NCHW"
// CHECK-NEXT:    %[[O:.*]] = nn.transpose %[[E]] perm = [0, 2, 3, 1]
// CHECK-NEXT:    func.return %[[O]]
func.func @residual(%x: tensor<1x4x4x2xf32>, %w: tensor<2x1x1x2xf32>) -> tensor<1x4x4x2xf32> {
  %c = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
  %d = nn.conv2d %c, %w layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
  %s = nn.add %c, %d activation = "relu6" : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %e = nn.conv2d %s, %w layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
  func.return %e : tensor<1x4x4x2xf32>
}

// -----

// ---- Axis-carrying ops ---------------------------------------------------------------------

// Axes move with the data instead of transposing back: axis 3 (C in NHWC) is axis 1 in
// NCHW, and slice/pad values are permuted per dimension.
// CHECK-LABEL: func.func @concat_split_slice_pad
// CHECK:         %[[M:.*]] = nn.max_pool2d %{{.*}} layout = "NCHW" : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.concat %[[M]], %[[M]] axis = 1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %{{.*}}, %[[B:.*]] = nn.split %[[C]] axis = 1 sizes = [1, 3] : tensor<1x4x4x4xf32> -> tensor<1x1x4x4xf32>, tensor<1x3x4x4xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.slice %[[B]] begin = [0, 0, 0, 1] end = [1, 3, 4, 3] strides = [1, 2, 1, 1] : tensor<1x3x4x4xf32> -> tensor<1x2x4x2xf32>
// CHECK-NEXT:    %[[P:.*]] = nn.pad %[[S]] pads = [0, 0, 0, 0, 1, 1, 2, 0] : tensor<1x2x4x2xf32> -> tensor<1x2x6x4xf32>
// CHECK-NEXT:    %[[Q:.*]] = nn.avg_pool2d %[[P]] kernel = [1, 1] layout = "NCHW"
// CHECK-NEXT:    %[[O:.*]] = nn.transpose %[[Q]] perm = [0, 2, 3, 1]
// CHECK-NEXT:    func.return %[[O]]
func.func @concat_split_slice_pad(%x: tensor<1x4x4x2xf32>) -> tensor<1x6x4x2xf32> {
  %m = nn.max_pool2d %x kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %c = nn.concat %m, %m axis = 3 : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x4xf32>
  %a, %b = nn.split %c axis = -1 sizes = [1, 3] : tensor<1x4x4x4xf32> -> tensor<1x4x4x1xf32>, tensor<1x4x4x3xf32>
  %s = nn.slice %b begin = [0, 0, 1, 0] end = [1, 4, 3, 3] strides = [1, 1, 1, 2] : tensor<1x4x4x3xf32> -> tensor<1x4x2x2xf32>
  %p = nn.pad %s pads = [0, 0, 1, 1, 2, 0, 0, 0] : tensor<1x4x2x2xf32> -> tensor<1x6x4x2xf32>
  %q = nn.avg_pool2d %p kernel = [1, 1] layout = "NHWC" : tensor<1x6x4x2xf32> -> tensor<1x6x4x2xf32>
  func.return %q : tensor<1x6x4x2xf32>
}

// -----

// A reduction over H and W without keepdims leaves [N, C] in both layouts: no transpose
// at the output.
// CHECK-LABEL: func.func @softmax_gather_reduce
// CHECK:         %[[S:.*]] = nn.softmax %{{.*}} axis = 1 : tensor<1x2x6x4xf32> -> tensor<1x2x6x4xf32>
// CHECK-NEXT:    %[[G:.*]] = nn.gather %[[S]], %{{.*}} axis = 2 : tensor<1x2x6x4xf32>, tensor<2xi32> -> tensor<1x2x2x4xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.reduce %[[G]] kind = "mean" axes = [2, 3] : tensor<1x2x2x4xf32> -> tensor<1x2xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<1x2xf32>
// NOSIG-LABEL: func.func @softmax_gather_reduce
// NOSIG-SAME:    (%{{.*}}: tensor<1x2x6x4xf32>, %{{.*}}: tensor<2xi32>) -> tensor<1x2xf32>
// NOSIG-NOT:     nn.transpose
// NOSIG:         func.return
func.func @softmax_gather_reduce(%x: tensor<1x6x4x2xf32>, %i: tensor<2xi32>) -> tensor<1x2xf32> {
  %m = nn.max_pool2d %x kernel = [1, 1] layout = "NHWC" : tensor<1x6x4x2xf32> -> tensor<1x6x4x2xf32>
  %s = nn.softmax %m axis = 3 : tensor<1x6x4x2xf32> -> tensor<1x6x4x2xf32>
  %g = nn.gather %s, %i axis = 1 : tensor<1x6x4x2xf32>, tensor<2xi32> -> tensor<1x2x4x2xf32>
  %r = nn.reduce %g kind = "mean" axes = [1, 2] : tensor<1x2x4x2xf32> -> tensor<1x2xf32>
  func.return %r : tensor<1x2xf32>
}

// -----

// Broadcast operands of elementwise ops: a [C] constant becomes a [C, 1, 1] constant, a
// [C] argument is reshaped to [C, 1, 1] (no data moves), a scalar stays as it is.
// CHECK-LABEL: func.func @broadcast_bias
// CHECK-SAME:    (%{{.*}}: tensor<1x4x4x2xf32>, %[[BIAS:.*]]: tensor<2xf32>)
// CHECK:         %[[BR:.*]] = nn.reshape %[[BIAS]] shape = [2, 1, 1] : tensor<2xf32> -> tensor<2x1x1xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.add %{{.*}}, %[[BR]] : tensor<1x2x4x4xf32>, tensor<2x1x1xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[SCALE:.*]] = nn.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}2.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.mul %[[SCALE]], %[[A]] : tensor<2x1x1xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[C:.*]] = nn.sub %[[B]], %[[ONE]] : tensor<1x2x4x4xf32>, tensor<f32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    nn.avg_pool2d %[[C]] kernel = [1, 1] layout = "NCHW"
// CHECK-NEXT:    nn.transpose
// CHECK-NEXT:    func.return
func.func @broadcast_bias(%x: tensor<1x4x4x2xf32>, %bias: tensor<2xf32>) -> tensor<1x4x4x2xf32> {
  %scale = nn.constant dense<[0.5, 2.0]> : tensor<2xf32>
  %m = nn.max_pool2d %x kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %a = nn.add %m, %bias : tensor<1x4x4x2xf32>, tensor<2xf32> -> tensor<1x4x4x2xf32>
  %b = nn.mul %scale, %a : tensor<2xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %c = nn.sub %b, %one : tensor<1x4x4x2xf32>, tensor<f32> -> tensor<1x4x4x2xf32>
  %n = nn.avg_pool2d %c kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  func.return %n : tensor<1x4x4x2xf32>
}

// -----

// ---- Boundaries ----------------------------------------------------------------------------

// A reshape that only drops size-1 dims is rewritten ([1, 2, 1, 1] -> [1, 2]); one that
// merges C with H and W needs the NHWC order, so the transpose stays right before it.
// CHECK-LABEL: func.func @reshape_boundaries
// CHECK:         %[[M:.*]] = nn.max_pool2d %{{.*}} layout = "NCHW"
// CHECK:         %[[BACK:.*]] = nn.transpose %[[M]] perm = [0, 2, 3, 1] : tensor<1x2x4x4xf32> -> tensor<1x4x4x2xf32>
// CHECK:         %[[G:.*]] = nn.reduce %[[M]] kind = "mean" axes = [2, 3] keepdims = true : tensor<1x2x4x4xf32> -> tensor<1x2x1x1xf32>
// CHECK-NEXT:    %[[V:.*]] = nn.reshape %[[G]] shape = [1, 2] : tensor<1x2x1x1xf32> -> tensor<1x2xf32>
// CHECK-NEXT:    %[[F:.*]] = nn.reshape %[[BACK]] shape = [1, 32] : tensor<1x4x4x2xf32> -> tensor<1x32xf32>
// CHECK-NEXT:    func.return %[[V]], %[[F]]
func.func @reshape_boundaries(%x: tensor<1x4x4x2xf32>) -> (tensor<1x2xf32>, tensor<1x32xf32>) {
  %m = nn.max_pool2d %x kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %g = nn.reduce %m kind = "mean" axes = [1, 2] keepdims = true : tensor<1x4x4x2xf32> -> tensor<1x1x1x2xf32>
  %v = nn.reshape %g shape = [1, 2] : tensor<1x1x1x2xf32> -> tensor<1x2xf32>
  %f = nn.reshape %m shape = [1, 32] : tensor<1x4x4x2xf32> -> tensor<1x32xf32>
  func.return %v, %f : tensor<1x2xf32>, tensor<1x32xf32>
}

// -----

// Must not move: batch_matmul reads the last two dims as matrices, so it gets its NHWC
// operand back and its result is transposed again for the next NCHW op.
// CHECK-LABEL: func.func @not_understood
// CHECK:         %[[M:.*]] = nn.max_pool2d %{{.*}} layout = "NCHW"
// CHECK-NEXT:    %[[MT:.*]] = nn.transpose %[[M]] perm = [0, 2, 3, 1]
// CHECK-NEXT:    %[[P:.*]] = nn.batch_matmul %[[MT]], %{{.*}} adj_y = true : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %[[PT:.*]] = nn.transpose %[[P]] perm = [0, 3, 1, 2]
// CHECK-NEXT:    nn.avg_pool2d %[[PT]] kernel = [1, 1] layout = "NCHW"
func.func @not_understood(%x: tensor<1x4x4x2xf32>, %y: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %m = nn.max_pool2d %x kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  %p = nn.batch_matmul %m, %y adj_y = true : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x4xf32>
  %a = nn.avg_pool2d %p kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xf32>
  %s = nn.slice %a begin = [0, 0, 0, 0] end = [1, 4, 4, 2] strides = [1, 1, 1, 1] : tensor<1x4x4x4xf32> -> tensor<1x4x4x2xf32>
  func.return %s : tensor<1x4x4x2xf32>
}

// -----

// The input transpose moves up to the argument through the single-use ops before the
// first converted one.
// CHECK-LABEL: func.func @input_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x3xf32>)
// CHECK-NEXT:    %[[XT:.*]] = nn.transpose %[[X]] perm = [0, 3, 1, 2] : tensor<1x4x4x3xf32> -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %[[P:.*]] = nn.pad %[[XT]] pads = [0, 0, 0, 0, 0, 1, 0, 1] : tensor<1x3x4x4xf32> -> tensor<1x3x5x5xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[P]]
// CHECK-NEXT:    nn.max_pool2d %[[R]] kernel = [3, 3] strides = [2, 2] layout = "NCHW"
// NOSIG-LABEL: func.func @input_chain
// NOSIG-SAME:    (%[[X:.*]]: tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32>
// NOSIG-NEXT:    nn.pad %[[X]] pads = [0, 0, 0, 0, 0, 1, 0, 1]
// NOSIG-NOT:     nn.transpose
// NOSIG:         func.return
func.func @input_chain(%x: tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32> {
  %p = nn.pad %x pads = [0, 0, 0, 1, 0, 1, 0, 0] : tensor<1x4x4x3xf32> -> tensor<1x5x5x3xf32>
  %r = nn.relu %p : tensor<1x5x5x3xf32> -> tensor<1x5x5x3xf32>
  %m = nn.max_pool2d %r kernel = [3, 3] strides = [2, 2] layout = "NHWC" : tensor<1x5x5x3xf32> -> tensor<1x2x2x3xf32>
  func.return %m : tensor<1x2x2x3xf32>
}

// -----

// A chain op that broadcasts its input to a higher rank (broadcast_to, or an add with a
// lower-rank argument) stops the hoisting: the rank-4 transpose stays after it (the
// differential fuzzer's seed 200290 crashed here).
// CHECK-LABEL: func.func @broadcast_input_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<3x1x2xf32>, %[[Y:.*]]: tensor<3x2xf32>)
// CHECK-NEXT:    %[[B:.*]] = nn.broadcast_to %[[X]] shape = [2, 3, 3, 2] : tensor<3x1x2xf32> -> tensor<2x3x3x2xf32>
// CHECK-NEXT:    %[[BT:.*]] = nn.transpose %[[B]] perm = [0, 3, 1, 2] : tensor<2x3x3x2xf32> -> tensor<2x2x3x3xf32>
// CHECK:         nn.conv2d %[[BT]], %{{.*}} layout = "NCHW"
// CHECK:         %[[A:.*]] = nn.add %[[Y]], %{{.*}} : tensor<3x2xf32>, tensor<1x3x3x2xf32> -> tensor<1x3x3x2xf32>
// CHECK-NEXT:    %[[AT:.*]] = nn.transpose %[[A]] perm = [0, 3, 1, 2] : tensor<1x3x3x2xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    nn.max_pool2d %[[AT]] kernel = [1, 1] layout = "NCHW"
// NOSIG-LABEL: func.func @broadcast_input_chain
// NOSIG-SAME:    (%{{.*}}: tensor<3x1x2xf32>, %{{.*}}: tensor<3x2xf32>) -> (tensor<2x2x3x3xf32>, tensor<1x2x3x3xf32>)
// NOSIG-COUNT-2: nn.transpose
// NOSIG-NOT:     nn.transpose
// NOSIG:         func.return
func.func @broadcast_input_chain(%x: tensor<3x1x2xf32>, %y: tensor<3x2xf32>) -> (tensor<2x3x3x2xf32>, tensor<1x3x3x2xf32>) {
  %b = nn.broadcast_to %x shape = [2, 3, 3, 2] : tensor<3x1x2xf32> -> tensor<2x3x3x2xf32>
  %w = nn.constant dense<0.5> : tensor<2x1x1x2xf32> -> tensor<2x1x1x2xf32>
  %c = nn.conv2d %b, %w layout = "NHWC" : tensor<2x3x3x2xf32>, tensor<2x1x1x2xf32> -> tensor<2x3x3x2xf32>
  %k = nn.constant dense<1.5> : tensor<1x3x3x2xf32> -> tensor<1x3x3x2xf32>
  %a = nn.add %y, %k : tensor<3x2xf32>, tensor<1x3x3x2xf32> -> tensor<1x3x3x2xf32>
  %m = nn.max_pool2d %a kernel = [1, 1] layout = "NHWC" : tensor<1x3x3x2xf32> -> tensor<1x3x3x2xf32>
  func.return %c, %m : tensor<2x3x3x2xf32>, tensor<1x3x3x2xf32>
}

// -----

// ---- Quantized graphs ----------------------------------------------------------------------

// A per-channel quantized filter keeps its output-channel dimension 0 (OHWI -> OIHW);
// data movement on quantized tensors keeps the element types.
// CHECK-LABEL: func.func @quantized
// CHECK-DAG:     %[[W:.*]] = nn.constant dense<{{\[\[\[\[}}1]], {{\[\[}}2]]], {{\[\[\[}}3]], {{\[\[}}4]]], {{\[\[\[}}5]], {{\[\[}}6]]]]> : tensor<3x2x1x1xi8> -> tensor<3x2x1x1x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>>
// CHECK-DAG:     %[[XT:.*]] = nn.transpose %{{.*}} perm = [0, 3, 1, 2] : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK:         %[[Y:.*]] = nn.conv2d %[[XT]], %[[W]], %{{.*}} layout = "NCHW"
// CHECK-SAME:      -> tensor<1x3x4x4x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:    %[[C:.*]] = nn.concat %[[Y]], %[[Y]] axis = 1
// CHECK-SAME:      -> tensor<1x6x4x4x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:    %[[S:.*]] = nn.slice %[[C]] begin = [0, 1, 0, 0] end = [1, 4, 4, 4] strides = [1, 1, 1, 1]
// CHECK-NEXT:    %[[P:.*]] = nn.max_pool2d %[[S]] kernel = [2, 2] strides = [2, 2] layout = "NCHW"
// CHECK-NEXT:    %[[O:.*]] = nn.transpose %[[P]] perm = [0, 2, 3, 1] : tensor<1x3x2x2x!quant.uniform<i8:f32, 0.25:3>> -> tensor<1x2x2x3x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:    func.return %[[O]]
func.func @quantized(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x2x2x3x!quant.uniform<i8:f32, 0.25:3>> {
  %w = nn.constant dense<[[[[1, 2]]], [[[3, 4]]], [[[5, 6]]]]> : tensor<3x1x1x2xi8> -> tensor<3x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>>
  %b = nn.constant dense<[1, 2, 3]> : tensor<3xi32> -> tensor<3x!quant.uniform<i32:f32:0, {0.05, 0.1, 0.15}>>
  %y = nn.conv2d %x, %w, %b layout = "NHWC" : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>, tensor<3x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>>, tensor<3x!quant.uniform<i32:f32:0, {0.05, 0.1, 0.15}>> -> tensor<1x4x4x3x!quant.uniform<i8:f32, 0.25:3>>
  %c = nn.concat %y, %y axis = 3 : tensor<1x4x4x3x!quant.uniform<i8:f32, 0.25:3>>, tensor<1x4x4x3x!quant.uniform<i8:f32, 0.25:3>> -> tensor<1x4x4x6x!quant.uniform<i8:f32, 0.25:3>>
  %s = nn.slice %c begin = [0, 0, 0, 1] end = [1, 4, 4, 4] strides = [1, 1, 1, 1] : tensor<1x4x4x6x!quant.uniform<i8:f32, 0.25:3>> -> tensor<1x4x4x3x!quant.uniform<i8:f32, 0.25:3>>
  %p = nn.max_pool2d %s kernel = [2, 2] strides = [2, 2] layout = "NHWC" : tensor<1x4x4x3x!quant.uniform<i8:f32, 0.25:3>> -> tensor<1x2x2x3x!quant.uniform<i8:f32, 0.25:3>>
  func.return %p : tensor<1x2x2x3x!quant.uniform<i8:f32, 0.25:3>>
}

// -----

// conv2d_transpose quantizes its filter along O: dimension 0 in OHWI moves to 1 in IOHW.
// CHECK-LABEL: func.func @quantized_conv_transpose
// CHECK:         %[[WT:.*]] = nn.transpose %{{.*}} perm = [3, 0, 1, 2]
// CHECK-SAME:      : tensor<3x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>> -> tensor<2x3x1x1x!quant.uniform<i8:f32:1, {0.1, 0.2, 0.3}>>
// CHECK:         nn.conv2d_transpose %{{.*}}, %[[WT]] layout = "NCHW"
// NHWC-LABEL:  func.func @quantized_conv_transpose
// NHWC:          nn.conv2d_transpose %{{.*}}, %{{.*}} layout = "NHWC"
func.func @quantized_conv_transpose(%x: tensor<1x2x2x2x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>>) -> tensor<1x2x2x3x!quant.uniform<i8:f32, 0.25>> {
  %y = nn.conv2d_transpose %x, %w layout = "NHWC" : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.5>>, tensor<3x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>> -> tensor<1x2x2x3x!quant.uniform<i8:f32, 0.25>>
  func.return %y : tensor<1x2x2x3x!quant.uniform<i8:f32, 0.25>>
}

// -----

// Must not fire: IOHW quantizes only the C_out / groups filter outputs, so a grouped
// conv2d_transpose with a different scale per group cannot be expressed in NCHW.
// CHECK-LABEL: func.func @grouped_per_axis_stays
// CHECK-NOT:     nn.transpose
// CHECK:         nn.conv2d_transpose %{{.*}}, %{{.*}} groups = 2 layout = "NHWC"
func.func @grouped_per_axis_stays(%x: tensor<1x2x2x4x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x2x4x!quant.uniform<i8:f32, 0.25>> {
  %w = nn.constant dense<1> : tensor<4x1x1x2xi8> -> tensor<4x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3, 0.4}>>
  %y = nn.conv2d_transpose %x, %w groups = 2 layout = "NHWC" : tensor<1x2x2x4x!quant.uniform<i8:f32, 0.5>>, tensor<4x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3, 0.4}>> -> tensor<1x2x2x4x!quant.uniform<i8:f32, 0.25>>
  func.return %y : tensor<1x2x2x4x!quant.uniform<i8:f32, 0.25>>
}

// -----

// ---- NCHW models (ONNX) to NHWC ------------------------------------------------------------

// CHECK-LABEL: func.func @nchw_model
// CHECK-NOT:     nn.transpose
// CHECK:         func.return
// The [C, 1, 1] bias argument of NCHW data becomes [1, 1, C] (a reshape), and the result
// of the global average is [1, 2] in both layouts.
// NHWC-LABEL:  func.func @nchw_model
// NHWC-SAME:     (%[[X:.*]]: tensor<1x2x4x4xf32>, %[[BIAS:.*]]: tensor<2x1x1xf32>, %[[S:.*]]: tensor<2xf32>)
// NHWC-DAG:      %[[XT:.*]] = nn.transpose %[[X]] perm = [0, 2, 3, 1] : tensor<1x2x4x4xf32> -> tensor<1x4x4x2xf32>
// NHWC-DAG:      %[[W:.*]] = nn.constant dense<1.000000e+00> : tensor<2x1x1x2xf32>
// NHWC:          %[[C:.*]] = nn.conv2d %[[XT]], %[[W]] layout = "NHWC"
// NHWC-NEXT:     %[[B:.*]] = nn.batch_norm %[[C]], %[[S]], %[[S]], %[[S]], %[[S]] layout = "NHWC"
// NHWC-NEXT:     %[[BR:.*]] = nn.reshape %[[BIAS]] shape = [1, 1, 2] : tensor<2x1x1xf32> -> tensor<1x1x2xf32>
// NHWC-NEXT:     %[[A:.*]] = nn.add %[[B]], %[[BR]]
// NHWC-NEXT:     %[[G:.*]] = nn.reduce %[[A]] kind = "mean" axes = [1, 2] keepdims = true : tensor<1x4x4x2xf32> -> tensor<1x1x1x2xf32>
// NHWC-NEXT:     %[[V:.*]] = nn.reshape %[[G]] shape = [1, 2]
// NHWC-NEXT:     func.return %[[V]] : tensor<1x2xf32>
func.func @nchw_model(%x: tensor<1x2x4x4xf32>, %bias: tensor<2x1x1xf32>, %s: tensor<2xf32>) -> tensor<1x2xf32> {
  %w = nn.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = nn.conv2d %x, %w layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32>
  %b = nn.batch_norm %c, %s, %s, %s, %s layout = "NCHW" : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  %a = nn.add %b, %bias : tensor<1x2x4x4xf32>, tensor<2x1x1xf32> -> tensor<1x2x4x4xf32>
  %g = nn.reduce %a kind = "mean" axes = [2, 3] keepdims = true : tensor<1x2x4x4xf32> -> tensor<1x2x1x1xf32>
  %v = nn.reshape %g shape = [1, 2] : tensor<1x2x1x1xf32> -> tensor<1x2xf32>
  func.return %v : tensor<1x2xf32>
}

// -----

// ---- Delegate regions ----------------------------------------------------------------------

// With targets=npu only the "npu" regions convert; their transposes sit inside each region
// at its captures and yield, so every region keeps the model's layout in its signature.
// The pair inside one region cancels; pairs across region boundaries (even between two
// adjacent npu regions) stay, as ops never move between regions.
// TARGET-LABEL: func.func @regions
// TARGET:        %[[R:.*]] = delegate.region "npu" (%[[A:.*]] = %{{.*}} : tensor<1x4x4x2xf32>, %[[B:.*]] = %{{.*}} : tensor<2x1x1x2xf32>) -> (tensor<1x4x4x2xf32>) {
// TARGET-DAG:      %[[W:.*]] = nn.reshape %[[B]] shape = [2, 2, 1, 1]
// TARGET-DAG:      %[[AT:.*]] = nn.transpose %[[A]] perm = [0, 3, 1, 2]
// TARGET:          %[[C:.*]] = nn.conv2d %[[AT]], %[[W]] layout = "NCHW"
// TARGET-NEXT:     %[[E:.*]] = nn.relu %[[C]] : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
// TARGET-NEXT:     %[[ET:.*]] = nn.transpose %[[E]] perm = [0, 2, 3, 1]
// TARGET-NEXT:     delegate.yield %[[ET]] : tensor<1x4x4x2xf32>
// TARGET:        %[[S:.*]] = delegate.region "cpu" (%[[A2:.*]] = %[[R]] : tensor<1x4x4x2xf32>)
// TARGET-NEXT:     nn.max_pool2d %[[A2]] kernel = [1, 1] layout = "NHWC"
// TARGET:        delegate.region "npu" (%[[A3:.*]] = %[[S]] : tensor<1x4x4x2xf32>)
// TARGET-NEXT:     %[[T3:.*]] = nn.transpose %[[A3]] perm = [0, 3, 1, 2]
// TARGET-NEXT:     %[[M3:.*]] = nn.max_pool2d %[[T3]] kernel = [1, 1] layout = "NCHW"
// TARGET-NEXT:     %[[O3:.*]] = nn.transpose %[[M3]] perm = [0, 2, 3, 1]
// TARGET-NEXT:     delegate.yield %[[O3]]
// TARGET:        delegate.region "npu"
// TARGET-NEXT:     nn.transpose %{{.*}} perm = [0, 3, 1, 2]
// TARGET-NEXT:     nn.avg_pool2d %{{.*}} kernel = [1, 1] layout = "NCHW"
// TARGET-NEXT:     nn.transpose %{{.*}} perm = [0, 2, 3, 1]
// TARGET-NEXT:     delegate.yield
// Whole-graph conversion converts inside every region, at each region's boundary.
// CHECK-LABEL: func.func @regions
// CHECK:         delegate.region "cpu"
// CHECK-NEXT:      nn.transpose %{{.*}} perm = [0, 3, 1, 2]
// CHECK-NEXT:      nn.max_pool2d %{{.*}} kernel = [1, 1] layout = "NCHW"
func.func @regions(%x: tensor<1x4x4x2xf32>, %w: tensor<2x1x1x2xf32>) -> tensor<1x4x4x2xf32> {
  %r = delegate.region "npu" (%a = %x : tensor<1x4x4x2xf32>, %b = %w : tensor<2x1x1x2xf32>) -> (tensor<1x4x4x2xf32>) {
    %c = nn.conv2d %a, %b layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
    %e = nn.relu %c : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    delegate.yield %e : tensor<1x4x4x2xf32>
  }
  %s = delegate.region "cpu" (%a = %r : tensor<1x4x4x2xf32>) -> (tensor<1x4x4x2xf32>) {
    %m = nn.max_pool2d %a kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    delegate.yield %m : tensor<1x4x4x2xf32>
  }
  %t = delegate.region "npu" (%a = %s : tensor<1x4x4x2xf32>) -> (tensor<1x4x4x2xf32>) {
    %m = nn.max_pool2d %a kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    delegate.yield %m : tensor<1x4x4x2xf32>
  }
  %u = delegate.region "npu" (%a = %t : tensor<1x4x4x2xf32>) -> (tensor<1x4x4x2xf32>) {
    %m = nn.avg_pool2d %a kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    delegate.yield %m : tensor<1x4x4x2xf32>
  }
  func.return %u : tensor<1x4x4x2xf32>
}

// -----

// ---- Errors --------------------------------------------------------------------------------

// keep-signature=false cannot change a function that a call refers to; with the default
// keep-signature=true the function converts inside and keeps its signature.
// CHECK-LABEL: func.func @callee
// CHECK-SAME:    (%{{.*}}: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK:         nn.max_pool2d %{{.*}} kernel = [1, 1] layout = "NCHW"
// expected-error @+1 {{keep-signature=false cannot change the signature of '@callee': 'func.call' refers to it}}
func.func @callee(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %m = nn.max_pool2d %x kernel = [1, 1] layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  func.return %m : tensor<1x4x4x2xf32>
}
func.func @caller(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %y = func.call @callee(%x) : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  func.return %y : tensor<1x4x4x2xf32>
}
