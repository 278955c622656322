"""Tests of `irc.compile` / `CompiledModel` / `irc.load`, the default pipeline
(`irc.pipelines`), the lowering fallback, and the `irc-compile` / `irc-run --targets` tools.

Every shared model compiled for ["testplugin", "reference"] must give what the unpartitioned
reference run gives: float outputs within 1e-5 x max|out| (the testplugin regions run in
NCHW, so sums run in another order), integer and quantized outputs exactly (testplugin
refuses quantized ops: quantized models stay on the reference kernels).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from script_support import console_script
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

import irc
import irc.context
from irc.diagnostics import capture_diagnostics, emit_error
from irc.dialects import delegate, nn
from irc.pipelines import (
    LoweringError,
    default_pipeline,
    lower_executables,
    lower_host,
    lowering_pipelines,
    parse_pipeline,
    run_passes,
)
from irc.runtime import CompileError
from irc.targets import Support, Target, TargetError, TargetRuntime, base, load_plugin
from irc.targets.reference.target import ReferenceRuntime
from irc.tools.irc_compile import main as compile_main
from irc.tools.irc_run import main as run_main

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models"
MANIFEST = MODELS / "manifest.json"
TESTPLUGIN = "tests.plugins.testplugin:TestPluginTarget"
TARGETS = ["testplugin", "reference"]

T = "tensor<1x4x4x2xf32>"
CHAIN = f"""\
func.func @main(%x: {T}, %y: {T}) -> {T}
    attributes {{irc.input_names = ["x", "y"], irc.output_names = ["out"]}} {{
  %a = nn.add %x, %y : {T}, {T} -> {T}
  %b = nn.relu %a : {T} -> {T}
  %c = nn.add %b, %x : {T}, {T} -> {T}
  %d = nn.relu6 %c : {T} -> {T}
  %e = nn.add %d, %y : {T}, {T} -> {T}
  func.return %e : {T}
}}
"""
"""Five ops testplugin takes: one region; the relu (#1) is what the failing targets refuse."""

MIXED = f"""\
func.func @main(%x: {T}) -> ({T}, {T})
    attributes {{irc.input_names = ["x"], irc.output_names = ["soft", "act"]}} {{
  %w = nn.constant dense<0.5> : {T}
  %a = nn.add %x, %w : {T}, {T} -> {T}
  %b = nn.relu %a : {T} -> {T}
  %s = nn.softmax %b axis = 3 : {T} -> {T}
  %t = nn.exp %s : {T} -> {T}
  %c = nn.add %b, %x : {T}, {T} -> {T}
  %d = nn.relu6 %c : {T} -> {T}
  func.return %t, %d : {T}, {T}
}}
"""
"""testplugin takes add/relu/relu6, not softmax/exp (they go to the reference)."""


def chain_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {
        "x": rng.standard_normal((1, 4, 4, 2)).astype(np.float32),
        "y": rng.standard_normal((1, 4, 4, 2)).astype(np.float32),
    }


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A private copy of the target registry with testplugin loaded; cwd = the repo root."""
    base.registered_targets()
    monkeypatch.setattr(base, "_registered", dict(base._registered))
    monkeypatch.chdir(ROOT)
    load_plugin(TESTPLUGIN)


def executables(module: ModuleOp) -> dict[str, delegate.ExecutableOp]:
    return {
        op.sym_name.data: op
        for op in module.body.block.ops
        if isinstance(op, delegate.ExecutableOp)
    }


def assert_close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> float:
    """Float outputs within 1e-5 x max|want|, others exactly; returns the worst ratio."""
    assert list(got) == list(want)
    worst = 0.0
    for name, value in want.items():
        assert got[name].dtype == value.dtype, name
        assert got[name].shape == value.shape, name
        if value.dtype.kind == "f":
            scale = max(float(np.abs(value).max()), 1e-30)
            ratio = float(np.abs(got[name].astype(np.float64) - value).max()) / scale
            assert ratio <= 1e-5, f"{name}: max|diff| = {ratio:.3g} x max|out|"
            worst = max(worst, ratio)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)
    return worst


# ---- The default pipeline ----------------------------------------------------------------------


def test_default_pipeline_for_testplugin_and_reference(registry: None) -> None:
    assert default_pipeline(TARGETS) == (
        "canonicalize,widen-fp16{targets=testplugin},partition{targets=testplugin,reference},"
        "convert-layout{targets=testplugin to=NCHW},insert-qdq{targets=testplugin},"
        "fuse-activations{targets=testplugin},outline-delegates"
    )
    assert irc.pipelines.default is default_pipeline


def test_default_pipeline_options(registry: None) -> None:
    spec = default_pipeline(
        ["testplugin", "testplugin", "reference"],
        min_ops=3,
        deny_ops=["nn.softmax", "exp"],
        place=["conv 1:host", "#4:reference"],
        report="out dir/report.json",
        strict=False,
        emulate_rounding=False,
    )
    assert spec == (
        "canonicalize,widen-fp16{targets=testplugin},"
        'partition{targets=testplugin,reference min-ops=3 deny-ops="nn.softmax",exp'
        ' place="conv 1:host","#4:reference" report="out dir/report.json" strict=false},'
        "convert-layout{targets=testplugin to=NCHW},"
        "insert-qdq{targets=testplugin emulate-rounding=false},"
        "fuse-activations{targets=testplugin},outline-delegates"
    )
    passes = parse_pipeline(spec)
    assert [p.name for p in passes] == [
        "canonicalize",
        "widen-fp16",
        "partition",
        "convert-layout",
        "insert-qdq",
        "fuse-activations",
        "outline-delegates",
    ]
    assert passes[2].place == ("conv 1:host", "#4:reference")  # type: ignore[attr-defined]
    assert passes[2].report == "out dir/report.json"  # type: ignore[attr-defined]


def test_default_pipeline_for_the_reference_alone(registry: None) -> None:
    # No float-only target and no layout preference: no insert-qdq / convert-layout step,
    # which without targets would convert the whole graph.
    assert default_pipeline(["reference"]) == (
        "canonicalize,partition{targets=reference},outline-delegates"
    )


def test_default_pipeline_errors(registry: None) -> None:
    with pytest.raises(TargetError, match="unknown target 'nosuch'"):
        default_pipeline(["nosuch"])
    with pytest.raises(ValueError, match="at least one target"):
        default_pipeline([])
    with pytest.raises(ValueError, match="bogus"):
        parse_pipeline(default_pipeline(["reference"], bogus=1))


def test_lowering_pipelines(registry: None) -> None:
    assert lowering_pipelines(["testplugin", "reference"]) == {"reference": "lower-quantized"}


Q = "tensor<4x!quant.uniform<i8:f32, 0.5:-3>>"
TWO_EXECUTABLES = f"""\
delegate.executable private @main_reference_0 target("reference") {{
  func.func @entry(%a: {Q}) -> {Q} {{
    %s = nn.add %a, %a : {Q}, {Q} -> {Q}
    func.return %s : {Q}
  }}
}}
delegate.executable private @main_testplugin_0 target("testplugin") {{
  func.func @entry(%a: {Q}) -> {Q} {{
    %s = nn.add %a, %a : {Q}, {Q} -> {Q}
    func.return %s : {Q}
  }}
}}
func.func @main(%x: {Q}) -> {Q} {{
  %r = delegate.dispatch @main_reference_0::@entry(%x) : ({Q}) -> {Q}
  %t = delegate.dispatch @main_testplugin_0::@entry(%r) : ({Q}) -> {Q}
  %h = nn.add %t, %t : {Q}, {Q} -> {Q}
  func.return %h : {Q}
}}
"""


def _quantized_adds(op: Operation) -> int:
    return sum(isinstance(o, nn.AddOp) and "quant" in str(o.result_types[0]) for o in op.walk())


def test_lowering_applies_to_each_targets_executables_only(registry: None) -> None:
    module = irc.parse_module(TWO_EXECUTABLES)
    exes = executables(module)
    assert lower_executables(module) == ["main_reference_0"]
    assert _quantized_adds(exes["main_reference_0"]) == 0  # lower-quantized ran
    assert _quantized_adds(exes["main_testplugin_0"]) == 1  # testplugin has no lowering
    main = module.body.block.last_op
    assert _quantized_adds(main) == 1  # the host is not an executable
    lower_host(module)
    assert _quantized_adds(main) == 0
    assert _quantized_adds(exes["main_testplugin_0"]) == 1  # still untouched
    assert list(executables(module)) == ["main_reference_0", "main_testplugin_0"]
    assert [op.name for op in module.body.block.ops][-1] == "func.func"


# ---- irc.compile -------------------------------------------------------------------------------


def test_compile_module(registry: None) -> None:
    source = irc.parse_module(MIXED)
    before = str(source)
    model = irc.compile(source, TARGETS)
    assert str(source) == before  # the caller's module is cloned
    assert model.input_names == ("x",)
    assert model.output_names == ("soft", "act")
    assert model.targets == ("testplugin", "reference")
    exes = executables(model.module)
    assert set(exes) == {"main_testplugin_0", "main_reference_0"}
    assert {exe.target.data for exe in exes.values()} == {"testplugin", "reference"}
    assert "irc.source_op" not in str(model.module)
    lines = model.summary.splitlines()
    assert lines[0] == "targets: testplugin, reference"
    assert lines[1] == (
        "@main: testplugin: 4 of 6 ops in 1 region; reference: 2 of 6 ops in 1 region; host: 0 ops"
    )
    x = chain_inputs()["x"]
    assert_close(model.run({"x": x}), irc.run(source, {"x": x}))
    assert repr(model).startswith("<CompiledModel @main [testplugin, reference]: 1 inputs")


CONV = f"""\
func.func @main(%x: {T}) -> {T} attributes {{irc.input_names = ["x"], irc.output_names = ["y"]}} {{
  %w = nn.constant dense<[[[[1.0, -2.0]]], [[[0.5, 0.25]]]]> : tensor<2x1x1x2xf32>
  %c = nn.conv2d %x, %w layout = "NHWC" : {T}, tensor<2x1x1x2xf32> -> {T}
  %r = nn.relu %c : {T} -> {T}
  %s = nn.softmax %r axis = 3 : {T} -> {T}
  func.return %s : {T}
}}
"""


def test_compile_layouts_inside_testplugin_regions(registry: None) -> None:
    # testplugin prefers NCHW: its region converts at its edges, the host keeps NHWC.
    source = irc.parse_module(CONV)
    model = irc.compile(source, TARGETS)
    (exe,) = [e for e in executables(model.module).values() if e.target.data == "testplugin"]
    (conv,) = [op for op in exe.walk() if isinstance(op, nn.Conv2DOp)]
    assert conv.layout.data == "NCHW"
    assert any(isinstance(op, nn.TransposeOp) for op in exe.walk())
    main = model.module.body.block.last_op
    assert main is not None
    assert not any(isinstance(op, nn.TransposeOp) for op in main.walk())
    x = chain_inputs()["x"]
    assert_close(model.run({"x": x}), irc.run(source, {"x": x}))


def test_save_and_load(registry: None, tmp_path: Path) -> None:
    model = irc.compile(irc.parse_module(MIXED), TARGETS)
    path = tmp_path / "compiled.mlir"
    model.save(path)
    again = irc.load(path)
    with pytest.raises(FileNotFoundError):
        model.save(tmp_path / "no such dir" / "compiled.mlir")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["compiled.mlir"]
    assert again.targets == ("testplugin", "reference")
    assert list(executables(again.module)) == list(executables(model.module))
    x = chain_inputs()["x"]
    for name, value in model.run({"x": x}).items():
        np.testing.assert_array_equal(again.run({"x": x})[name], value)


def test_compile_paths(registry: None, tmp_path: Path) -> None:
    path = tmp_path / "chain.mlir"
    path.write_text(CHAIN)
    model = irc.compile(path, TARGETS)
    assert list(executables(model.module)) == ["main_testplugin_0"]
    inputs = chain_inputs()
    assert_close(model.run(inputs), irc.run(path, inputs))
    with pytest.raises(TypeError, match="expected a ModuleOp or a path"):
        irc.compile(42, TARGETS)  # type: ignore[arg-type]


def test_compile_options_reach_the_partition(registry: None, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    model = irc.compile(irc.parse_module(CHAIN), TARGETS, min_ops=6, report=str(report))
    assert "testplugin: 0 of 5 ops" in model.summary
    assert json.loads(report.read_text())["options"]["min_ops"] == 6
    model = irc.compile(irc.parse_module(CHAIN), TARGETS, deny_ops=["nn.relu"])
    assert "'nn.relu' is in deny-ops" in model.summary


def test_compile_errors(registry: None) -> None:
    with pytest.raises(TargetError, match="unknown target"):
        irc.compile(irc.parse_module(CHAIN), ["nosuch"])
    with pytest.raises(ValueError, match="min-ops"):
        irc.compile(irc.parse_module(CHAIN), TARGETS, min_ops=-1)
    with pytest.raises(CompileError, match="no function @nope"):
        irc.compile(irc.parse_module(CHAIN), TARGETS, entry="nope")


# ---- Real models -------------------------------------------------------------------------------


def _entries() -> list[dict]:
    if not MANIFEST.is_file():
        return []
    return json.loads(MANIFEST.read_text())["models"]


ENTRIES = _entries()


def _inputs(entry: dict) -> dict[str, np.ndarray]:
    samples = entry.get("golden", {}).get("samples") or []
    if samples:
        with np.load(MODELS / samples[0]["inputs"]) as data:
            return {k: data[k] for k in data.files}
    rng = np.random.default_rng(0)
    return {i["name"]: rng.standard_normal(i["shape"]).astype(np.float32) for i in entry["inputs"]}


@pytest.mark.skipif(not ENTRIES, reason="../shared/models is not available")
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_compiled_models_match_the_reference(registry: None, entry: dict) -> None:
    inputs = _inputs(entry)
    shapes = {i["name"]: tuple(i["shape"]) for i in entry["inputs"]}
    module = irc.import_model(MODELS / entry["file"], input_shapes=shapes)
    want = irc.run(module, inputs)
    model = irc.compile(module, TARGETS)
    worst = assert_close(model.run(inputs), want)
    used = {exe.target.data for exe in executables(model.module).values()}
    if entry.get("quantized"):
        assert "testplugin" not in used  # it refuses quantized ops
    else:
        assert "testplugin" in used
    print(f"{entry['name']}: {sorted(used)}, worst {worst:.2e}\n{model.summary.splitlines()[1]}")


# ---- Targets that fail to lower or build -------------------------------------------------------


@dataclass(frozen=True)
class FailOnReluPass(ModulePass):
    """A lowering that has no kernel for relu (reported at the op)."""

    name = "test-fail-on-relu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, nn.ReluOp):
                emit_error(inner, "no relu kernel in this build")


@dataclass(frozen=True)
class CrashPass(ModulePass):
    """A lowering that fails without naming an op."""

    name = "test-crash"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise RuntimeError("out of registers")


class _FloatTarget(Target):
    """Takes what testplugin takes, in any layout; runs on the reference kernels."""

    preferred_layout = None
    runs_quantized = False
    lowering: ClassVar[str] = ""

    def supports(self, op: Operation) -> Support:
        return base.get_target("testplugin").supports(op)

    def lowering_passes(self) -> str:
        return self.lowering

    def passes(self) -> dict[str, type[ModulePass]]:
        # The target's own lowering passes, unknown to irc's pass registry.
        return {FailOnReluPass.name: FailOnReluPass, CrashPass.name: CrashPass}

    def runtime(self) -> TargetRuntime:
        return ReferenceRuntime()


class BrittleTarget(_FloatTarget):
    name = "brittle"
    lowering = "test-fail-on-relu"


class CrashingTarget(_FloatTarget):
    name = "crashing"
    lowering = "test-crash"


class _Fragile(TargetRuntime):
    """Cannot build executables holding a relu: names the op when `precise`."""

    def __init__(self, precise: bool) -> None:
        self.precise = precise

    def load(self, executable: Operation) -> Any:
        for op in executable.walk():
            if isinstance(op, nn.ReluOp):
                if self.precise:
                    raise CompileError("the relu kernel does not build", op)
                raise ValueError("build failed")
        return ReferenceRuntime().load(executable)


class FragileTarget(_FloatTarget):
    name = "fragile"

    def runtime(self) -> TargetRuntime:
        return _Fragile(precise=False)


class PreciseFragileTarget(_FloatTarget):
    name = "precise"

    def runtime(self) -> TargetRuntime:
        return _Fragile(precise=True)


@pytest.fixture
def failing(registry: None) -> None:
    """The failing targets registered (their lowering passes come from `Target.passes()`)."""
    assert FailOnReluPass.name not in irc.context.get_all_passes()
    for target in (BrittleTarget, CrashingTarget, FragileTarget, PreciseFragileTarget):
        base.register(target)


def _ops_by_target(model: irc.CompiledModel) -> dict[str, list[str]]:
    placed: dict[str, list[str]] = {}
    for exe in executables(model.module).values():
        names = [op.name for op in exe.walk() if op.name.startswith("nn.")]
        placed.setdefault(exe.target.data, []).extend(names)
    main = model.module.body.block.last_op
    assert main is not None
    placed["host"] = [op.name for op in main.walk() if op.name.startswith("nn.")]
    return placed


def test_lowering_failure_moves_the_op_to_the_next_target(failing: None) -> None:
    model = irc.compile(irc.parse_module(CHAIN, filename="chain.mlir"), ["brittle", "reference"])
    placed = _ops_by_target(model)
    assert "nn.relu" not in placed["brittle"]
    assert placed["brittle"] == ["nn.add", "nn.relu6", "nn.add"]
    assert placed["reference"] == ["nn.add", "nn.relu"]  # the add alone is below min-ops
    assert [r.describe() for r in model.refusals] == [
        "brittle refused 'nn.relu' (chain.mlir:4:3): lowering: no relu kernel in this build; "
        "moved to reference"
    ]
    assert model.summary.splitlines()[-2:] == [
        "lowering refusals: 1",
        "  " + model.refusals[0].describe(),
    ]
    assert_close(model.run(chain_inputs()), irc.run(irc.parse_module(CHAIN), chain_inputs()))


def test_lowering_failure_with_no_next_target_goes_to_the_host(failing: None) -> None:
    model = irc.compile(irc.parse_module(CHAIN), ["brittle"])
    placed = _ops_by_target(model)
    assert placed["brittle"] == ["nn.add", "nn.relu6", "nn.add"]
    assert placed["host"] == ["nn.add", "nn.relu"]
    assert model.refusals[0].moved_to == "host"
    assert "'nn.relu' stays on the host: brittle (pinned): pinned to the host" in model.summary
    assert_close(model.run(chain_inputs()), irc.run(irc.parse_module(CHAIN), chain_inputs()))


def test_lowering_failure_without_an_op_refuses_the_region(failing: None) -> None:
    model = irc.compile(irc.parse_module(CHAIN), ["crashing", "reference"])
    placed = _ops_by_target(model)
    assert "crashing" not in placed
    assert len(placed["reference"]) == 5
    (refusal,) = model.refusals
    assert (refusal.target, refusal.op, refusal.moved_to) == ("crashing", "region", "reference")
    assert refusal.where == "@main_crashing_0, 5 ops"
    assert "out of registers" in refusal.reason
    assert_close(model.run(chain_inputs()), irc.run(irc.parse_module(CHAIN), chain_inputs()))


@pytest.mark.parametrize(("target", "op"), [("fragile", "region"), ("precise", "nn.relu")])
def test_build_failure_is_not_fatal(failing: None, target: str, op: str) -> None:
    model = irc.compile(irc.parse_module(CHAIN), [target, "reference"])
    (refusal,) = model.refusals
    assert (refusal.target, refusal.op) == (target, op)
    placed = _ops_by_target(model)
    assert "nn.relu" not in placed.get(target, [])
    assert_close(model.run(chain_inputs()), irc.run(irc.parse_module(CHAIN), chain_inputs()))


def test_refused_op_walks_down_the_priority_list(failing: None) -> None:
    # brittle cannot lower the relu; precise, the next target, cannot build it either.
    model = irc.compile(irc.parse_module(CHAIN), ["brittle", "precise", "reference"])
    assert [(r.target, r.op, r.moved_to) for r in model.refusals] == [
        ("brittle", "nn.relu", "precise"),
        ("precise", "nn.relu", "reference"),
    ]
    placed = _ops_by_target(model)
    assert "nn.relu" in placed["reference"]
    assert "nn.relu" not in placed["brittle"] + placed.get("precise", [])
    assert_close(model.run(chain_inputs()), irc.run(irc.parse_module(CHAIN), chain_inputs()))


def test_lower_executables_raises_without_a_failures_list(failing: None) -> None:
    module = irc.parse_module(CHAIN)
    with capture_diagnostics() as remarks:
        run_passes(module, parse_pipeline(default_pipeline(["brittle"])))
    assert [r.message for r in remarks] == ["@main: brittle: 5 of 5 ops in 1 region; host: 0 ops"]
    with pytest.raises(LoweringError, match="brittle: lowering @main_brittle_0 failed: no relu"):
        lower_executables(module)


# ---- Tools -------------------------------------------------------------------------------------


def _tool(
    main: Callable[[list[str]], int], args: Sequence[object], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    path = tmp_path / "chain.mlir"
    path.write_text(MIXED)
    return path


def test_irc_compile_writes_module_and_summary(
    registry: None, chain: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "out.mlir"
    report = tmp_path / "report.json"
    code, out, err = _tool(
        compile_main,
        [chain, "--targets", "testplugin,reference", "-o", out_file, "--report", report],
        capsys,
    )
    assert code == 0, err
    assert err == ""
    assert out.splitlines()[0] == "targets: testplugin, reference"
    assert "@main: testplugin: 4 of 6 ops" in out
    text = out_file.read_text()
    assert 'delegate.executable private @main_testplugin_0 target("testplugin")' in text
    assert "delegate.dispatch @main_reference_0::@entry(" in text
    assert json.loads(report.read_text())["functions"][0]["name"] == "main"
    # Without -o: the module on stdout, the summary on stderr.
    code, out, err = _tool(compile_main, [chain, "--targets", "testplugin,reference"], capsys)
    assert code == 0
    assert out.strip() == text.strip()
    assert err.startswith("targets: testplugin, reference\n")


def test_irc_compile_min_ops(
    registry: None, chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _tool(
        compile_main, [chain, "--targets", "testplugin", "--min-ops", "9"], capsys
    )
    assert code == 0
    assert "delegate.executable" not in out
    assert "testplugin: 0 of 6 ops in 0 regions; host: 6 ops" in err


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--targets", "nosuch"], 1, "irc-compile: error: unknown target 'nosuch' (known targets:"),
        (["--targets", ","], 1, "irc-compile: error: bad --targets ','"),
        (["--targets", "reference", "--plugin", "nope"], 1, "bad plugin 'nope': expected"),
        (
            ["--targets", "reference", "--plugin", "no_such_module:X"],
            1,
            "cannot load plugin 'no_such_module:X'",
        ),
        (["--targets", "reference", "--min-ops", "-2"], 1, "min-ops must be at least 0"),
        ([], 2, "the following arguments are required: --targets"),
    ],
)
def test_irc_compile_errors(
    registry: None,
    chain: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    status: int,
    message: str,
) -> None:
    out_file = tmp_path / "never.mlir"
    code, _, err = _tool(compile_main, [chain, "-o", out_file, *args], capsys)
    assert code == status
    assert message in err
    assert len(err.strip().splitlines()) == 1 or status == 2
    assert not out_file.exists()


def test_irc_compile_bad_ir_is_located(
    registry: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = nn.bogus %x\n}\n")
    out_file = tmp_path / "out.mlir"
    code, _, err = _tool(compile_main, [bad, "--targets", "reference", "-o", out_file], capsys)
    assert code == 1
    assert err.startswith(f"{bad}:2:")
    assert not out_file.exists()
    missing = tmp_path / "missing.tflite"
    code, _, err = _tool(compile_main, [missing, "--targets", "reference"], capsys)
    assert code == 1
    assert (
        err
        == f"irc-compile: error: could not open input file '{missing}': No such file or directory\n"
    )


def test_irc_run_with_targets(
    registry: None, chain: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    x = chain_inputs()["x"]
    np.savez(tmp_path / "in.npz", x=x)
    outputs = tmp_path / "out.npz"
    args = [chain, "--inputs", tmp_path / "in.npz", "--outputs", outputs]
    code, out, err = _tool(run_main, [*args, "--targets", "testplugin,reference"], capsys)
    assert code == 0, err
    assert out.startswith("soft: shape=(1, 4, 4, 2) dtype=float32")
    want = irc.run(chain, {"x": x})
    with np.load(outputs) as saved:
        assert_close({k: saved[k] for k in saved.files}, want)
    code, _, err = _tool(run_main, [*args, "--targets", "nosuch"], capsys)
    assert code == 1
    assert err.startswith("irc-run: error: unknown target 'nosuch'")


def _subprocess(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script(args[0]), *args[1:]],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_console_scripts_with_plugins(chain: Path, tmp_path: Path) -> None:
    compiled = tmp_path / "compiled.mlir"
    result = _subprocess(
        [
            "irc-compile",
            str(chain),
            "--targets",
            "testplugin,reference",
            "--plugin",
            TESTPLUGIN,
            "-o",
            str(compiled),
        ]
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("targets: testplugin, reference\n")
    assert "main_testplugin_0" in compiled.read_text()
    # The compiled module runs without the original, the plugin found through IRC_PLUGINS.
    ran = _subprocess(["irc-run", str(compiled)], IRC_PLUGINS=TESTPLUGIN)
    assert ran.returncode == 0, ran.stderr
    direct = _subprocess(
        ["irc-run", str(chain), "--targets", "testplugin,reference", "--plugin", TESTPLUGIN]
    )
    assert direct.returncode == 0, direct.stderr
    assert direct.stdout == ran.stdout
    # Without the plugin, the compiled module names an unknown target: one clear error.
    missing = _subprocess(["irc-run", str(compiled)], IRC_PLUGINS="")
    assert missing.returncode == 1
    assert "unknown target 'testplugin'" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.skipif(not ENTRIES, reason="../shared/models is not available")
def test_irc_compile_model_file(registry: None, tmp_path: Path) -> None:
    entry = next(e for e in ENTRIES if e["name"] == "small_cnn_float32")
    compiled = tmp_path / "small.mlir"
    result = _subprocess(
        [
            "irc-compile",
            str(MODELS / entry["file"]),
            "--targets",
            "testplugin,reference",
            "-o",
            str(compiled),
        ],
        IRC_PLUGINS=TESTPLUGIN,
    )
    assert result.returncode == 0, result.stderr
    assert "@main: testplugin: " in result.stdout
    inputs = _inputs(entry)
    got = irc.load(compiled).run(inputs)
    assert_close(got, irc.run(MODELS / entry["file"], inputs))
