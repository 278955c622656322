// RUN: irc-opt %s --split-input-file -p outline-delegates | filecheck %s
// RUN: irc-opt %s --split-input-file -p outline-delegates --print-debuginfo \
// RUN:   | filecheck %s --check-prefix=LOC

// One region: a private executable before the function, a public @entry taking the
// captures in capture order, the region's ops moved in, the yield become a return.
// CHECK-LABEL: delegate.executable private @main_opencl_0 target("opencl") {
// CHECK-NEXT:    func.func @entry(%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:      %[[S:.*]] = nn.add %[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:      %[[M:.*]] = nn.mul %[[S]], %[[A]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:      func.return %[[M]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @main(%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[R:.*]] = delegate.dispatch @main_opencl_0::@entry(%[[Y]], %[[X]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[T:.*]] = nn.tanh %[[R]]
// CHECK-NEXT:    func.return %[[T]] : tensor<4xf32>
// CHECK-NOT:   delegate.region
// The executable, its entry and the dispatch take the region's location; moved ops keep theirs.
// LOC-LABEL:   delegate.executable private @main_opencl_0
// LOC:             nn.add {{.*}} loc("[[F:.*]]":[[ADD:[0-9]+]]:5)
// LOC:             func.return {{.*}} loc("[[F]]":[[YIELD:[0-9]+]]:5)
// LOC-NEXT:      } loc("[[F]]":[[REGION:[0-9]+]]:3)
// LOC-NEXT:    } loc("[[F]]":[[REGION]]:3)
// LOC:           delegate.dispatch {{.*}} loc("[[F]]":[[REGION]]:3)
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = delegate.region "opencl" (%a = %y : tensor<4xf32>, %b = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = nn.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %m = nn.mul %s, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    delegate.yield %m : tensor<4xf32>
  }
  %t = nn.tanh %r : tensor<4xf32> -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}

// -----

// Several regions, targets and functions: n counts per function and target in source
// order; each function's executables come just before it, in the order of its regions.
// CHECK-LABEL: delegate.executable private @main_opencl_0 target("opencl") {
// CHECK:       delegate.executable private @main_cpu_0 target("cpu") {
// CHECK:       delegate.executable private @main_opencl_1 target("opencl") {
// CHECK:       func.func @main(%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[A:.*]] = delegate.dispatch @main_opencl_0::@entry(%[[X]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[B:.*]] = delegate.dispatch @main_cpu_0::@entry(%[[A]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[C:.*]] = delegate.dispatch @main_opencl_1::@entry(%[[B]], %[[A]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[C]]
// CHECK:       delegate.executable private @second_opencl_0 target("opencl") {
// CHECK:       func.func @second(
// CHECK-NEXT:    delegate.dispatch @second_opencl_0::@entry(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = delegate.region "opencl" (%p = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = nn.relu %p : tensor<4xf32> -> tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  %b = delegate.region "cpu" (%p = %a : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = nn.exp %p : tensor<4xf32> -> tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  %c = delegate.region "opencl" (%p = %b : tensor<4xf32>, %q = %a : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = nn.add %p, %q : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  func.return %c : tensor<4xf32>
}
func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = delegate.region "opencl" (%p = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = nn.relu %p : tensor<4xf32> -> tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  func.return %a : tensor<4xf32>
}

// -----

// Captured constants are weights the delegate owns: they are cloned into the entry (in
// capture order) instead of becoming arguments. %w is used only by the region: it moves.
// %b is also used on the host: the host keeps its copy. %k is captured by two regions:
// each gets a copy and the host one goes away. %k captured twice yields one copy.
// CHECK-LABEL: delegate.executable private @weights_opencl_0 target("opencl") {
// CHECK-NEXT:    func.func @entry(%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:      %[[W:.*]] = nn.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT:      %[[B:.*]] = nn.constant dense<[1, -2, 3, -4]> : tensor<4xi8>
// CHECK-NEXT:      %[[K:.*]] = arith.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK-NEXT:      %[[M:.*]] = nn.mul %[[X]], %[[W]]
// CHECK-NEXT:      %[[C:.*]] = nn.cast %[[B]]
// CHECK-NEXT:      %[[S:.*]] = nn.add %[[M]], %[[C]]
// CHECK-NEXT:      %[[T:.*]] = nn.add %[[S]], %[[K]]
// CHECK-NEXT:      %[[U:.*]] = nn.mul %[[T]], %[[K]]
// CHECK-NEXT:      func.return %[[U]]
// CHECK:       delegate.executable private @weights_opencl_1 target("opencl") {
// CHECK-NEXT:    func.func @entry(%[[Y:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:      %[[K2:.*]] = arith.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK-NEXT:      %[[V:.*]] = nn.sub %[[Y]], %[[K2]]
// CHECK:       func.func @weights(%[[IN:.*]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi8>) {
// CHECK-NOT:     nn.constant dense<2.000000e+00>
// CHECK-NOT:     arith.constant
// CHECK:         %[[HB:.*]] = nn.constant dense<[1, -2, 3, -4]> : tensor<4xi8>
// CHECK-NEXT:    %[[R:.*]] = delegate.dispatch @weights_opencl_0::@entry(%[[IN]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[R2:.*]] = delegate.dispatch @weights_opencl_1::@entry(%[[R]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[R2]], %[[HB]]
func.func @weights(%in: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi8>) {
  %w = nn.constant dense<2.0> : tensor<4xf32>
  %b = nn.constant dense<[1, -2, 3, -4]> : tensor<4xi8>
  %k = arith.constant dense<0.5> : tensor<4xf32>
  %r = delegate.region "opencl" (%x = %in : tensor<4xf32>, %cw = %w : tensor<4xf32>,
                                 %cb = %b : tensor<4xi8>, %ck = %k : tensor<4xf32>,
                                 %ck2 = %k : tensor<4xf32>) -> (tensor<4xf32>) {
    %m = nn.mul %x, %cw : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %c = nn.cast %cb : tensor<4xi8> -> tensor<4xf32>
    %s = nn.add %m, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %t = nn.add %s, %ck : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %u = nn.mul %t, %ck2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    delegate.yield %u : tensor<4xf32>
  }
  %r2 = delegate.region "opencl" (%y = %r : tensor<4xf32>, %ck = %k : tensor<4xf32>) -> (tensor<4xf32>) {
    %v = nn.sub %y, %ck : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    delegate.yield %v : tensor<4xf32>
  }
  func.return %r2, %b : tensor<4xf32>, tensor<4xi8>
}

// -----

// Several results (one a capture passed straight through), quantized types, and the
// region's attributes carried to the executable.
// CHECK-LABEL: delegate.executable private @multi_cpu_0 target("cpu") attributes {irc.cluster = 3 : i64} {
// CHECK-NEXT:    func.func @entry(%[[A:.*]]: tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, %[[B:.*]]: tensor<2xf32>) -> (tensor<2xf32>, tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2xf32>) {
// CHECK-NEXT:      %[[D:.*]] = quant.dcast %[[A]]
// CHECK-NEXT:      %[[S:.*]] = nn.add %[[D]], %[[B]]
// CHECK-NEXT:      func.return %[[S]], %[[A]], %[[D]] : tensor<2xf32>, tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2xf32>
// CHECK:       func.func @multi(%[[Q:.*]]: {{.*}}, %[[F:.*]]: tensor<2xf32>)
// CHECK-NEXT:    %[[R:.*]], %[[R1:.*]], %[[R2:.*]] = delegate.dispatch @multi_cpu_0::@entry(%[[Q]], %[[F]]) : (tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2xf32>)
// CHECK-NEXT:    func.return %[[R2]], %[[R1]], %[[R]]
func.func @multi(%q: tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, %f: tensor<2xf32>)
    -> (tensor<2xf32>, tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2xf32>) {
  %r:3 = delegate.region "cpu" (%a = %q : tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, %b = %f : tensor<2xf32>)
      -> (tensor<2xf32>, tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2xf32>)
      attributes {irc.cluster = 3 : i64} {
    %d = quant.dcast %a : tensor<2x!quant.uniform<i8:f32, 0.5:-3>> to tensor<2xf32>
    %s = nn.add %d, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    delegate.yield %s, %a, %d : tensor<2xf32>, tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2xf32>
  }
  func.return %r#2, %r#1, %r#0 : tensor<2xf32>, tensor<2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2xf32>
}

// -----

// A region with no captures (all its inputs are its own constants), and one whose only
// capture is a constant: both entries take no arguments.
// CHECK-LABEL: delegate.executable private @no_captures_cpu_0 target("cpu") {
// CHECK-NEXT:    func.func @entry() -> tensor<2xf32> {
// CHECK-NEXT:      %[[C:.*]] = nn.constant dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT:      %[[E:.*]] = nn.exp %[[C]]
// CHECK-NEXT:      func.return %[[E]] : tensor<2xf32>
// CHECK:       delegate.executable private @no_captures_cpu_1 target("cpu") {
// CHECK-NEXT:    func.func @entry() -> tensor<2xf32> {
// CHECK:       func.func @no_captures() -> (tensor<2xf32>, tensor<2xf32>) {
// CHECK-NEXT:    %[[R:.*]] = delegate.dispatch @no_captures_cpu_0::@entry() : () -> tensor<2xf32>
// CHECK-NEXT:    %[[S:.*]] = delegate.dispatch @no_captures_cpu_1::@entry() : () -> tensor<2xf32>
// CHECK-NEXT:    func.return %[[R]], %[[S]]
func.func @no_captures() -> (tensor<2xf32>, tensor<2xf32>) {
  %r = delegate.region "cpu" () -> (tensor<2xf32>) {
    %c = nn.constant dense<1.0> : tensor<2xf32>
    %e = nn.exp %c : tensor<2xf32> -> tensor<2xf32>
    delegate.yield %e : tensor<2xf32>
  }
  %k = nn.constant dense<2.0> : tensor<2xf32>
  %s = delegate.region "cpu" (%a = %k : tensor<2xf32>) -> (tensor<2xf32>) {
    %e = nn.exp %a : tensor<2xf32> -> tensor<2xf32>
    delegate.yield %e : tensor<2xf32>
  }
  func.return %r, %s : tensor<2xf32>, tensor<2xf32>
}

// -----

// A region without results still gets its dispatch; a target name that is not a bare
// identifier is spelled with `_` in the symbol (its target string is kept as it is).
// CHECK-LABEL: delegate.executable private @sink_my_npu_0_0 target("my-npu:0") {
// CHECK-NEXT:    func.func @entry(%{{.*}}: tensor<2xf32>) {
// CHECK-NEXT:      func.return
// CHECK:       func.func @sink(%[[X:.*]]: tensor<2xf32>) {
// CHECK-NEXT:    delegate.dispatch @sink_my_npu_0_0::@entry(%[[X]]) : (tensor<2xf32>) -> ()
// CHECK-NEXT:    func.return
func.func @sink(%x: tensor<2xf32>) {
  delegate.region "my-npu:0" (%a = %x : tensor<2xf32>) -> () {
    delegate.yield
  }
  func.return
}

// -----

// A name already taken in the module is skipped: the counter moves on.
// CHECK-LABEL: func.func private @main_cpu_0() -> ()
// CHECK:       delegate.executable private @main_cpu_1 target("cpu") {
// CHECK:       delegate.executable private @main_cpu_2 target("cpu") {
// CHECK:       func.func @main(
// CHECK-NEXT:    delegate.dispatch @main_cpu_1::@entry(
// CHECK-NEXT:    delegate.dispatch @main_cpu_2::@entry(
func.func private @main_cpu_0() -> ()
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = delegate.region "cpu" (%p = %x : tensor<2xf32>) -> (tensor<2xf32>) {
    delegate.yield %p : tensor<2xf32>
  }
  %b = delegate.region "cpu" (%p = %a : tensor<2xf32>) -> (tensor<2xf32>) {
    delegate.yield %p : tensor<2xf32>
  }
  func.return %b : tensor<2xf32>
}

// -----

// Must not fire: a function without regions and existing executables stay as they are.
// CHECK-LABEL: delegate.executable private @main_cpu_0 target("cpu") {
// CHECK-NEXT:    func.func @entry(
// CHECK:       func.func @main(%[[X:.*]]: tensor<2xf32>) -> tensor<2xf32> {
// CHECK-NEXT:    %[[R:.*]] = delegate.dispatch @main_cpu_0::@entry(%[[X]])
// CHECK-NEXT:    %[[T:.*]] = nn.tanh %[[R]]
// CHECK-NEXT:    func.return %[[T]]
// CHECK-NOT:   delegate.executable
delegate.executable private @main_cpu_0 target("cpu") {
  func.func @entry(%a: tensor<2xf32>) -> tensor<2xf32> {
    func.return %a : tensor<2xf32>
  }
}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = delegate.dispatch @main_cpu_0::@entry(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %t = nn.tanh %r : tensor<2xf32> -> tensor<2xf32>
  func.return %t : tensor<2xf32>
}
