// RUN: irc-opt %s -p canonicalize,infer-shapes --timing 2>&1 >/dev/null | filecheck %s

// `--timing`: MLIR's execution time report on stderr, one line per step, then the total.

// CHECK:      ===-------------------------------------------------------------------------===
// CHECK-NEXT:                          ... Execution time report ...
// CHECK-NEXT: ===-------------------------------------------------------------------------===
// CHECK-NEXT:   Total Execution Time: {{[0-9]+\.[0-9]+}} seconds
// CHECK-EMPTY:
// CHECK-NEXT:   ----Wall Time----  ----Name----
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)}}  parse
// CHECK-NEXT:   {{.*}}%)  canonicalize
// CHECK-NEXT:   {{.*}}%)  infer-shapes
// CHECK-NEXT:   {{.*}}%)  output
// CHECK-NEXT:   {{.*}}(100.0%)  Total

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
