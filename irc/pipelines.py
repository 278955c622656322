"""Pipeline presets: which registered passes run, in which order, for a purpose.

Presets only string registered passes together (by their DESIGN.md §6 names, through
`irc.context.get_all_passes()`); every step stays runnable alone with `irc-opt -p NAME`.

* `reference_passes(module)` / `prepare_for_reference(module)`: what the reference target
  needs before the executor runs a module. Quantized arithmetic (`nn.add`, `nn.conv2d`, ...
  on `!quant.uniform` tensors) has no reference kernel of its own: TOSA-style, it is defined
  by `lower-quantized`, which rewrites it into integer arithmetic and `quant.rescale`. So
  when the module has quantized ops and `lower-quantized` is registered, that pass runs;
  otherwise nothing does (float modules run as they are). Without the pass, quantized
  arithmetic reaches the executor and is reported there as unsupported, at its op.
* `default_pipeline(targets, **options)`: the module-level part of the default pipeline
  (DESIGN.md §3) as an irc-opt `-p` string, ending with `outline-delegates`:

  ```
  canonicalize,partition{targets=a,b ...},convert-layout{targets=<preferring X> to=X} (one per
  preferred layout),insert-qdq{targets=<float-only targets>},outline-delegates
  ```

  followed by `lower_executables(module)` and `lower_host(module)` (`compile_pipeline` runs the
  three): each target's `lowering_passes()` run on each of its executables, and the reference
  target's preparation (`lower-quantized`) on the host functions, whose leftover ops run on
  the reference kernels.

How a target's lowering passes reach only its executables: they are ordinary `ModulePass`es
and run, from Python, on one executable at a time. The executable is moved into a temporary
`builtin.module` of its own, the passes run on that module (verified after each), and the
executable moves back to its place; attributes the passes set on the temporary module land
on the executable (where a target can record, e.g., kernel sources). This is IREE's nested
pass manager on `hal.executable` without a registered helper pass: a target's passes lower
the `delegate.executable` ops of their target that they find (`lower-opencl`, `lower-cpu`),
so every target's pipeline stays runnable alone with `irc-opt -p` on a module.
A failure is raised as a `LoweringError` naming the target, the executable and the op the
pass reported (when it reported one); `irc.compile` turns it into a refusal and partitions
again (`irc.compiler`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation
    from xdsl.passes import ModulePass

    from irc.diagnostics import Diagnostic

__all__ = [
    "HOST_TARGET",
    "LOWER_QUANTIZED",
    "LoweringError",
    "compile_pipeline",
    "default",
    "default_pipeline",
    "lower_executables",
    "lower_host",
    "lowering_pipelines",
    "parse_pipeline",
    "prepare_for_reference",
    "reference_passes",
    "run_passes",
]

LOWER_QUANTIZED = "lower-quantized"
"""The registered name of the pass that expresses quantized ops in integer arithmetic."""


def _has_quantized_ops(module: ModuleOp) -> bool:
    from irc.targets.reference import is_quantized_op

    return any(is_quantized_op(op) for op in module.walk())


def reference_passes(module: ModuleOp) -> list[ModulePass]:
    """The passes `prepare_for_reference` would run on `module` (possibly none)."""
    from irc.context import get_all_passes

    passes = get_all_passes()
    if LOWER_QUANTIZED in passes and _has_quantized_ops(module):
        return [passes[LOWER_QUANTIZED]()()]
    return []


def run_passes(module: ModuleOp, passes: list[ModulePass], ctx: Context | None = None) -> ModuleOp:
    """Apply `passes` in order to `module` (in place), verifying after each; return it.

    A pass failure propagates as the pass raised it; a pass that leaves invalid IR raises
    `IrcDiagnosticError` located at the broken op (as `irc-opt` reports it).
    """
    if passes:
        from irc.context import make_context
        from irc.diagnostics import verify_module
        from irc.timing import step

        ctx = make_context() if ctx is None else ctx
        for module_pass in passes:
            with step(module_pass.name, module):
                module_pass.apply(ctx, module)
                verify_module(module)
    return module


def prepare_for_reference(module: ModuleOp, ctx: Context | None = None) -> ModuleOp:
    """Run the passes the reference target needs before execution; modifies `module` in place.

    Today that is `lower-quantized` when the module has quantized ops and the pass is
    registered, else nothing. Returns `module`, for chaining.
    """
    return run_passes(module, reference_passes(module), ctx)


# ---- The default pipeline ----------------------------------------------------------------------

HOST_TARGET = "reference"
"""The target whose kernels run the host program's leftover ops (the executor's default)."""

_INSERT_QDQ_OPTIONS = ("emulate_rounding",)
"""`irc.compile` options that belong to `insert-qdq`; every other option goes to `partition`."""

_BARE_OPTION = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _option_value(value: Any) -> str:
    """One option value in `-p` syntax: bools, numbers, bare or quoted (escaped) strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"option values must be str, int, float or bool, got {value!r}")
    if _BARE_OPTION.fullmatch(value) and value not in ("true", "false"):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def pass_spec(name: str, options: Mapping[str, Any]) -> str:
    """`name{key=value ...}` with Python option names spelled with dashes; lists (tuples,
    lists) comma-separated; options set to None left out."""
    parts: list[str] = []
    for key, value in options.items():
        if value is None:
            continue
        values = list(value) if isinstance(value, list | tuple) else [value]
        if not values:
            continue
        parts.append(f"{key.replace('_', '-')}={','.join(_option_value(v) for v in values)}")
    return f"{name}{{{' '.join(parts)}}}" if parts else name


def default_pipeline(targets: Sequence[str], **options: Any) -> str:
    """The module-level default pipeline for `targets` (priority order), in `-p` syntax.

    `canonicalize`, `partition{targets=...}` with every option but `emulate_rounding`
    (`min_ops`, `max_regions`, `deny_ops`, `place`, `strict`, `report`, ...: Python names,
    passed on with dashes), one `convert-layout{targets=... to=X}` per distinct
    `preferred_layout` X (targets without a preference get none), `insert-qdq{targets=...}`
    for the targets that do not run quantized ops (with `emulate_rounding`), and
    `outline-delegates`. Steps whose target list would be empty are left out: without
    `targets` those passes would convert the whole graph. Raises `TargetError` for an
    unknown target.
    """
    from irc.targets import get_target

    names = list(dict.fromkeys(targets))
    if not names:
        raise ValueError("the default pipeline needs at least one target")
    resolved = [get_target(name) for name in names]
    qdq_options = {k: options.pop(k) for k in _INSERT_QDQ_OPTIONS if k in options}

    steps = ["canonicalize", pass_spec("partition", {"targets": names, **options})]
    layouts: dict[str, list[str]] = {}
    for target in resolved:
        if target.preferred_layout is not None:
            layouts.setdefault(target.preferred_layout, []).append(target.name)
    for layout, members in layouts.items():
        steps.append(pass_spec("convert-layout", {"targets": members, "to": layout}))
    float_only = [target.name for target in resolved if not target.runs_quantized]
    if float_only:
        steps.append(pass_spec("insert-qdq", {"targets": float_only, **qdq_options}))
    steps.append("outline-delegates")
    return ",".join(steps)


default = default_pipeline
"""`irc.pipelines.default` (DESIGN.md §3) is `default_pipeline`."""


def parse_pipeline(
    spec: str, extra_passes: Mapping[str, type[ModulePass]] | None = None
) -> list[ModulePass]:
    """The passes of a `-p` pipeline string, from irc's pass registry (plus `extra_passes`,
    e.g. a plugin target's own lowering passes).

    Raises `ValueError` for an unknown pass or option and for bad syntax (xDSL's
    `ArgSpecParseError`, a `BaseException`, is turned into a `ValueError`).
    """
    from xdsl.passes import PassPipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    from irc.context import get_all_passes

    if not spec.strip():
        return []
    try:
        available = dict(get_all_passes())
        for name, pass_class in (extra_passes or {}).items():
            available[name] = lambda pass_class=pass_class: pass_class
        return list(PassPipeline.parse_spec(available, spec).passes)
    except ArgSpecParseError as exc:
        raise ValueError(f"bad pipeline '{spec}': {exc}") from None


# ---- Lowering executables and the host -------------------------------------------------------


class LoweringError(Exception):
    """A target's lowering passes failed on one of its executables."""

    target: str
    executable: str
    """The executable's symbol name."""
    diagnostic: Diagnostic
    """The failure, with the op the pass reported (None when it named none)."""

    def __init__(self, target: str, executable: str, diagnostic: Diagnostic) -> None:
        super().__init__(f"{target}: lowering @{executable} failed: {diagnostic.message}")
        self.target = target
        self.executable = executable
        self.diagnostic = diagnostic

    @property
    def op(self) -> Operation | None:
        return self.diagnostic.op


def lowering_pipelines(targets: Iterable[str]) -> dict[str, str]:
    """Each target's `lowering_passes()` (targets without any are left out)."""
    from irc.targets import get_target

    pipelines: dict[str, str] = {}
    for name in dict.fromkeys(targets):
        spec = get_target(name).lowering_passes().strip()
        if spec:
            pipelines[name] = spec
    return pipelines


def _executables(module: ModuleOp) -> list[Operation]:
    from irc.dialects import delegate

    return [op for op in module.body.block.ops if isinstance(op, delegate.ExecutableOp)]


def lower_executables(
    module: ModuleOp,
    *,
    skip: Iterable[str] = (),
    ctx: Context | None = None,
    failures: list[LoweringError] | None = None,
) -> list[str]:
    """Run each executable's target's lowering passes on it (in place); returns the names
    of the executables lowered. `skip` names executables to leave alone (already lowered).

    Raises `LoweringError` at the first failure, or, when a `failures` list is given,
    appends every failure to it and goes on with the next executable (a failed executable
    is left half lowered: the caller discards the module). Raises `TargetError` for an
    executable of an unknown target.
    """
    from xdsl.dialects.builtin import ModuleOp as Module

    from irc.diagnostics import diagnostic_from_exception

    skipped = set(skip)
    executables = [exe for exe in _executables(module) if exe.sym_name.data not in skipped]
    pipelines = lowering_pipelines(exe.target.data for exe in executables)
    from irc.targets import get_target

    passes = {
        target: parse_pipeline(spec, get_target(target).passes())
        for target, spec in pipelines.items()
    }
    lowered: list[str] = []
    for exe in executables:
        target = exe.target.data
        name = exe.sym_name.data
        if target not in passes:
            continue
        block, anchor = exe.parent_block(), exe.next_op
        assert block is not None
        exe.detach()
        wrapper = Module([exe])
        try:
            run_passes(wrapper, passes[target], ctx)
        except Exception as exc:
            error = LoweringError(target, name, diagnostic_from_exception(exc, fallback_op=None))
            if failures is None:
                raise error from exc
            failures.append(error)
            continue
        finally:  # back in place, with whatever the passes left (normally `exe`)
            for op in list(wrapper.body.block.ops):
                op.detach()
                if anchor is None:
                    block.add_op(op)
                else:
                    block.insert_op_before(op, anchor)
        exe.attributes |= wrapper.attributes
        lowered.append(name)
    return lowered


def lower_host(module: ModuleOp, ctx: Context | None = None) -> ModuleOp:
    """`prepare_for_reference` on everything but the executables (the host program).

    The executables are taken out while the passes run and put back where they were, so a
    pass that walks the whole module (`lower-quantized`) cannot touch a target's code.
    """
    executables = _executables(module)
    anchors: list[Operation | None] = []
    for exe in executables:
        anchor = exe.next_op
        while anchor is not None and anchor in executables:
            anchor = anchor.next_op
        anchors.append(anchor)
    for exe in executables:
        exe.detach()
    # Verified once the executables are back: dispatches resolve only then.
    passes = []
    try:
        passes = reference_passes(module)
        if passes:
            from irc.context import make_context
            from irc.timing import step

            ctx = make_context() if ctx is None else ctx
            for module_pass in passes:
                with step(module_pass.name, module):
                    module_pass.apply(ctx, module)
    finally:
        block = module.body.block
        for exe, anchor in zip(executables, anchors, strict=True):
            if anchor is None:
                block.add_op(exe)
            else:
                block.insert_op_before(exe, anchor)
    if passes:
        from irc.diagnostics import verify_module

        verify_module(module)
    return module


def compile_pipeline(
    module: ModuleOp, targets: Sequence[str], ctx: Context | None = None, **options: Any
) -> ModuleOp:
    """The whole default pipeline on `module` (in place): `default_pipeline(targets,
    **options)`, then `lower_executables` and `lower_host`. Returns `module`.

    No fallback here: a lowering failure raises `LoweringError` (`irc.compile` handles it).
    """
    from irc.context import make_context

    ctx = make_context() if ctx is None else ctx
    before = {exe.sym_name.data for exe in _executables(module)}
    run_passes(module, parse_pipeline(default_pipeline(targets, **options)), ctx)
    lower_executables(module, skip=before, ctx=ctx)
    return lower_host(module, ctx)
