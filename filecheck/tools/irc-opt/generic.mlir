// RUN: irc-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC
// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// The generic form prints every op as `"name"(operands) <{properties}> : type`,
// and parses back to the same IR.

// CHECK-GENERIC:       "builtin.module"() ({
// CHECK-GENERIC-NEXT:    "func.func"() <{sym_name = "add", function_type = (i32, i32) -> i32}> ({
// CHECK-GENERIC-NEXT:    ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32):
// CHECK-GENERIC-NEXT:      %[[S:.*]] = "arith.addi"(%[[A]], %[[B]]) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
// CHECK-GENERIC-NEXT:      "func.return"(%[[S]]) : (i32) -> ()
// CHECK-GENERIC-NEXT:    }) : () -> ()
// CHECK-GENERIC-NEXT:  }) : () -> ()

// CHECK-LABEL: func.func @add(
// CHECK-SAME:      %[[A:.*]]: i32, %[[B:.*]]: i32) -> i32 {
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT:    func.return %[[S]] : i32
func.func @add(%a: i32, %b: i32) -> i32 {
  %s = arith.addi %a, %b : i32
  func.return %s : i32
}

// -----

// CHECK-GENERIC:       "func.func"() <{sym_name = "select"

// CHECK-LABEL: func.func @select(
// CHECK:         %[[C:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    %[[R:.*]] = arith.select %[[C]], %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    func.return %[[R]] : i64
func.func @select(%a: i64, %b: i64) -> i64 {
  %c = arith.cmpi slt, %a, %b : i64
  %r = arith.select %c, %a, %b : i64
  func.return %r : i64
}
