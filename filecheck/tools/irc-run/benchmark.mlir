// RUN: irc-run %s --benchmark --json --warmup 1 --runs 2 | filecheck %s
// RUN: irc-run %s --benchmark --runs 2 --profile | filecheck %s --check-prefix=TEXT
// RUN: not irc-run %s --benchmark --runs 0 2>&1 | filecheck %s --check-prefix=RUNS

// --benchmark --json: one JSON object with the init and first-run times, the statistics of
// the timed runs and (with --profile) the profile and kernel-launch rows; no output summary.

// CHECK:      {"init_ms": {{[0-9.e+-]+}}, "first_run_ms": {{[0-9.e+-]+}}, "warmup": 1, "threads": null, "runs": {"count": 2, "min_ms": {{[0-9.e+-]+}}, "median_ms": {{[0-9.e+-]+}}, "mean_ms": {{[0-9.e+-]+}}, "p90_ms": {{[0-9.e+-]+}}, "std_ms": {{[0-9.e+-]+}}}, "profile": null, "kernels": null}
// CHECK-NOT:  {{.}}

// TEXT:      init: {{[0-9.]+}} ms (import/parse + compile)
// TEXT-NEXT: first run: {{[0-9.]+}} ms
// TEXT-NEXT: warmup: 3 runs
// TEXT-NEXT: runs: 2: min {{[0-9.]+}} ms, median {{[0-9.]+}} ms, mean {{[0-9.]+}} ms, p90 {{[0-9.]+}} ms, std {{[0-9.]+}} ms
// TEXT-NEXT: #  kind  target  op       location  calls  total ms  mean ms  %
// TEXT:      2 runs, {{[0-9.]+}} ms in all, {{[0-9.]+}} ms per run

// RUNS: irc-run: error: argument --runs: must be at least 1, got 0

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = nn.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %t = nn.tanh %r : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %t : tensor<2x3xf32>
}
