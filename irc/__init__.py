"""irc: an MLIR-style compiler for on-device ML inference, built on xDSL.

The Python API (docs/design.md §5). `import irc` is cheap: everything is imported on first use.

```python
import numpy as np
import irc

outputs = irc.run("model.mlir", {"x": np.ones((1, 4), np.float32)})
module = irc.read_module("model.mlir")         # parsed with locations, verified
program = irc.compile_function(module)           # compile once ...
outputs = program.run({"x": x})                  # ... run many times, from many threads
module = irc.import_model("model.tflite")      # .tflite / .onnx -> the nn dialect
outputs = irc.run("model.onnx", {"x": x})        # import and run in one step
model = irc.compile("model.tflite", targets=["opencl", "reference"])  # partition, lower
outputs = model.run({"x": x}); print(model.summary); model.save("model.compiled.mlir")
model = irc.load("model.compiled.mlir")          # a compiled module, ready to run
outputs = irc.run("model.tflite", {"x": x}, targets="cpu", strict=True)  # no silent fallback
```

Warnings (a requested target that is not available here, whose ops fall back to the next
target or the host) are logged on the `irc` logger, not raised with `warnings.warn`: a
program running under `python -W error` still gets the documented fallback, and with no
logging configured Python prints them on stderr. `strict=True` makes them errors.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp

    from irc.compiler import CompiledModel, compile, load
    from irc.importers import ModelImportError, import_model
    from irc.runtime import (
        CompileError,
        ExecutionError,
        ExecutorError,
        InputError,
        Program,
        compile_function,
    )

__all__ = [
    "CompileError",
    "CompiledModel",
    "ExecutionError",
    "ExecutorError",
    "InputError",
    "ModelImportError",
    "Program",
    "__version__",
    "compile",
    "compile_function",
    "import_model",
    "load",
    "parse_module",
    "read_module",
    "run",
]

_LAZY_EXPORTS = {
    "CompileError": "irc.runtime",
    "ExecutionError": "irc.runtime",
    "ExecutorError": "irc.runtime",
    "InputError": "irc.runtime",
    "Program": "irc.runtime",
    "compile_function": "irc.runtime",
    "CompiledModel": "irc.compiler",
    "compile": "irc.compiler",
    "load": "irc.compiler",
    "ModelImportError": "irc.importers",
    "import_model": "irc.importers",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'irc' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def _version() -> str:
    """irc's version, from the installed package's metadata."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("irc")
    except PackageNotFoundError:  # imported from a checkout that was never installed
        return "0+unknown"


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def parse_module(
    source: str | bytes | os.PathLike[str],
    *,
    filename: str | None = None,
    ctx: Context | None = None,
) -> ModuleOp:
    """Parse IR text (`str`/`bytes`) or an IR file (a path object), with locations, and verify.

    Ops get `FileLineColLoc`s naming `filename` (default: the path, or `<string>`), so
    later errors point into the source. Raises xDSL's `ParseError` for bad syntax and
    `irc.diagnostics.IrcDiagnosticError` (located at the op) for IR that does not verify.
    """
    if isinstance(source, os.PathLike):
        return read_module(source, ctx=ctx)
    from irc.context import make_context
    from irc.diagnostics import parse_with_locations, verify_module

    module = parse_with_locations(
        make_context() if ctx is None else ctx,
        source,
        "<string>" if filename is None else filename,
    )
    verify_module(module)
    return module


def read_module(path: str | os.PathLike[str], *, ctx: Context | None = None) -> ModuleOp:
    """Read, parse (with locations) and verify the IR file at `path`."""
    with open(path, "rb") as stream:
        data = stream.read()
    return parse_module(data, filename=os.fspath(path), ctx=ctx)


def run(
    module_or_path: ModuleOp | str | os.PathLike[str],
    inputs: Mapping[str, np.ndarray],
    *,
    entry: str = "main",
    check: bool = False,
    targets: str | Sequence[str] | None = None,
    strict: bool = False,
) -> dict[str, np.ndarray]:
    """Run the function `@entry` of a module, an IR file or a model on the reference target,
    or, with `targets`, compiled for them (`irc.compile(..., targets, strict=strict)`).

    A model path (a `.tflite` / `.onnx` file, or any file whose bytes are one,
    `irc.fileio.file_format`) is imported with `import_model`, another path is read with
    `read_module`; a module is cloned first (the caller's module is
    never modified). The passes the reference target needs run first on the host program
    (`irc.pipelines.lower_host`; a compiled module's executables are left to their
    targets, which run its dispatches), then the function is compiled into a
    `Program` and run. `inputs` and the result are keyed by the function's input and
    output names (`irc.input_names` / `irc.output_names`, else `arg0..` / `result0..`).
    `check=True` verifies every kernel's results against its op's types.

    For repeated runs, compile once with `compile_function` and call `Program.run`.
    Raises `InputError` for inputs that do not match the signature, `CompileError` for
    ops the reference target cannot run, `ExecutionError` when a kernel fails, and (with
    `targets`) what `irc.compile` raises: with `strict=True`, `TargetError` for a target
    that is not available here.
    """
    from xdsl.dialects.builtin import ModuleOp

    from irc.pipelines import lower_host
    from irc.runtime import compile_function

    if targets is not None:
        from irc.compiler import compile as compile_model

        compiled = compile_model(module_or_path, targets, entry=entry, check=check, strict=strict)
        return compiled.run(inputs)
    if isinstance(module_or_path, ModuleOp):
        module = module_or_path.clone()
    elif isinstance(module_or_path, str | os.PathLike):
        from irc.fileio import is_model_file

        if is_model_file(module_or_path):
            from irc.specialize import ModelSource

            # Dynamic input dimensions take the shapes of the given inputs.
            source = ModelSource.read(os.fspath(module_or_path), None)
            signature = source.signature()
            shapes = {
                name: tuple(getattr(value, "shape", ()))
                for name, value in (inputs.items() if isinstance(inputs, Mapping) else ())
                if any(d < 0 for d in signature.get(name, ()))
            }
            module = source.instantiate(shapes)
        else:
            module = read_module(module_or_path)
    else:
        raise TypeError(
            f"expected a ModuleOp or a path, got {type(module_or_path).__name__}; "
            "parse IR text with irc.parse_module first"
        )
    lower_host(module)
    return compile_function(module, entry, check=check).run(inputs)
