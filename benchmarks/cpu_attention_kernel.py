#!/usr/bin/env python3
"""GFLOP/s of the CPU target's fused attention kernel per ISA profile, one thread, CPU time.

Builds one small C program per profile (`IRC_CPU_ISA` names: the host's best and `--isa`
others it can run) from the library's own kernel text (`csrc.source_for(["transformer"])`)
and the profile's build flags, then times `irc_attention` (scores, mask, softmax and the
value product of every head) on the heads of the transformer models in
`benchmarks/bert_cpu_vs_ort.py` and `benchmarks/transformer_models_vs_ort.py`, with
`CLOCK_THREAD_CPUTIME_ID` (a loaded machine's waits for a core do not count), best of
`--reps`. The "heads in place" rows read the heads out of [S][heads][Dh] tensors through the
kernel's strides (the fused head transposes of cpu-fuse's "attention" fusion) beside the
contiguous heads. Prints GFLOP/s (2 * heads * Lq * Lk * (D + Dv)) per shape and profile, and
the ratio to the best profile. Compare with the machine's FMA peak in PERF_NOTES.md.

usage: python benchmarks/cpu_attention_kernel.py [--isa avx2 generic] [--reps 20]
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

# (label, heads, Lq, Lk, D, Dv, key transposed, additive mask over the keys, heads in place:
# 1 = query, keys, values and result read / written in [S][heads][Dh] rows (the head
# transposes folded, targets/cpu/attention_layout.py; keys then [Lk][D]), 2 = all but the
# keys, 0 = none)
SHAPES = [
    ("BERT-base seq 128", 12, 128, 128, 64, 64, 1, 1, 0),
    ("BERT-base seq 128, heads in place", 12, 128, 128, 64, 64, 1, 1, 1),
    ("BERT-base seq 128, q v o in place", 12, 128, 128, 64, 64, 1, 1, 2),
    ("DeiT-tiny", 3, 198, 198, 64, 64, 1, 0, 0),
    ("DeiT-tiny, heads in place", 3, 198, 198, 64, 64, 1, 0, 1),
    ("DeiT-tiny, q v o in place", 3, 198, 198, 64, 64, 1, 0, 2),
    ("DeiT-tiny, keys [Lk][D]", 3, 198, 198, 64, 64, 0, 0, 0),
    ("MobileViT (head 24)", 8, 256, 256, 24, 24, 1, 0, 0),
    ("MobileViT (head 36)", 4, 256, 256, 36, 36, 1, 0, 0),
    ("Whisper-tiny encoder", 6, 1500, 1500, 64, 64, 1, 0, 0),
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
int main(int argc, char **argv) {
  const long B = atol(argv[1]), M = atol(argv[2]), N = atol(argv[3]), D = atol(argv[4]);
  const long E = atol(argv[5]);
  const int key_t = atoi(argv[6]), masked = atoi(argv[7]), reps = atoi(argv[8]);
  const int in_place = atoi(argv[9]); /* heads in [S][B][Dh] rows: 1 all, 2 all but keys */
  float *q = malloc(4 * B * M * D), *k = malloc(4 * B * N * D), *v = malloc(4 * B * N * E);
  float *mask = malloc(4 * N), *o = malloc(4 * B * M * E);
  long *mo = calloc(B, sizeof(long));
  long *qo = calloc(B, sizeof(long)), *ko = calloc(B, sizeof(long));
  long *vo = calloc(B, sizeof(long)), *oo = calloc(B, sizeof(long));
  for (long b = 0; b < B; ++b) {
    qo[b] = in_place ? b * D : b * M * D;
    ko[b] = in_place == 1 ? b * D : b * N * D;
    vo[b] = in_place ? b * E : b * N * E;
    oo[b] = in_place ? b * E : b * M * E;
  }
  /* keys [N][D] (k_t = 1) unless key_t (stored [D][N]); in place: key rows B * D apart */
  const irc_att_layout lay = {qo, ko, vo, oo, in_place ? B * D : D,
                              in_place == 1 ? B * D : (key_t ? N : D), in_place ? B * E : E,
                              in_place ? B * E : E, in_place == 1 || !key_t};
  for (long i = 0; i < B * M * D; ++i) q[i] = (float)(i % 13) * 0.01f - 0.06f;
  for (long i = 0; i < B * N * D; ++i) k[i] = (float)(i % 7) * 0.02f - 0.06f;
  for (long i = 0; i < B * N * E; ++i) v[i] = (float)(i % 5) * 0.1f - 0.2f;
  for (long i = 0; i < N; ++i) mask[i] = i >= N - N / 8 ? -10000.0f : 0.0f;
  irc_set_threads(1);
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    irc_attention(q, k, v, masked ? mask : NULL, o, B, M, N, D, E, 0.125f, mo, 0, 1, &lay);
    const double t = now() - t0;
    if (t < best) best = t;
  }
  printf("%.9f\n", best);
  return 0;
}
"""


def build(profile_name: str, folder: Path) -> Path:
    """The benchmark program built with the profile's flags."""
    import irc.targets.cpu.lowerings.transformer  # noqa: F401  (defines the "transformer" snippet)

    return build_kernel_program(
        ["transformer"], _MAIN, profile_name, folder / f"attention_{profile_name}"
    )


def main(argv: list[str] | None = None) -> None:
    args = kernel_benchmark_args(__doc__.split("\n\n")[0], argv)
    names = isa_names(args.isa)
    best = names[0]
    print_kernel_header(names, args.reps)
    with tempfile.TemporaryDirectory() as tmp:
        binaries = {n: build(n, Path(tmp)) for n in names}
        print(f"{'attention':44s}" + "".join(f"{n:>14s}" for n in names) + "  (GFLOP/s)")
        for label, b, m, n, d, e, key_t, masked, in_place in SHAPES:
            flop = 2.0 * b * m * n * (d + e)
            reps = max(2, min(args.reps, int(args.reps * 2e8 / flop)))
            rates = {}
            for name, binary in binaries.items():
                numbers = (b, m, n, d, e, key_t, masked, reps, in_place)
                argv_ = [str(binary), *map(str, numbers)]
                seconds = float(subprocess.run(argv_, capture_output=True, text=True).stdout)
                rates[name] = flop / seconds * 1e-9
            shape = f"{label} {b}x{m}x{n}x{d}"
            row = "".join(f"{rates[n]:14.1f}" for n in names)
            ratio = "  ".join(f"{n}/{best} {rates[best] / rates[n]:.2f}x" for n in names[1:])
            print(f"{shape:44s}{row}  {ratio}")


if __name__ == "__main__":
    main()
