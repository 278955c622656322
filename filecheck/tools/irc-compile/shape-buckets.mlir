// RUN: irc-compile %s --targets reference --shape-buckets x=1,4 -o %t.mlir | filecheck %s --check-prefix=SUMMARY
// RUN: filecheck %s < %t.mlir
// RUN: not irc-compile %s --targets reference --shape-buckets x=2x5 2>&1 | filecheck %s --check-prefix=BAD

// `--shape-buckets` compiles one specialisation per bucket behind one guarded entry: the
// artifact carries its format version, the specialisations `@main_s<i>` with their own
// executables, and `@main` as a declaration listing them (its types merged: `?` where the
// buckets differ).

func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32>
    attributes {irc.input_names = ["x"], irc.output_names = ["y"]} {
  %r = nn.relu %x : tensor<?x4xf32> -> tensor<?x4xf32>
  %y = nn.add %r, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// SUMMARY:      bucket @main_s0 (x=1x4):
// SUMMARY:      bucket @main_s1 (x=4x4):

// CHECK:      builtin.module attributes {irc.format_version = 2 : i64} {
// CHECK:        delegate.executable private @main_s0_reference_0 target("reference")
// CHECK:        func.func @main_s0(%{{.*}}: tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK:          delegate.dispatch @main_s0_reference_0::@entry
// CHECK:        delegate.executable private @main_s1_reference_0 target("reference")
// CHECK:        func.func @main_s1(%{{.*}}: tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK:        func.func private @main(tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-SAME:     irc.shape_guard = [@main_s0, @main_s1]

// BAD: irc-compile: error: shape buckets: shape 2x5 does not fit input 'x' of shape ?x4
