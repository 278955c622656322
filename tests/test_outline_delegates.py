"""Tests of `outline-delegates`: structure, symbols, determinism, and numerics on real models.

The real-model tests partition by hand (contiguous runs of ops of `@main`, so every cluster
is acyclic; constants stay outside and are captured) and run the outlined module with a
test-local step factory that executes a dispatch by compiling its entry function on the
reference kernels: outlining must not change a single bit of any output. They depend on
no partitioner and no target runtime.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import ConstantLike, SymbolTable

import irc
from irc.context import get_all_passes, make_context
from irc.diagnostics import verify_module
from irc.dialects import delegate
from irc.passes.outline_delegates import OutlineDelegatesPass, outline_delegates
from irc.pipelines import prepare_for_reference
from irc.printing import print_ir
from irc.runtime import compile_function, step_for_op

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
MANIFEST = MODELS / "manifest.json"

TWO_FUNCTIONS = """\
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {irc.input_names = ["x", "y"], irc.output_names = ["a", "b"]} {
  %w = nn.constant dense<[1.0, -2.0, 3.0, -4.0]> : tensor<4xf32>
  %r = delegate.region "opencl" (%p = %x : tensor<4xf32>, %q = %w : tensor<4xf32>)
      -> (tensor<4xf32>) {
    %s = nn.mul %p, %q : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  %t = nn.add %r, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %u:2 = delegate.region "cpu" (%p = %t : tensor<4xf32>, %q = %y : tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>) {
    %s = nn.sub %p, %q : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %e = nn.relu %s : tensor<4xf32> -> tensor<4xf32>
    delegate.yield %e, %s : tensor<4xf32>, tensor<4xf32>
  }
  %v = delegate.region "opencl" (%p = %u#0 : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = nn.neg %p : tensor<4xf32> -> tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  func.return %v, %u#1 : tensor<4xf32>, tensor<4xf32>
}
func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = delegate.region "opencl" () -> (tensor<4xf32>) {
    %c = nn.constant dense<2.0> : tensor<4xf32>
    delegate.yield %c : tensor<4xf32>
  }
  %s = nn.add %x, %r : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
"""


# ---- Test-local execution of dispatches ---------------------------------------------------------


def dispatch_factory(module: ModuleOp) -> Callable[[Operation], Callable[..., tuple[Any, ...]]]:
    """A step factory running each dispatch's entry function on the reference kernels."""

    def factory(op: Operation) -> Callable[..., tuple[Any, ...]]:
        if not isinstance(op, delegate.DispatchOp):
            return step_for_op(op)
        entry = SymbolTable.lookup_symbol(module, op.callee)
        assert isinstance(entry, FuncOp)
        program = compile_function(entry, step_factory=factory)
        names = program.input_names

        def run(*args: Any) -> tuple[Any, ...]:
            return tuple(program.run(dict(zip(names, args, strict=True))).values())

        return run

    return factory


def run_outlined(module: ModuleOp, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return compile_function(module, step_factory=dispatch_factory(module)).run(inputs)


# ---- Test-local partitioning -------------------------------------------------------------------


def _is_constant(op: Operation) -> bool:
    return not op.operands and op.has_trait(ConstantLike)


def wrap_in_region(ops: Sequence[Operation], target: str) -> delegate.RegionOp:
    """Wrap a contiguous run of ops of one block in a `delegate.region`, in place."""
    inside = set(ops)
    captures: list[SSAValue] = []
    for op in ops:
        for operand in op.operands:
            if operand.owner not in inside and operand not in captures:
                captures.append(operand)
    results = [
        r for op in ops for r in op.results if any(u.operation not in inside for u in r.uses)
    ]
    block = Block(arg_types=[c.type for c in captures])
    region_op = delegate.RegionOp(target, captures, [r.type for r in results], Region(block))
    Rewriter.insert_op(region_op, InsertPoint.before(ops[0]))
    for result, new in zip(results, region_op.outputs, strict=True):
        result.replace_uses_with_if(new, lambda use: use.operation not in inside)
    for op in ops:
        op.detach()
        block.add_op(op)
    for capture, arg in zip(captures, block.args, strict=True):
        capture.replace_uses_with_if(arg, lambda use: use.operation in inside)
    block.add_op(delegate.YieldOp(*results))
    return region_op


def partition_in_runs(module: ModuleOp, size: int, targets: Sequence[str]) -> int:
    """Cut the non-constant ops of each function into runs of `size`, alternating targets."""
    count = 0
    for func in [op for op in module.body.block.ops if isinstance(op, FuncOp)]:
        ops = [op for op in func.body.block.ops if not _is_constant(op)][:-1]  # not the return
        for start in range(0, len(ops), size):
            wrap_in_region(ops[start : start + size], targets[count % len(targets)])
            count += 1
    verify_module(module)
    return count


# ---- Structure and symbols ---------------------------------------------------------------------


def outlined(text: str) -> ModuleOp:
    module = irc.parse_module(text)
    OutlineDelegatesPass().apply(make_context(), module)
    verify_module(module)
    return module


def test_registered_under_its_name() -> None:
    assert get_all_passes()["outline-delegates"]() is OutlineDelegatesPass


def test_symbols_order_and_visibility() -> None:
    module = outlined(TWO_FUNCTIONS)
    top = list(module.body.block.ops)
    names = [
        (type(op).__name__, op.sym_name.data)  # type: ignore[attr-defined]
        for op in top
    ]
    assert names == [
        ("ExecutableOp", "main_opencl_0"),
        ("ExecutableOp", "main_cpu_0"),
        ("ExecutableOp", "main_opencl_1"),
        ("FuncOp", "main"),
        ("ExecutableOp", "other_opencl_0"),
        ("FuncOp", "other"),
    ]
    for op in top:
        if isinstance(op, delegate.ExecutableOp):
            assert op.sym_visibility == StringAttr("private")
            assert op.target.data == op.sym_name.data.split("_")[1]
            (entry,) = op.body.block.ops
            assert isinstance(entry, FuncOp)
            assert entry.sym_name.data == "entry"
            assert entry.sym_visibility is None  # public: @exe::@entry must resolve
            assert isinstance(entry.body.block.last_op, ReturnOp)
    assert not any(isinstance(op, delegate.RegionOp) for op in module.walk())


def test_dispatch_operands_and_types() -> None:
    module = outlined(TWO_FUNCTIONS)
    main = SymbolTable.lookup_symbol(module, "main")
    assert isinstance(main, FuncOp)
    dispatches = [op for op in main.body.block.ops if isinstance(op, delegate.DispatchOp)]
    assert [d.callee for d in dispatches] == [
        SymbolRefAttr("main_opencl_0", ["entry"]),
        SymbolRefAttr("main_cpu_0", ["entry"]),
        SymbolRefAttr("main_opencl_1", ["entry"]),
    ]
    x, y = main.body.block.args
    # The constant capture became a weight of the executable: only %x is passed.
    assert list(dispatches[0].args) == [x]
    assert list(dispatches[1].args)[1] is y
    assert len(dispatches[1].outputs) == 2
    for dispatch in dispatches:
        entry = SymbolTable.lookup_symbol(module, dispatch.callee)
        assert isinstance(entry, FuncOp)
        assert list(entry.function_type.inputs) == [a.type for a in dispatch.args]
        assert list(entry.function_type.outputs) == [r.type for r in dispatch.outputs]
    # %w is still used by the host nn.add: the host keeps it, the executable has a copy.
    host_constants = [op for op in main.body.block.ops if _is_constant(op)]
    assert len(host_constants) == 1
    exe = SymbolTable.lookup_symbol(module, "main_opencl_0")
    assert isinstance(exe, delegate.ExecutableOp)
    assert sum(_is_constant(op) for op in exe.walk()) == 1


def test_constant_used_only_by_a_region_moves() -> None:
    module = outlined(
        """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = nn.constant dense<3.0> : tensor<4xf32>
  %r = delegate.region "cpu" (%p = %x : tensor<4xf32>, %q = %w : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = nn.mul %p, %q : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
"""
    )
    main = SymbolTable.lookup_symbol(module, "main")
    assert isinstance(main, FuncOp)
    assert [op.name for op in main.body.block.ops] == ["delegate.dispatch", "func.return"]


def test_outlining_is_deterministic() -> None:
    texts = {print_ir(outlined(TWO_FUNCTIONS)) for _ in range(3)}
    assert len(texts) == 1


def test_outlined_module_round_trips() -> None:
    text = print_ir(outlined(TWO_FUNCTIONS))
    assert print_ir(irc.parse_module(text)) == text


def test_outlined_module_computes_the_same() -> None:
    module = outlined(TWO_FUNCTIONS)
    x = np.array([1.0, 2.0, -3.0, 4.0], np.float32)
    y = np.array([0.5, -1.0, 2.0, 8.0], np.float32)
    got = run_outlined(module, {"x": x, "y": y})
    w = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    t = x * w + w
    s = t - y
    np.testing.assert_array_equal(got["a"], -np.maximum(s, 0))
    np.testing.assert_array_equal(got["b"], s)


def test_hand_partitioned_module_outlines_and_runs() -> None:
    module = irc.parse_module(
        """\
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %c = nn.constant dense<[1.0, -2.0, 3.0]> : tensor<3xf32>
  %a = nn.add %x, %c : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %b = nn.relu %a : tensor<2x3xf32> -> tensor<2x3xf32>
  %d = nn.mul %b, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %e = nn.tanh %d : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %e, %a : tensor<2x3xf32>, tensor<2x3xf32>
}
"""
    )
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    want = compile_function(module).run({"arg0": x})
    assert partition_in_runs(module, 2, ["opencl", "cpu"]) == 2
    outline_delegates(module)
    verify_module(module)
    got = run_outlined(module, {"arg0": x})
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)


# ---- Real models -------------------------------------------------------------------------------


def _entries() -> list[dict]:
    if not MANIFEST.is_file():
        return []
    return json.loads(MANIFEST.read_text())["models"]


ENTRIES = _entries()


def model_inputs(entry: dict) -> dict[str, np.ndarray]:
    samples = entry.get("golden", {}).get("samples") or []
    if samples:
        with np.load(MODELS / samples[0]["inputs"]) as data:
            return {k: data[k] for k in data.files}
    rng = np.random.default_rng(0)
    return {i["name"]: rng.standard_normal(i["shape"]).astype(np.float32) for i in entry["inputs"]}


@pytest.mark.skipif(not ENTRIES, reason="../shared/models is not available")
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_outlining_real_models_changes_no_output(entry: dict) -> None:
    inputs = model_inputs(entry)
    shapes = {name: tuple(array.shape) for name, array in inputs.items()}
    module = irc.import_model(MODELS / entry["file"], input_shapes=shapes)
    prepare_for_reference(module)
    want = compile_function(module).run(inputs)

    regions = partition_in_runs(module, 5, ["npu", "gpu"])
    dispatches = outline_delegates(module)
    verify_module(module)
    assert len(dispatches) == regions
    main = SymbolTable.lookup_symbol(module, "main")
    assert isinstance(main, FuncOp)
    # Every weight moved into the executables: the host keeps no constants of its own.
    assert not [op for op in main.body.block.ops if _is_constant(op)]
    got = run_outlined(module, inputs)
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert got[name].dtype == value.dtype
        np.testing.assert_array_equal(got[name], value, err_msg=name)
