// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// MLIR's -verify-diagnostics: every diagnostic must be announced by an annotation
// on its line and every annotation must be matched. Then irc-opt exits with 0 and
// prints the IR of the chunks that had no error.

// CHECK-NOT:   func.func @return_mismatch
// CHECK-NOT:   error

func.func @return_mismatch(%a: i32) -> i64 {
  // expected-error @+1 {{Expected arguments to have the same types as the function output types}}
  func.return %a : i32
}

// -----

func.func @addi_operand_types(%a: i32, %b: i64) -> i32 {
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  // expected-error@-1 {{operand 'rhs' at position 1 does not verify: attribute i32 expected from variable 'T', but got i64}}
  func.return %c : i32
}

// -----

func.func @above(%a: i32) -> i64 {
  func.return %a : i32
  // expected-error@above {{expected [i64], got [i32]}}
}

// -----

func.func @below(%a: i32) -> i64 {
  // expected-error@below {{function output types}}
  func.return %a : i32
}

// -----

func.func @same_line(%a: i32) -> i64 {
  func.return %a : i32 // expected-error {{got [i32]}}
}

// -----

func.func @regex(%a: i32) -> i64 {
  // expected-error-re @+1 {{expected {{\[i[0-9]+\]}}, got {{\[.*\]}}}}
  func.return %a : i32
}

// -----

// Attribute verification during parsing is located at the op being parsed.
// expected-error @+1 {{Integer value 300 is out of range for type i8}}
%c = arith.constant 300 : i8

// -----

func.func @parse_error(%a: i32) -> i32 {
  // expected-error @+1 {{Expected ','}}
  %s = arith.addi %a : i32
  func.return %s : i32
}

// -----

// CHECK-LABEL: func.func @no_diagnostics() {
// CHECK-NEXT:    func.return
func.func @no_diagnostics() {
  func.return
}
