"""`irc-compile`: compile a model ahead of time for a list of targets.

```
irc-compile MODEL --targets t1,t2 [--strict] [-o OUT.mlir] [--plugin module:attr] [--report PATH]
            [--entry main] [--min-ops N] [--bind NAME=VALUE] [--input-shape NAME=DIMS]
            [--graph OUT.svg|OUT.html|OUT.dot] [--timing]
            [--embed-binaries] [--shape-buckets NAME=1,4,8]
```

MODEL is a `.tflite` / `.onnx` model or an IR file. It goes through `irc.compile` (the
default pipeline: canonicalize, partition, convert-layout, insert-qdq, outline-delegates, each
target's lowering on its executables, the reference preparation of the host functions) and
the host program is prepared once, so every executable is known to load on its target.

With `-o`, the compiled module is written there (atomically: nothing on error) and the
partition summary goes to stdout; without `-o` the module goes to stdout and the summary to
stderr. `irc.load(OUT.mlir)` / `irc-run OUT.mlir` run the result without the original model.
`--report PATH` writes the partition's JSON report. `--plugin module:attr` (repeatable, like
`IRC_PLUGINS`) loads targets that are not installed. The module carries
`irc.format_version` (checked by `irc.load`); `--embed-binaries` adds every OpenCL program's
binary built on this machine's device, tagged with the device (`irc.targets.opencl.aot`):
a matching device loads it instead of compiling the source. `--shape-buckets x=1,4,8`
(sizes of the input's dynamic dimension, or whole shapes `x=1x4,8x4`; repeatable for more
inputs, zipped) compiles one specialisation per bucket behind one guarded `@main`
(`irc.specialize`).

`--graph OUT.svg` draws the graph the partition saw, ops coloured by target and host ops
marked with every target's reason (`irc.graph`); `OUT.html` adds tables of the regions,
host ops and lowering refusals; `OUT.dot` is the same picture in Graphviz's language, with
a framed cluster per region, for `dot -Tsvg`. `--timing` prints the wall time of every step
(import, each pass, lowering, loading the executables, output) to stderr in the layout of
MLIR's `-mlir-timing`. On a terminal, a step that takes more than a second (`IRC_PROGRESS_DELAY`
seconds when set) is announced on stderr with its op count, and its end with its time;
elsewhere the tool stays quiet.

A target of `--targets` that cannot run here (no OpenCL device matching `IRC_OPENCL_DEVICE`,
no working C compiler) is one warning line on stderr naming it and the reason, and its ops go
to the next target or the host; with `--strict` it is an error, as is an op left on the host.

Errors (an unknown target, a plugin that does not load, a bad model or IR, a pass failure)
end with one message on stderr, located in the IR where possible, exit status 1 and no
traceback; usage errors exit with 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

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
    report_diagnostic,
    run_tool,
)

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from irc.compiler import CompiledModel

__all__ = ["main"]

_TOOL = "irc-compile"


# ---- Driver -------------------------------------------------------------------------------------


def _make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_TOOL,
        description="Compile a model for a list of targets: partition, outline, lower.",
    )
    parser.add_argument(
        "input_file", metavar="MODEL", help="a model (.tflite, .onnx) or an IR file (.mlir)"
    )
    add_target_options(parser, required=True)
    parser.add_argument("-o", "--output", metavar="OUT.mlir", help="write the compiled module")
    parser.add_argument(
        "--report", metavar="PATH", help="write the partition report (JSON) to PATH"
    )
    parser.add_argument(
        "--entry", default="main", help="the function to prepare (default: %(default)s)"
    )
    parser.add_argument(
        "--graph",
        metavar="OUT.svg|OUT.html|OUT.dot",
        help="draw the partitioned graph (ops coloured by target, host ops with reasons)",
    )
    parser.add_argument(
        "--timing", action="store_true", help="print the time of every step to stderr"
    )
    parser.add_argument(
        "--embed-binaries",
        action="store_true",
        help="embed the OpenCL program binaries built for this machine's device",
    )
    parser.add_argument(
        "--shape-buckets",
        action="append",
        metavar="NAME=1,4,8",
        help="compile one specialisation per shape of a dynamic input (repeatable)",
    )
    parser.add_argument(
        "--min-ops",
        type=int,
        metavar="N",
        help="regions with fewer ops stay on the next target or the host (default: 2)",
    )
    add_model_options(parser)
    add_version_option(parser)
    return parser


def _compile(args: argparse.Namespace) -> int:
    from xdsl.parser import ParseError
    from xdsl.utils.exceptions import DiagnosticException

    import irc
    from irc.diagnostics import diagnostic_from_exception
    from irc.graph import GRAPH_SUFFIXES, GraphCapture, write_graph
    from irc.importers import ModelImportError
    from irc.importers.errors import MissingShapesError
    from irc.runtime import ExecutorError
    from irc.targets import TargetError
    from irc.timing import Instrumentation, PassTiming, Progress, instrumented, step

    timing = PassTiming()
    targets = parse_targets(args.targets)
    load_plugins(args.plugin, targets)
    filename: str = args.input_file
    if args.graph is not None and not args.graph.lower().endswith(GRAPH_SUFFIXES):
        raise ToolError(f"bad --graph '{args.graph}': expected a .svg, .html or .dot file name")
    capture = GraphCapture()
    progress: list[Instrumentation] = [Progress.for_tool(_TOOL)]
    if args.timing:
        progress.append(timing)
    # the capture watches the passes only for --graph (a compile-cache hit runs none)
    instrumentations = [capture, *progress] if args.graph is not None else progress
    source = ""
    data: bytes | None = None  # the IR's bytes (a model file is imported from its path)
    if is_model_file(filename):
        if not os.path.exists(filename):
            raise ToolError(f"could not open input file '{filename}': No such file or directory")
    else:
        try:
            with open(filename, "rb") as stream:
                data = stream.read()
        except OSError as exc:
            raise ToolError(f"could not open input file '{filename}': {exc.strerror}") from None
        source = data.decode("utf-8", "replace")

    options: dict[str, Any] = {}  # argparse's values
    if args.report is not None:
        options["report"] = args.report
    if args.min_ops is not None:
        options["min_ops"] = args.min_ops
    module = None
    try:
        with instrumented(*instrumentations):
            model: ModuleOp | str = filename
            if data is not None:
                with step("parse"):
                    module = irc.parse_module(data, filename=filename)
                model = module
            compiled = irc.compile(
                model,
                targets,
                entry=args.entry,
                input_shapes=parse_input_shapes(args.input_shape),
                bind=parse_bindings(args.bind),
                shape_buckets=_shape_buckets(args.shape_buckets),
                strict=args.strict,
                **options,
            )
            if compiled.unspecialised:  # ahead of time needs the input shapes
                raise compiled.missing_shapes()
    except MissingShapesError as exc:
        raise ToolError(exc.cli_message("or sizes to compile with --shape-buckets")) from None
    except (ModelImportError, TargetError) as exc:
        raise ToolError(str(exc)) from None
    except (ParseError, DiagnosticException) as exc:
        report_diagnostic(
            _TOOL, diagnostic_from_exception(exc, fallback_op=module), filename, source
        )
        return 1
    except ExecutorError as exc:
        report_diagnostic(_TOOL, exc.diagnostic, filename, source)
        return 1
    except ValueError as exc:  # a bad option value
        raise ToolError(str(exc)) from None

    with instrumented(*progress):
        if args.graph is not None:
            with step("graph"):
                try:
                    graph = capture.graph(compiled.refusals, compiled.summary)
                except ValueError as exc:  # nothing was partitioned
                    raise ToolError(f"--graph: {exc}") from None
                try:
                    write_graph(args.graph, graph, title=os.path.basename(filename))
                except OSError as exc:
                    message = f"could not write the graph to '{args.graph}': {exc.strerror or exc}"
                    raise ToolError(message) from None
        text = ""
        with step("output"):
            if args.output is not None:
                _save(compiled, args.output, args.embed_binaries)
            else:
                text = _module_text(compiled, args.embed_binaries)
    if args.output is None:
        sys.stdout.write(text)
        sys.stderr.write(compiled.summary + "\n")
    else:
        sys.stdout.write(compiled.summary + "\n")
    if args.timing:
        sys.stdout.flush()  # the summary first, also when both streams share a pipe
        sys.stderr.write(timing.report())
    return 0


def _shape_buckets(items: Sequence[str] | None) -> dict[str, list[int | tuple[int, ...]]] | None:
    """`--shape-buckets` options (ValueError for a bad one), or None without any."""
    from irc.specialize import parse_shape_buckets

    return parse_shape_buckets(items) if items else None


def _save(compiled: CompiledModel, path: str, embed_binaries: bool) -> None:
    """`CompiledModel.save`: the artifact's text and its weights file next to it
    (`irc.artifact`); ToolError when a file cannot be written or the binaries built."""
    try:
        compiled.save(path, embed_binaries=embed_binaries)
    except OSError as exc:
        raise ToolError(f"could not write the module to '{path}': {exc.strerror or exc}") from None
    except Exception as exc:  # --embed-binaries: no OpenCL device, a driver that refuses
        if not embed_binaries:
            raise
        raise ToolError(f"--embed-binaries: {exc}") from None


def _module_text(compiled: CompiledModel, embed_binaries: bool) -> str:
    """The artifact's text; ToolError when the OpenCL binaries cannot be built."""
    if not embed_binaries:
        return compiled.to_text()
    try:
        return compiled.to_text(embed_binaries=True)
    except Exception as exc:  # no OpenCL device, a driver that rejects a program
        raise ToolError(f"--embed-binaries: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `irc-compile`; returns the exit status (0, 1, or 2 for usage)."""
    return run_tool(_TOOL, _make_parser(), _compile, argv)


if __name__ == "__main__":
    sys.exit(main())
