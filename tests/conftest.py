"""Test-session infrastructure: the `slow` tier, and models compiled once per session.

* `slow` marks the tests that cost the most (measured with `pytest --durations`, see
  `SLOW_TESTS`): real models compiled and run, whole kernel families built, tools started in
  fresh processes, and (`cpu_support.isa_params`) every ISA profile after the best one this
  CPU runs, and (`opencl_support.kernel_style_params`) the OpenCL kernel style the device
  does not use by default. README's test command runs `-m 'not slow'`; CI runs it, then
  `-m slow`. PoCL builds the fast tier's programs with `-cl-opt-disable`
  (`POCL_EXTRA_BUILD_FLAGS`), the slow tier's as users do.
* `compile_once` (session-scoped) compiles a model for a target list once per test session:
  modules that check the same shared model on the same targets reuse one `CompiledModel`
  (compiling MobileNetV2 costs seconds). Tests treat it as read-only: `run` it, read its
  module and summary, never `resize` or mutate it.
* `SHARED_MODELS` is `../shared/models` beside the checkout; tests that read it skip when it
  is missing.
* `ctx`: a fresh xDSL context with every irc dialect (`irc.context.make_context()`).
* `private_cache`: a module marked `pytestmark = pytest.mark.private_cache` (or
  `private_cache(unset=["IRC_X", ...])`) builds into the test run's `IRC_CACHE_DIR` while its
  tests run (CPU libraries and compiler probes, OpenCL programs), never the user's cache; the
  variables named by `unset` are removed meanwhile. The run's cache is one folder per pytest
  run, shared by every marked module and every xdist worker: entries are keyed by their
  source, flags and compiler, so what one module built (a compiler probe, a kernel library)
  another reuses instead of building it again. Mark every module that builds CPU code: an
  unmarked one builds into the user's `IRC_CACHE_DIR`, a second copy of each kernel library
  (~20 CPU s per ISA profile, cold). Tests that need the folder take the
  `private_cache` fixture (the path; None in an unmarked module); a test that needs an empty
  cache takes `fresh_cache`.
* `fresh_cache`: `IRC_CACHE_DIR` set to an empty folder for one test (modules opt in with
  `pytestmark = pytest.mark.usefixtures("fresh_cache")`, tests that need it take the path).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from cache_support import private_cache_dir, shared_cache_dir

if TYPE_CHECKING:
    from xdsl.context import Context

    import irc

SHARED_MODELS = Path(__file__).resolve().parents[1].parent / "shared" / "models"
"""../shared/models from the repository root."""

SLOW_TESTS: tuple[str, ...] = (
    # Node-id prefixes (file, file::test, file::test[param]) from a full `pytest` run on the
    # 2-core development machine: each test function here costs 3 s of CPU or more over its
    # parameters (a kernel family built, a real model compiled and run, tools started in
    # fresh processes, a thread-count or library-build sweep). With the ISA profiles after the
    # first one a CPU runs (`cpu_support.isa_params`), the slow tier is about half of the
    # suite's CPU time (cold, AMD EPYC AVX2: ~480 of 1,026 CPU s) in 5 % of its tests.
    "tests/test_aot.py::test_artifact_runs_in_a_fresh_process_without_the_model",
    "tests/test_batch_norm_decompose.py::test_densenet_runs_as_one_cpu_region",
    "tests/test_compile.py::test_compiled_models_match_the_reference",
    "tests/test_compile.py::test_console_scripts_with_plugins",
    "tests/test_convert_layout.py::test_model_inside_a_region",
    "tests/test_convert_layout.py::test_shared_model",
    "tests/test_cpu_conv_threads.py::test_conv_against_reference_on_1_and_2_threads",
    "tests/test_cpu_conv_transpose.py::test_float",
    "tests/test_cpu_fp16_transformers.py::test_fp16_storage_rounds_as_the_reference",
    "tests/test_cpu_int8_depthwise.py::test_depthwise_bit_exact",
    "tests/test_cpu_int8_models.py::test_shared_int8_models",
    "tests/test_cpu_int8_pointwise.py::test_pointwise_bit_exact",
    "tests/test_cpu_isa.py::test_every_x86_profile_compiles",
    "tests/test_cpu_isa.py::test_neon_profile_runs_under_qemu",
    "tests/test_cpu_library.py::test_a_corrupted_library_is_rebuilt",
    "tests/test_cpu_library.py::test_moved_cache_and_fresh_cache_in_new_processes",
    "tests/test_cpu_library.py::test_the_library_is_warning_free",
    "tests/test_cpu_pool_threads.py::test_pools_and_pads_on_threads_and_isas",
    "tests/test_cpu_qfused.py::test_fused_bit_exact",
    "tests/test_cpu_quant.py::test_generated_rescale_matches_reference",
    "tests/test_cpu_split_determinism.py",
    "tests/test_cpu_target.py::test_damaged_cache_entry_is_rebuilt",
    "tests/test_differential_smoke.py::test_smoke_run_has_no_mismatch",
    "tests/test_fp16_models.py::test_opencl_follows_the_compile_precision",
    "tests/test_fp16_models.py::test_opencl_keeps_the_model_16_bit",
    "tests/test_import_onnx_transformer.py::test_transformer_opencl",
    "tests/test_import_structure.py::test_every_module_imports_on_its_own",
    "tests/test_import_tflite.py::test_real_model_matches_goldens",
    "tests/test_insert_qdq.py::test_model_numerics",
    "tests/test_models.py",
    "tests/test_opencl.py::test_shared_float_models_match_the_reference",
    "tests/test_opencl.py::test_shared_int8_models_run_on_opencl",
    "tests/test_opencl_fp16.py::test_shared_float_models_match_the_reference_in_fp16",
    "tests/test_opencl_fp16.py::test_shared_models_type_check_and_halve_device_memory_in_fp16",
    "tests/test_outline_delegates.py::test_outlining_real_models_changes_no_output",
    "tests/test_partition.py::test_models_partition_and_run_identically",
    "tests/test_partition.py::test_models_run_identically_on_testplugin",
    "tests/test_quantized_onnx_models.py",
    "tests/test_readme.py::test_quick_start_runs_as_written",
    "tests/test_zoo_models.py::test_opencl",
)


def pytest_configure(config: pytest.Config) -> None:
    # Tests patch irc's internals, which the compile cache's key cannot see: compilations
    # run the pipeline (tests of the cache itself turn it on: test_compile_time_caching.py).
    os.environ["IRC_COMPILE_CACHE"] = "0"
    # PoCL, the suite's OpenCL device on machines without a GPU, builds the unit tests' many
    # small programs (~2,300 kernels) without LLVM's optimiser: the same OpenCL C semantics,
    # 40-60 % less build time. The `slow` tier (real models) builds as users do (pocl_flags).
    # NVIDIA's and other drivers ignore the variable.
    os.environ.setdefault("POCL_EXTRA_BUILD_FLAGS", POCL_UNIT_TEST_FLAGS)
    config.addinivalue_line(
        "markers",
        "slow: the slow tier (README's test command runs `-m 'not slow'`; CI then runs `-m slow`)",
    )
    config.addinivalue_line(
        "markers",
        "private_cache(unset=()): the module builds into the run's IRC_CACHE_DIR (conftest.py)",
    )


POCL_UNIT_TEST_FLAGS = "-cl-opt-disable"
"""What the suite adds to PoCL's builds (`POCL_EXTRA_BUILD_FLAGS`) outside the `slow` tier."""


@pytest.fixture(autouse=True)
def pocl_flags(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `slow` test builds with PoCL's optimiser on (its programs, not the module-scoped
    fixtures' built before it): the real models run as users build them."""
    if request.node.get_closest_marker("slow") is None:
        return
    if os.environ.get("POCL_EXTRA_BUILD_FLAGS") == POCL_UNIT_TEST_FLAGS:
        monkeypatch.delenv("POCL_EXTRA_BUILD_FLAGS")


MAX_WORKERS = 8
"""`pytest -n auto` starts at most this many workers: each one imports and builds on its own."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pytest-xdist): one worker per CPU this process may run on (a container's
    CPU set, not the host's count; logical CPUs, as a 2-vCPU machine may report one core),
    at most `MAX_WORKERS`."""
    return auto_num_workers()


def auto_num_workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests named by `SLOW_TESTS` as `slow`."""
    for item in items:
        if any(_matches(item.nodeid, prefix) for prefix in SLOW_TESTS):
            item.add_marker(pytest.mark.slow)


def _matches(nodeid: str, prefix: str) -> bool:
    return nodeid == prefix or nodeid.startswith((prefix + "::", prefix + "["))


@pytest.fixture(scope="session")
def compile_once() -> Callable[..., irc.CompiledModel]:
    """`compile_once(model, targets, **options)`: `irc.compile` of a model file once per
    session and argument list (the same object again for the same arguments)."""
    import irc

    compiled: dict[tuple[Any, ...], irc.CompiledModel] = {}

    def compile_model(
        model: str | Path, targets: Sequence[str], **options: Any
    ) -> irc.CompiledModel:
        key = (str(Path(model).resolve()), tuple(targets), repr(sorted(options.items())))
        if key not in compiled:
            compiled[key] = irc.compile(Path(model), list(targets), **options)
        return compiled[key]

    return compile_model


@pytest.fixture
def ctx() -> Context:
    """A fresh context with irc's dialects registered (lazily)."""
    from irc.context import make_context

    return make_context()


@pytest.fixture(scope="session")
def run_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test run's build cache: one folder per pytest run, shared by its xdist workers."""
    return shared_cache_dir(tmp_path_factory.getbasetemp(), os.environ.get("PYTEST_XDIST_WORKER"))


@pytest.fixture(scope="module", autouse=True)
def private_cache(request: pytest.FixtureRequest) -> Iterator[Path | None]:
    """The run's `IRC_CACHE_DIR` for a module marked `private_cache` (see the module doc)."""
    marker = request.node.get_closest_marker("private_cache")
    if marker is None:
        yield None
        return
    path: Path = request.getfixturevalue("run_cache")
    yield from private_cache_dir(path, marker.kwargs.get("unset", ()))


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty `IRC_CACHE_DIR` for one test: nothing built by another test is reused."""
    path = tmp_path / "cache"
    monkeypatch.setenv("IRC_CACHE_DIR", str(path))
    return path
