// RUN: irc-opt %s -p 'convert-layout{to=NHWC},canonicalize' | filecheck %s

// nn.silu (canonicalize's x * sigmoid(x), YOLOv8's and MobileViT's activation) is elementwise:
// the layout change passes through it, so two NCHW convolutions with a SiLU between them
// keep one transpose at the input and one at the output, none around the SiLU.
// CHECK-LABEL: func.func @conv_silu_conv
// CHECK:         %[[XT:.*]] = nn.transpose %x perm = [0, 2, 3, 1]
// CHECK:         %[[A:.*]] = nn.conv2d %[[XT]], {{.*}} layout = "NHWC"
// CHECK-NEXT:    %[[S:.*]] = nn.silu %[[A]] : tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
// CHECK:         %[[B:.*]] = nn.conv2d %[[S]], {{.*}} layout = "NHWC"
// CHECK-NEXT:    %[[O:.*]] = nn.transpose %[[B]] perm = [0, 3, 1, 2]
// CHECK-NEXT:    func.return %[[O]] : tensor<1x4x8x8xf32>
func.func @conv_silu_conv(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = nn.constant dense<0.25> : tensor<4x3x3x3xf32>
  %w2 = nn.constant dense<0.5> : tensor<4x4x1x1xf32>
  %a = nn.conv2d %x, %w pads = [1, 1, 1, 1] layout = "NCHW" : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
  %s = nn.silu %a : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %b = nn.conv2d %s, %w2 layout = "NCHW" : tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x8x8xf32>
  func.return %b : tensor<1x4x8x8xf32>
}
