// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-codegen | filecheck %s

// An "attention" fusion whose transpose would leave the query's last axis strided (the
// kernel reads query rows with unit stride) is not a chain of its kind: refused, located.
delegate.executable private @strided target("cpu") {
  func.func @entry(%q: tensor<1x2x16x5xf32>, %k: tensor<1x2x5x16xf32>, %v: tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32> attributes {cpu.workspace = 0 : i64} {
    // expected-error @+1 {{cpu-codegen: the 'attention' fusion does not hold a chain of its kind}}
    %f = "cpu.fusion"() <{kind = "attention"}> ({
      %qt = nn.transpose %q perm = [0, 1, 3, 2] : tensor<1x2x16x5xf32> -> tensor<1x2x5x16xf32>
      %o = nn.attention %qt, %k, %v scale = 0.25 : tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32> -> tensor<1x2x5x16xf32>
      "cpu.yield"(%o) : (tensor<1x2x5x16xf32>) -> ()
    }) {cpu.offsets = array<i64: -1>} : () -> tensor<1x2x5x16xf32>
    func.return %f : tensor<1x2x5x16xf32>
  }
}

// -----

// A planned "attention" fusion: the query and value heads read in place (offsets 0 and 16
// of [S][2][16] rows, 32 apart), the keys given [H][S][Dh] as they are, no transpose kernel.
// CHECK-LABEL: delegate.executable private @planned
// CHECK:         cpu.module @kernels source = "{{.*}}/* irc_fn_0: 1 ops, workspace 0 bytes. */
// CHECK-SAME:      static const long qo[] = {0, 16};
// CHECK-SAME:      static const long ko[] = {0, 80};
// CHECK-SAME:      static const irc_att_layout lay = {qo, ko, vo, oo, 32, 16, 32, 16, 1};
// CHECK-SAME:      irc_attention(in0, in1, in2, NULL, out0, 2, 5, 5, 16, 16, 0.25f, mo, 0, 0, &lay);
// CHECK-NOT:     nn.transpose
delegate.executable private @planned target("cpu") {
  func.func @entry(%q: tensor<1x5x2x16xf32>, %k: tensor<1x2x5x16xf32>, %v: tensor<1x5x2x16xf32>) -> tensor<1x2x5x16xf32> attributes {cpu.workspace = 0 : i64} {
    %f = "cpu.fusion"() <{kind = "attention"}> ({
      %qt = nn.transpose %q perm = [0, 2, 1, 3] : tensor<1x5x2x16xf32> -> tensor<1x2x5x16xf32>
      %vt = nn.transpose %v perm = [0, 2, 1, 3] : tensor<1x5x2x16xf32> -> tensor<1x2x5x16xf32>
      %o = nn.attention %qt, %k, %vt scale = 0.25 : tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32> -> tensor<1x2x5x16xf32>
      "cpu.yield"(%o) : (tensor<1x2x5x16xf32>) -> ()
    }) {cpu.offsets = array<i64: -1>} : () -> tensor<1x2x5x16xf32>
    func.return %f : tensor<1x2x5x16xf32>
  }
}
