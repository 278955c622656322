"""`lower-opencl{tune=false precision=fp32}`: lower the OpenCL target's executables to `ocl`.

The whole lowering, as one pass: on every `delegate.executable ... target("opencl")` not
lowered yet it runs, in order, the four passes that irc-opt can also run one by one
(`--print-ir-after-all` shows each step):

1. `opencl-fuse` (`fuse.py`): producer + elementwise epilogue chains → `ocl.fusion`;
2. `opencl-bufferize` (`bufferize.py`): kernels chosen, constants to upload, entries →
   `ocl.execute` with `ocl.alloc`/`ocl.launch`;
3. `opencl-plan-memory` (`memory_plan.py`): planned buffers reused by liveness;
4. `opencl-codegen` (`codegen.py`): the program's source and the local sizes (a rule, or
   measured on the device with `tune=true`).

The lowering needs no device unless `tune=true`. Executables of other targets are left
alone; an op the target cannot run fails the pass with an error at that op. `precision`
(`fp32` default, or `fp16`) is `opencl-bufferize`'s: half storage for float tensors, recorded
on the `ocl.program`. The target's `lowering_passes()` is `lower-opencl`, with `tune=true`
when the environment variable `IRC_OPENCL_TUNE` is `1`/`true`, and with a `precision` when
`IRC_OPENCL_PRECISION` asks for one (fp16 only where the device has cl_khr_fp16, else fp32:
`irc.targets.opencl.target.precision_choice` says why), and with `kernels=gpu
compute-units=N` on a GPU device (`IRC_OPENCL_KERNELS=cpu|gpu|auto` overrides the style,
`IRC_OPENCL_COMPUTE_UNITS=N` the units the launches are shaped for:
`irc.targets.opencl.target.kernels_choice`) — the way to ask for them from `irc.compile`,
`irc-compile` and `irc-run`. `kernels`/`compute-units` are `opencl-bufferize`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from irc.dialects import delegate, ocl
from irc.targets.opencl.bufferize import bufferize_executable
from irc.targets.opencl.codegen import generate_executable
from irc.targets.opencl.fuse import TARGET, fuse_executable, is_bufferized, opencl_executables
from irc.targets.opencl.memory_plan import plan_execute

__all__ = ["TARGET", "LowerOpenCLPass", "is_lowered", "lower_executable"]


def is_lowered(executable: delegate.ExecutableOp) -> bool:
    """Whether the executable is fully lowered (its program has its source)."""
    programs = [op for op in executable.body.block.ops if isinstance(op, ocl.ProgramOp)]
    return bool(programs) and not any(p.kernels for p in programs)


def lower_executable(
    executable: delegate.ExecutableOp,
    *,
    tune: bool = False,
    pass_name: str = "lower-opencl",
    precision: str | None = None,
    kernels: str = "cpu",
    compute_units: int = 0,
) -> None:
    """Run the steps of `lower-opencl` that have not run yet on one executable, in place."""
    if not is_bufferized(executable):
        fuse_executable(executable)
        bufferize_executable(executable, pass_name, precision, kernels, compute_units)
        for op in executable.walk():
            if isinstance(op, ocl.ExecuteOp):
                plan_execute(op, pass_name)
    generate_executable(executable, tune, pass_name)


@dataclass(frozen=True)
class LowerOpenCLPass(ModulePass):
    """Lower `delegate.executable` ops of the OpenCL target to `ocl` programs and launches
    (`opencl-fuse`, `opencl-bufferize`, `opencl-plan-memory`, `opencl-codegen`)."""

    name = "lower-opencl"

    tune: bool = False
    """Measure the launches' local sizes on the device (cached) instead of the rule."""

    precision: str | None = None
    """Storage of float tensors: `fp32` (the default, also when absent), `fp16` (half bits,
    any device) or `fp16-native` (half values, cl_khr_fp16)."""

    kernels: str = "cpu"
    """How conv/fully_connected/softmax kernels are shaped: `cpu` or `gpu` (opencl-bufferize)."""

    compute_units: int = 0
    """The device's compute units, for `gpu` launch shapes (0: a default of 64)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in opencl_executables(op):
            if not is_lowered(executable):
                lower_executable(
                    executable,
                    tune=self.tune,
                    precision=self.precision,
                    kernels=self.kernels,
                    compute_units=self.compute_units,
                )
