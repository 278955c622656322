#!/usr/bin/env python3
"""GFLOP/s of the CPU target's float conv kernels per ISA profile, one thread, CPU time.

Builds one small C program per profile (`IRC_CPU_ISA` names: the host's best and `--isa`
others it can run) from the library's own kernel text (`csrc.source_for`) and the profile's
build flags, then times `irc_conv2d` / `irc_depthwise` on the shapes below (MobileNetV2's
1x1 convs, its first conv (3x3 stride 2 on 3 channels) and 3x3 depthwise, the 640x640
detection net's 3x3 96->24 conv at 160x160) with `CLOCK_THREAD_CPUTIME_ID` (a loaded
machine's waits for a core do not count), best of `--reps`; and the matrix-product form
(fully connected layers, M rows x K -> N, one row) at BERT-base's and DeiT-tiny's sizes,
cycling through 4 copies of the weights, as a model's layers stream theirs from memory.
Filters are packed as each profile's lowering packs them (`packing.float_vectors_per_block`:
32-channel blocks for AVX-512's 32-channel tile, 16 for the others).
Prints first each profile's float peak on this core (12 independent FMA chains on the
profile's vectors, CPU time, best of reps / 4 runs: AVX2's is half of AVX-512's per cycle),
then GFLOP/s per shape and profile and the ratio to the best profile.

usage: python benchmarks/cpu_conv_kernels.py [--isa avx2 generic] [--reps 20]
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

from irc.targets.cpu import isa

# (kind, C, OC, H=W, K, stride): dense (OC output channels) or depthwise (OC ignored);
# fc: (kind, K, N, M rows, 1, 1).
SHAPES = [
    ("fc", 768, 768, 128, 1, 1),
    ("fc", 768, 3072, 128, 1, 1),
    ("fc", 3072, 768, 128, 1, 1),
    ("fc", 192, 576, 197, 1, 1),
    ("fc", 768, 192, 197, 1, 1),
    ("dense", 16, 96, 112, 1, 1),
    ("dense", 24, 144, 56, 1, 1),
    ("dense", 144, 24, 56, 1, 1),
    ("dense", 576, 96, 14, 1, 1),
    ("dense", 960, 160, 7, 1, 1),
    ("dense", 320, 1280, 7, 1, 1),
    ("dense", 3, 32, 224, 3, 2),
    ("dense", 96, 24, 160, 3, 1),
    ("dense", 64, 64, 56, 3, 1),
    ("depthwise", 144, 0, 56, 3, 1),
    ("depthwise", 96, 0, 112, 3, 2),
    ("depthwise", 576, 0, 14, 3, 1),
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
/* The profile's float peak: 12 independent FMA chains on irc_vf (enough to cover the FMA
   latency on two ports), n rounds; prints "seconds flop". */
static int peak(long n) {
  irc_vf acc[12], b = (irc_vf){0.0f} + 1.0000001f, c = (irc_vf){0.0f} + 1e-7f;
  for (int i = 0; i < 12; ++i) acc[i] = (irc_vf){0.0f} + (float)i;
  const double t0 = now();
  for (long k = 0; k < n; ++k)
    for (int i = 0; i < 12; ++i) acc[i] = acc[i] * b + c;
  const double t = now() - t0;
  float s = 0.0f;
  for (int i = 0; i < 12; ++i) s += acc[i][0];
  printf("%.9f %.0f %g\n", t, 24.0 * IRC_VL * (double)n, (double)s * 0.0);
  return 0;
}
int main(int argc, char **argv) {
  if (atoi(argv[1]) == 3) return peak(atol(argv[2]));
  const int kind = atoi(argv[1]), dw = kind == 1, fc = kind == 2;
  const int C = atoi(argv[2]), OC = dw ? C : atoi(argv[3]);
  const int H = atoi(argv[4]), K = atoi(argv[5]), S = atoi(argv[6]), reps = atoi(argv[7]);
  const int wide = atoi(argv[8]); /* 32-channel filter blocks (the profile's packing) */
  if (fc) { /* M = H rows, 4 weight copies */
    const int NV = wide && OC > 16 ? 2 : 1, NB = 16 * NV;
    const long nw = (long)(OC + NB - 1) / NB * NB * C;
    float *x = malloc(4L * H * C), *b = malloc(4L * OC), *y = malloc(4L * H * OC), *w[4];
    for (long i = 0; i < (long)H * C; ++i) x[i] = (float)(i % 7) * 0.1f;
    for (int c = 0; c < 4; ++c) {
      w[c] = malloc(4 * nw);
      for (long i = 0; i < nw; ++i) w[c][i] = (float)((i + c) % 5) * 0.1f;
    }
    for (int i = 0; i < OC; ++i) b[i] = 0.01f * (float)i;
    irc_set_threads(1);
    double best = 1e9;
    for (int r = 0; r < reps; ++r) {
      const double t0 = now();
      for (int c = 0; c < 4; ++c)
        irc_conv2d(NV, x, 1, 1, H, C, w[c], b, y, 1, H, OC, 1, 1, 1, 1, 1, 1, 1, C, OC,
                   IRC_ACT_NONE, NULL, 0);
      const double t = (now() - t0) / 4;
      if (t < best) best = t;
    }
    printf("%.9f\n", best);
    return 0;
  }
  const int P = K / 2, OH = (H + 2 * P - K) / S + 1, NV = wide && OC > 16 ? 2 : 1, NB = 16 * NV;
  const int Hp = dw ? H : H + 2 * P;
  const long nx = (long)Hp * Hp * C;
  const long nw = dw ? (long)K * K * C : (long)(OC + NB - 1) / NB * NB * K * K * C;
  float *x = malloc(4 * nx), *w = malloc(4 * nw), *b = malloc(4 * (long)OC);
  float *y = malloc(4 * (long)OH * OH * OC);
  for (long i = 0; i < nx; ++i) x[i] = (float)(i % 7) * 0.1f;
  for (long i = 0; i < nw; ++i) w[i] = (float)(i % 5) * 0.1f;
  for (int i = 0; i < OC; ++i) b[i] = 0.01f * (float)i;
  irc_set_threads(1);
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    if (dw)
      irc_depthwise(x, 1, H, H, C, w, b, y, OH, OH, K, K, S, S, 1, 1, P, P, IRC_ACT_RELU6);
    else
      irc_conv2d(NV, x, 1, Hp, Hp, C, w, b, y, OH, OH, OC, K, K, S, S, 1, 1, 1, C, OC,
                 IRC_ACT_RELU6, NULL, 0);
    const double t = now() - t0;
    if (t < best) best = t;
  }
  printf("%.9f\n", best);
  return 0;
}
"""


def build(profile_name: str, folder: Path) -> Path:
    """The benchmark program built with the profile's flags."""
    return build_kernel_program(
        ["conv2d", "depthwise"], _MAIN, profile_name, folder / f"bench_{profile_name}"
    )


def measure_peak(binary: Path, reps: int) -> float:
    """GFLOP/s of the profile's FMA loop (best of `reps` runs of the program): the ceiling
    of its kernels on this core, under the same load."""
    best = 0.0
    for _ in range(max(reps // 4, 3)):
        out = subprocess.run([str(binary), "3", "20000000"], capture_output=True, text=True)
        seconds, flop = (float(v) for v in out.stdout.split()[:2])
        best = max(best, flop / seconds * 1e-9)
    return best


def main(argv: list[str] | None = None) -> None:
    args = kernel_benchmark_args(__doc__.split("\n\n")[0], argv)
    names = isa_names(args.isa)
    best = names[0]
    print_kernel_header(names, args.reps)
    with tempfile.TemporaryDirectory() as tmp:
        binaries = {n: build(n, Path(tmp)) for n in names}
        print(f"{'kernel':34s}" + "".join(f"{n:>14s}" for n in names) + "  (GFLOP/s)")
        peaks = {n: measure_peak(b, args.reps) for n, b in binaries.items()}
        # Each profile's filter packing (packing.float_vectors_per_block): 32-channel blocks
        # for a 32-channel tile (AVX-512), else 16.
        wide = {n: isa.PROFILES[n].tiles.get("conv_f32", (0, 0))[1] >= 32 for n in names}
        row = "".join(f"{peaks[n]:14.1f}" for n in names)
        ratio = "  ".join(f"{n}/{best} {peaks[best] / peaks[n]:.2f}x" for n in names[1:])
        print(f"{'peak (12 FMA chains on irc_vf)':34s}{row}  {ratio}")
        for kind, c, oc, h, k, s in SHAPES:
            oh = (h + 2 * (k // 2) - k) // s + 1
            flop = 2.0 * oh * oh * (c * k * k if kind == "dense" else k * k) * (oc or c)
            if kind == "fc":
                flop = 2.0 * h * c * oc
            rates = {}
            for name, binary in binaries.items():
                code = {"dense": 0, "depthwise": 1, "fc": 2}[kind]
                argv_ = [str(binary), str(code), str(c), str(oc)]
                argv_ += [str(h), str(k), str(s), str(args.reps), str(int(wide[name]))]
                seconds = float(subprocess.run(argv_, capture_output=True, text=True).stdout)
                rates[name] = flop / seconds * 1e-9
            label = f"{kind} {c}->{oc or c} {k}x{k}/{s} @{h}"
            if kind == "fc":
                label = f"fc {h}x{c} -> {oc}"
            row = "".join(f"{rates[n]:14.1f}" for n in names)
            ratio = "  ".join(f"{n}/{best} {rates[best] / rates[n]:.2f}x" for n in names[1:])
            print(f"{label:34s}{row}  {ratio}")


if __name__ == "__main__":
    main()
