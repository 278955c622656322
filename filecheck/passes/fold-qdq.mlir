// RUN: irc-opt %s --split-input-file -p fold-qdq | filecheck %s

// Quantizing dequantized values with the same type gives back the stored values.
// CHECK-LABEL: func.func @same_type
// CHECK-SAME:    (%[[X:.*]]: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK-NEXT:    func.return %[[X]]
func.func @same_type(%x: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>> {
  %d = quant.dcast %x : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4xf32>
  %q = quant.qcast %d : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  func.return %q : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
}

// -----

// Per-axis, any rounding: still exact. The dcast stays for its other user.
// CHECK-LABEL: func.func @same_type_per_axis_shared
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x!quant.uniform<u8:f32:0, {0.5:128, 0.25:120}>>)
// CHECK-NEXT:    %[[D:.*]] = quant.dcast %[[X]]
// CHECK-NEXT:    func.return %[[X]], %[[D]]
func.func @same_type_per_axis_shared(%x: tensor<2x3x!quant.uniform<u8:f32:0, {0.5:128, 0.25:120}>>) -> (tensor<2x3x!quant.uniform<u8:f32:0, {0.5:128, 0.25:120}>>, tensor<2x3xf32>) {
  %d = quant.dcast %x : tensor<2x3x!quant.uniform<u8:f32:0, {0.5:128, 0.25:120}>> to tensor<2x3xf32>
  %q = quant.qcast %d rounding = "half_to_even" : tensor<2x3xf32> to tensor<2x3x!quant.uniform<u8:f32:0, {0.5:128, 0.25:120}>>
  func.return %q, %d : tensor<2x3x!quant.uniform<u8:f32:0, {0.5:128, 0.25:120}>>, tensor<2x3xf32>
}

// -----

// Other per-tensor parameters, same storage: TFLite's requantize by 0.5 / 0.25 = 2
// (multiplier 2^30, shift 2).
// CHECK-LABEL: func.func @requantize
// CHECK-SAME:    (%[[X:.*]]: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>)
// CHECK-NEXT:    %[[R:.*]] = quant.rescale %[[X]] multiplier = [1073741824] shift = [2] : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4x!quant.uniform<i8:f32, 0.25:1>>
// CHECK-NEXT:    func.return %[[R]]
// CHECK-NOT:     quant.dcast
func.func @requantize(%x: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4x!quant.uniform<i8:f32, 0.25:1>> {
  %d = quant.dcast %x : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4xf32>
  %q = quant.qcast %d : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.25:1>>
  func.return %q : tensor<4x!quant.uniform<i8:f32, 0.25:1>>
}

// -----

// Not a TFLite requantize: per-axis, another storage type, ONNX's half_to_even rounding, a
// factor beyond a 32-bit rescale. The chains stay.
// CHECK-LABEL: func.func @not_requantized
// CHECK-NOT:     quant.rescale
// CHECK-COUNT-4: quant.qcast %d
// CHECK-NOT:     quant.rescale
func.func @not_requantized(%a: tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.25}>>, %b: tensor<2x!quant.uniform<i8:f32, 0.5>>, %c: tensor<2x!quant.uniform<i8:f32, 1.0e+10>>) -> (tensor<2x!quant.uniform<i8:f32, 0.25>>, tensor<2x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x!quant.uniform<i8:f32, 0.25>>, tensor<2x!quant.uniform<i8:f32, 0.5>>) {
  %da = quant.dcast %a : tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.25}>> to tensor<2xf32>
  %qa = quant.qcast %da : tensor<2xf32> to tensor<2x!quant.uniform<i8:f32, 0.25>>
  %db = quant.dcast %b : tensor<2x!quant.uniform<i8:f32, 0.5>> to tensor<2xf32>
  %qb = quant.qcast %db : tensor<2xf32> to tensor<2x!quant.uniform<u8:f32, 0.5:128>>
  %qe = quant.qcast %db rounding = "half_to_even" : tensor<2xf32> to tensor<2x!quant.uniform<i8:f32, 0.25>>
  %dc = quant.dcast %c : tensor<2x!quant.uniform<i8:f32, 1.0e+10>> to tensor<2xf32>
  %qc = quant.qcast %dc : tensor<2xf32> to tensor<2x!quant.uniform<i8:f32, 0.5>>
  func.return %qa, %qb, %qe, %qc : tensor<2x!quant.uniform<i8:f32, 0.25>>, tensor<2x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x!quant.uniform<i8:f32, 0.25>>, tensor<2x!quant.uniform<i8:f32, 0.5>>
}

// -----

// dcast(qcast(x)) rounds x onto the grid: not an identity.
// CHECK-LABEL: func.func @dcast_of_qcast_stays
// CHECK-NEXT:    %[[Q:.*]] = quant.qcast
// CHECK-NEXT:    %[[D:.*]] = quant.dcast %[[Q]]
// CHECK-NEXT:    func.return %[[D]]
func.func @dcast_of_qcast_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = quant.qcast %x : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  %d = quant.dcast %q : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// -----

// Casts of constants fold with the reference kernels; the qcast's rounding decides the ties
// (0.25 / 0.5 = 0.5, -0.25 / 0.5 = -0.5).
// CHECK-LABEL: func.func @constants
// CHECK-DAG:     %[[F:.*]] = nn.constant dense<[-1.000000e+00, 2.500000e-01]> : tensor<2xf32>
// CHECK-DAG:     %[[A:.*]] = nn.constant dense<[1, -1, 2]> : tensor<3xi8> -> tensor<3x!quant.uniform<i8:f32, 0.5>>
// CHECK-DAG:     %[[E:.*]] = nn.constant dense<[0, 0, 2]> : tensor<3xi8> -> tensor<3x!quant.uniform<i8:f32, 0.5>>
// CHECK-NOT:     quant.
// CHECK:         func.return %[[F]], %[[A]], %[[E]]
func.func @constants() -> (tensor<2xf32>, tensor<3x!quant.uniform<i8:f32, 0.5>>, tensor<3x!quant.uniform<i8:f32, 0.5>>) {
  %c = nn.constant dense<[-1, 4]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32:0, {0.25:3, 0.125:2}>>
  %d = quant.dcast %c : tensor<2x!quant.uniform<i8:f32:0, {0.25:3, 0.125:2}>> to tensor<2xf32>
  %f = nn.constant dense<[0.25, -0.25, 0.75]> : tensor<3xf32>
  %a = quant.qcast %f : tensor<3xf32> to tensor<3x!quant.uniform<i8:f32, 0.5>>
  %e = quant.qcast %f rounding = "half_to_even" : tensor<3xf32> to tensor<3x!quant.uniform<i8:f32, 0.5>>
  func.return %d, %a, %e : tensor<2xf32>, tensor<3x!quant.uniform<i8:f32, 0.5>>, tensor<3x!quant.uniform<i8:f32, 0.5>>
}
