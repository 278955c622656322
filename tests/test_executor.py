"""Tests of the executor (irc.runtime), the reference preset (irc.pipelines) and irc.run."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region

import irc
from irc.context import get_all_passes
from irc.dialects import nn
from irc.pipelines import prepare_for_reference, reference_passes
from irc.runtime import (
    CompileError,
    ExecutionError,
    InputError,
    Program,
    Step,
    compile_function,
    step_for_op,
)

# ---- Test IR ------------------------------------------------------------------

NAMED = """\
func.func @main(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
    attributes {irc.input_names = ["x", "bias"], irc.output_names = ["sum", "act"]} {
  %c = nn.constant dense<[1.0, -2.0, 3.0]> : tensor<3xf32>
  %s = nn.add %x, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %t = nn.mul %s, %c : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %r = nn.relu %t : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %s, %r : tensor<2x3xf32>, tensor<2x3xf32>
}
"""

DYNAMIC = """\
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = nn.relu %x : tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %r : tensor<?x4xf32>
}
"""

SPLIT = """\
func.func @main(%x: tensor<1x8xf32>) -> (tensor<1x2xf32>, tensor<1x6xf32>, tensor<1x6xf32>) {
  %a, %b = nn.split %x axis = 1 sizes = [2, 6] : tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x6xf32>
  %n = nn.neg %b : tensor<1x6xf32> -> tensor<1x6xf32>
  func.return %a, %b, %n : tensor<1x2xf32>, tensor<1x6xf32>, tensor<1x6xf32>
}
"""

CONSTANT_OUTPUT = """\
func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %c = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = nn.add %x, %c : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %c, %s : tensor<3xf32>, tensor<3xf32>
}
"""

QUANTIZED = """\
!q = !quant.uniform<i8:f32, 0.5:-3>
func.func @main(%x: tensor<4x!q>) -> tensor<4x!q> {
  %s = nn.add %x, %x : tensor<4x!q>, tensor<4x!q> -> tensor<4x!q>
  func.return %s : tensor<4x!q>
}
"""


def parse(text: str, filename: str = "test.mlir") -> ModuleOp:
    return irc.parse_module(text, filename=filename)


def add_chain(length: int, size: int = 4) -> ModuleOp:
    """main(x, y) = x + y + y + ... (`length` nn.add ops), built with the Python builders."""
    t = TensorType(f32, [size])
    block = Block(arg_types=[t, t])
    x, y = block.args
    ops: list[Operation] = []
    value = x
    for _ in range(length):
        op = nn.AddOp.make(value, y)
        ops.append(op)
        value = op.output
    block.add_ops([*ops, ReturnOp(value)])
    return ModuleOp([FuncOp("main", ([t, t], [t]), Region(block))])


def named_inputs() -> dict[str, np.ndarray]:
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    return {"x": x, "bias": np.array([0.5, 0.25, -1.0], np.float32)}


def named_expected(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    s = inputs["x"] + inputs["bias"]
    return {"sum": s, "act": np.maximum(s * np.array([1, -2, 3], np.float32), 0)}


def counting_factory(counts: dict[str, int]):
    """A step factory that counts how often each op's callable is called."""

    def factory(op: Operation):
        fn = step_for_op(op)

        def counted(*args: Any) -> tuple[Any, ...]:
            counts[op.name] = counts.get(op.name, 0) + 1
            return fn(*args)

        return counted

    return factory


@pytest.fixture(scope="module", autouse=True)
def _kernels_registered() -> None:
    from irc.targets.reference import registered_ops

    needed = {nn.AddOp, nn.MulOp, nn.ReluOp, nn.ConstantOp, nn.SplitOp, nn.NegOp}
    assert needed <= registered_ops(), "reference kernels of the nn ops used here are missing"


# ---- Running ------------------------------------------------------------------


def test_run_names_from_function_attributes() -> None:
    program = compile_function(parse(NAMED))
    assert program.input_names == ("x", "bias")
    assert program.output_names == ("sum", "act")
    inputs = named_inputs()
    outputs = program.run(inputs)
    assert list(outputs) == ["sum", "act"]
    for name, expected in named_expected(inputs).items():
        assert outputs[name].dtype == np.float32
        np.testing.assert_array_equal(outputs[name], expected)


def test_default_names_are_arg_and_result_indices() -> None:
    program = compile_function(parse(SPLIT))
    assert program.input_names == ("arg0",)
    assert program.output_names == ("result0", "result1", "result2")


def test_multi_result_op_and_multiple_outputs() -> None:
    program = compile_function(parse(SPLIT))
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    outputs = program.run({"arg0": x})
    np.testing.assert_array_equal(outputs["result0"], x[:, :2])
    np.testing.assert_array_equal(outputs["result1"], x[:, 2:])
    np.testing.assert_array_equal(outputs["result2"], -x[:, 2:])
    (split,) = [s for s in program.steps if s.op.name == "nn.split"]
    assert len(split.outputs) == 2


def test_entry_selects_the_function() -> None:
    text = NAMED + DYNAMIC.replace("@main", "@other")
    program = compile_function(parse(text), "other")
    assert program.entry == "other"
    x = np.array([[-1, 2, -3, 4]], np.float32)
    np.testing.assert_array_equal(program.run({"arg0": x})["result0"], np.maximum(x, 0))


def test_dynamic_dimensions_match_any_size() -> None:
    program = compile_function(parse(DYNAMIC))
    for rows in (1, 5):
        x = np.full((rows, 4), -1.0, np.float32)
        assert program.run({"arg0": x})["result0"].shape == (rows, 4)


def test_compile_does_not_modify_the_module() -> None:
    module = parse(NAMED)
    before = str(module)
    compile_function(module).run(named_inputs())
    assert str(module) == before


def test_a_func_op_can_be_compiled_directly() -> None:
    module = parse(DYNAMIC)
    func = module.body.block.first_op
    assert isinstance(func, FuncOp)
    assert compile_function(func).entry == "main"


def test_format_schedule() -> None:
    text = compile_function(parse(NAMED)).format_schedule()
    assert text.splitlines() == [
        "inputs: %0 x, %1 bias",
        "constants: %2",
        "%3 = nn.add(%0, %1)  free %0, %1",
        "%4 = nn.mul(%3, %2)",
        "%5 = nn.relu(%4)  free %4",
        "outputs: %3 sum, %5 act",
    ]


# ---- Input checks -------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d | {"y": d["x"]},
            "unknown input 'y' for @main (expected inputs: 'x', 'bias')",
        ),
        (
            lambda d: {"x": d["x"]},
            "missing input 'bias' for @main (expected inputs: 'x', 'bias')",
        ),
        (
            lambda d: {"z": d["x"]},
            "unknown input 'z'; missing inputs 'x', 'bias' for @main",
        ),
        (
            lambda d: d | {"x": d["x"].astype(np.float64)},
            "input 'x' of @main: expected dtype float32, got float64",
        ),
        (
            lambda d: d | {"bias": d["bias"].astype(np.int32)},
            "input 'bias' of @main: expected dtype float32, got int32",
        ),
        (
            lambda d: d | {"x": d["x"].reshape(6)},
            "input 'x' of @main: expected shape (2, 3), got (6,)",
        ),
        (
            lambda d: d | {"bias": np.zeros(4, np.float32)},
            "input 'bias' of @main: expected shape (3,), got (4,)",
        ),
        (
            lambda d: d | {"bias": [1.0, 2.0, 3.0]},
            "input 'bias' of @main: expected a numpy array, got list",
        ),
    ],
)
def test_input_errors(change, message: str) -> None:
    program = compile_function(parse(NAMED))
    with pytest.raises(InputError) as info:
        program.run(change(named_inputs()))
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_input_error_for_dynamic_rank() -> None:
    program = compile_function(parse(DYNAMIC))
    with pytest.raises(InputError, match=r"expected shape \(\?, 4\), got \(2, 3\)"):
        program.run({"arg0": np.zeros((2, 3), np.float32)})
    with pytest.raises(InputError, match=r"expected shape \(\?, 4\), got \(4,\)"):
        program.run({"arg0": np.zeros(4, np.float32)})


def test_inputs_must_be_a_mapping() -> None:
    program = compile_function(parse(DYNAMIC))
    with pytest.raises(InputError, match="must be a mapping from input name to array, got list"):
        program.run([np.zeros((1, 4), np.float32)])  # type: ignore[arg-type]


# ---- Compile errors -----------------------------------------------------------


def test_op_without_kernel_is_reported_at_its_location() -> None:
    text = """\
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""
    with pytest.raises(CompileError) as info:
        compile_function(parse(text, "calls.mlir"))
    assert str(info.value) == "calls.mlir:5:3: reference: no kernel for 'func.call'"
    assert info.value.op is not None
    assert info.value.op.name == "func.call"
    assert info.value.diagnostic.format() == (
        "calls.mlir:5:3: error: reference: no kernel for 'func.call'"
    )


def test_quantized_arithmetic_needs_lower_quantized() -> None:
    with pytest.raises(CompileError, match=r"q\.mlir:3:3: .*quantized 'nn\.add'.*lower-quantized"):
        compile_function(parse(QUANTIZED, "q.mlir"))


def test_dispatch_to_an_unknown_target() -> None:
    """Dispatches run on their target's runtime (tests/test_dispatch.py); an unknown
    target is a compile error at the dispatch that names the known targets."""
    text = """\
delegate.executable private @main_nosuch_0 target("nosuch") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = delegate.dispatch @main_nosuch_0::@entry(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""
    with pytest.raises(CompileError) as info:
        compile_function(parse(text, "d.mlir"))
    assert str(info.value).startswith("d.mlir:7:3: unknown target 'nosuch' (known targets: ")
    assert "reference" in str(info.value)


def test_region_is_not_supported_yet() -> None:
    text = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %r = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
    delegate.yield %r : tensor<4xf32>
  }
  func.return %y : tensor<4xf32>
}
"""
    with pytest.raises(CompileError, match=r"r\.mlir:2:3: 'delegate\.region' is not supported"):
        compile_function(parse(text, "r.mlir"))


def test_unknown_entry() -> None:
    with pytest.raises(CompileError, match=r"no function @nope in the module \(functions: @main\)"):
        compile_function(parse(NAMED), "nope")


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ('irc.input_names = ["x"]', "irc.input_names has 1 names for 2 values"),
        ('irc.input_names = ["x", "x"]', "irc.input_names names 'x' more than once"),
        ("irc.output_names = [1, 2]", "irc.output_names must be an array of strings"),
    ],
)
def test_bad_name_attributes(attrs: str, message: str) -> None:
    text = f"""\
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    attributes {{{attrs}}} {{
  func.return %a, %b : tensor<2xf32>, tensor<2xf32>
}}
"""
    with pytest.raises(CompileError, match=f"names.mlir:1:1: {message}"):
        compile_function(parse(text, "names.mlir"))


def test_kernel_factory_failure_is_a_compile_error() -> None:
    def factory(op: Operation):
        if op.name == "nn.relu":
            raise ValueError("unsupported flavour")
        return step_for_op(op)

    with pytest.raises(CompileError, match=r":6:3: cannot prepare 'nn.relu': ValueError"):
        compile_function(parse(NAMED), step_factory=factory)


# ---- Schedule: liveness and constants -----------------------------------------


def test_chain_frees_each_intermediate_after_its_last_use() -> None:
    program = compile_function(add_chain(5))
    outputs = {spec.slot for spec in program.outputs}
    # %0 = x, %1 = y (used by every step), %2.. results.
    assert [step.frees for step in program.steps] == [(0,), (2,), (3,), (4,), (1, 5)]
    assert outputs == {6}
    assert all(outputs.isdisjoint(step.frees) for step in program.steps)


def test_dead_results_are_freed_at_once() -> None:
    text = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %unused = nn.neg %x : tensor<4xf32> -> tensor<4xf32>
  %r = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"""
    program = compile_function(parse(text))
    neg, relu = program.steps
    assert neg.frees == neg.outputs
    assert relu.frees == (0,)


def test_outputs_and_constants_are_never_freed() -> None:
    program = compile_function(parse(NAMED))
    pinned = {spec.slot for spec in program.outputs} | set(program.constants)
    for step in program.steps:
        assert pinned.isdisjoint(step.frees)


def test_intermediates_are_released_during_the_run() -> None:
    """Right after step k, the result of step k-1 (its last use was step k) is gone."""
    program = compile_function(add_chain(6))
    refs: list[weakref.ref[np.ndarray]] = []
    alive_at_step: list[list[bool]] = []

    def listener(step: Step, results: tuple[Any, ...]) -> None:
        refs.append(weakref.ref(results[0]))
        alive_at_step.append([ref() is not None for ref in refs])

    gc.disable()  # refcounting alone must release them
    try:
        x, y = np.ones(4, np.float32), np.full(4, 2, np.float32)
        out = program.run({"arg0": x, "arg1": y}, listener=listener)["result0"]
        for k, alive in enumerate(alive_at_step):
            assert alive == [i == k for i in range(k + 1)], k
        assert [ref() is not None for ref in refs] == [False] * 5 + [True]
        assert refs[-1]() is out
    finally:
        gc.enable()
    np.testing.assert_array_equal(out, x + 6 * y)


def test_constants_are_evaluated_once_at_compile_time() -> None:
    counts: dict[str, int] = {}
    program = compile_function(parse(NAMED), step_factory=counting_factory(counts))
    assert counts == {"nn.constant": 1}
    assert len(program.constants) == 1
    assert all(step.op.name != "nn.constant" for step in program.steps)
    (constant,) = program.constants.values()
    assert not constant.flags.writeable
    for _ in range(3):
        program.run(named_inputs())
    assert counts == {"nn.constant": 1, "nn.add": 3, "nn.mul": 3, "nn.relu": 3}


def test_constant_outputs_are_returned_as_writable_copies() -> None:
    program = compile_function(parse(CONSTANT_OUTPUT))
    x = np.zeros(3, np.float32)
    first = program.run({"arg0": x})
    assert first["result0"].flags.writeable
    first["result0"][:] = 100
    second = program.run({"arg0": x})
    np.testing.assert_array_equal(second["result0"], [1, 2, 3])
    np.testing.assert_array_equal(second["result1"], [1, 2, 3])


# ---- Runtime errors and checks ------------------------------------------------


def test_kernel_failure_is_located_at_its_op() -> None:
    def factory(op: Operation):
        if op.name != "nn.mul":
            return step_for_op(op)

        def broken(*args: Any) -> tuple[Any, ...]:
            raise FloatingPointError("overflow")

        return broken

    program = compile_function(parse(NAMED, "k.mlir"), step_factory=factory)
    with pytest.raises(ExecutionError) as info:
        program.run(named_inputs())
    assert str(info.value) == "k.mlir:5:3: 'nn.mul' failed: FloatingPointError: overflow"
    assert isinstance(info.value.__cause__, FloatingPointError)


@pytest.mark.parametrize("values", [(), (1, 2)])
def test_wrong_number_of_kernel_results(values: tuple[int, ...]) -> None:
    def factory(op: Operation):
        if op.name == "nn.relu":
            return lambda x: tuple(np.asarray(v, np.float32) for v in values)
        return step_for_op(op)

    program = compile_function(parse(NAMED), step_factory=factory)
    with pytest.raises(ExecutionError, match=r"'nn\.relu' failed: its kernel returned a wrong"):
        program.run(named_inputs())


def test_check_catches_kernels_that_break_the_contract() -> None:
    def factory(op: Operation):
        if op.name == "nn.relu":
            return lambda x: (np.maximum(x, 0).astype(np.float64),)
        return step_for_op(op)

    unchecked = compile_function(parse(NAMED), step_factory=factory)
    assert unchecked.run(named_inputs())["act"].dtype == np.float64
    checked = compile_function(parse(NAMED), step_factory=factory, check=True)
    with pytest.raises(ExecutionError, match="result #0 has dtype float64, expected float32"):
        checked.run(named_inputs())


def test_check_accepts_the_reference_kernels() -> None:
    program = compile_function(parse(SPLIT), check=True)
    program.run({"arg0": np.zeros((1, 8), np.float32)})


# ---- Threads and overhead -----------------------------------------------------


def test_one_program_serves_two_threads() -> None:
    program = compile_function(add_chain(50))
    y = np.full(4, 0.5, np.float32)
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def worker(offset: float) -> None:
        try:
            barrier.wait()
            for i in range(200):
                x = np.full(4, offset + i, np.float32)
                out = program.run({"arg0": x, "arg1": y})["result0"]
                np.testing.assert_array_equal(out, x + 25)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(o,)) for o in (0.0, 1000.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_per_op_overhead_of_a_1000_op_chain() -> None:
    program = compile_function(add_chain(1000))
    x, y = np.zeros(4, np.float32), np.ones(4, np.float32)
    out = program.run({"arg0": x, "arg1": y})["result0"]
    np.testing.assert_array_equal(out, np.full(4, 1000, np.float32))

    def best_of(fn, repeat: int = 5) -> float:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    def raw_numpy() -> None:
        v = x
        for _ in range(1000):
            v = np.add(v, y)

    run = best_of(lambda: program.run({"arg0": x, "arg1": y}))
    raw = best_of(raw_numpy)
    trivial = Program(
        program.entry,
        program.inputs,
        program.outputs,
        [step._replace(fn=lambda a, b: (a,)) for step in program.steps],
        program.constants,
        program.num_slots,
    )
    loop = best_of(lambda: trivial.run({"arg0": x, "arg1": y}))
    print(
        f"\n1000 x nn.add on 4 elements: {run * 1e3:.2f} us/op in the executor "
        f"(schedule loop alone {loop * 1e3:.2f} us/op, raw np.add {raw * 1e3:.2f} us/op)"
    )


# ---- Pipelines and the public API ---------------------------------------------


def test_reference_passes_for_float_modules_are_empty() -> None:
    assert reference_passes(parse(NAMED)) == []
    module = parse(NAMED)
    before = str(module)
    assert prepare_for_reference(module) is module
    assert str(module) == before


def test_reference_passes_for_quantized_modules() -> None:
    names = [p.name for p in reference_passes(parse(QUANTIZED))]
    expected = ["lower-quantized"] if "lower-quantized" in get_all_passes() else []
    assert names == expected


def test_irc_run_on_a_module_does_not_modify_it() -> None:
    module = parse(NAMED)
    before = str(module)
    inputs = named_inputs()
    outputs = irc.run(module, inputs)
    for name, expected in named_expected(inputs).items():
        np.testing.assert_array_equal(outputs[name], expected)
    assert str(module) == before


@pytest.mark.parametrize("as_path", [str, Path])
def test_irc_run_on_a_path(tmp_path: Path, as_path) -> None:
    path = tmp_path / "model.mlir"
    path.write_text(NAMED)
    inputs = named_inputs()
    outputs = irc.run(as_path(path), inputs, entry="main", check=True)
    for name, expected in named_expected(inputs).items():
        np.testing.assert_array_equal(outputs[name], expected)


def test_irc_run_locates_errors_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "calls.mlir"
    path.write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = func.call @main(%x) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  func.return %y : tensor<4xf32>\n"
        "}\n"
    )
    with pytest.raises(CompileError, match=r"calls.mlir:2:3: reference: no kernel for 'func.call'"):
        irc.run(path, {"arg0": np.zeros(4, np.float32)})


def test_irc_run_rejects_text() -> None:
    with pytest.raises(TypeError, match="expected a ModuleOp or a path, got bytes"):
        irc.run(NAMED.encode(), {})  # type: ignore[arg-type]


def test_parse_module_from_text_and_path(tmp_path: Path) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(DYNAMIC)
    from_path = irc.parse_module(path)
    from_text = irc.parse_module(DYNAMIC)
    assert str(from_path) == str(from_text)
    assert str(irc.read_module(str(path))) == str(from_text)
    relu = from_path.body.block.first_op.body.block.first_op  # type: ignore[union-attr]
    assert str(relu.location).startswith(f'loc("{path}":2:')


def test_parse_module_verifies() -> None:
    from irc.diagnostics import IrcDiagnosticError

    bad = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n}\n"
    with pytest.raises(IrcDiagnosticError):
        irc.parse_module(bad)


def test_public_api_exports() -> None:
    assert irc.compile_function is compile_function
    assert irc.InputError is InputError
    assert irc.Program is Program
    assert {"run", "parse_module", "read_module", "InputError"} <= set(dir(irc))
    with pytest.raises(AttributeError):
        _ = irc.no_such_name  # type: ignore[attr-defined]


def test_import_irc_is_cheap() -> None:
    code = (
        "import irc, sys; print(sorted({'numpy', 'xdsl'} & {m.split('.')[0] for m in sys.modules}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_irc_run_lowers_quantized_modules_first() -> None:
    assert "lower-quantized" in get_all_passes()
    x = np.array([-3, -1, 1, 60], np.int8)  # real values (x + 3) * 0.5
    out = irc.run(parse(QUANTIZED), {"arg0": x})["result0"]
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, np.clip(2 * (x.astype(np.int32) + 3) - 3, -128, 127))
