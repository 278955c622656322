"""Tests of dispatch execution: `delegate.dispatch` steps on target runtimes, device values
kept between dispatches of one target, transfers, loading once, positional runs, profiles.

The modules are written by hand (executables + dispatches, as outline-delegates makes
them) and compared with the same computation written flat and run on the reference target.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.ir import Operation

import irc
from irc.dialects.delegate import DispatchOp
from irc.pipelines import prepare_for_reference
from irc.runtime import (
    CompileError,
    ExecutionError,
    InputError,
    Profile,
    Program,
    Step,
    compile_function,
    step_for_op,
)
from irc.targets import (
    Availability,
    LoadedExecutable,
    Support,
    Target,
    TargetRuntime,
    base,
    load_plugin,
    registered_targets,
)

ROOT = Path(__file__).resolve().parents[1]
TESTPLUGIN = "tests.plugins.testplugin:TestPluginTarget"


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The test plugin target, registered in a private copy of the registry, counters at 0."""
    registered_targets()
    monkeypatch.setattr(base, "_registered", dict(base._registered))
    monkeypatch.chdir(ROOT)  # where `tests.plugins` is found
    target = load_plugin(TESTPLUGIN)
    target.counters.reset()
    return target


def parse(text: str, filename: str = "d.mlir") -> Any:
    return irc.parse_module(text, filename=filename)


def counts(target: Any) -> dict[str, int]:
    return target.counters.snapshot()


# ---- Modules ------------------------------------------------------------------

T_X = "tensor<1x2x4x4xf32>"
T_W = "tensor<3x2x1x1xf32>"
T_A = "tensor<1x3x4x4xf32>"
T_Y = "tensor<1x3x2x2xf32>"

CONV = f"""\
delegate.executable private @main_testplugin_0 target("testplugin") {{
  func.func @entry(%x: {T_X}, %w: {T_W}) -> {T_A} {{
    %c = nn.conv2d %x, %w layout = "NCHW" activation = "relu" : {T_X}, {T_W} -> {T_A}
    func.return %c : {T_A}
  }}
}}
"""

ADD_POOL = f"""\
delegate.executable private @main_testplugin_1 target("testplugin") {{
  func.func @entry(%a: {T_A}, %b: {T_A}) -> {T_Y} {{
    %s = nn.add %a, %b : {T_A}, {T_A} -> {T_A}
    %p = nn.max_pool2d %s kernel = [2, 2] strides = [2, 2] layout = "NCHW" : {T_A} -> {T_Y}
    func.return %p : {T_Y}
  }}
}}
"""

NAMES = 'attributes {irc.input_names = ["x", "w"], irc.output_names = ["y"]}'

# Two consecutive testplugin dispatches: %a stays on the device.
CONSECUTIVE = (
    CONV
    + ADD_POOL
    + f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> {T_Y} {NAMES} {{
  %a = delegate.dispatch @main_testplugin_0::@entry(%x, %w) : ({T_X}, {T_W}) -> {T_A}
  %y = delegate.dispatch @main_testplugin_1::@entry(%a, %a) : ({T_A}, {T_A}) -> {T_Y}
  func.return %y : {T_Y}
}}
"""
)

CONSECUTIVE_FLAT = f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> {T_Y} {NAMES} {{
  %a = nn.conv2d %x, %w layout = "NCHW" activation = "relu" : {T_X}, {T_W} -> {T_A}
  %s = nn.add %a, %a : {T_A}, {T_A} -> {T_A}
  %y = nn.max_pool2d %s kernel = [2, 2] strides = [2, 2] layout = "NCHW" : {T_A} -> {T_Y}
  func.return %y : {T_Y}
}}
"""

# A host op (nn.neg, which testplugin does not take) between the two dispatches.
HOST_BETWEEN = (
    CONV
    + ADD_POOL
    + f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> {T_Y} {NAMES} {{
  %a = delegate.dispatch @main_testplugin_0::@entry(%x, %w) : ({T_X}, {T_W}) -> {T_A}
  %n = nn.neg %a : {T_A} -> {T_A}
  %y = delegate.dispatch @main_testplugin_1::@entry(%n, %n) : ({T_A}, {T_A}) -> {T_Y}
  func.return %y : {T_Y}
}}
"""
)

HOST_BETWEEN_FLAT = f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> {T_Y} {NAMES} {{
  %a = nn.conv2d %x, %w layout = "NCHW" activation = "relu" : {T_X}, {T_W} -> {T_A}
  %n = nn.neg %a : {T_A} -> {T_A}
  %s = nn.add %n, %n : {T_A}, {T_A} -> {T_A}
  %y = nn.max_pool2d %s kernel = [2, 2] strides = [2, 2] layout = "NCHW" : {T_A} -> {T_Y}
  func.return %y : {T_Y}
}}
"""

# %a feeds a host op, the next testplugin dispatch and the outputs: one transfer for the
# host op and the output, the device value for the dispatch.
SHARED = (
    CONV
    + ADD_POOL
    + f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> ({T_Y}, {T_A}, {T_A}) {{
  %a = delegate.dispatch @main_testplugin_0::@entry(%x, %w) : ({T_X}, {T_W}) -> {T_A}
  %n = nn.neg %a : {T_A} -> {T_A}
  %y = delegate.dispatch @main_testplugin_1::@entry(%a, %n) : ({T_A}, {T_A}) -> {T_Y}
  func.return %y, %a, %n : {T_Y}, {T_A}, {T_A}
}}
"""
)

SHARED_FLAT = f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> ({T_Y}, {T_A}, {T_A}) {{
  %a = nn.conv2d %x, %w layout = "NCHW" activation = "relu" : {T_X}, {T_W} -> {T_A}
  %n = nn.neg %a : {T_A} -> {T_A}
  %s = nn.add %a, %n : {T_A}, {T_A} -> {T_A}
  %y = nn.max_pool2d %s kernel = [2, 2] strides = [2, 2] layout = "NCHW" : {T_A} -> {T_Y}
  func.return %y, %a, %n : {T_Y}, {T_A}, {T_A}
}}
"""

# reference -> testplugin -> reference, with a two-result reference entry.
MIXED = f"""\
delegate.executable private @main_reference_0 target("reference") {{
  func.func @entry(%x: {T_X}) -> ({T_X}, {T_X}) {{
    %n = nn.neg %x : {T_X} -> {T_X}
    %e = nn.exp %x : {T_X} -> {T_X}
    func.return %n, %e : {T_X}, {T_X}
  }}
}}
{CONV}delegate.executable private @main_reference_1 target("reference") {{
  func.func @entry(%a: {T_A}) -> {T_A} {{
    %t = nn.tanh %a : {T_A} -> {T_A}
    func.return %t : {T_A}
  }}
}}
func.func @main(%x: {T_X}, %w: {T_W}) -> ({T_A}, {T_X}) {{
  %n, %e = delegate.dispatch @main_reference_0::@entry(%x) : ({T_X}) -> ({T_X}, {T_X})
  %a = delegate.dispatch @main_testplugin_0::@entry(%n, %w) : ({T_X}, {T_W}) -> {T_A}
  %t = delegate.dispatch @main_reference_1::@entry(%a) : ({T_A}) -> {T_A}
  func.return %t, %e : {T_A}, {T_X}
}}
"""

MIXED_FLAT = f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> ({T_A}, {T_X}) {{
  %n = nn.neg %x : {T_X} -> {T_X}
  %e = nn.exp %x : {T_X} -> {T_X}
  %a = nn.conv2d %n, %w layout = "NCHW" activation = "relu" : {T_X}, {T_W} -> {T_A}
  %t = nn.tanh %a : {T_A} -> {T_A}
  func.return %t, %e : {T_A}, {T_X}
}}
"""

# A reference executable with quantized arithmetic that lower-quantized has not seen.
QUANTIZED = """\
!q = !quant.uniform<i8:f32, 0.5:-3>
delegate.executable private @main_reference_0 target("reference") {
  func.func @entry(%x: tensor<4x!q>) -> tensor<4x!q> {
    %s = nn.add %x, %x : tensor<4x!q>, tensor<4x!q> -> tensor<4x!q>
    %r = nn.relu %s : tensor<4x!q> -> tensor<4x!q>
    func.return %r : tensor<4x!q>
  }
}
func.func @main(%x: tensor<4x!q>) -> tensor<2x2x!q> {
  %y = delegate.dispatch @main_reference_0::@entry(%x) : (tensor<4x!q>) -> tensor<4x!q>
  %z = nn.reshape %y shape = [2, 2] : tensor<4x!q> -> tensor<2x2x!q>
  func.return %z : tensor<2x2x!q>
}
"""

QUANTIZED_FLAT = """\
!q = !quant.uniform<i8:f32, 0.5:-3>
func.func @main(%x: tensor<4x!q>) -> tensor<2x2x!q> {
  %s = nn.add %x, %x : tensor<4x!q>, tensor<4x!q> -> tensor<4x!q>
  %r = nn.relu %s : tensor<4x!q> -> tensor<4x!q>
  %z = nn.reshape %r shape = [2, 2] : tensor<4x!q> -> tensor<2x2x!q>
  func.return %z : tensor<2x2x!q>
}
"""


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "x": rng.standard_normal((1, 2, 4, 4)).astype(np.float32),
        "w": rng.standard_normal((3, 2, 1, 1)).astype(np.float32),
    }


def positional() -> list[np.ndarray]:
    named = inputs()
    return [named["x"], named["w"]]


def reference_outputs(flat: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    module = prepare_for_reference(parse(flat, "flat.mlir"))
    return compile_function(module).run_positional(args)


def assert_all_equal(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        assert isinstance(got, np.ndarray)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# ---- Results and transfers ----------------------------------------------------


def test_consecutive_dispatches_keep_the_device_value(plugin: Any) -> None:
    program = compile_function(parse(CONSECUTIVE))
    outputs = program.run(inputs())
    assert list(outputs) == ["y"]
    assert_all_equal([outputs["y"]], reference_outputs(CONSECUTIVE_FLAT, positional()))
    # x and w go up, y comes down; %a never leaves the device.
    assert counts(plugin) == {"loads": 2, "executes": 2, "uploads": 2, "downloads": 1}
    assert [step.kind for step in program.steps] == ["dispatch", "dispatch", "transfer"]


def test_a_host_op_between_dispatches_converts(plugin: Any) -> None:
    program = compile_function(parse(HOST_BETWEEN))
    outputs = program.run_positional(positional())
    assert_all_equal(outputs, reference_outputs(HOST_BETWEEN_FLAT, positional()))
    # %a comes down for nn.neg, %n goes up twice (both arguments), y comes down.
    assert counts(plugin) == {"loads": 2, "executes": 2, "uploads": 4, "downloads": 2}
    assert [step.kind for step in program.steps] == [
        "dispatch",
        "transfer",
        "host",
        "dispatch",
        "transfer",
    ]


def test_one_transfer_serves_host_ops_and_outputs(plugin: Any) -> None:
    program = compile_function(parse(SHARED))
    outputs = program.run_positional(positional())
    assert_all_equal(outputs, reference_outputs(SHARED_FLAT, positional()))
    # up: x, w, %n; down: %a once (nn.neg and the output share it), y.
    assert counts(plugin) == {"loads": 2, "executes": 2, "uploads": 3, "downloads": 2}
    assert program.format_schedule().splitlines() == [
        "inputs: %0 arg0, %1 arg1",
        "%2 = @main_testplugin_0::@entry [testplugin](%0, %1)  free %0, %1",
        "%3 = to_host @main_testplugin_0::@entry#0 [testplugin](%2)",
        "%4 = nn.neg(%3)",
        "%5 = @main_testplugin_1::@entry [testplugin](%2, %4)  free %2",
        "%6 = to_host @main_testplugin_1::@entry#0 [testplugin](%5)  free %5",
        "outputs: %6 result0, %3 result1, %4 result2",
    ]


def test_mixed_targets(plugin: Any) -> None:
    program = compile_function(parse(MIXED))
    outputs = program.run_positional(positional())
    expected = reference_outputs(MIXED_FLAT, positional())
    np.testing.assert_allclose(outputs[0], expected[0], rtol=1e-6)
    np.testing.assert_array_equal(outputs[1], expected[1])
    # The reference result %n goes up, the testplugin result %a comes down for reference.
    assert counts(plugin) == {"loads": 1, "executes": 1, "uploads": 2, "downloads": 1}
    kinds = [(step.kind, step.target) for step in program.steps]
    assert kinds == [
        ("dispatch", "reference"),
        ("dispatch", "testplugin"),
        ("transfer", "testplugin"),
        ("dispatch", "reference"),
    ]
    assert set(program.loaded) == {"main_reference_0", "main_testplugin_0", "main_reference_1"}


def test_reference_dispatch_of_an_unlowered_quantized_executable() -> None:
    module = parse(QUANTIZED)
    before = str(module)
    program = compile_function(module)
    assert str(module) == before
    x = np.array([-128, -3, 5, 127], np.int8)
    assert_all_equal(program.run_positional([x]), reference_outputs(QUANTIZED_FLAT, [x]))


def test_a_reference_only_program_has_no_transfers() -> None:
    program = compile_function(parse(QUANTIZED))
    assert [step.kind for step in program.steps] == ["dispatch", "host"]


def test_results_match_over_many_runs_and_threads(plugin: Any) -> None:
    program = compile_function(parse(SHARED))
    expected = reference_outputs(SHARED_FLAT, positional())
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                assert_all_equal(program.run_positional(positional()), expected)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert counts(plugin) == {"loads": 2, "executes": 160, "uploads": 240, "downloads": 160}


# ---- Loading ------------------------------------------------------------------


def test_each_executable_is_loaded_once_at_compile_time(plugin: Any) -> None:
    program = compile_function(parse(CONSECUTIVE))
    assert counts(plugin)["loads"] == 2
    for _ in range(5):
        program.run(inputs())
    assert counts(plugin) == {"loads": 2, "executes": 10, "uploads": 10, "downloads": 5}


def test_an_executable_dispatched_twice_is_loaded_once(plugin: Any) -> None:
    text = (
        CONV
        + f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> ({T_A}, {T_A}) {{
  %a = delegate.dispatch @main_testplugin_0::@entry(%x, %w) : ({T_X}, {T_W}) -> {T_A}
  %b = delegate.dispatch @main_testplugin_0::@entry(%x, %w) : ({T_X}, {T_W}) -> {T_A}
  func.return %a, %b : {T_A}, {T_A}
}}
"""
    )
    program = compile_function(parse(text))
    a, b = program.run_positional(positional())
    np.testing.assert_array_equal(a, b)
    assert counts(plugin)["loads"] == 1
    assert list(program.loaded) == ["main_testplugin_0"]


def test_targets_given_to_compile_function_need_no_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(base, "_registered", dict(base._registered))
    target = load_plugin(TESTPLUGIN)
    target.counters.reset()
    base._registered.pop("testplugin")
    module = parse(CONSECUTIVE)
    with pytest.raises(CompileError, match=r"d\.mlir:\d+:3: unknown target 'testplugin'"):
        compile_function(module)
    for targets in ([target], {"testplugin": target}):
        program = compile_function(module, targets=targets)
        assert_all_equal(
            program.run_positional(positional()),
            reference_outputs(CONSECUTIVE_FLAT, positional()),
        )
    assert counts(target)["loads"] == 4


def test_compile_function_on_a_func_op_finds_the_executables(plugin: Any) -> None:
    module = parse(CONSECUTIVE)
    main = module.body.block.last_op
    program = compile_function(main)
    assert_all_equal(
        program.run_positional(positional()), reference_outputs(CONSECUTIVE_FLAT, positional())
    )


def test_a_target_mapping_can_run_one_target_on_another(plugin: Any) -> None:
    from irc.targets.reference.target import ReferenceTarget

    program = compile_function(parse(CONSECUTIVE), targets={"testplugin": ReferenceTarget()})
    assert_all_equal(
        program.run_positional(positional()), reference_outputs(CONSECUTIVE_FLAT, positional())
    )
    assert counts(plugin)["loads"] == 0
    assert [step.kind for step in program.steps] == ["dispatch", "dispatch"]  # no transfers


# ---- Step factories -----------------------------------------------------------


def test_a_wrapping_step_factory_leaves_dispatches_to_the_targets(plugin: Any) -> None:
    seen: list[str] = []

    def factory(op: Operation) -> Any:
        fn = step_for_op(op)  # declines dispatches: the exception passes through
        seen.append(op.name)
        return fn

    program = compile_function(parse(HOST_BETWEEN), step_factory=factory)
    assert seen == ["nn.neg"]
    assert_all_equal(
        program.run_positional(positional()), reference_outputs(HOST_BETWEEN_FLAT, positional())
    )
    assert counts(plugin)["executes"] == 2


def test_a_step_factory_may_run_dispatches_itself(plugin: Any) -> None:
    def factory(op: Operation) -> Any:
        if isinstance(op, DispatchOp):
            return lambda *args: (np.zeros((1, 3, 4, 4), np.float32),)
        return step_for_op(op)

    program = compile_function(parse(ONE_DISPATCH), step_factory=factory)
    (a,) = program.run_positional(positional())
    np.testing.assert_array_equal(a, np.zeros((1, 3, 4, 4), np.float32))
    assert counts(plugin)["loads"] == 0
    (step,) = program.steps
    assert (step.kind, step.target, step.label) == (
        "dispatch",
        "testplugin",
        "@main_testplugin_0::@entry",
    )


# ---- Positional runs ----------------------------------------------------------


def test_run_positional_checks_its_arguments() -> None:
    program = compile_function(parse(CONSECUTIVE_FLAT))
    with pytest.raises(InputError, match=r"^@main takes 2 arguments, got 1$"):
        program.run_positional(positional()[:1])
    with pytest.raises(InputError, match="must be a sequence in signature order, got dict"):
        program.run_positional(inputs())  # type: ignore[arg-type]
    x, w = positional()
    with pytest.raises(InputError, match="input 'w' of @main: expected dtype float32, got int32"):
        program.run_positional([x, w.astype(np.int32)])
    (y,) = program.run_positional((x, w))
    np.testing.assert_array_equal(y, program.run({"x": x, "w": w})["y"])


# ---- Profiles -----------------------------------------------------------------


def test_profile_rows(plugin: Any) -> None:
    program = compile_function(parse(HOST_BETWEEN, "p.mlir"))
    profile = Profile()
    for _ in range(3):
        program.run(inputs(), profile=profile)
    assert profile.program is program
    assert profile.runs == 3
    rows = profile.rows()
    assert [(r.index, r.kind, r.name, r.target, r.calls) for r in rows] == [
        (0, "dispatch", "@main_testplugin_0::@entry", "testplugin", 3),
        (1, "transfer", "to_host @main_testplugin_0::@entry#0", "testplugin", 3),
        (2, "host", "nn.neg", "", 3),
        (3, "dispatch", "@main_testplugin_1::@entry", "testplugin", 3),
        (4, "transfer", "to_host @main_testplugin_1::@entry#0", "testplugin", 3),
    ]
    lines = HOST_BETWEEN.splitlines()
    dispatch_line = next(i for i, line in enumerate(lines) if "delegate.dispatch" in line) + 1
    assert rows[0].location == f"p.mlir:{dispatch_line}:3"
    assert rows[1].location == rows[0].location  # a transfer points at its dispatch
    assert rows[2].location == f"p.mlir:{dispatch_line + 1}:3"
    assert all(row.total_ms > 0 for row in rows)
    assert rows[0].mean_ms == pytest.approx(rows[0].total_ms / 3)
    assert profile.total_ms >= sum(row.total_ms for row in rows)
    slowest = profile.rows(order="time")
    assert [row.total_ms for row in slowest] == sorted((r.total_ms for r in rows), reverse=True)


def test_profile_format() -> None:
    program = compile_function(parse(CONSECUTIVE_FLAT))
    profile = Profile()
    assert profile.rows() == []
    program.run(inputs(), profile=profile)
    lines = profile.format().splitlines()
    assert lines[0].split() == [
        "#",
        "kind",
        "target",
        "op",
        "location",
        "calls",
        "total",
        "ms",
        "mean",
        "ms",
        "%",
    ]
    assert [line.split()[:4] for line in lines[1:4]] == [
        ["0", "host", "-", "nn.conv2d"],
        ["1", "host", "-", "nn.add"],
        ["2", "host", "-", "nn.max_pool2d"],
    ]
    assert lines[-1].startswith("1 runs, ")
    top = profile.format(order="time", top=1).splitlines()
    assert len(top) == 4
    assert top[2] == "... 2 more steps"


def test_a_profile_belongs_to_one_program() -> None:
    profile = Profile()
    compile_function(parse(CONSECUTIVE_FLAT)).run(inputs(), profile=profile)
    other = compile_function(parse(CONSECUTIVE_FLAT))
    with pytest.raises(ValueError, match="use a new Profile"):
        other.run(inputs(), profile=profile)


def test_profile_and_listener_together(plugin: Any) -> None:
    program = compile_function(parse(CONSECUTIVE))
    seen: list[tuple[str, int]] = []

    def listener(step: Step, results: tuple[Any, ...]) -> None:
        seen.append((step.kind, len(results)))

    profile = Profile()
    outputs = program.run(inputs(), listener=listener, profile=profile)
    assert seen == [("dispatch", 1), ("dispatch", 1), ("transfer", 1)]
    assert profile.runs == 1
    np.testing.assert_array_equal(outputs["y"], program.run(inputs())["y"])


# ---- Failures -----------------------------------------------------------------


class _Runtime(TargetRuntime):
    def __init__(self, fail_load: bool = False, result: Any = None) -> None:
        self.fail_load = fail_load
        self.result = result

    def load(self, executable: Operation) -> LoadedExecutable:
        if self.fail_load:
            raise RuntimeError("out of device memory")
        return _Loaded(self.result)


class _Loaded(LoadedExecutable):
    def __init__(self, result: Any) -> None:
        self.result = result

    def execute(self, entry: str, args: Sequence[Any]) -> Sequence[Any]:
        if self.result is None:
            raise RuntimeError("device lost")
        return self.result


class _Fake(Target):
    """Stands in for `testplugin` with a scripted behaviour."""

    name = "testplugin"

    def __init__(self, *, up: bool = True, fail_load: bool = False, result: Any = None) -> None:
        self.up = up
        self.fail_load = fail_load
        self.result = result

    def available(self) -> Availability:
        return Availability(self.up, "" if self.up else "no device found")

    def supports(self, op: Operation) -> Support:
        return Support.yes()

    def runtime(self) -> TargetRuntime:
        return _Runtime(self.fail_load, self.result)


ONE_DISPATCH = (
    CONV
    + f"""\
func.func @main(%x: {T_X}, %w: {T_W}) -> {T_A} {{
  %a = delegate.dispatch @main_testplugin_0::@entry(%x, %w) : ({T_X}, {T_W}) -> {T_A}
  func.return %a : {T_A}
}}
"""
)


def test_an_unavailable_target_is_a_compile_error() -> None:
    with pytest.raises(
        CompileError, match=r"^d\.mlir:8:3: target 'testplugin' is not available: no device found$"
    ):
        compile_function(parse(ONE_DISPATCH), targets=[_Fake(up=False)])


def test_a_failing_load_is_a_compile_error_at_the_executable() -> None:
    with pytest.raises(CompileError) as info:
        compile_function(parse(ONE_DISPATCH), targets=[_Fake(fail_load=True)])
    assert str(info.value) == (
        "d.mlir:1:1: target 'testplugin' cannot load @main_testplugin_0: "
        "RuntimeError: out of device memory"
    )


def test_a_failing_execute_is_an_execution_error_at_the_dispatch() -> None:
    program = compile_function(parse(ONE_DISPATCH), targets=[_Fake()])
    with pytest.raises(ExecutionError) as info:
        program.run_positional(positional())
    assert str(info.value) == (
        "d.mlir:8:3: dispatch @main_testplugin_0::@entry on target 'testplugin' failed: "
        "RuntimeError: device lost"
    )


def test_a_wrong_result_count_is_reported() -> None:
    program = compile_function(parse(ONE_DISPATCH), targets=[_Fake(result=[])])
    with pytest.raises(ExecutionError, match="its runtime returned a wrong number of values"):
        program.run_positional(positional())


def test_check_locates_bad_dispatch_results() -> None:
    wrong = [np.zeros((1, 3, 4, 4), np.float64)]
    program = compile_function(parse(ONE_DISPATCH), targets=[_Fake(result=wrong)], check=True)
    with pytest.raises(ExecutionError, match="result #0 has dtype float64, expected float32"):
        program.run_positional(positional())


def test_check_accepts_device_values(plugin: Any) -> None:
    program = compile_function(parse(SHARED), check=True)
    assert_all_equal(
        program.run_positional(positional()), reference_outputs(SHARED_FLAT, positional())
    )


def test_a_quantized_op_lower_quantized_cannot_express_fails_at_load() -> None:
    text = """\
!q16 = !quant.uniform<i16:f32, 0.5:0>
delegate.executable private @main_reference_0 target("reference") {
  func.func @entry(%x: tensor<4x!q16>) -> tensor<4x!q16> {
    %s = nn.add %x, %x : tensor<4x!q16>, tensor<4x!q16> -> tensor<4x!q16>
    func.return %s : tensor<4x!q16>
  }
}
func.func @main(%x: tensor<4x!q16>) -> tensor<4x!q16> {
  %y = delegate.dispatch @main_reference_0::@entry(%x) : (tensor<4x!q16>) -> tensor<4x!q16>
  func.return %y : tensor<4x!q16>
}
"""
    with pytest.raises(CompileError) as info:
        compile_function(parse(text, "q.mlir"))
    assert str(info.value) == (
        "q.mlir:4:5: lower-quantized: only 8-bit quantized tensors are supported, got i16 storage"
    )


def test_a_region_must_be_outlined_first() -> None:
    text = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = delegate.region "testplugin" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %r = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
    delegate.yield %r : tensor<4xf32>
  }
  func.return %y : tensor<4xf32>
}
"""
    with pytest.raises(CompileError, match="run outline-delegates first"):
        compile_function(parse(text))


def test_a_program_is_a_program() -> None:
    assert isinstance(compile_function(parse(CONSECUTIVE_FLAT)), Program)
