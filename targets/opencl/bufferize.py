"""`opencl-bufferize{precision=fp32}`: OpenCL entries on tensors → `ocl.execute` on device buffers.

For every OpenCL executable not bufferized yet, each op of each entry (an `ocl.fusion`
counting as one op) gets its shape-specialised kernel from the templates of
`irc.targets.opencl.codegen`, and the executable gets one `ocl.program` holding the
constants to upload once (`ocl.upload`) and those kernels (`ocl.kernel`, identical kernels
shared by all entries). Each entry's body becomes one `ocl.execute`: an `ocl.alloc` per
intermediate tensor (no reuse yet: `opencl-plan-memory` does that) and an `ocl.launch` per
kernel run, naming its buffers and global size (local sizes are set by `opencl-codegen`); the
launches of an op with several results (`nn.split`) write one buffer per result (`writes`).

`precision` (`fp32` by default, or `fp16`) is the storage of float tensors: with `fp16`
the kernels are generated on half buffers (codegen.py's F32_F16 scheme: half storage and
elementwise arithmetic, float accumulators), float constants are uploaded as float16 and the
planned buffers take 2 bytes per element. An explicit `precision` is recorded on the
`ocl.program` (`precision = "fp16"`, or `"fp32"`), which `opencl-codegen` and the runtime read;
without the option the program has none and is fp32. The pass needs no device: given fp16
it generates fp16 whatever the machine has (the runtime refuses to load it on a device
without cl_khr_fp16).

`kernels` (`cpu` by default, or `gpu`) picks how conv, fully_connected and last-axis softmax
kernels are shaped (codegen.py's `KERNEL_STYLES`): `cpu` gives each work-item a register tile
(conv_kernels.py), `gpu` one float4 of output channels per work-item with the K loop split
over a work-group when the launch would leave a GPU idle (gpu_kernels.py), sized for
`compute-units` (the device's; 0: a default of 64). The target's `lowering_passes()` asks for
`gpu` on a GPU device. Neither option needs a device.

An op the target cannot run fails the pass with an error at that op.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error
from irc.dialects import delegate, ocl
from irc.dialects.nn import dense_from_array
from irc.targets.opencl.codegen import (
    KERNEL_STYLES,
    Launch,
    LoweringError,
    Program,
    generate_entry,
)
from irc.targets.opencl.fuse import is_bufferized, opencl_executables
from irc.targets.opencl.support import check_op

PROGRAM_NAME = "kernels"


def _check_ops(ops: list[Operation], pass_name: str) -> None:
    for op in ops:
        if isinstance(op, ocl.FusionOp):
            _check_ops([o for o in op.body.block.ops if not isinstance(o, ocl.YieldOp)], pass_name)
            continue
        if isinstance(op, ReturnOp):
            continue
        answer = check_op(op)
        if not answer:
            emit_error(op, f"{pass_name}: {answer.reason}")


def bufferize_executable(
    executable: delegate.ExecutableOp,
    pass_name: str = "opencl-bufferize",
    precision: str | None = None,
    kernels: str = "cpu",
    compute_units: int = 0,
) -> None:
    """Bufferize one OpenCL executable in place (generate everything first, then rewrite);
    errors name `pass_name`. `precision` None is fp32, not recorded on the program;
    `kernels` and `compute_units` as the pass's options."""
    if precision is not None and precision not in ocl.PRECISIONS:
        emit_error(executable, f"{pass_name}: precision must be fp32 or fp16, got '{precision}'")
    if kernels not in KERNEL_STYLES:
        emit_error(executable, f"{pass_name}: kernels must be cpu or gpu, got '{kernels}'")
    if compute_units < 0:
        emit_error(executable, f"{pass_name}: compute-units must be >= 0, got {compute_units}")
    funcs: list[FuncOp] = []
    for op in executable.body.block.ops:
        if not isinstance(op, FuncOp):
            emit_error(op, f"{pass_name}: unexpected '{op.name}' in an opencl executable")
        funcs.append(op)
    program = Program(precision or "fp32", kernels, compute_units)
    plans: list[tuple[list[Launch], list[int]]] = []
    for func in funcs:
        _check_ops(list(func.body.block.ops), pass_name)
        try:
            plans.append(generate_entry(func, program))
        except LoweringError as exc:
            emit_error(exc.op, f"{pass_name}: {exc.message}")
    taken = {f.sym_name.data for f in funcs}
    name = PROGRAM_NAME
    while name in taken:
        name += "_"
    body: list[Operation] = [
        ocl.UploadOp(i, dense_from_array(a)) for i, a in enumerate(program.constants)
    ]
    body += [
        ocl.KernelOp(kernel, text, program.comments[kernel])
        for text, kernel in program.kernels.items()
    ]
    Rewriter.insert_op(
        ocl.ProgramOp(name, "", body, precision), InsertPoint.at_start(executable.body.block)
    )
    for func, (launches, allocs) in zip(funcs, plans, strict=True):
        block = func.body.block
        old_ops = list(block.ops)
        ops: list[Operation] = [ocl.AllocOp(i, n) for i, n in enumerate(allocs)]
        ops += [
            ocl.LaunchOp(
                launch.kernel, launch.args, launch.global_size, [], launch.writes, launch.label
            )
            for launch in launches
        ]
        execute = ocl.ExecuteOp(name, sum(allocs), block.args, func.function_type.outputs.data, ops)
        block.add_ops([execute, ReturnOp(*execute.results)])
        for op in reversed(old_ops):  # users before producers
            block.erase_op(op)


@dataclass(frozen=True)
class OpenCLBufferizePass(ModulePass):
    """Turn OpenCL entries into `ocl.execute` (allocations, uploads, kernel launches)."""

    name = "opencl-bufferize"

    precision: str | None = None
    """Storage of float tensors: `fp32` (the default, also when absent) or `fp16`."""

    kernels: str = "cpu"
    """How conv/fully_connected/softmax kernels are shaped: `cpu` or `gpu`."""

    compute_units: int = 0
    """The device's compute units, for `gpu` launch shapes (0: a default of 64)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in opencl_executables(op):
            if not is_bufferized(executable):
                bufferize_executable(
                    executable,
                    precision=self.precision,
                    kernels=self.kernels,
                    compute_units=self.compute_units,
                )
