"""The executor: a host `func.func` compiled once into a flat schedule of prepared kernels.

`compile_function(module, entry)` walks the function body once and produces a `Program`:

* every SSA value gets a *slot*, an index into a list that one run fills in;
* constant-like ops (`nn.constant`, ...) are evaluated at compile time into read-only
  *constant slots*, shared by all runs;
* every other op becomes a `Step`: the prepared callable (`step_for_op(op)`, by default the
  reference target's kernel, attributes read once), its input slots, its output slots and
  the slots to free after it ran. Liveness is worked out here: a value is dropped right
  after its last use (or right after it is produced, when nothing uses it), except the
  function's outputs and the constants.

`Program.run(inputs)` checks the inputs against the signature, copies the slot template
(constants pre-filled) and runs the steps in a tight loop:

```python
for fn, ins, outs, frees, _ in steps:
    results = fn(*[slots[i] for i in ins])
    ...
```

A run keeps all its state in its own slot list, so one `Program` can serve several
threads at once (DESIGN.md §4, runtime contract).

Targets plug in through `step_factory`: a function from an op to its callable. The default,
`step_for_op`, gives reference kernels and refuses `delegate.dispatch` / `delegate.region`
(dispatch execution on target runtimes comes with a later issue); a target-aware factory
will return a callable that calls the target runtime for a dispatch and defer to
`step_for_op` for everything else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import ConstantLike

from irc.runtime.errors import CompileError, ExecutionError, InputError

__all__ = [
    "INPUT_NAMES_ATTR",
    "OUTPUT_NAMES_ATTR",
    "Listener",
    "Program",
    "Step",
    "StepFactory",
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
    """The op this step runs (for error messages, tracing and profiling)."""


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


def step_for_op(op: Operation) -> StepCallable:
    """The callable that runs `op` in a schedule: the hook where target runtimes plug in.

    Dispatches on the op's type. `delegate.dispatch` and `delegate.region` are refused for
    now (executing dispatches on target runtimes comes with a later issue); every other op
    gets its reference kernel (`irc.targets.reference.kernel_for`).
    """
    from irc.dialects import delegate
    from irc.targets.reference import UnsupportedOpError, kernel_for

    if isinstance(op, delegate.DispatchOp | delegate.RegionOp):
        raise CompileError(
            f"'{op.name}' is not supported by the executor yet: running dispatches on target "
            "runtimes comes with a later issue; run the module before partitioning",
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

    def __init__(
        self,
        entry: str,
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
        steps: Sequence[Step],
        constants: Mapping[int, np.ndarray],
        num_slots: int,
    ) -> None:
        self.entry = entry
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.steps = tuple(steps)
        self.constants = dict(constants)
        self.num_slots = num_slots
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
        """The schedule as text, one step a line: `%3, %4 = nn.add(%0, %2)  free %0`."""
        lines = [f"inputs: {', '.join(f'%{s.slot} {s.name}' for s in self.inputs)}"]
        if self.constants:
            lines.append(f"constants: {', '.join(f'%{slot}' for slot in sorted(self.constants))}")
        for step in self.steps:
            results = ", ".join(f"%{o}" for o in step.outputs)
            operands = ", ".join(f"%{i}" for i in step.inputs)
            line = f"{results} = {step.op.name}({operands})"
            if frees := step.frees:
                line += f"  free {', '.join(f'%{f}' for f in frees)}"
            lines.append(line)
        lines.append(f"outputs: {', '.join(f'%{s.slot} {s.name}' for s in self.outputs)}")
        return "\n".join(lines)

    # ---- Running --------------------------------------------------------------

    def run(
        self, inputs: Mapping[str, Any], *, listener: Listener | None = None
    ) -> dict[str, np.ndarray]:
        """Run the function on `inputs` (keyed by input name); outputs keyed by output name.

        Raises `InputError` when the inputs do not match the signature (names, rank, static
        sizes, exact dtype) and `ExecutionError` when a kernel fails. `listener`, if given,
        is called after every step with the step and its results.
        """
        slots = self._bind(inputs)
        step: Step | None = None
        try:
            if listener is None:
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
                for step in self.steps:
                    fn, ins, outs, frees, _ = step
                    results = fn(*[slots[i] for i in ins])
                    for slot, value in zip(outs, results, strict=True):
                        slots[slot] = value
                    for slot in frees:
                        slots[slot] = None
                    listener(step, results)
        except Exception as exc:
            if step is None:
                raise
            op = step.op
            raise ExecutionError(f"'{op.name}' failed: {_describe_exception(exc, op)}", op) from exc
        return {name: _as_output(slots[slot]) for name, slot in self._returns}

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
        raise InputError(
            f"input '{spec.name}' of @{entry}: expected dtype {spec.dtype}, got {value.dtype}"
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


def _describe_exception(exc: Exception, op: Operation) -> str:
    if isinstance(exc, ValueError) and str(exc).startswith(_COUNT_MISMATCH):
        return f"its kernel returned a wrong number of values (expected {len(op.results)})"
    return f"{type(exc).__name__}: {exc}"


def _plural(items: Sequence[str]) -> str:
    return "s" if len(items) > 1 else ""


def _quoted(items: Sequence[str]) -> str:
    return ", ".join(f"'{item}'" for item in items)


# ---- Compilation --------------------------------------------------------------


def compile_function(
    module: ModuleOp | FuncOp,
    entry: str = "main",
    *,
    step_factory: StepFactory = step_for_op,
    check: bool = False,
) -> Program:
    """Compile the function `@entry` of `module` (or the given `func.func`) into a `Program`.

    The module is not modified; the program keeps references to its ops (for messages).
    `step_factory` prepares the callable of each op (default: reference kernels);
    `check=True` wraps every callable with a check of its results against the op's result
    types (count, array type, dtype, static sizes), which locates kernel bugs at their op.
    Raises `CompileError`, located at the offending op, when an op cannot be run.
    """
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

    def new_slot(value: SSAValue) -> int:
        slot_of[value] = len(slot_of)
        return slot_of[value]

    input_names = _names(func, INPUT_NAMES_ATTR, "arg", len(block.args))
    inputs = [
        _spec(func, name, new_slot(arg), arg.type, "input")
        for name, arg in zip(input_names, block.args, strict=True)
    ]

    constants: dict[int, np.ndarray] = {}
    planned: list[tuple[StepCallable, tuple[int, ...], tuple[int, ...], Operation]] = []
    for op in block.ops:
        if op is terminator:
            break
        fn = _prepare(op, step_factory)
        if check:
            fn = _checked(fn, op)
        if op.has_trait(ConstantLike) and not op.operands:
            for result, value in zip(op.results, _evaluate_constant(fn, op), strict=True):
                constants[new_slot(result)] = _read_only(value)
            continue
        ins = tuple(slot_of[operand] for operand in op.operands)
        outs = tuple(new_slot(result) for result in op.results)
        planned.append((fn, ins, outs, op))

    output_names = _names(func, OUTPUT_NAMES_ATTR, "result", len(terminator.arguments))
    outputs = [
        _spec(func, name, slot_of[value], value.type, "output")
        for name, value in zip(output_names, terminator.arguments, strict=True)
    ]

    steps = _plan_frees(planned, pinned={spec.slot for spec in outputs} | constants.keys())
    return Program(entry, inputs, outputs, steps, constants, len(slot_of))


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


def _plan_frees(
    planned: Sequence[tuple[StepCallable, tuple[int, ...], tuple[int, ...], Operation]],
    pinned: set[int],
) -> list[Step]:
    """Attach to each step the slots that die with it (liveness, at compile time)."""
    last_use: dict[int, int] = {}
    for index, (_, ins, _, _) in enumerate(planned):
        for slot in ins:
            last_use[slot] = index
    frees: list[list[int]] = [[] for _ in planned]
    for index, (_, _, outs, _) in enumerate(planned):
        for slot in outs:
            if slot not in last_use and slot not in pinned:  # dead result: drop at once
                frees[index].append(slot)
    for slot, index in last_use.items():
        if slot not in pinned:
            frees[index].append(slot)
    return [
        Step(fn, ins, outs, tuple(sorted(set(frees[index]))), op)
        for index, (fn, ins, outs, op) in enumerate(planned)
    ]


def _checked(fn: StepCallable, op: Operation) -> StepCallable:
    """Wrap `fn` with a check of its results against `op`'s result types."""
    from irc.targets.reference import numpy_dtype

    expected: list[tuple[np.dtype | None, tuple[int, ...] | None]] = []
    for type_ in op.result_types:
        try:
            dtype: np.dtype | None = numpy_dtype(type_)
        except TypeError:
            dtype = None
        shape = tuple(type_.get_shape()) if isinstance(type_, TensorType) else None
        expected.append((dtype, shape))

    def checked(*args: Any) -> tuple[Any, ...]:
        results = fn(*args)
        if not isinstance(results, tuple):
            raise TypeError(f"the kernel returned {type(results).__name__}, not a tuple")
        if len(results) != len(expected):
            raise TypeError(
                f"the kernel returned {len(results)} values for {len(expected)} results"
            )
        for index, (value, (dtype, shape)) in enumerate(zip(results, expected, strict=True)):
            if not isinstance(value, np.ndarray):
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
