// RUN: irc-opt %s --split-input-file --print-debuginfo | filecheck %s
// RUN: irc-opt %s --split-input-file --print-debuginfo | irc-opt --split-input-file --print-debuginfo | filecheck %s

// Parsed ops carry the position of their first token; lines are counted from the
// start of the file, also in later chunks. Explicit locations are kept, and the
// printed locations survive a round trip.

// CHECK-LABEL: func.func @first
// CHECK:         %{{.*}} = arith.addi %{{.*}}, %{{.*}} : i32 loc("{{.*}}debuginfo.mlir":[[# @LINE + 5]]:3)
// CHECK-NEXT:    func.return %{{.*}} : i32 loc("{{.*}}debuginfo.mlir":[[# @LINE + 5]]:3)
// CHECK-NEXT:  } loc("{{.*}}debuginfo.mlir":[[# @LINE + 2]]:1)
// CHECK-NEXT:  } loc("{{.*}}debuginfo.mlir":[[# @LINE + 1]]:1)
func.func @first(%a: i32) -> i32 {
  %s = arith.addi %a, %a : i32
  func.return %s : i32
}

// -----

// CHECK-LABEL: func.func @second
// CHECK:         %{{.*}} = arith.constant 1 : i64 loc("{{.*}}debuginfo.mlir":[[# @LINE + 4]]:7)
// CHECK-NEXT:    func.return loc("elsewhere.py":3:4)
// CHECK-NEXT:  } loc("{{.*}}debuginfo.mlir":[[# @LINE + 1]]:1)
func.func @second() {
      %c = arith.constant 1 : i64
  func.return loc("elsewhere.py":3:4)
}
