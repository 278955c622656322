"""irc's runtime: the executor that runs a host function on prepared kernels and targets.

`compile_function(module, entry)` turns a `func.func` into a `Program` (a flat schedule,
compiled once, with every dispatched executable loaded by its target's runtime);
`Program.run(inputs)` / `Program.run_positional(args)` run it, and `profile=Profile()`
times every step. See `irc.runtime.executor` and `irc.runtime.profiling`.
"""

from irc.runtime.errors import CompileError, ExecutionError, ExecutorError, InputError
from irc.runtime.executor import (
    INPUT_NAMES_ATTR,
    OUTPUT_NAMES_ATTR,
    Listener,
    Program,
    Step,
    StepFactory,
    TargetsArg,
    TensorSpec,
    compile_function,
    step_for_op,
)
from irc.runtime.profiling import Profile, ProfileRow

__all__ = [
    "INPUT_NAMES_ATTR",
    "OUTPUT_NAMES_ATTR",
    "CompileError",
    "ExecutionError",
    "ExecutorError",
    "InputError",
    "Listener",
    "Profile",
    "ProfileRow",
    "Program",
    "Step",
    "StepFactory",
    "TargetsArg",
    "TensorSpec",
    "compile_function",
    "step_for_op",
]
