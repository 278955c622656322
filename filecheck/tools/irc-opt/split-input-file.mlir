// RUN: irc-opt %s --split-input-file | filecheck %s
// RUN: not irc-opt %s 2>&1 | filecheck %s --check-prefix=WHOLE

// Each chunk is parsed and printed as its own module; the outputs are joined by
// the separator line, so a symbol may be defined once per chunk. (The separator
// text must not appear anywhere else in this file: it splits even inside comments.)

// CHECK-LABEL: func.func @first(
// CHECK-SAME:      %[[A:.*]]: i32) -> i32 {
// CHECK-NEXT:    func.return %[[A]] : i32
// CHECK:       // {{-----}}
// CHECK-LABEL: func.func @second(
// CHECK:         %[[C:.*]] = arith.constant 7 : i64
// CHECK-NEXT:    func.return %[[C]] : i64
// CHECK:       // {{-----}}
// CHECK-LABEL: func.func @first(
// CHECK-NOT:   // {{-----}}

// Without the flag the separators are comments and @first is defined twice; the
// module's symbol table verifier reports it at the module, i.e. its first op.
// WHOLE:      split-input-file.mlir:[[# @LINE + 4]]:1: error: Redefinition of symbol "first"
// WHOLE-NEXT: func.func @first(%a: i32) -> i32 {
// WHOLE-NEXT: ^

func.func @first(%a: i32) -> i32 {
  func.return %a : i32
}

// -----

func.func @second() -> i64 {
  %c = arith.constant 7 : i64
  func.return %c : i64
}

// -----

func.func @first(%b: i32) -> i32 {
  func.return %b : i32
}
