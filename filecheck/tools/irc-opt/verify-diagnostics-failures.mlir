// RUN: not irc-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// Mismatches are reported on stderr in MLIR's words, at the diagnostic (unexpected)
// or at the annotation (not produced), and the exit status is 1.

// An error nobody announced.
func.func @unexpected(%a: i32) -> i64 {
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 3]]:3: error: unexpected error: Expected arguments to have the same types as the function output types: expected [i64], got [i32]
  // CHECK-NEXT:   func.return %a : i32
  // CHECK-NEXT: ^
  func.return %a : i32
}

// -----

// The text does not match: both sides are reported.
func.func @wrong_text(%a: i32) -> i64 {
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 3]]:3: error: unexpected error: Expected arguments
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 2]]:27: error: expected error "xyz" was not produced
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 2]]:6: error: expected error "xyz" was not produced
  func.return %a : i32 // expected-error {{xyz}}
  // expected-error @-1 {{xyz}}
}

// -----

// The right text on the wrong line.
func.func @wrong_line(%a: i32) -> i64 {
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 3]]:3: error: unexpected error: Expected arguments
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 3]]:6: error: expected error "got [i32]" was not produced
  // CHECK-NEXT: // expected{{.}}error @+2 {{[{][{]got \[i32\][}][}]}}
  func.return %a : i32
  // expected-error @+2 {{got [i32]}}
}

// -----

// The right text with the wrong severity.
func.func @wrong_severity(%a: i32) -> i64 {
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 2]]:3: error: unexpected error: Expected arguments
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 2]]:6: error: expected warning "got [i32]" was not produced
  func.return %a : i32
  // expected-warning@above {{got [i32]}}
}

// -----

// An annotation in a chunk that produces no diagnostic at all.
func.func @nothing_emitted() {
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 1]]:6: error: expected remark "never emitted" was not produced
  // expected-remark @+1 {{never emitted}}
  func.return
}

// -----

// A malformed annotation is an error of its own (the message is not in braces).
func.func @malformed() {
  // CHECK:      verify-diagnostics-failures.mlir:[[# @LINE + 1]]:6: error: invalid expected{{.}}error annotation
  // expected-error @+1 "no braces"
  func.return
}

// CHECK-NOT:  Traceback
