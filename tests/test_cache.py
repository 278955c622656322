"""irc's on-disk caches (`irc.cache`): private directories, atomic entries verified by hash,
and every cache (CPU libraries, OpenCL binaries, OpenCL tuning choices) rebuilding a damaged
or tampered entry instead of loading it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

import irc
from irc import cache
from irc.targets.cpu import toolchain
from irc.targets.cpu.target import CpuTarget
from irc.targets.opencl import tuning
from irc.targets.opencl.target import OpenCLTarget

HAS_COMPILER = bool(CpuTarget().available())
HAS_OPENCL = bool(OpenCLTarget().available())

MODEL = """\
func.func @main(%x: tensor<2x8xf32>, %y: tensor<8xf32>) -> tensor<2x8xf32>
    attributes {irc.input_names = ["x", "y"], irc.output_names = ["out"]} {
  %a = nn.add %x, %y : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %b = nn.relu %a : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %b : tensor<2x8xf32>
}
"""
INPUTS = {
    "x": np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8),
    "y": np.linspace(1, -1, 8, dtype=np.float32),
}
EXPECTED = np.maximum(INPUTS["x"] + INPUTS["y"], 0)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "a" / "b" / "irc-cache"
    monkeypatch.setenv("IRC_CACHE_DIR", str(path))
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---- Directories ------------------------------------------------------------------------------


def test_every_level_irc_creates_is_private(root: Path) -> None:
    directory = cache.private_dir("things")
    assert directory == root / "things"
    for level in (root.parent.parent, root.parent, root, directory):
        assert _mode(level) == 0o700, level


def test_root_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("IRC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "irc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_root() == Path.home() / ".cache" / "irc"


def test_open_directories_of_ours_are_repaired(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "things").mkdir()
    os.chmod(root, 0o777)
    os.chmod(root / "things", 0o755)
    cache.private_dir("things")
    assert _mode(root) == 0o700
    assert _mode(root / "things") == 0o700


def test_a_directory_of_another_user_is_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.write_entry("things", "k1", ".dat", b"payload")
    owner = root.stat().st_uid
    monkeypatch.setattr(cache.os, "getuid", lambda: owner + 1)
    with pytest.raises(cache.CacheError, match=r"belongs to user id .* not to you"):
        cache.private_dir("things")
    assert cache.read_verified("things", "k1", ".dat") is None  # nothing read from there
    with pytest.raises(OSError, match="not to you"):
        cache.write_entry("things", "k1", ".dat", b"other")


def test_a_shared_directory_is_refused(root: Path) -> None:
    root.mkdir(parents=True)
    os.chmod(root, 0o1777)  # like /tmp: never made private under other users' feet
    with pytest.raises(cache.CacheError, match="is a shared directory"):
        cache.private_dir("things")
    assert _mode(root) == 0o1777


def test_bad_namespace_and_key_are_refused(root: Path) -> None:
    for namespace in ("", "../x", ".hidden"):
        with pytest.raises(ValueError, match="bad namespace"):
            cache.private_dir(namespace)
    with pytest.raises(ValueError, match="bad key"):
        cache.entry_paths("things", "../../etc/passwd", ".so")


# ---- Entries ----------------------------------------------------------------------------------


def test_entry_round_trip_and_damage_is_a_miss(root: Path) -> None:
    data = bytes(range(256)) * 16
    path = cache.write_entry("things", "k1", ".dat", data, {"note": "x"})
    assert path == root / "things" / "k1.dat"
    assert _mode(path) == 0o600
    assert cache.read_verified("things", "k1", ".dat") == data
    assert cache.verified_path("things", "k1", ".dat") == path
    record = json.loads((root / "things" / "k1.json").read_text())
    assert record["size"] == len(data)
    assert record["note"] == "x"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]

    path.write_bytes(data[:100])  # truncated
    assert cache.read_verified("things", "k1", ".dat") is None
    assert cache.verified_path("things", "k1", ".dat") is None
    path.write_bytes(data[:-1] + b"\x00")  # tampered, same size
    assert cache.read_verified("things", "k1", ".dat") is None
    cache.write_entry("things", "k1", ".dat", data)
    assert cache.read_verified("things", "k1", ".dat") == data
    (root / "things" / "k1.json").write_text("{not json")  # bad record
    assert cache.read_verified("things", "k1", ".dat") is None
    cache.write_entry("things", "k2", ".dat", data)  # another key's record
    os.replace(root / "things" / "k2.json", root / "things" / "k1.json")
    assert cache.read_verified("things", "k1", ".dat") is None
    assert cache.read_verified("things", "absent", ".dat") is None


def test_concurrent_writers_of_one_entry_do_not_corrupt_it(root: Path) -> None:
    payloads = [bytes([i]) * (200_000 + 4096 * i) for i in range(8)]
    seen: list[bytes | None] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(payloads) + 1)

    def writer(payload: bytes) -> None:
        try:
            barrier.wait()
            for _ in range(15):
                cache.write_entry("things", "shared", ".dat", payload)
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        barrier.wait()
        for _ in range(200):
            seen.append(cache.read_verified("things", "shared", ".dat"))

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    threads.append(threading.Thread(target=reader))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(data is None or data in payloads for data in seen)  # never a mix
    assert cache.read_verified("things", "shared", ".dat") in payloads  # consistent at rest
    assert not [p for p in (root / "things").iterdir() if p.name.startswith(".tmp-")]


# ---- The caches -------------------------------------------------------------------------------


def _cpu_library(model: irc.CompiledModel) -> toolchain.Library:
    (loaded,) = model.program.loaded.values()
    return loaded.library


@pytest.mark.skipif(not HAS_COMPILER, reason="no working C compiler")
def test_cpu_tampered_library_is_rebuilt_not_loaded(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = irc.compile(irc.parse_module(MODEL), ["cpu"])
    library = _cpu_library(first)
    assert not library.from_cache
    assert _mode(library.path.parent) == 0o700
    assert _mode(root) == 0o700
    again = irc.compile(irc.parse_module(MODEL), ["cpu"])
    assert _cpu_library(again).from_cache

    # A real shared library whose constructor leaves a mark if anything dlopens it.
    marker = tmp_path / "evil-was-loaded"
    evil_c = tmp_path / "evil.c"
    evil_c.write_text(
        "#include <stdio.h>\n"
        "__attribute__((constructor)) static void mark(void) {\n"
        f'  FILE *f = fopen("{marker}", "w"); if (f) fclose(f);\n'
        "}\n"
    )
    evil = tmp_path / "evil.so"
    probe = toolchain.probe().toolchain
    assert probe is not None
    subprocess.run(
        [probe.compiler, "-shared", "-fPIC", "-o", str(evil), str(evil_c)],
        check=True,
        capture_output=True,
    )
    # A process never loads one path twice (dlopen finds it by name), so the tampered
    # entry goes into a fresh cache root: the genuine entry's record, the evil library.
    other = tmp_path / "other-root"
    monkeypatch.setenv("IRC_CACHE_DIR", str(other))
    directory = cache.private_dir(toolchain.NAMESPACE)
    shutil.copy(library.path.with_suffix(".json"), directory)
    os.replace(evil, directory / library.path.name)

    rebuilt = irc.compile(irc.parse_module(MODEL), ["cpu"])
    assert not marker.exists()
    assert not _cpu_library(rebuilt).from_cache
    np.testing.assert_array_equal(rebuilt.run(INPUTS)["out"], EXPECTED)
    assert _cpu_library(rebuilt).path == directory / library.path.name
    assert cache.verified_path(toolchain.NAMESPACE, library.key, ".so") is not None


@pytest.mark.skipif(not HAS_COMPILER, reason="no working C compiler")
def test_cpu_cache_of_another_user_is_a_clear_error(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.private_dir(toolchain.NAMESPACE)
    owner = root.stat().st_uid
    monkeypatch.setattr(cache.os, "getuid", lambda: owner + 1)
    source = "void irc_set_threads(int n) {}\nint irc_get_threads(void) { return 1; }\n"
    probe = toolchain.probe().toolchain
    assert probe is not None
    with pytest.raises(toolchain.CompilerError, match=r"cannot use the build cache: .*not to you"):
        toolchain.build(source, probe)


@pytest.mark.skipif(not HAS_OPENCL, reason="no OpenCL device")
@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_opencl_damaged_binary_is_rebuilt_not_loaded(
    root: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    from irc.targets.opencl import runtime as ocl_runtime

    monkeypatch.setenv("IRC_OPENCL_BINARY_CACHE", "on")  # also on PoCL, which has its own
    monkeypatch.setattr(ocl_runtime, "_programs", {})
    model = irc.compile(irc.parse_module(MODEL.replace("2x8", "3x8")), ["opencl"])
    model.run({"x": np.ones((3, 8), np.float32), "y": INPUTS["y"]})  # binary saved at load
    (loaded,) = model.program.loaded.values()
    key = loaded.built.key
    binary = root / "opencl" / f"{key}.bin"
    data = binary.read_bytes()
    assert _mode(binary.parent) == 0o700
    if damage == "truncated":
        binary.write_bytes(data[: len(data) // 2])
    else:
        middle = len(data) // 2
        binary.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    monkeypatch.setattr(ocl_runtime, "_programs", {})
    from_binaries: list[object] = []
    real_build = ocl_runtime.build

    def spy(device: object, **kwargs: object) -> object:
        if kwargs.get("binary") is not None:
            from_binaries.append(kwargs["binary"])
        return real_build(device, **kwargs)

    monkeypatch.setattr(ocl_runtime, "build", spy)
    again = irc.compile(irc.parse_module(MODEL.replace("2x8", "3x8")), ["opencl"])
    (reloaded,) = again.program.loaded.values()
    assert not reloaded.from_cache
    assert from_binaries == []  # the damaged bytes never reached the driver
    x = np.full((3, 8), 0.5, np.float32)
    got = again.run({"x": x, "y": INPUTS["y"]})["out"]
    np.testing.assert_allclose(got, np.maximum(x + INPUTS["y"], 0), rtol=1e-6)
    assert cache.read_verified(ocl_runtime.CACHE_NAMESPACE, key, ".bin") is not None


def test_tuning_choice_that_does_not_verify_is_not_used(root: Path) -> None:
    key = tuning.tuning_key("device", "kernel body", [256])
    tuning.store_choice(key, [64], {"64": 1.0})
    assert _mode(root / tuning.CACHE_NAMESPACE) == 0o700
    tuning.clear_memory()
    assert tuning.load_choice(key) == [64]
    choice = root / tuning.CACHE_NAMESPACE / f"{key}{tuning.CHOICE_SUFFIX}"
    choice.write_text(json.dumps({"local": [7], "ns": {}}))  # well formed, not what was stored
    tuning.clear_memory()
    assert tuning.load_choice(key) is None
    tuning.store_choice(key, [32], {"32": 1.0})  # measured again: the entry is replaced
    tuning.clear_memory()
    assert tuning.load_choice(key) == [32]
    tuning.clear_memory()
