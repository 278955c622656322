// RUN: not irc-opt %s 2>&1 | filecheck %s

// A verifier failure names the failing op's location (not the module's), and the
// message has no xDSL "Operation does not verify" prefix and no IR dump.

func.func @return_type_mismatch(%a: i32) -> i64 {
  // CHECK:      verifier-error.mlir:[[# @LINE + 3]]:3: error: Expected arguments to have the same types as the function output types: expected [i64], got [i32]
  // CHECK-NEXT:   func.return %a : i32
  // CHECK-NEXT: ^
  func.return %a : i32
}

// CHECK-NOT:  Operation does not verify
// CHECK-NOT:  Traceback
// CHECK-NOT:  builtin.module
