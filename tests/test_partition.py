"""`partition`: maximal acyclic clusters per target, wrapped in `delegate.region`s.

* Models: every shared model (../shared/models; skipped cleanly without them) is partitioned
  for `testplugin` (and for testplugin + reference); the result verifies, every value is
  defined before its use, the contracted graph is acyclic, the JSON report accounts for every
  op exactly once, and running the module with its regions inlined back gives outputs
  identical to the unpartitioned run (`irc.run`). End to end, `outline-delegates` turns the
  regions into dispatches that run on testplugin's runtime, again with identical outputs.
* Properties on random DAGs with random capabilities: verification, dominance, acyclicity of
  every region against the original graph, every region op supported by its target, every
  supported op delegated when nothing forbids it, min-ops / max-regions respected, and with
  one target the fewest regions possible (the most target runs on any path).
* Semantics: diamonds, merging across an independent host op, priority, fallback to the next
  target, pins, deny-ops, unavailable targets, the cost hook, constants, rescheduling,
  strict mode and option errors.
* Performance: a generated 5,000-op graph (printed with ``pytest -s``; the bound asserted
  is generous, benchmarks/partition.py measures it).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.arg_spec import parse_spec

import irc
from irc.context import get_all_passes, make_context
from irc.diagnostics import IrcDiagnosticError, capture_diagnostics, verify_module
from irc.dialects import delegate, nn
from irc.passes.partition import PartitionPass, PartitionReport, partition
from irc.targets import Availability, Support, Target, TargetRuntime, load_plugin, register

pytestmark = pytest.mark.private_cache  # CPU builds shared with the run's other modules

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
MANIFEST = MODELS / "manifest.json"
TESTPLUGIN = "tests.plugins.testplugin:TestPluginTarget"


def _entries() -> list[dict[str, Any]]:
    if not MANIFEST.is_file():
        return []
    return json.loads(MANIFEST.read_text())["models"]


ENTRIES = _entries()


# ---- Test targets ------------------------------------------------------------------------------


class _Fake(Target):
    """Takes the ops named in OPS (float or not); runs nothing."""

    OPS: ClassVar[tuple[str, ...]] = ()

    def supports(self, op: Operation) -> Support:
        if op.name in self.OPS:
            return Support.yes()
        return Support.no("op", f"{self.name}: '{op.name}' is not supported")

    def runtime(self) -> TargetRuntime:
        raise NotImplementedError


class PtA(_Fake):
    name = "pt_a"
    OPS = ("nn.add", "nn.relu", "nn.tanh", "nn.split", "nn.mul")


class PtB(_Fake):
    name = "pt_b"
    OPS = ("nn.add", "nn.relu", "nn.softmax", "nn.exp")


class PtCost(_Fake):
    name = "pt_cost"
    OPS = PtA.OPS

    def cost(self, ops: Sequence[Operation]) -> float | None:
        return float(len(ops)) ** 2


class PtOff(_Fake):
    name = "pt_off"
    OPS = PtA.OPS

    def available(self) -> Availability:
        return Availability(False, "no device here")


class PtBroken(_Fake):
    name = "pt_broken"

    def supports(self, op: Operation) -> Support:
        raise RuntimeError("capability table missing")


class _Tagged(Target):
    """Takes the ops whose `tag` attribute contains its letter (random capabilities)."""

    LETTER: ClassVar[str] = ""

    def supports(self, op: Operation) -> Support:
        tag = op.attributes.get("tag")
        if isinstance(tag, StringAttr) and self.LETTER in tag.data:
            return Support.yes()
        return Support.no("op", f"{self.name}: untagged")

    def runtime(self) -> TargetRuntime:
        raise NotImplementedError


class TagA(_Tagged):
    name = "tag_a"
    LETTER = "a"


class TagB(_Tagged):
    name = "tag_b"
    LETTER = "b"


for _target in (PtA, PtB, PtCost, PtOff, PtBroken, TagA, TagB):
    register(_target)


@pytest.fixture(scope="module")
def testplugin() -> str:
    return load_plugin(TESTPLUGIN).name


# ---- Helpers -----------------------------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    return irc.parse_module(text)


def run_partition(module: ModuleOp, targets: Sequence[str], **options: Any) -> PartitionReport:
    """Partition (diagnostics captured), then check everything that must always hold."""
    original = module.clone()
    with capture_diagnostics() as diagnostics:
        report = partition(module, targets, **options)
    assert [d.message for d in diagnostics] == [f.summary() for f in report.functions]
    verify_module(module)
    check_dominance(module)
    check_accounting(original, report)
    check_acyclic(original, report)
    return report


def check_dominance(op: Operation, visible: frozenset[SSAValue] = frozenset()) -> None:
    """Every operand is defined earlier in its block or visible from an enclosing one."""
    for region in op.regions:
        for block in region.blocks:
            defined = set() if op.has_trait(IsolatedFromAbove) else set(visible)
            defined.update(block.args)
            for inner in block.ops:
                for operand in inner.operands:
                    assert operand in defined, f"{inner.name} uses a value defined after it"
                check_dominance(inner, frozenset(defined))
                defined.update(inner.results)


def _top_level_ops(module: ModuleOp, name: str) -> list[Operation]:
    function = next(f for f in module.ops if isinstance(f, FuncOp) and f.sym_name.data == name)
    return [op for block in function.body.blocks for op in block.ops]


def check_accounting(original: ModuleOp, report: PartitionReport) -> None:
    """Every op of every function appears exactly once in the report, with its kind."""
    for function in report.functions:
        ops = _top_level_ops(original, function.name)
        entries = [e for r in function.regions for e in r.ops]
        entries += [h.op for h in function.host]
        entries += [c.op for c in function.constants]
        entries += function.terminators
        assert sorted(e.index for e in entries) == list(range(len(ops)))
        for entry in entries:
            assert ops[entry.index].name == entry.op
        for host in function.host:
            assert set(host.reasons) == set(function.targets)
        json.dumps(function.to_json())  # serialisable


def check_acyclic(original: ModuleOp, report: PartitionReport) -> None:
    """Contracting each region of the report in the ORIGINAL graph leaves it acyclic: no
    path leaves a region and comes back into it."""
    for function in report.functions:
        ops = _top_level_ops(original, function.name)
        unit = {op: ("op", i) for i, op in enumerate(ops)}
        for region in function.regions:
            for entry in region.ops:
                unit[ops[entry.index]] = ("region", region.id)
        edges: dict[tuple[str, int], set[tuple[str, int]]] = {u: set() for u in unit.values()}
        for op in ops:
            for operand in op.operands:
                source = unit.get(operand.owner)  # type: ignore[arg-type]
                if source is not None and source != unit[op]:
                    edges[source].add(unit[op])
        indegree = dict.fromkeys(edges, 0)
        for targets in edges.values():
            for t in targets:
                indegree[t] += 1
        ready = [u for u, d in indegree.items() if d == 0]
        seen = 0
        while ready:
            u = ready.pop()
            seen += 1
            for t in edges[u]:
                indegree[t] -= 1
                if indegree[t] == 0:
                    ready.append(t)
        assert seen == len(edges), f"@{function.name}: a region is part of a cycle"


def region_lower_bound(module: ModuleOp, letter: str) -> int:
    """The most runs of tagged ops (separated by untagged ones) on any path of @main."""
    runs: dict[Operation, tuple[int, bool]] = {}  # op -> (runs so far, ends in a run)
    for op in _top_level_ops(module, "main"):
        if isinstance(op, nn.ConstantOp | ReturnOp):
            continue
        tag = op.attributes.get("tag")
        tagged = isinstance(tag, StringAttr) and letter in tag.data
        before = [runs[o.owner] for o in op.operands if o.owner in runs]  # type: ignore[index]
        if tagged:
            count = max([1, *(n if in_run else n + 1 for n, in_run in before)])
        else:
            count = max([0, *(n for n, _ in before)])
        runs[op] = (count, tagged)
    return max((n for n, _ in runs.values()), default=0)


def inline_regions(module: ModuleOp) -> None:
    """Replace every delegate.region by its body (the inverse of partitioning)."""
    for region in [op for op in module.walk() if isinstance(op, delegate.RegionOp)]:
        block = region.body.block
        parent = region.parent_block()
        assert parent is not None
        for arg, capture in zip(block.args, region.captures, strict=True):
            arg.replace_all_uses_with(capture)
        terminator = block.last_op
        assert isinstance(terminator, delegate.YieldOp)
        for result, value in zip(region.outputs, terminator.values, strict=True):
            result.replace_all_uses_with(value)
        for op in list(block.ops)[:-1]:
            op.detach()
            parent.insert_op_before(op, region)
        region.detach()
        region.erase(safe_erase=False)


def regions_of(module: ModuleOp) -> list[delegate.RegionOp]:
    return [op for op in module.walk() if isinstance(op, delegate.RegionOp)]


def region_ops(region: delegate.RegionOp) -> list[str]:
    return [op.name for op in region.body.block.ops][:-1]


# ---- Graph builders ----------------------------------------------------------------------------

T4 = TensorType(f32, [4])


def _function(arg_count: int, build: Any, name: str = "main") -> ModuleOp:
    block = Block(arg_types=[T4] * arg_count)
    results = build(block)
    block.add_op(ReturnOp(*results))
    function = FuncOp(name, ([T4] * arg_count, [r.type for r in results]), Region(block))
    return ModuleOp([function])


def _add(block: Block, op: Operation, tag: str | None = None) -> SSAValue:
    if tag is not None:
        op.attributes["tag"] = StringAttr(tag)
    block.add_op(op)
    return op.results[0]


def random_dag(seed: int, size: int) -> ModuleOp:
    """A random DAG of unary and binary ops, mostly local edges plus a few long ones, with
    random `tag`s (which of tag_a / tag_b take each op) and a few constants."""
    rng = random.Random(seed)

    def build(block: Block) -> list[SSAValue]:
        values: list[SSAValue] = list(block.args)
        consumed: set[SSAValue] = set()

        def pick() -> SSAValue:
            if rng.random() < 0.1:
                value = rng.choice(values)
            else:
                value = rng.choice(values[-6:])
            consumed.add(value)
            return value

        for _ in range(size):
            tag = rng.choice(["a", "a", "b", "ab", "ab", ""])
            kind = rng.random()
            if kind < 0.08:
                data = np.full((4,), rng.random(), np.float32)
                values.append(_add(block, nn.ConstantOp.from_array(data)))
            elif kind < 0.5:
                values.append(_add(block, nn.ReluOp.make(pick()), tag))
            else:
                values.append(_add(block, nn.AddOp.make(pick(), pick()), tag))
        outputs = [v for v in values[len(block.args) :] if v not in consumed]
        return outputs[-3:] or [values[-1]]

    return _function(2, build)


def synthetic_graph(num_ops: int, seed: int = 0) -> ModuleOp:
    """A CNN-like chain of residual blocks: add / relu / clip (testplugin takes them) and
    mul / sigmoid (it does not), with constants; `num_ops` ops besides the return."""
    rng = random.Random(seed)
    t = TensorType(f32, [1, 16])
    block = Block(arg_types=[t])
    x: SSAValue = block.args[0]
    recent: list[SSAValue] = [x]
    count = 0
    while count < num_ops - 1:
        roll = rng.random()
        if roll < 0.1:
            c = _add(block, nn.ConstantOp.from_array(np.full((1, 16), 0.5, np.float32)))
            x = _add(block, nn.AddOp.make(x, c))
            count += 2
        elif roll < 0.3:
            x = _add(block, nn.AddOp.make(x, rng.choice(recent[-8:])))
            count += 1
        elif roll < 0.45:
            x = _add(block, nn.MulOp.make(x, rng.choice(recent[-4:])))
            count += 1
        elif roll < 0.55:
            x = _add(block, nn.SigmoidOp.make(x))
            count += 1
        elif roll < 0.8:
            x = _add(block, nn.ReluOp.make(x))
            count += 1
        else:
            x = _add(block, nn.ClipOp.make(x, min=-1.0, max=1.0))
            count += 1
        recent.append(x)
    block.add_op(ReturnOp(x))
    return ModuleOp([FuncOp("main", ([t], [t]), Region(block))])


# ---- Registration ------------------------------------------------------------------------------


def test_pass_is_registered_under_its_design_name() -> None:
    assert get_all_passes()["partition"]() is PartitionPass
    spec = parse_spec('partition{targets=pt_a,pt_b min-ops=3 deny-ops=softmax place="x:pt_a"}')
    assert PartitionPass.from_pass_spec(spec) == PartitionPass(
        targets=("pt_a", "pt_b"), min_ops=3, deny_ops=("softmax",), place=("x:pt_a",)
    )


# ---- Clustering semantics ----------------------------------------------------------------------

DIAMOND = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  %c = nn.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
  %d = nn.add %b, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %e = nn.relu %d : tensor<4xf32> -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}
"""


def test_diamond_through_a_host_op_is_split() -> None:
    module = parse(DIAMOND)
    report = run_partition(module, ["pt_a"])
    assert [[o.index for o in r.ops] for r in report.functions[0].regions] == [[0, 1], [3, 4]]
    assert [h.op.op for h in report.functions[0].host] == ["nn.sigmoid"]
    assert report.functions[0].summary() == "@main: pt_a: 4 of 5 ops in 2 regions; host: 1 op"


def test_clusters_grow_across_an_independent_host_op() -> None:
    # a, b, d on pt_a and c on the host, c independent of a and b: one region, not the two
    # contiguous runs {a} and {b, d}; it sits where d was, after c.
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
          %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %c = nn.sigmoid %y : tensor<4xf32> -> tensor<4xf32>
          %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
          %d = nn.add %b, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          func.return %d : tensor<4xf32>
        }
        """
    )
    run_partition(module, ["pt_a"])
    (region,) = regions_of(module)
    assert region_ops(region) == ["nn.add", "nn.relu", "nn.add"]
    ops = [op.name for op in _top_level_ops(module, "main")]
    assert ops == ["nn.sigmoid", "delegate.region", "func.return"]


def test_host_user_of_an_early_result_moves_after_the_region() -> None:
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
          %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %h = nn.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
          %b = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
          %c = nn.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          func.return %h, %c : tensor<4xf32>, tensor<4xf32>
        }
        """
    )
    run_partition(module, ["pt_a"])
    (region,) = regions_of(module)
    assert len(region.outputs) == 2  # %a for the sigmoid, %c for the return
    ops = [op.name for op in _top_level_ops(module, "main")]
    assert ops == ["delegate.region", "nn.sigmoid", "func.return"]


def test_uses_inside_host_ops_with_regions_are_dependencies() -> None:
    # The scf.execute_region reads %a inside its body: it must follow the region that
    # computes %a and read the region's result, while %c and %d form a second region.
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
          %r = "scf.execute_region"() ({
            %s = nn.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
            scf.yield %s : tensor<4xf32>
          }) : () -> tensor<4xf32>
          %c = nn.add %r, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %d = nn.relu %c : tensor<4xf32> -> tensor<4xf32>
          func.return %d : tensor<4xf32>
        }
        """
    )
    report = run_partition(module, ["pt_a"])
    assert [[o.index for o in r.ops] for r in report.functions[0].regions] == [[0, 1], [3, 4]]
    first, _ = regions_of(module)
    (sigmoid,) = [op for op in module.walk() if isinstance(op, nn.SigmoidOp)]
    assert sigmoid.operands[0] is first.outputs[0]


def test_priority_order_decides_between_targets() -> None:
    text = """
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %r = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
      %s = nn.softmax %r axis = 0 : tensor<4xf32> -> tensor<4xf32>
      %e = nn.exp %s : tensor<4xf32> -> tensor<4xf32>
      func.return %e : tensor<4xf32>
    }
    """
    module = parse(text)
    run_partition(module, ["pt_a", "pt_b"])
    assert [(r.target.data, region_ops(r)) for r in regions_of(module)] == [
        ("pt_a", ["nn.add", "nn.relu"]),
        ("pt_b", ["nn.softmax", "nn.exp"]),
    ]
    module = parse(text)
    run_partition(module, ["pt_b", "pt_a"])
    assert [r.target.data for r in regions_of(module)] == ["pt_b"]


def test_a_region_below_min_ops_falls_back_to_the_next_target() -> None:
    # The add is pt_a's alone (1 op < min-ops); pt_b takes it with the softmax and exp.
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %s = nn.softmax %x axis = 0 : tensor<4xf32> -> tensor<4xf32>
          %a = nn.add %s, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %e = nn.exp %a : tensor<4xf32> -> tensor<4xf32>
          func.return %e : tensor<4xf32>
        }
        """
    )
    report = run_partition(module, ["pt_a", "pt_b"], min_ops=2)
    ((target, ops),) = [(r.target.data, region_ops(r)) for r in regions_of(module)]
    assert (target, ops) == ("pt_b", ["nn.softmax", "nn.add", "nn.exp"])
    assert report.functions[0].host == []


def test_min_ops_leaves_small_regions_on_the_host_with_a_reason() -> None:
    # min-ops=3: {a, b} and {d, e} are too small, but b may join d and e (b's input %a
    # leaves its region for the sigmoid anyway): one region of 3, a stays on the host.
    module = parse(DIAMOND)
    report = run_partition(module, ["pt_a"], min_ops=3)
    function = report.functions[0]
    assert [[o.index for o in r.ops] for r in function.regions] == [[1, 3, 4]]
    reasons = {h.op.index: h.reasons["pt_a"] for h in function.host}
    assert reasons[0].code == "min-ops"
    assert reasons[0].reason == "a region of 1 op is below min-ops=3"
    assert reasons[2].code == "op"
    module = parse(DIAMOND)
    report = run_partition(module, ["pt_a"], min_ops=4)
    assert report.functions[0].regions == []
    assert len(report.functions[0].host) == 5


def test_max_regions_keeps_the_largest() -> None:
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
          %c = nn.sigmoid %b : tensor<4xf32> -> tensor<4xf32>
          %d = nn.add %c, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %e = nn.relu %d : tensor<4xf32> -> tensor<4xf32>
          %f = nn.tanh %e : tensor<4xf32> -> tensor<4xf32>
          func.return %f : tensor<4xf32>
        }
        """
    )
    report = run_partition(module, ["pt_a"], max_regions=1)
    ((region),) = report.functions[0].regions
    assert [o.index for o in region.ops] == [3, 4, 5]
    refusal = {h.op.index: h.reasons["pt_a"] for h in report.functions[0].host}[0]
    assert refusal.code == "max-regions"
    assert "keeps its 1 largest region (max-regions=1); this one has 2 ops" in refusal.reason


def test_deny_ops_pins_and_attributes() -> None:
    text = """
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("stem")
      %r = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
      %s = nn.softmax %r axis = 0 : tensor<4xf32> -> tensor<4xf32>
      %e = nn.exp %s {irc.target = "pt_b"} : tensor<4xf32> -> tensor<4xf32>
      %t = nn.relu %e {irc.target = "host"} : tensor<4xf32> -> tensor<4xf32>
      func.return %t : tensor<4xf32>
    }
    """
    module = parse(text)
    report = run_partition(module, ["pt_a", "pt_b"], deny_ops=["softmax"], min_ops=1)
    host = {h.op.index: h for h in report.functions[0].host}
    assert host[2].reasons["pt_b"].code == "denied"
    assert host[4].reasons["pt_a"] == host[4].reasons["pt_b"]
    assert host[4].reasons["pt_a"].reason == "pinned to the host"
    assert [(r.target, [o.index for o in r.ops]) for r in report.functions[0].regions] == [
        ("pt_a", [0, 1]),
        ("pt_b", [3]),
    ]
    # place= wins over the attribute and names ops by name location or by index.
    module = parse(text)
    report = run_partition(
        module, ["pt_a", "pt_b"], min_ops=1, place=["stem:pt_b", "#1:pt_b", "#4:pt_b"]
    )
    regions = [(r.target, [o.index for o in r.ops]) for r in report.functions[0].regions]
    assert regions == [("pt_b", [0, 1, 2, 3, 4])]
    assert report.functions[0].regions[0].ops[0].name == "stem"


def test_unavailable_targets_are_skipped_with_their_reason() -> None:
    module = parse(DIAMOND)
    report = run_partition(module, ["pt_off", "pt_a"])
    function = report.functions[0]
    assert {r.target for r in function.regions} == {"pt_a"}
    assert function.host[0].reasons["pt_off"].code == "unavailable"
    assert function.host[0].reasons["pt_off"].reason == "no device here"
    assert function.summary() == (
        "@main: pt_off: unavailable (no device here); pt_a: 4 of 5 ops in 2 regions; host: 1 op"
    )
    assert report.targets[0] == {"name": "pt_off", "available": False, "reason": "no device here"}


def test_independent_clusters_share_a_region_unless_the_cost_hook_says_otherwise() -> None:
    text = """
    func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %a = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
      %b = nn.tanh %a : tensor<4xf32> -> tensor<4xf32>
      %c = nn.relu %y : tensor<4xf32> -> tensor<4xf32>
      %d = nn.tanh %c : tensor<4xf32> -> tensor<4xf32>
      func.return %b, %d : tensor<4xf32>, tensor<4xf32>
    }
    """
    module = parse(text)
    run_partition(module, ["pt_a"])
    assert [len(region_ops(r)) for r in regions_of(module)] == [4]
    module = parse(text)
    run_partition(module, ["pt_cost"])  # cost n^2: 2^2 + 2^2 < 4^2
    assert [len(region_ops(r)) for r in regions_of(module)] == [2, 2]


def test_constants_move_into_regions_or_are_cloned() -> None:
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
          %only = nn.constant dense<1.0> : tensor<4xf32>
          %shared = nn.constant dense<2.0> : tensor<4xf32>
          %a = nn.add %x, %only : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %b = nn.add %a, %shared : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %h = nn.sigmoid %b : tensor<4xf32> -> tensor<4xf32>
          %c = nn.add %h, %shared : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %d = nn.relu %c : tensor<4xf32> -> tensor<4xf32>
          %e = nn.add %h, %shared : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          func.return %d, %shared : tensor<4xf32>, tensor<4xf32>
        }
        """
    )
    report = run_partition(module, ["pt_a"])
    function = report.functions[0]
    assert [(c.op.index, c.regions, c.host) for c in function.constants] == [
        (0, [0], False),
        (1, [0, 1], True),
    ]
    first, second = regions_of(module)
    assert len(first.captures) == len(second.captures) == 1  # no constant is captured
    assert region_ops(first) == ["nn.constant", "nn.constant", "nn.add", "nn.add"]
    assert region_ops(second) == ["nn.constant", "nn.add", "nn.relu", "nn.add"]
    top = [op.name for op in _top_level_ops(module, "main")]
    assert top.count("nn.constant") == 1  # %shared stays for the return


def test_multiple_outputs_and_ops_with_several_results() -> None:
    module = parse(
        """
        func.func @main(%x: tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
          %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
          %s, %t = nn.split %a axis = 0 sizes = [2, 2]
            : tensor<4xf32> -> tensor<2xf32>, tensor<2xf32>
          %u = nn.tanh %s : tensor<2xf32> -> tensor<2xf32>
          %v = nn.sigmoid %t : tensor<2xf32> -> tensor<2xf32>
          func.return %u, %v : tensor<2xf32>, tensor<2xf32>
        }
        """
    )
    report = run_partition(module, ["pt_a"])
    (region,) = regions_of(module)
    assert [str(t) for t in region.result_types] == ["tensor<2xf32>", "tensor<2xf32>"]
    outputs = report.functions[0].regions[0].outputs
    assert [(o["op"], o["result"]) for o in outputs] == [(1, 1), (2, 0)]


def test_nothing_supported_leaves_the_function_unchanged() -> None:
    module = parse(DIAMOND)
    before = str(module)
    report = run_partition(module, ["pt_b"], deny_ops=["nn.add", "nn.relu"])
    assert str(module) == before
    assert report.functions[0].summary() == "@main: pt_b: 0 of 5 ops in 0 regions; host: 5 ops"


def test_partitioning_is_deterministic() -> None:
    texts = set()
    for _ in range(3):
        module = random_dag(7, 120)
        run_partition(module, ["tag_a", "tag_b"], min_ops=2)
        texts.add(str(module))
    assert len(texts) == 1


# ---- Strict mode and errors --------------------------------------------------------------------


def test_strict_lists_every_host_op_and_changes_nothing() -> None:
    module = parse(DIAMOND)
    before = str(module)
    with pytest.raises(IrcDiagnosticError) as info:
        partition(module, ["pt_a"], strict=True)
    diagnostic = info.value.diagnostic
    assert diagnostic.message == "strict=true: 1 op would stay on the host"
    assert diagnostic.location is not None
    assert diagnostic.location.line == 5
    assert [n.message for n in diagnostic.notes] == [
        "'nn.sigmoid' stays on the host: pt_a (op): pt_a: 'nn.sigmoid' is not supported"
    ]
    assert str(module) == before
    with capture_diagnostics():
        partition(parse(DIAMOND), ["pt_a", "reference"], strict=True, min_ops=1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"targets": []}, "partition needs targets: partition{targets=name,...}"),
        ({"targets": ["nope"]}, "unknown target 'nope' (known targets: "),
        ({"targets": ["pt_a", "pt_a"]}, "target 'pt_a' is listed twice in targets"),
        ({"targets": ["host"]}, "'host' is not a target name"),
        (
            {"targets": ["pt_a"], "place": ["#1:pt_b"]},
            "place entry '#1:pt_b' names 'pt_b', which is neither one of the targets (pt_a)",
        ),
        ({"targets": ["pt_a"], "place": ["nobody:pt_a"]}, "no op is named 'nobody'"),
        ({"targets": ["pt_a"], "place": ["#5:pt_a"]}, "names only 'func.return', which cannot be"),
        ({"targets": ["pt_a"], "deny_ops": ["softmx"]}, "deny-ops names an unknown op 'nn.softmx'"),
        ({"targets": ["pt_broken"]}, "target 'pt_broken' failed on 'nn.add': RuntimeError"),
    ],
)
def test_bad_options_are_located_errors(options: dict[str, Any], message: str) -> None:
    module = parse(DIAMOND)
    targets = options.pop("targets")
    with pytest.raises(IrcDiagnosticError) as info:
        partition(module, targets, ctx=make_context(), **options)
    assert message in info.value.diagnostic.message


def test_option_values_are_validated() -> None:
    with pytest.raises(ValueError, match="min-ops must be at least 0"):
        PartitionPass(targets=("pt_a",), min_ops=-1)
    with pytest.raises(ValueError, match="max-regions must be at least 0"):
        PartitionPass(targets=("pt_a",), max_regions=-2)
    with pytest.raises(ValueError, match="place entry 'conv1' is not NAME:target"):
        PartitionPass(targets=("pt_a",), place=("conv1",))


def test_report_file_is_json_and_written_only_on_success(tmp_path: Path) -> None:
    path = tmp_path / "partition.json"
    module = parse(DIAMOND)
    with capture_diagnostics():
        PartitionPass(targets=("pt_a",), report=str(path)).apply(make_context(), module)
    data = json.loads(path.read_text())
    assert data["options"]["targets"] == ["pt_a"]
    (function,) = data["functions"]
    assert function["summary"] == "@main: pt_a: 4 of 5 ops in 2 regions; host: 1 op"
    assert function["host"][0]["reasons"]["pt_a"]["code"] == "op"
    assert function["regions"][1]["inputs"][0] == {
        "op": 1,
        "result": 0,
        "name": None,
        "type": "tensor<4xf32>",
        "bytes": 16,
    }
    failed = tmp_path / "strict.json"
    with pytest.raises(IrcDiagnosticError):
        partition(parse(DIAMOND), ["pt_a"], strict=True, report=str(failed))
    assert not failed.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["partition.json"]  # no temporary left


def test_an_unwritable_report_fails_before_any_change(tmp_path: Path) -> None:
    module = parse(DIAMOND)
    before = str(module)
    with pytest.raises(IrcDiagnosticError, match="cannot write the partition report"):
        partition(module, ["pt_a"], report=str(tmp_path / "missing" / "report.json"))
    assert str(module) == before


def test_partitioning_again_leaves_regions_alone() -> None:
    module = parse(DIAMOND)
    run_partition(module, ["pt_a"])
    once = str(module)
    report = run_partition(module, ["pt_a"])
    assert str(module) == once
    reasons = [h.reasons["pt_a"] for h in report.functions[0].host if h.op.op != "nn.sigmoid"]
    assert [r.reason for r in reasons] == [
        "'delegate.region' has regions; ops with regions stay on the host"
    ] * 2


# ---- Random graphs -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_random_dags(seed: int) -> None:
    rng = random.Random(1000 + seed)
    size = rng.randrange(5, 90)
    min_ops = rng.choice([1, 1, 2, 3])
    max_regions = rng.choice([0, 0, 1, 2])
    targets = rng.choice([["tag_a"], ["tag_a", "tag_b"], ["tag_b", "tag_a"]])
    module = random_dag(seed, size)
    original = module.clone()
    report = run_partition(module, targets, min_ops=min_ops, max_regions=max_regions)
    (function,) = report.functions
    ops = _top_level_ops(original, "main")
    for region in function.regions:
        assert len(region.ops) >= min_ops
        letter = region.target[-1]
        for entry in region.ops:
            tag = ops[entry.index].attributes["tag"]
            assert isinstance(tag, StringAttr)
            assert letter in tag.data
    if max_regions:
        for target in targets:
            assert sum(r.target == target for r in function.regions) <= max_regions
    if min_ops == 1 and not max_regions:
        # Nothing forbids a region: every op some target takes is delegated ...
        for host in function.host:
            assert all(r.code == "op" for r in host.reasons.values())
        if len(targets) == 1:
            # ... in the fewest regions there can be: ops on one path with a host op
            # between them never share a region.
            letter = targets[0][-1]
            assert len(function.regions) == region_lower_bound(original, letter)
    # Inlining the regions back gives the same ops (and copies of shared constants).
    inline_regions(module)
    check_dominance(module)

    def kinds(m: ModuleOp) -> list[str]:
        return sorted(op.name for op in m.walk() if not isinstance(op, nn.ConstantOp))

    assert kinds(module) == kinds(original)


@pytest.mark.parametrize("seed", range(30))
def test_one_target_gets_the_fewest_regions_possible(seed: int) -> None:
    module = random_dag(500 + seed, 40 + 4 * seed)
    original = module.clone()
    report = run_partition(module, ["tag_a"], min_ops=1)
    assert len(report.functions[0].regions) == region_lower_bound(original, "a")


# ---- Models ------------------------------------------------------------------------------------


Outputs = dict[str, np.ndarray]
_imported: dict[str, tuple[ModuleOp, Outputs, Outputs]] = {}


def _model(entry: dict[str, Any]) -> tuple[ModuleOp, Outputs, Outputs]:
    """A copy of the model's module, its inputs, and its outputs on the host before any pass.
    The import and that run happen once per model in this module (its three tests each
    partition their own copy; the run is ~1.7 s for MobileNetV2 int8)."""
    if entry["name"] not in _imported:
        shapes = {spec["name"]: spec["shape"] for spec in entry["inputs"]}
        module = irc.import_model(MODELS / entry["file"], input_shapes=shapes)
        inputs_file = (MODELS / entry["file"]).parent / "inputs_0.npz"
        with np.load(inputs_file) as data:
            inputs = {name: data[name] for name in data.files}
        _imported[entry["name"]] = (module, inputs, irc.run(module.clone(), inputs))
    module, inputs, expected = _imported[entry["name"]]
    return module.clone(), inputs, expected


@pytest.mark.skipif(not ENTRIES, reason="shared models not found")
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
@pytest.mark.parametrize("extra", [(), ("reference",)], ids=["testplugin", "with_reference"])
def test_models_partition_and_run_identically(
    entry: dict[str, Any], extra: tuple[str, ...], testplugin: str
) -> None:
    module, inputs, expected = _model(entry)
    # With reference, which takes everything, min-ops=1 leaves nothing on the host.
    min_ops = 1 if extra else 2
    report = run_partition(module, [testplugin, *extra], min_ops=min_ops)
    (function,) = report.functions
    print(f"{entry['name']}: {function.summary()}")
    if extra:
        assert function.host == [], [h.describe() for h in function.host]
    for region in function.regions:
        assert len(region.ops) >= min_ops
    for host in function.host:
        assert host.reasons[testplugin].code in ("op", "quantized", "dtype", "min-ops")
    inline_regions(module)
    verify_module(module)
    actual = irc.run(module, inputs)
    assert actual.keys() == expected.keys()
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name])


@pytest.mark.skipif(not ENTRIES, reason="shared models not found")
@pytest.mark.skipif(
    "outline-delegates" not in get_all_passes(), reason="outline-delegates is not registered"
)
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_models_run_identically_on_testplugin(entry: dict[str, Any], testplugin: str) -> None:
    """End to end: the regions outlined and dispatched to testplugin's runtime."""
    module, inputs, expected = _model(entry)
    run_partition(module, [testplugin])
    get_all_passes()["outline-delegates"]()().apply(make_context(), module)
    actual = irc.run(module, inputs)
    assert actual.keys() == expected.keys()
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name])


# ---- Performance -------------------------------------------------------------------------------


def test_5000_op_graph_partitions_quickly(testplugin: str) -> None:
    module = synthetic_graph(5000)
    count = sum(1 for _ in module.ops.first.body.block.ops) - 1  # type: ignore[union-attr]
    assert count == 5000
    start = time.perf_counter()
    with capture_diagnostics() as diagnostics:
        report = partition(module, [testplugin])
    elapsed = time.perf_counter() - start
    print(f"5,000 ops: {elapsed:.2f} s; {diagnostics[0].message}")
    assert elapsed < 30
    assert len(report.functions[0].regions) > 10
    verify_module(module)
    check_dominance(module)
