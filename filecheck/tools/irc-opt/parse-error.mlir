// RUN: not irc-opt %s --split-input-file > %t.out 2> %t.err
// RUN: filecheck %s --input-file=%t.err
// RUN: filecheck %s --input-file=%t.out --check-prefix=OUT
// RUN: rm -f %t
// RUN: not irc-opt %s --split-input-file -o %t 2>&1 | filecheck %s
// RUN: not cat %t

// A parse error in the second chunk is reported once, at its file-absolute line,
// with the source line and a caret. As with mlir-opt, the good chunk is still printed
// (and the failed one prints nothing); an -o file is only written when every chunk
// worked, so here it is not created.

// CHECK-NOT:   builtin.module

// OUT:         func.func @fine
// OUT:         // -----
// OUT-NOT:     func.func @broken

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
