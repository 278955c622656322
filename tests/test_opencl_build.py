"""OpenCL program builds and execution contexts: quiet build logs, builds at load, contexts.

A driver's build log never becomes a `pyopencl.CompilerWarning` (fatal under `-W error`): it
is kept on the program, shown with `IRC_OPENCL_BUILD_LOG=1` and carried by a failing build's
error. Programs are built (and their kernels run once) when an executable is loaded, sibling
executables' programs on other threads. Every call runs in an execution context with its
kernels' arguments preset; a result still held keeps its context, and calls on several
threads do not disturb each other.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import types
import warnings

import numpy as np
import pytest
from cpu_support import SHARED_MODELS
from opencl_support import needs_device, wide_vector_calls
from xdsl.parser import Parser

import irc
from irc.context import make_context
from irc.dialects import delegate, ocl
from irc.targets.opencl import runtime as ocl_runtime
from irc.targets.opencl.build import BUILD_LOG_ENV, BuildFailure, build
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.runtime import OpenCLRuntime, OpenCLValue
from irc.timing import PassTiming, instrumented

pytestmark = pytest.mark.private_cache

RNG = np.random.default_rng(16)

WARNING_SOURCE = """/* nn.relu 8 -> 8 */
__kernel void k0(__global const float* restrict x0, __global float* restrict y) {
    int unused_variable;
#warning irc-test-warning-{tag}
    const int i = get_global_id(0);
    y[i] = x0[i] > 0.0f ? x0[i] : 0.0f;
}
"""

FAILING_SOURCE = """/* nn.tanh 8 -> 8 */
__kernel void k0(__global const float* restrict x0, __global float* restrict y) {
    y[get_global_id(0)] = no_such_identifier_{tag};
}
"""

TWO_EXECUTABLES = """
builtin.module {
  delegate.executable private @first target("opencl") {
    func.func @entry(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<4x8xf32> {
      %s = nn.add %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
      %t = nn.tanh %s : tensor<4x8xf32> -> tensor<4x8xf32>
      func.return %t : tensor<4x8xf32>
    }
  }
  delegate.executable private @second target("opencl") {
    func.func @entry(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %r = nn.softmax %x axis = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
      %q = nn.mul %r, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
      func.return %q : tensor<4x8xf32>
    }
  }
  func.func @main(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<4x8xf32> {
    %a = delegate.dispatch @first::@entry(%x, %y)
        : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %b = delegate.dispatch @second::@entry(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return %b : tensor<4x8xf32>
  }
}
"""


def _device():
    from irc.targets.opencl.device import get_device

    return get_device()


def _unique(text: str) -> str:
    """`text` with a tag no other test (or earlier run's cache) used."""
    return text.replace("{tag}", f"{RNG.integers(1 << 62):x}")


def _no_compiler_warnings(record: list[warnings.WarningMessage]) -> None:
    import pyopencl

    assert [w for w in record if issubclass(w.category, pyopencl.CompilerWarning)] == []


# ---- Build logs --------------------------------------------------------------------------------


@needs_device
def test_a_build_that_warns_is_quiet_and_keeps_its_log(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(BUILD_LOG_ENV, raising=False)
    source = _unique(WARNING_SOURCE)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        built = ocl_runtime.build_program(_device(), source)
    _no_compiler_warnings(record)
    assert "irc-test-warning" in built.log
    assert "irc-test-warning" not in capsys.readouterr().err


@needs_device
def test_the_drivers_own_stderr_summary_is_dropped(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """PoCL's clang prints `N warnings generated.` on descriptor 2 itself for a build with
    warnings (issue 19, item 7): a build is silent, and descriptor 2 works afterwards."""
    monkeypatch.delenv(BUILD_LOG_ENV, raising=False)
    built = ocl_runtime.build_program(_device(), _unique(WARNING_SOURCE))
    os.write(2, b"after the build\n")
    assert "irc-test-warning" in built.log
    assert capfd.readouterr().err == "after the build\n"


@needs_device
def test_build_log_on_request_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(BUILD_LOG_ENV, "1")
    ocl_runtime.build_program(_device(), _unique(WARNING_SOURCE))
    err = capsys.readouterr().err
    assert "irc: opencl: build log of program" in err
    assert "irc-test-warning" in err


@needs_device
def test_cached_binary_builds_quietly_and_shows_its_log_on_request(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("IRC_OPENCL_BINARY_CACHE", "on")
    device = _device()
    source = _unique(WARNING_SOURCE)
    first = ocl_runtime.build_program(device, source)
    ocl_runtime.save_binary(device, first)
    ocl_runtime._programs.pop(first.key)
    monkeypatch.setenv(BUILD_LOG_ENV, "1")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        again = ocl_runtime.build_program(device, source)
    _no_compiler_warnings(record)
    assert again.from_cache
    assert "(cached binary)" in capsys.readouterr().err


@needs_device
def test_failing_build_error_carries_the_log() -> None:
    with pytest.raises(ocl_runtime.OpenCLBuildError, match=r"kernels of: nn\.tanh 8 -> 8") as info:
        ocl_runtime.build_program(_device(), _unique(FAILING_SOURCE))
    assert "no_such_identifier" in info.value.log
    assert "no_such_identifier" in str(info.value)


@needs_device
def test_without_the_low_level_build_the_public_one_is_filtered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pyopencl

    proxy = types.SimpleNamespace(**vars(pyopencl))
    proxy._cl = types.SimpleNamespace()  # no _Program._build: the public path
    device = dataclasses.replace(_device(), cl=proxy)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        program, log = build(device, source=_unique(WARNING_SOURCE))
    _no_compiler_warnings(record)
    assert "irc-test-warning" in log
    assert pyopencl.Kernel(program, "k0").function_name == "k0"
    with pytest.raises(BuildFailure, match="no_such_identifier"):
        build(device, source=_unique(FAILING_SOURCE))


@needs_device
def test_compile_with_fallback_does_not_raise_on_a_build_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A program whose build logs (every build here logs, like NVIDIA's) still compiles and
    runs through `irc.compile(..., targets=["opencl", "reference"])` under -W error."""
    real_build = ocl_runtime.build

    def logging_build(device, **kwargs):
        if kwargs.get("source") is not None:
            kwargs["source"] = "#warning every build logs\n" + kwargs["source"]
        return real_build(device, **kwargs)

    monkeypatch.setattr(ocl_runtime, "build", logging_build)
    module = Parser(make_context(), TWO_EXECUTABLES.replace("4x8", "5x8"), "m").parse_module()
    model = irc.compile(module, targets=["opencl", "reference"])
    loaded = model.program.loaded
    assert sorted(loaded) == ["first", "second"]
    assert all("every build logs" in exe.built.log for exe in loaded.values())
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    y = RNG.standard_normal(8).astype(np.float32)
    s = np.tanh(x + y)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True) * s
    got = model.run(dict(zip(model.input_names, [x, y], strict=True)))
    np.testing.assert_allclose(next(iter(got.values())), want, rtol=1e-4, atol=1e-5)


# ---- Builds at load ----------------------------------------------------------------------------


@needs_device
def test_load_builds_siblings_in_parallel_and_runs_kernels_once() -> None:
    text = TWO_EXECUTABLES.replace("4x8", "6x8")
    module = Parser(make_context(), text, "m").parse_module()
    LowerOpenCLPass().apply(make_context(), module)
    first, second = [op for op in module.walk() if isinstance(op, delegate.ExecutableOp)]
    device = _device()
    sources = [
        next(op for op in exe.body.block.ops if op.name == "ocl.program").source.data
        for exe in (first, second)
    ]
    keys = [ocl_runtime.program_key(device, s) for s in sources]
    seen_threads: set[str] = set()
    real = ocl_runtime._build_uncached

    def spy(device, source, key):
        seen_threads.add(threading.current_thread().name)
        return real(device, source, key)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ocl_runtime, "_build_uncached", spy)
        timing = PassTiming()
        with instrumented(timing):
            loaded = OpenCLRuntime().load(first)
        ocl_runtime.build_program(device, sources[1])  # waits for the prefetched build
    assert all(key in ocl_runtime._programs for key in keys)
    assert any(name.startswith("irc-opencl-build") for name in seen_threads)
    assert "opencl: build @first" in timing.times()
    assert "opencl: compile kernels of @first" in timing.times()
    launches = loaded.launch_geometry("entry")
    assert launches
    assert all(len(g) >= 1 for _, g, _ in launches)
    assert loaded.warm_up() == 0  # every launch already ran once, at load


# ---- Execution contexts ------------------------------------------------------------------------


def _loaded(text: str):
    module = Parser(make_context(), text, "m").parse_module()
    LowerOpenCLPass().apply(make_context(), module)
    first = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    return OpenCLRuntime().load(first)


def _want(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.tanh(x + y)


@needs_device
def test_held_results_keep_their_context_and_dropped_ones_free_it() -> None:
    loaded = _loaded(TWO_EXECUTABLES.replace("4x8", "7x8"))
    y = RNG.standard_normal(8).astype(np.float32)
    x1, x2 = (RNG.standard_normal((7, 8)).astype(np.float32) for _ in range(2))
    assert loaded.contexts_made("entry") == 1  # made at load
    (a,) = loaded.execute("entry", [x1, y])
    (b,) = loaded.execute("entry", [x2, y])  # `a` is held: a second context
    assert loaded.contexts_made("entry") == 2
    assert a.buffer is not b.buffer
    np.testing.assert_allclose(a.to_host(), _want(x1, y), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.to_host(), _want(x2, y), rtol=1e-5, atol=1e-6)
    del a, b
    for _ in range(5):  # dropped results: their contexts are reused
        (c,) = loaded.execute("entry", [x1, y])
        np.testing.assert_allclose(c.to_host(), _want(x1, y), rtol=1e-5, atol=1e-6)
        del c
    assert loaded.contexts_made("entry") == 2


@needs_device
def test_device_value_input_is_bound_then_the_own_buffer_again() -> None:
    loaded = _loaded(TWO_EXECUTABLES.replace("4x8", "3x8"))
    y = RNG.standard_normal(8).astype(np.float32)
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    (a,) = loaded.execute("entry", [x, y])
    (b,) = loaded.execute("entry", [a, y])  # a device value: bound, not copied
    assert isinstance(b, OpenCLValue)
    np.testing.assert_allclose(b.to_host(), _want(_want(x, y), y), rtol=1e-5, atol=1e-6)
    del a, b
    (c,) = loaded.execute("entry", [x, y])  # a host array again: the context's own buffer
    np.testing.assert_allclose(c.to_host(), _want(x, y), rtol=1e-5, atol=1e-6)


@needs_device
def test_calls_on_several_threads_each_get_their_own_results() -> None:
    loaded = _loaded(TWO_EXECUTABLES.replace("4x8", "9x8"))
    y = RNG.standard_normal(8).astype(np.float32)
    inputs = [RNG.standard_normal((9, 8)).astype(np.float32) for _ in range(4)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(inputs))

    def work(x: np.ndarray) -> None:
        try:
            start.wait()
            for _ in range(25):
                (out,) = loaded.execute("entry", [x, y])
                np.testing.assert_allclose(out.to_host(), _want(x, y), rtol=1e-5, atol=1e-6)
                del out  # this thread's context is free again
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert 1 <= loaded.contexts_made("entry") <= len(inputs) + 1


# ---- Device profile ----------------------------------------------------------------------------


@needs_device
def test_device_profile_and_local_sizes_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    device = _device()
    profile = device.profile
    assert profile.kind in ("cpu", "gpu", "accelerator", "other")
    assert profile.compute_units >= 1
    assert profile.max_work_group_size >= 1
    assert profile.fits(None)
    assert profile.fits((1,))
    assert not profile.fits((profile.max_work_group_size + 1,))
    assert profile.name in profile.describe()
    small = dataclasses.replace(profile, max_work_group_size=2, max_work_item_sizes=(2, 2, 2))
    monkeypatch.setattr(device, "_profile", small)
    loaded = _loaded(TWO_EXECUTABLES.replace("4x8", "16x8"))
    geometry = loaded.launch_geometry("entry")
    assert all(int(np.prod(local or (1,))) <= 2 for _, _, local in geometry)
    y = RNG.standard_normal(8).astype(np.float32)
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    (out,) = loaded.execute("entry", [x, y])
    np.testing.assert_allclose(out.to_host(), _want(x, y), rtol=1e-5, atol=1e-6)


# ---- No 512-bit vectors passed by value (PoCL's -Wpsabi warning on AVX2 CPUs) -----------------

FLOAT_MODELS = {
    "mobilenet_v2_float32": "mobilenet_v2_float32.tflite",
    "face_detection_short_range": "face_detection_short_range.tflite",
}


@needs_device
@pytest.mark.parametrize("name", sorted(FLOAT_MODELS))
def test_generated_kernels_pass_no_512_bit_vector_to_a_call(name: str) -> None:
    """On an AVX2 CPU, PoCL's clang warns once per call taking a float16 by value
    ("AVX vector argument of type '__private float16' without 'avx512f' enabled changes the
    ABI": `234 warnings generated.` on stderr for MobileNetV2 when the fused relu6 was
    `fmin(fmax(v, 0), 6)`); the register-tiled kernels' epilogues must use operators."""
    path = SHARED_MODELS / name / FLOAT_MODELS[name]
    if not path.exists():
        pytest.skip(f"{path} is not available")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the model's dynamic batch dimension
        model = irc.compile(path, targets=["opencl"])
    sources = [op.source.data for op in model.module.walk() if isinstance(op, ocl.ProgramOp)]
    assert sources
    assert [call for source in sources for call in wide_vector_calls(source)] == []


@needs_device
def test_one_compiled_model_on_several_threads() -> None:
    """Device values pass between two OpenCL dispatches while other threads run the model."""
    module = Parser(make_context(), TWO_EXECUTABLES.replace("4x8", "10x8"), "m").parse_module()
    model = irc.compile(module, targets=["opencl"])
    reference = irc.compile(module, targets=["reference"])
    y = RNG.standard_normal(8).astype(np.float32)
    feeds = [
        dict(zip(model.input_names, [RNG.standard_normal((10, 8)).astype(np.float32), y]))
        for _ in range(4)
    ]
    wants = [next(iter(reference.run(feed).values())) for feed in feeds]
    errors: list[BaseException] = []
    start = threading.Barrier(len(feeds))

    def work(feed: dict[str, np.ndarray], want: np.ndarray) -> None:
        try:
            start.wait()
            for _ in range(20):
                got = next(iter(model.run(feed).values()))
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=pair) for pair in zip(feeds, wants)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


@needs_device
def test_binary_cache_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    device = _device()
    pocl = "portable computing language" in str(device.device.platform.name).lower()
    monkeypatch.delenv(ocl_runtime.BINARY_CACHE_ENV, raising=False)
    monkeypatch.delenv("POCL_KERNEL_CACHE", raising=False)
    assert ocl_runtime.saves_binaries(device) is not pocl  # PoCL caches its own kernels
    monkeypatch.setenv("POCL_KERNEL_CACHE", "0")
    assert ocl_runtime.saves_binaries(device)
    monkeypatch.setenv(ocl_runtime.BINARY_CACHE_ENV, "off")
    assert not ocl_runtime.saves_binaries(device)
    monkeypatch.setenv(ocl_runtime.BINARY_CACHE_ENV, "on")
    monkeypatch.delenv("POCL_KERNEL_CACHE")
    assert ocl_runtime.saves_binaries(device)
    built = ocl_runtime.build_program(device, _unique(WARNING_SOURCE))
    assert not built.saved  # to be written at load


@needs_device
def test_prefetched_program_is_saved_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program a `prefetch_programs` worker built is still to be saved by its load."""
    device = _device()
    monkeypatch.setenv(ocl_runtime.BINARY_CACHE_ENV, "on")
    source = _unique(WARNING_SOURCE)
    for future in ocl_runtime.prefetch_programs(device, [source]):
        future.result()
    built = ocl_runtime.build_program(device, source)
    assert built.from_cache
    assert not built.saved
    ocl_runtime.save_binary(device, built)
    assert ocl_runtime.build_program(device, source).saved


def test_correct_division_is_asked_only_where_the_device_reports_it() -> None:
    from types import SimpleNamespace

    from irc.targets.opencl import build as ocl_build

    fp_config = SimpleNamespace(CORRECTLY_ROUNDED_DIVIDE_SQRT=128)
    cl = SimpleNamespace(device_fp_config=fp_config)
    without = SimpleNamespace(cl=cl, device=SimpleNamespace(single_fp_config=2 | 4))
    with_it = SimpleNamespace(cl=cl, device=SimpleNamespace(single_fp_config=2 | 128))
    options = ocl_build.BUILD_OPTIONS
    assert ocl_build.device_build_options(with_it) == options  # type: ignore[arg-type]  # fakes
    dropped = ocl_build.device_build_options(without)  # type: ignore[arg-type]  # fakes
    assert ocl_build.CORRECT_DIVISION not in dropped
    assert dropped.split() == [o for o in options.split() if o != ocl_build.CORRECT_DIVISION]
