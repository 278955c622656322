// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-fuse | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p cpu-fuse,cpu-fuse | irc-opt --split-input-file | filecheck %s

// A quantized swish mul(x, sigmoid(x)): the sigmoid table and lower-quantized's integer
// mul (casts, zero points, product, rescale) depend on x's byte alone: one "qtable"
// fusion (a 256-entry lookup); the zero-point constants stay above it.
// CHECK-LABEL: delegate.executable private @swish
// CHECK:         nn.constant dense<-5>
// CHECK:         nn.constant dense<-128>
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "qtable"}> ({
// CHECK-NEXT:      %[[S:.*]] = nn.sigmoid %x
// CHECK-NEXT:      quant.scast %x
// CHECK-NEXT:      nn.cast
// CHECK-NEXT:      nn.sub
// CHECK-NEXT:      quant.scast %[[S]]
// CHECK-NEXT:      nn.cast
// CHECK-NEXT:      nn.sub
// CHECK-NEXT:      nn.mul
// CHECK-NEXT:      %[[R:.*]] = quant.rescale
// CHECK-NEXT:      "cpu.yield"(%[[R]])
// CHECK-NEXT:    }) : () -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>
// CHECK-NEXT:    func.return %[[F]]
delegate.executable private @swish target("cpu") {
  func.func @entry(%x: tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>> {
    %s = nn.sigmoid %x : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>> -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
    %y = nn.mul %x, %s : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>> -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>
    func.return %y : tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>
  }
}

// -----

// A fused relu6 narrower than the result's range: the clamp after the rescale joins the
// table (the chain ends at the last scast).
// CHECK-LABEL: delegate.executable private @swish_relu6
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "qtable"}> ({
// CHECK:           quant.rescale
// CHECK-NEXT:      quant.scast
// CHECK-NEXT:      nn.clip
// CHECK-NEXT:      %[[L:.*]] = quant.scast
// CHECK-NEXT:      "cpu.yield"(%[[L]])
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return %[[F]]
delegate.executable private @swish_relu6 target("cpu") {
  func.func @entry(%x: tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-128>> {
    %s = nn.sigmoid %x : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>> -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
    %y = nn.mul %x, %s activation = "relu6" : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>> -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-128>>
    func.return %y : tensor<2x8x!quant.uniform<i8:f32, 0.03:-128>>
  }
}

// -----

// Not tables: a sigmoid whose result is also returned, a mul of two different values
// (x * sigmoid(y)), a lone sigmoid (its own table already), a broadcasting mul, a float
// swish. The three quantized muls are "qmul" fusions (one kernel each).
// CHECK-LABEL: delegate.executable private @not_tables
// CHECK-NOT:     qtable
// CHECK:         "cpu.fusion"() <{kind = "qmul"}>
// CHECK-NOT:     qtable
// CHECK:         "cpu.fusion"() <{kind = "qmul"}>
// CHECK-NOT:     qtable
// CHECK:         "cpu.fusion"() <{kind = "qmul"}>
// CHECK-NOT:     qtable
// CHECK:         nn.mul %f, %g
// CHECK-NEXT:    func.return
delegate.executable private @not_tables target("cpu") {
  func.func @entry(%x: tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, %z: tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, %b: tensor<8x!quant.uniform<i8:f32, 0.05:-5>>, %f: tensor<2x8xf32>) -> (tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>, tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>, tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>, tensor<2x8xf32>) {
    %s = nn.sigmoid %x : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>> -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
    %y = nn.mul %x, %s : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>> -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>
    %t = nn.sigmoid %z : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>> -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
    %u = nn.mul %x, %t : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>> -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>
    %v = nn.sigmoid %z : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>> -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
    %w = nn.mul %x, %b : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, tensor<8x!quant.uniform<i8:f32, 0.05:-5>> -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>
    %g = nn.sigmoid %f : tensor<2x8xf32> -> tensor<2x8xf32>
    %h = nn.mul %f, %g : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    func.return %y, %s, %u, %v, %w, %h : tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>, tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>, tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>, tensor<2x8xf32>
  }
}

// -----

// A "qtable" fusion holds exactly one quant.rescale (the op it is named after).
delegate.executable private @bad_table target("cpu") {
  func.func @entry(%x: tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>> {
    // expected-error@+1 {{a 'qtable' fusion holds exactly one 'quant.rescale'}}
    %f = "cpu.fusion"() <{kind = "qtable"}> ({
      %s = nn.sigmoid %x : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>> -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
      %t = nn.tanh %s : tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>> -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
      "cpu.yield"(%t) : (tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>) -> ()
    }) : () -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
    func.return %f : tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
  }
}

// -----

// Squeeze-excitation: an int8 mul by a [1, 1, 1, C] scale (zero point 0: no subtraction)
// is one "qmul" fusion, its clamp included. Not fused: a scale per row ([2, 1] beside
// [2, 8]: it does not repeat along leading dimensions).
// CHECK-LABEL: delegate.executable private @se
// CHECK:         %[[F:.*]] = "cpu.fusion"() <{kind = "qmul"}> ({
// CHECK-NEXT:      nn.cast
// CHECK-NEXT:      nn.sub
// CHECK-NEXT:      nn.cast
// CHECK-NEXT:      nn.mul
// CHECK-NEXT:      quant.rescale
// CHECK-NEXT:      quant.scast
// CHECK-NEXT:      %[[C:.*]] = nn.clip
// CHECK-NEXT:      "cpu.yield"(%[[C]])
// CHECK-NEXT:    })
// CHECK-NOT:     cpu.fusion
// CHECK:         func.return %{{.*}}, %{{.*}} :
delegate.executable private @se target("cpu") {
  func.func @entry(%x: tensor<1x4x4x8x!quant.uniform<i8:f32, 0.05:-5>>, %s: tensor<1x1x1x8x!quant.uniform<i8:f32, 0.00390625>>, %r: tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, %t: tensor<2x1x!quant.uniform<i8:f32, 0.00390625:-128>>) -> (tensor<1x4x4x8x!quant.uniform<i8:f32, 0.03:-128>>, tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>) {
    %y = nn.mul %x, %s activation = "relu6" : tensor<1x4x4x8x!quant.uniform<i8:f32, 0.05:-5>>, tensor<1x1x1x8x!quant.uniform<i8:f32, 0.00390625>> -> tensor<1x4x4x8x!quant.uniform<i8:f32, 0.03:-128>>
    %z = nn.mul %r, %t : tensor<2x8x!quant.uniform<i8:f32, 0.05:-5>>, tensor<2x1x!quant.uniform<i8:f32, 0.00390625:-128>> -> tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>
    func.return %y, %z : tensor<1x4x4x8x!quant.uniform<i8:f32, 0.03:-128>>, tensor<2x8x!quant.uniform<i8:f32, 0.03:-100>>
  }
}
