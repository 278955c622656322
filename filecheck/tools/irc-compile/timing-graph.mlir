// RUN: irc-compile %s --targets reference --timing -o %t.mlir --graph %t.svg 2>&1 | filecheck %s
// RUN: filecheck %s --check-prefix=SVG < %t.svg
// RUN: not irc-compile %s --targets reference --graph %t.png 2>&1 | filecheck %s --check-prefix=BAD

// `--timing` reports every step of the compilation; `--graph` draws the partitioned graph.

// CHECK:      @main: reference: 2 of 2 ops in 1 region; host: 0 ops
// CHECK:      ... Execution time report ...
// CHECK:      ----Wall Time----  ----Name----
// CHECK-NEXT: %)  parse
// CHECK-NEXT: %)  import
// CHECK-NEXT: %)  canonicalize
// CHECK-NEXT: %)  partition
// CHECK:      %)  outline-delegates
// CHECK:      %)  prepare
// CHECK-NEXT: %)  graph
// CHECK-NEXT: %)  output
// CHECK-NEXT: (100.0%)  Total

// SVG:      <svg xmlns="http://www.w3.org/2000/svg"
// SVG:      <g class="legend-item" data-target="reference">
// SVG:      <g class="node input" id="n0"><title>input &#x27;arg0&#x27;
// SVG:      <g class="node op" id="n1" data-target="reference" data-region="0"><title>#0 nn.relu &#x27;&lt;relu&gt;&#x27;
// SVG:      <g class="node op" id="n2" data-target="reference" data-region="0"><title>#1 nn.add
// SVG:      <g class="node output" id="n3">

// BAD: irc-compile: error: bad --graph '{{.*}}.png': expected a .svg, .html or .dot file name

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32> loc("<relu>")
  %z = nn.add %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}
