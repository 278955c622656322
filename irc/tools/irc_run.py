"""`irc-run`: run an IR file or a model and summarise (or save) its outputs.

```
irc-run FILE.mlir|MODEL [--entry main] [--inputs in.npz] [--outputs out.npz] [--seed N] [--check]
        [--targets t1,t2] [--plugin module:attr]
```

Without `--targets` everything runs on the reference target (a compiled module's dispatches
on their executables' targets). With `--targets`, the module is first compiled with the
default pipeline for those targets (`irc.compile`: partition, outline, lower); `--plugin`
loads target plugins (as `IRC_PLUGINS` does).

Inputs and outputs are `.npz` archives keyed by the function's input/output names
(`irc.input_names` / `irc.output_names`, else `arg0..` / `result0..`). Without `--inputs`
the inputs are random and seeded: standard normal for floats, uniform over the whole range
of the dtype for integers and quantized storage; a dynamic dimension needs `--inputs`.
Every output is summarised on stdout (shape, dtype, min/max/mean/std, first values);
`--outputs` also writes them, atomically (temp file + rename, nothing on error).

Problems (missing file, bad IR, an op without a reference kernel, a bad `.npz`, inputs that
do not match the signature) end with one message on stderr, located in the IR where there
is a place to point at, exit status 1 and no traceback; usage errors exit with 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING

from irc.tools.common import (
    ToolError,
    add_model_options,
    is_model_file,
    parse_bindings,
    parse_input_shapes,
    print_tool_error,
    run_tool,
    write_atomically,
)

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp

    from irc.diagnostics import Diagnostic
    from irc.runtime import Program, TensorSpec

__all__ = ["ToolError", "main", "random_inputs", "report_diagnostic", "summarize"]

_TOOL = "irc-run"
_PREVIEW = 8
"""How many leading values of each output the summary shows."""


def _make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        "--check",
        action="store_true",
        help="check every kernel's results (count, dtype, shape) against its op's types",
    )
    add_model_options(parser)
    from irc.tools.irc_compile import add_target_options

    add_target_options(parser, required=False)
    return parser


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

    write_atomically(path, write, "outputs")


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


def _number(value: object) -> str:
    import numpy as np

    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    return f"{float(value):.6g}"  # type: ignore[arg-type]


# ---- Error reporting ----------------------------------------------------------


def _print_error(message: str) -> None:
    print_tool_error(_TOOL, message)


def _report(diagnostic: Diagnostic, filename: str, source: str) -> None:
    report_diagnostic(_TOOL, diagnostic, filename, source)


def report_diagnostic(tool: str, diagnostic: Diagnostic, filename: str, source: str) -> None:
    """A located diagnostic with its source line and a caret (as irc-opt prints them);
    an unlocated one as `<tool>: error: <filename>: ...`."""
    from irc.diagnostics import format_with_source

    if diagnostic.location is None:
        print_tool_error(tool, f"{filename}: {diagnostic.message}")
        return
    sys.stderr.write(format_with_source(diagnostic, filename, source.splitlines()) + "\n")


# ---- Driver -------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    from xdsl.parser import ParseError
    from xdsl.utils.exceptions import DiagnosticException

    from irc.context import make_context
    from irc.diagnostics import diagnostic_from_exception, parse_with_locations, verify_module
    from irc.pipelines import lower_host
    from irc.runtime import ExecutorError, InputError, compile_function
    from irc.targets import TargetError
    from irc.tools.irc_compile import load_plugins, parse_targets

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
            module = parse_with_locations(make_context(), data, filename)
            verify_module(module)
        if targets is None:
            lower_host(module)  # the reference preparation, executables left as they are
            program = compile_function(module, args.entry, check=args.check)
        else:
            from irc.compiler import compile as compile_model

            program = compile_model(module, targets, entry=args.entry, check=args.check).program
        inputs = given if given is not None else random_inputs(program, args.seed)
        try:
            outputs = program.run(inputs)
        except InputError as exc:
            where = f"{args.inputs}: " if args.inputs is not None else ""
            raise ToolError(f"{where}{exc.message}") from None
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
    for name, value in outputs.items():
        print(summarize(name, value))
    return 0


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
    try:
        return import_model(path, bind=bindings, input_shapes=shapes)
    except ModelImportError as exc:
        raise ToolError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `irc-run` script; returns the exit status (0, 1, or 2 for usage)."""
    return run_tool(_TOOL, _make_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
