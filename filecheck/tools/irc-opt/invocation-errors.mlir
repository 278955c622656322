// RUN: not irc-opt %s -p nosuchpass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not irc-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not irc-opt %s.does-not-exist 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not irc-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=USAGE
// RUN: irc-opt --version | filecheck %s --check-prefix=VERSION
// RUN: not irc-opt %s -p 'convert-layout{to=X}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not irc-opt %s -p 'partition{min-ops=two}' 2>&1 | filecheck %s --check-prefix=INT
// RUN: not irc-opt %s -p 'dce{aggressive=true}' 2>&1 | filecheck %s --check-prefix=NO-OPTIONS
// RUN: not irc-opt %s --pass-pipeline='builtin.module(func.func(canonicalize))' 2>&1 | filecheck %s --check-prefix=NESTED
// RUN: not irc-opt %s -t llvm 2>&1 | filecheck %s --check-prefix=TARGET

// Problems with the invocation itself: one `irc-opt: error:` line, no traceback.

// UNKNOWN:      irc-opt: error: unknown pass 'nosuchpass'; available passes: {{.*}}canonicalize
// UNKNOWN-NOT:  Traceback

// SYNTAX:       irc-opt: error: bad pipeline 'canonicalize{': Expected argument name here
// SYNTAX-NOT:   Traceback

// MISSING:      irc-opt: error: could not open input file '{{.*}}invocation-errors.mlir.does-not-exist': No such file or directory
// MISSING-NOT:  Traceback

// USAGE:        usage: irc-opt
// USAGE:        irc-opt: error: unrecognized arguments: --no-such-flag

// VERSION:      irc {{[0-9][^ ]*}} (xdsl {{[0-9.]+}})

// Options are checked against the pass's fields and reported in their own terms.
// OPTION:       irc-opt: error: convert-layout: option 'to' must be one of NCHW, NHWC, got 'X'
// INT:          irc-opt: error: partition: option 'min-ops' must be an integer, got 'two'
// NO-OPTIONS:   irc-opt: error: dce: unknown option 'aggressive'; it takes no options
// NESTED:       irc-opt: error: nested pass pipelines ('func.func(...)') are not supported
// TARGET:       irc-opt: error: argument -t/--target: invalid choice: 'llvm' (choose from mlir)

func.func @f() {
  func.return
}
