"""`irc.compile`: a model through the default pipeline into a `CompiledModel` (docs/design.md §5).

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

A requested target that is not available on this machine (`Target.available()`: no
OpenCL device matching `IRC_OPENCL_DEVICE`, no working C compiler) is logged as one
warning on the `irc` logger, naming the target and the reason, and its ops go to the next
target or the host; `strict=True` raises `TargetError` instead (and, through `partition`'s
own `strict`, refuses to leave any op on the host). A logged warning rather than
`warnings.warn`: under `python -W error` the fallback still happens.

Artifacts (`CompiledModel.save`, `irc-compile -o`) carry `irc.format_version = 2` on the
module and keep their weights in a binary file next to the text (`irc.artifact`); `irc.load`
refuses a version it does not know (a newer irc wrote it) and runs an artifact as it is,
without running any pass. `save(path, embed_binaries=True)` adds the device binaries
built on this machine (`Target.embed_binaries` of each executable's target: the OpenCL
program binaries of `irc.targets.opencl.aot`).

Dynamic shapes (`irc.specialize`): a model with dynamic input dimensions keeps its source
(the model file's bytes, or the IR before specialisation); `run()` on inputs of other shapes
compiles a specialisation for them, cached per shape signature (LRU of
`irc.specialize.SHAPE_CACHE_SIZE`), and `resize({name: shape})` does it explicitly and makes
those shapes current. A model whose dynamic dimensions (beyond a leading batch, which
defaults to 1) have no `input_shapes` compiles nothing up front: its `module` is the model
with `?` dims (`ModelSource.unspecialised`), `unspecialised` is True, and every input-shape
signature it runs on is specialised on first use (`save` needs shapes first). Only a
node without any converter fails such a compile; what the importer can decide only for
static shapes (`ModelImportError`) is raised by the first `run`.
`compile(..., shape_buckets={"x": [1, 4, 8]})` compiles several
specialisations into one module behind a guarded entry; running a bucketed shape compiles
nothing, and a shape outside the buckets is specialised when the source is at hand (a model
compiled in this process) and an `InputError` otherwise (an artifact loaded with `irc.load`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import numpy as np
    from xdsl.context import Context
    from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
    from xdsl.ir import Operation

    from irc.compile_cache import CachedCompile
    from irc.dialects.delegate import ExecutableOp
    from irc.passes.partition import PartitionReport
    from irc.pipelines import LoweringError
    from irc.runtime import Program, TensorSpec
    from irc.specialize import ModelSource, ShapeKey

__all__ = [
    "FORMAT_ATTR",
    "FORMAT_VERSION",
    "SOURCE_ATTR",
    "ArtifactError",
    "CompiledModel",
    "LoweringRefusal",
    "check_format",
    "compile",
    "load",
]

FORMAT_VERSION = 2
"""The artifact format this irc writes and the newest it reads: 2 keeps large constants in a
weights file next to the text (`irc.artifact`); 1 (all text) still loads."""

FORMAT_ATTR = "irc.format_version"
"""The module attribute that marks a compiled artifact and gives its format version."""


class ArtifactError(ValueError):
    """A compiled module this irc cannot load (an unknown format version)."""


def check_format(module: ModuleOp, path: str | os.PathLike[str]) -> bool:
    """Whether `module` is a compiled artifact (it has `irc.format_version`); raises
    `ArtifactError` for a version this irc does not read."""
    from xdsl.dialects.builtin import IntegerAttr

    attr = module.attributes.get(FORMAT_ATTR)
    if attr is None:
        return False
    version = attr.value.data if isinstance(attr, IntegerAttr) else None
    if version is None or not 1 <= version <= FORMAT_VERSION:
        shown = version if version is not None else str(attr)
        raise ArtifactError(
            f"{os.fspath(path)}: artifact format version {shown} is not supported (this irc "
            f"reads versions 1 to {FORMAT_VERSION}); compile the model again with this irc"
        )
    return True


def _mark_artifact(module: ModuleOp) -> None:
    from xdsl.dialects.builtin import IntegerAttr, i64

    module.attributes[FORMAT_ATTR] = IntegerAttr(FORMAT_VERSION, i64)


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
    A model with dynamic input dimensions re-specialises on inputs of new shapes (see the
    module docstring); `module` and `program` are those of the current shapes.
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
        buckets: Sequence[Program] | None = None,
        source: ModelSource | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        """`buckets`: the programs of a guarded entry's specialisations, when already
        compiled; `source` and `options`: what re-specialisation compiles, and with which
        `compile` options (without them, other shapes are an `InputError`)."""
        from irc.runtime import compile_function
        from irc.specialize import guarded_specializations, shape_key

        self.module = module
        self.entry = entry
        self.targets = tuple(targets)
        self.summary = summary
        self.refusals = tuple(refusals)
        self._check = check
        self._source = source
        self._artifact: _Artifact | None = None
        """The artifact as printed for the compile cache (`save` writes it again)."""
        self._report: Any = None
        """The partition report (`PartitionReport.to_json()`), for the compile cache."""
        self._options = dict(options or {})
        self._lock = threading.Lock()
        self._compile_lock = threading.Lock()
        self._variants: OrderedDict[ShapeKey, CompiledModel] = OrderedDict()
        self._buckets: dict[ShapeKey, Program] = {}
        guarded = guarded_specializations(module, entry) if program is None else None
        if guarded is not None or buckets is not None:
            programs = list(buckets or ())
            if not programs:
                programs = [compile_function(module, name, check=check) for name in guarded or ()]
            for bucket in programs:
                shapes = {spec.name: spec.shape for spec in bucket.inputs}
                self._buckets[shape_key(bucket.input_names, shapes)] = bucket
            program = programs[0]
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

    @property
    def buckets(self) -> tuple[dict[str, tuple[int, ...]], ...]:
        """The input shapes of a guarded entry's specialisations (empty without buckets)."""
        return tuple(dict(key) for key in self._buckets)

    @property
    def unspecialised(self) -> bool:
        """Whether this model was compiled before its input shapes were known (it has no
        program of its own until `resize` or a `run` specialises it)."""
        return (
            self.program.steps == ()
            and any(d < 0 for spec in self.program.inputs for d in spec.shape)
            and self._source is not None
            and not self._buckets
        )

    def missing_shapes(self) -> Exception:
        """The `MissingShapesError` (to raise) of an unspecialised model: what ahead-of-time
        compilation needs first (`irc-compile` without `--input-shape`)."""
        from irc.importers.errors import MissingShapesError
        from irc.specialize import format_shape

        dynamic = [s for s in self.inputs if any(d < 0 for d in s.shape)]
        path = self._source.path if self._source is not None else "<module>"
        described = [
            f"'{s.name}' [" + format_shape(s.shape).replace("x", ", ") + "]" for s in dynamic
        ]
        example = [d if d >= 0 else (1 if i == 0 else 16) for i, d in enumerate(dynamic[0].shape)]
        return MissingShapesError(path, described, [s.name for s in dynamic], example)

    @property
    def specializations(self) -> int:
        """How many specialisations (the first compilation's included) are cached."""
        return len(self._variants)

    def _remember_current(self) -> None:
        """Cache the current specialisation under its shapes (when they are static)."""
        from irc.specialize import shape_key

        shapes = {spec.name: spec.shape for spec in self.inputs}
        if all(d >= 0 for shape in shapes.values() for d in shape):
            current = CompiledModel(
                self.module, entry=self.entry, targets=self.targets, program=self.program
            )
            self._variants[shape_key(self.input_names, shapes)] = current

    def run(self, inputs: Mapping[str, np.ndarray], **kwargs: Any) -> dict[str, np.ndarray]:
        """Run on `inputs` keyed by input name; outputs keyed by output name. Keyword
        arguments go to `Program.run` (`listener=`, `profile=`, `check_finite=`), which
        documents the input checks (names, shapes, exact dtypes, any strides; NaN and Inf are
        not checked unless `check_finite=True`). Inputs of shapes other than the current ones
        run on their specialisation (compiled on first use, then cached). Safe to call from
        several threads at once."""
        return self.program_for(inputs).run(inputs, **kwargs)

    def program_for(self, inputs: Mapping[str, Any]) -> Program:
        """The program that runs `inputs` (by their shapes): the current one, a bucket's,
        or a specialisation (compiled now if new). Raises `InputError` for shapes outside
        the buckets of a model without its source."""
        program = self.program
        if not self._buckets and self._source is None:
            return program
        if not isinstance(inputs, Mapping) or set(inputs) != set(program.input_names):
            return program  # the program reports what is wrong
        shapes = {name: tuple(getattr(value, "shape", ())) for name, value in inputs.items()}
        if all(spec.shape == shapes[spec.name] for spec in program.inputs):
            return program
        return self._specialization(shapes).program

    def resize(self, shapes: Mapping[str, Sequence[int]]) -> None:
        """Make `shapes` (some or all inputs, by name) the current input shapes: the
        specialisation for them is compiled now if it is new (`Kernel::ReSize`), so the
        next `run` costs nothing extra. Raises `ValueError` for unknown inputs and shapes
        this model cannot take."""
        unknown = sorted(set(shapes) - set(self.input_names))
        if unknown:
            known = ", ".join(repr(n) for n in self.input_names)
            raise ValueError(f"resize: no input named {unknown[0]!r} (inputs: {known})")
        current = {spec.name: spec.shape for spec in self.inputs}
        wanted = current | {name: tuple(int(d) for d in shape) for name, shape in shapes.items()}
        dynamic = [name for name, shape in wanted.items() if any(d < 0 for d in shape)]
        if dynamic and self._source is not None:
            from irc.specialize import format_shape

            raise ValueError(
                "resize: give a static shape for every input with dynamic dimensions: "
                + ", ".join(f"{n} ({format_shape(wanted[n])})" for n in dynamic)
            )
        if wanted == current and all(d >= 0 for s in current.values() for d in s):
            return
        from irc.runtime import InputError

        try:
            variant = self._specialization(wanted)
        except InputError as exc:
            raise ValueError(f"resize: {exc}") from None
        if any(spec.shape != wanted[spec.name] for spec in variant.program.inputs):
            raise ValueError(
                "resize: this model was compiled for "
                + ", ".join(f"{s.name}={s.describe_shape()}" for s in self.inputs)
                + " and has no dynamic dimensions to re-specialise"
            )
        self.module, self.program = variant.module, variant.program
        self.summary, self.refusals = variant.summary, variant.refusals

    def _specialization(self, shapes: Mapping[str, tuple[int, ...]]) -> CompiledModel:
        """The compiled model for `shapes`: a bucket, a cached specialisation, or a new one."""
        from irc.runtime import InputError
        from irc.specialize import SHAPE_CACHE_SIZE, format_shape, shape_key

        key = shape_key(self.input_names, shapes)
        with self._lock:
            if key in self._buckets:
                bucket = self._buckets[key]
                return CompiledModel(self.module, entry=self.entry, program=bucket)
            if key in self._variants:
                self._variants.move_to_end(key)
                return self._variants[key]
        described = ", ".join(f"{name}={format_shape(shape)}" for name, shape in key)
        if self._source is None:
            if not self._buckets:
                return self  # a static model: its program reports the mismatch
            known = "; ".join(
                ", ".join(f"{name}={format_shape(shape)}" for name, shape in bucket)
                for bucket in self._buckets
            )
            raise InputError(
                f"no specialisation of @{self.entry} for {described}: the compiled buckets are "
                f"{known}; compile with a bucket for these shapes, or compile from the model to "
                "re-specialise"
            )
        try:
            self._source.check(shapes)
        except ValueError as exc:
            raise InputError(f"cannot specialise @{self.entry} for {described}: {exc}") from None
        with self._compile_lock:
            with self._lock:
                if key in self._variants:
                    return self._variants[key]
            variant = _compile_source(
                self._source, shapes, self.targets, self.entry, self._check, self._options
            )
            with self._lock:
                self._variants[key] = variant
                while len(self._variants) > SHAPE_CACHE_SIZE:
                    self._variants.popitem(last=False)
        return variant

    def _artifact_module(self, embed_binaries: bool) -> ModuleOp:
        """The module as saved: marked with `irc.format_version`, with the OpenCL binaries
        when asked (on a clone: the module in memory is left alone)."""
        if self.unspecialised:
            from irc.specialize import format_shape

            shapes = ", ".join(f"{s.name}={format_shape(s.shape)}" for s in self.inputs)
            raise ValueError(
                f"@{self.entry} has dynamic input dimensions ({shapes}) and is compiled when "
                "it runs; resize() it, or compile with input shapes or shape buckets, to save it"
            )
        module = self.module
        if embed_binaries:
            from irc.targets import get_target

            module = module.clone()
            for target in dict.fromkeys(self._executable_targets()):
                get_target(target).embed_binaries(module)
        _mark_artifact(module)
        return module

    def to_text(self, *, embed_binaries: bool = False) -> str:
        """The compiled module as one self-contained IR text (weights inline), with
        `irc.format_version`; `embed_binaries` adds the OpenCL program binaries built for
        this machine's device."""
        from irc.printing import print_ir

        return print_ir(self._artifact_module(embed_binaries)) + "\n"

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        embed_binaries: bool = False,
        inline_weights: bool = False,
    ) -> None:
        """Write the artifact `irc.load` reads back: the IR text at `path` and its weights
        in the binary file `irc.artifact.weights_path(path)` next to it (`model.irc.mlir`,
        `model.irc.weights`), both or neither (mode 0666 less the umask, as
        `irc.fileio.write_atomically`; `OSError` on failure). `inline_weights` writes one
        self-contained text instead (as `to_text`); `embed_binaries` adds the OpenCL program
        binaries built for this machine's device."""
        from irc.artifact import save_artifact
        from irc.fileio import is_special_file

        reuse = not (embed_binaries or inline_weights or is_special_file(path))
        if self._artifact is not None and reuse:
            self._artifact.save(os.fspath(path))
            return
        module = self._artifact_module(embed_binaries)
        save_artifact(path, module, inline_weights=inline_weights)

    def __repr__(self) -> str:
        targets = ", ".join(self.targets) or "-"
        return (
            f"<CompiledModel @{self.entry} [{targets}]: {len(self.input_names)} inputs, "
            f"{len(self.output_names)} outputs, {len(self.executables())} executables>"
        )

    def _executable_targets(self) -> list[str]:
        """The target of each of the module's executables, in module order."""
        from irc.dialects import delegate

        return [
            op.target.data
            for op in self.module.body.block.ops
            if isinstance(op, delegate.ExecutableOp)
        ]

    def executables(self) -> list[str]:
        """The symbol names of the module's executables, in module order."""
        from irc.dialects import delegate

        return [
            op.sym_name.data
            for op in self.module.body.block.ops
            if isinstance(op, delegate.ExecutableOp)
        ]


# ---- Compiling ---------------------------------------------------------------------------------


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


def _executable_of(op: Operation | None) -> ExecutableOp | None:
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
    from irc.timing import step

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
            with step("partition", module) as partition_step:
                report = partition_step.result = partition(module, ctx=ctx, **arguments)
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
    targets: str | Sequence[str] = ("reference",),
    *,
    entry: str = "main",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    bind: Mapping[str, int | float] | None = None,
    check: bool = False,
    shape_buckets: Mapping[str, Sequence[int | Sequence[int]]] | None = None,
    strict: bool = False,
    **options: Any,
) -> CompiledModel:
    """Compile a model for `targets` (priority order: a list, or one target name such as
    `"cpu"`) with the default pipeline.

    `model`: a `.tflite` / `.onnx` path (imported with `input_shapes` and `bind`), an IR
    file, or a `ModuleOp` (cloned: the caller's module is never modified; `input_shapes`
    specialise its dynamic arguments). `options` go to the pipeline
    (`irc.pipelines.default_pipeline`): partition options (`min_ops`, `max_regions`,
    `deny_ops`, `place`, `strict`, `report`) and insert-qdq's `emulate_rounding`.
    `check=True` checks every step's results against the IR types. `shape_buckets`
    (`{"x": [1, 4, 8]}`: sizes of the input's dynamic dimension, or whole shapes) compiles
    one specialisation per bucket behind a guarded entry (`irc.specialize`).

    A target that is not available here is a warning on the `irc` logger and its ops go
    to the next target or the host; with `strict=True` it raises `TargetError`, and an op
    left on the host fails the compilation (`partition{strict=true}`). A target that fails
    to lower or load a region does not fail the compilation: the failing op moves to the
    next target or the host (see the module docstring). Raises
    `TargetError` for unknown targets, `ValueError` for bad options, `ModelImportError`,
    xDSL's `ParseError` and `IrcDiagnosticError` for bad models, IR or pass failures, and
    `CompileError` when the host program cannot be prepared.
    """
    from irc.timing import step

    names = list(dict.fromkeys([targets] if isinstance(targets, str) else targets))
    _check_available(names, strict)
    if strict:
        options["strict"] = True
    cache_key = None
    if shape_buckets is None and isinstance(model, str | os.PathLike) and _no_graph_capture():
        from irc import compile_cache

        with step("compile-cache"):
            cache_key = compile_cache.compile_key(
                model,
                names,
                entry=entry,
                input_shapes=input_shapes,
                bind=bind,
                check=check,
                strict=strict,
                options=options,
            )
            hit = None if cache_key is None else compile_cache.load(cache_key)
            if hit is not None:
                return _from_cache(hit, names, entry, check, options)
    with step("import"):
        source = _model_source(model, bind, entry)
    keep = source if source.is_dynamic else None
    if shape_buckets is not None:
        return _compile_buckets(
            source, keep, shape_buckets, input_shapes, names, entry, check, options
        )
    if source.module is not None and input_shapes:
        source.check(input_shapes)
    from irc.importers.errors import MissingShapesError

    with step("import"):
        try:
            module = source.instantiate(input_shapes)
        except MissingShapesError:  # only a model with dynamic dimensions raises it
            return _unspecialised(source, input_shapes, names, entry, check, options)
    compiled = _compile_module(module, names, entry, check, options)
    if keep is not None:
        compiled._source, compiled._options = keep, dict(options)
        compiled._remember_current()
    elif cache_key is not None:
        with step("compile-cache"):
            _store_in_cache(cache_key, compiled)
    return compiled


def _no_graph_capture() -> bool:
    """Whether no installed instrumentation watches the passes (`irc-compile --graph`'s
    capture): the compile cache skips them."""
    from irc.graph.model import GraphCapture
    from irc.timing import active_instrumentations

    return not any(isinstance(i, GraphCapture) for i in active_instrumentations())


def _from_cache(
    hit: CachedCompile,
    names: list[str],
    entry: str,
    check: bool,
    options: Mapping[str, Any],
) -> CompiledModel:
    """The `CompiledModel` of a compile-cache entry (`irc.compile_cache`): its artifact
    parsed and prepared as `load` does, the partition report written where asked."""
    import json

    from irc.fileio import write_atomically

    report_path = options.get("report")
    if report_path and hit.report is not None:
        write_atomically(report_path, json.dumps(hit.report, indent=2) + "\n")
    from irc import parse_module

    module = parse_module(hit.text, filename=str(hit.path))
    refusals = [LoweringRefusal(**r) for r in hit.refusals]
    compiled = CompiledModel(
        module, entry=entry, targets=names, summary=hit.summary, refusals=refusals, check=check
    )
    weights = None if hit.weights is None else hit.weights.read_bytes()
    compiled._artifact = _Artifact(hit.text, weights, hit.weights_name)
    return compiled


def _store_in_cache(key: str, compiled: CompiledModel) -> None:
    """Put a fresh compilation into the compile cache (its artifact printed once: `save`
    reuses the text)."""
    from dataclasses import asdict

    from irc import compile_cache
    from irc.artifact import artifact_text

    name = compile_cache.weights_file_name(key)
    text, blob = artifact_text(compiled._artifact_module(False), name)
    compile_cache.store(
        key,
        text,
        blob,
        summary=compiled.summary,
        refusals=[asdict(r) for r in compiled.refusals],
        report=compiled._report,
    )
    compiled._artifact = _Artifact(text, blob, None if blob is None else name)


@dataclass(frozen=True)
class _Artifact:
    """A compiled model's artifact as printed once (`CompiledModel.save` writes it again
    under another name without printing the module)."""

    text: str
    weights: bytes | None
    weights_name: str | None

    def save(self, path: str) -> None:
        from irc.artifact import weights_path
        from irc.compile_cache import renamed_weights
        from irc.fileio import write_atomically

        if self.weights is None or self.weights_name is None:
            write_atomically(path, self.text)
            return
        weights_file = weights_path(path)
        text = renamed_weights(self.text, self.weights_name, os.path.basename(weights_file))
        write_atomically(weights_file, self.weights)
        write_atomically(path, text)


def _check_available(names: Sequence[str], strict: bool) -> None:
    """Each target's `available()`: a logged warning for one that is not (its ops fall back
    to the next target or the host), `TargetError` with `strict`."""
    from irc.targets import TargetError, get_target

    for name in names:
        availability = get_target(name).available()
        if availability:
            continue
        reason = availability.reason.removeprefix(f"{name}: ") or "no reason given"
        if strict:
            raise TargetError(f"target '{name}' is not available: {reason}")
        logging.getLogger(__name__).warning(
            "target '%s' is not available: %s; its ops fall back to %s",
            name,
            reason,
            "the next target or the host" if name != names[-1] else "the host",
        )


def _model_source(
    model: ModuleOp | str | os.PathLike[str],
    bind: Mapping[str, int | float] | None,
    entry: str,
) -> ModelSource:
    from xdsl.dialects.builtin import ModuleOp

    from irc.specialize import ModelSource

    if isinstance(model, ModuleOp):
        return ModelSource("<module>", module=model.clone(), entry=entry)
    if not isinstance(model, str | os.PathLike):
        raise TypeError(
            f"expected a ModuleOp or a path, got {type(model).__name__}; "
            "parse IR text with irc.parse_module first"
        )
    from irc.fileio import is_model_file

    path = os.fspath(model)
    if is_model_file(path):
        return ModelSource.read(path, bind)
    import irc

    return ModelSource(path, module=irc.read_module(model), entry=entry)


def _compile_source(
    source: ModelSource,
    shapes: Mapping[str, Sequence[int]],
    targets: Sequence[str],
    entry: str,
    check: bool,
    options: Mapping[str, Any],
) -> CompiledModel:
    """One specialisation of `source` (no source kept: it is a cache entry)."""
    return _compile_module(source.instantiate(shapes), list(targets), entry, check, options)


def _unspecialised_program(module: ModuleOp, entry: str) -> Program:
    """Placeholder program of a model compiled before its input shapes are known: the
    entry's signature (with `?` dims) and no schedule. `CompiledModel.run` never runs it
    (inputs of static shapes go to their specialisation); run directly, it checks the
    inputs and says so."""
    from irc.runtime import InputError, Program
    from irc.runtime.executor import TensorSpec
    from irc.specialize import find_function
    from irc.targets.reference import numpy_dtype

    func = find_function(module, entry)
    if func is None:
        raise ValueError(f"no function @{entry} in the model")

    def specs(types: Sequence[Any], attr: str, prefix: str, first: int) -> list[TensorSpec]:
        # The importers name a function's inputs and outputs with an array of strings.
        names = cast("ArrayAttr[StringAttr] | None", func.attributes.get(attr))
        out = []
        for i, t in enumerate(types):
            name = names.data[i].data if names is not None else f"{prefix}{i}"
            out.append(TensorSpec(name, first + i, t, tuple(t.get_shape()), numpy_dtype(t)))
        return out

    inputs = specs(func.function_type.inputs.data, "irc.input_names", "arg", 0)
    outputs = specs(func.function_type.outputs.data, "irc.output_names", "result", len(inputs))

    class Unspecialised(Program):
        def _execute(self, slots: list[Any], listener: Any, profile: Any) -> list[Any]:
            raise InputError(
                f"@{self.entry} has dynamic input dimensions and no program of its own; "
                "run it through CompiledModel.run, which specialises it to the inputs' shapes"
            )

    return Unspecialised(entry, inputs, outputs, (), {}, len(inputs) + len(outputs))


def _unspecialised(
    source: ModelSource,
    input_shapes: Mapping[str, Sequence[int]] | None,
    names: list[str],
    entry: str,
    check: bool,
    options: Mapping[str, Any],
) -> CompiledModel:
    """A model compiled before its input shapes are known: its `module` is the model with
    `?` dims (`ModelSource.unspecialised`), and every input-shape signature it runs on is
    specialised on first use (cached, see the module docstring)."""
    from irc.specialize import format_shape

    module = source.unspecialised(input_shapes)
    program = _unspecialised_program(module, entry)
    dynamic = ", ".join(
        f"{spec.name}={format_shape(spec.shape)}"
        for spec in program.inputs
        if any(d < 0 for d in spec.shape)
    )
    summary = (
        f"targets: {', '.join(names)}\n@{entry} is compiled on its first run for each input "
        f"shape signature (dynamic inputs: {dynamic})"
    )
    return CompiledModel(
        module,
        entry=entry,
        targets=names,
        summary=summary,
        program=program,
        check=check,
        source=source,
        options=options,
    )


def _compile_buckets(
    source: ModelSource,
    keep: ModelSource | None,
    shape_buckets: Mapping[str, Sequence[int | Sequence[int]]],
    input_shapes: Mapping[str, Sequence[int]] | None,
    names: list[str],
    entry: str,
    check: bool,
    options: Mapping[str, Any],
) -> CompiledModel:
    """One specialisation per bucket, as `@<entry>_s<i>`, behind the guarded `@entry`."""
    from xdsl.dialects.builtin import ModuleOp, StringAttr

    from irc.specialize import build_guard, expand_buckets, find_function, format_shape

    buckets = expand_buckets(shape_buckets, source.signature(), input_shapes)
    merged = ModuleOp([])
    symbols: set[str] = set()
    variants: list[CompiledModel] = []
    summaries: list[str] = []
    for index, shapes in enumerate(buckets):
        module = source.instantiate(shapes)
        function = find_function(module, entry)
        if function is None:
            raise ValueError(f"{source.path}: no function @{entry} to specialise")
        name = f"{entry}_s{index}"
        function.sym_name = StringAttr(name)
        variant = _compile_module(module, names, name, check, options)
        variants.append(variant)
        described = ", ".join(f"{n}={format_shape(s)}" for n, s in shapes.items())
        summaries.append(f"bucket @{name} ({described}):\n{variant.summary}")
        for op in list(variant.module.body.block.ops):
            symbol = op.attributes.get("sym_name") or op.properties.get("sym_name")
            if isinstance(symbol, StringAttr):
                if symbol.data in symbols:
                    raise ValueError(
                        f"{source.path}: shape buckets need a module whose only function is "
                        f"@{entry}; @{symbol.data} appears in every specialisation"
                    )
                symbols.add(symbol.data)
            op.detach()
            merged.body.block.add_op(op)
    functions = []
    for i in range(len(buckets)):
        function = find_function(merged, f"{entry}_s{i}")
        assert function is not None  # moved into `merged` just above
        functions.append(function)
    merged.body.block.add_op(build_guard(entry, functions))
    _mark_artifact(merged)
    return CompiledModel(
        merged,
        entry=entry,
        targets=names,
        summary="\n".join(summaries),
        refusals=[r for v in variants for r in v.refusals],
        buckets=[v.program for v in variants],
        check=check,
        source=keep,
        options=options,
    )


def _compile_module(
    source: ModuleOp,
    names: list[str],
    entry: str,
    check: bool,
    options: Mapping[str, Any],
) -> CompiledModel:
    """The default pipeline with lowering refusals (see the module docstring) on `source`."""
    from irc.context import make_context
    from irc.pipelines import lower_executables, lower_host
    from irc.runtime import CompileError, ExecutorError, compile_function
    from irc.timing import step

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
            with step("prepare", module):  # load every executable on its target
                program = compile_function(module, entry, check=check)
        except ExecutorError as exc:  # a runtime that cannot load (build) an executable
            executable = _executable_of(exc.op)
            if executable is None or executable.sym_name.data in existing:
                raise
            failing = None if exc.op is executable else exc.op
            if state.refuse(executable, failing, exc.message):
                continue
            raise
        _untag(module)
        _mark_artifact(module)
        compiled = CompiledModel(
            module,
            entry=entry,
            targets=names,
            summary=_summary(names, report, state.refusals),
            refusals=state.refusals,
            program=program,
            check=check,
        )
        compiled._report = None if report is None else report.to_json()
        return compiled
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

    An artifact (with `irc.format_version`) runs as it is: no pass runs, and the OpenCL
    programs come from their embedded binaries where one matches the device. A version this
    irc does not read raises `ArtifactError`. Other IR files get the reference preparation
    of their host functions first. The targets named by the executables must be registered
    (installed, `IRC_PLUGINS`, `load_plugin`). A guarded entry (shape buckets) loads every
    specialisation; other shapes raise `InputError` when run (the model is not at hand).
    """
    import irc
    from irc.pipelines import lower_host

    module = irc.read_module(path)
    if not check_format(module, path):
        lower_host(module)
    targets = list(dict.fromkeys(op.target.data for op in _executables(module)))
    return CompiledModel(module, entry=entry, targets=targets, check=check)
