"""`irc.compile`: a model through the default pipeline into a `CompiledModel` (DESIGN.md §5).

```python
model = irc.compile("model.tflite", targets=["opencl", "reference"])
print(model.summary)                     # where every op went, and why
outputs = model.run({"input": x})        # dispatches on target runtimes, the rest on the host
model.save("model.compiled.mlir")        # the lowered module as IR text
again = irc.load("model.compiled.mlir")  # runs without the original model
```

`compile` runs `irc.pipelines.default_pipeline(targets, **options)` (canonicalize, partition,
convert-layout, insert-qdq, outline-delegates), lowers every executable with its target's
passes and the host functions for the reference kernels (`irc.pipelines.lower_executables`,
`lower_host`), then prepares the host program with `irc.runtime.compile_function`, which loads
every executable on its target's runtime.

Failures of a target are not fatal (the MindSpore Lite / LiteRT behaviour: a delegate that
cannot build a subgraph leaves it to the CPU). When a target's lowering passes fail on an
executable, or its runtime cannot load (build) one, the op the failure names is refused for
that target, with the failure's message as the reason; when the failure names no op inside
the executable, every op of the region is refused. A refused op is pinned (`irc.target`, the
partition pass's pin attribute) to the next target in priority order after the one that
failed, or to the host after the last, and the whole pipeline runs again from the imported
module; a pinned target can still refuse the op, which then stays on the host. This repeats
until everything lowers and loads (each round refuses at least one more op, so it ends);
`CompiledModel.summary` lists every refusal after the partition summary.

Ops are matched between rounds by their position among the top-level ops of their
function right after the passes that run before `partition` (deterministic, so the same in
every round). A temporary `irc.source_op = N` attribute carries that position through the
pipeline (the rewriting passes copy discardable attributes to the ops they create) and is
removed from the final module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    from irc.passes.partition import PartitionReport
    from irc.pipelines import LoweringError
    from irc.runtime import Program, TensorSpec

__all__ = ["SOURCE_ATTR", "CompiledModel", "LoweringRefusal", "compile", "load"]

SOURCE_ATTR = "irc.source_op"
"""Temporary attribute: an op's position among its function's ops before partitioning."""

PIN_ATTR = "irc.target"
"""The partition pass's pin attribute (`passes/partition.py`): the op goes to this target."""

HOST = "host"
"""The pin that keeps an op on the host."""

_MAX_ROUNDS = 64
"""Pipeline runs at most; every round after the first refuses at least one more op."""


# ---- Refusals ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoweringRefusal:
    """An op a target could not lower or build, and where it went instead."""

    target: str
    """The target whose lowering (or runtime load) failed."""
    op: str
    """The op's kind (`nn.conv2d`), or `region` when the failure named no op."""
    where: str
    """The op's name location or source location, or the executable's symbol."""
    reason: str
    """The lowering's (or the runtime's) message."""
    moved_to: str
    """The target the op was pinned to instead, or `host`."""

    def describe(self) -> str:
        """``testplugin refused 'nn.relu' (conv1): lowering: <message>; moved to reference``"""
        return (
            f"{self.target} refused '{self.op}' ({self.where}): lowering: {self.reason}; "
            f"moved to {self.moved_to}"
        )


# ---- The compiled model ------------------------------------------------------------------------


class CompiledModel:
    """A compiled module, ready to run: `run(inputs) -> outputs`, from several threads.

    `module` is the compiled (partitioned, outlined, lowered) module; `summary` says where
    every op went; `program` is the host program (`irc.runtime.Program`), compiled once.
    """

    module: ModuleOp
    entry: str
    targets: tuple[str, ...]
    summary: str
    refusals: tuple[LoweringRefusal, ...]
    program: Program

    def __init__(
        self,
        module: ModuleOp,
        *,
        entry: str = "main",
        targets: Sequence[str] = (),
        summary: str = "",
        refusals: Sequence[LoweringRefusal] = (),
        program: Program | None = None,
        check: bool = False,
    ) -> None:
        from irc.runtime import compile_function

        self.module = module
        self.entry = entry
        self.targets = tuple(targets)
        self.summary = summary
        self.refusals = tuple(refusals)
        self.program = (
            program if program is not None else compile_function(module, entry, check=check)
        )

    @property
    def input_names(self) -> tuple[str, ...]:
        return self.program.input_names

    @property
    def output_names(self) -> tuple[str, ...]:
        return self.program.output_names

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """Name, type, shape and dtype of every input, in signature order."""
        return self.program.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.program.outputs

    def run(self, inputs: Mapping[str, np.ndarray], **kwargs: Any) -> dict[str, np.ndarray]:
        """Run on `inputs` keyed by input name; outputs keyed by output name. Keyword
        arguments go to `Program.run` (`listener=`, `profile=`)."""
        return self.program.run(inputs, **kwargs)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the compiled module as IR text (`irc.load` reads it back), atomically."""
        import tempfile

        from irc.printing import print_ir

        text = print_ir(self.module) + "\n"
        path = os.fspath(path)
        fd, temp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise

    def __repr__(self) -> str:
        targets = ", ".join(self.targets) or "-"
        return (
            f"<CompiledModel @{self.entry} [{targets}]: {len(self.input_names)} inputs, "
            f"{len(self.output_names)} outputs, {len(self.executables())} executables>"
        )

    def executables(self) -> list[str]:
        """The symbol names of the module's executables, in module order."""
        from irc.dialects import delegate

        return [
            op.sym_name.data
            for op in self.module.body.block.ops
            if isinstance(op, delegate.ExecutableOp)
        ]


# ---- Compiling ---------------------------------------------------------------------------------


def _source_module(
    model: ModuleOp | str | os.PathLike[str],
    input_shapes: Mapping[str, Sequence[int]] | None,
    bind: Mapping[str, int | float] | None,
) -> ModuleOp:
    from xdsl.dialects.builtin import ModuleOp

    if isinstance(model, ModuleOp):
        return model.clone()
    if not isinstance(model, str | os.PathLike):
        raise TypeError(
            f"expected a ModuleOp or a path, got {type(model).__name__}; "
            "parse IR text with irc.parse_module first"
        )
    from irc.tools.common import is_model_file

    if is_model_file(os.fspath(model)):
        from irc.importers import import_model

        return import_model(model, bind=bind, input_shapes=input_shapes)
    import irc

    return irc.read_module(model)


def _units(module: ModuleOp) -> list[Operation]:
    """The ops partitioning places: the top-level ops of every top-level function."""
    from xdsl.dialects.func import FuncOp

    return [
        op
        for func in module.body.block.ops
        if isinstance(func, FuncOp)
        for block in func.body.blocks
        for op in block.ops
    ]


def _tag(module: ModuleOp, pins: Mapping[int, str]) -> None:
    """Number the units (`SOURCE_ATTR`) and pin the refused ones (`PIN_ATTR`)."""
    from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64

    for index, op in enumerate(_units(module)):
        op.attributes[SOURCE_ATTR] = IntegerAttr(index, i64)
        if index in pins:
            op.attributes[PIN_ATTR] = StringAttr(pins[index])


def _untag(module: ModuleOp) -> None:
    for op in module.walk():
        op.attributes.pop(SOURCE_ATTR, None)


def _source_index(op: Operation | None) -> int | None:
    from xdsl.dialects.builtin import IntegerAttr

    attr = None if op is None else op.attributes.get(SOURCE_ATTR)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _where(op: Operation) -> str:
    from irc.diagnostics import location_of
    from irc.passes.partition import op_name

    name = op_name(op)
    if name is not None:
        return name
    location = location_of(op)
    return str(location) if location is not None else "unknown location"


def _executable_of(op: Operation | None) -> Operation | None:
    from irc.dialects import delegate

    while op is not None and not isinstance(op, delegate.ExecutableOp):
        op = op.parent_op()
    return op


def _is_constant(op: Operation) -> bool:
    from xdsl.traits import ConstantLike

    return not op.operands and op.has_trait(ConstantLike)


@dataclass
class _Pins:
    """The ops refused so far, by unit index: the target each is pinned to, and why."""

    targets: Sequence[str]
    pins: dict[int, str] = field(default_factory=dict)
    refusals: list[LoweringRefusal] = field(default_factory=list)

    def next_target(self, failed: str) -> str:
        """The target after `failed` in priority order, or the host."""
        order = list(self.targets)
        index = order.index(failed) if failed in order else len(order) - 1
        return order[index + 1] if index + 1 < len(order) else HOST

    def refuse(self, executable: Operation, failing: Operation | None, message: str) -> bool:
        """Pin the failing op (or every op of `executable`) to the next target; whether
        anything was pinned anew (False: no progress is possible)."""
        from irc.dialects import delegate

        assert isinstance(executable, delegate.ExecutableOp)
        target = executable.target.data
        moved_to = self.next_target(target)
        index = _source_index(failing)
        # An op may be pinned to the very target that failed now (an earlier refusal).
        if failing is not None and index is not None and self.pins.get(index, target) == target:
            self.pins[index] = moved_to
            self.refusals.append(
                LoweringRefusal(target, failing.name, _where(failing), message, moved_to)
            )
            return True
        new = [
            i
            for op in executable.walk()
            if not _is_constant(op)
            and (i := _source_index(op)) is not None
            and self.pins.get(i, target) == target
        ]
        for i in new:
            self.pins[i] = moved_to
        if new:
            where = f"@{executable.sym_name.data}, {len(new)} op{'s' if len(new) > 1 else ''}"
            self.refusals.append(LoweringRefusal(target, "region", where, message, moved_to))
        return bool(new)


def _run_pipeline(
    module: ModuleOp,
    targets: Sequence[str],
    options: Mapping[str, Any],
    pins: Mapping[int, str],
    ctx: Context,
) -> PartitionReport | None:
    """The module-level default pipeline, with the units tagged right before `partition`;
    returns the partition's report.

    The partition step runs through `irc.passes.partition.partition()` with the pass's own
    options: the same rewrite, plus the report object that the pass only writes as JSON.
    """
    from dataclasses import fields

    from irc.diagnostics import capture_diagnostics, verify_module
    from irc.passes.partition import partition
    from irc.pipelines import default_pipeline, parse_pipeline, run_passes

    passes = parse_pipeline(default_pipeline(targets, **options))
    split = next((i for i, p in enumerate(passes) if p.name == "partition"), 0)
    report = None
    with capture_diagnostics():  # the summary remarks: `report` has them
        run_passes(module, passes[:split], ctx)
        _tag(module, pins)
        for module_pass in passes[split:]:
            if module_pass.name != "partition":
                run_passes(module, [module_pass], ctx)
                continue
            arguments = {f.name: getattr(module_pass, f.name) for f in fields(module_pass)}
            report = partition(module, ctx=ctx, **arguments)
            verify_module(module)
    return report


def _summary(
    targets: Sequence[str],
    report: PartitionReport | None,
    refusals: Sequence[LoweringRefusal],
) -> str:
    """The partition summary of every function, the host ops with each target's reason,
    then the lowering refusals."""
    lines = [f"targets: {', '.join(targets)}"]
    for function in report.functions if report is not None else ():
        lines.append(function.summary())
        for entry in function.host:
            name = f" [{entry.op.name}]" if entry.op.name else ""
            lines.append(f"  #{entry.op.index}{name} {entry.describe()}")
    if refusals:
        lines.append(f"lowering refusals: {len(refusals)}")
        lines += [f"  {refusal.describe()}" for refusal in refusals]
    return "\n".join(lines)


def compile(
    model: ModuleOp | str | os.PathLike[str],
    targets: Sequence[str] = ("reference",),
    *,
    entry: str = "main",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    bind: Mapping[str, int | float] | None = None,
    check: bool = False,
    **options: Any,
) -> CompiledModel:
    """Compile a model for `targets` (priority order) with the default pipeline.

    `model`: a `.tflite` / `.onnx` path (imported with `input_shapes` and `bind`), an IR
    file, or a `ModuleOp` (cloned: the caller's module is never modified). `options` go to
    the pipeline (`irc.pipelines.default_pipeline`): partition options (`min_ops`,
    `max_regions`, `deny_ops`, `place`, `strict`, `report`) and insert-qdq's
    `emulate_rounding`. `check=True` checks every step's results against the IR types.

    A target that fails to lower or load a region does not fail the compilation: the
    failing op moves to the next target or the host (see the module docstring). Raises
    `TargetError` for unknown targets, `ValueError` for bad options, `ModelImportError`,
    xDSL's `ParseError` and `IrcDiagnosticError` for bad models, IR or pass failures, and
    `CompileError` when the host program cannot be prepared.
    """
    from irc.context import make_context
    from irc.pipelines import lower_executables, lower_host
    from irc.runtime import CompileError, ExecutorError, compile_function

    names = list(dict.fromkeys(targets))
    source = _source_module(model, input_shapes, bind)
    ctx = make_context()
    state = _Pins(names)
    for _ in range(_MAX_ROUNDS):
        module = source.clone()
        existing = {op.sym_name.data for op in _executables(module)}
        report = _run_pipeline(module, names, options, state.pins, ctx)
        failures: list[LoweringError] = []
        lower_executables(module, skip=existing, ctx=ctx, failures=failures)
        if failures:
            progress = False
            for failure in failures:
                executable = _find_executable(module, failure.executable)
                progress |= state.refuse(executable, failure.op, failure.diagnostic.message)
            if progress:
                continue
            raise _as_diagnostic_error(failures[0])
        lower_host(module, ctx)
        try:
            program = compile_function(module, entry, check=check)
        except ExecutorError as exc:  # a runtime that cannot load (build) an executable
            executable = _executable_of(exc.op)
            if executable is None or executable.sym_name.data in existing:  # type: ignore[attr-defined]
                raise
            failing = None if exc.op is executable else exc.op
            if state.refuse(executable, failing, exc.message):
                continue
            raise
        _untag(module)
        return CompiledModel(
            module,
            entry=entry,
            targets=names,
            summary=_summary(names, report, state.refusals),
            refusals=state.refusals,
            program=program,
        )
    raise CompileError(f"gave up after {_MAX_ROUNDS} partitioning rounds: targets keep failing")


def _as_diagnostic_error(failure: LoweringError) -> Exception:
    """A lowering failure nothing can be moved away from, as a located error."""
    from irc.diagnostics import Diagnostic, IrcDiagnosticError, Severity

    d = failure.diagnostic
    return IrcDiagnosticError.from_diagnostic(
        Diagnostic(Severity.ERROR, str(failure), d.location, d.op, d.notes)
    )


def _executables(module: ModuleOp) -> list[Any]:
    from irc.dialects import delegate

    return [op for op in module.body.block.ops if isinstance(op, delegate.ExecutableOp)]


def _find_executable(module: ModuleOp, name: str) -> Operation:
    return next(op for op in _executables(module) if op.sym_name.data == name)


def load(
    path: str | os.PathLike[str], *, entry: str = "main", check: bool = False
) -> CompiledModel:
    """Read a compiled module (`CompiledModel.save`, `irc-compile -o`) and prepare it to run.

    The executables are taken as they are (lowered when they were saved); the host
    functions get the reference preparation (a no-op for a compiled module). The targets
    named by the executables must be registered (installed, `IRC_PLUGINS`, `load_plugin`).
    """
    import irc
    from irc.pipelines import lower_host

    module = irc.read_module(path)
    lower_host(module)
    targets = list(dict.fromkeys(op.target.data for op in _executables(module)))
    return CompiledModel(module, entry=entry, targets=targets, check=check)
