"""ISA profiles of the CPU target (targets/cpu/isa.py): selection, forcing, errors, flags.

`IRC_CPU_ISA` forces a profile (`IRC_CPU_PORTABLE=1` is the generic one); one this host
cannot run makes the target unavailable with the missing features named, and a load fails
with the same message (no traceback of the compiler). Each profile builds with its own
`-march` and defines, so the cache keeps one library per profile. Every x86 profile
compiles here even where the host cannot run it (the numerics of the runnable ones are
tested in test_cpu_conv_threads, test_cpu_qfused and test_cpu_int8_depthwise); the
AArch64 profile is cross compiled (`aarch64-linux-gnu-gcc`, static) and run under
`qemu-aarch64` on a float and an int8 conv (~10 s), skipped without them. A profiled run
names the ISA; loading a library keeps the caller's CPU affinity; the whole kernel library
is -Wall -Werror clean for every x86 profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cpu_support import (
    RUNNABLE_ISAS,
    QConvCase,
    build_executable,
    cases_executable,
    generated_source,
    isa_params,
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
    reference_outputs,
    reference_then_lower,
)
from xdsl.dialects.func import FuncOp

from irc.dialects import cpu, nn
from irc.dialects.nn import array_from_dense
from irc.dtypes import numpy_dtype
from irc.runtime.profiling import Profile, kernel_profiling
from irc.targets.cpu import codegen, csrc, isa, library, toolchain
from irc.targets.cpu.runtime import CpuLoadError, CpuRuntime
from irc.targets.cpu.target import CpuTarget

pytestmark = [needs_compiler, pytest.mark.private_cache]

assert codegen  # registers every kernel snippet (quant_kernels' too)

AVX2_HOST = isa.PROFILES["avx2"].features


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(isa.ISA_ENV, raising=False)
    monkeypatch.delenv(isa.PORTABLE_ENV, raising=False)
    return monkeypatch


def test_host_gets_its_best_profile(clean_env: pytest.MonkeyPatch) -> None:
    assert isa.select() == isa.best() == isa.PROFILES[RUNNABLE_ISAS[0]]
    assert "generic" in RUNNABLE_ISAS
    clean_env.setattr(isa, "host_features", lambda: AVX2_HOST)
    if isa.machine() == "x86_64":
        assert isa.select().name == "avx2"  # an AVX2-only CPU (Zen 3) gets 6 x 16 tiles
        assert isa.select().tiles["conv_f32"] == (6, 16)


def test_forcing_and_the_portable_alias(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(isa.PORTABLE_ENV, "1")
    assert isa.select().name == "generic"
    clean_env.setenv(isa.ISA_ENV, RUNNABLE_ISAS[-1])
    assert isa.select().name == RUNNABLE_ISAS[-1]


def test_unknown_isa_is_one_clear_error(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(isa.ISA_ENV, "sse9")
    with pytest.raises(isa.IsaError, match=r"IRC_CPU_ISA='sse9' is not an ISA .*avx2"):
        isa.select()


def test_unrunnable_isa_makes_the_target_unavailable(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setattr(isa, "host_features", lambda: AVX2_HOST)
    clean_env.setattr(isa, "machine", lambda: "x86_64")
    clean_env.setenv(isa.ISA_ENV, "avx512vnni")
    availability = CpuTarget().available()
    assert not availability.ok
    assert "lacks avx512_vnni, avx512bw" in availability.reason
    module, executable, _ = build_executable([_conv_case()], name="test_cpu_isa_unavailable")
    lower(module)
    with pytest.raises(CpuLoadError, match="cpu: target not available: IRC_CPU_ISA=avx512vnni"):
        CpuRuntime().load(executable)


def test_profiles_build_with_their_own_flags() -> None:
    chain = toolchain.probe().toolchain
    assert chain is not None
    avx2 = toolchain.flags_for(chain, isa.PROFILES["avx2"]).flags
    if isa.best().name == "avx2" and "-march=native" in chain.flags:
        # an AVX2-only host (e.g. AMD EPYC): its best profile is built for the CPU itself
        assert "-march=native" in avx2
    else:
        assert "-march=x86-64-v3" in avx2
        assert "-march=native" not in avx2
    assert "-DIRC_CONV_F32_MR=6" in avx2
    generic = toolchain.flags_for(chain, isa.PROFILES["generic"]).flags
    assert "-DIRC_PORTABLE" in generic
    assert not any(f.startswith("-march") for f in generic)
    native = toolchain.flags_for(chain, isa.best()).flags
    if "-march=native" in chain.flags:
        assert "-march=native" in native
    keys = {toolchain.flags_for(chain, p).cache_key("int x;") for p in isa.PROFILES.values()}
    assert len(keys) == len(isa.PROFILES)  # the ISA is part of the library's cache key


def _conv_case():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (1, 7, 9, 20)).astype(np.float32)
    w = rng.uniform(-0.5, 0.5, (40, 3, 3, 20)).astype(np.float32)
    b = rng.uniform(-1, 1, 40).astype(np.float32)
    return op_case("conv3x3", nn.Conv2DOp, [x, w, b], [1, 2], layout="NHWC", pads=[1, 1, 1, 1])


@pytest.fixture(scope="module")
def lowered():
    module, executable, built = build_executable([_conv_case()], name="test_cpu_isa")
    expected = reference_outputs(built[0])
    lower(module)
    return executable, built[0].args, expected


@pytest.mark.parametrize("name", [n for n in isa.PREFERENCE if n != "neon"])
def test_every_x86_profile_compiles(lowered, name: str) -> None:
    if isa.machine() != "x86_64":
        pytest.skip("not an x86_64 host")
    chain = toolchain.probe().toolchain
    assert chain is not None
    library = toolchain.build(generated_source(lowered[0]), chain, isa.PROFILES[name])
    assert library.path.is_file()
    assert library.isa == name


CROSS_CC = shutil.which("aarch64-linux-gnu-gcc")
QEMU = shutil.which("qemu-aarch64")


def _harness(
    executable,
) -> tuple[str, list[np.ndarray], list[tuple[tuple[int, ...], np.dtype]], int]:
    """A C main() that reads the entry's inputs and the module's constants from the file
    argv[1], calls its function once and writes the results to argv[2]; and the constants,
    the results' shapes and dtypes, and the input count."""
    module = next(op for op in executable.walk() if isinstance(op, cpu.CModuleOp))
    func = next(op for op in executable.body.block.ops if isinstance(op, FuncOp))
    call = next(op for op in func.body.block.ops if isinstance(op, cpu.CallOp))
    consts = [np.ascontiguousarray(array_from_dense(c.value)) for c in module.constants]
    ins = [(tuple(t.get_shape()), numpy_dtype(t)) for t in func.function_type.inputs.data]
    outs = [(tuple(t.get_shape()), numpy_dtype(t)) for t in func.function_type.outputs.data]
    nbytes = [int(np.prod(s)) * d.itemsize for s, d in ins]
    lines = [
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "static void *irc_read(FILE *f, size_t n) {",
        "  void *p = aligned_alloc(64, (n + 127) / 64 * 64);",
        "  if (n && fread(p, 1, n, f) != n) exit(2);",
        "  return p;",
        "}",
        "int main(int argc, char **argv) {",
        "  if (argc != 3) return 1;",
        '  FILE *f = fopen(argv[1], "rb");',
        "  if (!f) return 1;",
    ]
    lines += [f"  void *in{i} = irc_read(f, {n});" for i, n in enumerate(nbytes)]
    lines += [f"  static const void *consts[{max(1, len(consts))}];"]
    lines += [f"  consts[{i}] = irc_read(f, {c.nbytes});" for i, c in enumerate(consts)]
    out_bytes = [int(np.prod(s)) * d.itemsize for s, d in outs]
    lines += [
        f"  void *out{j} = aligned_alloc(64, {(n + 127) // 64 * 64});"
        for j, n in enumerate(out_bytes)
    ]
    lines += [f"  void *ws = aligned_alloc(64, {(call.workspace.value.data + 127) // 64 * 64});"]
    args = [f"in{i}" for i in range(len(ins))] + [f"out{j}" for j in range(len(outs))]
    lines += [f"  {call.function.data}({', '.join(args)}, consts, ws);"]
    lines += ['  FILE *g = fopen(argv[2], "wb");', "  if (!g) return 1;"]
    lines += [f"  fwrite(out{j}, 1, {n}, g);" for j, n in enumerate(out_bytes)]
    lines += ["  fclose(g);", "  return 0;", "}"]
    return module.source.data + "\n".join(lines) + "\n", consts, outs, len(ins)


@pytest.fixture(scope="module")
def lowered_int8():
    """A fused int8 3x3 conv (int8 storage, per-channel scales, zero points, relu6)."""
    rng = np.random.default_rng(5)
    case = QConvCase(
        "q3x3", rng, (1, 6, 7, 20), 40, (3, 3), zp_in=-3, zp_out=5, pads=(1, 1, 1, 1), act="relu6"
    )
    return reference_then_lower(*cases_executable("test_cpu_isa_int8", [case]))


@pytest.mark.skipif(CROSS_CC is None, reason="no aarch64-linux-gnu-gcc cross compiler")
@pytest.mark.parametrize("which", ["float", "int8"])
def test_neon_profile_runs_under_qemu(
    request: pytest.FixtureRequest, which: str, tmp_path: Path
) -> None:
    """The neon profile's build of the kernels (GCC vectors on NEON q registers), cross
    compiled and run under qemu-user: the reference's results (int8 bit-exact)."""
    if QEMU is None:
        pytest.skip("no qemu-aarch64 to run the cross-compiled kernels")
    fixture = "lowered" if which == "float" else "lowered_int8"
    executable, args, expected = request.getfixturevalue(fixture)
    source, consts, outs, _ = _harness(executable)
    (tmp_path / "main.c").write_text(source)
    flags = [*toolchain.BASE_FLAGS, *isa.PROFILES["neon"].build_flags(native=False)]
    flags = [f for f in flags if f not in ("-shared", "-fPIC")]
    exe = tmp_path / "main"
    units = [tmp_path / "main.c"]
    if library.is_glue(source):  # its kernel library's core and parts, linked in statically
        texts = [library.core_source(), *map(library.part_source, library.parts_of(source))]
        for i, text in enumerate(texts):
            units.append(tmp_path / f"kernels{i}.c")
            units[-1].write_text(text)
    objects = []
    for unit in units:
        objects.append(unit.with_suffix(".o"))
        cmd = [CROSS_CC, *flags, "-c", "-o", str(objects[-1]), str(unit)]
        subprocess.run(cmd, check=True, capture_output=True)
    subprocess.run(
        [CROSS_CC, *flags, "-static", "-o", str(exe), *map(str, objects), "-lm"],
        check=True,
        capture_output=True,
    )
    data = b"".join(np.ascontiguousarray(a).tobytes() for a in [*args, *consts])
    (tmp_path / "in.bin").write_bytes(data)
    subprocess.run(
        [QEMU, str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    raw = (tmp_path / "out.bin").read_bytes()
    ((shape, dtype),) = outs
    actual = np.frombuffer(raw, dtype=dtype).reshape(shape)
    if which == "int8":
        np.testing.assert_array_equal(actual, expected[0])
    else:
        np.testing.assert_allclose(actual, expected[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", isa_params())
def test_profiled_run_names_the_isa(lowered, name: str) -> None:
    executable, args, expected = lowered
    loaded = load_with_isa(executable, name)
    profile = Profile()
    with kernel_profiling(profile):
        (actual,) = loaded.execute("entry", args)
    np.testing.assert_allclose(actual, expected[0], rtol=1e-4, atol=1e-5)
    (row,) = profile.kernel_rows()
    assert row.target == "cpu"
    assert row.kernel == f"irc_fn_0 [{name}]"
    assert row.dispatch == "@test_cpu_isa::@entry"


@pytest.mark.parametrize("name", [n for n in isa.PREFERENCE if n != "neon"])
def test_kernel_files_are_warning_free(name: str, tmp_path: Path) -> None:
    """The whole kernel library (every snippet, targets/cpu/kernels included) builds with
    -Wall -Werror for every x86 profile (an unused kernel of a translation unit and gcc's
    note on 64-byte vector arguments without AVX-512 aside)."""
    if isa.machine() != "x86_64":
        pytest.skip("not an x86_64 host")
    chain = toolchain.probe().toolchain
    assert chain is not None
    flags = toolchain.flags_for(chain, isa.PROFILES[name]).flags
    source = tmp_path / "kernels.c"
    source.write_text(csrc.source_for(csrc.snippet_names()))
    warn = ["-Wall", "-Werror", "-Wno-unused-function", "-Wno-psabi", "-fsyntax-only"]
    proc = subprocess.run(
        [chain.compiler, *flags, *warn, str(source)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


_AFFINITY_CHECK = """
import ctypes, os, sys
from irc.targets.cpu import toolchain
toolchain.prepare_openmp()
before = os.sched_getaffinity(0)
if sys.argv[2] == "raw":
    ctypes.CDLL(sys.argv[1])
else:
    toolchain.load_library(sys.argv[1])
print(os.sched_getaffinity(0) == before)
"""


@pytest.mark.parametrize("how", ["raw", "load_library"])
def test_loading_keeps_the_callers_cpu_affinity(lowered, how: str) -> None:
    """libgomp with OMP_PROC_BIND=true binds the thread that loads it; the runtime gives
    the caller its mask back (a plain dlopen shows what it would otherwise keep)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to pin")
    chain = toolchain.probe().toolchain
    assert chain is not None
    if not chain.openmp:
        pytest.skip("no OpenMP")
    # An OpenMP loop of its own: a library without one links no OpenMP (toolchain.for_source).
    loop = "void irc_omp_loop(float *x) {\n  IRC_PARFOR(schedule(static))\n"
    loop += "  for (long i = 0; i < 64; ++i) x[i] += 1.0f;\n}\n"
    library = toolchain.build(generated_source(lowered[0]) + loop, chain)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "KMP_"))}
    proc = subprocess.run(
        [sys.executable, "-c", _AFFINITY_CHECK, str(library.path), how],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert proc.stdout.strip() == ("False" if how == "raw" else "True")
