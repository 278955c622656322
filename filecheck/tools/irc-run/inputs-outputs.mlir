// RUN: rm -f %t.npz
// RUN: irc-run %s --entry make --outputs %t.npz | filecheck %s --check-prefix=MAKE
// RUN: irc-run %s --entry double --inputs %t.npz --outputs %t.npz | filecheck %s --check-prefix=DOUBLE
// RUN: irc-run %s --entry double --inputs %t.npz | filecheck %s --check-prefix=AGAIN

// --outputs writes an .npz keyed by output names; --inputs reads one keyed by input
// names, so one function's outputs feed another's inputs (and may replace the file).

// MAKE:        x: shape=(4,) dtype=float32 min=1 max=4 mean=2.5 std=1.11803
// MAKE-NEXT:     values: [1, 2, 3, 4]
func.func @make() -> tensor<4xf32> attributes {irc.output_names = ["x"]} {
  %c = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// DOUBLE:      x: shape=(4,) dtype=float32 min=2 max=8 mean=5 std=2.23607
// DOUBLE-NEXT:   values: [2, 4, 6, 8]
// AGAIN:       x: shape=(4,) dtype=float32 min=4 max=16 mean=10 std=4.47214
// AGAIN-NEXT:    values: [4, 8, 12, 16]
func.func @double(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {irc.input_names = ["x"], irc.output_names = ["x"]} {
  %y = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
