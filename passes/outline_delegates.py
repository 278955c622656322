"""Outline `delegate.region` ops into per-target executables called by `delegate.dispatch`.

Each `delegate.region "t"` directly in the body of a top-level `func.func @f` becomes

```mlir
delegate.executable private @f_t_0 target("t") {
  func.func @entry(%a: T...) -> (R...) { <the region's ops>; func.return <yielded values> }
}
func.func @f(...) {
  %r = delegate.dispatch @f_t_0::@entry(%x...) : (T...) -> (R...)
```

* Entry arguments are the region's captures, in capture order (the region's block arguments
  become the entry's); the results are the yielded values. The entry stays public inside the
  private executable (STYLE.md C10: `@exe::@entry` must resolve).
* Names (docs/design.md §6): `@<func>_<target>_<n>`, with `n` counting the regions of one target in
  one function in source order from 0. Characters of the target name that cannot appear in a
  bare symbol become `_`; a name already taken in the module moves on to the next `n`. Names
  never depend on `id()`, hashes or set order, so output is stable across runs.
* Executables are inserted just before their function, in the order of their regions.
* Weights: a captured value defined by an operand-less constant op (`nn.constant`,
  `arith.constant`, any `ConstantLike`) does not become an argument. The constant is cloned
  into the entry (the delegate owns its weights) and the outside one is erased once nothing
  uses it, so a constant used only by one region moves into its executable and one that the
  host or another region also uses is copied in, keeping the outside one.
* Locations: the executable, its entry, the return and the dispatch take the region's (or
  the yield's) location; the moved ops keep theirs. The region's discardable attributes
  (partition metadata) go onto the executable.

Regions nested in another region, or in a function inside an executable, are left where they
are: `partition` never produces them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import ConstantLike, SymbolOpInterface

from irc.dialects import delegate

__all__ = ["ENTRY", "OutlineDelegatesPass", "SymbolNames", "outline_delegates", "outline_region"]

ENTRY = "entry"
"""The name of the public function of every outlined executable."""

_NOT_SYMBOL_CHAR = re.compile(r"[^A-Za-z0-9_]")


# ---- Symbol names ------------------------------------------------------------------------------


@dataclass
class SymbolNames:
    """Unique, deterministic executable names for one module."""

    taken: set[str]
    """Every symbol name at the top of the module (and every name handed out)."""

    @staticmethod
    def from_module(module: ModuleOp) -> SymbolNames:
        taken: set[str] = set()
        for op in module.body.block.ops:
            trait = op.get_trait(SymbolOpInterface)
            if trait is not None and (symbol := trait.get_sym_attr_name(op)) is not None:
                taken.add(symbol.data)
        return SymbolNames(taken)

    def claim(self, func_name: str, target: str, counters: dict[str, int]) -> str:
        """The next free `@<func>_<target>_<n>`; `counters` holds the next `n` per target."""
        stem = f"{func_name}_{_NOT_SYMBOL_CHAR.sub('_', target) or 'target'}"
        index = counters.get(stem, 0)
        while f"{stem}_{index}" in self.taken:
            index += 1
        counters[stem] = index + 1
        name = f"{stem}_{index}"
        self.taken.add(name)
        return name


# ---- Outlining ---------------------------------------------------------------------------------


def _is_weight(value: SSAValue) -> bool:
    """Whether `value` is the result of an operand-less constant op (moved, not captured)."""
    owner = value.owner
    return isinstance(owner, Operation) and not owner.operands and owner.has_trait(ConstantLike)


def _internalize_constants(region: delegate.RegionOp) -> list[Operation]:
    """Clone the constants the region captures into its body and drop those captures.

    Returns the outside constants that lost a use (erased later if nothing else uses them).
    """
    block = region.body.block
    anchor = InsertPoint.before(block.first_op) if block.first_op else InsertPoint.at_end(block)
    clones: dict[Operation, Operation] = {}
    kept: list[SSAValue] = []
    sources: list[Operation] = []
    for arg, capture in zip(list(block.args), list(region.captures), strict=True):
        if not _is_weight(capture):
            kept.append(capture)
            continue
        assert isinstance(capture, OpResult)  # a captured constant's result
        constant = capture.owner
        if constant not in clones:
            clone = constant.clone()
            Rewriter.insert_op(clone, anchor)
            clones[constant] = clone
            sources.append(constant)
        arg.replace_all_uses_with(clones[constant].results[capture.index])
        block.erase_arg(arg)
    region.operands = kept
    return sources


def outline_region(region: delegate.RegionOp, func: FuncOp, name: str) -> delegate.DispatchOp:
    """Replace `region` (in `func`) by a dispatch of a new executable `@name`, inserted
    before `func`; returns the dispatch."""
    weights = _internalize_constants(region)
    block = region.body.block
    terminator = block.last_op
    assert isinstance(terminator, delegate.YieldOp)  # the region verifier guarantees it
    result_types = [r.type for r in region.outputs]
    ret = ReturnOp(*terminator.values)
    ret.location = terminator.location
    Rewriter.replace_op(terminator, ret)

    body = Region()
    region.body.move_blocks(body)
    entry = FuncOp(ENTRY, FunctionType.from_lists([a.type for a in block.args], result_types), body)
    entry.location = region.location
    executable = delegate.ExecutableOp(name, region.target.data, [entry])
    executable.location = region.location
    executable.attributes |= region.attributes

    dispatch = delegate.DispatchOp(name, ENTRY, list(region.captures), result_types)
    dispatch.location = region.location
    # The executable goes before its function rather than at the module start: readers
    # see the kernel next to its caller, and output order follows source order.
    Rewriter.insert_op(executable, InsertPoint.before(func))
    Rewriter.replace_op(region, dispatch)

    for constant in weights:
        if all(not result.uses for result in constant.results):
            Rewriter.erase_op(constant)
    return dispatch


def _regions_of(module: ModuleOp) -> Iterable[tuple[FuncOp, list[delegate.RegionOp]]]:
    """Top-level functions with the regions directly in their body, in source order."""
    for op in module.body.block.ops:
        if not isinstance(op, FuncOp):
            continue
        regions = [
            inner
            for block in op.body.blocks
            for inner in block.ops
            if isinstance(inner, delegate.RegionOp)
        ]
        if regions:
            yield op, regions


def outline_delegates(module: ModuleOp) -> list[delegate.DispatchOp]:
    """Outline every region of every top-level function; returns the new dispatches."""
    work = list(_regions_of(module))  # phase 1: collect (C11)
    names = SymbolNames.from_module(module)
    dispatches: list[delegate.DispatchOp] = []
    for func, regions in work:  # phase 2: rewrite
        counters: dict[str, int] = {}
        for region in regions:
            name = names.claim(func.sym_name.data, region.target.data, counters)
            dispatches.append(outline_region(region, func, name))
    return dispatches


@dataclass(frozen=True)
class OutlineDelegatesPass(ModulePass):
    """Outline `delegate.region` ops into `delegate.executable`s called by `delegate.dispatch`."""

    name = "outline-delegates"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        outline_delegates(op)
