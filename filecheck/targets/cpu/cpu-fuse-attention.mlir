// RUN: irc-opt %s --split-input-file -p cpu-fuse | filecheck %s
// RUN: irc-opt %s --split-input-file -p cpu-fuse,cpu-fuse | irc-opt --split-input-file | filecheck %s
// RUN: irc-opt %s --split-input-file -p cpu-fuse,cpu-plan-memory,cpu-codegen | filecheck %s --check-prefix=CODE

// The head transposes of a BERT-style attention (query and value [S, H, Dh] -> [H, S, Dh],
// keys -> [H, Dh, S], the result back to [S, H, Dh]) whose only use is the attention go into
// one "attention" fusion with it: the kernel reads the heads in place through strides.
// CHECK-LABEL: delegate.executable private @heads
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "attention"}> ({
// CHECK-NEXT:      %[[Q:.*]] = nn.transpose %q perm = [0, 2, 1, 3]
// CHECK-NEXT:      %[[K:.*]] = nn.transpose %k perm = [0, 2, 3, 1]
// CHECK-NEXT:      %[[V:.*]] = nn.transpose %v perm = [0, 2, 1, 3]
// CHECK-NEXT:      %[[O:.*]] = nn.attention %[[Q]], %[[K]], %[[V]], %m scale = 0.125 key_transposed = true
// CHECK-NEXT:      %[[T:.*]] = nn.transpose %[[O]] perm = [0, 2, 1, 3]
// CHECK-NEXT:      "cpu.yield"(%[[T]]) : (tensor<1x5x2x16xf32>) -> ()
// CHECK-NEXT:    }) : () -> tensor<1x5x2x16xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %[[F]] shape = [1, 5, 32]
// The C reads %q, %k, %v where the transposes' inputs are (head h at h * 16, rows 32
// apart; keys [N][D]: k_t = 1) and writes the merged layout (no transpose kernel).
// CODE-LABEL: delegate.executable private @heads
// CODE-NOT:   nn.transpose
// CODE:      static const long qo[] = {0, 16};
// CODE:      static const irc_att_layout lay = {qo, ko, vo, oo, 32, 32, 32, 32, 1};
// CODE:      irc_attention(in0, in1, in2, in3, out0, 2, 5, 5, 16, 16, 0.125f, mo, 0, 1, &lay);
delegate.executable private @heads target("cpu") {
  func.func @entry(%q: tensor<1x5x2x16xf32>, %k: tensor<1x5x2x16xf32>, %v: tensor<1x5x2x16xf32>, %m: tensor<1x1x1x5xf32>) -> tensor<1x5x32xf32> {
    %qt = nn.transpose %q perm = [0, 2, 1, 3] : tensor<1x5x2x16xf32> -> tensor<1x2x5x16xf32>
    %kt = nn.transpose %k perm = [0, 2, 3, 1] : tensor<1x5x2x16xf32> -> tensor<1x2x16x5xf32>
    %vt = nn.transpose %v perm = [0, 2, 1, 3] : tensor<1x5x2x16xf32> -> tensor<1x2x5x16xf32>
    %o = nn.attention %qt, %kt, %vt, %m scale = 0.125 key_transposed = true : tensor<1x2x5x16xf32>, tensor<1x2x16x5xf32>, tensor<1x2x5x16xf32>, tensor<1x1x1x5xf32> -> tensor<1x2x5x16xf32>
    %ot = nn.transpose %o perm = [0, 2, 1, 3] : tensor<1x2x5x16xf32> -> tensor<1x5x2x16xf32>
    %r = nn.reshape %ot shape = [1, 5, 32] : tensor<1x5x2x16xf32> -> tensor<1x5x32xf32>
    func.return %r : tensor<1x5x32xf32>
  }
}

// -----

// Keys not transposed by the exporter ([H, S, Dh], key_transposed = false) and no merging
// transpose: the input transposes alone join the fusion, which yields the attention. A
// transpose with a second use stays outside (its result is needed), and one that would
// leave the query's last axis strided is not folded.
// CHECK-LABEL: delegate.executable private @partial
// CHECK:         %[[Q:.*]] = nn.transpose %q perm = [0, 2, 1, 3]
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "attention"}> ({
// CHECK-NEXT:      %[[K:.*]] = nn.transpose %k perm = [0, 2, 1, 3]
// CHECK-NEXT:      %[[V:.*]] = nn.transpose %v perm = [0, 2, 1, 3]
// CHECK-NEXT:      %[[O:.*]] = nn.attention %[[Q]], %[[K]], %[[V]] scale
// CHECK-NEXT:      "cpu.yield"(%[[O]]) : (tensor<1x2x5x16xf32>) -> ()
// CHECK:         func.return %[[F]], %[[Q]]
// CHECK-LABEL: delegate.executable private @strided_query
// CHECK-NOT:     cpu.fusion
// CHECK:         func.return
delegate.executable private @partial target("cpu") {
  func.func @entry(%q: tensor<1x5x2x16xf32>, %k: tensor<1x5x2x16xf32>, %v: tensor<1x5x2x16xf32>) -> (tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>) {
    %qt = nn.transpose %q perm = [0, 2, 1, 3] : tensor<1x5x2x16xf32> -> tensor<1x2x5x16xf32>
    %kt = nn.transpose %k perm = [0, 2, 1, 3] : tensor<1x5x2x16xf32> -> tensor<1x2x5x16xf32>
    %vt = nn.transpose %v perm = [0, 2, 1, 3] : tensor<1x5x2x16xf32> -> tensor<1x2x5x16xf32>
    %o = nn.attention %qt, %kt, %vt scale = 0.25 : tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32> -> tensor<1x2x5x16xf32>
    func.return %o, %qt : tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>
  }
}
delegate.executable private @strided_query target("cpu") {
  func.func @entry(%q: tensor<1x2x16x5xf32>, %k: tensor<1x2x5x16xf32>, %v: tensor<1x2x5x16xf32>) -> tensor<1x2x5x16xf32> {
    %qt = nn.transpose %q perm = [0, 1, 3, 2] : tensor<1x2x16x5xf32> -> tensor<1x2x5x16xf32>
    %o = nn.attention %qt, %k, %v scale = 0.25 : tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32> -> tensor<1x2x5x16xf32>
    func.return %o : tensor<1x2x5x16xf32>
  }
}

// -----

// A float fully_connected whose only use is a residual add stays unfused (in irc_conv2d's
// epilogue the add cost more than its own kernel: targets/cpu/fuse.py, residual_adds).
// CHECK-LABEL: delegate.executable private @fc_residual
// CHECK-NOT:     cpu.fusion
// CHECK:         func.return
// CODE-LABEL: delegate.executable private @fc_residual
// CODE:       irc_conv2d(1, in0, {{.*}}, 8, 8, 0, NULL, 0);
delegate.executable private @fc_residual target("cpu") {
  func.func @entry(%x: tensor<1x3x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<1x3x8xf32> {
    %c = nn.fully_connected %x, %w, %b : tensor<1x3x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<1x3x8xf32>
    %a = nn.add %c, %x : tensor<1x3x8xf32>, tensor<1x3x8xf32> -> tensor<1x3x8xf32>
    func.return %a : tensor<1x3x8xf32>
  }
}
