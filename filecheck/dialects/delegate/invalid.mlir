// RUN: irc-opt %s --split-input-file --verify-diagnostics

// Verifier messages of the delegate dialect. The custom syntax of delegate.region binds each
// capture to a block argument of the right type, so mismatches between the two can only be
// written in the generic form.

func.func @region_argument_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{body arguments (tensor<4xi32>) do not match the captured values (tensor<4xf32>)}}
  %r = "delegate.region"(%x) <{target = "cpu"}> ({
  ^bb0(%a: tensor<4xi32>):
    "delegate.yield"(%a) : (tensor<4xi32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @region_argument_count(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{body arguments (tensor<4xf32>) do not match the captured values (tensor<4xf32>, tensor<4xf32>)}}
  %r = "delegate.region"(%x, %y) <{target = "cpu"}> ({
  ^bb0(%a: tensor<4xf32>):
    "delegate.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @region_argument_without_capture() {
  // expected-error @+1 {{body arguments (tensor<4xf32>) do not match the captured values ()}}
  "delegate.region"() <{target = "cpu"}> ({
  ^bb0(%a: tensor<4xf32>):
    "delegate.yield"() : () -> ()
  }) : () -> ()
  func.return
}

// -----

func.func @region_without_yield(%x: tensor<4xf32>) {
  // expected-error @+1 {{body must end with delegate.yield}}
  %r = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
  }
  func.return
}

// -----

func.func @region_ends_with_another_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{body must end with delegate.yield}}
  %r = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = arith.addf %a, %a : tensor<4xf32>
  }
  func.return
}

// -----

func.func @region_yield_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{yielded types (tensor<4xf32>) do not match the results (tensor<4xi8>)}}
  %r = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xi8>) {
    delegate.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

func.func @region_yield_too_few(%x: tensor<4xf32>) {
  // expected-error @+1 {{yielded types (tensor<4xf32>) do not match the results (tensor<4xf32>, tensor<4xf32>)}}
  %r:2 = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    delegate.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

func.func @region_yield_too_many(%x: tensor<4xf32>) {
  // expected-error @+1 {{yielded types (tensor<4xf32>) do not match the results ()}}
  delegate.region "cpu" (%a = %x : tensor<4xf32>) -> () {
    delegate.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

// The region is isolated from above: values from outside must come in as captures.
func.func @region_uses_value_from_above(%x: tensor<4xf32>) {
  // expected-error @+1 {{Operation using value defined out of its IsolatedFromAbove parent}}
  %r = delegate.region "cpu" () -> (tensor<4xf32>) {
    %s = arith.addf %x, %x : tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  func.return
}

// -----

func.func @region_yields_value_from_above(%x: tensor<4xf32>) {
  // expected-error @+1 {{Operation using value defined out of its IsolatedFromAbove parent}}
  %r = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    delegate.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

// A nested region may not reach past its parent region either.
func.func @nested_region_uses_outer_capture(%x: tensor<4xf32>) {
  %r = delegate.region "opencl" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    // expected-error @+1 {{Operation using value defined out of its IsolatedFromAbove parent}}
    %inner = delegate.region "cpu" () -> (tensor<4xf32>) {
      delegate.yield %a : tensor<4xf32>
    }
    delegate.yield %inner : tensor<4xf32>
  }
  func.return
}

// -----

func.func @region_two_blocks(%x: tensor<4xf32>) {
  // expected-error @+1 {{Region 'body' at position 0 expected a single block, but got 2 blocks}}
  %r = "delegate.region"(%x) <{target = "cpu"}> ({
  ^bb0(%a: tensor<4xf32>):
    "delegate.yield"(%a) : (tensor<4xf32>) -> ()
  ^bb1:
    "delegate.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @region_without_target(%x: tensor<4xf32>) {
  // expected-error @+1 {{property 'target' expected}}
  "delegate.region"() ({
    "delegate.yield"() : () -> ()
  }) : () -> ()
  func.return
}

// -----

func.func @yield_outside_region(%x: tensor<4xf32>) {
  // expected-error @+1 {{'delegate.yield' expects parent op 'delegate.region'}}
  delegate.yield %x : tensor<4xf32>
}

// -----

func.func @yield_not_last(%x: tensor<4xf32>) {
  %r = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    // expected-error @+1 {{'delegate.yield' must be the last operation in its parent block}}
    delegate.yield %a : tensor<4xf32>
    delegate.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

// expected-error @+1 {{visibility must be public, private or nested, got 'internal'}}
"delegate.executable"() <{sym_name = "exe", target = "cpu", sym_visibility = "internal"}> ({
^bb0:
}) : () -> ()

// -----

// expected-error @+1 {{Region 'body' at position 0 expected a single block, but got 0 blocks}}
"delegate.executable"() <{sym_name = "exe", target = "cpu"}> ({
}) : () -> ()

// -----

// expected-error @+1 {{Redefinition of symbol "entry"}}
delegate.executable @exe target("cpu") {
  func.func @entry() {
    func.return
  }
  func.func @entry() {
    func.return
  }
}

// -----

// The executable's functions are isolated from the code around the executable.
func.func @executable_uses_value_from_above(%x: tensor<4xf32>) {
  delegate.executable @exe target("cpu") {
    // expected-error @+1 {{Operation using value defined out of its IsolatedFromAbove parent}}
    func.func @entry() -> tensor<4xf32> {
      func.return %x : tensor<4xf32>
    }
  }
  func.return
}

// -----

func.func @dispatch_missing_executable(%x: tensor<4xf32>) {
  // expected-error @+1 {{'@nope' does not name a delegate.executable}}
  %d = delegate.dispatch @nope::@entry(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func private @not_an_executable(%x: tensor<4xf32>) -> tensor<4xf32>

func.func @dispatch_to_a_function(%x: tensor<4xf32>) {
  // expected-error @+1 {{'@not_an_executable' does not name a delegate.executable}}
  %d = delegate.dispatch @not_an_executable::@entry(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

delegate.executable private @exe target("cpu") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

func.func @dispatch_flat_reference(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected a callee of the form @executable::@entry, got @exe}}
  %d = delegate.dispatch @exe(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

delegate.executable private @exe target("cpu") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

func.func @dispatch_too_deep_reference(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected a callee of the form @executable::@entry, got @exe::@entry::@more}}
  %d = delegate.dispatch @exe::@entry::@more(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// A flat reference to a function is not a dispatch either.
delegate.executable private @exe target("cpu") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

func.func @dispatch_to_entry_directly(%x: tensor<4xf32>) {
  // expected-error @+1 {{'@entry' does not name a delegate.executable}}
  %d = delegate.dispatch @entry(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

delegate.executable private @exe target("cpu") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

func.func @dispatch_missing_entry(%x: tensor<4xf32>) {
  // expected-error @+1 {{'@main' is not a func.func in executable '@exe'}}
  %d = delegate.dispatch @exe::@main(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

delegate.executable private @exe target("cpu") {
  delegate.executable @entry target("cpu") {
  }
}

func.func @dispatch_entry_not_a_function(%x: tensor<4xf32>) {
  // expected-error @+1 {{'@entry' is not a func.func in executable '@exe'}}
  %d = delegate.dispatch @exe::@entry(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

delegate.executable private @exe target("cpu") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

func.func @dispatch_argument_type(%x: tensor<4xf16>) {
  // expected-error @+1 {{dispatch types (tensor<4xf16>) -> tensor<4xf32> do not match the entry's (tensor<4xf32>) -> tensor<4xf32>}}
  %d = delegate.dispatch @exe::@entry(%x) : (tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

delegate.executable private @exe target("cpu") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

func.func @dispatch_result_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{dispatch types (tensor<4xf32>) -> () do not match the entry's (tensor<4xf32>) -> tensor<4xf32>}}
  delegate.dispatch @exe::@entry(%x) : (tensor<4xf32>) -> ()
  func.return
}

// -----

delegate.executable private @exe target("cpu") {
  func.func @entry(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) {
    func.return
  }
}

// Quantization parameters are part of the type: a different scale is a different type.
func.func @dispatch_quantized_type(%x: tensor<4x!quant.uniform<i8:f32, 0.25>>) {
  // expected-error @+1 {{dispatch types (tensor<4x!quant.uniform<i8:f32, 0.25>>) -> () do not match the entry's (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> ()}}
  delegate.dispatch @exe::@entry(%x) : (tensor<4x!quant.uniform<i8:f32, 0.25>>) -> ()
  func.return
}

// -----

delegate.executable private @exe target("opencl") {
  func.func private @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}
func.func @private_entry(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{entry '@entry' of executable '@exe' is private; dispatched entries must be public}}
  %y = delegate.dispatch @exe::@entry(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
