// RUN: irc-opt %s -p 'widen-fp16{targets=cpu}' | filecheck %s --check-prefix=NATIVE
// RUN: irc-opt %s -p 'widen-fp16' | filecheck %s --check-prefix=WIDENED

// widen-fp16{targets=...} asks each target `computes_float16`: the cpu target computes
// float16 (float16 storage, float32 arithmetic), so a model compiled for it keeps its f16
// constants, values and casts. Without targets the pass widens as always.
// NATIVE-LABEL: func.func @keep_io_types
// NATIVE-NEXT:    %[[H:.*]] = nn.cast %{{.*}} : tensor<4xf32> -> tensor<4xf16>
// NATIVE-NEXT:    %[[W:.*]] = nn.constant {{.*}} : tensor<4xf16>
// NATIVE-NEXT:    %[[A:.*]] = nn.add %[[H]], %[[W]] : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
// NATIVE-NEXT:    %[[Y:.*]] = nn.cast %[[A]] : tensor<4xf16> -> tensor<4xf32>
// NATIVE-NEXT:    func.return %[[Y]] : tensor<4xf32>
// WIDENED-LABEL: func.func @keep_io_types
// WIDENED-NEXT:    %[[W:.*]] = nn.constant {{.*}} : tensor<4xf32>
// WIDENED-NEXT:    %[[A:.*]] = nn.add %{{.*}}, %[[W]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// WIDENED-NEXT:    func.return %[[A]] : tensor<4xf32>
func.func @keep_io_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = nn.cast %x : tensor<4xf32> -> tensor<4xf16>
  %w = nn.constant dense<[1.0, -2.0, 0.5, 65504.0]> : tensor<4xf16>
  %a = nn.add %h, %w : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  %y = nn.cast %a : tensor<4xf16> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
