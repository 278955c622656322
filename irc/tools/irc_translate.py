"""`irc-translate`: translate between models and IR text.

```
irc-translate --import-tflite MODEL.tflite [-o OUT.mlir] [--bind N=V] [--input-shape N=DIMS]
irc-translate --import-onnx MODEL.onnx [-o OUT.mlir] [--generic]
irc-translate --emit-c FILE.mlir [-o OUT.c]
irc-translate --emit-opencl MODEL_OR_IR [--targets T1,T2] [-o OUT.cl] [--bind N=V]
              [--input-shape N=DIMS]
```

Importing prints the `nn` module of the model (weights as `dense<"0x...">` hex). The format
is read from the file's bytes (`irc.fileio.probe_format`), so `model.pb` or a name without
a suffix imports too; when the bytes contradict the flag (`--import-tflite model.onnx`), a
warning says so and the model is imported as what it is. `--emit-c`
prints the C translation units of an IR file's `cpu` executables (running the cpu target's
lowering passes on those not lowered yet), one after the other under a comment naming each
executable. `--emit-opencl` prints the OpenCL C of every `opencl` executable the same way:
IR that already holds `opencl` executables is lowered as it is (the opencl target's lowering
on those not lowered yet); a model,
or IR not partitioned for opencl, is compiled first with `irc.compile` for `--targets`
(default: opencl). The output file is written atomically; a model that cannot be imported
or IR that cannot be lowered ends with one clear message on stderr, exit status 1, no
traceback and no output file.

The sources come from the targets through the `Target` protocol, as a plugin's would:
`lowering_passes()` and `passes()` lower, `emit_source(executable)` gives the text; this tool
knows the two targets by name only.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from irc.tools.common import (
    ToolError,
    add_model_options,
    add_version_option,
    is_model_file,
    parse_bindings,
    parse_input_shapes,
    parse_targets,
    report_diagnostic,
    run_tool,
    write_output,
)

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp

_TOOL = "irc-translate"
_FORMAT_NAMES = {"tflite": "a TFLite model", "onnx": "an ONNX model"}


def _make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=_TOOL, description="Translate models to irc IR.")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--import-tflite", action="store_true", help="import a .tflite model")
    mode.add_argument("--import-onnx", action="store_true", help="import an .onnx model")
    mode.add_argument(
        "--emit-c", action="store_true", help="print the C of an IR file's cpu executables"
    )
    mode.add_argument(
        "--emit-opencl",
        action="store_true",
        help="print the OpenCL C of a model's or IR file's opencl executables",
    )
    parser.add_argument(
        "input_file",
        metavar="MODEL",
        help="the model file (IR for --emit-c; a model or IR for --emit-opencl)",
    )
    parser.add_argument("-o", "--output", metavar="OUT.mlir", help="write the output here")
    parser.add_argument(
        "--targets",
        metavar="T1,T2",
        help="--emit-opencl: targets to compile a model for (default: opencl)",
    )
    parser.add_argument("--generic", action="store_true", help="print ops in MLIR's generic form")
    add_model_options(parser)
    add_version_option(parser)
    return parser


def _read_input(path: str) -> bytes:
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as exc:
        raise ToolError(f"could not open input file '{path}': {exc.strerror}") from None


def _banner(symbol: str) -> str:
    """The comment heading one executable's source; symbol names may come from a model, so
    only plain characters reach it."""
    name = re.sub(r"[^A-Za-z0-9_.$-]", "_", symbol)[:80]
    return f"/* ---- executable @{name} ---- */\n"


_EMIT_C_TARGET = "cpu"
_EMIT_OPENCL_TARGET = "opencl"
"""The targets whose `Target.emit_source()` `--emit-c` and `--emit-opencl` print."""


def _has_executables(module: ModuleOp, target: str) -> bool:
    from irc.dialects import delegate

    return any(
        isinstance(op, delegate.ExecutableOp) and op.target.data == target for op in module.walk()
    )


def _lower_for(module: ModuleOp, target_name: str, ctx: Context) -> None:
    """Run the target's own lowering (`Target.lowering_passes()`, with `Target.passes()`) on
    the module, as `irc-opt -p` would: only the sources of this target are printed after."""
    from irc.pipelines import parse_pipeline, run_passes
    from irc.targets import get_target

    target = get_target(target_name)
    lowering = target.lowering_passes().strip()
    if lowering:
        run_passes(module, parse_pipeline(lowering, target.passes()), ctx)


def _emitted_sources(module: ModuleOp, target_name: str) -> list[str]:
    """`Target.emit_source()` of each of the target's executables, under a banner."""
    from irc.dialects import delegate
    from irc.targets import get_target

    target = get_target(target_name)
    pieces = []
    for op in module.walk():
        if isinstance(op, delegate.ExecutableOp) and op.target.data == target_name:
            text = target.emit_source(op)
            if text is not None:
                pieces.append(_banner(op.sym_name.data) + text)
    return pieces


def _write_output(args: argparse.Namespace, text: str, what: str) -> None:
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_output(args.output, text, what)


def _emit_opencl(args: argparse.Namespace) -> int:
    """Print the OpenCL C source of every opencl executable of a model or IR file."""
    from xdsl.parser import ParseError
    from xdsl.utils.exceptions import DiagnosticException

    import irc
    from irc.context import make_context
    from irc.diagnostics import diagnostic_from_exception, parse_with_locations, verify_module
    from irc.importers import ModelImportError
    from irc.importers.errors import MissingShapesError
    from irc.runtime import ExecutorError
    from irc.targets import TargetError

    path: str = args.input_file
    targets = parse_targets(args.targets) if args.targets is not None else [_EMIT_OPENCL_TARGET]
    source = ""
    module = None
    try:
        if is_model_file(path):
            if not os.path.exists(path):
                raise ToolError(f"could not open input file '{path}': No such file or directory")
            model: str | ModuleOp | None = path
        else:
            data = _read_input(path)
            source = data.decode("utf-8", "replace")
            ctx = make_context()
            module = parse_with_locations(ctx, data, path)
            verify_module(module)
            model = module
            if _has_executables(module, _EMIT_OPENCL_TARGET):
                # the target's own lowering: IRC_OPENCL_TUNE / IRC_OPENCL_PRECISION apply
                _lower_for(module, _EMIT_OPENCL_TARGET, ctx)
                model = None  # partitioned already: print what its opencl executables lower to
        if model is not None:
            module = irc.compile(
                model,
                targets,
                input_shapes=parse_input_shapes(args.input_shape),
                bind=parse_bindings(args.bind),
            ).module
    except MissingShapesError as exc:
        raise ToolError(exc.cli_message()) from None
    except (ModelImportError, TargetError) as exc:
        raise ToolError(str(exc)) from None
    except (ParseError, DiagnosticException) as exc:
        diagnostic = diagnostic_from_exception(exc, fallback_op=module)
        report_diagnostic(_TOOL, diagnostic, path, source)
        return 1
    except ExecutorError as exc:
        report_diagnostic(_TOOL, exc.diagnostic, path, source)
        return 1
    except ValueError as exc:  # a bad --input-shape or --bind for this model
        raise ToolError(str(exc)) from None
    assert module is not None
    try:
        pieces = _emitted_sources(module, _EMIT_OPENCL_TARGET)
    except TargetError as exc:
        raise ToolError(str(exc)) from None
    if not pieces:
        raise ToolError(f"{path}: nothing runs on the opencl target (no opencl executables)")
    _write_output(args, "\n".join(pieces), "the OpenCL source")
    return 0


def _emit_c(args: argparse.Namespace) -> int:
    """Print the generated C of every cpu executable of an IR file."""
    from xdsl.parser import ParseError
    from xdsl.utils.exceptions import DiagnosticException

    from irc.context import make_context
    from irc.diagnostics import diagnostic_from_exception, parse_with_locations, verify_module
    from irc.targets import TargetError

    path: str = args.input_file
    data = _read_input(path)
    module = None
    try:
        ctx = make_context()
        module = parse_with_locations(ctx, data, path)
        verify_module(module)
        _lower_for(module, _EMIT_C_TARGET, ctx)
        pieces = _emitted_sources(module, _EMIT_C_TARGET)
    except (ParseError, DiagnosticException) as exc:
        diagnostic = diagnostic_from_exception(exc, fallback_op=module)
        report_diagnostic(_TOOL, diagnostic, path, data.decode("utf-8", "replace"))
        return 1
    except TargetError as exc:
        raise ToolError(str(exc)) from None
    if not pieces:
        raise ToolError(f"{path}: no cpu executables (partition and outline for target cpu first)")
    _write_output(args, "\n".join(pieces), "the C source")
    return 0


def _translate(args: argparse.Namespace) -> int:
    from irc.printing import Printer

    if args.targets is not None and not args.emit_opencl:
        raise ToolError("--targets is an option of --emit-opencl")
    if args.emit_c:
        return _emit_c(args)
    if args.emit_opencl:
        return _emit_opencl(args)

    from irc.importers import ModelImportError, detect_format, import_model
    from irc.importers.errors import MissingShapesError

    path: str = args.input_file
    expected = "tflite" if args.import_tflite else "onnx"
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096)
    except OSError as exc:
        raise ToolError(f"could not open input file '{path}': {exc.strerror}") from None
    try:
        actual = detect_format(head, path)
        if actual != expected:  # the bytes say what the file is: import that
            sys.stderr.write(
                f"{_TOOL}: warning: {path} is {_FORMAT_NAMES[actual]}, not "
                f"{_FORMAT_NAMES[expected]}; importing it as {actual} (--import-{actual})\n"
            )
        module = import_model(
            path,
            bind=parse_bindings(args.bind),
            input_shapes=parse_input_shapes(args.input_shape),
        )
    except MissingShapesError as exc:
        raise ToolError(exc.cli_message()) from None
    except ModelImportError as exc:
        raise ToolError(str(exc)) from None
    text = io.StringIO()
    Printer(text, print_generic_format=args.generic).print_op(module)
    text.write("\n")
    if args.output is None:
        sys.stdout.write(text.getvalue())
    else:
        write_output(args.output, text.getvalue(), "the IR")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `irc-translate`; returns the exit status (0, 1, or 2 for usage)."""
    return run_tool(_TOOL, _make_parser(), _translate, argv)


if __name__ == "__main__":
    sys.exit(main())
