// RUN: irc-opt %s --split-input-file --verify-diagnostics -p lower-cpu | filecheck %s

// A large elementwise loop nest runs as a task of the library's pool: the op's block
// (declarations and the loop marked parallel) moves into a file-level task function whose
// part runs a range of the outer loop, and the entry calls it through irc_parallel with
// the context struct it fills once. A small one stays inline and serial.
// CHECK-LABEL: delegate.executable private @loops_cpu_0 target("cpu") {
// CHECK:           } irc_fn_0_loops;
// CHECK-SAME:      static void irc_fn_0_loop0(const void *irc_ctx, long irc_part) {
// CHECK-SAME:      irc_pool_range(irc_part, irc_a->parts, 65536, &irc_lo, &irc_hi);
// CHECK-SAME:      for (long i0 = irc_lo; i0 < irc_hi; ++i0) {
// CHECK-SAME:      po[i0] = 1.0f / (1.0f + expf(-x));
// CHECK-SAME:      void irc_fn_0(
// CHECK-SAME:      irc_fn_0_loops irc_loops = {in0, in1, out0, out1, K, ws, 0};
// CHECK-SAME:      irc_loops.parts = irc_pool_parts(65536, 65536.0, IRC_LOOP_PART_WORK, irc_t);
// CHECK-SAME:      irc_parallel(irc_fn_0_loop0, &irc_loops, irc_loops.parts, irc_t);
// CHECK-SAME:      /* nn.add 4x8, 4x8 -> 4x8 */
// CHECK-SAME:      for (long i0 = 0; i0 < 32; ++i0) {
// CHECK-NOT:       irc_fn_0_loop1
delegate.executable private @loops_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x256x256xf32>, %y: tensor<4x8xf32>) -> (tensor<1x256x256xf32>, tensor<4x8xf32>) {
    %s = nn.sigmoid %x : tensor<1x256x256xf32> -> tensor<1x256x256xf32>
    %a = nn.add %y, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    func.return %s, %a : tensor<1x256x256xf32>, tensor<4x8xf32>
  }
}

// -----

// A concat with a fused activation has a second statement after its marked row loop: it
// stays an OpenMP loop inline (no task).
// CHECK-LABEL: delegate.executable private @concat_cpu_0 target("cpu") {
// CHECK-NOT:       irc_fn_0_loops;
// CHECK:           IRC_PARFOR(schedule(static)) /* work: 131072 */
// CHECK-SAME:      for (long r = 0; r < 4096; ++r) {
// CHECK-SAME:      irc_act(
delegate.executable private @concat_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<1x64x64x16xf32>, %y: tensor<1x64x64x16xf32>) -> tensor<1x64x64x32xf32> {
    %c = nn.concat %x, %y axis = 3 activation = "relu" : tensor<1x64x64x16xf32>, tensor<1x64x64x16xf32> -> tensor<1x64x64x32xf32>
    func.return %c : tensor<1x64x64x32xf32>
  }
}
