"""`irc-run`: run an IR file or a model and summarise (or save) its outputs.

```
irc-run FILE.mlir|MODEL [--entry main] [--inputs in.npz] [--outputs out.npz] [--seed N]
        [--check-kernels] [--check] [--targets t1,t2 [--strict]] [--plugin module:attr]
        [--threads N]
        [--profile] [--benchmark [--warmup N] [--runs N] [--json]]
```

Without `--targets` everything runs on the reference target (a compiled module's dispatches
on their executables' targets). With `--targets`, the module is first compiled with the
default pipeline for those targets (`irc.compile`: partition, outline, lower); `--plugin`
loads target plugins (as `IRC_PLUGINS` does). A target that cannot run here (no OpenCL
device matching `IRC_OPENCL_DEVICE`, no working C compiler) is one warning line on stderr
naming it and the reason, and its ops run on the next target or the host; `--strict` makes
that an error (exit 1), and an op left on the host too.

Inputs and outputs are `.npz` archives keyed by the function's input/output names
(`irc.input_names` / `irc.output_names`; for IR without them, the entry block's argument
names as written, `%x` -> `x`, as MLIR's tools do, else `arg0..`; `result0..`). Without `--inputs`
the inputs are random and seeded: standard normal for floats, uniform over the whole range
of the dtype for integers and quantized storage; a dynamic dimension needs `--inputs`.
Every output is summarised on stdout (shape, dtype, min/max/mean/std, first values);
`--outputs` also writes them, atomically (temp file + rename, nothing on error).

A compiled artifact (`irc-compile -o`, `irc.format_version`) runs as it is, without any
pass; a format version this irc does not read is an error. With shape buckets, the
specialisation whose input shapes equal the given inputs' runs (random inputs: the first
bucket's shapes); other shapes are an error.

`--check-kernels` checks every kernel's and runtime's results (count, dtype, shape) against
the IR types. `--check` (with `--targets`) is a layer-by-layer numeric debugger: after the
run, every dispatch's executable, as it was before its target's lowering (the default
pipeline run again on the module), runs on the reference target on the very inputs the
dispatch got, and one line per dispatch gives the largest absolute and relative difference
(`|out - ref| / max(|ref|, eps of the dtype)`) over its outputs, then a summary line:

```
@main_cpu_0::@entry [cpu]: max abs 5.96e-08, max rel 9.31e-08
check: 1 of 1 dispatches compared with the reference; largest abs 5.96e-08 (...), ...
```

After a compilation with lowering refusals the executables of the re-run pipeline may differ;
a dispatch without an executable of the same name and signature is listed as not compared.

`--benchmark` (in the spirit of TFLite's `benchmark_model`) prints the init time (import or
parse, plus compile), the first run's time, then min/median/mean/p90/std of `--runs` timed
runs (default 20) after `--warmup` untimed ones (default 3), in ms, instead of the output
summary; `--json` prints the same as one JSON object (`init_ms`, `first_run_ms`, `warmup`,
`threads`, `runs`, `profile`, `kernels`). `--profile` times every dispatch, transfer and host
op (`irc.runtime.Profile`) and prints a table sorted by cost (calls, total ms, %), then the
device time of every kernel launch of targets that time them (the opencl target: `target`,
`dispatch`, launch `index`, `kernel`, `op`, calls, ms, % of the device time): over the timed
runs with `--benchmark`, else of the single run after the summary. `--profile --json`
without `--benchmark` prints one JSON object instead of summary and tables: `outputs` (name
→ shape, dtype, min/max/mean/std; a non-finite statistic as a string such as "nan"),
`profile` (the step rows) and `kernels` (the launch rows). `--threads N` sets
`OMP_NUM_THREADS` before anything is compiled or loaded: the thread count of targets that
use OpenMP (the cpu target's generated code); others ignore it.

Problems (missing file, bad IR, an op without a reference kernel, a bad `.npz`, inputs that
do not match the signature) end with one message on stderr, located in the IR where there
is a place to point at, exit status 1 and no traceback; usage errors exit with 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, SupportsFloat

from irc.tools.common import (
    ToolError,
    add_model_options,
    add_target_options,
    add_version_option,
    is_model_file,
    load_plugins,
    parse_bindings,
    parse_input_shapes,
    parse_targets,
    print_tool_error,
    report_diagnostic,
    run_tool,
    write_output,
)

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    from irc.diagnostics import Diagnostic
    from irc.runtime import Listener, Program, Step, TensorSpec
    from irc.runtime.profiling import KernelRow, Profile, ProfileRow
    from irc.targets import LoadedExecutable

__all__ = [
    "DispatchDifference",
    "ToolError",
    "format_differences",
    "main",
    "random_inputs",
    "summarize",
]

_TOOL = "irc-run"
_PREVIEW = 8
"""How many leading values of each output the summary shows."""


def _make_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=_TOOL,
        description="Run a function of an IR file on irc's reference (numpy) target.",
    )
    parser.add_argument(
        "input_file", metavar="FILE", help="an IR file (.mlir) or a model (.tflite, .onnx)"
    )
    parser.add_argument(
        "--entry", default="main", help="the function to run (default: %(default)s)"
    )
    parser.add_argument(
        "--inputs", metavar="IN.npz", help="input arrays keyed by input name (default: random)"
    )
    parser.add_argument(
        "--outputs", metavar="OUT.npz", help="write the outputs, keyed by output name"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the random inputs used without --inputs (default: %(default)s)",
    )
    parser.add_argument(
        "--check-kernels",
        action="store_true",
        help="check every kernel's results (count, dtype, shape) against its op's types",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare every dispatch's outputs with the reference target's on the same "
        "inputs (needs --targets)",
    )
    parser.add_argument(
        "--benchmark",
        action="store_true",
        help="time the run: init, first run, then statistics over --runs timed runs",
    )
    parser.add_argument(
        "--warmup",
        type=_count(0),
        metavar="N",
        help="untimed runs before the timed ones (with --benchmark; default: 3)",
    )
    parser.add_argument(
        "--runs",
        type=_count(1),
        metavar="N",
        help="timed runs (with --benchmark; default: 20)",
    )
    parser.add_argument(
        "--threads",
        type=_count(1),
        metavar="N",
        help="threads of targets that use threads (sets OMP_NUM_THREADS: the cpu target)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="time every dispatch and host op; a table sorted by cost",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the benchmark, or the --profile run, as one JSON object",
    )
    parser.add_argument(
        "--timing",
        action="store_true",
        help="with --targets: print the time of every compilation step to stderr",
    )
    add_model_options(parser)
    add_target_options(parser, required=False)
    add_version_option(parser)
    return parser


def _count(least: int) -> Callable[[str], int]:
    """An argparse type: an integer >= `least`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer: '{text}'") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value

    return parse


def _check_usage(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Options that only make sense together; exits with status 2 (argparse's usage error)."""
    if not args.benchmark:
        for option in ("warmup", "runs"):
            if getattr(args, option) is not None:
                parser.error(f"--{option} needs --benchmark")
    if args.json and not (args.benchmark or args.profile):
        parser.error("--json needs --benchmark or --profile")
    if args.json and args.check:
        parser.error("--check and --json do not go together")
    if args.check and args.benchmark:
        parser.error("--check and --benchmark do not go together")
    if args.strict and args.targets is None:
        parser.error("--strict needs --targets (the targets that must run the model)")
    if args.check and args.targets is None:
        parser.error("--check needs --targets (the targets to compare with the reference)")


# ---- Inputs and outputs -------------------------------------------------------


def random_inputs(program: Program, seed: int) -> dict[str, np.ndarray]:
    """Seeded random values for every input of `program`.

    Floats: standard normal in the input's dtype; integers and quantized storage: uniform
    over the dtype's whole range; booleans: uniform. Raises `ToolError` for an input with
    a dynamic dimension.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    values: dict[str, np.ndarray] = {}
    for spec in program.inputs:
        if not spec.is_static:
            raise ToolError(
                f"input '{spec.name}' of @{program.entry} has the dynamic shape "
                f"{spec.describe_shape()}; give its values with --inputs FILE.npz"
            )
        values[spec.name] = _random_array(rng, spec)
    return values


def _random_array(rng: np.random.Generator, spec: TensorSpec) -> np.ndarray:
    import numpy as np

    dtype = spec.dtype
    if dtype == np.bool_:
        return rng.integers(0, 2, size=spec.shape).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=spec.shape, dtype=dtype, endpoint=True)
    return np.asarray(rng.standard_normal(spec.shape)).astype(dtype)


def _load_inputs(path: str) -> dict[str, np.ndarray]:
    import numpy as np

    try:
        if not os.path.exists(path):
            raise ToolError(f"could not read inputs from '{path}': No such file or directory")
        if not zipfile.is_zipfile(path):  # np.load would try to unpickle it
            raise ToolError(f"could not read inputs from '{path}': not an .npz archive")
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except ToolError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ToolError(f"could not read inputs from '{path}': {reason}") from None
    except Exception as exc:  # a corrupt archive, pickled object arrays, ...
        raise ToolError(f"could not read inputs from '{path}': {exc}") from None


def _write_outputs(path: str, outputs: Mapping[str, np.ndarray]) -> None:
    """Write an `.npz` atomically: a temp file in the same folder, then a rename."""
    import numpy as np

    def write(stream: IO[bytes]) -> None:
        # Written member by member (as np.savez does) so that any output name works,
        # including ones that are not Python identifiers or clash with savez's arguments.
        with zipfile.ZipFile(stream, "w") as archive:
            for name, value in outputs.items():
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)

    write_output(path, write, "outputs")


def summarize(name: str, value: np.ndarray) -> str:
    """Two lines about one output: shape, dtype and statistics, then its first values."""
    import numpy as np

    head = f"{name}: shape={value.shape} dtype={value.dtype}"
    if value.size == 0:
        return f"{head} (empty)"
    if value.dtype.kind in "fc":
        with np.errstate(all="ignore"):
            data = value.astype(np.float64)
            stats = (np.min(data), np.max(data), np.mean(data), np.std(data))
        head += " min={} max={} mean={} std={}".format(*(_number(s) for s in stats))
    else:
        wide = value.astype(np.int64)
        head += (
            f" min={_number(wide.min())} max={_number(wide.max())}"
            f" mean={_number(wide.mean())} std={_number(wide.std())}"
        )
    flat = value.reshape(-1)
    shown = ", ".join(_number(v) for v in flat[:_PREVIEW])
    more = ", ..." if flat.size > _PREVIEW else ""
    return f"{head}\n  values: [{shown}{more}]"


def _number(value: SupportsFloat) -> str:
    import numpy as np

    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    return f"{float(value):.6g}"


# ---- Error reporting ----------------------------------------------------------


def _print_error(message: str) -> None:
    print_tool_error(_TOOL, message)


def _report(diagnostic: Diagnostic, filename: str, source: str) -> None:
    report_diagnostic(_TOOL, diagnostic, filename, source)


# ---- Driver -------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    from xdsl.parser import ParseError
    from xdsl.utils.exceptions import DiagnosticException

    from irc.context import make_context
    from irc.diagnostics import diagnostic_from_exception, parse_with_locations, verify_module
    from irc.runtime import ExecutorError, InputError
    from irc.targets import TargetError

    if args.threads is not None:  # before any target library loads (and reads it)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    started = time.perf_counter_ns()
    targets = None if args.targets is None else parse_targets(args.targets)
    load_plugins(args.plugin, targets or ())
    filename: str = args.input_file
    given = _load_inputs(args.inputs) if args.inputs is not None else None
    if is_model_file(filename):
        module = _import(filename, args, given)
        source = ""
        if given is not None:  # bound inputs are constants of the model now
            bound = parse_bindings(args.bind)
            given = {name: array for name, array in given.items() if name not in bound}
        data = None
    else:
        try:
            with open(filename, "rb") as stream:
                data = stream.read()
        except OSError as exc:
            raise ToolError(f"could not open input file '{filename}': {exc.strerror}") from None
        source = data.decode("utf-8", "replace")
        module = None

    try:
        if module is None:
            assert data is not None  # read just above
            module = parse_with_locations(make_context(), data, filename)
            verify_module(module)
            _name_inputs_as_written(module, args.entry)
        if targets is None:
            program = _prepare(module, filename, given, args)
        else:
            from irc.compiler import compile as compile_model
            from irc.timing import tool_instrumentation

            with tool_instrumentation("irc-run", timing=args.timing):
                program = compile_model(
                    module, targets, entry=args.entry, check=args.check_kernels, strict=args.strict
                ).program
        init_ms = (time.perf_counter_ns() - started) / 1e6
        inputs = given if given is not None else random_inputs(program, args.seed)
        try:
            if args.benchmark:
                return _benchmark(program, inputs, init_ms, args)
            profile = _new_profile() if args.profile else None
            captured: dict[int, np.ndarray] | None = {} if args.check else None
            listener = None if captured is None else _capture(captured)
            outputs = program.run(inputs, listener=listener, profile=profile)
        except InputError as exc:
            where = f"{args.inputs}: " if args.inputs is not None else ""
            raise ToolError(f"{where}{exc.message}") from None
        differences = (
            None
            if captured is None or targets is None
            else _compare(program, module, targets, inputs, captured)  # compile cloned it
        )
    except (ParseError, DiagnosticException) as exc:
        _report(diagnostic_from_exception(exc, fallback_op=module), filename, source)
        return 1
    except ExecutorError as exc:
        _report(exc.diagnostic, filename, source)
        return 1
    except TargetError as exc:  # an executable of a target that is not registered
        raise ToolError(str(exc)) from None

    if args.outputs is not None:
        _write_outputs(args.outputs, outputs)
    if args.json and profile is not None:
        report = {
            "outputs": {name: _output_stats(value) for name, value in outputs.items()},
            "profile": _profile_rows(profile),
            "kernels": _kernel_rows(profile),
        }
        print(json.dumps(report))
        return 0
    for name, value in outputs.items():
        print(summarize(name, value))
    if differences is not None:
        print(format_differences(differences))
    if profile is not None:
        print(profile.format(order="time"))
    return 0


def _name_inputs_as_written(module: ModuleOp, entry: str) -> None:
    """IR written by hand has no `irc.input_names`: name the inputs after the entry's block
    arguments (`%x, %y` -> `x`, `y`), as MLIR's tools do, when every argument has a name
    of its own (`%0` or repeated names keep `arg0..`)."""
    from xdsl.dialects.builtin import ArrayAttr, StringAttr
    from xdsl.dialects.func import FuncOp

    for op in module.body.block.ops:
        if not isinstance(op, FuncOp) or op.sym_name.data != entry or not op.body.blocks:
            continue
        if "irc.input_names" in op.attributes:
            return
        hints = [arg.name_hint for arg in op.body.blocks[0].args]
        names = [hint for hint in hints if hint]
        if hints and len(names) == len(hints) and len(set(names)) == len(names):
            op.attributes["irc.input_names"] = ArrayAttr([StringAttr(name) for name in names])
        return


def _prepare(
    module: ModuleOp,
    filename: str,
    given: Mapping[str, np.ndarray] | None,
    args: argparse.Namespace,
) -> Program:
    """The program of `@entry`: an artifact as it is (its format version checked), the
    bucket of a guarded entry that fits the given inputs, or the function after the
    reference preparation (`lower_host`) for other IR."""
    from irc.compiler import ArtifactError, CompiledModel, check_format
    from irc.pipelines import lower_host
    from irc.runtime import InputError, compile_function
    from irc.specialize import guarded_specializations

    try:
        artifact = check_format(module, filename)
        guarded = guarded_specializations(module, args.entry)
    except ArtifactError as exc:
        raise ToolError(str(exc)) from None
    except ValueError as exc:  # a guard naming functions that are not there
        raise ToolError(f"{filename}: {exc}") from None
    if not artifact:
        lower_host(module)  # the reference preparation, executables left as they are
    if guarded is None:
        return compile_function(module, args.entry, check=args.check_kernels)
    compiled = CompiledModel(module, entry=args.entry, check=args.check_kernels)
    try:
        return compiled.program_for(given) if given is not None else compiled.program
    except InputError as exc:
        where = f"{args.inputs}: " if args.inputs is not None else ""
        raise ToolError(f"{where}{exc.message}") from None


def _new_profile() -> Profile:
    from irc.runtime.profiling import Profile

    return Profile()


# ---- --benchmark --------------------------------------------------------------


def _benchmark(
    program: Program, inputs: Mapping[str, np.ndarray], init_ms: float, args: argparse.Namespace
) -> int:
    from irc.runtime.benchmark import benchmark

    profile = _new_profile() if args.profile else None
    warmup = 3 if args.warmup is None else args.warmup
    runs = 20 if args.runs is None else args.runs
    result = benchmark(program, inputs, warmup=warmup, runs=runs, profile=profile)
    if args.outputs is not None:
        _write_outputs(args.outputs, result.outputs)
    if args.json:
        report = {
            "init_ms": init_ms,
            "first_run_ms": result.first_run_ms,
            "warmup": result.warmup,
            "threads": args.threads,
            "runs": result.stats.as_dict(),
            "profile": None if profile is None else _profile_rows(profile),
            "kernels": None if profile is None else _kernel_rows(profile),
        }
        print(json.dumps(report))
        return 0
    stats = result.stats
    print(f"init: {init_ms:.3f} ms (import/parse + compile)")
    print(f"first run: {result.first_run_ms:.3f} ms")
    print(f"warmup: {result.warmup} runs")
    print(
        f"runs: {stats.count}: min {stats.min_ms:.3f} ms, median {stats.median_ms:.3f} ms, "
        f"mean {stats.mean_ms:.3f} ms, p90 {stats.p90_ms:.3f} ms, std {stats.std_ms:.3f} ms"
    )
    if args.threads is not None:
        print(f"threads: {args.threads} (OMP_NUM_THREADS)")
    if profile is not None:
        print(profile.format(order="time"))
    return 0


PROFILE_ROW_FIELDS = {
    name: name
    for name in ("index", "kind", "name", "target", "location", "calls", "total_ms", "mean_ms")
}
"""JSON key -> `ProfileRow` attribute of each `--json` profile row."""
KERNEL_ROW_FIELDS = {
    "target": "target",
    "dispatch": "dispatch",
    "index": "index",
    "kernel": "kernel",
    "op": "description",
    "calls": "calls",
    "total_ms": "total_ms",
    "mean_ms": "mean_ms",
}
"""JSON key -> `KernelRow` attribute of each `--json` kernel row."""


def _json_rows(
    rows: Sequence[ProfileRow] | Sequence[KernelRow], fields: Mapping[str, str]
) -> list[dict[str, object]]:
    """`rows` as JSON objects (each key of `fields` with the row's attribute it names), with
    each row's share of the rows' total time (`percent`)."""
    total = sum(row.total_ms for row in rows) or 1.0
    return [
        {
            **{key: getattr(row, attribute) for key, attribute in fields.items()},
            "percent": 100 * row.total_ms / total,
        }
        for row in rows
    ]


def _profile_rows(profile: Profile) -> list[dict[str, object]]:
    """`Profile.rows(order="time")` as JSON objects, with each row's share of the step time."""
    return _json_rows(profile.rows(order="time"), PROFILE_ROW_FIELDS)


def _kernel_rows(profile: Profile) -> list[dict[str, object]]:
    """`Profile.kernel_rows(order="time")` (device time of every kernel launch, from the
    device's events) as JSON objects, with each launch's share of the device time."""
    return _json_rows(profile.kernel_rows(order="time"), KERNEL_ROW_FIELDS)


def _output_stats(value: np.ndarray) -> dict[str, object]:
    """Shape, dtype and (unless empty) min/max/mean/std of one output, for `--json`."""
    import numpy as np

    stats: dict[str, object] = {"shape": list(value.shape), "dtype": str(value.dtype)}
    if value.size:
        with np.errstate(all="ignore"):
            data = value.astype(np.float64 if value.dtype.kind in "fc" else np.int64)
            values = (np.min(data), np.max(data), np.mean(data), np.std(data))
        for key, number in zip(("min", "max", "mean", "std"), values, strict=True):
            stats[key] = float(number) if np.isfinite(number) else str(float(number))
    return stats


# ---- --check: every dispatch against the reference ----------------------------


@dataclass(frozen=True)
class DispatchDifference:
    """How far one dispatch's outputs are from the reference's on the same inputs."""

    label: str
    """`@exe::@entry`."""
    target: str
    max_abs: float | None
    """The largest |output - reference| over all outputs; None when not compared."""
    max_rel: float | None
    """The largest |output - reference| / max(|reference|, eps of the dtype)."""
    note: str = ""
    """Why it was not compared, or what did not match (shape)."""

    def describe(self) -> str:
        head = f"{self.label} [{self.target}]"
        if self.max_abs is None or self.max_rel is None:
            return f"{head}: {self.note}"
        return f"{head}: max abs {self.max_abs:.3g}, max rel {self.max_rel:.3g}"


def _capture(values: dict[int, np.ndarray]) -> Listener:
    """A listener that keeps every step's results, on the host, by slot."""
    import numpy as np

    def listen(step: Step, results: tuple[object, ...]) -> None:
        for slot, value in zip(step.outputs, results, strict=True):
            to_host = getattr(value, "to_host", None)
            values[slot] = np.asarray(to_host() if to_host is not None else value)

    return listen


def _reference_executables(module: ModuleOp, targets: Sequence[str]) -> dict[str, Operation]:
    """The executables of `module` after the default pipeline, before any target lowering."""
    from irc.diagnostics import capture_diagnostics
    from irc.dialects import delegate
    from irc.pipelines import default_pipeline, parse_pipeline, run_passes

    clone = module.clone()
    with capture_diagnostics():  # the partition remarks were printed by the compilation
        run_passes(clone, parse_pipeline(default_pipeline(targets)))
    return {
        op.sym_name.data: op for op in clone.body.block.ops if isinstance(op, delegate.ExecutableOp)
    }


def _compare(
    program: Program,
    module: ModuleOp,
    targets: Sequence[str],
    inputs: Mapping[str, np.ndarray],
    captured: Mapping[int, np.ndarray],
) -> list[DispatchDifference]:
    """Run every dispatch's un-lowered executable on the reference target with the inputs
    the compiled dispatch got, and compare the outputs."""
    import numpy as np

    from irc.dialects import delegate
    from irc.targets import get_target

    values: dict[int, np.ndarray] = {slot: np.asarray(v) for slot, v in program.constants.items()}
    values |= {spec.slot: np.asarray(inputs[spec.name]) for spec in program.inputs}
    values |= captured
    executables = _reference_executables(module, targets)
    runtime = get_target("reference").runtime()
    loaded: dict[str, LoadedExecutable] = {}
    differences = []
    for step in program.steps:
        if step.kind != "dispatch":
            continue
        assert isinstance(step.op, delegate.DispatchOp)  # what a "dispatch" step runs
        callee = step.op.callee
        name = callee.root_reference.data
        entry = callee.nested_references.data[-1].data if callee.nested_references.data else ""
        executable = executables.get(name)
        if executable is None or not _same_signature(executable, entry, step.op):
            differences.append(
                DispatchDifference(
                    step.label,
                    step.target,
                    None,
                    None,
                    "not compared: no un-lowered executable with this signature",
                )
            )
            continue
        if name not in loaded:
            loaded[name] = runtime.load(executable)
        expected = loaded[name].execute(entry, [values[slot] for slot in step.inputs])
        got = [values[slot] for slot in step.outputs]
        differences.append(_difference(step, got, [np.asarray(v) for v in expected]))
    return differences


def _same_signature(executable: Operation, entry: str, dispatch: Operation) -> bool:
    """Whether `executable` has a function `entry` taking and returning the dispatch's types
    (after a compilation with lowering refusals, executables can differ from the re-run)."""
    from xdsl.dialects.func import FuncOp

    for op in executable.regions[0].block.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == entry:
            function_type = op.function_type
            return list(function_type.inputs.data) == list(dispatch.operand_types) and list(
                function_type.outputs.data
            ) == list(dispatch.result_types)
    return False


def _difference(
    step: Step, got: Sequence[np.ndarray], expected: Sequence[np.ndarray]
) -> DispatchDifference:
    import numpy as np

    max_abs = max_rel = 0.0
    for index, (actual, reference) in enumerate(zip(got, expected, strict=True)):
        if actual.shape != reference.shape:
            note = f"result #{index} has shape {actual.shape}, the reference {reference.shape}"
            return DispatchDifference(step.label, step.target, None, None, note)
        if actual.size == 0:
            continue
        eps = np.finfo(reference.dtype).eps if reference.dtype.kind in "fc" else 1.0
        with np.errstate(all="ignore"):
            a, r = actual.astype(np.float64), reference.astype(np.float64)
            diff = np.abs(a - r)
            diff[np.isnan(a) & np.isnan(r)] = 0.0  # NaN where the reference has NaN too
            rel = diff / np.maximum(np.abs(r), eps)
        max_abs = max(max_abs, float(np.max(diff)))
        max_rel = max(max_rel, float(np.max(rel)))
    return DispatchDifference(step.label, step.target, max_abs, max_rel)


def format_differences(differences: Sequence[DispatchDifference]) -> str:
    """One line per dispatch, then a summary line with the largest differences."""
    lines = [difference.describe() for difference in differences]
    compared = [d for d in differences if d.max_abs is not None and d.max_rel is not None]
    if not compared:
        lines.append(f"check: {len(differences)} dispatches, none compared with the reference")
        return "\n".join(lines)
    worst_abs = max(compared, key=lambda d: d.max_abs or 0.0)
    worst_rel = max(compared, key=lambda d: d.max_rel or 0.0)
    lines.append(
        f"check: {len(compared)} of {len(differences)} dispatches compared with the reference; "
        f"largest abs {worst_abs.max_abs:.3g} ({worst_abs.label}), "
        f"largest rel {worst_rel.max_rel:.3g} ({worst_rel.label})"
    )
    return "\n".join(lines)


def _import(
    path: str, args: argparse.Namespace, given: Mapping[str, np.ndarray] | None
) -> ModuleOp:
    """Import a model; dynamic input dimensions take the shapes of the given arrays."""
    from irc.importers import ModelImportError, import_model

    shapes = parse_input_shapes(args.input_shape)
    bindings = parse_bindings(args.bind)
    for name, array in (given or {}).items():
        if name not in bindings:
            shapes.setdefault(name, tuple(array.shape))
    from irc.importers.errors import MissingShapesError

    try:
        return import_model(path, bind=bindings, input_shapes=shapes)
    except MissingShapesError as exc:
        raise ToolError(exc.cli_message("or give input values with --inputs FILE.npz")) from None
    except ModelImportError as exc:
        raise ToolError(str(exc)) from None


class _Parser(argparse.ArgumentParser):
    """Checks the options that go together right after parsing (usage errors: status 2)."""

    # Called without a namespace, so it returns a Namespace (the base's overloads say more).
    def parse_args(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, args: Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        parsed = super().parse_args(args, namespace)
        _check_usage(self, parsed)
        return parsed


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `irc-run` script; returns the exit status (0, 1, or 2 for usage)."""
    return run_tool(_TOOL, _make_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
