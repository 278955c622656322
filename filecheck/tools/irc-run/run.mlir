// RUN: irc-run %s | filecheck %s
// RUN: irc-run %s --seed 5 > %t.a
// RUN: irc-run %s --seed 5 > %t.b
// RUN: diff %t.a %t.b
// RUN: irc-run %s --entry noinputs | filecheck %s --check-prefix=NOINPUTS

// Without --inputs the inputs are seeded random values (the same seed gives the same
// run); every output is summarised under its name from irc.output_names.

// CHECK:       y: shape=(2, 3) dtype=float32 min={{[-0-9.e+]+}} max={{[-0-9.e+]+}} mean={{[-0-9.e+]+}} std={{[-0-9.e+]+}}
// CHECK-NEXT:    values: [{{.*}}]
// CHECK-NEXT:  c: shape=(3,) dtype=float32 min=2 max=6 mean=4 std=1.63299
// CHECK-NEXT:    values: [2, 4, 6]
// CHECK-NOT:   {{.}}
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>)
    attributes {irc.input_names = ["x"], irc.output_names = ["y", "c"]} {
  %c = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %r = nn.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %d = nn.add %c, %c : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %r, %d : tensor<2x3xf32>, tensor<3xf32>
}

// Default names; integer outputs; long outputs are cut after eight values.

// NOINPUTS:       result0: shape=(2, 5) dtype=int32 min=-4 max=5 mean=0.5 std=2.87228
// NOINPUTS-NEXT:    values: [-4, -3, -2, -1, 0, 1, 2, 3, ...]
func.func @noinputs() -> tensor<2x5xi32> {
  %c = nn.constant dense<[[-4, -3, -2, -1, 0], [1, 2, 3, 4, 5]]> : tensor<2x5xi32>
  %r = nn.neg %c : tensor<2x5xi32> -> tensor<2x5xi32>
  %n = nn.neg %r : tensor<2x5xi32> -> tensor<2x5xi32>
  func.return %n : tensor<2x5xi32>
}
