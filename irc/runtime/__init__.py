"""irc's runtime: the executor that runs a host function on prepared kernels.

`compile_function(module, entry)` turns a `func.func` into a `Program` (a flat schedule,
compiled once); `Program.run(inputs)` runs it. See `irc.runtime.executor`.
"""

from irc.runtime.errors import CompileError, ExecutionError, ExecutorError, InputError
from irc.runtime.executor import (
    INPUT_NAMES_ATTR,
    OUTPUT_NAMES_ATTR,
    Listener,
    Program,
    Step,
    StepFactory,
    TensorSpec,
    compile_function,
    step_for_op,
)

__all__ = [
    "INPUT_NAMES_ATTR",
    "OUTPUT_NAMES_ATTR",
    "CompileError",
    "ExecutionError",
    "ExecutorError",
    "InputError",
    "Listener",
    "Program",
    "Step",
    "StepFactory",
    "TensorSpec",
    "compile_function",
    "step_for_op",
]
