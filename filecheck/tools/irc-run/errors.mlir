// RUN: rm -f %t.npz
// RUN: not irc-run %s --entry calls --outputs %t.npz 2>&1 | filecheck %s --check-prefix=NOKERNEL
// RUN: not cat %t.npz
// RUN: not irc-run %s --entry nope 2>&1 | filecheck %s --check-prefix=ENTRY
// RUN: not irc-run %s --entry dynamic 2>&1 | filecheck %s --check-prefix=DYNAMIC
// RUN: not irc-run %s --entry dynamic --inputs %s 2>&1 | filecheck %s --check-prefix=NPZ
// RUN: not irc-run %s.does-not-exist 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not irc-run %s --no-such-flag 2>&1 | filecheck %s --check-prefix=USAGE

// Each problem is one message on stderr, located in the IR when there is a place to
// point at; exit status 1 (2 for usage errors), no traceback, no output file.

// NOKERNEL:      errors.mlir:[[# @LINE + 5]]:3: error: reference: no kernel for 'func.call'
// NOKERNEL-NEXT:   %y = func.call @helper(%x) : (tensor<3xf32>) -> tensor<3xf32>
// NOKERNEL-NEXT: ^
// NOKERNEL-NOT:  Traceback
func.func @calls(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = func.call @helper(%x) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
func.func private @helper(tensor<3xf32>) -> tensor<3xf32>

// ENTRY:        irc-run: error: {{.*}}errors.mlir: no function @nope in the module (functions: @calls, @helper, @dynamic)

// DYNAMIC:      irc-run: error: input 'x' of @dynamic has the dynamic shape (?, 3); give its values with --inputs FILE.npz
func.func @dynamic(%x: tensor<?x3xf32>) -> tensor<?x3xf32> attributes {irc.input_names = ["x"]} {
  %r = nn.relu %x : tensor<?x3xf32> -> tensor<?x3xf32>
  func.return %r : tensor<?x3xf32>
}

// NPZ:          irc-run: error: could not read inputs from '{{.*}}errors.mlir': not an .npz archive

// MISSING:      irc-run: error: could not open input file '{{.*}}errors.mlir.does-not-exist': No such file or directory

// USAGE:        usage: irc-run
// USAGE:        irc-run: error: unrecognized arguments: --no-such-flag
