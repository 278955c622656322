// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-quantized | filecheck %s

// Per-channel conv2d: the input enters i32 with its zero point subtracted, the constant
// filter (zero points 0) becomes a plain i8 constant (the quantized one is erased), the i32
// bias passes through, one rescale per output channel (axis 3 of NHWC), then relu6 clamps
// the stored integers (zp 5 + 6 / 0.25).
// CHECK-LABEL: func.func @conv2d_per_channel
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK-NOT:     quant.uniform<i8:f32:0
// CHECK:         %[[B:.*]] = nn.constant dense<[10, -20]> : tensor<2xi32>
// CHECK:         %[[XS:.*]] = quant.scast %[[X]] : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x4x4x2xi8>
// CHECK-NEXT:    %[[XW:.*]] = nn.cast %[[XS]] : tensor<1x4x4x2xi8> -> tensor<1x4x4x2xi32>
// CHECK-NEXT:    %[[ZP:.*]] = nn.constant dense<-3> : tensor<i32>
// CHECK-NEXT:    %[[XC:.*]] = nn.sub %[[XW]], %[[ZP]] : tensor<1x4x4x2xi32>, tensor<i32> -> tensor<1x4x4x2xi32>
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[\[\[\[}}1, -2]]], {{\[\[\[}}3, 4]]]]> : tensor<2x1x1x2xi8>
// CHECK-NEXT:    %[[ACC:.*]] = nn.conv2d %[[XC]], %[[W]], %[[B]] layout = "NHWC" : tensor<1x4x4x2xi32>, tensor<2x1x1x2xi8>, tensor<2xi32> -> tensor<1x4x4x2xi32>
// CHECK-NEXT:    %[[Y:.*]] = quant.rescale %[[ACC]] multiplier = [1717986918, 1717986918] shift = [-2, -1] axis = 3 : tensor<1x4x4x2xi32> to tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
// CHECK-NEXT:    %[[YS:.*]] = quant.scast %[[Y]] : {{.*}} to tensor<1x4x4x2xi8>
// CHECK-NEXT:    %[[YC:.*]] = nn.clip %[[YS]] min = 5.0 max = 29.0 : tensor<1x4x4x2xi8> -> tensor<1x4x4x2xi8>
// CHECK-NEXT:    %[[R:.*]] = quant.scast %[[YC]] : tensor<1x4x4x2xi8> to tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
// CHECK-NEXT:    func.return %[[R]]
func.func @conv2d_per_channel(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>> {
  %w = nn.constant dense<[[[[1, -2]]], [[[3, 4]]]]> : tensor<2x1x1x2xi8> -> tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2}>>
  %b = nn.constant dense<[10, -20]> : tensor<2xi32>
  %y = nn.conv2d %x, %w, %b layout = "NHWC" activation = "relu6" : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1, 0.2}>>, tensor<2xi32> -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
}

// -----

// Depthwise (groups = C) with zero zero points: i8 x i8 accumulates exactly into i32, no
// widening; the filter is an argument, so it is storage-cast at run time.
// CHECK-LABEL: func.func @depthwise
// CHECK-SAME:    (%[[X:.*]]: {{.*}}, %[[W:.*]]: {{.*}})
// CHECK-NEXT:    %[[XS:.*]] = quant.scast %[[X]] : {{.*}} to tensor<1x4x4x2xi8>
// CHECK-NEXT:    %[[WS:.*]] = quant.scast %[[W]] : {{.*}} to tensor<2x3x3x1xi8>
// CHECK-NEXT:    %[[ACC:.*]] = nn.conv2d %[[XS]], %[[WS]] groups = 2 layout = "NHWC" : tensor<1x4x4x2xi8>, tensor<2x3x3x1xi8> -> tensor<1x2x2x2xi32>
// CHECK-NEXT:    %[[Y:.*]] = quant.rescale %[[ACC]] multiplier = [1717986918, 1717986918] shift = [-2, -1] axis = 3
// CHECK-NEXT:    func.return %[[Y]]
func.func @depthwise(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, %w: tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.1, 0.2}>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>> {
  %y = nn.conv2d %x, %w groups = 2 layout = "NHWC" : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x3x3x1x!quant.uniform<i8:f32:0, {0.1, 0.2}>> -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>>
  func.return %y : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.25:5>>
}

// -----

// uint8 weights with a zero point: folded at compile time into an i16 constant (w - 128).
// CHECK-LABEL: func.func @fully_connected_u8
// CHECK:         %[[XC:.*]] = nn.sub %{{.*}}, %{{.*}} : tensor<1x4xi32>, tensor<i32> -> tensor<1x4xi32>
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[\[}}2, -8, 0, -1], [-128, 127, -127, -126]]> : tensor<2x4xi16>
// CHECK-NEXT:    %[[ACC:.*]] = nn.fully_connected %[[XC]], %[[W]] : tensor<1x4xi32>, tensor<2x4xi16> -> tensor<1x2xi32>
// CHECK-NEXT:    %[[Y:.*]] = quant.rescale %[[ACC]] multiplier = [1073741824] shift = [-3] : tensor<1x2xi32> to tensor<1x2x!quant.uniform<u8:f32, 1.0:120>>
// CHECK-NEXT:    func.return %[[Y]]
func.func @fully_connected_u8(%x: tensor<1x4x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<1x2x!quant.uniform<u8:f32, 1.0:120>> {
  %w = nn.constant dense<[[130, 120, 128, 127], [0, 255, 1, 2]]> : tensor<2x4xui8> -> tensor<2x4x!quant.uniform<u8:f32, 0.125:128>>
  %y = nn.fully_connected %x, %w : tensor<1x4x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x4x!quant.uniform<u8:f32, 0.125:128>> -> tensor<1x2x!quant.uniform<u8:f32, 1.0:120>>
  func.return %y : tensor<1x2x!quant.uniform<u8:f32, 1.0:120>>
}

// -----

// TFLite's 8-bit ADD: (x - zp) << 20, rescaled by s / (2 max(s_a, s_b)), summed in i32,
// rescaled by 2 max / (2^20 s_out) into the result, relu clamps at the zero point 2.
// CHECK-LABEL: func.func @add
// CHECK-SAME:    (%[[A:.*]]: {{.*}}, %[[B:.*]]: {{.*}})
// CHECK:         %[[AS:.*]] = quant.scast %[[A]]
// CHECK:         %[[SHIFT:.*]] = nn.constant dense<1048576> : tensor<i32>
// CHECK-NEXT:    %[[AL:.*]] = nn.mul %{{.*}}, %[[SHIFT]] : tensor<4xi32>, tensor<i32> -> tensor<4xi32>
// CHECK-NEXT:    %[[AR:.*]] = quant.rescale %[[AL]] multiplier = [1073741824] shift = [0] : tensor<4xi32> to tensor<4xi32>
// CHECK-NEXT:    %[[BS:.*]] = quant.scast %[[B]]
// CHECK-NEXT:    %[[BW:.*]] = nn.cast %[[BS]]
// CHECK-NEXT:    %[[SHIFT2:.*]] = nn.constant dense<1048576> : tensor<i32>
// CHECK-NEXT:    %[[BL:.*]] = nn.mul %[[BW]], %[[SHIFT2]]
// CHECK-NEXT:    %[[BR:.*]] = quant.rescale %[[BL]] multiplier = [1073741824] shift = [-1] : tensor<4xi32> to tensor<4xi32>
// CHECK-NEXT:    %[[SUM:.*]] = nn.add %[[AR]], %[[BR]] : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT:    %[[Y:.*]] = quant.rescale %[[SUM]] multiplier = [1431655765] shift = [-19] : tensor<4xi32> to tensor<4x!quant.uniform<i8:f32, 0.75:2>>
// CHECK-NEXT:    %[[YS:.*]] = quant.scast %[[Y]]
// CHECK-NEXT:    %[[YC:.*]] = nn.clip %[[YS]] min = 2.0 max = 127.0
// CHECK-NEXT:    %[[R:.*]] = quant.scast %[[YC]]
// CHECK-NEXT:    func.return %[[R]]
func.func @add(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<4x!quant.uniform<i8:f32, 0.25>>) -> tensor<4x!quant.uniform<i8:f32, 0.75:2>> {
  %y = nn.add %a, %b activation = "relu" : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x!quant.uniform<i8:f32, 0.25>> -> tensor<4x!quant.uniform<i8:f32, 0.75:2>>
  func.return %y : tensor<4x!quant.uniform<i8:f32, 0.75:2>>
}

// -----

// MUL: (a - zp_a) * (b - zp_b) in i32, one rescale by s_a * s_b / s_out.
// CHECK-LABEL: func.func @mul
// CHECK:         %[[AC:.*]] = nn.sub %{{.*}}, %{{.*}} : tensor<4xi32>, tensor<i32> -> tensor<4xi32>
// CHECK:         %[[BW:.*]] = nn.cast %{{.*}} : tensor<4xi8> -> tensor<4xi32>
// CHECK-NEXT:    %[[P:.*]] = nn.mul %[[AC]], %[[BW]] : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT:    %[[Y:.*]] = quant.rescale %[[P]] multiplier = [1431655765] shift = [-2] : tensor<4xi32> to tensor<4x!quant.uniform<i8:f32, 0.75:2>>
// CHECK-NEXT:    func.return %[[Y]]
func.func @mul(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<4x!quant.uniform<i8:f32, 0.25>>) -> tensor<4x!quant.uniform<i8:f32, 0.75:2>> {
  %y = nn.mul %a, %b : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x!quant.uniform<i8:f32, 0.25>> -> tensor<4x!quant.uniform<i8:f32, 0.75:2>>
  func.return %y : tensor<4x!quant.uniform<i8:f32, 0.75:2>>
}

// -----

// Average pooling works on the stored integers (same parameters in and out).
// CHECK-LABEL: func.func @avg_pool
// CHECK-SAME:    (%[[X:.*]]: {{.*}})
// CHECK-NEXT:    %[[XS:.*]] = quant.scast %[[X]] : {{.*}} to tensor<1x4x4x2xi8>
// CHECK-NEXT:    %[[P:.*]] = nn.avg_pool2d %[[XS]] kernel = [2, 2] strides = [2, 2] layout = "NHWC" : tensor<1x4x4x2xi8> -> tensor<1x2x2x2xi8>
// CHECK-NEXT:    %[[C:.*]] = nn.clip %[[P]] min = -3.0 max = 127.0
// CHECK-NEXT:    %[[Y:.*]] = quant.scast %[[C]] : tensor<1x2x2x2xi8> to tensor<1x2x2x2x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-NEXT:    func.return %[[Y]]
func.func @avg_pool(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.5:-3>> {
  %y = nn.avg_pool2d %x kernel = [2, 2] strides = [2, 2] layout = "NHWC" activation = "relu" : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<1x2x2x2x!quant.uniform<i8:f32, 0.5:-3>>
  func.return %y : tensor<1x2x2x2x!quant.uniform<i8:f32, 0.5:-3>>
}

// -----

// Concat: only the input quantized differently from the result is requantized.
// CHECK-LABEL: func.func @concat
// CHECK-SAME:    (%[[A:.*]]: {{.*}}, %[[B:.*]]: {{.*}})
// CHECK-NEXT:    %[[AR:.*]] = quant.rescale %[[A]] multiplier = [1073741824] shift = [2] rounding = "single_round" : tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x2x!quant.uniform<i8:f32, 0.25:1>>
// CHECK-NEXT:    %[[Y:.*]] = nn.concat %[[AR]], %[[B]] axis = 1
// CHECK-NEXT:    func.return %[[Y]]
func.func @concat(%a: tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>>, %b: tensor<1x3x!quant.uniform<i8:f32, 0.25:1>>) -> tensor<1x5x!quant.uniform<i8:f32, 0.25:1>> {
  %y = nn.concat %a, %b axis = 1 : tensor<1x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<1x3x!quant.uniform<i8:f32, 0.25:1>> -> tensor<1x5x!quant.uniform<i8:f32, 0.25:1>>
  func.return %y : tensor<1x5x!quant.uniform<i8:f32, 0.25:1>>
}

// -----

// Mean: sum of zero-centred values, 1/16 folded into the rescale (2 * 1/16 = 2^30 * 2^-33).
// CHECK-LABEL: func.func @mean
// CHECK:         %[[XC:.*]] = nn.sub
// CHECK-NEXT:    %[[S:.*]] = nn.reduce %[[XC]] kind = "sum" axes = [1, 2] keepdims = true : tensor<1x4x4x2xi32> -> tensor<1x1x1x2xi32>
// CHECK-NEXT:    %[[Y:.*]] = quant.rescale %[[S]] multiplier = [1073741824] shift = [-2] : tensor<1x1x1x2xi32> to tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:1>>
// CHECK-NEXT:    func.return %[[Y]]
func.func @mean(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:1>> {
  %y = nn.reduce %x kind = "mean" axes = [1, 2] keepdims = true : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>> -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:1>>
  func.return %y : tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:1>>
}

// -----

// relu6 with equal parameters: no rescale, a clamp to [zp, zp + 6 / scale].
// CHECK-LABEL: func.func @relu6
// CHECK-SAME:    (%[[X:.*]]: {{.*}})
// CHECK-NEXT:    %[[XS:.*]] = quant.scast %[[X]]
// CHECK-NEXT:    %[[C:.*]] = nn.clip %[[XS]] min = -10.0 max = 110.0 : tensor<8xi8> -> tensor<8xi8>
// CHECK-NEXT:    %[[Y:.*]] = quant.scast %[[C]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @relu6(%x: tensor<8x!quant.uniform<i8:f32, 0.05:-10>>) -> tensor<8x!quant.uniform<i8:f32, 0.05:-10>> {
  %y = nn.relu6 %x : tensor<8x!quant.uniform<i8:f32, 0.05:-10>> -> tensor<8x!quant.uniform<i8:f32, 0.05:-10>>
  func.return %y : tensor<8x!quant.uniform<i8:f32, 0.05:-10>>
}

// -----

// leaky_relu: the positive and negative parts are rescaled separately (one is zero) and
// the sum enters the result type through an identity rescale (2^30 * 2^(1-31) = 1).
// CHECK-LABEL: func.func @leaky_relu
// CHECK:         %[[XC:.*]] = nn.sub
// CHECK-NEXT:    %[[P:.*]] = nn.relu %[[XC]] : tensor<8xi32> -> tensor<8xi32>
// CHECK-NEXT:    %[[PR:.*]] = quant.rescale %[[P]] multiplier = [1073741824] shift = [0]
// CHECK-NEXT:    %[[N:.*]] = nn.clip %[[XC]] max = 0.0 : tensor<8xi32> -> tensor<8xi32>
// CHECK-NEXT:    %[[NR:.*]] = quant.rescale %[[N]] multiplier = [1073741824] shift = [-2]
// CHECK-NEXT:    %[[S:.*]] = nn.add %[[PR]], %[[NR]]
// CHECK-NEXT:    %[[Y:.*]] = quant.rescale %[[S]] multiplier = [1073741824] shift = [1] : tensor<8xi32> to tensor<8x!quant.uniform<i8:f32, 0.1:4>>
// CHECK-NEXT:    func.return %[[Y]]
func.func @leaky_relu(%x: tensor<8x!quant.uniform<i8:f32, 0.05:-10>>) -> tensor<8x!quant.uniform<i8:f32, 0.1:4>> {
  %y = nn.leaky_relu %x alpha = 0.25 : tensor<8x!quant.uniform<i8:f32, 0.05:-10>> -> tensor<8x!quant.uniform<i8:f32, 0.1:4>>
  func.return %y : tensor<8x!quant.uniform<i8:f32, 0.1:4>>
}

// -----

// Must not fire: float ops, quantized softmax (a direct kernel) and data movement stay.
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:    %[[A:.*]] = nn.add %{{.*}}, %{{.*}} activation = "relu" : tensor<1x10xf32>, tensor<1x10xf32> -> tensor<1x10xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.softmax %{{.*}} : tensor<1x10x!quant.uniform<i8:f32, 0.1>> -> tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>>
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %[[S]] shape = [2, 5]
// CHECK-NEXT:    func.return %[[A]], %[[R]]
// CHECK-NOT:     quant.{{(scast|rescale)}}
func.func @untouched(%f: tensor<1x10xf32>, %q: tensor<1x10x!quant.uniform<i8:f32, 0.1>>) -> (tensor<1x10xf32>, tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>) {
  %a = nn.add %f, %f activation = "relu" : tensor<1x10xf32>, tensor<1x10xf32> -> tensor<1x10xf32>
  %s = nn.softmax %q : tensor<1x10x!quant.uniform<i8:f32, 0.1>> -> tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>>
  %r = nn.reshape %s shape = [2, 5] : tensor<1x10x!quant.uniform<i8:f32, 0.00390625:-128>> -> tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>
  func.return %a, %r : tensor<1x10xf32>, tensor<2x5x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// -----

func.func @fused_tanh(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>> {
  // expected-error @+1 {{lower-quantized: fused activation 'tanh' has no quantized clamp range}}
  %y = nn.add %a, %a activation = "tanh" : tensor<4x!quant.uniform<i8:f32, 0.5>>, tensor<4x!quant.uniform<i8:f32, 0.5>> -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return %y : tensor<4x!quant.uniform<i8:f32, 0.5>>
}

// -----

// TFLite rejects a uint8 input with int8 weights.
func.func @mixed_storage(%x: tensor<1x4x!quant.uniform<u8:f32, 0.5:128>>, %w: tensor<2x4x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x!quant.uniform<u8:f32, 1.0:128>> {
  // expected-error @+1 {{lower-quantized: weights storage i8 differs from input storage ui8}}
  %y = nn.fully_connected %x, %w : tensor<1x4x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x4x!quant.uniform<i8:f32, 0.5>> -> tensor<1x2x!quant.uniform<u8:f32, 1.0:128>>
  func.return %y : tensor<1x2x!quant.uniform<u8:f32, 1.0:128>>
}

// -----

func.func @int16_activations(%a: tensor<4x!quant.uniform<i16:f32, 0.5>>) -> tensor<4x!quant.uniform<i16:f32, 0.5>> {
  // expected-error @+1 {{lower-quantized: only 8-bit quantized tensors are supported, got i16 storage}}
  %y = nn.mul %a, %a : tensor<4x!quant.uniform<i16:f32, 0.5>>, tensor<4x!quant.uniform<i16:f32, 0.5>> -> tensor<4x!quant.uniform<i16:f32, 0.5>>
  func.return %y : tensor<4x!quant.uniform<i16:f32, 0.5>>
}

// -----

func.func @too_large_rescale(%a: tensor<4x!quant.uniform<i8:f32, 1000000.0>>) -> tensor<4x!quant.uniform<i8:f32, 0.0001>> {
  // expected-error @+1 {{lower-quantized: requantization factor 1e+10 is too large for a 32-bit rescale}}
  %y = nn.relu %a : tensor<4x!quant.uniform<i8:f32, 1000000.0>> -> tensor<4x!quant.uniform<i8:f32, 0.0001>>
  func.return %y : tensor<4x!quant.uniform<i8:f32, 0.0001>>
}

// -----

func.func @negative_slope(%x: tensor<8x!quant.uniform<i8:f32, 0.05>>) -> tensor<8x!quant.uniform<i8:f32, 0.05>> {
  // expected-error @+1 {{lower-quantized: a negative leaky_relu slope (-0.5) is not supported}}
  %y = nn.leaky_relu %x alpha = -0.5 : tensor<8x!quant.uniform<i8:f32, 0.05>> -> tensor<8x!quant.uniform<i8:f32, 0.05>>
  func.return %y : tensor<8x!quant.uniform<i8:f32, 0.05>>
}
