"""Pipeline presets: which registered passes run, in which order, for a purpose.

Presets only string registered passes together (by their docs/design.md §6 names, through
`irc.context.get_all_passes()`); every step stays runnable alone with `irc-opt -p NAME`.

* `reference_passes(module)` / `prepare_for_reference(module)`: what the reference target
  needs before the executor runs a module. Quantized arithmetic (`nn.add`, `nn.conv2d`, ...
  on `!quant.uniform` tensors) has no reference kernel of its own: TOSA-style, it is defined
  by `lower-quantized`, which rewrites it into integer arithmetic and `quant.rescale`. So
  when the module has quantized ops and `lower-quantized` is registered, that pass runs;
  otherwise nothing does (float modules run as they are). Without the pass, quantized
  arithmetic reaches the executor and is reported there as unsupported, at its op.
* `default_pipeline(targets, **options)`: the module-level part of the default pipeline
  (docs/design.md §3) as an irc-opt `-p` string, ending with `outline-delegates`:

  ```
  canonicalize,widen-fp16,partition{targets=a,b ...},
  convert-layout{targets=<preferring X> to=X} (one per preferred layout),
  insert-qdq{targets=<float-only targets>},
  fuse-activations{targets=<targets other than the host's>},outline-delegates
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation
    from xdsl.passes import ModulePass
    from xdsl.utils.arg_spec import ArgSpec

    from irc.diagnostics import Diagnostic
    from irc.dialects.delegate import ExecutableOp

__all__ = [
    "HOST_TARGET",
    "LOWER_QUANTIZED",
    "NAMED_PIPELINES",
    "LoweringError",
    "NamedPipeline",
    "PassOption",
    "check_options",
    "compile_pipeline",
    "compile_pipeline_spec",
    "default",
    "default_pipeline",
    "lower_executables",
    "lower_host",
    "lowering_pipelines",
    "make_pass",
    "parse_pipeline",
    "pass_options",
    "pass_summary",
    "pipeline_specs",
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

    `fuse-qdq` when a target other than the host's runs quantized ops natively,
    `canonicalize`, `partition{targets=...}` with every option but `emulate_rounding`
    (`min_ops`, `max_regions`, `deny_ops`, `place`, `strict`, `report`, ...: Python names,
    passed on with dashes), one `convert-layout{targets=... to=X}` per distinct
    `preferred_layout` X (targets without a preference get none), `insert-qdq{targets=...}`
    for the targets that do not run quantized ops (with `emulate_rounding`),
    `fuse-activations{targets=...}` for the targets other than the host's (and
    `widen-fp16{targets=... precision=...}` with them after `canonicalize` when there are
    such targets; `precision`: a float16 model's activation storage, docs/fp16.md), and
    `outline-delegates`. Steps whose target list would be empty are left
    out: without
    `targets` those passes would convert the whole graph. Raises `TargetError` for an
    unknown target.
    """
    from irc.targets import get_target

    names = list(dict.fromkeys(targets))
    if not names:
        raise ValueError("the default pipeline needs at least one target")
    resolved = [get_target(name) for name in names]
    qdq_options = {k: options.pop(k) for k in _INSERT_QDQ_OPTIONS if k in options}
    precision = options.pop("precision", None)  # widen-fp16's: a float16 model's storage

    steps = ["canonicalize", pass_spec("partition", {"targets": names, **options})]
    if any(target.runs_quantized and target.name != HOST_TARGET for target in resolved):
        # Native int8 targets take QDQ islands as integer ops; before canonicalize, which
        # would fold the dequantized weights into float constants.
        steps.insert(0, "fuse-qdq")
    layouts: dict[str, list[str]] = {}
    for target in resolved:
        if target.preferred_layout is not None:
            layouts.setdefault(target.preferred_layout, []).append(target.name)
    for layout, members in layouts.items():
        steps.append(pass_spec("convert-layout", {"targets": members, "to": layout}))
    float_only = [target.name for target in resolved if not target.runs_quantized]
    if float_only:
        steps.append(pass_spec("insert-qdq", {"targets": float_only, **qdq_options}))
    delegated = [name for name in names if name != HOST_TARGET]
    if delegated:
        # a float16 model: each op in float32 unless a delegated target computes it in
        # float16 (Target.computes_float16_op at `precision`)
        widen = pass_spec("widen-fp16", {"targets": delegated, "precision": precision})
        steps.insert(steps.index("canonicalize") + 1, widen)
        steps.append(pass_spec("fuse-activations", {"targets": delegated}))
    steps.append("outline-delegates")
    return ",".join(steps)


default = default_pipeline
"""`irc.pipelines.default` (docs/design.md §3) is `default_pipeline`."""


def compile_pipeline_spec(targets: Sequence[str], **options: Any) -> str:
    """`default_pipeline(targets, **options)` followed by every target's `lowering_passes()`
    (in priority order): the whole of `compile_pipeline` as one `-p` string, for `irc-opt`.

    Unlike `irc.compile`, nothing falls back when a target's lowering fails."""
    steps = [default_pipeline(targets, **options)]
    steps += lowering_pipelines(targets).values()
    return ",".join(steps)


@dataclass(frozen=True)
class NamedPipeline:
    """A pipeline that `-p` accepts by name, with options, like a pass."""

    name: str
    summary: str
    build: Callable[..., str]
    """Options (Python names) -> the `-p` string it stands for."""


NAMED_PIPELINES: dict[str, NamedPipeline] = {
    pipeline.name: pipeline
    for pipeline in (
        NamedPipeline(
            "irc-default",
            "the module-level default pipeline, irc.pipelines.default_pipeline: canonicalize, "
            "partition, convert-layout and insert-qdq per target, outline-delegates "
            "(options: targets=a,b and partition's or insert-qdq's options)",
            default_pipeline,
        ),
        NamedPipeline(
            "irc-compile",
            "irc-default, then each target's lowering passes (lower-opencl, "
            "lower-quantized,lower-cpu, ...): the module irc-compile writes, without its "
            "fallback when a lowering fails (same options)",
            compile_pipeline_spec,
        ),
    )
}
"""Named pipelines (`-p 'irc-default{targets=opencl,cpu}'`), expanded by `parse_pipeline`."""


_MLIR_ANCHOR = re.compile(r"^\s*builtin\.module\s*\((?P<body>.*)\)\s*$", re.DOTALL)
_NESTED_ANCHOR = re.compile(r"[A-Za-z_][\w.]*\s*\(")


def pipeline_specs(text: str) -> list[ArgSpec]:
    """The passes of a pipeline string as xDSL `ArgSpec`s (name and options): irc's
    `a,b{opt=1}` or MLIR's `builtin.module(a,b{opt=1})`, named pipelines expanded.

    Raises `ValueError` with a short message for bad syntax, nested anchors
    (`func.func(...)`) and bad options of a named pipeline.
    """
    from xdsl.utils.arg_spec import parse_pipeline as parse_specs
    from xdsl.utils.exceptions import ArgSpecParseError

    match = _MLIR_ANCHOR.match(text)
    body = match.group("body") if match else text
    nested = _NESTED_ANCHOR.search(body)
    if nested:
        raise ValueError(
            f"nested pass pipelines ('{nested.group(0).strip()}...)') are not supported: irc's "
            "passes run on the module; write 'builtin.module(a,b)' or just 'a,b'"
        )
    body = _outside_braces_unspaced(body)
    if not body:
        return []
    try:
        specs = list(parse_specs(body))
    except ArgSpecParseError as exc:  # a BaseException, with a multi-line text
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise ValueError(f"bad pipeline '{body}': {lines[-1].strip() if lines else exc}") from None
    expanded: list[ArgSpec] = []
    for spec in specs:
        named = NAMED_PIPELINES.get(spec.name)
        if named is None:
            expanded.append(spec)
            continue
        expanded += pipeline_specs(named.build(**_named_options(spec)))
    return expanded


def _outside_braces_unspaced(text: str) -> str:
    """`text` without the whitespace around its top-level commas and at its ends (MLIR
    allows `a, b`; xDSL's pipeline lexer does not); whitespace inside `{...}` stays."""
    pieces: list[str] = []
    depth, quote, start = 0, False, 0
    for position, char in enumerate(text):
        if char == '"' and (position == 0 or text[position - 1] != "\\"):
            quote = not quote
        elif not quote:
            depth += char == "{"
            depth -= char == "}"
            if depth == 0 and char == ",":
                pieces.append(text[start:position].strip())
                start = position + 1
    pieces.append(text[start:].strip())
    return ",".join(pieces) if any(pieces) else ""


def _named_options(spec: ArgSpec) -> dict[str, Any]:
    """A named pipeline's options as Python keyword arguments (lists for several values)."""
    options: dict[str, Any] = {}
    for key, values in spec.parameters.items():
        name = key.replace("-", "_")
        options[name] = list(values) if name in _LIST_OPTIONS or len(values) != 1 else values[0]
    if "targets" not in options:
        example = f"{spec.name}{{targets=cpu}}"
        raise ValueError(f"{spec.name}: option 'targets' is required, e.g. {example}")
    return options


_LIST_OPTIONS = frozenset({"targets", "deny_ops", "place"})


def parse_pipeline(
    spec: str, extra_passes: Mapping[str, type[ModulePass]] | None = None
) -> list[ModulePass]:
    """The passes of a `-p` pipeline string, from irc's pass registry (plus `extra_passes`,
    e.g. a plugin target's own lowering passes).

    `spec` is irc's `a,b{opt=1}` or MLIR's `builtin.module(a,b{opt=1})`; named pipelines
    (`NAMED_PIPELINES`) are expanded. Raises `ValueError` for an unknown pass, a bad option
    (in the words of `check_options`) and bad syntax.
    """
    from irc.context import get_all_passes

    available = dict(get_all_passes())
    for name, pass_class in (extra_passes or {}).items():
        available[name] = lambda pass_class=pass_class: pass_class
    passes: list[ModulePass] = []
    for arg_spec in pipeline_specs(spec):
        factory = available.get(arg_spec.name)
        if factory is None:
            names = ", ".join(sorted([*available, *NAMED_PIPELINES]))
            raise ValueError(f"unknown pass '{arg_spec.name}'; available passes: {names}")
        passes.append(make_pass(factory(), arg_spec))
    return passes


# ---- Pass options: checked and described in the user's words -----------------------------------


@dataclass(frozen=True)
class PassOption:
    """One option of a pass, from its dataclass field (and the field's docstring)."""

    name: str
    """The option's spelling in a pipeline (`keep-signature`)."""
    type: str
    """`NCHW|NHWC`, `bool`, `int`, `str`, `list of str`, ..."""
    default: str
    """The default in pipeline syntax (`true`, `NCHW`, an empty list as ``)."""
    doc: str
    """The field's docstring, first sentence-line."""


def make_pass(pass_class: type[ModulePass], spec: ArgSpec) -> ModulePass:
    """`pass_class.from_pass_spec(spec)` after `check_options`; `ValueError` for bad options
    (also those the pass's own `__post_init__` refuses), prefixed with the pass name."""
    check_options(pass_class, spec)
    try:
        return pass_class.from_pass_spec(spec)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{spec.name}: {exc}") from None


def check_options(pass_class: type[ModulePass], spec: ArgSpec) -> None:
    """Raise `ValueError` for an option `spec` gives that `pass_class` does not take, or a
    value of the wrong kind: `convert-layout: option 'to' must be one of NCHW, NHWC, got
    'X'`."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(pass_class)
    fields = [f.name for f in dataclasses.fields(pass_class) if f.init and f.name != "name"]
    for key, values in spec.parameters.items():
        name = key.replace("-", "_")
        if name not in fields:
            known = ", ".join(f.replace("_", "-") for f in fields)
            takes = f"its options: {known}" if known else "it takes no options"
            raise ValueError(f"{spec.name}: unknown option '{key}'; {takes}")
        problem = _value_problem(hints[name], values)
        if problem:
            raise ValueError(f"{spec.name}: option '{key}' {problem}")


def _value_problem(hint: Any, values: tuple[Any, ...]) -> str | None:
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if not values and len(members) < len(args):
            return None
        hint = members[0] if len(members) == 1 else hint
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        element = args[0] if args else Any
        for value in values:
            problem = _scalar_problem(element, value)
            if problem:
                return f"takes a list of {_describe_type(element)}: {problem}"
        return None
    if len(values) != 1:
        got = ",".join(_show(v) for v in values) or "nothing"
        return f"takes one {_describe_type(hint)}, got {got}"
    return _scalar_problem(hint, values[0])


def _scalar_problem(hint: Any, value: Any) -> str | None:
    import typing

    if typing.get_origin(hint) is typing.Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            return f"must be one of {', '.join(str(c) for c in choices)}, got {_show(value)}"
        return None
    if hint is bool and not isinstance(value, bool):
        return f"must be true or false, got {_show(value)}"
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        return f"must be an integer, got {_show(value)}"
    if hint is float and (isinstance(value, bool) or not isinstance(value, int | float)):
        return f"must be a number, got {_show(value)}"
    if hint is str and not isinstance(value, str):
        return f"must be a string, got {_show(value)}"
    return None


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"'{value}'" if isinstance(value, str) else str(value)


def _describe_type(hint: Any) -> str:
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return "|".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        return " or ".join(_describe_type(m) for m in members) + " (optional)"
    if origin is tuple:
        return f"list of {_describe_type(args[0]) if args else 'values'}"
    return getattr(hint, "__name__", str(hint))


def pass_options(pass_class: type[ModulePass]) -> list[PassOption]:
    """Every option of a pass: spelling, type, default and docstring (read from the source
    of the class, where each field's docstring is the string literal below it)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(pass_class)
    docs = _field_docs(pass_class)
    options = []
    for f in dataclasses.fields(pass_class):
        if not f.init or f.name == "name":
            continue
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        options.append(
            PassOption(
                f.name.replace("_", "-"),
                _describe_type(hints[f.name]),
                _show_default(default),
                docs.get(f.name, ""),
            )
        )
    return options


def _show_default(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(_show_default(v) for v in value)
    return str(value)


def _field_docs(pass_class: type) -> dict[str, str]:
    """Field name -> the docstring below it, for the class and its dataclass bases."""
    import ast
    import inspect
    import itertools
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(pass_class.__mro__):
        if not dataclasses_is(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def dataclasses_is(klass: type) -> bool:
    import dataclasses

    return dataclasses.is_dataclass(klass) and klass.__module__ not in ("xdsl.passes", "builtins")


def pass_summary(pass_class: type) -> str:
    """The first paragraph of a pass's docstring, on one line."""
    doc = (pass_class.__doc__ or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


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


def lowering_pipelines(
    targets: Iterable[str], *, float16: bool = False, precision: str | None = None
) -> dict[str, str]:
    """Each target's `lowering_passes()` (targets without any are left out); with `float16`
    (the module holds a float16 model's values: `widen-fp16` marked it), its
    `float16_lowering_passes(precision)` where it has them."""
    from irc.targets import get_target

    pipelines: dict[str, str] = {}
    for name in dict.fromkeys(targets):
        target = get_target(name)
        half = target.float16_lowering_passes(precision) if float16 else None
        spec = (target.lowering_passes() if half is None else half).strip()
        if spec:
            pipelines[name] = spec
    return pipelines


def _executables(module: ModuleOp) -> list[ExecutableOp]:
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
    A module `widen-fp16` marked (`FLOAT16_MODEL`) gets each target's
    `float16_lowering_passes(precision)` where it has them (the precision the mark records).

    Raises `LoweringError` at the first failure, or, when a `failures` list is given,
    appends every failure to it and goes on with the next executable (a failed executable
    is left half lowered: the caller discards the module). Raises `TargetError` for an
    executable of an unknown target.
    """
    from xdsl.dialects.builtin import ModuleOp as Module
    from xdsl.dialects.builtin import StringAttr

    from irc.diagnostics import diagnostic_from_exception
    from irc.passes.widen_fp16 import FLOAT16_MODEL

    skipped = set(skip)
    executables = [exe for exe in _executables(module) if exe.sym_name.data not in skipped]
    marker = module.attributes.get(FLOAT16_MODEL)
    precision = marker.data if isinstance(marker, StringAttr) else None
    pipelines = lowering_pipelines(
        (exe.target.data for exe in executables), float16=marker is not None, precision=precision
    )
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
