// RUN: not irc-opt %s -p nosuchpass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not irc-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not irc-opt %s.does-not-exist 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not irc-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=USAGE
// RUN: irc-opt --version | filecheck %s --check-prefix=VERSION

// Problems with the invocation itself: one `irc-opt: error:` line, no traceback.

// UNKNOWN:      irc-opt: error: unknown pass 'nosuchpass'; available passes: {{.*}}canonicalize
// UNKNOWN-NOT:  Traceback

// SYNTAX:       irc-opt: error: invalid pass pipeline: Expected argument name here
// SYNTAX-NEXT:  canonicalize{
// SYNTAX-NOT:   Traceback

// MISSING:      irc-opt: error: could not open input file '{{.*}}invocation-errors.mlir.does-not-exist': No such file or directory
// MISSING-NOT:  Traceback

// USAGE:        usage: irc-opt
// USAGE:        irc-opt: error: unrecognized arguments: --no-such-flag

// VERSION:      irc-opt (xdsl {{[0-9.]+}})

func.func @f() {
  func.return
}
