// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-cpu | filecheck %s

// The two dynamically quantized products of cpu-fuse-dynamic.mlir, lowered: one
// irc_qgemm_dynamic call each (x, rows, depth, columns, packed int8 weights, their column
// sums, the weight scales, per column or not, the bias or NULL, the result, scratch), and no
// other kernel.
// CHECK-LABEL: delegate.executable private @products
// CHECK:         cpu.module
// CHECK-SAME:      irc_qgemm_dynamic(in0, 2, 4, 2, (const int8_t *)K[{{[0-9]+}}], (const int32_t *)K[{{[0-9]+}}], (const float *)K[{{[0-9]+}}], 0, NULL, out0,
// CHECK-SAME:      irc_qgemm_dynamic(in0, 2, 4, 3, (const int8_t *)K[{{[0-9]+}}], (const int32_t *)K[{{[0-9]+}}], (const float *)K[{{[0-9]+}}], 0, (const float *)K[{{[0-9]+}}], out1,
delegate.executable private @products target("cpu") {
  func.func @entry(%x: tensor<1x2x4xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x3xf32>) {
    %0 = nn.constant dense<0.000000e+00> : tensor<f32>
    %1 = nn.constant dense<2.550000e+02> : tensor<f32>
    %w1_scale = nn.constant dense<0.00513385842> : tensor<f32>
    %w2_scale = nn.constant dense<0.00915366504> : tensor<f32>
    %2 = nn.constant dense<[[12, 10, 127, -123], [-13, -52, 92, -61], [62, 35, -69, 4]]> : tensor<3x4xi32>
    %3 = nn.constant dense<[[-127, -68, -30, 22], [-12, -40, -17, 57]]> : tensor<2x4xi32>
    %b1 = nn.constant dense<[-0.012853466, 0.136646345, -0.066519469]> : tensor<3xf32>
    %4 = nn.reduce %x kind = "min" axes = [0, 1, 2] : tensor<1x2x4xf32> -> tensor<f32>
    %5 = nn.reduce %x kind = "max" axes = [0, 1, 2] : tensor<1x2x4xf32> -> tensor<f32>
    %6 = nn.minimum %4, %0 : tensor<f32>, tensor<f32> -> tensor<f32>
    %7 = nn.maximum %5, %0 : tensor<f32>, tensor<f32> -> tensor<f32>
    %8 = nn.sub %7, %6 : tensor<f32>, tensor<f32> -> tensor<f32>
    %x_scale = nn.div %8, %1 : tensor<f32>, tensor<f32> -> tensor<f32>
    %9 = nn.neg %6 : tensor<f32> -> tensor<f32>
    %10 = nn.div %9, %x_scale : tensor<f32>, tensor<f32> -> tensor<f32>
    %11 = quant.qcast %10 rounding = "half_to_even" : tensor<f32> to tensor<!quant.uniform<i32:f32, 1.0>>
    %12 = quant.scast %11 : tensor<!quant.uniform<i32:f32, 1.0>> to tensor<i32>
    %x_zero_point = quant.rescale %12 multiplier = [1073741824] shift = [1] : tensor<i32> to tensor<ui8>
    %13 = nn.cast %x_zero_point : tensor<ui8> -> tensor<i32>
    %14 = nn.div %x, %x_scale : tensor<1x2x4xf32>, tensor<f32> -> tensor<1x2x4xf32>
    %15 = quant.qcast %14 rounding = "half_to_even" : tensor<1x2x4xf32> to tensor<1x2x4x!quant.uniform<i32:f32, 1.0>>
    %16 = quant.scast %15 : tensor<1x2x4x!quant.uniform<i32:f32, 1.0>> to tensor<1x2x4xi32>
    %17 = nn.add %16, %13 : tensor<1x2x4xi32>, tensor<i32> -> tensor<1x2x4xi32>
    %x_quantized = quant.rescale %17 multiplier = [1073741824] shift = [1] : tensor<1x2x4xi32> to tensor<1x2x4xui8>
    %x_scale_w1_scale_mul = nn.mul %x_scale, %w1_scale : tensor<f32>, tensor<f32> -> tensor<f32>
    %x_scale_w2_scale_mul = nn.mul %x_scale, %w2_scale : tensor<f32>, tensor<f32> -> tensor<f32>
    %18 = nn.cast %x_quantized : tensor<1x2x4xui8> -> tensor<1x2x4xi32>
    %19 = nn.cast %x_zero_point : tensor<ui8> -> tensor<i32>
    %20 = nn.sub %18, %19 : tensor<1x2x4xi32>, tensor<i32> -> tensor<1x2x4xi32>
    %m1_output_quantized = nn.fully_connected %20, %2 : tensor<1x2x4xi32>, tensor<3x4xi32> -> tensor<1x2x3xi32>
    %21 = nn.cast %x_quantized : tensor<1x2x4xui8> -> tensor<1x2x4xi32>
    %22 = nn.cast %x_zero_point : tensor<ui8> -> tensor<i32>
    %23 = nn.sub %21, %22 : tensor<1x2x4xi32>, tensor<i32> -> tensor<1x2x4xi32>
    %y2_output_quantized = nn.fully_connected %23, %3 : tensor<1x2x4xi32>, tensor<2x4xi32> -> tensor<1x2x2xi32>
    %m1_output_quantized_cast_output = nn.cast %m1_output_quantized : tensor<1x2x3xi32> -> tensor<1x2x3xf32>
    %y2_output_quantized_cast_output = nn.cast %y2_output_quantized : tensor<1x2x2xi32> -> tensor<1x2x2xf32>
    %m1 = nn.mul %m1_output_quantized_cast_output, %x_scale_w1_scale_mul : tensor<1x2x3xf32>, tensor<f32> -> tensor<1x2x3xf32>
    %y2 = nn.mul %y2_output_quantized_cast_output, %x_scale_w2_scale_mul : tensor<1x2x2xf32>, tensor<f32> -> tensor<1x2x2xf32>
    %y1 = nn.add %m1, %b1 : tensor<1x2x3xf32>, tensor<3xf32> -> tensor<1x2x3xf32>
    func.return %y2, %y1 : tensor<1x2x2xf32>, tensor<1x2x3xf32>
  }
}

// -----

// A "dynamic_fc" fusion that does not hold a dynamically quantized product is refused.
delegate.executable private @not_dynamic target("cpu") {
  func.func @entry(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %w = nn.constant dense<0.5> : tensor<4x4xf32>
    %s = nn.constant dense<2.0> : tensor<f32>
    // expected-error @+1 {{lower-cpu: the 'dynamic_fc' fusion does not hold a chain of its kind}}
    %f = "cpu.fusion"() <{kind = "dynamic_fc"}> ({
      %m = nn.fully_connected %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
      %r = nn.mul %m, %s : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
      "cpu.yield"(%r) : (tensor<2x4xf32>) -> ()
    }) : () -> tensor<2x4xf32>
    func.return %f : tensor<2x4xf32>
  }
}
