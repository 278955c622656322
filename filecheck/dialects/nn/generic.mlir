// RUN: irc-opt %s --split-input-file --print-op-generic | filecheck %s

// The generic form of `nn` ops: properties in `<{...}>` with their builtin attribute
// types (i64 arrays, i64 integers, f64 floats, booleans, strings) or, for `layout` and
// `activation`, the dialect's enum attributes (`#nn<layout "NHWC">`). Properties written in the
// custom form come first, then the defaults the builder fills in; absent optional properties
// (`max` of nn.clip) stay absent.

// CHECK-LABEL: "func.func"() <{sym_name = "conv2d"
// CHECK:         %[[Y:.*]] = "nn.conv2d"(%[[X:.*]], %[[W:.*]], %[[B:.*]]) <{
// CHECK-SAME:      strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, layout = #nn<layout "NHWC">,
// CHECK-SAME:      dilations = array<i64: 1, 1>, groups = 1 : i64, activation = #nn<activation "none">}>
// CHECK-SAME:      : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
func.func @conv2d(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %y = nn.conv2d %x, %w, %b strides = [2, 2] pads = [0, 0, 1, 1] layout = "NHWC" : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// -----

// CHECK-LABEL: "func.func"() <{sym_name = "properties"
// CHECK:         "nn.clip"(%{{.*}}) <{min = 0.000000e+00 : f64}> : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:         "nn.batch_matmul"(%{{.*}}, %{{.*}}) <{adj_x = true, adj_y = false}>
// CHECK:         "nn.softmax"(%{{.*}}) <{axis = 0 : i64, beta = 1.000000e+00 : f64}>
// CHECK:         "nn.resize"(%{{.*}}) <{size = array<i64: 2, 2>, scales = array<f64: 5.000000e-01, 5.000000e-01>
func.func @properties(%x: tensor<4xf32>, %m: tensor<2x2xf32>, %i: tensor<1x4x4x1xf32>) {
  %c = nn.clip %x min = 0.0 : tensor<4xf32> -> tensor<4xf32>
  %p = nn.batch_matmul %m, %m adj_x = true : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %s = nn.softmax %m axis = 0 : tensor<2x2xf32> -> tensor<2x2xf32>
  %r = nn.resize %i size = [2, 2] scales = [0.5, 0.5] layout = "NHWC" : tensor<1x4x4x1xf32> -> tensor<1x2x2x1xf32>
  func.return
}

// -----

// CHECK-LABEL: "func.func"() <{sym_name = "variadic"
// CHECK:         %[[C:.*]] = "nn.concat"(%[[A:.*]], %[[A]], %[[A]]) <{axis = 0 : i64, activation = #nn<activation "none">}>
// CHECK-SAME:      : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<6xf32>
// CHECK:         %[[S:.*]], %[[T:.*]] = "nn.split"(%[[C]]) <{axis = 0 : i64, sizes = array<i64: 1, 5>}>
// CHECK-SAME:      : (tensor<6xf32>) -> (tensor<1xf32>, tensor<5xf32>)
func.func @variadic(%a: tensor<2xf32>) {
  %c = nn.concat %a, %a, %a axis = 0 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<6xf32>
  %s, %t = nn.split %c axis = 0 sizes = [1, 5] : tensor<6xf32> -> tensor<1xf32>, tensor<5xf32>
  func.return
}

// -----

// CHECK-LABEL: "func.func"() <{sym_name = "quantized_constant"
// CHECK:         "nn.constant"() <{value = dense<[1, -2]> : tensor<2xi8>}>
// CHECK-SAME:      : () -> tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.25:-1}>>
func.func @quantized_constant() {
  %q = nn.constant dense<[1, -2]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.25:-1}>>
  func.return
}
