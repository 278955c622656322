// RUN: irc-translate --emit-c %s | filecheck %s

// nn.batch_matmul: the operands' matrix offsets per broadcast output batch as constant
// tables, adj_x / adj_y as element strides of one loop nest. x [2][1][3][8] broadcasts over
// y [4][8][5]: 8 batches, x's offsets step every 4 batches, y's cycle through its 4.
// CHECK:       /* nn.batch_matmul 2x1x3x8, 4x8x5 -> 2x4x3x5 */
// CHECK-NEXT:  {
// CHECK-NEXT:    static const long xo[] = {0, 0, 0, 0, 24, 24, 24, 24};
// CHECK-NEXT:    static const long yo[] = {0, 40, 80, 120, 0, 40, 80, 120};
// CHECK-NEXT:    irc_batch_matmul(in0, in1, out0, 8, 3, 8, 5, xo, yo, 8, 1, 5, 1);
// adj_x and adj_y: x read as [K][M], y as [N][K].
// CHECK:       /* nn.batch_matmul 3x7x2, 3x6x7 -> 3x2x6 */
// CHECK:         irc_batch_matmul(in0, in1, out0, 3, 2, 7, 6, xo, yo, 1, 2, 1, 7);
delegate.executable private @bcast target("cpu") {
  func.func @entry(%x: tensor<2x1x3x8xf32>, %y: tensor<4x8x5xf32>) -> tensor<2x4x3x5xf32> {
    %z = nn.batch_matmul %x, %y : tensor<2x1x3x8xf32>, tensor<4x8x5xf32> -> tensor<2x4x3x5xf32>
    func.return %z : tensor<2x4x3x5xf32>
  }
}
delegate.executable private @adj target("cpu") {
  func.func @entry(%x: tensor<3x7x2xf32>, %y: tensor<3x6x7xf32>) -> tensor<3x2x6xf32> {
    %z = nn.batch_matmul %x, %y adj_x = true adj_y = true : tensor<3x7x2xf32>, tensor<3x6x7xf32> -> tensor<3x2x6xf32>
    func.return %z : tensor<3x2x6xf32>
  }
}
