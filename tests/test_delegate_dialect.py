"""Tests of the delegate dialect built from Python: region, yield, executable and dispatch."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from io import StringIO

import pytest
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    f16,
    f32,
    i8,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from irc.context import make_context
from irc.dialects.delegate import DispatchOp, ExecutableOp, RegionOp, YieldOp
from irc.dialects.quant import UniformQuantizedType

T4 = TensorType(f32, [4])
T4_I8 = TensorType(i8, [4])
T4_Q = TensorType(UniformQuantizedType.per_tensor(i8, f32, 0.5, -3), [4])


@pytest.fixture
def ctx() -> Context:
    return make_context()


def raises_verify(message: str) -> AbstractContextManager[pytest.ExceptionInfo[VerifyException]]:
    """Expect a VerifyException whose text contains `message` verbatim."""
    return pytest.raises(VerifyException, match=re.escape(message))


def generic_text(op: Operation) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(op)
    return stream.getvalue()


def assert_round_trips(ctx: Context, module: ModuleOp) -> ModuleOp:
    """The custom and the generic form both re-parse to the same IR; returns the re-parse."""
    module.verify()
    text = str(module)
    reparsed = Parser(ctx, text).parse_module()
    reparsed.verify()
    assert str(reparsed) == text
    assert reparsed.is_structurally_equivalent(module)
    from_generic = Parser(ctx, generic_text(module)).parse_module()
    from_generic.verify()
    assert str(from_generic) == text
    return reparsed


def function(
    name: str,
    arg_types: list[Attribute],
    build: Callable[[Block], list[Operation]],
    result_types: list[Attribute] | None = None,
) -> FuncOp:
    """A func.func whose body `build(block)` fills; it returns the last op's results."""
    block = Block(arg_types=arg_types)
    ops = build(block)
    block.add_ops(ops)
    returned = list(ops[-1].results) if ops else []
    block.add_op(ReturnOp(*returned))
    types = [v.type for v in returned] if result_types is None else result_types
    return FuncOp(name, (arg_types, types), Region(block))


def region_op(
    target: str,
    captures: list[SSAValue],
    body_ops: Callable[[Block], list[Operation]],
    result_types: list[Attribute],
) -> RegionOp:
    """A delegate.region whose body block has one argument per capture."""
    block = Block(arg_types=[c.type for c in captures])
    block.add_ops(body_ops(block))
    return RegionOp(target, captures, result_types, Region(block))


def entry(name: str, arg_types: list[Attribute], result_types: list[Attribute]) -> FuncOp:
    """An executable entry returning its first `len(result_types)` arguments."""
    block = Block(arg_types=arg_types)
    block.add_op(ReturnOp(*block.args[: len(result_types)]))
    return FuncOp(name, (arg_types, result_types), Region(block))


# ---- delegate.region / delegate.yield ---------------------------------------------------------


def test_region_with_one_capture(ctx: Context):
    def body(outer: Block) -> list[Operation]:
        def inner(block: Block) -> list[Operation]:
            (a,) = block.args
            add = arith.AddfOp(a, a)
            return [add, YieldOp(add.result)]

        return [region_op("opencl", [outer.args[0]], inner, [T4])]

    func = function("f", [T4], body)
    module = ModuleOp([func])
    reparsed = assert_round_trips(ctx, module)
    region = next(o for o in reparsed.walk() if isinstance(o, RegionOp))
    assert region.target == StringAttr("opencl")
    assert len(region.captures) == 1
    assert [r.type for r in region.outputs] == [T4]
    assert isinstance(region.body.block.last_op, YieldOp)
    assert region.captures[0] is next(o for o in reparsed.walk() if isinstance(o, FuncOp)).args[0]
    text = str(module)
    assert '%1 = delegate.region "opencl" (%2 = %0 : tensor<4xf32>) -> (tensor<4xf32>) {' in text


def test_region_without_captures_or_results(ctx: Context):
    def body(outer: Block) -> list[Operation]:
        return [region_op("cpu", [], lambda block: [YieldOp()], [])]

    module = ModuleOp([function("f", [], body)])
    assert_round_trips(ctx, module)
    assert 'delegate.region "cpu" () -> () {\n      delegate.yield\n    }' in str(module)


def test_region_with_many_captures_and_results(ctx: Context):
    def body(outer: Block) -> list[Operation]:
        x, q, y = outer.args

        def inner(block: Block) -> list[Operation]:
            a, b, c = block.args
            mul = arith.MulfOp(a, c)
            return [mul, YieldOp(mul.result, b, a)]

        return [region_op("cpu", [x, q, y], inner, [T4, T4_Q, T4])]

    func = function("f", [T4, T4_Q, T4], body)
    module = ModuleOp([func])
    reparsed = assert_round_trips(ctx, module)
    region = next(o for o in reparsed.walk() if isinstance(o, RegionOp))
    assert [c.type for c in region.captures] == [T4, T4_Q, T4]
    assert [r.type for r in region.outputs] == [T4, T4_Q, T4]
    assert [a.type for a in region.body.block.args] == [T4, T4_Q, T4]


def test_region_attributes_round_trip(ctx: Context):
    def body(outer: Block) -> list[Operation]:
        region = region_op("npu", [outer.args[0]], lambda b: [YieldOp(b.args[0])], [T4])
        region.attributes["irc.info"] = DictionaryAttr(
            {"ops": StringAttr("add"), "nested": DictionaryAttr({"k": StringAttr("v")})}
        )
        return [region]

    module = ModuleOp([function("f", [T4], body)])
    reparsed = assert_round_trips(ctx, module)
    region = next(o for o in reparsed.walk() if isinstance(o, RegionOp))
    assert region.attributes["irc.info"] == DictionaryAttr(
        {"ops": StringAttr("add"), "nested": DictionaryAttr({"k": StringAttr("v")})}
    )
    assert 'attributes {irc.info = {ops = "add", nested = {k = "v"}}} {' in str(module)


def test_nested_regions(ctx: Context):
    def body(outer: Block) -> list[Operation]:
        def middle(block: Block) -> list[Operation]:
            inner = region_op("cpu", [block.args[0]], lambda b: [YieldOp(b.args[0])], [T4])
            return [inner, YieldOp(inner.outputs[0])]

        return [region_op("opencl", [outer.args[0]], middle, [T4])]

    assert_round_trips(ctx, ModuleOp([function("f", [T4], body)]))


def _verify_region(region: RegionOp, arg_types: list[Attribute]) -> None:
    """Verify `region` as the only op of a function (so its captures are in scope)."""
    block = Block(arg_types=arg_types)
    region.operands = block.args
    block.add_ops([region, ReturnOp()])
    FuncOp("f", (arg_types, ()), Region(block)).verify()


def test_region_verify_argument_mismatch():
    (x,) = Block(arg_types=[T4]).args
    body = Block(arg_types=[T4_I8])
    body.add_op(YieldOp())
    region = RegionOp("cpu", [x], [], Region(body))
    with raises_verify(
        "body arguments (tensor<4xi8>) do not match the captured values (tensor<4xf32>)"
    ):
        _verify_region(region, [T4])


def test_region_verify_argument_count_mismatch():
    (x,) = Block(arg_types=[T4]).args
    body = Block()
    body.add_op(YieldOp())
    region = RegionOp("cpu", [x], [], Region(body))
    with raises_verify("body arguments () do not match the captured values (tensor<4xf32>)"):
        _verify_region(region, [T4])


def test_region_verify_missing_yield():
    region = RegionOp("cpu", [], [], Region(Block()))
    with raises_verify("body must end with delegate.yield"):
        region.verify(verify_nested_ops=False)


def test_region_verify_yield_mismatch():
    (x,) = Block(arg_types=[T4]).args
    body = Block(arg_types=[T4])
    body.add_op(YieldOp(body.args[0]))
    region = RegionOp("cpu", [x], [T4_I8], Region(body))
    with raises_verify("yielded types (tensor<4xf32>) do not match the results (tensor<4xi8>)"):
        _verify_region(region, [T4])


def test_region_verify_isolated_from_above():
    outer = Block(arg_types=[T4])
    body = Block()
    body.add_op(YieldOp(outer.args[0]))
    region = RegionOp("cpu", [], [T4], Region(body))
    outer.add_ops([region, ReturnOp()])
    func = FuncOp("f", ([T4], ()), Region(outer))
    with raises_verify("Operation using value defined out of its IsolatedFromAbove parent"):
        func.verify()


def test_yield_outside_region():
    block = Block(arg_types=[T4])
    block.add_op(YieldOp(block.args[0]))
    func = FuncOp("f", ([T4], ()), Region(block))
    with raises_verify("'delegate.yield' expects parent op 'delegate.region'"):
        func.verify()


# ---- delegate.executable ----------------------------------------------------------------------


def test_executable_defaults_to_private(ctx: Context):
    exe = ExecutableOp("main_opencl_0", "opencl", [entry("entry", [T4], [T4])])
    assert exe.sym_name == StringAttr("main_opencl_0")
    assert exe.sym_visibility == StringAttr("private")
    assert exe.target == StringAttr("opencl")
    module = ModuleOp([exe])
    reparsed = assert_round_trips(ctx, module)
    assert str(module).startswith(
        'builtin.module {\n  delegate.executable private @main_opencl_0 target("opencl") {\n'
        "    func.func @entry("
    )
    parsed = next(o for o in reparsed.walk() if isinstance(o, ExecutableOp))
    assert parsed.sym_visibility == StringAttr("private")
    assert [f.sym_name.data for f in parsed.body.block.ops if isinstance(f, FuncOp)] == ["entry"]


@pytest.mark.parametrize(
    ("visibility", "prefix"),
    [
        (None, 'delegate.executable @exe target("cpu") {'),
        ("public", 'delegate.executable public @exe target("cpu") {'),
        ("nested", 'delegate.executable nested @exe target("cpu") {'),
    ],
)
def test_executable_visibility(ctx: Context, visibility: str | None, prefix: str):
    exe = ExecutableOp("exe", "cpu", [entry("entry", [], [])], visibility)
    module = ModuleOp([exe])
    assert_round_trips(ctx, module)
    assert prefix in str(module)


def test_executable_with_several_functions(ctx: Context):
    helper = entry("helper", [T4], [T4])
    helper.sym_visibility = StringAttr("private")
    funcs = [entry("entry", [T4, T4], [T4]), helper, entry("second", [], [])]
    exe = ExecutableOp("exe", "cpu", funcs)
    exe.attributes["irc.meta"] = DictionaryAttr({"flags": StringAttr("-O3")})
    reparsed = assert_round_trips(ctx, ModuleOp([exe]))
    parsed = next(o for o in reparsed.walk() if isinstance(o, ExecutableOp))
    names = [f.sym_name.data for f in parsed.body.block.ops if isinstance(f, FuncOp)]
    assert names == ["entry", "helper", "second"]
    assert parsed.attributes["irc.meta"] == DictionaryAttr({"flags": StringAttr("-O3")})


def test_executable_from_region(ctx: Context):
    body = Region(Block([entry("entry", [T4], [T4])]))
    exe = ExecutableOp("exe", "cpu", body)
    assert exe.body is body
    assert_round_trips(ctx, ModuleOp([exe]))


def test_empty_executable_prints_an_empty_body(ctx: Context):
    module = ModuleOp([ExecutableOp("exe", "cpu", [])])
    assert_round_trips(ctx, module)
    assert 'delegate.executable private @exe target("cpu") {\n  }' in str(module)
    assert "^bb0" not in str(module)


def test_executable_verify_visibility():
    exe = ExecutableOp("exe", "cpu", [], "internal")
    with raises_verify("visibility must be public, private or nested, got 'internal'"):
        exe.verify()


def test_executable_verify_duplicate_symbols():
    exe = ExecutableOp("exe", "cpu", [entry("entry", [], []), entry("entry", [], [])])
    with raises_verify('Redefinition of symbol "entry"'):
        exe.verify()


# ---- delegate.dispatch ------------------------------------------------------------------------


def _dispatch_module(
    dispatch: Callable[[Block], DispatchOp],
    arg_types: list[Attribute],
    executables: list[Operation] | None = None,
) -> ModuleOp:
    """A module with `executables` (default: @exe holding @entry: T4 -> T4) and @main."""
    if executables is None:
        executables = [ExecutableOp("exe", "cpu", [entry("entry", [T4], [T4])])]
    block = Block(arg_types=arg_types)
    op = dispatch(block)
    block.add_ops([op, ReturnOp(*op.results)])
    main = FuncOp("main", (arg_types, [r.type for r in op.results]), Region(block))
    return ModuleOp([*executables, main])


def test_dispatch_builder(ctx: Context):
    module = _dispatch_module(lambda b: DispatchOp("exe", "entry", [b.args[0]], [T4]), [T4])
    reparsed = assert_round_trips(ctx, module)
    dispatch = next(o for o in reparsed.walk() if isinstance(o, DispatchOp))
    assert dispatch.callee == SymbolRefAttr("exe", ["entry"])
    assert [r.type for r in dispatch.outputs] == [T4]
    assert "delegate.dispatch @exe::@entry(%0) : (tensor<4xf32>) -> tensor<4xf32>" in str(module)


def test_dispatch_several_arguments_and_results(ctx: Context):
    exe = ExecutableOp("exe", "cpu", [entry("entry", [T4, T4_Q, T4_I8], [T4, T4_Q])])
    module = _dispatch_module(
        lambda b: DispatchOp("exe", "entry", b.args, [T4, T4_Q]),
        [T4, T4_Q, T4_I8],
        [exe],
    )
    reparsed = assert_round_trips(ctx, module)
    dispatch = next(o for o in reparsed.walk() if isinstance(o, DispatchOp))
    assert [a.type for a in dispatch.args] == [T4, T4_Q, T4_I8]


def test_dispatch_without_arguments_or_results(ctx: Context):
    exe = ExecutableOp("exe", "cpu", [entry("init", [], [])], visibility="public")
    module = _dispatch_module(lambda b: DispatchOp("exe", "init", [], []), [], [exe])
    assert_round_trips(ctx, module)
    assert "delegate.dispatch @exe::@init() : () -> ()" in str(module)


def test_dispatch_to_a_later_executable(ctx: Context):
    module = _dispatch_module(lambda b: DispatchOp("exe", "entry", [b.args[0]], [T4]), [T4])
    exe = module.body.block.first_op
    assert isinstance(exe, ExecutableOp)
    exe.detach()
    module.body.block.add_op(exe)
    assert_round_trips(ctx, module)


def test_dispatch_outside_a_module_is_not_checked():
    block = Block(arg_types=[T4])
    dispatch = DispatchOp("nowhere", "entry", [block.args[0]], [T4])
    dispatch.verify()  # detached: nothing to resolve against
    block.add_ops([dispatch, ReturnOp(dispatch.outputs[0])])
    FuncOp("f", ([T4], [T4]), Region(block)).verify()  # a function outside any module


def _flat_dispatch(block: Block) -> DispatchOp:
    op = DispatchOp("exe", "entry", [block.args[0]], [T4])
    op.callee = SymbolRefAttr("exe")
    return op


def _deep_dispatch(block: Block) -> DispatchOp:
    op = DispatchOp("exe", "entry", [block.args[0]], [T4])
    op.callee = SymbolRefAttr("exe", ["entry", "more"])
    return op


@pytest.mark.parametrize(
    ("dispatch", "arg_types", "message"),
    [
        (
            lambda b: DispatchOp("nope", "entry", [b.args[0]], [T4]),
            [T4],
            "'@nope' does not name a delegate.executable",
        ),
        (
            lambda b: DispatchOp("main", "entry", [b.args[0]], [T4]),
            [T4],
            "'@main' does not name a delegate.executable",
        ),
        (
            lambda b: DispatchOp("exe", "missing", [b.args[0]], [T4]),
            [T4],
            "'@missing' is not a func.func in executable '@exe'",
        ),
        (
            _flat_dispatch,
            [T4],
            "expected a callee of the form @executable::@entry, got @exe",
        ),
        (
            _deep_dispatch,
            [T4],
            "expected a callee of the form @executable::@entry, got @exe::@entry::@more",
        ),
        (
            lambda b: DispatchOp("exe", "entry", [b.args[0]], [T4]),
            [TensorType(f16, [4])],
            "dispatch types (tensor<4xf16>) -> tensor<4xf32> do not match the entry's "
            "(tensor<4xf32>) -> tensor<4xf32>",
        ),
        (
            lambda b: DispatchOp("exe", "entry", [b.args[0]], [T4, T4]),
            [T4],
            "dispatch types (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) do not match the "
            "entry's (tensor<4xf32>) -> tensor<4xf32>",
        ),
        (
            lambda b: DispatchOp("exe", "entry", [], [T4]),
            [T4],
            "dispatch types () -> tensor<4xf32> do not match the entry's "
            "(tensor<4xf32>) -> tensor<4xf32>",
        ),
    ],
)
def test_dispatch_verify_errors(
    dispatch: Callable[[Block], DispatchOp], arg_types: list[Attribute], message: str
):
    module = _dispatch_module(dispatch, arg_types)
    with raises_verify(message):
        module.verify()


def test_dispatch_entry_not_a_function():
    inner = ExecutableOp("entry", "cpu", [])
    exe = ExecutableOp("exe", "cpu", [inner])
    module = _dispatch_module(lambda b: DispatchOp("exe", "entry", [b.args[0]], [T4]), [T4], [exe])
    with raises_verify("'@entry' is not a func.func in executable '@exe'"):
        module.verify()


def test_dispatch_quantized_types_must_match_exactly():
    other = TensorType(UniformQuantizedType.per_tensor(i8, f32, 0.25, -3), [4])
    exe = ExecutableOp("exe", "cpu", [entry("entry", [T4_Q], [])])
    module = _dispatch_module(lambda b: DispatchOp("exe", "entry", b.args, []), [other], [exe])
    with raises_verify("do not match the entry's (tensor<4x!quant.uniform<i8:f32, 0.5:-3>>)"):
        module.verify()


def test_ops_parse_from_text(ctx: Context):
    text = """
    delegate.executable private @main_cpu_0 target("cpu") {
      func.func @entry(%a: tensor<4xf32>) -> tensor<4xf32> {
        func.return %a : tensor<4xf32>
      }
    }
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %r = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
        delegate.yield %a : tensor<4xf32>
      }
      %d = delegate.dispatch @main_cpu_0::@entry(%r) : (tensor<4xf32>) -> tensor<4xf32>
      func.return %d : tensor<4xf32>
    }
    """
    module = Parser(ctx, text).parse_module()
    module.verify()
    exe, main = module.body.block.ops
    assert isinstance(exe, ExecutableOp)
    assert exe.sym_visibility == StringAttr("private")
    assert isinstance(main, FuncOp)
    region, dispatch, _ = main.body.block.ops
    assert isinstance(region, RegionOp)
    assert region.captures[0] is main.args[0]
    assert isinstance(dispatch, DispatchOp)
    assert dispatch.args[0] is region.outputs[0]
    assert dispatch.callee == SymbolRefAttr("main_cpu_0", ["entry"])
