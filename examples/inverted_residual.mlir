// A MobileNetV2 inverted-residual block in the nn dialect (NHWC, as TFLite imports it), with
// two things canonicalize cleans up: a transpose pair that cancels and a reshape chain.
//
//   irc-opt examples/inverted_residual.mlir -p canonicalize,infer-shapes

func.func @main(%x: tensor<1x16x16x24xf32>) -> tensor<1x16x16x24xf32>
    attributes {irc.input_names = ["input"], irc.output_names = ["output"]} {
  %w_expand = nn.constant dense<0.01> : tensor<144x1x1x24xf32>
  %b_expand = nn.constant dense<0.0> : tensor<144xf32>
  %w_dw = nn.constant dense<0.1> : tensor<144x3x3x1xf32>
  %b_dw = nn.constant dense<0.0> : tensor<144xf32>
  %w_project = nn.constant dense<0.02> : tensor<24x1x1x144xf32>
  %b_project = nn.constant dense<0.0> : tensor<24xf32>
  %expand = nn.conv2d %x, %w_expand, %b_expand layout = "NHWC" activation = "relu6"
      : tensor<1x16x16x24xf32>, tensor<144x1x1x24xf32>, tensor<144xf32> -> tensor<1x16x16x144xf32>
  %dw = nn.conv2d %expand, %w_dw, %b_dw pads = [1, 1, 1, 1] groups = 144 layout = "NHWC"
      activation = "relu6"
      : tensor<1x16x16x144xf32>, tensor<144x3x3x1xf32>, tensor<144xf32> -> tensor<?x16x16x144xf32>
  %project = nn.conv2d %dw, %w_project, %b_project layout = "NHWC"
      : tensor<?x16x16x144xf32>, tensor<24x1x1x144xf32>, tensor<24xf32> -> tensor<?x16x16x24xf32>
  %to_nchw = nn.transpose %project perm = [0, 3, 1, 2]
      : tensor<?x16x16x24xf32> -> tensor<?x24x16x16xf32>
  %to_nhwc = nn.transpose %to_nchw perm = [0, 2, 3, 1]
      : tensor<?x24x16x16xf32> -> tensor<?x16x16x24xf32>
  %sum = nn.add %x, %to_nhwc : tensor<1x16x16x24xf32>, tensor<?x16x16x24xf32> -> tensor<1x16x16x24xf32>
  %flat = nn.reshape %sum shape = [1, 256, 24] : tensor<1x16x16x24xf32> -> tensor<1x256x24xf32>
  %back = nn.reshape %flat shape = [1, 16, 16, 24] : tensor<1x256x24xf32> -> tensor<1x16x16x24xf32>
  func.return %back : tensor<1x16x16x24xf32>
}
