"""The executor: a host `func.func` compiled once into a flat schedule of prepared steps.

`compile_function(module, entry)` walks the function body once and produces a `Program`:

* every SSA value gets a *slot*, an index into a list that one run fills in;
* constant-like ops (`nn.constant`, ...) are evaluated at compile time into read-only
  *constant slots*, shared by all runs;
* every other op becomes a `Step`: the prepared callable, its input slots, its output slots
  and the slots to free after it ran. Liveness is worked out here: a value is dropped right
  after its last use (or right after it is produced, when nothing uses it), except the
  function's outputs and the constants.

Steps come in three kinds:

* host ops: the callable comes from `step_factory(op)` (by default `step_for_op`, the
  reference target's kernel with its attributes read once);
* dispatches (`delegate.dispatch @exe::@entry(...)`): the executable's target is looked up
  by its `target` property (`irc.targets.get_target`, or the `targets=` given), its
  runtime loads the executable once, at compile time (one `LoadedExecutable` per
  executable, one runtime per target), and the step calls `loaded.execute(entry, args)`.
  `step_for_op` declines dispatches, and so does a factory that wraps it; a factory that
  returns a callable for a dispatch runs it itself, on host arrays;
* transfers: `to_host()` of a dispatch result, placed right before the first step that
  needs the value on the host.

Which values travel as device values is decided here, once (docs/design.md §4). The results of
a dispatch whose loaded executable `accepts_device_values()` may be device values: each is
handed on untouched to later dispatches of the same target that accept device values,
while host ops, dispatches of other targets (or ones that do not accept device values)
and the function's outputs read a host copy, made by one transfer step shared by all of
them. A dispatch whose executable does not accept device values gets no transfer steps:
its step turns any device value its runtime returns into an array at once. A transfer of
a value that already is a numpy array is the array itself (one type check).

`Program.run(inputs)` (keyed by name) and `Program.run_positional(args)` check the inputs
against the signature, copy the slot template (constants pre-filled) and run the steps in a
tight loop:

```python
for fn, ins, outs, frees, *_ in steps:
    results = fn(*[slots[i] for i in ins])
    ...
```

A run keeps all its state in its own slot list, so one `Program` can serve several
threads at once (docs/design.md §4, runtime contract). `profile=Profile()` times every step
(`irc.runtime.profiling`); without it the loop does no timing at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import ConstantLike

from irc.runtime.errors import CompileError, ExecutionError, ExecutorError, InputError
from irc.runtime.profiling import Profile, kernel_profiling

if TYPE_CHECKING:
    from irc.dialects.delegate import DispatchOp, ExecutableOp
    from irc.targets.base import LoadedExecutable, Target, TargetRuntime

__all__ = [
    "INPUT_NAMES_ATTR",
    "OUTPUT_NAMES_ATTR",
    "Listener",
    "Program",
    "Step",
    "StepFactory",
    "TargetsArg",
    "TensorSpec",
    "compile_function",
    "step_for_op",
]

INPUT_NAMES_ATTR = "irc.input_names"
"""Function attribute with the model's input tensor names (ArrayAttr of StringAttr)."""
OUTPUT_NAMES_ATTR = "irc.output_names"
"""Function attribute with the model's output tensor names (ArrayAttr of StringAttr)."""

StepCallable = Callable[..., tuple[Any, ...]]
"""Runs one op: takes its operand values in order, returns one value per result."""

StepFactory = Callable[[Operation], StepCallable]
"""Prepares the callable of one op at compile time; raises `CompileError` when it cannot."""

TargetsArg = Mapping[str, "Target"] | Iterable["Target"] | None
"""Targets that run dispatches, by name or as a list; other names go to the registry."""


class Step(NamedTuple):
    """One entry of the schedule (a tuple, so the run loop unpacks it cheaply)."""

    fn: StepCallable
    """The prepared callable of `op`."""
    inputs: tuple[int, ...]
    """Slots of the operands, in operand order."""
    outputs: tuple[int, ...]
    """Slots the results go to, in result order."""
    frees: tuple[int, ...]
    """Slots whose last use is this step: cleared after it ran."""
    op: Operation
    """The op this step runs (for a transfer: the dispatch whose result it copies); for
    error messages, tracing and profiling."""
    kind: str = "host"
    """"host" (an op run by the step factory), "dispatch" (an executable's entry on a
    target runtime) or "transfer" (a dispatch result copied to the host)."""
    target: str = ""
    """The target of a dispatch or transfer; empty for host ops."""
    label: str = ""
    """What the step is called in schedules and profiles (`nn.add`, `@exe::@entry`,
    `to_host @exe::@entry#0`)."""


Listener = Callable[[Step, tuple[Any, ...]], None]
"""Called after every step with the step and its results (tracing, debugging)."""


@dataclass(frozen=True)
class TensorSpec:
    """What an input or output of a `Program` is: name, slot, type, shape and dtype."""

    name: str
    slot: int
    type: Attribute
    """The IR type (a `TensorType`, possibly quantized: the dtype is then its storage)."""
    shape: tuple[int, ...]
    """Static sizes; a negative size is a dynamic dimension (`?`) and matches anything."""
    dtype: np.dtype
    """The numpy dtype that carries values of `type`."""

    @property
    def is_static(self) -> bool:
        """Whether every dimension is known."""
        return all(d >= 0 for d in self.shape)

    def describe_shape(self) -> str:
        """The shape as `(1, ?, 3)`."""
        dims = ["?" if d < 0 else str(d) for d in self.shape]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


# ---- The default step factory -------------------------------------------------


class _RunOnTarget(CompileError):
    """`step_for_op` declines a dispatch: the executor runs it on its target's runtime."""


def step_for_op(op: Operation) -> StepCallable:
    """The callable that runs a host op in a schedule: the hook where kernels plug in.

    Every op gets its reference kernel (`irc.targets.reference.kernel_for`).
    `delegate.dispatch` is declined, so that `compile_function` runs it on its target's
    runtime (a factory that wraps this one declines it too; one that returns a callable
    for a dispatch runs it itself); `delegate.region` is refused: outline it first.
    """
    from irc.dialects import delegate
    from irc.targets.reference import UnsupportedOpError, kernel_for

    if isinstance(op, delegate.RegionOp):
        raise CompileError(
            f"'{op.name}' is not supported by the executor: run outline-delegates first, "
            "which turns regions into executables and dispatches",
            op,
        )
    if isinstance(op, delegate.DispatchOp):
        raise _RunOnTarget(
            f"'{op.name}' has no host kernel: compile_function runs it on its target's runtime",
            op,
        )
    try:
        return kernel_for(op)
    except UnsupportedOpError as exc:
        raise CompileError(str(exc), op) from None


# ---- The program --------------------------------------------------------------


class Program:
    """A function compiled into a schedule; `run` may be called from several threads."""

    entry: str
    """The name of the compiled function."""
    inputs: tuple[TensorSpec, ...]
    """The function's arguments, in signature order."""
    outputs: tuple[TensorSpec, ...]
    """The function's results, in signature order."""
    steps: tuple[Step, ...]
    """The schedule, in execution order (constant-like ops are not in it)."""
    constants: Mapping[int, np.ndarray]
    """Read-only values of the constant slots, evaluated once at compile time."""
    num_slots: int
    loaded: Mapping[str, LoadedExecutable]
    """The executables dispatched to, loaded by their targets' runtimes, by symbol name."""

    def __init__(
        self,
        entry: str,
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
        steps: Sequence[Step],
        constants: Mapping[int, np.ndarray],
        num_slots: int,
        loaded: Mapping[str, LoadedExecutable] | None = None,
    ) -> None:
        self.entry = entry
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.steps = tuple(steps)
        self.constants = dict(constants)
        self.num_slots = num_slots
        self.loaded = dict(loaded or {})
        template: list[Any] = [None] * num_slots
        for slot, value in self.constants.items():
            template[slot] = value
        self._template = template
        self._input_names = frozenset(spec.name for spec in self.inputs)
        self._returns = tuple((spec.name, spec.slot) for spec in self.outputs)
        # What the run loop iterates: (fn, inputs, output slot, frees, None, step) for a
        # single-result step, (fn, inputs, -1, frees, output slots, step) otherwise.
        self._plan = tuple(
            (step.fn, step.inputs, step.outputs[0], step.frees, None, step)
            if len(step.outputs) == 1
            else (step.fn, step.inputs, -1, step.frees, step.outputs, step)
            for step in self.steps
        )

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.outputs)

    def __repr__(self) -> str:
        return (
            f"<Program @{self.entry}: {len(self.inputs)} inputs, {len(self.outputs)} outputs, "
            f"{len(self.steps)} steps, {len(self.constants)} constants>"
        )

    def format_schedule(self) -> str:
        """The schedule as text, one step a line: `%3, %4 = nn.add(%0, %2)  free %0`.

        Dispatches print as `%5 = @exe::@entry [target](%3)`, transfers as
        `%6 = to_host @exe::@entry#0 [target](%5)`.
        """
        lines = [f"inputs: {', '.join(f'%{s.slot} {s.name}' for s in self.inputs)}"]
        if self.constants:
            lines.append(f"constants: {', '.join(f'%{slot}' for slot in sorted(self.constants))}")
        for step in self.steps:
            results = ", ".join(f"%{o}" for o in step.outputs)
            operands = ", ".join(f"%{i}" for i in step.inputs)
            where = f" [{step.target}]" if step.target else ""
            line = f"{results} = {step.label or step.op.name}{where}({operands})"
            if frees := step.frees:
                line += f"  free {', '.join(f'%{f}' for f in frees)}"
            lines.append(line)
        lines.append(f"outputs: {', '.join(f'%{s.slot} {s.name}' for s in self.outputs)}")
        return "\n".join(lines)

    # ---- Running --------------------------------------------------------------

    def run(
        self,
        inputs: Mapping[str, Any],
        *,
        listener: Listener | None = None,
        profile: Profile | None = None,
        check_finite: bool = False,
    ) -> dict[str, np.ndarray]:
        """Run the function on `inputs` (keyed by input name); outputs keyed by output name.

        Input validation (an `InputError` naming the input, before anything runs):

        * names: every input exactly once, no unknown name;
        * arrays: numpy arrays (a numpy scalar for a rank-0 input), not lists or floats;
        * shape: the rank and every static size; a dynamic size (`?`) takes any size;
        * dtype: exactly the input's dtype (float32, or the storage integers of a quantized
          input). Nothing is converted, not even safely (float64 or float16 for float32):
          convert with `x.astype(np.float32)`;
        * layout: any strides (views, transposes, negative steps) are accepted; a runtime
          that needs contiguous memory copies the array, the caller's array is never written;
        * NaN and Inf are not looked for (that would cost a pass over every input): they
          propagate as IEEE arithmetic on the reference and cpu targets, and give unspecified
          results on opencl (built with `-cl-fast-relaxed-math`). `check_finite=True` checks
          floating-point inputs and rejects a non-finite value.

        Raises `ExecutionError` when a step fails. `listener`, if given, is called after
        every step with the step and its results; `profile`, if given, accumulates the time
        of every step.
        """
        slots = self._bind(inputs)
        if check_finite:
            self._check_finite(slots)
        slots = self._execute(slots, listener, profile)
        return {name: _as_output(slots[slot]) for name, slot in self._returns}

    def run_positional(
        self,
        args: Sequence[Any],
        *,
        listener: Listener | None = None,
        profile: Profile | None = None,
        check_finite: bool = False,
    ) -> list[np.ndarray]:
        """Run the function on its arguments in signature order; results in signature order.

        The positional form of `run` (what a target runtime's `execute(entry, args)` needs),
        with the same checks, options and errors.
        """
        slots = self._bind_positional(args)
        if check_finite:
            self._check_finite(slots)
        slots = self._execute(slots, listener, profile)
        return [_as_output(slots[slot]) for _, slot in self._returns]

    def _execute(
        self, slots: list[Any], listener: Listener | None, profile: Profile | None
    ) -> list[Any]:
        """Run the schedule on a bound slot list; returns it with the outputs in place."""
        step: Step | None = None
        step_ns: list[int] = []  # per step, and the whole run: measured when profiling
        run_ns = 0
        if profile is not None and profile.program not in (None, self):
            raise ValueError(
                f"this Profile records {profile.program!r}; use a new Profile for {self!r}"
            )
        try:
            if listener is None and profile is None:
                # The hot loop: single-result steps (almost all) unpack their 1-tuple
                # straight into the slot, which also checks the result count. `step` is
                # only read by the error handler below.
                for fn, ins, out, frees, multi, step in self._plan:  # noqa: B007
                    if multi is None:
                        (slots[out],) = fn(*[slots[i] for i in ins])
                    else:
                        for slot, value in zip(multi, fn(*[slots[i] for i in ins]), strict=True):
                            slots[slot] = value
                    for slot in frees:
                        slots[slot] = None
            else:
                clock = time.perf_counter_ns
                step_ns = [0] * len(self.steps)
                started = clock()
                with kernel_profiling(profile):  # target runtimes add per-kernel times
                    for index, step in enumerate(self.steps):
                        fn, ins, outs, frees = step[:4]
                        before = clock()
                        results = fn(*[slots[i] for i in ins])
                        for slot, value in zip(outs, results, strict=True):
                            slots[slot] = value
                        step_ns[index] = clock() - before
                        for slot in frees:
                            slots[slot] = None
                        if listener is not None:
                            listener(step, results)
                run_ns = clock() - started
        except Exception as exc:
            if step is None:
                raise
            op = step.op
            raise ExecutionError(
                f"{_describe_step(step)} failed: {_describe_exception(exc, step)}", op
            ) from exc
        if profile is not None:
            profile.record(self, step_ns, run_ns)
        return slots

    def _bind(self, inputs: Mapping[str, Any]) -> list[Any]:
        """A fresh slot list with the checked inputs and the constants in place."""
        if not isinstance(inputs, Mapping):
            raise InputError(
                f"inputs of @{self.entry} must be a mapping from input name to array, "
                f"got {type(inputs).__name__}"
            )
        if inputs.keys() != self._input_names:
            self._report_names(inputs)
        slots = self._template.copy()
        for spec in self.inputs:
            slots[spec.slot] = _check_input(self.entry, spec, inputs[spec.name])
        return slots

    def _bind_positional(self, args: Sequence[Any]) -> list[Any]:
        if isinstance(args, Mapping) or not isinstance(args, Sequence):
            raise InputError(
                f"arguments of @{self.entry} must be a sequence in signature order, "
                f"got {type(args).__name__}"
            )
        if len(args) != len(self.inputs):
            raise InputError(
                f"@{self.entry} takes {len(self.inputs)} argument"
                f"{'' if len(self.inputs) == 1 else 's'}, got {len(args)}"
            )
        slots = self._template.copy()
        for spec, value in zip(self.inputs, args, strict=True):
            slots[spec.slot] = _check_input(self.entry, spec, value)
        return slots

    def _check_finite(self, slots: Sequence[Any]) -> None:
        """Reject a NaN or an infinity in a floating-point input (`check_finite=True`)."""
        for spec in self.inputs:
            value = slots[spec.slot]
            if value.dtype.kind not in "fc" or np.isfinite(value).all():
                continue
            index = tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0])
            raise InputError(
                f"input '{spec.name}' of @{self.entry}: non-finite value {value[index]} at "
                f"index {list(index)} (check_finite=True)"
            )

    def _report_names(self, inputs: Mapping[str, Any]) -> None:
        given = set(inputs)
        unknown = sorted(given - self._input_names)
        missing = [name for name in self.input_names if name not in given]
        expected = ", ".join(f"'{name}'" for name in self.input_names) or "none"
        problems = []
        if unknown:
            problems.append(f"unknown input{_plural(unknown)} {_quoted(unknown)}")
        if missing:
            problems.append(f"missing input{_plural(missing)} {_quoted(missing)}")
        raise InputError(f"{'; '.join(problems)} for @{self.entry} (expected inputs: {expected})")


def _check_input(entry: str, spec: TensorSpec, value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        if not isinstance(value, np.generic):
            raise InputError(
                f"input '{spec.name}' of @{entry}: expected a numpy array, "
                f"got {type(value).__name__}"
            )
        value = np.asarray(value)
    if value.dtype != spec.dtype:
        shown = value.dtype.str if value.dtype.name == spec.dtype.name else value.dtype
        raise InputError(  # e.g. '>f4': a big-endian float32 is not float32 either
            f"input '{spec.name}' of @{entry}: expected dtype {spec.dtype}, got {shown}"
        )
    shape = value.shape
    expected = spec.shape
    if len(shape) != len(expected) or any(
        e >= 0 and e != g for e, g in zip(expected, shape, strict=True)
    ):
        raise InputError(
            f"input '{spec.name}' of @{entry}: expected shape {spec.describe_shape()}, got {shape}"
        )
    return value


def _as_output(value: Any) -> np.ndarray:
    """Graph outputs are writable arrays: scalars wrapped, constants and their views copied."""
    array = np.asarray(value)
    if not array.flags.writeable:
        array = array.copy()
    return array


_COUNT_MISMATCH = ("zip() argument 2", "too many values to unpack", "not enough values to unpack")


def _describe_step(step: Step) -> str:
    """How errors name a step: `'nn.add'`, `dispatch @exe::@entry on target 'x'`, ..."""
    if step.kind == "dispatch":
        return f"dispatch {step.label} on target '{step.target}'"
    if step.kind == "transfer":
        return f"{step.label} (target '{step.target}')"
    return f"'{step.op.name}'"


def _describe_exception(exc: Exception, step: Step) -> str:
    if isinstance(exc, ValueError) and str(exc).startswith(_COUNT_MISMATCH):
        what = "its runtime" if step.kind == "dispatch" else "its kernel"
        return f"{what} returned a wrong number of values (expected {len(step.outputs)})"
    return f"{type(exc).__name__}: {exc}"


def _plural(items: Sequence[str]) -> str:
    return "s" if len(items) > 1 else ""


def _quoted(items: Sequence[str]) -> str:
    return ", ".join(f"'{item}'" for item in items)


# ---- Dispatches ---------------------------------------------------------------


def _host_value(value: Any) -> Any:
    """`value` on the host: arrays as they are, device values through `to_host()`."""
    if isinstance(value, np.ndarray):
        return value
    to_host = getattr(value, "to_host", None)
    return np.asarray(value) if to_host is None else to_host()


def _to_host(value: Any) -> tuple[Any]:
    """The transfer step: a device value's host copy (numpy arrays pass as they are)."""
    return (_host_value(value),)


class _Dispatches:
    """Prepares `delegate.dispatch` steps: executables, targets, runtimes, loads (cached)."""

    def __init__(self, scope: Operation | None, targets: TargetsArg) -> None:
        self._scope = scope
        if targets is None:
            given: dict[str, Target] = {}
        elif isinstance(targets, Mapping):
            # TargetsArg's mapping is by name (a Mapping is Iterable, so the checker keeps
            # the other reading too).
            given = dict(cast("Mapping[str, Target]", targets))
        else:
            given = {target.name: target for target in targets}
        self._targets = given
        self._executables: dict[str, ExecutableOp] | None = None
        self._runtimes: dict[str, TargetRuntime] = {}
        self.loaded: dict[str, LoadedExecutable] = {}

    def prepare(self, op: DispatchOp) -> tuple[StepCallable, str, bool, str]:
        """The step callable of `op`, its target's name, whether the loaded executable
        accepts device values, and the step's label (`@exe::@entry`)."""
        callee = op.callee
        if len(callee.nested_references.data) != 1:
            raise CompileError(
                f"expected a callee of the form @executable::@entry, got {callee}", op
            )
        exe_name = callee.root_reference.data
        entry = callee.nested_references.data[0].data
        executable = self.executable(exe_name, op)
        target_name = executable.target.data
        loaded = self._load(executable, target_name, op)
        execute = loaded.execute
        accepts = loaded.accepts_device_values()

        if accepts:

            def dispatch(*args: Any) -> tuple[Any, ...]:
                return tuple(execute(entry, args))

        else:
            # A runtime that does not take device values back gets no transfer steps: a
            # device value it returns anyway is copied to the host right here.
            def dispatch(*args: Any) -> tuple[Any, ...]:
                return tuple(
                    value if isinstance(value, np.ndarray) else _host_value(value)
                    for value in execute(entry, args)
                )

        return dispatch, target_name, accepts, _callee_label(op)

    def executable(self, name: str, op: DispatchOp) -> ExecutableOp:
        from irc.dialects.delegate import ExecutableOp

        if self._executables is None:
            # The symbol table of the scope, built once: xDSL's lookups are linear.
            table: dict[str, ExecutableOp] = {}
            if self._scope is not None:
                for region in self._scope.regions:
                    for block in region.blocks:
                        for candidate in block.ops:
                            if isinstance(candidate, ExecutableOp):
                                table.setdefault(candidate.sym_name.data, candidate)
            self._executables = table
        executable = self._executables.get(name)
        if executable is None:
            raise CompileError(f"no delegate.executable @{name} in the module", op)
        return executable

    def _target(self, name: str, op: Operation) -> Target:
        target = self._targets.get(name)
        if target is None:
            from irc.targets.base import TargetError, get_target

            try:
                target = get_target(name)
            except TargetError as exc:
                raise CompileError(str(exc), op) from None
            self._targets[name] = target
        return target

    def _load(self, executable: ExecutableOp, target_name: str, op: DispatchOp) -> LoadedExecutable:
        exe_name = executable.sym_name.data
        loaded = self.loaded.get(exe_name)
        if loaded is not None:
            return loaded
        runtime = self._runtimes.get(target_name)
        if runtime is None:
            target = self._target(target_name, op)
            availability = target.available()
            if not availability:
                reason = f": {availability.reason}" if availability.reason else ""
                raise CompileError(f"target '{target_name}' is not available{reason}", op)
            runtime = self._runtimes[target_name] = target.runtime()
        try:
            loaded = runtime.load(executable)
        except ExecutorError:
            raise  # already located, at the op inside the executable
        except Exception as exc:
            raise CompileError(
                f"target '{target_name}' cannot load @{exe_name}: {type(exc).__name__}: {exc}",
                executable,
            ) from exc
        self.loaded[exe_name] = loaded
        return loaded


# ---- Compilation --------------------------------------------------------------


class _Planned(NamedTuple):
    fn: StepCallable
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    op: Operation
    kind: str
    target: str
    label: str


def compile_function(
    module: ModuleOp | FuncOp,
    entry: str = "main",
    *,
    step_factory: StepFactory = step_for_op,
    check: bool = False,
    targets: TargetsArg = None,
) -> Program:
    """Compile the function `@entry` of `module` (or the given `func.func`) into a `Program`.

    The module is not modified; the program keeps references to its ops (for messages).
    `step_factory` prepares the callable of each host op (default: reference kernels).
    Each `delegate.dispatch` runs on the runtime of its executable's target: a target
    from `targets` (a list of Targets, or a mapping from target name to Target, which may
    also run one target's executables on another, e.g. `{"opencl": ReferenceTarget()}`)
    or else from the registry; every executable is loaded once, here. `check=True` wraps
    every callable with a check of its results against the op's result types (count,
    array type, dtype, static sizes; a dispatch may return device values, checked once
    transferred), which locates kernel bugs at their op. Raises `CompileError`, located at the
    offending op, when an op cannot be run.
    """
    from irc.dialects.delegate import DispatchOp

    func = module if isinstance(module, FuncOp) else _find_entry(module, entry)
    entry = func.sym_name.data
    if not func.body.blocks:
        raise CompileError(f"@{entry} is a declaration without a body", func)
    if len(func.body.blocks) > 1:
        raise CompileError(f"@{entry} has several blocks; control flow is not supported", func)
    block = func.body.block
    terminator = block.last_op
    if not isinstance(terminator, ReturnOp):
        raise CompileError(f"@{entry} does not end with func.return", func)

    slot_of: dict[SSAValue, int] = {}
    num_slots = 0

    def fresh_slot() -> int:
        nonlocal num_slots
        num_slots += 1
        return num_slots - 1

    def new_slot(value: SSAValue) -> int:
        slot_of[value] = fresh_slot()
        return slot_of[value]

    input_names = _names(func, INPUT_NAMES_ATTR, "arg", len(block.args))
    inputs = [
        _spec(func, name, new_slot(arg), arg.type, "input")
        for name, arg in zip(input_names, block.args, strict=True)
    ]

    # Executables are looked up in the module given, or in the function's parent.
    scope = module if isinstance(module, ModuleOp) else func.parent_op()
    dispatches = _Dispatches(scope, targets)
    constants: dict[int, np.ndarray] = {}
    planned: list[_Planned] = []
    # Dispatch results (possibly device values): slot -> (target, producing step's label,
    # result index, type); and the slot of each one's host copy, once a step needs it.
    on_device: dict[int, tuple[str, str, int, Attribute, Operation]] = {}
    host_copy: dict[int, int] = {}

    def host_slot(slot: int) -> int:
        """The slot holding `slot`'s value on the host (a transfer step the first time)."""
        if slot not in on_device:
            return slot
        copy = host_copy.get(slot)
        if copy is None:
            target, label, index, type_, producer = on_device[slot]
            copy = host_copy[slot] = fresh_slot()
            fn: StepCallable = _to_host
            if check:
                fn = _checked(fn, [type_])
            planned.append(
                _Planned(
                    fn, (slot,), (copy,), producer, "transfer", target, f"to_host {label}#{index}"
                )
            )
        return copy

    for op in block.ops:
        if op is terminator:
            break
        if isinstance(op, DispatchOp):
            try:
                # A step factory may run dispatches itself (tests, tracing); it gets no
                # device values, and its results must be host arrays.
                fn, accepts = _prepare(op, step_factory), False
                target, label = _callee_target(dispatches, op), _callee_label(op)
            except _RunOnTarget:
                fn, target, accepts, label = dispatches.prepare(op)
            if check:
                fn = _checked(fn, op.result_types, device_values=accepts)
            # Device values stay on the device only between dispatches of one target.
            ins = tuple(
                slot if accepts and _device_target(on_device, slot) == target else host_slot(slot)
                for slot in (slot_of[operand] for operand in op.operands)
            )
            outs = tuple(new_slot(result) for result in op.results)
            if accepts:
                for index, (slot, result) in enumerate(zip(outs, op.results, strict=True)):
                    on_device[slot] = (target, label, index, result.type, op)
            planned.append(_Planned(fn, ins, outs, op, "dispatch", target, label))
            continue
        fn = _prepare(op, step_factory)
        if check:
            fn = _checked(fn, op.result_types)
        if op.has_trait(ConstantLike) and not op.operands:
            for result, value in zip(op.results, _evaluate_constant(fn, op), strict=True):
                constants[new_slot(result)] = _read_only(value)
            continue
        ins = tuple(host_slot(slot_of[operand]) for operand in op.operands)
        outs = tuple(new_slot(result) for result in op.results)
        planned.append(_Planned(fn, ins, outs, op, "host", "", op.name))

    output_names = _names(func, OUTPUT_NAMES_ATTR, "result", len(terminator.arguments))
    outputs = [
        _spec(func, name, host_slot(slot_of[value]), value.type, "output")
        for name, value in zip(output_names, terminator.arguments, strict=True)
    ]

    steps = _plan_frees(planned, pinned={spec.slot for spec in outputs} | constants.keys())
    return Program(entry, inputs, outputs, steps, constants, num_slots, dispatches.loaded)


def _callee_label(op: DispatchOp) -> str:
    callee = op.callee
    nested = "".join(f"::@{ref.data}" for ref in callee.nested_references.data)
    return f"@{callee.root_reference.data}{nested}"


def _callee_target(dispatches: _Dispatches, op: DispatchOp) -> str:
    """The target name of a dispatch's executable (for labels), "" when not found."""
    try:
        return dispatches.executable(op.callee.root_reference.data, op).target.data
    except CompileError:
        return ""


def _device_target(on_device: Mapping[int, tuple[Any, ...]], slot: int) -> str | None:
    """The target whose dispatch produced `slot`; None for host values."""
    produced = on_device.get(slot)
    return None if produced is None else produced[0]


def _find_entry(module: ModuleOp, entry: str) -> FuncOp:
    functions = [op for op in module.body.block.ops if isinstance(op, FuncOp)]
    for func in functions:
        if func.sym_name.data == entry:
            return func
    available = ", ".join(f"@{f.sym_name.data}" for f in functions) or "none"
    raise CompileError(f"no function @{entry} in the module (functions: {available})")


def _names(func: FuncOp, attr_name: str, prefix: str, count: int) -> list[str]:
    """The names from `irc.input_names` / `irc.output_names`, else `arg0..` / `result0..`."""
    attr = func.attributes.get(attr_name)
    if attr is None:
        return [f"{prefix}{i}" for i in range(count)]
    if not isinstance(attr, ArrayAttr) or not all(isinstance(a, StringAttr) for a in attr.data):
        raise CompileError(f"{attr_name} must be an array of strings, got {attr}", func)
    names = [a.data for a in attr.data if isinstance(a, StringAttr)]
    if len(names) != count:
        raise CompileError(f"{attr_name} has {len(names)} names for {count} values", func)
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise CompileError(f"{attr_name} names {_quoted(duplicates)} more than once", func)
    return names


def _spec(func: FuncOp, name: str, slot: int, type_: Attribute, what: str) -> TensorSpec:
    from irc.targets.reference import numpy_dtype

    shape: tuple[int, ...] = tuple(type_.get_shape()) if isinstance(type_, TensorType) else ()
    try:
        dtype = numpy_dtype(type_)
    except TypeError as exc:
        raise CompileError(f"{what} '{name}' of @{func.sym_name.data}: {exc}", func) from None
    return TensorSpec(name, slot, type_, shape, dtype)


def _prepare(op: Operation, step_factory: StepFactory) -> StepCallable:
    try:
        return step_factory(op)
    except CompileError:
        raise
    except Exception as exc:  # a kernel factory rejecting attributes it does not handle
        raise CompileError(f"cannot prepare '{op.name}': {type(exc).__name__}: {exc}", op) from exc


def _evaluate_constant(fn: StepCallable, op: Operation) -> tuple[Any, ...]:
    try:
        values = fn()
    except Exception as exc:
        raise CompileError(f"cannot evaluate '{op.name}': {type(exc).__name__}: {exc}", op) from exc
    if not isinstance(values, tuple) or len(values) != len(op.results):
        raise CompileError(
            f"the kernel of '{op.name}' must return a tuple of {len(op.results)} values", op
        )
    return values


def _read_only(value: Any) -> np.ndarray:
    """A read-only view: constants are shared by all runs and must not be written to."""
    array = np.asarray(value).view()
    array.flags.writeable = False
    return array


def _plan_frees(planned: Sequence[_Planned], pinned: set[int]) -> list[Step]:
    """Attach to each step the slots that die with it (liveness, at compile time)."""
    last_use: dict[int, int] = {}
    for index, entry in enumerate(planned):
        for slot in entry.inputs:
            last_use[slot] = index
    frees: list[list[int]] = [[] for _ in planned]
    for index, entry in enumerate(planned):
        for slot in entry.outputs:
            if slot not in last_use and slot not in pinned:  # dead result: drop at once
                frees[index].append(slot)
    for slot, index in last_use.items():
        if slot not in pinned:
            frees[index].append(slot)
    return [
        Step(
            p.fn,
            p.inputs,
            p.outputs,
            tuple(sorted(set(frees[index]))),
            p.op,
            p.kind,
            p.target,
            p.label,
        )
        for index, p in enumerate(planned)
    ]


def _checked(
    fn: StepCallable, result_types: Sequence[Attribute], *, device_values: bool = False
) -> StepCallable:
    """Wrap `fn` with a check of its results against `result_types`.

    `device_values=True` (dispatches) lets a result be a device value (anything with
    `to_host`), checked later by its transfer step, and accepts any sequence of results.
    """
    from irc.targets.reference import numpy_dtype

    expected: list[tuple[np.dtype | None, tuple[int, ...] | None]] = []
    for type_ in result_types:
        try:
            dtype: np.dtype | None = numpy_dtype(type_)
        except TypeError:
            dtype = None
        shape = tuple(type_.get_shape()) if isinstance(type_, TensorType) else None
        expected.append((dtype, shape))

    def checked(*args: Any) -> tuple[Any, ...]:
        results = fn(*args)
        if not isinstance(results, tuple):
            what = "runtime" if device_values else "kernel"
            raise TypeError(f"the {what} returned {type(results).__name__}, not a tuple")
        if len(results) != len(expected):
            what = "runtime" if device_values else "kernel"
            raise TypeError(
                f"the {what} returned {len(results)} values for {len(expected)} results"
            )
        for index, (value, (dtype, shape)) in enumerate(zip(results, expected, strict=True)):
            if not isinstance(value, np.ndarray):
                if device_values and hasattr(value, "to_host"):
                    continue
                raise TypeError(f"result #{index} is a {type(value).__name__}, not an ndarray")
            if dtype is not None and value.dtype != dtype:
                raise TypeError(f"result #{index} has dtype {value.dtype}, expected {dtype}")
            if shape is not None and (
                value.ndim != len(shape)
                or any(e >= 0 and e != g for e, g in zip(shape, value.shape, strict=True))
            ):
                dims = ", ".join("?" if d < 0 else str(d) for d in shape)
                raise TypeError(f"result #{index} has shape {value.shape}, expected ({dims})")
        return results

    return checked
