"""`irc-opt`: irc's modular optimizer driver, an `xDSLOptMain` with MLIR's diagnostics.

It differs from `xdsl-opt` in what it registers (irc's dialects and passes only) and
in how it reports problems:

* parsed ops carry `FileLineColLoc`s with file-absolute lines, also under
  `--split-input-file`, so `--print-debuginfo` shows where each op came from;
* bad IR, verifier failures and pass failures print one located diagnostic
  (`file:line:col: error: message` plus the source line) and exit with status 1,
  without a traceback and without writing the `-o` file;
* `--verify-diagnostics` has MLIR's meaning: diagnostics are matched against
  `// expected-error@+1 {{...}}` annotations in the input;
* `--print-ir-after-all` dumps the IR to stderr after every pass, as MLIR does;
* `--timing` prints the wall time of parsing, every pass and the output to stderr, in the
  layout of MLIR's `-mlir-timing` (`irc.timing`); on a terminal, a pass that runs longer
  than a second is announced on stderr with the op count (quiet otherwise);
* `-p` / `--pass-pipeline` take irc's `a,b{opt=1}` or MLIR's `builtin.module(a,b{opt=1})`,
  named pipelines (`irc-default{targets=opencl,cpu}`, `irc.pipelines.NAMED_PIPELINES`)
  and report bad options in the option's own terms; `--list-passes` lists every pass with
  its summary and options (type, default, docstring), then the named pipelines;
* with `--split-input-file`, a failing chunk is reported and the other chunks' output is
  still printed (exit status 1), as `mlir-opt` does; `-o FILE` is only written on success;
* `-t` offers `mlir` only (xdsl-opt's other targets print nothing useful for irc's IR);
* `--version` prints `irc <version> (xdsl <version>)`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from itertools import accumulate
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import ParseError
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ShrinkException
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from irc.context import get_all_dialects, get_all_passes, get_own_passes
from irc.diagnostics import (
    Diagnostic,
    DiagnosticVerifier,
    IrcDiagnosticError,
    Severity,
    diagnostic_from_exception,
    diagnostic_handler,
    format_with_source,
    parse_with_locations,
    verify_module,
)
from irc.printing import Printer
from irc.timing import (
    Instrumentation,
    PassTiming,
    Progress,
    StepSequence,
    instrumented,
    step,
)

__all__ = ["IrcOptError", "IrcOptMain", "describe_passes", "main"]

_SPLIT_MARKER = b"// -----"
_STDIN_NAME = "<stdin>"


class IrcOptError(Exception):
    """A failure of the invocation rather than of the IR: bad pipeline, unreadable input."""


PassFactory = Callable[[], type[ModulePass]]


class _PassTable(dict[str, PassFactory]):
    """`name -> pass factory`: irc's own passes at once; the registered targets' passes
    (discovering the targets imports them: numpy and every reference kernel, most of a
    second) the first time a name outside irc's own is looked up or the table is iterated
    (`in`, `[]`, `for`, `len`: what xDSL's driver and this one use). irc's own names win over
    a target's, as in `irc.context.get_all_passes()`."""

    def __init__(self, own: dict[str, PassFactory]) -> None:
        super().__init__(own)
        self._complete = False

    def complete(self) -> None:
        """Add the targets' passes (once); a bad `IRC_PLUGINS` spec is an `IrcOptError`."""
        if self._complete:
            return
        from irc.targets import TargetError

        try:
            passes = get_all_passes()
        except TargetError as exc:
            raise IrcOptError(str(exc)) from None
        self._complete = True
        for name, factory in passes.items():
            self.setdefault(name, factory)

    def __contains__(self, name: object) -> bool:
        if not super().__contains__(name):
            self.complete()
        return super().__contains__(name)

    def __getitem__(self, name: str) -> PassFactory:
        if not super().__contains__(name):
            self.complete()
        return super().__getitem__(name)

    def __iter__(self) -> Iterator[str]:
        self.complete()
        return super().__iter__()

    def __len__(self) -> int:
        self.complete()
        return super().__len__()


@dataclass
class _ChunkResult:
    """What processing one input chunk produced."""

    output: str | None = None
    """The printed program, or `None` when the chunk failed."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    """Everything emitted while processing the chunk, the fatal error last."""
    failed: bool = False


class IrcOptMain(xDSLOptMain):
    """The `irc-opt` driver; `IrcOptMain(args=[...]).run()` returns the exit status."""

    version_format = "irc (xdsl {xdsl_version})"
    """Replaced by `irc <version> (xdsl <version>)` when the arguments are registered."""

    def __init__(
        self,
        description: str = "irc modular optimizer driver",
        args: Sequence[str] | None = None,
    ) -> None:
        self._source_lines: list[str] = []
        self._current_pass: ModulePass | None = None
        self._timing = PassTiming()
        self._steps = StepSequence()
        try:
            super().__init__(description, args)
        except ArgSpecParseError as exc:  # a BaseException, from parsing the `-t` spec
            raise IrcOptError(_describe_spec_error("target", exc)) from None

    @classmethod
    def main(cls, args: Sequence[str] | None = None) -> int:
        """Build the driver from `args` and run it; return the exit status.

        0 on success, 1 for bad IR or a bad invocation (one message on stderr, no
        traceback), 2 for command-line usage errors (from argparse).
        """
        try:
            return cls(args=args).run()
        except IrcOptError as exc:
            _print_tool_error(str(exc))
            return 1
        except SystemExit as exc:  # argparse: --help, --version (0) and usage errors (2)
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)

    # ---- Registration --------------------------------------------------------

    def register_all_dialects(self) -> None:
        """irc's dialects only, not every `xdsl.universe` plugin (see irc.context)."""
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        """The MLIR frontend, parsing with source locations."""
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            return self._parse_mlir(io.read(), 0)

        self.available_frontends["mlir"] = parse_mlir

    def register_all_passes(self) -> None:
        """The passes of `irc.context.get_all_passes()` (the targets' passes included), as a
        `_PassTable`: the targets are imported only when a pipeline names a pass that is not
        irc's own, or the passes are listed (with `IRC_PLUGINS` set, at once, so that a bad
        spec is reported whatever the pipeline)."""
        from irc.targets.base import PLUGINS_ENV  # imports no target

        self.available_passes = _PassTable(get_own_passes())
        if os.environ.get(PLUGINS_ENV, "").strip():
            self.available_passes.complete()

    def register_all_targets(self) -> None:
        """`mlir` only (the `-t` default), printed with irc's unique-name printer; xdsl-opt's
        other targets (llvm, wgsl, x86-asm, ...) have nothing to print for irc's dialects."""

        def get_mlir() -> type[Target]:
            from irc.printing import IrcMLIRTarget

            return IrcMLIRTarget

        self.available_targets["mlir"] = get_mlir

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        """xDSL's flags, with MLIR's `--verify-diagnostics` and `--print-ir-after-all`."""
        from irc.tools.common import version_line

        # xDSL declares it a ClassVar but reads it from the instance: set for this one.
        version = version_line().replace("{", "{{").replace("}", "}}")
        self.version_format = version  # pyright: ignore[reportAttributeAccessIssue]
        # xDSL lists every pass in the help of -p, which is replaced below: give it none, so
        # that building the parser imports no target
        passes, self.available_passes = self.available_passes, {}
        super().register_all_arguments(arg_parser)
        self.available_passes = passes
        for action in arg_parser._actions:
            if action.dest == "passes":
                action.help = (
                    "the pass pipeline: 'a,b{opt=1}' or MLIR's 'builtin.module(a,b{opt=1})'; "
                    "passes and named pipelines (irc-default{targets=...}, irc-compile"
                    "{targets=...}) are listed with their options by --list-passes"
                )
            if action.dest == "target":
                action.help = "output format (only mlir)"
            if action.dest == "input_file":
                # Several files are processed in turn, their outputs joined by `// -----`
                # (so `irc-opt examples/*.mlir` works and re-parses with --split-input-file).
                action.nargs = "*"
                action.default = []
                action.help = "input files (default: stdin)"
            if action.dest == "verify_diagnostics":
                action.help = (
                    "Check the diagnostics against the expected-error/-warning/-remark/-note "
                    "annotations in the input (MLIR semantics); exit with 1 on any mismatch"
                )
        arg_parser.add_argument(
            "--pass-pipeline",
            metavar="PIPELINE",
            help="the pass pipeline, as -p (MLIR's option name)",
        )
        arg_parser.add_argument(
            "--list-passes",
            action="store_true",
            help="list every pass (summary, options with type and default) and named "
            "pipeline, then exit",
        )
        arg_parser.add_argument(
            "--print-ir-after-all",
            default=False,
            action="store_true",
            help="Print the IR to stderr after every pass, as MLIR does",
        )
        arg_parser.add_argument(
            "--timing",
            default=False,
            action="store_true",
            help="Print the wall time of parsing, every pass and the output to stderr "
            "(MLIR's -mlir-timing)",
        )

    # ---- Input ---------------------------------------------------------------

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """Open the input file; no file or `-` means stdin."""
        if self.args.input_file in (None, "-"):
            return sys.stdin.buffer, "mlir"
        try:
            stream = open(self.args.input_file, "rb")
        except OSError as exc:
            raise IrcOptError(
                f"could not open input file '{self.args.input_file}': {exc.strerror}"
            ) from None
        extension = os.path.splitext(self.args.input_file)[1].removeprefix(".")
        return stream, extension

    def get_input_name(self) -> str:
        """The file name used in locations: the input path, or `<stdin>`."""
        if self.args.input_file in (None, "-"):
            return _STDIN_NAME
        return self.args.input_file

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        """Read the input, split it on `// -----` if asked, and pick the frontend.

        Each chunk comes with the number of lines before it. Unknown file extensions
        are read as MLIR, as `mlir-opt` does.
        """
        stream, extension = self.get_input_stream()
        try:
            data = stream.read()
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
        self._source_lines = data.decode("utf-8", "replace").splitlines()
        if self.args.split_input_file:
            pieces = data.split(_SPLIT_MARKER)
            offsets = accumulate([0, *(piece.count(b"\n") for piece in pieces[:-1])])
            chunks: list[tuple[IO[bytes], int]] = [
                (BytesIO(piece), offset) for piece, offset in zip(pieces, offsets, strict=True)
            ]
        else:
            chunks = [(BytesIO(data), 0)]
        if self.args.frontend:
            extension = self.args.frontend
        if extension not in self.available_frontends:
            extension = "mlir"
        return chunks, extension

    def _parse_mlir(self, data: bytes, line_offset: int) -> ModuleOp:
        return parse_with_locations(
            self.ctx,
            data,
            self.get_input_name(),
            line_offset=line_offset,
            allow_implicit_module=not self.args.no_implicit_module,
        )

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        """Parse one chunk; MLIR chunks get file-absolute line numbers."""
        if file_extension == "mlir":
            return self._parse_mlir(chunk.read(), start_offset)
        return super().parse_chunk(chunk, file_extension, start_offset)

    # ---- Pipeline ------------------------------------------------------------

    def setup_pipeline(self) -> None:
        """Build the `-p` pipeline, turning spec errors into `IrcOptError`s.

        Between passes the module is verified op by op (unless `--disable-verify`),
        so a pass that breaks the IR is reported at the broken op.
        """
        from irc.pipelines import make_pass, pipeline_specs

        text = self.args.passes
        if self.args.pass_pipeline is not None:
            if text:
                raise IrcOptError("give the pipeline once: -p or --pass-pipeline")
            text = self.args.pass_pipeline
        try:
            specs = pipeline_specs(text or "")
        except ValueError as exc:
            raise IrcOptError(str(exc)) from None
        unknown = [spec.name for spec in specs if spec.name not in self.available_passes]
        if unknown:
            from irc.pipelines import NAMED_PIPELINES

            names = ", ".join(f"'{name}'" for name in unknown)
            available = ", ".join(sorted(self.available_passes))
            raise IrcOptError(
                f"unknown pass {names}; available passes: {available}; named pipelines: "
                f"{', '.join(NAMED_PIPELINES)} (--list-passes describes them)"
            )
        passes: list[ModulePass] = []
        for spec in specs:
            try:
                pass_class = self.available_passes[spec.name]()
            except ImportError as exc:
                raise IrcOptError(f"pass '{spec.name}' could not be loaded: {exc}") from None
            try:
                passes.append(make_pass(pass_class, spec))
            except ValueError as exc:
                raise IrcOptError(str(exc)) from None
        self.pipeline = PassPipeline(tuple(passes), self._make_callback())

    def _make_callback(
        self,
    ) -> Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]:
        start = time.perf_counter()

        def callback(
            previous_pass: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None
        ) -> None:
            nonlocal start
            if self.args.time_passes and previous_pass is not None:
                print(f"Pass {previous_pass.name} took {time.perf_counter() - start} seconds")
            if not self.args.disable_verify:
                verify_module(module)
            if previous_pass is not None:
                self._steps.end()
            if previous_pass is not None and self.args.print_ir_after_all:
                self._dump_ir(previous_pass, module)
            if previous_pass and next_pass and self.args.print_between_passes:
                print(f"IR after {previous_pass.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n\n")
            self._current_pass = next_pass
            if next_pass is not None:
                self._steps.begin(next_pass.name, module)
            if self.args.time_passes and next_pass is not None:
                start = time.perf_counter()

        return callback

    def _dump_ir(self, after: ModulePass, module: ModuleOp) -> None:
        """MLIR's `--mlir-print-ir-after-all` format, on stderr."""
        sys.stderr.write(f"// -----// IR Dump After {after.name} //----- //\n")
        printer = Printer(
            stream=sys.stderr,
            print_generic_format=self.args.print_op_generic,
            print_debuginfo=self.args.print_debuginfo,
        )
        printer.print_op(module)
        sys.stderr.write("\n\n")

    # ---- Running -------------------------------------------------------------

    # Returns the exit status; xDSL's returns None and nothing in xDSL reads it.
    def run(self) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Process every chunk of every input file; return the exit status (0 or 1)."""
        if self.args.list_passes:
            sys.stdout.write(describe_passes())
            return 0
        instrumentations: list[Instrumentation] = [Progress.for_tool("irc-opt")]
        if self.args.timing:
            self._timing.reset()
            instrumentations.append(self._timing)
        with instrumented(*instrumentations):
            status = self._run_files()
        if self.args.timing:
            sys.stderr.write(self._timing.report())
        return status

    def _run_files(self) -> int:
        files: list[str | None] = list(self.args.input_file) or [None]
        outputs: list[str] = []
        status = 0
        for name in files:
            self.args.input_file = name
            try:
                chunks, extension = self.prepare_input()
            except IrcOptError as exc:
                _print_tool_error(str(exc))
                return 1
            try:
                for chunk, offset in chunks:
                    with chunk:
                        data = chunk.read()
                    result = self._process_chunk(BytesIO(data), extension, offset)
                    outputs.append(result.output or "")  # a failed chunk prints nothing
                    if self.args.verify_diagnostics:
                        if not self._verify_chunk(data, offset, result.diagnostics):
                            status = 1
                    elif result.failed:
                        status = 1
            except ShrinkException:
                print("Success, can shrink")
                return 0
        if self.args.shrink:
            print("Failure, can't shrink")
            return 1
        if status == 0 or self.args.output_file is None:
            # mlir-opt's --split-input-file: the chunks that worked are printed even when
            # another failed; an output file is only written when everything worked.
            self._write_output("// -----\n".join(outputs))
        return status

    def _process_chunk(self, chunk: IO[bytes], extension: str, offset: int) -> _ChunkResult:
        """Parse, verify and transform one chunk, collecting its diagnostics."""
        result = _ChunkResult()

        def handle(diagnostic: Diagnostic) -> None:
            result.diagnostics.append(diagnostic)
            if not self.args.verify_diagnostics:
                self._report(diagnostic)

        module: ModuleOp | None = None
        self._current_pass = None
        with diagnostic_handler(handle):
            try:
                with step("parse"):
                    module = self.parse_chunk(chunk, extension, offset)
                if module is not None:
                    try:
                        self.apply_passes(module)
                    finally:
                        self._steps.end_all(failed=True)  # a pass that raised
                    with step("output"):
                        result.output = self.output_resulting_program(module)
            except ParseError as exc:
                if self.args.parsing_diagnostics and not self.args.verify_diagnostics:
                    print(exc)  # xDSL's --parsing-diagnostics: report on stdout, go on
                    result.output = ""
                    return result
                handle(diagnostic_from_exception(exc))
                result.failed = True
            except DiagnosticException as exc:
                diagnostic = diagnostic_from_exception(exc, fallback_op=module)
                if self._current_pass is not None and not isinstance(exc, IrcDiagnosticError):
                    # No op to point at: say which pass failed (reported at the module).
                    name = self._current_pass.name
                    diagnostic.message = f"pass '{name}' failed: {diagnostic.message}"
                handle(diagnostic)
                result.failed = True
            except Exception as exc:  # a bug in a pass, not in the input: still no traceback
                if os.environ.get("IRC_DEBUG"):
                    raise
                where = f" in pass '{self._current_pass.name}'" if self._current_pass else ""
                diagnostic = diagnostic_from_exception(exc, fallback_op=module)
                diagnostic.message = (
                    f"internal compiler error{where}: {type(exc).__name__}: {exc} "
                    "(set IRC_DEBUG=1 for a traceback)"
                )
                handle(diagnostic)
                result.failed = True
        if result.failed:
            result.output = None
        return result

    def _verify_chunk(self, data: bytes, offset: int, diagnostics: list[Diagnostic]) -> bool:
        """MLIR's `-verify-diagnostics` for one chunk; reports mismatches on stderr."""
        verifier = DiagnosticVerifier(
            data.decode("utf-8", "replace"), self.get_input_name(), line_offset=offset
        )
        failures = verifier.check(diagnostics)
        for failure in failures:
            self._report(failure)
        return not failures

    def _report(self, diagnostic: Diagnostic) -> None:
        """Print a diagnostic on stderr with its source line and a caret, as MLIR does."""
        text = format_with_source(diagnostic, self.get_input_name(), self._source_lines)
        sys.stderr.write(text + "\n")

    def _write_output(self, text: str) -> None:
        """Write the result to `-o` atomically (temp file + rename) or to stdout."""
        path = self.args.output_file
        if path is None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        from irc.fileio import write_atomically

        try:
            write_atomically(path, text)
        except OSError as exc:
            raise IrcOptError(
                f"could not write the output to '{path}': {exc.strerror or exc}"
            ) from None


def _describe_spec_error(what: str, exc: ArgSpecParseError) -> str:
    """`invalid <what>: <message>` plus the spec and a caret, from xDSL's multi-line text."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    # xDSL's text: a header, "pass-pipeline:L:C", the spec, the caret, the message.
    if len(lines) >= 5:
        return f"invalid {what}: {lines[-1].strip()}\n{lines[-3]}\n{lines[-2]}"
    return f"invalid {what}: {' '.join(line.strip() for line in lines)}"


def describe_passes() -> str:
    """`--list-passes`: every registered pass (summary, then each option as `name: type =
    default` and its docstring), then the named pipelines."""
    from irc.context import get_all_passes
    from irc.pipelines import NAMED_PIPELINES, pass_options, pass_summary

    lines = ["Passes (-p 'name{option=value ...}'):"]
    for name, factory in sorted(get_all_passes().items()):
        pass_class = factory()
        lines.append(f"  {name}: {pass_summary(pass_class)}")
        for option in pass_options(pass_class):
            default = f" = {option.default}" if option.default else " (default: empty)"
            lines.append(f"      {option.name}: {option.type}{default}")
            if option.doc:
                lines.append(f"          {option.doc}")
    lines.append("")
    lines.append("Named pipelines (-p 'name{targets=a,b ...}'):")
    for named in NAMED_PIPELINES.values():
        lines.append(f"  {named.name}: {named.summary}")
    return "\n".join(lines) + "\n"


def _print_tool_error(message: str) -> None:
    sys.stderr.write(f"irc-opt: {Severity.ERROR}: {message}\n")


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the `irc-opt` script; returns the exit status."""
    return IrcOptMain.main(args)


if __name__ == "__main__":
    sys.exit(main())
