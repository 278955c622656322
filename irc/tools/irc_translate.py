"""`irc-translate`: translate between models and IR text.

```
irc-translate --import-tflite MODEL.tflite [-o OUT.mlir] [--bind N=V] [--input-shape N=DIMS]
irc-translate --import-onnx MODEL.onnx [-o OUT.mlir] [--generic]
```

Importing prints the `nn` module of the model (weights as `dense<"0x...">` hex). The output
file is written atomically; a model that cannot be imported ends with one clear message on
stderr, exit status 1, no traceback and no output file. (Kernel emission, `--emit-opencl` and
`--emit-c`, comes with the code-generating targets.)
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Sequence

from irc.tools.common import (
    ToolError,
    add_model_options,
    parse_bindings,
    parse_input_shapes,
    print_tool_error,
    write_atomically,
)

_TOOL = "irc-translate"


def _make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=_TOOL, description="Translate models to irc IR.")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--import-tflite", action="store_true", help="import a .tflite model")
    mode.add_argument("--import-onnx", action="store_true", help="import an .onnx model")
    parser.add_argument("input_file", metavar="MODEL", help="the model file")
    parser.add_argument("-o", "--output", metavar="OUT.mlir", help="write the IR here")
    parser.add_argument("--generic", action="store_true", help="print ops in MLIR's generic form")
    add_model_options(parser)
    return parser


def _translate(args: argparse.Namespace) -> int:
    from irc.printing import Printer

    from irc.importers import ModelImportError, detect_format, import_model

    path: str = args.input_file
    expected = "tflite" if args.import_tflite else "onnx"
    try:
        with open(path, "rb") as stream:
            head = stream.read(16)
    except OSError as exc:
        raise ToolError(f"could not open input file '{path}': {exc.strerror}") from None
    try:
        actual = detect_format(head, path)
        if actual != expected:
            raise ToolError(f"{path}: is a {actual} model; use --import-{actual}")
        module = import_model(
            path,
            bind=parse_bindings(args.bind),
            input_shapes=parse_input_shapes(args.input_shape),
        )
    except ModelImportError as exc:
        raise ToolError(str(exc)) from None
    text = io.StringIO()
    Printer(text, print_generic_format=args.generic).print_op(module)
    text.write("\n")
    if args.output is None:
        sys.stdout.write(text.getvalue())
    else:
        data = text.getvalue().encode()
        write_atomically(args.output, lambda stream: stream.write(data), "the IR")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `irc-translate`; returns the exit status (0, 1, or 2 for usage)."""
    parser = _make_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    try:
        return _translate(args)
    except ToolError as exc:
        print_tool_error(_TOOL, str(exc))
        return 1
    except Exception as exc:  # a bug in irc, not in the input: still no traceback
        if os.environ.get("IRC_DEBUG"):
            raise
        print_tool_error(
            _TOOL, f"internal error: {type(exc).__name__}: {exc} (set IRC_DEBUG=1 for a traceback)"
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
