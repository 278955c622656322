"""The CPU target's lowering as visible passes: `cpu-fuse`, `cpu-plan-memory`, `cpu-codegen`
(and `lower-cpu`, which runs the three), and the `cpu.fusion` / `cpu.yield` verifiers."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from irc.context import get_all_passes, make_context
from irc.dialects import cpu, nn
from irc.dialects.nn import dense_from_array
from irc.pipelines import parse_pipeline, run_passes
from irc.printing import print_ir

QIN = "tensor<1x4x4x8x!quant.uniform<i8:f32, 0.5:3>>"
QOUT = "tensor<1x4x4x8x!quant.uniform<i8:f32, 0.25:-7>>"
QW = "tensor<8x1x1x8x!quant.uniform<i8:f32, 0.125>>"
F = "tensor<1x4x4x8xf32>"
F2 = f"{F}, {F}"
MIXED = f"""
delegate.executable private @int8 target("cpu") {{
  func.func @entry(%x: {QIN}) -> {QOUT} {{
    %w = nn.constant dense<1> : tensor<8x1x1x8xi8> -> {QW}
    %c = nn.conv2d %x, %w activation = "relu6" layout = "NHWC" : {QIN}, {QW} -> {QOUT}
    %a = nn.add %c, %x : {QOUT}, {QIN} -> {QOUT}
    func.return %a : {QOUT}
  }}
}}
delegate.executable private @float target("cpu") {{
  func.func @entry(%x: {F}, %r: {F}) -> tensor<128xf32> {{
    %w = nn.constant dense<0.5> : tensor<8x3x3x8xf32>
    %c = nn.conv2d %x, %w pads = [1, 1, 1, 1] layout = "NHWC" : {F}, tensor<8x3x3x8xf32> -> {F}
    %a = nn.add %c, %r activation = "relu" : {F2} -> {F}
    %s = nn.reshape %a shape = [128] : {F} -> tensor<128xf32>
    %e = nn.exp %s : tensor<128xf32> -> tensor<128xf32>
    func.return %e : tensor<128xf32>
  }}
}}
"""
"""An int8 conv2d with a relu6 (clamped in the fused kernel), an int8 residual add, a
float conv2d with a residual add, and a reshape (a free alias)."""


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text, "test.mlir").parse_module()
    module.verify()
    return module


def run(module: ModuleOp, pipeline: str) -> ModuleOp:
    run_passes(module, parse_pipeline(pipeline))
    module.verify()
    return module


def fusion_kinds(module: ModuleOp) -> list[str]:
    return [op.kind.data for op in module.walk() if isinstance(op, cpu.FusionOp)]


def test_the_passes_are_registered() -> None:
    passes = get_all_passes()
    assert {"cpu-fuse", "cpu-plan-memory", "cpu-codegen", "lower-cpu"} <= set(passes)


def test_lower_cpu_is_the_three_steps() -> None:
    whole = print_ir(run(parse(MIXED), "lower-cpu"))
    steps = print_ir(run(parse(MIXED), "cpu-fuse,cpu-plan-memory,cpu-codegen"))
    assert whole == steps
    assert "cpu.fusion" not in whole
    assert "cpu.offsets" not in whole
    assert "cpu.workspace" not in whole


def test_fuse_wraps_every_chain_once() -> None:
    module = run(parse(MIXED), "cpu-fuse")
    assert fusion_kinds(module) == ["qconv", "qadd", "conv_add"]
    (qconv, _, _) = [op for op in module.walk() if isinstance(op, cpu.FusionOp)]
    assert [op.name for op in qconv.members][-2:] == ["quant.scast", "nn.clip"]  # relu6
    again = print_ir(run(parse(print_ir(module)), "cpu-fuse"))
    assert again == print_ir(module)


def test_fusions_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_INT8", "0")
    assert fusion_kinds(run(parse(MIXED), "cpu-fuse")) == ["conv_add"]
    monkeypatch.setenv("IRC_CPU_FUSE_RESIDUAL", "0")
    module = run(parse(MIXED), "cpu-fuse")
    assert fusion_kinds(module) == []
    lowered = print_ir(run(module, "cpu-plan-memory,cpu-codegen"))  # op by op still lowers
    assert "irc_qconv" not in lowered
    assert "irc_conv2d(" in lowered


def test_plan_is_recorded_and_idempotent() -> None:
    module = run(parse(MIXED), "cpu-fuse,cpu-plan-memory")
    once = print_ir(module)
    assert print_ir(run(module, "cpu-plan-memory")) == once
    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    workspaces = [f.attributes[cpu.PLAN_WORKSPACE].value.data for f in funcs]  # type: ignore[attr-defined]
    (reshape,) = [op for op in module.walk() if isinstance(op, nn.ReshapeOp)]
    assert cpu.PLAN_ALIAS in reshape.attributes
    (conv_add,) = [
        op for op in module.walk() if isinstance(op, cpu.FusionOp) and op.kind.data == "conv_add"
    ]
    assert list(conv_add.attributes[cpu.PLAN_SCRATCH].get_values()) == [512]  # type: ignore[attr-defined]
    lowered = run(module, "cpu-codegen")
    calls = [op.workspace.value.data for op in lowered.walk() if isinstance(op, cpu.CallOp)]
    assert calls == workspaces


def test_codegen_follows_the_recorded_plan() -> None:
    module = run(parse(MIXED), "cpu-fuse,cpu-plan-memory")
    (exp,) = [op for op in module.walk() if isinstance(op, nn.ExpOp)]
    func = exp.parent_op()
    assert isinstance(func, FuncOp)
    (fusion,) = [op for op in func.walk() if isinstance(op, cpu.FusionOp)]
    size = func.attributes[cpu.PLAN_WORKSPACE].value.data  # type: ignore[attr-defined]
    # Move the fusion's result past everything else: the source reads it there.
    from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64

    fusion.attributes[cpu.PLAN_OFFSETS] = DenseArrayBase.from_list(i64, [size])
    func.attributes[cpu.PLAN_WORKSPACE] = IntegerAttr(size + 512, i64)
    source = print_ir(run(module, "cpu-codegen"))
    assert f"(ws + {size // 4})" in source
    assert f"workspace = {size + 512}" in source


def fusion_text(body: str, kind: str = "qadd") -> str:
    return f"""
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {{
      %f = "cpu.fusion"() <{{kind = "{kind}"}}> ({{
        {body}
      }}) : () -> tensor<4xf32>
      func.return %f : tensor<4xf32>
    }}"""


def test_fusion_verifier_rejects_an_escaping_value() -> None:
    module = parse(
        fusion_text(
            """%y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
        %z = nn.add %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
        "cpu.yield"(%z) : (tensor<4xf32>) -> ()"""
        )
    )
    (fusion,) = [op for op in module.walk() if isinstance(op, cpu.FusionOp)]
    relu = fusion.members[0]
    ret = fusion.next_op
    assert ret is not None
    ret.operands = [relu.results[0]]  # the relu's result now leaves the region
    with pytest.raises(VerifyException, match=r"the result of 'nn\.relu' is used outside"):
        fusion.verify()


def test_yield_belongs_to_a_fusion() -> None:
    value = nn.ConstantOp(dense_from_array(np.zeros(4, np.float32)))
    yield_op = cpu.YieldOp(value.output)
    ModuleOp([value, yield_op])
    with pytest.raises(VerifyException, match=r"expects parent op 'cpu\.fusion'"):
        yield_op.verify()


def test_fusing_after_planning_drops_the_stale_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_RESIDUAL", "0")
    module = run(parse(MIXED), "cpu-fuse,cpu-plan-memory")
    monkeypatch.delenv("IRC_CPU_FUSE_RESIDUAL")
    module = run(module, "cpu-fuse")
    (float_entry,) = [op for op in module.walk() if isinstance(op, nn.ExpOp)]
    func = float_entry.parent_op()
    assert isinstance(func, FuncOp)
    assert cpu.PLAN_WORKSPACE not in func.attributes
    assert all(cpu.PLAN_OFFSETS not in op.attributes for op in func.walk())
    assert print_ir(run(module, "cpu-plan-memory,cpu-codegen")) == print_ir(
        run(parse(MIXED), "lower-cpu")
    )
