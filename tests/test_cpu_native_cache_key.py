"""A library built with `-march=native` is cached per CPU, not per flag text.

`-march=native` reads the same on every machine, so a build cache shared by several (a home
directory on NFS, a CI cache restored on another runner: AMD EPYC with AVX2 one day, Intel
Xeon with AVX-512 the next) would hand the AVX-512 library to the AVX2 CPU, which dies of
SIGILL. The key also covers what the flag selects here (`toolchain.native_target`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_support import needs_compiler

from irc.targets.cpu import isa, toolchain

SOURCE = "int irc_native_key_probe(int x) { return x + 1; }\n"


def _native_chain() -> toolchain.Toolchain:
    chain = toolchain.probe().toolchain
    if chain is None or "-march=native" not in chain.flags:
        pytest.skip("the compiler here does not take -march=native")
    return toolchain.flags_for(chain, isa.best())


def test_key_of_a_native_build_follows_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    chain = toolchain.Toolchain("/usr/bin/cc", "cc 1.0", ("-O3", "-march=native"))
    monkeypatch.setattr(toolchain, "native_target", lambda _: "-march=cascadelake -mavx512f")
    xeon = chain.cache_key(SOURCE)
    assert chain.cache_key(SOURCE) == xeon
    monkeypatch.setattr(toolchain, "native_target", lambda _: "-march=znver2 -mno-avx512f")
    assert chain.cache_key(SOURCE) != xeon


def test_key_of_a_named_level_ignores_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    chain = toolchain.Toolchain("/usr/bin/cc", "cc 1.0", ("-O3", "-march=x86-64-v3"))

    def unused(_: str) -> str:
        raise AssertionError("native_target asked for a build without -march=native")

    monkeypatch.setattr(toolchain, "native_target", unused)
    assert chain.cache_key(SOURCE) == chain.cache_key(SOURCE)


def test_native_target_without_a_compiler_is_the_cpu_flags(tmp_path: Path) -> None:
    target = toolchain.native_target(str(tmp_path / "no-such-cc"))
    assert target == "cpu flags: " + " ".join(sorted(isa.host_features()))


@needs_compiler
def test_native_target_names_this_cpus_vector_isa() -> None:
    chain = _native_chain()
    target = toolchain.native_target(chain.compiler)
    assert "march" in target or "target-cpu" in target, target
    if isa.machine() == "x86_64" and ("-mavx512f" in target or "+avx512f" in target):
        # gcc lists -mavx512f (clang +avx512f) exactly when this CPU has AVX-512F
        assert "avx512f" in isa.host_features()


@needs_compiler
def test_library_of_another_cpu_is_rebuilt_not_loaded(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = _native_chain()
    first = toolchain.build(SOURCE, chain, isa.best())
    assert toolchain.build(SOURCE, chain, isa.best()).from_cache
    real = toolchain.native_target(chain.compiler)
    monkeypatch.setattr(toolchain, "native_target", lambda _: real + "\n(another CPU)")
    other = toolchain.build(SOURCE, chain, isa.best())
    assert not other.from_cache
    assert other.key != first.key
