// RUN: not irc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: rm -f %t
// RUN: not irc-opt %s --split-input-file -o %t 2>&1 | filecheck %s
// RUN: not cat %t

// A parse error in the second chunk is reported once, at its file-absolute line,
// with the source line and a caret; no IR is printed, not even for the good chunk,
// and the -o file is not created.

// CHECK-NOT:   builtin.module

func.func @fine(%a: i32) -> i32 {
  func.return %a : i32
}

// -----

func.func @broken(%a: i32) -> i32 {
  // arith.addi needs two operands.
  // CHECK:       parse-error.mlir:[[# @LINE + 3]]:22: error: Expected ','
  // CHECK-NEXT:    %s = arith.addi %a : i32
  // CHECK-NEXT:  ^
  %s = arith.addi %a : i32
  func.return %s : i32
}

// CHECK-NOT:   Traceback
// CHECK-NOT:   builtin.module
