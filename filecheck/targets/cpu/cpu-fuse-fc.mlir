// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-fuse | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-fuse,cpu-fuse | irc-opt --split-input-file | filecheck %s
// RUN: env IRC_CPU_FUSE_FC=0 irc-opt %s --split-input-file -p cpu-fuse | filecheck %s --check-prefix=OFF

// A float fully_connected whose only use is a gelu (a transformer's FFN): one "fc" fusion
// where the gelu was (the gelu runs on the product's register tile).
// CHECK-LABEL: delegate.executable private @fc_gelu
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "fc"}> ({
// CHECK-NEXT:      %[[P:.*]] = nn.fully_connected %x, %w, %b :
// CHECK-NEXT:      %[[G:.*]] = nn.gelu %[[P]] approximate = "tanh"
// CHECK-NEXT:      "cpu.yield"(%[[G]]) : (tensor<2x5x40xf32>) -> ()
// CHECK-NEXT:    }) : () -> tensor<2x5x40xf32>
// CHECK-NEXT:    func.return %[[F]]
// OFF-LABEL:   delegate.executable private @fc_gelu
// OFF-NOT:       cpu.fusion
// OFF:           nn.gelu
delegate.executable private @fc_gelu target("cpu") {
  func.func @entry(%x: tensor<2x5x24xf32>) -> tensor<2x5x40xf32> {
    %w = nn.constant dense<0.25> : tensor<40x24xf32>
    %b = nn.constant dense<-0.5> : tensor<40xf32>
    %p = nn.fully_connected %x, %w, %b : tensor<2x5x24xf32>, tensor<40x24xf32>, tensor<40xf32> -> tensor<2x5x40xf32>
    %g = nn.gelu %p approximate = "tanh" : tensor<2x5x40xf32> -> tensor<2x5x40xf32>
    func.return %g : tensor<2x5x40xf32>
  }
}

// -----

// A residual add of a same-shaped tensor after the product (either operand), with its
// activation, and one without an activation whose only use is a relu (the relu joins).
// CHECK-LABEL: delegate.executable private @fc_residual
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "fc"}> ({
// CHECK-NEXT:      %[[P:.*]] = nn.fully_connected %x, %w activation = "relu"
// CHECK-NEXT:      %[[A:.*]] = nn.add %r, %[[P]] activation = "relu6"
// CHECK-NEXT:      "cpu.yield"(%[[A]]) : (tensor<6x16xf32>) -> ()
// CHECK-NEXT:    }) : () -> tensor<6x16xf32>
// CHECK:         %[[H:.*]] = "cpu.fusion"() <{kind = "fc"}> ({
// CHECK-NEXT:      %[[Q:.*]] = nn.fully_connected %[[F]], %w :
// CHECK-NEXT:      %[[B:.*]] = nn.add %[[Q]], %x :
// CHECK-NEXT:      %[[R:.*]] = nn.relu %[[B]]
// CHECK-NEXT:      "cpu.yield"(%[[R]]) : (tensor<6x16xf32>) -> ()
// CHECK-NEXT:    }) : () -> tensor<6x16xf32>
// CHECK-NEXT:    func.return %[[H]]
// OFF-LABEL:   delegate.executable private @fc_residual
// OFF-NOT:       cpu.fusion
delegate.executable private @fc_residual target("cpu") {
  func.func @entry(%x: tensor<6x16xf32>, %r: tensor<6x16xf32>) -> tensor<6x16xf32> {
    %w = nn.constant dense<0.5> : tensor<16x16xf32>
    %p = nn.fully_connected %x, %w activation = "relu" : tensor<6x16xf32>, tensor<16x16xf32> -> tensor<6x16xf32>
    %a = nn.add %r, %p activation = "relu6" : tensor<6x16xf32>, tensor<6x16xf32> -> tensor<6x16xf32>
    %q = nn.fully_connected %a, %w : tensor<6x16xf32>, tensor<16x16xf32> -> tensor<6x16xf32>
    %s = nn.add %q, %x : tensor<6x16xf32>, tensor<6x16xf32> -> tensor<6x16xf32>
    %y = nn.relu %s : tensor<6x16xf32> -> tensor<6x16xf32>
    func.return %y : tensor<6x16xf32>
  }
}

// -----

// An add of two products (DeiT's distillation heads) joins the first one's fusion; the
// second product runs alone, its result the residual. An add of a conv2d and a product
// goes to the product (the conv2d's "conv_add" does not take it too).
// CHECK-LABEL: delegate.executable private @two_products
// CHECK:         %[[Q:.*]] = nn.fully_connected %x, %w :
// CHECK-NEXT:    %[[F:.*]] = "cpu.fusion"() <{kind = "fc"}> ({
// CHECK-NEXT:      %[[P:.*]] = nn.fully_connected %x, %v :
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[P]], %[[Q]] :
// CHECK-NEXT:      "cpu.yield"(%[[A]])
// CHECK-NEXT:    })
// CHECK:         %[[C:.*]] = nn.conv2d
// CHECK:         %[[G:.*]] = "cpu.fusion"() <{kind = "fc"}> ({
// CHECK-NEXT:      %[[R:.*]] = nn.fully_connected %i, %k :
// CHECK-NEXT:      %[[B:.*]] = nn.add %[[C]], %[[R]] :
// CHECK-NEXT:      "cpu.yield"(%[[B]])
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return %[[F]], %[[G]]
// Without the fc fusions the conv2d takes the add.
// OFF-LABEL:   delegate.executable private @two_products
// OFF-NOT:       kind = "fc"
// OFF:           "cpu.fusion"() <{kind = "conv_add"}>
// OFF-NOT:       cpu.fusion
delegate.executable private @two_products target("cpu") {
  func.func @entry(%x: tensor<1x8xf32>, %i: tensor<1x2x2x8xf32>) -> (tensor<1x8xf32>, tensor<1x2x2x8xf32>) {
    %v = nn.constant dense<0.25> : tensor<8x8xf32>
    %w = nn.constant dense<0.5> : tensor<8x8xf32>
    %p = nn.fully_connected %x, %v : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %q = nn.fully_connected %x, %w : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %a = nn.add %p, %q : tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8xf32>
    %cw = nn.constant dense<0.5> : tensor<8x1x1x8xf32>
    %c = nn.conv2d %i, %cw layout = "NHWC" : tensor<1x2x2x8xf32>, tensor<8x1x1x8xf32> -> tensor<1x2x2x8xf32>
    %k = nn.constant dense<0.125> : tensor<8x8xf32>
    %r = nn.fully_connected %i, %k : tensor<1x2x2x8xf32>, tensor<8x8xf32> -> tensor<1x2x2x8xf32>
    %b = nn.add %c, %r : tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32> -> tensor<1x2x2x8xf32>
    func.return %a, %b : tensor<1x8xf32>, tensor<1x2x2x8xf32>
  }
}

// -----

// Not fused: a product with two uses, one followed by a broadcasting add, and a gelu after
// a product with an activation of its own (each product runs `irc_fc` alone, unfused).
// CHECK-LABEL: delegate.executable private @fc_alone
// CHECK-NOT:     cpu.fusion
// CHECK:         func.return
delegate.executable private @fc_alone target("cpu") {
  func.func @entry(%x: tensor<3x8xf32>, %b: tensor<8xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) {
    %w = nn.constant dense<0.5> : tensor<8x8xf32>
    %p = nn.fully_connected %x, %w : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
    %g = nn.gelu %p : tensor<3x8xf32> -> tensor<3x8xf32>
    %e = nn.exp %p : tensor<3x8xf32> -> tensor<3x8xf32>
    %q = nn.fully_connected %x, %w : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
    %a = nn.add %q, %b : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
    %s = nn.fully_connected %x, %w activation = "relu" : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
    %h = nn.gelu %s : tensor<3x8xf32> -> tensor<3x8xf32>
    func.return %g, %e, %a, %h : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
  }
}

// -----

// Not fused: weights computed at run time, a tanh activation (the epilogue has none), an
// integer product (each with a gelu after it), and a product in an executable of another
// target.
// CHECK-LABEL: delegate.executable private @unfusable
// CHECK-NOT:     cpu.fusion
// CHECK-LABEL: delegate.executable private @other_target target("opencl")
// CHECK-NOT:     cpu.fusion
delegate.executable private @unfusable target("cpu") {
  func.func @entry(%x: tensor<3x8xf32>, %v: tensor<8x8xf32>, %i: tensor<3x8xi32>) -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xi32>) {
    %w = nn.constant dense<0.5> : tensor<8x8xf32>
    %p = nn.fully_connected %x, %v : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
    %pg = nn.gelu %p : tensor<3x8xf32> -> tensor<3x8xf32>
    %t = nn.fully_connected %x, %w activation = "tanh" : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
    %tr = nn.add %t, %x : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
    %wi = nn.constant dense<2> : tensor<8x8xi32>
    %n = nn.fully_connected %i, %wi : tensor<3x8xi32>, tensor<8x8xi32> -> tensor<3x8xi32>
    %nr = nn.add %n, %i : tensor<3x8xi32>, tensor<3x8xi32> -> tensor<3x8xi32>
    func.return %pg, %tr, %nr : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xi32>
  }
}
delegate.executable private @other_target target("opencl") {
  func.func @entry(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
    %w = nn.constant dense<0.5> : tensor<8x8xf32>
    %p = nn.fully_connected %x, %w : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
    %g = nn.gelu %p : tensor<3x8xf32> -> tensor<3x8xf32>
    func.return %g : tensor<3x8xf32>
  }
}
