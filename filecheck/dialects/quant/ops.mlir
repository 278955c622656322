// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP
// RUN: irc-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trip of the `!quant.uniform` type and of quant.qcast / quant.dcast / quant.rescale,
// in the custom and in the generic form. The GENERIC lines pin the generic spelling of the
// ops' properties (defaults included).

// CHECK-LABEL: func.func @per_tensor
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 0.25:127>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 0.125:-128>>
// CHECK-SAME:    -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
func.func @per_tensor(%a: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>,
                      %b: tensor<4x!quant.uniform<i8:f32, 0.25:127>>,
                      %c: tensor<4x!quant.uniform<i8:f32, 0.125:-128>>)
    -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>> {
  func.return %a : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
}

// -----

// A zero point of 0 is not printed, explicit or implied; an integer scale prints as a float.
// CHECK-LABEL: func.func @zero_point_elision
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 0.5>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 0.5>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 2.0:1>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 0.001>>
func.func @zero_point_elision(%a: tensor<4x!quant.uniform<i8:f32, 0.5:0>>,
                              %b: tensor<4x!quant.uniform<i8:f32, 0.5>>,
                              %c: tensor<4x!quant.uniform<i8:f32, 2:1>>,
                              %d: tensor<4x!quant.uniform<i8:f32, 1.0e-3>>) {
  func.return
}

// -----

// CHECK-LABEL: func.func @per_axis
// CHECK-SAME:    %{{\w+}}: tensor<3x2x!quant.uniform<i8:f32:0, {0.5:-3, 0.25, 0.001:7}>>
// CHECK-SAME:    %{{\w+}}: tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
// CHECK-SAME:    %{{\w+}}: tensor<1x1x1x5x!quant.uniform<i8:f32:3, {1.0, 2.0, 3.0, 4.0, 5.0}>>
// CHECK-SAME:    %{{\w+}}: tensor<?x2x!quant.uniform<i8:f32:0, {0.5}>>
func.func @per_axis(%a: tensor<3x2x!quant.uniform<i8:f32:0, {0.5:-3, 0.25:0, 0.001:7}>>,
                    %b: tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>,
                    %c: tensor<1x1x1x5x!quant.uniform<i8:f32:3, {1.0, 2.0, 3.0, 4.0, 5.0}>>,
                    %d: tensor<?x2x!quant.uniform<i8:f32:0, {0.5}>>) {
  func.return
}

// -----

// CHECK-LABEL: func.func @storage_types
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<u8:f32, 0.1:128>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<u8:f32, 0.1:255>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i16:f32, 0.0001:-32768>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<u16:f32, 0.0001:65535>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i32:f32, 1.0e-06:-2147483648>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i32:f32, 1.0e-06:2147483647>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<u32:f32, 1.0:4294967295>>
// CHECK-SAME:    %{{\w+}}: tensor<2x!quant.uniform<u8:f32:0, {0.1:128, 0.2}>>
func.func @storage_types(%a: tensor<4x!quant.uniform<u8:f32, 0.1:128>>,
                         %b: tensor<4x!quant.uniform<u8:f32, 0.1:255>>,
                         %c: tensor<4x!quant.uniform<i16:f32, 1.0e-4:-32768>>,
                         %d: tensor<4x!quant.uniform<u16:f32, 1.0e-4:65535>>,
                         %e: tensor<4x!quant.uniform<i32:f32, 1.0e-6:-2147483648>>,
                         %f: tensor<4x!quant.uniform<i32:f32, 1.0e-6:2147483647>>,
                         %g: tensor<4x!quant.uniform<u32:f32, 1.0:4294967295>>,
                         %h: tensor<2x!quant.uniform<u8:f32:0, {0.1:128, 0.2}>>) {
  func.return
}

// -----

// An explicit storage range is kept even when it spans the whole storage type.
// CHECK-LABEL: func.func @storage_ranges
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8<-127:127>:f32, 0.02>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8<-128:127>:f32, 0.02:-128>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<u8<1:255>:f32, 0.5:1>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i16<-32767:32767>:f16, 0.5>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8<0:0>:f32, 1.0>>
// CHECK-SAME:    %{{\w+}}: tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {0.1, 0.2, 0.3:-127}>>
func.func @storage_ranges(%a: tensor<4x!quant.uniform<i8<-127:127>:f32, 0.02>>,
                          %b: tensor<4x!quant.uniform<i8<-128:127>:f32, 0.02:-128>>,
                          %c: tensor<4x!quant.uniform<u8<1:255>:f32, 0.5:1>>,
                          %d: tensor<4x!quant.uniform<i16<-32767:32767>:f16, 0.5>>,
                          %e: tensor<4x!quant.uniform<i8<0:0>:f32, 1.0>>,
                          %f: tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {0.1, 0.2, 0.3:-127}>>) {
  func.return
}

// -----

// Scales keep every bit through print and parse, from denormals to the largest doubles.
// CHECK-LABEL: func.func @extreme_scales
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 1.0e-30>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 3.4e+38>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 3.4028234663852886e+38>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 1.0e-40>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 5.0e-324>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 1.7976931348623157e+308>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 0.00392156862745098:-128>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 1.0e+16>>
// CHECK-SAME:    %{{\w+}}: tensor<2x!quant.uniform<i8:f32:0, {1.0e-30:5, 1.0e+30:-5}>>
func.func @extreme_scales(%a: tensor<4x!quant.uniform<i8:f32, 1.0e-30>>,
                          %b: tensor<4x!quant.uniform<i8:f32, 3.4e38>>,
                          %c: tensor<4x!quant.uniform<i8:f32, 3.4028234663852886e+38>>,
                          %d: tensor<4x!quant.uniform<i8:f32, 1.0e-40>>,
                          %e: tensor<4x!quant.uniform<i8:f32, 4.9406564584124654e-324>>,
                          %f: tensor<4x!quant.uniform<i8:f32, 1.7976931348623157e308>>,
                          %g: tensor<4x!quant.uniform<i8:f32, 0.00392156862745098:-128>>,
                          %h: tensor<4x!quant.uniform<i8:f32, 10000000000000000>>,
                          %i: tensor<2x!quant.uniform<i8:f32:0, {1.0e-30:5, 1.0e+30:-5}>>) {
  func.return
}

// -----

// CHECK-LABEL: func.func @expressed_types
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f16, 0.5:-3>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<u8:bf16, 0.5:3>>
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f64, 0.5>>
// CHECK-SAME:    %{{\w+}}: tensor<2x!quant.uniform<i8:bf16:0, {0.5, 0.25}>>
func.func @expressed_types(%a: tensor<4x!quant.uniform<i8:f16, 0.5:-3>>,
                           %b: tensor<4x!quant.uniform<u8:bf16, 0.5:3>>,
                           %c: tensor<4x!quant.uniform<i8:f64, 0.5>>,
                           %d: tensor<2x!quant.uniform<i8:bf16:0, {0.5, 0.25}>>) {
  func.return
}

// -----

// Type aliases are expanded on parse.
!q8 = !quant.uniform<i8:f32, 0.5:-3>
!w8 = !quant.uniform<i8<-127:127>:f32:0, {0.5, 0.25}>

// CHECK-LABEL: func.func @aliases
// CHECK-SAME:    %{{\w+}}: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-SAME:    %{{\w+}}: tensor<2x3x!quant.uniform<i8<-127:127>:f32:0, {0.5, 0.25}>>
func.func @aliases(%a: tensor<4x!q8>, %w: tensor<2x3x!w8>) {
  func.return
}

// -----

// The default rounding (half_away_from_zero) is not printed, even when written out.
// CHECK-LABEL: func.func @qcast(
// CHECK-SAME:    %[[X:.*]]: tensor<2x3xf32>)
// CHECK:         %[[Q0:.*]] = quant.qcast %[[X]] : tensor<2x3xf32> to tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-NEXT:    %[[Q1:.*]] = quant.qcast %[[X]] : tensor<2x3xf32> to tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-NEXT:    %[[Q2:.*]] = quant.qcast %[[X]] rounding = "half_to_even" : tensor<2x3xf32> to tensor<2x3x!quant.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    func.return %[[Q0]], %[[Q1]], %[[Q2]]
// GENERIC-LABEL: "func.func"() <{sym_name = "qcast",
// GENERIC:         "quant.qcast"(%{{.*}}) <{rounding = #quant<rounding "half_away_from_zero">}> : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>
// GENERIC-NEXT:    "quant.qcast"(%{{.*}}) <{rounding = #quant<rounding "half_away_from_zero">}> : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>
// GENERIC-NEXT:    "quant.qcast"(%{{.*}}) <{rounding = #quant<rounding "half_to_even">}> : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<u8:f32, 0.1:128>>
func.func @qcast(%x: tensor<2x3xf32>)
    -> (tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>,
        tensor<2x3x!quant.uniform<u8:f32, 0.1:128>>) {
  %q0 = quant.qcast %x : tensor<2x3xf32> to tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>
  %q1 = quant.qcast %x rounding = "half_away_from_zero"
      : tensor<2x3xf32> to tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>
  %q2 = quant.qcast %x rounding = "half_to_even"
      : tensor<2x3xf32> to tensor<2x3x!quant.uniform<u8:f32, 0.1:128>>
  func.return %q0, %q1, %q2 : tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>,
      tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x3x!quant.uniform<u8:f32, 0.1:128>>
}

// -----

// CHECK-LABEL: func.func @qcast_per_axis_and_attributes
// CHECK-SAME:    (%[[X:.*]]: tensor<3x2xf16>, %[[D:.*]]: tensor<?x4xbf16>)
// CHECK:         %[[W:.*]] = quant.qcast %[[X]] {irc.note = "weights"} : tensor<3x2xf16> to tensor<3x2x!quant.uniform<i8<-127:127>:f16:0, {0.5, 0.25, 0.125}>>
// CHECK-NEXT:    %[[Y:.*]] = quant.qcast %[[D]] rounding = "half_to_even" {irc.tag = [1 : i64, 2 : i64]} : tensor<?x4xbf16> to tensor<?x4x!quant.uniform<i16:bf16:1, {0.5, 0.5, 0.5, 0.5:-9}>>
// CHECK-NEXT:    func.return %[[W]], %[[Y]]
func.func @qcast_per_axis_and_attributes(%x: tensor<3x2xf16>, %d: tensor<?x4xbf16>)
    -> (tensor<3x2x!quant.uniform<i8<-127:127>:f16:0, {0.5, 0.25, 0.125}>>,
        tensor<?x4x!quant.uniform<i16:bf16:1, {0.5, 0.5, 0.5, 0.5:-9}>>) {
  %w = quant.qcast %x {irc.note = "weights"}
      : tensor<3x2xf16> to tensor<3x2x!quant.uniform<i8<-127:127>:f16:0, {0.5, 0.25, 0.125}>>
  %y = quant.qcast %d rounding = "half_to_even" {irc.tag = [1, 2]}
      : tensor<?x4xbf16> to tensor<?x4x!quant.uniform<i16:bf16:1, {0.5, 0.5, 0.5, 0.5:-9}>>
  func.return %w, %y : tensor<3x2x!quant.uniform<i8<-127:127>:f16:0, {0.5, 0.25, 0.125}>>,
      tensor<?x4x!quant.uniform<i16:bf16:1, {0.5, 0.5, 0.5, 0.5:-9}>>
}

// -----

// CHECK-LABEL: func.func @dcast
// CHECK-SAME:    (%[[A:.*]]: tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>>, %[[B:.*]]: tensor<3x2x!quant.uniform<u8:bf16:0, {0.5:1, 0.25:2, 1.0e-30:3}>>, %[[C:.*]]: tensor<?x!quant.uniform<i32:f16, 3.0e-05>>)
// CHECK:         %[[DA:.*]] = quant.dcast %[[A]] : tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x4xf32>
// CHECK-NEXT:    %[[DB:.*]] = quant.dcast %[[B]] : tensor<3x2x!quant.uniform<u8:bf16:0, {0.5:1, 0.25:2, 1.0e-30:3}>> to tensor<3x2xbf16>
// CHECK-NEXT:    %[[DC:.*]] = quant.dcast %[[C]] {irc.note} : tensor<?x!quant.uniform<i32:f16, 3.0e-05>> to tensor<?xf16>
// CHECK-NEXT:    func.return %[[DA]], %[[DB]], %[[DC]]
// GENERIC-LABEL: "func.func"() <{sym_name = "dcast",
// GENERIC:         "quant.dcast"(%{{.*}}) : (tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x4xf32>
func.func @dcast(%a: tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>>,
                 %b: tensor<3x2x!quant.uniform<u8:bf16:0, {0.5:1, 0.25:2, 1.0e-30:3}>>,
                 %c: tensor<?x!quant.uniform<i32:f16, 3.0e-5>>)
    -> (tensor<1x4xf32>, tensor<3x2xbf16>, tensor<?xf16>) {
  %da = quant.dcast %a : tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x4xf32>
  %db = quant.dcast %b
      : tensor<3x2x!quant.uniform<u8:bf16:0, {0.5:1, 0.25:2, 1.0e-30:3}>> to tensor<3x2xbf16>
  %dc = quant.dcast %c {irc.note} : tensor<?x!quant.uniform<i32:f16, 3.0e-5>> to tensor<?xf16>
  func.return %da, %db, %dc : tensor<1x4xf32>, tensor<3x2xbf16>, tensor<?xf16>
}

// -----

// CHECK-LABEL: func.func @qcast_dcast_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[Q:.*]] = quant.qcast %[[X]] : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-NEXT:    %[[D:.*]] = quant.dcast %[[Q]] : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4xf32>
// CHECK-NEXT:    func.return %[[D]] : tensor<4xf32>
func.func @qcast_dcast_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = quant.qcast %x : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  %d = quant.dcast %q : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// -----

// The default rounding (double_round) is not printed; axis and rounding are optional.
// CHECK-LABEL: func.func @rescale(
// CHECK-SAME:    %[[ACC:.*]]: tensor<2x3xi32>)
// CHECK:         %[[R0:.*]] = quant.rescale %[[ACC]] multiplier = [1518500250] shift = [-7] : tensor<2x3xi32> to tensor<2x3x!quant.uniform<i8:f32, 0.05:-4>>
// CHECK-NEXT:    %[[R1:.*]] = quant.rescale %[[ACC]] multiplier = [1073741824] shift = [0] : tensor<2x3xi32> to tensor<2x3x!quant.uniform<i8:f32, 0.05:-4>>
// CHECK-NEXT:    %[[R2:.*]] = quant.rescale %[[ACC]] multiplier = [1073741824] shift = [-31] rounding = "single_round" : tensor<2x3xi32> to tensor<2x3xi8>
// CHECK-NEXT:    %[[R3:.*]] = quant.rescale %[[ACC]] multiplier = [1073741824, 0, 2147483647] shift = [-31, 0, 30] axis = 1 : tensor<2x3xi32> to tensor<2x3xi16>
// CHECK-NEXT:    %[[R4:.*]] = quant.rescale %[[ACC]] multiplier = [1073741824, 2147483647] shift = [1, 2] axis = 0 rounding = "single_round" {irc.note = "requant"} : tensor<2x3xi32> to tensor<2x3x!quant.uniform<i8<-127:127>:f32, 0.1>>
// CHECK-NEXT:    %[[R5:.*]] = quant.rescale %[[ACC]] multiplier = [0] shift = [5] axis = 1 : tensor<2x3xi32> to tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]]
// GENERIC-LABEL: "func.func"() <{sym_name = "rescale",
// GENERIC:         "quant.rescale"(%{{.*}}) <{multiplier = array<i32: 1518500250>, shift = array<i32: -7>, rounding = #quant<rescale_rounding "double_round">}>
// GENERIC:         "quant.rescale"(%{{.*}}) <{multiplier = array<i32: 1073741824, 0, 2147483647>, shift = array<i32: -31, 0, 30>, axis = 1 : i32, rounding = #quant<rescale_rounding "double_round">}>
func.func @rescale(%acc: tensor<2x3xi32>)
    -> (tensor<2x3x!quant.uniform<i8:f32, 0.05:-4>>, tensor<2x3x!quant.uniform<i8:f32, 0.05:-4>>,
        tensor<2x3xi8>, tensor<2x3xi16>, tensor<2x3x!quant.uniform<i8<-127:127>:f32, 0.1>>,
        tensor<2x3xi32>) {
  %r0 = quant.rescale %acc multiplier = [1518500250] shift = [-7]
      : tensor<2x3xi32> to tensor<2x3x!quant.uniform<i8:f32, 0.05:-4>>
  %r1 = quant.rescale %acc multiplier = [1073741824] shift = [0] rounding = "double_round"
      : tensor<2x3xi32> to tensor<2x3x!quant.uniform<i8:f32, 0.05:-4>>
  %r2 = quant.rescale %acc multiplier = [1073741824] shift = [-31] rounding = "single_round"
      : tensor<2x3xi32> to tensor<2x3xi8>
  %r3 = quant.rescale %acc multiplier = [1073741824, 0, 2147483647] shift = [-31, 0, 30] axis = 1
      : tensor<2x3xi32> to tensor<2x3xi16>
  %r4 = quant.rescale %acc multiplier = [1073741824, 2147483647] shift = [1, 2] axis = 0
      rounding = "single_round" {irc.note = "requant"}
      : tensor<2x3xi32> to tensor<2x3x!quant.uniform<i8<-127:127>:f32, 0.1>>
  %r5 = quant.rescale %acc multiplier = [0] shift = [5] axis = 1 : tensor<2x3xi32> to tensor<2x3xi32>
  func.return %r0, %r1, %r2, %r3, %r4, %r5
      : tensor<2x3x!quant.uniform<i8:f32, 0.05:-4>>, tensor<2x3x!quant.uniform<i8:f32, 0.05:-4>>,
        tensor<2x3xi8>, tensor<2x3xi16>, tensor<2x3x!quant.uniform<i8<-127:127>:f32, 0.1>>,
        tensor<2x3xi32>
}

// -----

// Quantized to quantized (zero points from both types), and a dynamic per-channel axis.
// CHECK-LABEL: func.func @rescale_quantized
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>>, %[[Y:.*]]: tensor<?x4xi16>)
// CHECK:         %[[U:.*]] = quant.rescale %[[X]] multiplier = [1073741824] shift = [-1] : tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x4x!quant.uniform<u8:f32, 0.25:128>>
// CHECK-NEXT:    %[[V:.*]] = quant.rescale %[[Y]] multiplier = [1073741824, 1073741825] shift = [3, 4] axis = 0 : tensor<?x4xi16> to tensor<?x4xi8>
// CHECK-NEXT:    func.return %[[U]], %[[V]]
func.func @rescale_quantized(%x: tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>>, %y: tensor<?x4xi16>)
    -> (tensor<1x4x!quant.uniform<u8:f32, 0.25:128>>, tensor<?x4xi8>) {
  %u = quant.rescale %x multiplier = [1073741824] shift = [-1]
      : tensor<1x4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<1x4x!quant.uniform<u8:f32, 0.25:128>>
  %v = quant.rescale %y multiplier = [1073741824, 1073741825] shift = [3, 4] axis = 0
      : tensor<?x4xi16> to tensor<?x4xi8>
  func.return %u, %v : tensor<1x4x!quant.uniform<u8:f32, 0.25:128>>, tensor<?x4xi8>
}

// -----

// Rescale written in the generic form parses with the default rounding.
// CHECK-LABEL: func.func @rescale_generic_input
// CHECK:         quant.rescale %{{.*}} multiplier = [1073741824] shift = [2] : tensor<4xi32> to tensor<4xi8>
// CHECK:         quant.qcast %{{.*}} : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5>>
func.func @rescale_generic_input(%acc: tensor<4xi32>, %x: tensor<4xf32>) {
  %r = "quant.rescale"(%acc) <{multiplier = array<i32: 1073741824>, shift = array<i32: 2>}>
      : (tensor<4xi32>) -> tensor<4xi8>
  %q = "quant.qcast"(%x) : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return
}

// -----

// Storage casts in both directions, signed and unsigned storage, per-axis.
// CHECK-LABEL: func.func @scast
// CHECK:         %[[S:.*]] = quant.scast %{{.*}} : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4xi8>
// CHECK:         quant.scast %{{.*}} : tensor<2x!quant.uniform<u8:f32:0, {0.5:3, 0.1}>> to tensor<2xui8>
// CHECK:         quant.scast %[[S]] : tensor<4xi8> to tensor<4x!quant.uniform<i8:f32, 0.25>>
// GENERIC-LABEL: "func.func"() <{sym_name = "scast"
// GENERIC:         "quant.scast"(%{{.*}}) : (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<4xi8>
func.func @scast(%q: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>,
                 %u: tensor<2x!quant.uniform<u8:f32:0, {0.5:3, 0.1}>>) {
  %s = quant.scast %q : tensor<4x!quant.uniform<i8:f32, 0.5:-3>> to tensor<4xi8>
  %su = quant.scast %u : tensor<2x!quant.uniform<u8:f32:0, {0.5:3, 0.1}>> to tensor<2xui8>
  %q2 = quant.scast %s : tensor<4xi8> to tensor<4x!quant.uniform<i8:f32, 0.25>>
  func.return
}
