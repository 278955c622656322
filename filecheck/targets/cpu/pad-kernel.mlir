// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-cpu | filecheck %s

// A constant pad of rank <= 4 runs the irc_pad kernel (dimensions 1 in front, element size
// and fill value passed; rows split over the threads when big): here the channel pad of a
// BlazeFace residual branch, and a rank-2 int8 pad with a nonzero fill.
// CHECK-LABEL: delegate.executable private @pad_cpu_0 target("cpu") {
// CHECK:           static const long d[4] = {1, 8, 8, 24};
// CHECK-SAME:      static const long lo[4] = {0, 0, 0, 0};
// CHECK-SAME:      static const long hi[4] = {0, 0, 0, 4};
// CHECK-SAME:      const float fill = 0.0f;
// CHECK-SAME:      irc_pad(out0, in0, sizeof(float), d, lo, hi, &fill);
// CHECK-SAME:      static const long d[4] = {1, 1, 3, 5};
// CHECK-SAME:      static const long lo[4] = {0, 0, 1, 2};
// CHECK-SAME:      static const long hi[4] = {0, 0, 0, 1};
// CHECK-SAME:      const int8_t fill = -7;
// CHECK-SAME:      irc_pad(out1, in1, sizeof(int8_t), d, lo, hi, &fill);
delegate.executable private @pad_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x8x8x24xf32>, %q: tensor<3x5xi8>) -> (tensor<1x8x8x28xf32>, tensor<4x8xi8>) {
    %y = nn.pad %x pads = [0, 0, 0, 0, 0, 0, 0, 4] : tensor<1x8x8x24xf32> -> tensor<1x8x8x28xf32>
    %z = nn.pad %q pads = [1, 0, 2, 1] value = -7.0 : tensor<3x5xi8> -> tensor<4x8xi8>
    func.return %y, %z : tensor<1x8x8x28xf32>, tensor<4x8xi8>
  }
}

// -----

// Rank 5: the fill, then the input copied inside, as loop nests (no kernel call).
// CHECK-LABEL: delegate.executable private @pad5_cpu_0 target("cpu") {
// CHECK-NOT:       irc_pad(
// CHECK:           po[i0] = 1.5f;
// CHECK-SAME:      po[{{.*}}] = px[{{.*}}];
delegate.executable private @pad5_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<2x3x4x5x6xf32>) -> tensor<2x4x4x5x7xf32> {
    %y = nn.pad %x pads = [0, 0, 1, 0, 0, 0, 0, 0, 0, 1] value = 1.5 : tensor<2x3x4x5x6xf32> -> tensor<2x4x4x5x7xf32>
    func.return %y : tensor<2x4x4x5x7xf32>
  }
}

// -----

// Reflection is not a constant pad: the target refuses it with the reason.
delegate.executable private @reflect_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x4x4x2xf32>) -> tensor<1x6x6x2xf32> {
    // expected-error @+1 {{reflect}}
    %y = nn.pad %x pads = [0, 0, 1, 1, 1, 1, 0, 0] mode = "reflect" : tensor<1x4x4x2xf32> -> tensor<1x6x6x2xf32>
    func.return %y : tensor<1x6x6x2xf32>
  }
}
