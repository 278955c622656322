// RUN: not irc-run %s 2>&1 | filecheck %s

// IR that does not verify is reported at the failing op, before anything runs.

// CHECK:       bad-ir.mlir:[[# @LINE + 4]]:3: error: {{.*}}
// CHECK-NEXT:    %r = nn.relu %x : tensor<4xf32> -> tensor<5xf32>
// CHECK-NOT:   Traceback
func.func @main(%x: tensor<4xf32>) -> tensor<5xf32> {
  %r = nn.relu %x : tensor<4xf32> -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}
