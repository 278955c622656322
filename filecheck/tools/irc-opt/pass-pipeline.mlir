// RUN: irc-opt %s -p canonicalize | filecheck %s
// RUN: irc-opt %s --pass-pipeline='builtin.module(canonicalize)' | filecheck %s
// RUN: irc-opt %s -p 'builtin.module(canonicalize)' | filecheck %s
// RUN: irc-opt %s -p 'irc-default{targets=reference}' | filecheck %s --check-prefix=DEFAULT
// RUN: irc-opt %s -p 'canonicalize,partition{targets=reference},outline-delegates' | filecheck %s --check-prefix=DEFAULT
// RUN: irc-opt --list-passes | filecheck %s --check-prefix=LIST

// MLIR's `builtin.module(...)` pipeline syntax is accepted (by -p and --pass-pipeline),
// and the named pipeline irc-default expands to irc.pipelines.default_pipeline: for the
// reference target (no preferred layout, runs quantized ops) exactly
// canonicalize, partition and outline-delegates. (canonicalize removes the dead nn.abs.)

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = nn.relu %{{.*}}
// CHECK-NEXT:    %[[N:.*]] = nn.neg %[[R]]
// CHECK-NEXT:    func.return %[[N]]

// DEFAULT:       delegate.executable private @main_reference_0 target("reference")
// DEFAULT:       func.func @main
// DEFAULT-NEXT:    %{{.*}} = delegate.dispatch @main_reference_0::@entry

// LIST:          Passes (-p 'name{option=value ...}'):
// LIST:            convert-layout: Rewrite layout-sensitive `nn` ops to one layout
// LIST-NEXT:           to: NCHW|NHWC = NCHW
// LIST-NEXT:               The layout that layout-sensitive ops get.
// LIST:            partition: Wrap the ops each target takes into maximal acyclic `delegate.region` ops.
// LIST-NEXT:           targets: list of str (default: empty)
// LIST:                min-ops: int = 2
// LIST:          Named pipelines (-p 'name{targets=a,b ...}'):
// LIST-NEXT:       irc-default: the module-level default pipeline, irc.pipelines.default_pipeline
// LIST-NEXT:       irc-compile: irc-default, then each target's lowering passes

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
  %n = nn.neg %r : tensor<4xf32> -> tensor<4xf32>
  %dead = nn.abs %x : tensor<4xf32> -> tensor<4xf32>
  func.return %n : tensor<4xf32>
}
