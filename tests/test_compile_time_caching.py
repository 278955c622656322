"""What compile-time memoisation remembers, and that it refreshes when it should (issue #8).

The C compiler probe is remembered per process (per compiler choice) and, when it
succeeds, on disk keyed by the compiler file; the OpenCL device (or why there is none) per
`IRC_OPENCL_DEVICE` spec; per-axis quantization parameters per value. Each test checks the
cache hits and that a change (another compiler, an updated one, another device spec, other
values) is seen. The numpy fast paths (rescale arrays, per-channel multipliers) are checked
against the scalar definitions they replace.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import DenseArrayBase, TensorType, f32, i8, i32
from xdsl.ir import Block, BlockArgument

from irc.dialects import quant
from irc.targets.cpu import toolchain
from irc.targets.opencl import device as opencl_device
from irc.targets.opencl.target import OpenCLTarget


@pytest.fixture
def probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A private cache dir and a fake probe that records the compilers it probes (a
    compiler named `broken*` fails); the process-wide probe memo is cleared around the test."""
    calls: list[str] = []

    def fake_probe(path: str) -> toolchain.ProbeResult:
        calls.append(path)
        if Path(path).name.startswith("broken"):
            return toolchain.ProbeResult(None, f"'{path}' cannot build a shared library")
        version = Path(path).read_text()
        return toolchain.ProbeResult(toolchain.Toolchain(path, version, ("-O3", "-fPIC")))

    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(toolchain, "_probe_compiler_now", fake_probe)
    toolchain._probe.cache_clear()
    yield calls
    toolchain._probe.cache_clear()  # later tests probe the real compiler again


def fake_compiler(directory: Path, name: str, version: str = "cc 1.0") -> str:
    path = directory / name
    path.write_text(version)
    path.chmod(0o755)
    return str(path)


def test_a_successful_probe_is_remembered_on_disk(probes: list[str], tmp_path: Path) -> None:
    cc = fake_compiler(tmp_path, "cc")
    first = toolchain._probe_compiler(cc)
    again = toolchain._probe_compiler(cc)  # a new process would read the same entry
    assert probes == [cc]
    assert first == again
    assert again.toolchain is not None
    assert again.toolchain.version == "cc 1.0"


def test_an_updated_compiler_is_probed_again(probes: list[str], tmp_path: Path) -> None:
    cc = fake_compiler(tmp_path, "cc")
    toolchain._probe_compiler(cc)
    fake_compiler(tmp_path, "cc", "cc 2.0 (upgraded)")
    stat = os.stat(cc)
    os.utime(cc, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    result = toolchain._probe_compiler(cc)
    assert probes == [cc, cc]
    assert result.toolchain is not None
    assert result.toolchain.version == "cc 2.0 (upgraded)"


def test_another_compiler_is_probed_on_its_own(probes: list[str], tmp_path: Path) -> None:
    gcc, clang = fake_compiler(tmp_path, "gcc", "gcc"), fake_compiler(tmp_path, "clang", "clang")
    assert toolchain._probe_compiler(gcc).toolchain.version == "gcc"  # type: ignore[union-attr]
    assert toolchain._probe_compiler(clang).toolchain.version == "clang"  # type: ignore[union-attr]
    toolchain._probe_compiler(gcc)
    assert probes == [gcc, clang]


def test_a_failed_probe_is_not_remembered(probes: list[str], tmp_path: Path) -> None:
    broken = fake_compiler(tmp_path, "broken-cc")
    assert toolchain._probe_compiler(broken).toolchain is None
    assert toolchain._probe_compiler(broken).toolchain is None
    assert probes == [broken, broken]


def test_a_tampered_probe_entry_is_ignored(probes: list[str], tmp_path: Path) -> None:
    cc = fake_compiler(tmp_path, "cc")
    toolchain._probe_compiler(cc)
    for entry in (tmp_path / "cache" / toolchain.PROBE_NAMESPACE).glob("*.probe"):
        entry.write_text('{"compiler": "/evil", "version": "x", "flags": ["-O0"]}')
    result = toolchain._probe_compiler(cc)
    assert probes == [cc, cc]
    assert result.toolchain is not None
    assert result.toolchain.flags == ("-O3", "-fPIC")


def test_the_process_memo_follows_the_compiler_choice(
    probes: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = fake_compiler(tmp_path, "cc-a", "a"), fake_compiler(tmp_path, "cc-b", "b")
    monkeypatch.setenv(toolchain.COMPILER_ENV, first)
    assert toolchain.probe().toolchain.version == "a"  # type: ignore[union-attr]
    assert toolchain.probe().toolchain.version == "a"  # type: ignore[union-attr]
    monkeypatch.setenv(toolchain.COMPILER_ENV, second)
    assert toolchain.probe().toolchain.version == "b"  # type: ignore[union-attr]
    assert probes == [first, second]


OPENCL = OpenCLTarget().available()


@pytest.mark.skipif(not OPENCL, reason=OPENCL.reason or "available")
def test_the_opencl_device_is_remembered_per_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opencl_device, "_failures", {})  # this test's memo only
    monkeypatch.delenv(opencl_device.DEVICE_ENV, raising=False)
    default = opencl_device.get_device()
    assert opencl_device.get_device() is default
    monkeypatch.setenv(opencl_device.DEVICE_ENV, "0:0")
    explicit = opencl_device.get_device()
    assert explicit is opencl_device.get_device()
    monkeypatch.setenv(opencl_device.DEVICE_ENV, "no-such-platform:no-such-device")
    answer = OpenCLTarget().available()
    assert not answer
    assert "matches no device" in answer.reason
    monkeypatch.delenv(opencl_device.DEVICE_ENV)
    assert OpenCLTarget().available()
    assert opencl_device.get_device() is default


@pytest.mark.skipif(not OPENCL, reason=OPENCL.reason or "available")
def test_a_spec_without_a_device_is_remembered_per_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opencl_device, "_failures", {})  # this test's memo only
    searched: list[str] = []
    find = opencl_device._find

    def counting_find(cl: object, spec: str) -> object:
        searched.append(spec)
        return find(cl, spec)

    monkeypatch.setattr(opencl_device, "_find", counting_find)
    monkeypatch.setenv(opencl_device.DEVICE_ENV, "no-such-platform:x")
    first, again = OpenCLTarget().available(), OpenCLTarget().available()
    assert not first
    assert again.reason == first.reason
    monkeypatch.setenv(opencl_device.DEVICE_ENV, "no-such-platform:y")
    assert not OpenCLTarget().available()
    assert searched == ["no-such-platform:x", "no-such-platform:y"]


def test_per_axis_parameters_are_shared_but_exact() -> None:
    one = quant.UniformQuantizedType.per_axis(i8, f32, 0, [0.5, 0.25], [0, 1])
    same = quant.UniformQuantizedType.per_axis(i8, f32, 0, (0.5, 0.25), (0, 1))
    other = quant.UniformQuantizedType.per_axis(i8, f32, 0, [0.5, 0.125], [0, 1])
    assert one == same
    assert one.scales is same.scales
    assert other != one
    assert other.scale_values == (0.5, 0.125)
    assert one.zero_point_values == (0, 1)


def test_rescale_arrays_match_xdsl_and_refuse_what_does_not_fit() -> None:
    value = TensorType(i32, [2])
    op = quant.RescaleOp(_argument(value), value, [2**31 - 1, 1 << 30], [-31, 30], axis=0)
    assert op.multiplier == DenseArrayBase.from_list(i32, [2**31 - 1, 1 << 30])
    assert op.shift_values == (-31, 30)
    with pytest.raises(ValueError, match="multiplier 2147483648 does not fit in i32"):
        quant.RescaleOp(_argument(value), value, [2**31], [0])


def _argument(type_: TensorType) -> BlockArgument:
    return Block(arg_types=[type_]).args[0]


def test_vectorised_channel_multipliers_equal_quantize_multiplier() -> None:
    from irc.passes.lower_quantized import _channel_multipliers
    from irc.quantization import quantize_multiplier

    rng = np.random.default_rng(0)
    s_in, s_out = 0.0078125, 0.0235294122248888
    # Random per-channel scales, exact powers of two, a tie that carries into the shift.
    scales = [*np.exp(rng.uniform(-14, 2, 2000)).tolist(), 0.5, 1 - 2**-40, 2**-20]
    expected = [quantize_multiplier(s_in * s / s_out) for s in scales]
    assert _channel_multipliers(None, s_in, scales, s_out) == expected  # type: ignore[arg-type]
    tiny = [1e-30, 0.0]  # below 2^-31 after scaling: QuantizeMultiplier's (0, 0)
    assert _channel_multipliers(None, 1.0, tiny, 1.0) == [(0, 0), (0, 0)]  # type: ignore[arg-type]


# ---- The compile cache (irc/compile_cache.py) ----------------------------------------------------


def _tiny_onnx(path: Path, bias: float = 1.0) -> Path:
    """x[1, 256] -> relu -> + b (a constant, not a splat: kept in the weights file) -> y."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    b = numpy_helper.from_array(bias + np.arange(256, dtype=np.float32) / 8, "b")
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "b"], ["y"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])],
        [b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture
def compile_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The compile cache on, in an empty `IRC_CACHE_DIR`."""
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("IRC_COMPILE_CACHE", "1")
    return tmp_path


def _key(model: Path, **changes: object) -> str | None:
    from irc import compile_cache

    arguments: dict[str, Any] = {
        "entry": "main",
        "input_shapes": None,
        "bind": None,
        "check": False,
        "strict": False,
        "options": {},
    }
    arguments.update(changes)
    targets = arguments.pop("targets", ["cpu"])
    return compile_cache.compile_key(str(model), targets, **arguments)


def test_a_second_compile_is_read_from_the_compile_cache(
    compile_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import irc
    import irc.compiler

    if not toolchain.probe().toolchain:
        pytest.skip("no working C compiler for the cpu target")
    model = _tiny_onnx(compile_cache / "tiny.onnx")
    x = {"x": np.linspace(-1, 1, 256, dtype=np.float32).reshape(1, 256)}
    first = irc.compile(model, "cpu", report=str(compile_cache / "first.json"))
    first.save(compile_cache / "first.mlir")

    def no_pipeline(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pipeline ran on a compile-cache hit")

    monkeypatch.setattr(irc.compiler, "_compile_module", no_pipeline)
    again = irc.compile(model, "cpu", report=str(compile_cache / "again.json"))
    again.save(compile_cache / "again.mlir")
    np.testing.assert_array_equal(again.run(x)["y"], first.run(x)["y"])
    assert again.summary == first.summary
    assert (compile_cache / "again.json").read_text() == (compile_cache / "first.json").read_text()
    text = (compile_cache / "again.mlir").read_text().replace("again.weights", "first.weights")
    assert text == (compile_cache / "first.mlir").read_text()
    assert (compile_cache / "again.weights").read_bytes() == (
        compile_cache / "first.weights"
    ).read_bytes()
    assert irc.load(compile_cache / "again.mlir").run(x)["y"].tolist() == first.run(x)["y"].tolist()


def test_the_key_follows_model_arguments_environment_and_code(
    compile_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from irc import compile_cache as cc

    model = _tiny_onnx(compile_cache / "tiny.onnx")
    key = _key(model)
    assert key is not None
    assert _key(model) == key
    assert _key(model, options={"report": "elsewhere.json"}) == key  # an output path only
    other = _tiny_onnx(compile_cache / "other.onnx", bias=2.0)
    assert _key(other) != key
    assert _key(model, options={"min_ops": 3}) != key
    assert _key(model, input_shapes={"x": [1, 256]}) != key
    assert _key(model, check=True) != key
    assert _key(model, targets=["cpu", "reference"]) != key
    monkeypatch.setenv("IRC_CPU_PROFILE", "1")
    assert _key(model) != key
    monkeypatch.delenv("IRC_CPU_PROFILE")
    monkeypatch.setattr(cc, "code_fingerprint", lambda: "another irc")
    assert _key(model) != key


def test_the_compile_cache_stays_out_of_what_it_cannot_key(
    compile_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _tiny_onnx(compile_cache / "tiny.onnx")
    assert _key(model, targets=["opencl"]) is None  # kernels depend on the device
    assert _key(model, options={"place": object()}) is None  # not plain data
    monkeypatch.setenv("IRC_COMPILE_CACHE", "0")
    assert _key(model) is None
    monkeypatch.setenv("IRC_COMPILE_CACHE", "1")
    monkeypatch.setenv("IRC_PLUGINS", "some.module:Target")
    assert _key(model) is None


def test_a_tampered_entry_is_a_miss(compile_cache: Path) -> None:
    from irc import compile_cache as cc
    from irc.cache import private_dir

    key = "a" * 64
    assert cc.store(key, "text", b"weights", summary="s", refusals=[], report=None) is not None
    hit = cc.load(key)
    assert hit is not None
    assert hit.text == "text"
    assert hit.weights is not None
    assert hit.weights.read_bytes() == b"weights"
    (private_dir(cc.NAMESPACE) / f"{key}-w.weights").write_bytes(b"WEIGHTS")
    assert cc.load(key) is None
    assert cc.load("b" * 64) is None


def _age(key: str, seconds_ago: float) -> None:
    """Make every file of a compile-cache entry look last used `seconds_ago`."""
    import time

    from irc import compile_cache as cc
    from irc.cache import private_dir

    when = time.time() - seconds_ago
    for path in private_dir(cc.NAMESPACE).glob(f"{key}-*"):
        os.utime(path, (when, when))


def test_the_least_recently_used_entries_are_evicted_over_the_cap(
    compile_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from irc import compile_cache as cc

    monkeypatch.setenv(cc.MAX_MB_ENV, "10")  # far more than the entries: nothing is evicted
    keys = [c * 64 for c in "abcd"]
    for age, key in zip((4000, 3000, 2000), keys, strict=False):
        assert cc.store(key, "text", b"w" * 100_000, summary="", refusals=[], report=None)
        _age(key, age)
    assert cc.load(keys[0]) is not None  # a hit: "a" is now the most recently used
    _age(keys[0], 1000)
    monkeypatch.setenv(cc.MAX_MB_ENV, str(0.25))  # room for two entries of ~100 kB
    assert cc.store(keys[3], "text", b"w" * 100_000, summary="", refusals=[], report=None)
    assert cc.load(keys[1]) is None  # least recently used: evicted
    assert cc.load(keys[2]) is None
    assert cc.load(keys[0]) is not None
    assert cc.load(keys[3]) is not None  # just written
    from irc.cache import private_dir

    assert not list(private_dir(cc.NAMESPACE).glob(f"{keys[1]}-*"))


def test_recently_used_entries_outlive_the_cap(compile_cache: Path) -> None:
    import time

    from irc import compile_cache as cc

    keys = ["e" * 64, "f" * 64]
    for key in keys:
        assert cc.store(key, "text", b"w" * 1000, summary="", refusals=[], report=None)
    assert cc.prune(0) == []  # both within the grace period: a reader may still hold them
    _age(keys[0], cc.EVICTION_GRACE_SECONDS + 1)
    assert cc.prune(0) == [keys[0]]
    assert cc.prune(0, now=time.time() + cc.EVICTION_GRACE_SECONDS + 1) == [keys[1]]
    assert cc.load(keys[1]) is None


def test_the_cap_knob_and_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from irc import compile_cache as cc

    monkeypatch.delenv(cc.MAX_MB_ENV, raising=False)
    assert cc.max_bytes() == 1024 * 1024 * 1024
    monkeypatch.setenv(cc.MAX_MB_ENV, "64")
    assert cc.max_bytes() == 64 * 1024 * 1024
    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv(cc.MAX_MB_ENV, bad)
        assert cc.max_bytes() == 1024 * 1024 * 1024


def test_concurrent_stores_and_prunes_leave_whole_entries(compile_cache: Path) -> None:
    import time
    from concurrent.futures import ThreadPoolExecutor

    from irc import compile_cache as cc

    keys = [f"{i:064x}" for i in range(12)]
    later = time.time() + cc.EVICTION_GRACE_SECONDS + 1

    def churn(i: int) -> None:
        key = keys[i]
        assert cc.store(key, f"text {i}", bytes([i]) * 5000, summary="", refusals=[], report=None)
        cc.prune(30_000, now=later)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(churn, range(len(keys))))
    cc.prune(30_000, now=later)
    hits = [cc.load(key) for key in keys]
    whole = [(i, h) for i, h in enumerate(hits) if h is not None]
    from irc.cache import private_dir

    held = sum(p.stat().st_size for p in private_dir(cc.NAMESPACE).iterdir())
    assert held <= 30_000
    assert 0 < len(whole) < len(keys)  # ~6 kB an entry with its records
    for i, hit in whole:
        assert hit.text == f"text {i}"
        assert hit.weights is not None
        assert hit.weights.read_bytes() == bytes([i]) * 5000


def test_a_graph_capture_sees_the_passes_on_a_warm_cache(compile_cache: Path) -> None:
    import irc
    from irc.graph import GraphCapture
    from irc.timing import instrumented

    if not toolchain.probe().toolchain:
        pytest.skip("no working C compiler for the cpu target")
    model = _tiny_onnx(compile_cache / "tiny.onnx")
    irc.compile(model, "cpu")
    capture = GraphCapture()
    with instrumented(capture):
        compiled = irc.compile(model, "cpu")
    assert capture.graph(compiled.refusals, compiled.summary) is not None


def test_renamed_weights_changes_the_section_header_only() -> None:
    from irc.compile_cache import renamed_weights

    text = '{-# external_resources: {w: {\n    file: "a.weights"\n}} #-}\nfile: "a.weights"\n'
    assert renamed_weights(text, "a.weights", "b.weights") == text.replace(
        'file: "a.weights"\n}', 'file: "b.weights"\n}'
    )
    with pytest.raises(ValueError, match="does not name"):
        renamed_weights(text, "c.weights", "b.weights")
