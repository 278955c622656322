"""The CPU kernel library (targets/cpu/library.py): the kernels built once per ISA profile,
compiler and flags, a model's translation unit only the glue that calls them.

Counted on a fresh cache (`toolchain._compile_into_cache`: one call per library the cache did
not have): a first model builds the core, its parts and its glue; another model, another
region or another load using the same parts builds only its glue. The glue holds no kernel
body and no pool. Two profiles' libraries in one process each serve their own models (the
VNNI flag, the thread count). A cache directory moved between processes still loads with
no compiler run, a saved artifact loads on an empty cache (the library is rebuilt), and a
corrupted library in the cache is rebuilt, never loaded. `IRC_CPU_KERNEL_LIBRARY=0` still
pastes the kernels into the model (same results).

Caches: only the build counts from nothing and the artifact loaded in a new process take an
empty cache (`fresh_cache`); the tests that damage or move a cache share one of this module's
(`library_cache`, so the core and the parts they need are built once for both); the others
build into the test run's cache (`private_cache`), where other modules' builds of the same
libraries are reused.
"""

from __future__ import annotations

import ctypes
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
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
    reference_outputs,
    reference_then_lower,
)

from irc.dialects import nn
from irc.targets.cpu import codegen, isa, library, toolchain
from irc.targets.cpu.runtime import CpuRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache]

assert codegen  # registers every kernel snippet

MODEL = """
func.func @main(%x: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
    attributes {irc.input_names = ["input"], irc.output_names = ["output"]} {
  %d = nn.constant dense<0.2> : tensor<16x3x3x1xf32>
  %b = nn.constant dense<0.5> : tensor<16xf32>
  %y = nn.conv2d %x, %d, %b pads = [1, 1, 1, 1] groups = 16 layout = "NHWC" activation = "relu6"
      : tensor<1x8x8x16xf32>, tensor<16x3x3x1xf32>, tensor<16xf32> -> tensor<1x8x8x16xf32>
  %z = nn.softmax %y : tensor<1x8x8x16xf32> -> tensor<1x8x8x16xf32>
  func.return %z : tensor<1x8x8x16xf32>
}
"""
"""A model on two of the cheaper parts to build (depthwise, float_misc): the float
convolution part takes ten times as long, and which parts a model needs is not the point."""


def _conv_case(seed: int, oc: int):
    """A float convolution (the conv part: the slowest to build, lowered here, never built)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (1, 6, 7, 16)).astype(np.float32)
    w = rng.uniform(-1, 1, (oc, 3, 3, 16)).astype(np.float32)
    return op_case(f"conv{seed}", nn.Conv2DOp, [x, w, None], [1], pads=[1, 1, 1, 1], layout="NHWC")


def _dw_case(seed: int, width: int = 7):
    """A depthwise convolution (the depthwise part, quick to build)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (1, 6, width, 16)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 3, 3, 1)).astype(np.float32)
    return op_case(
        f"dw{seed}", nn.Conv2DOp, [x, w, None], [1], pads=[1, 1, 1, 1], groups=16, layout="NHWC"
    )


def _softmax_case(seed: int):
    """A softmax (the float_misc part)."""
    x = np.random.default_rng(seed).uniform(-5, 5, (3, 10)).astype(np.float32)
    return op_case(f"softmax{seed}", nn.SoftmaxOp, [x])


def _lowered(cases, name: str):
    module, executable, built = build_executable(cases, name=name)
    expected = [e for b in built for e in reference_outputs(b)]
    lower(module)
    args = [a for b in built for a in b.args]
    return executable, args, expected


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources the build cache compiled (one per library it did not have)."""
    built: list[str] = []
    real = toolchain._compile_into_cache

    def counting(source: str, *args, **kwargs):
        built.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(toolchain, "_compile_into_cache", counting)
    return built


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build cache for this module's tests that corrupt or move one (never the run's:
    another worker may be loading from it)."""
    path = tmp_path_factory.mktemp("cpu-library") / "cache"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def library_cache(module_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`IRC_CACHE_DIR` set to the module's cache for one test."""
    monkeypatch.setenv("IRC_CACHE_DIR", str(module_cache))
    return module_cache


@pytest.mark.usefixtures("fresh_cache")
def test_the_library_is_built_once_for_every_model_and_region(compiles: list[str]) -> None:
    first, args, expected = _lowered([_dw_case(1)], "test_cpu_library_a")
    (actual,) = CpuRuntime().load(first).execute("entry", args)
    np.testing.assert_allclose(actual, expected[0], rtol=1e-4, atol=1e-5)
    parts = library.parts_of(generated_source(first))
    assert parts == ["depthwise"]
    # the core, the part and the glue (which compiles while the part does)
    glue = generated_source(first)
    assert sorted(compiles) == sorted([library.core_source(), library.part_source(parts[0]), glue])
    # another model (another region of a module, another load) on the same part: its glue only
    compiles.clear()
    second, args, expected = _lowered([_dw_case(2, width=9)], "test_cpu_library_b")
    (actual,) = CpuRuntime().load(second).execute("entry", args)
    np.testing.assert_allclose(actual, expected[0], rtol=1e-4, atol=1e-5)
    assert compiles == [generated_source(second)]
    compiles.clear()
    CpuRuntime().load(second)
    CpuRuntime().load(first)
    assert compiles == []
    # a model that also needs the float_misc part builds that part and its glue only
    third, args, expected = _lowered([_dw_case(3), _softmax_case(4)], "test_lib_c")
    actual = CpuRuntime().load(third).execute("entry", args)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)
    assert library.parts_of(generated_source(third)) == ["depthwise", "float_misc"]
    assert sorted(compiles) == sorted([library.part_source("float_misc"), generated_source(third)])


def test_the_model_code_is_glue_only() -> None:
    executable, _, _ = _lowered([_conv_case(5, 24), _dw_case(6)], "test_glue")
    glue = generated_source(executable)
    assert library.is_glue(glue)
    # the kernels' bodies and the pool are the library's; the glue declares them
    for body in ("irc_conv_tile(", "irc_dw_row(", "irc_pool_work(", "irc_pool_worker("):
        assert body not in glue
        assert body in library.part_source("conv") + library.part_source("depthwise") + (
            library.core_source()
        )
    assert "IRC_KERNEL(void, conv2d, (" in glue  # declared: irc_conv2d is irclib_conv2d
    assert "IRC_KERNEL(void, depthwise, (" in glue
    assert library.parts_of(glue) == ["conv", "depthwise"]
    assert len(glue) < 45_000, len(glue)  # the headers, two declarations blocks, the code
    pasted = codegen.csrc.source_for(["conv2d", "depthwise"])
    assert len(pasted) > len(glue)


def test_without_the_library_the_kernels_are_pasted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(library.ENV, "0")
    executable, args, expected = _lowered([_dw_case(7)], "test_pasted")
    source = generated_source(executable)
    assert not library.is_glue(source)
    assert "irc_dw_row(" in source
    loaded = CpuRuntime().load(executable)
    assert loaded.library.needs == ()
    (actual,) = loaded.execute("entry", args)
    np.testing.assert_allclose(actual, expected[0], rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(
    len(RUNNABLE_ISAS) < 2,
    reason=f"needs two ISA profiles this CPU runs (runs: {', '.join(RUNNABLE_ISAS)}; any "
    "x86-64 CPU with AVX2 runs avx2 and generic)",
)
def test_two_profiles_in_one_process_keep_their_own_kernels_and_pool() -> None:
    rng = np.random.default_rng(8)
    case = QConvCase("q", rng, (1, 5, 6, 32), 40, (3, 3), pads=(1, 1, 1, 1))
    executable, args, expected = reference_then_lower(*cases_executable("test_two_isas", [case]))
    best, other = RUNNABLE_ISAS[0], RUNNABLE_ISAS[-1]  # e.g. avx512vnni and generic
    first = load_with_isa(executable, best)
    second = load_with_isa(executable, other)
    assert first.library.needs[0].path != second.library.needs[0].path  # two cores
    for loaded in (first, second, first):
        (actual,) = loaded.execute("entry", args)
        np.testing.assert_array_equal(actual, expected[0])
    # each glue resolves its own profile's kernels: the VNNI flag of its qconv part
    vnni = {
        n: ctypes.CDLL(str(x.library.path)).irc_have_vnni()
        for n, x in ((best, first), (other, second))
    }
    assert vnni[other] == 0
    assert vnni[best] == int(isa.PROFILES[best].name == "avx512vnni")
    # and its own pool: one thread count per library
    first.set_threads(1)
    second.set_threads(3)
    assert (first.threads, second.threads) == (1, 3)
    first.set_threads(0)
    second.set_threads(0)


@pytest.mark.usefixtures("library_cache")
def test_a_corrupted_library_is_rebuilt(compiles: list[str]) -> None:
    executable, args, expected = _lowered([_dw_case(9)], "test_corrupt")
    loaded = CpuRuntime().load(executable)
    part = loaded.library.needs[1]
    bad = part.path.with_name("corrupt.tmp")  # replaced, not written over: it is mapped here
    bad.write_bytes(b"\x7fELF not a library")
    os.replace(bad, part.path)
    compiles.clear()
    again = CpuRuntime().load(executable)
    assert compiles == [library.part_source("depthwise")]  # that part only, nothing else
    assert again.library.needs[1].path == part.path
    assert toolchain.cache.verified_path(toolchain.NAMESPACE, part.key, ".so") == part.path
    (actual,) = again.execute("entry", args)
    np.testing.assert_allclose(actual, expected[0], rtol=1e-4, atol=1e-5)


_CHILD = """
import sys
import numpy as np
import irc
from irc.targets.cpu import toolchain
built = []
real = toolchain._compile_into_cache
def counting(source, *args, **kwargs):
    built.append(source)
    return real(source, *args, **kwargs)
toolchain._compile_into_cache = counting
model = irc.load(sys.argv[1])
feed = {"input": np.load(sys.argv[2])}
np.save(sys.argv[3], model.run(feed)["output"])
print(len(built))
"""


def _run_child(cache_dir: Path, artifact: Path, feed: Path, out: Path) -> int:
    env = {**os.environ, "IRC_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(artifact), str(feed), str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return int(proc.stdout.strip().splitlines()[-1])


def test_moved_cache_and_fresh_cache_in_new_processes(library_cache: Path, tmp_path: Path) -> None:
    import irc

    source = tmp_path / "model.mlir"
    source.write_text(MODEL)
    model = irc.compile(str(source), targets=["cpu"])
    feed = np.random.default_rng(10).uniform(-1, 1, (1, 8, 8, 16)).astype(np.float32)
    expected = model.run({"input": feed})["output"]
    artifact = tmp_path / "model.irc"
    model.save(str(artifact))
    np.save(tmp_path / "feed.npy", feed)
    moved = tmp_path / "moved-cache"
    shutil.copytree(library_cache, moved)
    out = tmp_path / "out.npy"
    # only the moved copy has the libraries while the child runs: the built one is away
    away = library_cache.with_name("away")
    library_cache.rename(away)
    try:
        assert _run_child(moved, artifact, tmp_path / "feed.npy", out) == 0  # nothing compiled
    finally:
        away.rename(library_cache)
    np.testing.assert_array_equal(np.load(out), expected)
    empty = tmp_path / "empty-cache"
    built = _run_child(empty, artifact, tmp_path / "feed.npy", out)
    assert library.parts_of(_glue_of(model)) == ["depthwise", "float_misc"]
    assert built == 4  # the core, the two parts, the glue
    np.testing.assert_array_equal(np.load(out), expected)


def _glue_of(model) -> str:
    from irc.dialects import cpu

    sources = [op.source.data for op in model.module.walk() if isinstance(op, cpu.CModuleOp)]
    assert len(sources) == 1
    return sources[0]


@pytest.mark.parametrize("name", [n for n in isa.PREFERENCE if n != "neon"])
def test_the_library_is_warning_free(name: str, tmp_path: Path) -> None:
    """The core and every part compile with -Wall -Werror for every x86 profile (the
    exported aliases type-checked against kernels/common/api/*.h on the way)."""
    if isa.machine() != "x86_64":
        pytest.skip("not an x86_64 host")
    chain = toolchain.probe().toolchain
    assert chain is not None
    flags = [f for f in toolchain.flags_for(chain, isa.PROFILES[name]).flags if f != "-shared"]
    warn = ["-Wall", "-Werror", "-Wno-unused-function", "-Wno-psabi", "-fsyntax-only"]
    texts = {"core": library.core_source()}
    texts |= {part: library.part_source(part) for part in library.parts()}
    for part, text in texts.items():
        source = tmp_path / f"{part}.c"
        source.write_text(text)
        cmd = [chain.compiler, *flags, *warn, str(source)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{part}: {proc.stderr[-2000:]}"
