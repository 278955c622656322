// One irc-opt run per problem (each RUN line checks its exit status), their outputs
// appended to one file behind a `== NAME ==` line, and one filecheck over it: each
// prefix's checks see only its own run's output (the LABEL lines cut the file there).
// RUN: echo '== UNKNOWN ==' > %t
// RUN: not irc-opt %s -p nosuchpass >> %t 2>&1
// RUN: echo '== SYNTAX ==' >> %t
// RUN: not irc-opt %s -p 'canonicalize{' >> %t 2>&1
// RUN: echo '== MISSING ==' >> %t
// RUN: not irc-opt %s.does-not-exist >> %t 2>&1
// RUN: echo '== USAGE ==' >> %t
// RUN: not irc-opt %s --no-such-flag >> %t 2>&1
// RUN: echo '== VERSION ==' >> %t
// RUN: irc-opt --version >> %t 2>&1
// RUN: echo '== OPTION ==' >> %t
// RUN: not irc-opt %s -p 'convert-layout{to=X}' >> %t 2>&1
// RUN: echo '== INT ==' >> %t
// RUN: not irc-opt %s -p 'partition{min-ops=two}' >> %t 2>&1
// RUN: echo '== NO-OPTIONS ==' >> %t
// RUN: not irc-opt %s -p 'dce{aggressive=true}' >> %t 2>&1
// RUN: echo '== NESTED ==' >> %t
// RUN: not irc-opt %s --pass-pipeline='builtin.module(func.func(canonicalize))' >> %t 2>&1
// RUN: echo '== TARGET ==' >> %t
// RUN: not irc-opt %s -t llvm >> %t 2>&1
// RUN: filecheck %s --input-file %t --check-prefixes=UNKNOWN,SYNTAX,MISSING,USAGE,VERSION,OPTION,INT,NO-OPTIONS,NESTED,TARGET

// Problems with the invocation itself: one `irc-opt: error:` line, no traceback.

// UNKNOWN-LABEL: == UNKNOWN ==
// UNKNOWN:      irc-opt: error: unknown pass 'nosuchpass'; available passes: {{.*}}canonicalize
// UNKNOWN-NOT:  Traceback

// SYNTAX-LABEL: == SYNTAX ==
// SYNTAX:       irc-opt: error: bad pipeline 'canonicalize{': Expected argument name here
// SYNTAX-NOT:   Traceback

// MISSING-LABEL: == MISSING ==
// MISSING:      irc-opt: error: could not open input file '{{.*}}invocation-errors.mlir.does-not-exist': No such file or directory
// MISSING-NOT:  Traceback

// USAGE-LABEL: == USAGE ==
// USAGE:        usage: irc-opt
// USAGE:        irc-opt: error: unrecognized arguments: --no-such-flag

// VERSION-LABEL: == VERSION ==
// VERSION:      irc {{[0-9][^ ]*}} (xdsl {{[0-9.]+}})

// Options are checked against the pass's fields and reported in their own terms.
// OPTION-LABEL: == OPTION ==
// OPTION:       irc-opt: error: convert-layout: option 'to' must be one of NCHW, NHWC, got 'X'
// INT-LABEL: == INT ==
// INT:          irc-opt: error: partition: option 'min-ops' must be an integer, got 'two'
// NO-OPTIONS-LABEL: == NO-OPTIONS ==
// NO-OPTIONS:   irc-opt: error: dce: unknown option 'aggressive'; it takes no options
// NESTED-LABEL: == NESTED ==
// NESTED:       irc-opt: error: nested pass pipelines ('func.func(...)') are not supported
// TARGET-LABEL: == TARGET ==
// TARGET:       irc-opt: error: argument -t/--target: invalid choice: 'llvm' (choose from mlir)

func.func @f() {
  func.return
}
