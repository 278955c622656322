// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP
// RUN: irc-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trip of delegate.region / delegate.yield / delegate.executable / delegate.dispatch,
// in the custom and in the generic form. The GENERIC lines pin how captures become operands
// bound to the body's block arguments, and the properties of each op.

// A region without captures or results still ends with a (bare) delegate.yield.
// CHECK-LABEL: func.func @region_empty
// CHECK-NEXT:    delegate.region "cpu" () -> () {
// CHECK-NEXT:      delegate.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "region_empty",
// GENERIC:         "delegate.region"() <{target = "cpu"}> ({
// GENERIC-NEXT:      "delegate.yield"() : () -> ()
// GENERIC-NEXT:    }) : () -> ()
func.func @region_empty() {
  delegate.region "cpu" () -> () {
    delegate.yield
  }
  func.return
}

// -----

// CHECK-LABEL: func.func @region_one_capture
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[R:.*]] = delegate.region "opencl" (%[[A:.*]] = %[[X]] : tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[A]], %[[A]] : tensor<4xf32>
// CHECK-NEXT:      delegate.yield %[[S]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]] : tensor<4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "region_one_capture",
// GENERIC:         %[[R:.*]] = "delegate.region"(%[[X:.*]]) <{target = "opencl"}> ({
// GENERIC-NEXT:    ^bb0(%[[A:.*]]: tensor<4xf32>):
// GENERIC-NEXT:      %[[S:.*]] = "arith.addf"(%[[A]], %[[A]])
// GENERIC-NEXT:      "delegate.yield"(%[[S]]) : (tensor<4xf32>) -> ()
// GENERIC-NEXT:    }) : (tensor<4xf32>) -> tensor<4xf32>
func.func @region_one_capture(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = delegate.region "opencl" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = arith.addf %a, %a : tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// Captures may be ordinary values defined above (not only arguments), of any type,
// including quantized tensors; results may be captures passed straight through.
// CHECK-LABEL: func.func @region_many_captures_and_results
// CHECK-SAME:    (%[[X:.*]]: tensor<2x2xf32>, %[[Q:.*]]: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<1> : tensor<4xi32>
// CHECK-NEXT:    %[[R:.*]], %[[R1:.*]], %[[R2:.*]] = delegate.region "cpu" (%[[A:.*]] = %[[X]] : tensor<2x2xf32>, %[[B:.*]] = %[[Q]] : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>, %[[CI:.*]] = %[[I]] : tensor<4xi32>, %[[D:.*]] = %[[C]] : tensor<4xi32>) -> (tensor<2x2xf32>, tensor<4xi32>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[A]], %[[A]] : tensor<2x2xf32>
// CHECK-NEXT:      %[[N:.*]] = arith.addi %[[CI]], %[[D]] : tensor<4xi32>
// CHECK-NEXT:      delegate.yield %[[M]], %[[N]], %[[B]] : tensor<2x2xf32>, tensor<4xi32>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]], %[[R1]], %[[R2]]
func.func @region_many_captures_and_results(%x: tensor<2x2xf32>,
                                            %q: tensor<4x!quant.uniform<i8:f32, 0.5:-3>>,
                                            %i: tensor<4xi32>)
    -> (tensor<2x2xf32>, tensor<4xi32>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
  %c = arith.constant dense<1> : tensor<4xi32>
  %r:3 = delegate.region "cpu" (%a = %x : tensor<2x2xf32>,
                                %b = %q : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>,
                                %ci = %i : tensor<4xi32>, %d = %c : tensor<4xi32>)
      -> (tensor<2x2xf32>, tensor<4xi32>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>) {
    %m = arith.mulf %a, %a : tensor<2x2xf32>
    %n = arith.addi %ci, %d : tensor<4xi32>
    delegate.yield %m, %n, %b : tensor<2x2xf32>, tensor<4xi32>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  }
  func.return %r#0, %r#1, %r#2
      : tensor<2x2xf32>, tensor<4xi32>, tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
}

// -----

// One value captured twice, captures without results, results without captures.
// CHECK-LABEL: func.func @region_capture_shapes
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    delegate.region "cpu" (%[[A:.*]] = %[[X]] : tensor<4xf32>, %[[B:.*]] = %[[X]] : tensor<4xf32>) -> () {
// CHECK-NEXT:      delegate.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.*]] = delegate.region "cpu" () -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT:      delegate.yield %[[C]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]]
func.func @region_capture_shapes(%x: tensor<4xf32>) -> tensor<4xf32> {
  delegate.region "cpu" (%a = %x : tensor<4xf32>, %b = %x : tensor<4xf32>) -> () {
    delegate.yield
  }
  %r = delegate.region "cpu" () -> (tensor<4xf32>) {
    %c = arith.constant dense<2.0> : tensor<4xf32>
    delegate.yield %c : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// Discardable attributes, nested dictionaries and arrays included, follow `attributes`.
// CHECK-LABEL: func.func @region_attributes
// CHECK:         delegate.region "opencl" (%{{.*}} = %{{.*}} : tensor<4xf32>) -> (tensor<4xf32>) attributes {irc.partition = {ops = ["arith.addf", "arith.mulf"], cost = 2.500000e+00 : f64, nested = {deep = [1 : i64, [2 : i64, 3 : i64]], unit}}, irc.id = 7 : i64} {
// GENERIC-LABEL: "func.func"() <{sym_name = "region_attributes",
// GENERIC:         "delegate.region"(%{{.*}}) <{target = "opencl"}> ({
// GENERIC:         }) {irc.partition = {ops = ["arith.addf", "arith.mulf"], cost = 2.500000e+00 : f64, nested = {deep = [1 : i64, [2 : i64, 3 : i64]], unit}}, irc.id = 7 : i64} : (tensor<4xf32>) -> tensor<4xf32>
func.func @region_attributes(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = delegate.region "opencl" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>)
      attributes {irc.partition = {ops = ["arith.addf", "arith.mulf"], cost = 2.5 : f64,
                                   nested = {deep = [1, [2, 3]], unit}},
                  irc.id = 7 : i64} {
    delegate.yield %a : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// Regions nest: the inner region captures a block argument of the outer one.
// Sibling regions may reuse block argument names.
// CHECK-LABEL: func.func @region_nested
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[R:.*]] = delegate.region "opencl" (%[[A:.*]] = %[[X]] : tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[IN:.*]] = delegate.region "cpu" (%[[B:.*]] = %[[A]] : tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[B]], %[[B]] : tensor<4xf32>
// CHECK-NEXT:        delegate.yield %[[S]] : tensor<4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      delegate.yield %[[IN]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R2:.*]] = delegate.region "cpu" (%[[A2:.*]] = %[[R]] : tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT:      delegate.yield %[[A2]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R2]]
func.func @region_nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = delegate.region "opencl" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %inner = delegate.region "cpu" (%b = %a : tensor<4xf32>) -> (tensor<4xf32>) {
      %s = arith.addf %b, %b : tensor<4xf32>
      delegate.yield %s : tensor<4xf32>
    }
    delegate.yield %inner : tensor<4xf32>
  }
  %r2 = delegate.region "cpu" (%a = %r : tensor<4xf32>) -> (tensor<4xf32>) {
    delegate.yield %a : tensor<4xf32>
  }
  func.return %r2 : tensor<4xf32>
}

// -----

// Target names are arbitrary strings; quotes print as MLIR escapes (\22).
// CHECK-LABEL: func.func @region_target_strings
// CHECK-NEXT:    delegate.region "my-npu:0" () -> () {
// CHECK:         delegate.region "with \22quotes\22" () -> () {
func.func @region_target_strings() {
  delegate.region "my-npu:0" () -> () {
    delegate.yield
  }
  delegate.region "with \"quotes\"" () -> () {
    delegate.yield
  }
  func.return
}

// -----

// Executables: no visibility, private, public, nested; several functions, private helpers,
// attributes, an empty body.
// CHECK-LABEL: delegate.executable @exe_default target("opencl") {
// CHECK-NEXT:    func.func @entry(%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:      %[[Y:.*]] = func.call @helper(%[[X]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:      func.return %[[Y]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func private @helper(%[[H:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:      func.return %[[H]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @second() {
// CHECK-NEXT:      func.return
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  delegate.executable private @exe_private target("cpu") {
// CHECK-NEXT:    func.func @entry() {
// CHECK:       delegate.executable public @exe_public target("cpu") attributes {irc.kernel_count = 1 : i64, irc.meta = {source = "generated", flags = ["-O3"]}} {
// CHECK:       delegate.executable nested @exe_nested target("cpu") {
// CHECK-NEXT:  }
// CHECK-NEXT:  delegate.executable private @exe_empty target("cpu") {
// CHECK-NEXT:  }
// GENERIC:     "delegate.executable"() <{sym_name = "exe_default", target = "opencl"}> ({
// GENERIC:     "delegate.executable"() <{sym_name = "exe_private", target = "cpu", sym_visibility = "private"}> ({
// GENERIC:     "delegate.executable"() <{sym_name = "exe_public", target = "cpu", sym_visibility = "public"}> ({
// GENERIC:     }) {irc.kernel_count = 1 : i64, irc.meta = {source = "generated", flags = ["-O3"]}} : () -> ()
delegate.executable @exe_default target("opencl") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
  func.func private @helper(%h: tensor<4xf32>) -> tensor<4xf32> {
    func.return %h : tensor<4xf32>
  }
  func.func @second() {
    func.return
  }
}
delegate.executable private @exe_private target("cpu") {
  func.func @entry() {
    func.return
  }
}
delegate.executable public @exe_public target("cpu")
    attributes {irc.kernel_count = 1 : i64, irc.meta = {source = "generated", flags = ["-O3"]}} {
  func.func @entry() {
    func.return
  }
}
delegate.executable nested @exe_nested target("cpu") {
}
delegate.executable private @exe_empty target("cpu") {}

// -----

// CHECK-LABEL: delegate.executable private @main_opencl_0 target("opencl") {
// CHECK:       delegate.executable private @main_cpu_0 target("cpu") {
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = delegate.dispatch @main_opencl_0::@entry(%[[X]], %[[Y]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[P:.*]], %[[P1:.*]] = delegate.dispatch @main_cpu_0::@entry(%[[S]]) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi8>)
// CHECK-NEXT:    delegate.dispatch @main_cpu_0::@init() : () -> ()
// CHECK-NEXT:    %[[T:.*]] = delegate.dispatch @main_opencl_0::@entry(%[[P]], %[[S]]) {irc.profile = "conv"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[T]], %[[P1]]
// GENERIC-LABEL: "func.func"() <{sym_name = "main",
// GENERIC:         "delegate.dispatch"(%{{.*}}, %{{.*}}) <{callee = @main_opencl_0::@entry}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC:         "delegate.dispatch"() <{callee = @main_cpu_0::@init}> : () -> ()
// GENERIC:         "delegate.dispatch"(%{{.*}}, %{{.*}}) <{callee = @main_opencl_0::@entry}> {irc.profile = "conv"}
delegate.executable private @main_opencl_0 target("opencl") {
  func.func @entry(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %s = arith.addf %a, %b : tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
delegate.executable private @main_cpu_0 target("cpu") {
  func.func @entry(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi8>) {
    %c = arith.constant dense<1> : tensor<4xi8>
    func.return %a, %c : tensor<4xf32>, tensor<4xi8>
  }
  func.func @init() {
    func.return
  }
}
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi8>) {
  %s = delegate.dispatch @main_opencl_0::@entry(%x, %y)
      : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %p:2 = delegate.dispatch @main_cpu_0::@entry(%s) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi8>)
  delegate.dispatch @main_cpu_0::@init() : () -> ()
  %t = delegate.dispatch @main_opencl_0::@entry(%p#0, %s) {irc.profile = "conv"}
      : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %t, %p#1 : tensor<4xf32>, tensor<4xi8>
}

// -----

// A dispatch may come before the executable it calls, and may sit inside a region.
// CHECK-LABEL: func.func @dispatch_before_executable
// CHECK:         delegate.dispatch @later::@entry(%{{.*}}) : (tensor<2x!quant.uniform<u8:f32, 0.1:128>>) -> tensor<2x!quant.uniform<u8:f32, 0.1:128>>
// CHECK:         delegate.region "cpu" (%[[A:.*]] = %{{.*}} : tensor<2x!quant.uniform<u8:f32, 0.1:128>>) -> () {
// CHECK-NEXT:      %{{.*}} = delegate.dispatch @later::@entry(%[[A]])
// CHECK-NEXT:      delegate.yield
// CHECK:       delegate.executable private @later target("cpu") {
func.func @dispatch_before_executable(%q: tensor<2x!quant.uniform<u8:f32, 0.1:128>>) {
  %r = delegate.dispatch @later::@entry(%q)
      : (tensor<2x!quant.uniform<u8:f32, 0.1:128>>) -> tensor<2x!quant.uniform<u8:f32, 0.1:128>>
  delegate.region "cpu" (%a = %q : tensor<2x!quant.uniform<u8:f32, 0.1:128>>) -> () {
    %s = delegate.dispatch @later::@entry(%a)
        : (tensor<2x!quant.uniform<u8:f32, 0.1:128>>) -> tensor<2x!quant.uniform<u8:f32, 0.1:128>>
    delegate.yield
  }
  func.return
}
delegate.executable private @later target("cpu") {
  func.func @entry(%x: tensor<2x!quant.uniform<u8:f32, 0.1:128>>)
      -> tensor<2x!quant.uniform<u8:f32, 0.1:128>> {
    func.return %x : tensor<2x!quant.uniform<u8:f32, 0.1:128>>
  }
}
