// RUN: irc-opt %s --split-input-file --verify-diagnostics -p insert-qdq | filecheck %s --check-prefixes=CHECK,EMU
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'insert-qdq{emulate-rounding=false}' \
// RUN:   | filecheck %s --check-prefixes=CHECK,NOEMU
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'insert-qdq{targets=opencl}' \
// RUN:   | filecheck %s --check-prefix=OCL

// Per-channel conv2d with constant weights: the int8 filter (scales 0.5, 0.25) and the i32
// bias (real value bias * s_in * s_w = [10 * 0.25, -20 * 0.125]) become float constants and
// the quantized ones are erased; relu6 stays on the float conv. Without targets nothing
// outside a delegate.region changes.
// CHECK-LABEL: func.func @conv2d_per_channel
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK-NOT:     quant.uniform<i8:f32:0
// CHECK:         %[[XF:.*]] = quant.dcast %[[X]] : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x4x4x2xf32>
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[\[\[\[}}5.000000e-01, -1.000000e+00]]], {{\[\[\[}}7.500000e-01, 1.000000e+00]]]]> : tensor<2x1x1x2xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[2.500000e+00, -2.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.conv2d %[[XF]], %[[W]], %[[B]] layout = "NHWC" activation = "relu6" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2xf32> -> tensor<1x4x4x2xf32>
// CHECK-NEXT:    %[[Q:.*]] = quant.qcast %[[Y]] : tensor<1x4x4x2xf32> to tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
// CHECK-NEXT:    func.return %[[Q]]
// OCL-LABEL:   func.func @conv2d_per_channel
// OCL-NOT:       quant.dcast
// OCL:           nn.conv2d %{{.*}} : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>
func.func @conv2d_per_channel(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>> {
  %w = nn.constant dense<[[[[1, -2]]], [[[3, 4]]]]> : tensor<2x1x1x2xi8> -> tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.5, 0.25}>>
  %b = nn.constant dense<[10, -20]> : tensor<2xi32> -> tensor<2x!quant.uniform<i32:f32:0, {0.25, 0.125}>>
  %y = nn.conv2d %x, %w, %b layout = "NHWC" activation = "relu6" : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.5, 0.25}>>, tensor<2x!quant.uniform<i32:f32:0, {0.25, 0.125}>> -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
}

// -----

// Per-tensor uint8 weights with a zero point ((w - 128) * 0.25) and a plain i32 bias
// (scaled by s_in * s_w = 0.125).
// CHECK-LABEL: func.func @fully_connected_u8
// CHECK:         %[[XF:.*]] = quant.dcast %{{.*}} : tensor<1x2x!quant.uniform<u8:f32, 0.5:128>> to tensor<1x2xf32>
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[\[}}5.000000e-01, -2.000000e+00], [-3.200000e+01, 3.175000e+01]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[1.250000e+00, -2.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.fully_connected %[[XF]], %[[W]], %[[B]] : tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<1x2xf32>
// CHECK-NEXT:    %[[Q:.*]] = quant.qcast %[[Y]] : tensor<1x2xf32> to tensor<1x2x!quant.uniform<u8:f32, 1.0:120>>
// CHECK-NEXT:    func.return %[[Q]]
// OCL-LABEL:   func.func @fully_connected_u8
// OCL-NOT:       quant.dcast
func.func @fully_connected_u8(%x: tensor<1x2x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<1x2x!quant.uniform<u8:f32, 1.0:120>> {
  %w = nn.constant dense<[[130, 120], [0, 255]]> : tensor<2x2xui8> -> tensor<2x2x!quant.uniform<u8:f32, 0.25:128>>
  %b = nn.constant dense<[10, -20]> : tensor<2xi32>
  %y = nn.fully_connected %x, %w, %b : tensor<1x2x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x2x!quant.uniform<u8:f32, 0.25:128>>, tensor<2xi32> -> tensor<1x2x!quant.uniform<u8:f32, 1.0:120>>
  func.return %y : tensor<1x2x!quant.uniform<u8:f32, 1.0:120>>
}

// -----

// Weights and bias known only at run time: the per-axis filter is dequantized by a dcast,
// the i32 bias is given the per-channel type of its real value (s_in * s_w) by a storage
// cast, then dequantized.
// CHECK-LABEL: func.func @depthwise_runtime_weights
// CHECK-SAME:    (%[[X:.*]]: {{.*}}, %[[W:.*]]: {{.*}}, %[[B:.*]]: tensor<2xi32>)
// CHECK-NEXT:    %[[XF:.*]] = quant.dcast %[[X]] : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>> to tensor<1x4x4x2xf32>
// CHECK-NEXT:    %[[WF:.*]] = quant.dcast %[[W]] : tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.1, 0.2}>> to tensor<2x3x3x1xf32>
// CHECK-NEXT:    %[[BQ:.*]] = quant.scast %[[B]] : tensor<2xi32> to tensor<2x!quant.uniform<i32:f32:0, {0.05, 0.1}>>
// CHECK-NEXT:    %[[BF:.*]] = quant.dcast %[[BQ]] : tensor<2x!quant.uniform<i32:f32:0, {0.05, 0.1}>> to tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.conv2d %[[XF]], %[[WF]], %[[BF]] groups = 2 layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2x3x3x1xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %[[Q:.*]] = quant.qcast %[[Y]]
// CHECK-NEXT:    func.return %[[Q]]
// OCL-LABEL:   func.func @depthwise_runtime_weights
// OCL-NOT:       quant.dcast
func.func @depthwise_runtime_weights(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, %w: tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.1, 0.2}>>, %b: tensor<2xi32>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>> {
  %y = nn.conv2d %x, %w, %b groups = 2 layout = "NHWC" : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.1, 0.2}>>, tensor<2xi32> -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return %y : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>>
}

// -----

// Between two converted ops, emulate-rounding=true rounds %y onto its grid (qcast -> dcast);
// false hands the unrounded relu to the add and keeps the qcast only for the graph output.
// The dcast of %x is shared by both users.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:.*]]: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK-NEXT:    %[[XF:.*]] = quant.dcast %[[X]]
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[XF]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[Y:.*]] = quant.qcast %[[R]] : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.25:1>>
// EMU-NEXT:      %[[YF:.*]] = quant.dcast %[[Y]] : tensor<4x!quant.uniform<i8:f32, 0.25:1>> to tensor<4xf32>
// EMU-NEXT:      %[[S:.*]] = nn.add %[[YF]], %[[XF]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// NOEMU-NEXT:    %[[S:.*]] = nn.add %[[R]], %[[XF]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[Z:.*]] = quant.qcast %[[S]] : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.75:2>>
// CHECK-NEXT:    func.return %[[Y]], %[[Z]]
// OCL-LABEL:   func.func @chain
// OCL-NOT:       quant.dcast
func.func @chain(%x: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> (tensor<4x!quant.uniform<i8:f32, 0.25:1>>, tensor<4x!quant.uniform<i8:f32, 0.75:2>>) {
  %y = nn.relu %x : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<4x!quant.uniform<i8:f32, 0.25:1>>
  %z = nn.add %y, %x : tensor<4x!quant.uniform<i8:f32, 0.25:1>>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<4x!quant.uniform<i8:f32, 0.75:2>>
  func.return %y, %z : tensor<4x!quant.uniform<i8:f32, 0.25:1>>, tensor<4x!quant.uniform<i8:f32, 0.75:2>>
}

// -----

// Data movement runs on whichever side of the casts needs fewer: under emulation the concat
// of two rounded results keeps its stored integers (one dcast after it rather than two
// before); without, it takes the unrounded floats. The transpose, read only by the graph
// output, stays quantized in both modes (converting it would add a qcast).
// CHECK-LABEL: func.func @data_movement
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>>, %[[Y:.*]]: tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK-NEXT:    %[[XF:.*]] = quant.dcast %[[X]]
// CHECK-NEXT:    %[[A:.*]] = nn.relu %[[XF]]
// EMU-NEXT:      %[[AQ:.*]] = quant.qcast %[[A]]
// CHECK-NEXT:    %[[YF:.*]] = quant.dcast %[[Y]]
// CHECK-NEXT:    %[[B:.*]] = nn.relu %[[YF]]
// EMU-NEXT:      %[[BQ:.*]] = quant.qcast %[[B]]
// EMU-NEXT:      %[[CQ:.*]] = nn.concat %[[AQ]], %[[BQ]] axis = 1 : tensor<1x2x!quant.uniform<i8:f32, 0.25:1>>, tensor<1x2x!quant.uniform<i8:f32, 0.25:1>> -> tensor<1x4x!quant.uniform<i8:f32, 0.25:1>>
// EMU-NEXT:      %[[C:.*]] = quant.dcast %[[CQ]]
// NOEMU-NEXT:    %[[C:.*]] = nn.concat %[[A]], %[[B]] axis = 1 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x4xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.relu6 %[[C]] : tensor<1x4xf32> -> tensor<1x4xf32>
// CHECK-NEXT:    %[[SQ:.*]] = quant.qcast %[[S]]
// CHECK-NEXT:    %[[T:.*]] = nn.transpose %[[X]] perm = [1, 0] : tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<2x1x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-NEXT:    func.return %[[SQ]], %[[T]]
// OCL-LABEL:   func.func @data_movement
// OCL-NOT:       quant.dcast
func.func @data_movement(%x: tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>>, %y: tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>>) -> (tensor<1x4x!quant.uniform<i8:f32, 0.25:1>>, tensor<2x1x!quant.uniform<i8:f32, 0.5:-3>>) {
  %a = nn.relu %x : tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<1x2x!quant.uniform<i8:f32, 0.25:1>>
  %b = nn.relu %y : tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<1x2x!quant.uniform<i8:f32, 0.25:1>>
  %c = nn.concat %a, %b axis = 1 : tensor<1x2x!quant.uniform<i8:f32, 0.25:1>>, tensor<1x2x!quant.uniform<i8:f32, 0.25:1>> -> tensor<1x4x!quant.uniform<i8:f32, 0.25:1>>
  %s = nn.relu6 %c : tensor<1x4x!quant.uniform<i8:f32, 0.25:1>> -> tensor<1x4x!quant.uniform<i8:f32, 0.25:1>>
  %t = nn.transpose %x perm = [1, 0] : tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<2x1x!quant.uniform<i8:f32, 0.5:-3>>
  func.return %s, %t : tensor<1x4x!quant.uniform<i8:f32, 0.25:1>>, tensor<2x1x!quant.uniform<i8:f32, 0.5:-3>>
}

// -----

// A pad of an argument converts on a tie (one dcast either way). Its value, a stored
// integer, becomes the real value (-1 - -3) * 0.5 = 1.0.
// CHECK-LABEL: func.func @pad_value_is_real
// CHECK-NEXT:    %[[XF:.*]] = quant.dcast
// CHECK-NEXT:    %[[P:.*]] = nn.pad %[[XF]] pads = [0, 0, 1, 1] value = 1.0 : tensor<1x2xf32> -> tensor<1x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.relu %[[P]]
// OCL-LABEL:   func.func @pad_value_is_real
// OCL-NOT:       quant.dcast
func.func @pad_value_is_real(%x: tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.25:1>> {
  %p = nn.pad %x pads = [0, 0, 1, 1] value = -1.0 : tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>>
  %y = nn.relu %p : tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<1x4x!quant.uniform<i8:f32, 0.25:1>>
  func.return %y : tensor<1x4x!quant.uniform<i8:f32, 0.25:1>>
}

// -----

// Quantized-only semantics (TFLite's fixed 1/256 softmax output): a float softmax, then a
// qcast onto that grid.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %[[XF:.*]] = quant.dcast
// CHECK-NEXT:    %[[Y:.*]] = nn.softmax %[[XF]] : tensor<1x10xf32> -> tensor<1x10xf32>
// CHECK-NEXT:    %[[Q:.*]] = quant.qcast %[[Y]] : tensor<1x10xf32> to tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>>
// CHECK-NEXT:    func.return %[[Q]]
// OCL-LABEL:   func.func @softmax
// OCL-NOT:       quant.dcast
func.func @softmax(%x: tensor<1x10x!quant.uniform<i8:f32, 0.1:5>>) -> tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %y = nn.softmax %x : tensor<1x10x!quant.uniform<i8:f32, 0.1:5>> -> tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %y : tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// -----

// The model records half_to_even rounding (an ONNX QDQ input): the inserted qcast uses it.
// The model's own qcast and dcast stay whatever emulate-rounding says.
// CHECK-LABEL: func.func @model_rounding
// CHECK-NEXT:    %[[Q:.*]] = quant.qcast %{{.*}} rounding = "half_to_even"
// CHECK-NEXT:    %[[QF:.*]] = quant.dcast %[[Q]]
// CHECK-NEXT:    %[[S:.*]] = nn.sigmoid %[[QF]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[Y:.*]] = quant.qcast %[[S]] rounding = "half_to_even" : tensor<4xf32> to tensor<4x!quant.uniform<u8:f32, 0.00390625>>
// CHECK-NEXT:    %[[D:.*]] = quant.dcast %[[Y]]
// CHECK-NEXT:    func.return %[[D]]
// OCL-LABEL:   func.func @model_rounding
// OCL-NEXT:      quant.qcast
// OCL-NEXT:      nn.sigmoid
func.func @model_rounding(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = quant.qcast %x rounding = "half_to_even" : tensor<4xf32> to tensor<4x!quant.uniform<u8:f32, 0.5:128>>
  %y = nn.sigmoid %q : tensor<4x!quant.uniform<u8:f32, 0.5:128>> -> tensor<4x!quant.uniform<u8:f32, 0.00390625>>
  %d = quant.dcast %y : tensor<4x!quant.uniform<u8:f32, 0.00390625>> to tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// -----

// targets=opencl converts the opencl region only, with its casts inside: the capture and
// the result keep their quantized types, the captured quantized constant is folded into a
// float constant inside the region and its capture dropped. The cpu region is untouched.
// Whole-graph mode converts both regions.
// CHECK-LABEL: func.func @regions
// CHECK-SAME:    (%[[X:.*]]: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK-NEXT:    %[[R:.*]] = delegate.region "opencl" (%[[A:.*]] = %[[X]] : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
// CHECK-NEXT:      %[[AF:.*]] = quant.dcast %[[A]]
// CHECK-NEXT:      %[[K:.*]] = nn.constant dense<[2.000000e+00, 2.500000e+00, 3.000000e+00, 3.500000e+00]> : tensor<4xf32>
// CHECK-NEXT:      %[[S:.*]] = nn.add %[[AF]], %[[K]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:      %[[SQ:.*]] = quant.qcast %[[S]] : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-NEXT:      delegate.yield %[[SQ]]
// CHECK:         delegate.region "cpu"
// CHECK-NEXT:      quant.dcast
// CHECK-NEXT:      nn.relu {{.*}} : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:      quant.qcast
// OCL-LABEL:   func.func @regions
// OCL-SAME:      (%[[X:.*]]: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>)
// OCL-NEXT:      %[[R:.*]] = delegate.region "opencl" (%[[A:.*]] = %[[X]] : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
// OCL-NEXT:        %[[AF:.*]] = quant.dcast %[[A]]
// OCL-NEXT:        %[[K:.*]] = nn.constant dense<[2.000000e+00, 2.500000e+00, 3.000000e+00, 3.500000e+00]> : tensor<4xf32>
// OCL-NEXT:        %[[S:.*]] = nn.add %[[AF]], %[[K]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// OCL-NEXT:        %[[SQ:.*]] = quant.qcast %[[S]] : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
// OCL-NEXT:        delegate.yield %[[SQ]]
// OCL-NEXT:      }
// OCL-NEXT:      delegate.region "cpu" (%{{.*}} = %[[R]] : {{.*}}) -> (tensor<4x!quant.uniform<i8:f32, 0.25:1>>) {
// OCL-NEXT:        nn.relu %{{.*}} : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<4x!quant.uniform<i8:f32, 0.25:1>>
func.func @regions(%x: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.25:1>> {
  %c = nn.constant dense<[1, 2, 3, 4]> : tensor<4xi8> -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  %r = delegate.region "opencl" (%a = %x : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, %k = %c : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
    %s = nn.add %a, %k : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
    delegate.yield %s : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  }
  %r2 = delegate.region "cpu" (%a = %r : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> (tensor<4x!quant.uniform<i8:f32, 0.25:1>>) {
    %s = nn.relu %a : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<4x!quant.uniform<i8:f32, 0.25:1>>
    delegate.yield %s : tensor<4x!quant.uniform<i8:f32, 0.25:1>>
  }
  func.return %r2 : tensor<4x!quant.uniform<i8:f32, 0.25:1>>
}

// -----

// A float graph has nothing to convert.
// CHECK-LABEL: func.func @float_graph_untouched
// CHECK-NOT:     quant.
// CHECK:         nn.conv2d %{{.*}} : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
// CHECK-NOT:     quant.
// CHECK:         func.return
// OCL-LABEL:   func.func @float_graph_untouched
// OCL-NOT:       quant.
func.func @float_graph_untouched(%x: tensor<1x4x4x2xf32>, %w: tensor<2x1x1x2xf32>) -> tensor<1x4x4x2xf32> {
  %y = nn.conv2d %x, %w layout = "NHWC" activation = "relu" : tensor<1x4x4x2xf32>, tensor<2x1x1x2xf32> -> tensor<1x4x4x2xf32>
  %z = nn.softmax %y : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
  func.return %z : tensor<1x4x4x2xf32>
}

// -----

// Refused: float32 cannot hold every 32-bit quantized value. (The failing ops sit in an
// opencl region so that every RUN line reaches them.)
func.func @i32_activation(%x: tensor<4x!quant.uniform<i32:f32, 0.5>>) -> tensor<4x!quant.uniform<i32:f32, 0.5>> {
  %r = delegate.region "opencl" (%a = %x : tensor<4x!quant.uniform<i32:f32, 0.5>>) -> (tensor<4x!quant.uniform<i32:f32, 0.5>>) {
    // expected-error @+1 {{insert-qdq: 32-bit quantized values do not fit a float computation exactly, got !quant.uniform<i32:f32, 0.5>}}
    %s = nn.relu %a : tensor<4x!quant.uniform<i32:f32, 0.5>> -> tensor<4x!quant.uniform<i32:f32, 0.5>>
    delegate.yield %s : tensor<4x!quant.uniform<i32:f32, 0.5>>
  }
  func.return %r : tensor<4x!quant.uniform<i32:f32, 0.5>>
}

// -----

// Refused: one float op cannot compute in both f16 and f32.
func.func @mixed_expressed_types(%x: tensor<4x!quant.uniform<i8:f16, 0.5>>, %y: tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>> {
  %r = delegate.region "opencl" (%a = %x : tensor<4x!quant.uniform<i8:f16, 0.5>>, %b = %y : tensor<4x!quant.uniform<i8:f32, 0.5>>) -> (tensor<4x!quant.uniform<i8:f32, 0.5>>) {
    // expected-error @+1 {{insert-qdq: quantized values express different float types (f16, f32)}}
    %s = nn.add %a, %b : tensor<4x!quant.uniform<i8:f16, 0.5>>, tensor<4x!quant.uniform<i8:f32, 0.5>> -> tensor<4x!quant.uniform<i8:f32, 0.5>>
    delegate.yield %s : tensor<4x!quant.uniform<i8:f32, 0.5>>
  }
  func.return %r : tensor<4x!quant.uniform<i8:f32, 0.5>>
}

// -----

// Refused: a per-axis quantized input has no single scale to give the integer bias.
func.func @bias_needs_per_tensor_input(%x: tensor<1x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>, %w: tensor<2x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x!quant.uniform<i8:f32, 1.0>> {
  %r = delegate.region "opencl" (%a = %x : tensor<1x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>, %k = %w : tensor<2x2x!quant.uniform<i8:f32, 0.5>>) -> (tensor<1x2x!quant.uniform<i8:f32, 1.0>>) {
    %b = nn.constant dense<[1, 2]> : tensor<2xi32>
    // expected-error @+1 {{insert-qdq: an integer bias needs a per-tensor quantized input, got !quant.uniform<i8:f32:1, {0.5, 0.25}>}}
    %s = nn.fully_connected %a, %k, %b : tensor<1x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>, tensor<2x2x!quant.uniform<i8:f32, 0.5>>, tensor<2xi32> -> tensor<1x2x!quant.uniform<i8:f32, 1.0>>
    delegate.yield %s : tensor<1x2x!quant.uniform<i8:f32, 1.0>>
  }
  func.return %r : tensor<1x2x!quant.uniform<i8:f32, 1.0>>
}
