#!/usr/bin/env python3
"""GFLOP/s of the CPU target's two float fully connected kernels per ISA profile, one thread,
CPU time: `irc_fc` (the "fc" fusion's blocked product, kernels/common/fc.c) beside
`irc_conv2d` on one row of pixels (the convolutions' kernel, what a fully connected layer
runs without the fusion, `IRC_CPU_FUSE_FC=0`).

Builds one small C program per profile (`IRC_CPU_ISA` names: the host's best and `--isa`
others it can run) from the library's own kernel text and the profile's build flags, then
times both kernels, interleaved, on the fully connected shapes of BERT-base (M = 128 rows)
and DeiT-tiny (197 rows), cycling through 4 copies of the weights as a model's layers stream
theirs from memory, with `CLOCK_THREAD_CPUTIME_ID` (a loaded machine's waits for a core do
not count), best of `--reps`. Prints GFLOP/s per shape, kernel and profile and the ratio
irc_fc / irc_conv2d (above 1: irc_fc is faster). Compare with the machine's FMA peak in
PERF_NOTES.md.

usage: python benchmarks/cpu_fc_kernel.py [--isa avx2 generic] [--reps 20]
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from side_by_side import (
    build_kernel_program,
    isa_names,
    kernel_benchmark_args,
    print_kernel_header,
)

# (label, M rows, K, N)
SHAPES = [
    ("BERT-base q/k/v/out", 128, 768, 768),
    ("BERT-base FFN up", 128, 768, 3072),
    ("BERT-base FFN down", 128, 3072, 768),
    ("DeiT-tiny qkv", 197, 192, 576),
    ("DeiT-tiny FFN up", 197, 192, 768),
    ("DeiT-tiny FFN down", 197, 768, 192),
    ("one row (pooler)", 1, 768, 768),
]

_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static float *irc_bench_alloc(long n) {
  return aligned_alloc(64, (4 * n + 63) / 64 * 64);
}
int main(int argc, char **argv) {
  const long M = atol(argv[1]), K = atol(argv[2]), N = atol(argv[3]);
  const int reps = atoi(argv[4]);
  const int NV = N > 16 ? 2 : 1, NB = 16 * NV;
  const long nw = (N + NB - 1) / NB * NB * K;
  /* 64-byte aligned, as the generated code's constants and workspace */
  float *x = irc_bench_alloc(M * K), *b = irc_bench_alloc(N), *y = irc_bench_alloc(M * N);
  float *xp = irc_bench_alloc(M * K), *w[4];
  for (long i = 0; i < M * K; ++i) x[i] = (float)(i % 7) * 0.1f;
  for (int c = 0; c < 4; ++c) {
    w[c] = irc_bench_alloc(nw);
    for (long i = 0; i < nw; ++i) w[c][i] = (float)((i + c) % 5) * 0.1f;
  }
  for (long i = 0; i < N; ++i) b[i] = 0.01f * (float)i;
  irc_set_threads(1);
  double best[2] = {1e9, 1e9};
  for (int r = 0; r < reps; ++r)
    for (int k = 0; k < 2; ++k) {
      const double t0 = now();
      for (int c = 0; c < 4; ++c)
        if (k)
          irc_fc(x, M, K, w[c], NB, b, y, N, IRC_ACT_NONE, NULL, 0, xp);
        else
          irc_conv2d(NV, x, 1, 1, (int)M, (int)K, w[c], b, y, 1, (int)M, (int)N, 1, 1, 1, 1, 1,
                     1, 1, (int)K, (int)N, IRC_ACT_NONE, NULL, 0);
      const double t = (now() - t0) / 4;
      if (t < best[k]) best[k] = t;
    }
  printf("%.9f %.9f\n", best[0], best[1]);
  return 0;
}
"""


def build(profile_name: str, folder: Path) -> Path:
    """The benchmark program built with the profile's flags."""
    import irc.targets.cpu.lowerings  # noqa: F401  (defines the "fc" snippet)

    return build_kernel_program(
        ["conv2d", "fc"], _MAIN, profile_name, folder / f"bench_fc_{profile_name}"
    )


def main(argv: list[str] | None = None) -> None:
    args = kernel_benchmark_args(__doc__.split("\n\n")[0], argv)
    names = isa_names(args.isa)
    print_kernel_header(names, args.reps)
    with tempfile.TemporaryDirectory() as tmp:
        binaries = {n: build(n, Path(tmp)) for n in names}
        header = "".join(f"{n + ' conv2d':>20s}{n + ' fc':>16s}{'fc/conv2d':>10s}" for n in names)
        print(f"{'shape (M x K -> N)':36s}{header}  (GFLOP/s)")
        for label, m, k, n in SHAPES:
            flop = 2.0 * m * k * n
            cells = ""
            for binary in binaries.values():
                argv_ = [str(binary), str(m), str(k), str(n), str(args.reps)]
                out = subprocess.run(argv_, capture_output=True, text=True, check=True).stdout
                conv_s, fc_s = (float(v) for v in out.split())
                cells += f"{flop / conv_s / 1e9:20.1f}{flop / fc_s / 1e9:16.1f}"
                cells += f"{conv_s / fc_s:9.2f}x"
            print(f"{f'{label} {m}x{k}->{n}':36s}{cells}")


if __name__ == "__main__":
    main()
