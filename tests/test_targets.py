"""Tests of the Target protocol and registry (irc.targets.base) and of the reference target."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import numpy as np
import pytest
from xdsl.ir import Operation

import irc
from irc.targets import (
    Availability,
    Support,
    Target,
    TargetError,
    base,
    get_target,
    load_plugin,
    register,
    registered_targets,
)
from irc.targets.reference.target import ReferenceExecutable, ReferenceRuntime, ReferenceTarget

ROOT = Path(__file__).resolve().parents[1]
TESTPLUGIN = "tests.plugins.testplugin:TestPluginTarget"


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, Target]:
    """A private registry holding only the reference target; the real one is restored after."""
    reference = get_target("reference")
    monkeypatch.delenv(base.PLUGINS_ENV, raising=False)
    private: dict[str, Target] = {"reference": reference}
    monkeypatch.setattr(base, "_registered", private)
    monkeypatch.setattr(base, "_broken", {})
    monkeypatch.setattr(base, "_discovered", True)
    return private


PLUGIN_MODULE = '''
from irc.targets import Support, Target, TargetRuntime


class Runtime(TargetRuntime):
    def load(self, executable):
        raise NotImplementedError


class Alpha(Target):
    name = "alpha"

    def supports(self, op):
        return Support.no("op", "alpha runs nothing")

    def runtime(self):
        return Runtime()


class Beta(Alpha):
    name = "beta"


class FakeAlpha(Alpha):
    """Another class under the name 'alpha': a clash."""


class Nameless(Alpha):
    name = ""


class Broken(Alpha):
    name = "broken"

    def __init__(self):
        raise RuntimeError("no device")


INSTANCE = Beta()


def factory():
    return Beta()


def bad_factory():
    return 42


NOT_A_TARGET = 3
'''


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of an importable module defining plugin targets (fresh for each test)."""
    name = f"irc_test_plugins_{os.getpid()}_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(PLUGIN_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


# ---- Answers ------------------------------------------------------------------


def test_support_yes_and_no() -> None:
    yes = Support.yes()
    assert yes
    assert (yes.ok, yes.code, yes.reason) == (True, "", "")
    no = Support.no("dtype", "f16 is not supported")
    assert not no
    assert (no.code, no.reason) == ("dtype", "f16 is not supported")


def test_support_needs_a_known_reason_code() -> None:
    with pytest.raises(ValueError, match=r"unknown reason code 'nope' \(one of op, dtype, "):
        Support.no("nope", "why")


def test_every_reason_code_is_accepted() -> None:
    for code in base.REASON_CODES:
        assert Support.no(code, "x").code == code


def test_availability_is_truthy_when_ok() -> None:
    assert Availability(True)
    down = Availability(False, "no OpenCL platform")
    assert not down
    assert down.reason == "no OpenCL platform"


# ---- Registry -----------------------------------------------------------------


def test_reference_is_registered_through_its_entry_point() -> None:
    names = {entry.name: entry.value for entry in entry_points(group=base.ENTRY_POINT_GROUP)}
    assert names["reference"] == "irc.targets.reference.target:ReferenceTarget"
    target = get_target("reference")
    assert isinstance(target, ReferenceTarget)
    assert registered_targets()["reference"] is target


def test_importing_the_reference_target_registers_nothing() -> None:
    code = (
        "import irc.targets.reference.target\n"
        "from irc.targets import base\n"
        "print(sorted(base._registered))\n"
        "print(sorted(base.registered_targets()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    registered, discovered = done.stdout.splitlines()
    assert registered == "[]"
    assert "'reference'" in discovered


def test_unknown_target_names_the_known_ones(registry: dict[str, Target]) -> None:
    with pytest.raises(TargetError, match=r"^unknown target 'gpu' \(known targets: reference\)$"):
        get_target("gpu")
    registry.clear()
    with pytest.raises(TargetError, match=r"\(known targets: none\)"):
        get_target("gpu")


def test_register_a_class_and_an_instance(registry: dict[str, Target], plugin_module: str) -> None:
    module = __import__(plugin_module)
    alpha = register(module.Alpha)
    assert isinstance(alpha, module.Alpha)
    assert get_target("alpha") is alpha
    assert register(module.INSTANCE) is module.INSTANCE
    assert get_target("beta") is module.INSTANCE
    assert set(registered_targets()) == {"reference", "alpha", "beta"}


def test_registering_the_same_type_again_keeps_the_first(
    registry: dict[str, Target], plugin_module: str
) -> None:
    module = __import__(plugin_module)
    first = register(module.Alpha)
    assert register(module.Alpha) is first
    assert register(module.Alpha()) is first
    replaced = register(module.Alpha(), replace=True)
    assert replaced is not first
    assert get_target("alpha") is replaced


def test_name_clash(registry: dict[str, Target], plugin_module: str) -> None:
    module = __import__(plugin_module)
    register(module.Alpha)
    with pytest.raises(
        TargetError, match=r"^a target named 'alpha' is already registered \(Alpha\)$"
    ):
        register(module.FakeAlpha)
    with pytest.raises(TargetError, match="a target named 'reference' is already registered"):
        register(type("Reference", (module.Alpha,), {"name": "reference"}))
    assert isinstance(get_target("reference"), ReferenceTarget)


def test_register_refuses_what_is_not_a_target(
    registry: dict[str, Target], plugin_module: str
) -> None:
    module = __import__(plugin_module)
    with pytest.raises(TargetError, match="is not an irc Target"):
        register(42)  # type: ignore[arg-type]
    with pytest.raises(TargetError, match=r"^target Nameless has no name$"):
        register(module.Nameless)
    with pytest.raises(
        TargetError, match=r"^cannot instantiate target Broken: RuntimeError: no device$"
    ):
        register(module.Broken)


@pytest.mark.parametrize(
    ("attr", "expected"), [("Alpha", "alpha"), ("INSTANCE", "beta"), ("factory", "beta")]
)
def test_load_plugin_class_instance_or_factory(
    registry: dict[str, Target], plugin_module: str, attr: str, expected: str
) -> None:
    target = load_plugin(f"{plugin_module}:{attr}")
    assert target.name == expected
    assert get_target(expected) is target


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", r"^bad plugin 'no_colon': expected module:attr$"),
        (":Attr", r"^bad plugin ':Attr': expected module:attr$"),
        ("module:", r"^bad plugin 'module:': expected module:attr$"),
        (
            "irc_no_such_module:X",
            r"^cannot load plugin 'irc_no_such_module:X': ModuleNotFoundError: "
            r"No module named 'irc_no_such_module'$",
        ),
        ("{mod}:Missing", r"^cannot load plugin '{mod}:Missing': AttributeError: "),
        ("{mod}:NOT_A_TARGET", r"^plugin '{mod}:NOT_A_TARGET' is not a Target class, instance"),
        ("{mod}:bad_factory", r"^plugin '{mod}:bad_factory' returned int, not an irc Target$"),
        ("{mod}:Broken", r"^cannot instantiate target Broken: RuntimeError: no device$"),
    ],
)
def test_bad_plugin_specs(
    registry: dict[str, Target], plugin_module: str, spec: str, message: str
) -> None:
    with pytest.raises(TargetError, match=message.replace("{mod}", plugin_module)):
        load_plugin(spec.replace("{mod}", plugin_module))


def test_a_broken_entry_point_breaks_only_its_own_target(
    monkeypatch: pytest.MonkeyPatch, registry: dict[str, Target]
) -> None:
    broken = EntryPoint("broken", "irc_no_such_module:Target", base.ENTRY_POINT_GROUP)
    reference = next(e for e in entry_points(group=base.ENTRY_POINT_GROUP) if e.name == "reference")
    monkeypatch.setattr(base, "entry_points", lambda group: [broken, reference])
    monkeypatch.setattr(base, "_discovered", False)
    registry.clear()
    assert isinstance(get_target("reference"), ReferenceTarget)
    with pytest.raises(TargetError, match=r"^cannot load target 'broken' \(irc_no_such_module:"):
        get_target("broken")
    assert set(registered_targets()) == {"reference"}


def test_irc_plugins_in_a_subprocess(tmp_path: Path) -> None:
    """IRC_PLUGINS loads the test plugin from the repository root, although the script's
    own directory (not the working directory) is on sys.path."""
    script = tmp_path / "list_targets.py"
    script.write_text(
        textwrap.dedent(
            """\
            import sys
            from irc.targets import get_target, registered_targets
            print(sorted({"reference", "testplugin"} & set(registered_targets())))
            target = get_target("testplugin")
            print(type(target).__module__, target.preferred_layout, target.runs_quantized)
            """
        )
    )
    env = {**os.environ, "IRC_PLUGINS": f" {TESTPLUGIN} ,"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['reference', 'testplugin']",
        "tests.plugins.testplugin NCHW False",
    ]


def test_a_bad_irc_plugins_spec_is_an_error_in_a_subprocess(tmp_path: Path) -> None:
    code = "from irc.targets import get_target\nget_target('reference')\n"
    env = {**os.environ, "IRC_PLUGINS": "irc_no_such_module:T"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert (
        "TargetError: cannot load plugin 'irc_no_such_module:T': ModuleNotFoundError" in done.stderr
    )


def test_the_test_plugin_is_loadable_from_the_repository_root(
    registry: dict[str, Target], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    target = load_plugin(TESTPLUGIN)
    assert target.name == "testplugin"
    assert load_plugin(TESTPLUGIN) is target  # idempotent
    assert get_target("testplugin") is target
    assert target.preferred_layout == "NCHW"
    assert not target.runs_quantized


# ---- The reference target -----------------------------------------------------

OPS = """\
!q = !quant.uniform<i8:f32, 0.5:-3>
!q16 = !quant.uniform<i16:f32, 0.5:0>
!qs = !quant.uniform<i8:f32, 0.00390625:-128>
func.func @main(%x: tensor<1x4x4x2xf32>, %q: tensor<4x!q>, %q16: tensor<4x!q16>,
                %d: tensor<?x4xf32>) -> tensor<4x!q> {
  %w = nn.constant dense<1.0> : tensor<3x1x1x2xf32>
  %conv = nn.conv2d %x, %w layout = "NHWC"
      : tensor<1x4x4x2xf32>, tensor<3x1x1x2xf32> -> tensor<1x4x4x3xf32>
  %relu = nn.relu %d : tensor<?x4xf32> -> tensor<?x4xf32>
  %qadd = nn.add %q, %q : tensor<4x!q>, tensor<4x!q> -> tensor<4x!q>
  %q16add = nn.add %q16, %q16 : tensor<4x!q16>, tensor<4x!q16> -> tensor<4x!q16>
  %qsoft = nn.softmax %q axis = 0 : tensor<4x!q> -> tensor<4x!qs>
  %badsoft = nn.softmax %q axis = 0 : tensor<4x!q> -> tensor<4x!q>
  %deq = quant.dcast %q : tensor<4x!q> to tensor<4xf32>
  %call = func.call @helper(%deq) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %qadd : tensor<4x!q>
}
func.func private @helper(%y: tensor<4xf32>) -> tensor<4xf32>
"""


def ops_by_result() -> dict[str, Operation]:
    module = irc.parse_module(OPS)
    main = module.body.block.first_op
    assert main is not None
    found: dict[str, Operation] = {}
    for op in main.walk():
        if op.results and op.results[0].name_hint:
            found[op.results[0].name_hint] = op
    return found


PER_AXIS = """\
!qx = !quant.uniform<i8:f32, 0.5:-1>
!qw = !quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>
!qb = !quant.uniform<i32:f32:0, {0.05, 0.1, 0.15}>
!qy = !quant.uniform<i8:f32, 0.25:3>
func.func @main(%x: tensor<1x4x4x2x!qx>, %wa: tensor<3x1x1x2x!qw>) -> tensor<1x4x4x3x!qy> {
  %w = nn.constant dense<[[[[1, 2]]], [[[3, 4]]], [[[5, 6]]]]> : tensor<3x1x1x2xi8>
      -> tensor<3x1x1x2x!qw>
  %b = nn.constant dense<[1, 2, 3]> : tensor<3xi32> -> tensor<3x!qb>
  %y = nn.conv2d %x, %w, %b layout = "NHWC"
      : tensor<1x4x4x2x!qx>, tensor<3x1x1x2x!qw>, tensor<3x!qb> -> tensor<1x4x4x3x!qy>
  %z = nn.conv2d %x, %wa, %b layout = "NHWC" activation = "relu6"
      : tensor<1x4x4x2x!qx>, tensor<3x1x1x2x!qw>, tensor<3x!qb> -> tensor<1x4x4x3x!qy>
  func.return %y : tensor<1x4x4x3x!qy>
}
"""


def test_reference_supports_quantized_convolutions() -> None:
    """Constant or argument per-axis filters: supports() lowers a copy of the op alone."""
    module = irc.parse_module(PER_AXIS)
    convs = [op for op in module.walk() if op.name == "nn.conv2d"]
    assert [ReferenceTarget().supports(op) for op in convs] == [Support.yes()] * 2


def test_reference_target_properties() -> None:
    target = ReferenceTarget()
    assert target.name == "reference"
    assert target.preferred_layout is None
    assert target.runs_quantized is True
    assert target.lowering_passes() == "lower-quantized"
    assert target.available()
    assert target.cost([]) is None
    assert isinstance(target.runtime(), ReferenceRuntime)


@pytest.mark.parametrize("name", ["w", "conv", "relu", "qadd", "qsoft", "deq"])
def test_reference_supports(name: str) -> None:
    assert ReferenceTarget().supports(ops_by_result()[name]) == Support.yes()


@pytest.mark.parametrize(
    ("name", "code", "reason"),
    [
        ("call", "op", "reference: 'func.call' is not an nn or quant op"),
        (
            "q16add",
            "quantized",
            "lower-quantized: only 8-bit quantized tensors are supported, got i16 storage",
        ),
        ("badsoft", "quantized", "reference: quantized softmax results have scale 1/256"),
    ],
)
def test_reference_refuses(name: str, code: str, reason: str) -> None:
    answer = ReferenceTarget().supports(ops_by_result()[name])
    assert not answer
    assert answer.code == code
    assert answer.reason.startswith(reason)


def test_reference_refuses_ops_of_other_dialects() -> None:
    module = irc.parse_module(OPS)
    target = ReferenceTarget()
    for op in module.walk():
        if not op.name.startswith(("nn.", "quant.")):
            assert target.supports(op).code == "op", op.name


def test_supports_does_not_modify_the_module() -> None:
    module = irc.parse_module(OPS)
    before = str(module)
    target = ReferenceTarget()
    for op in list(module.walk()):
        target.supports(op)
    assert str(module) == before


EXECUTABLE = """\
!q = !quant.uniform<i8:f32, 0.5:-3>
delegate.executable private @main_reference_0 target("reference") {
  func.func @entry(%x: tensor<4x!q>, %y: tensor<4xf32>) -> (tensor<4x!q>, tensor<4xf32>) {
    %s = nn.add %x, %x : tensor<4x!q>, tensor<4x!q> -> tensor<4x!q>
    %r = nn.relu %y : tensor<4xf32> -> tensor<4xf32>
    func.return %s, %r : tensor<4x!q>, tensor<4xf32>
  }
  func.func @other(%y: tensor<4xf32>) -> tensor<4xf32> {
    %n = nn.neg %y : tensor<4xf32> -> tensor<4xf32>
    func.return %n : tensor<4xf32>
  }
  func.func private @hidden(%y: tensor<4xf32>) -> tensor<4xf32> {
    func.return %y : tensor<4xf32>
  }
}
"""


def test_reference_runtime_loads_an_unlowered_executable() -> None:
    module = irc.parse_module(EXECUTABLE)
    before = str(module)
    executable = module.body.block.first_op
    assert executable is not None
    loaded = ReferenceTarget().runtime().load(executable)
    assert str(module) == before  # lowered on a clone
    assert isinstance(loaded, ReferenceExecutable)
    assert set(loaded.programs) == {"entry", "other"}
    assert not loaded.accepts_device_values()
    x = np.array([-3, 0, 10, 127], np.int8)
    y = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    s, r = loaded.execute("entry", [x, y])
    # (x - zp) * 2 + zp with zp = -3, saturated to int8
    np.testing.assert_array_equal(s, np.array([-3, 3, 23, 127], np.int8))
    np.testing.assert_array_equal(r, np.maximum(y, 0))
    (n,) = loaded.execute("other", (y,))
    np.testing.assert_array_equal(n, -y)


def test_reference_runtime_unknown_entry_and_bad_arguments() -> None:
    module = irc.parse_module(EXECUTABLE)
    loaded = ReferenceRuntime().load(module.body.block.first_op)
    with pytest.raises(KeyError, match=r"no entry @hidden in executable @main_reference_0"):
        loaded.execute("hidden", [])
    with pytest.raises(irc.InputError, match="@other takes 1 argument, got 2"):
        loaded.execute("other", [np.zeros(4, np.float32)] * 2)
