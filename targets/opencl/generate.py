"""`opencl-codegen{tune=false}`: the program's OpenCL C source and the launches' local sizes.

For every `ocl.program` of an OpenCL executable that still holds `ocl.kernel` ops (what
`opencl-bufferize` chose), the kernels are named and assembled into the program's `source`
(`irc.targets.opencl.codegen.assemble_source`: a header — with the cl_khr_fp16 pragma when
the program's `precision` is fp16 — each kernel after a comment saying what it computes)
and the `ocl.kernel` ops go. Every `ocl.launch` without a local size gets one: by
`irc.targets.opencl.tuning.rule_local_size`, or with `tune=true` the fastest of a few
candidates measured once on the device (cached on disk; needs a device). A kernel that
declares `reqd_work_group_size` (gpu_kernels.py's K-split GEMM and softmax) gets that size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from irc.diagnostics import emit_error
from irc.dialects import delegate, ocl
from irc.dtypes import numpy_dtype
from irc.targets.opencl.codegen import assemble_source
from irc.targets.opencl.fuse import opencl_executables
from irc.targets.opencl.tuning import TuningLaunch, rule_local_size, tune_local_sizes


def _bytes(t: object) -> int:
    assert isinstance(t, TensorType)
    count = 1
    for d in t.get_shape():
        count *= d
    return count * numpy_dtype(t).itemsize


REQUIRED_GROUP = re.compile(r"reqd_work_group_size\(([0-9]+), *([0-9]+), *([0-9]+)\)")


def required_local_size(kernel_body: str) -> list[int] | None:
    """The work-group size a kernel declares with `reqd_work_group_size` (gpu_kernels.py's
    local-memory kernels), or None."""
    m = REQUIRED_GROUP.search(kernel_body)
    if m is None:
        return None
    size = [int(v) for v in m.groups()]
    while len(size) > 1 and size[-1] == 1:
        size.pop()
    return size


def _launches(executable: delegate.ExecutableOp) -> list[tuple[ocl.ExecuteOp, ocl.LaunchOp]]:
    return [
        (execute, launch)
        for func in executable.body.block.ops
        if isinstance(func, FuncOp)
        for execute in func.body.block.ops
        if isinstance(execute, ocl.ExecuteOp)
        for launch in execute.body.block.ops
        if isinstance(launch, ocl.LaunchOp)
    ]


def _tune(
    executable: delegate.ExecutableOp, program: ocl.ProgramOp, bodies: dict[str, str]
) -> None:
    """Measured local sizes for every launch without one (one execute at a time: each has
    its own buffers)."""
    from irc.targets.opencl.device import get_device
    from irc.targets.opencl.runtime import check_precision

    check_precision(get_device(), program)
    by_execute: dict[ocl.ExecuteOp, list[ocl.LaunchOp]] = {}
    for execute, launch in _launches(executable):
        if not launch.local_size.data:
            by_execute.setdefault(execute, []).append(launch)
    uploads = {f"c{u.index.value.data}": _bytes(u.value.type) for u in program.uploads}
    for execute, launches in by_execute.items():
        sizes = dict(uploads)
        sizes |= {f"in{i}": _bytes(v.type) for i, v in enumerate(execute.args)}
        sizes |= {f"out{i}": _bytes(v.type) for i, v in enumerate(execute.outputs)}
        for op in execute.body.block.ops:
            if isinstance(op, ocl.AllocOp):
                sizes[f"b{op.id.value.data}"] = op.bytes.value.data
        tuning = [
            TuningLaunch(
                launch.kernel.data,
                bodies[launch.kernel.data],
                [a.data for a in launch.args.data],
                [g.value.data for g in launch.global_size.data],
            )
            for launch in launches
        ]
        chosen = tune_local_sizes(program.source.data, tuning, sizes)
        for launch, local in zip(launches, chosen, strict=True):
            launch.local_size = ArrayAttr([IntegerAttr(v, i64) for v in local])


def generate_executable(
    executable: delegate.ExecutableOp, tune: bool = False, pass_name: str = "opencl-codegen"
) -> None:
    """Assemble the program's source and set the local sizes of one executable in place."""
    programs = [op for op in executable.body.block.ops if isinstance(op, ocl.ProgramOp)]
    if len(programs) != 1:
        emit_error(executable, f"{pass_name}: expected one ocl.program (run opencl-bufferize)")
    (program,) = programs
    kernels = program.kernels
    if not kernels:
        return  # generated already
    bodies = {k.sym_name.data: k.body.data for k in kernels}
    for _, launch in _launches(executable):
        if launch.kernel.data not in bodies:
            emit_error(launch, f"{pass_name}: no ocl.kernel named '{launch.kernel.data}'")
    program.source = type(program.source)(
        assemble_source(
            [(k.sym_name.data, k.body.data, k.description.data) for k in kernels],
            program.precision,
        )
    )
    for kernel in kernels:
        program.body.block.erase_op(kernel)
    for _, launch in _launches(executable):  # fixed by the kernel: neither rule nor tuning
        required = required_local_size(bodies[launch.kernel.data])
        if required is not None and not launch.local_size.data:
            launch.local_size = ArrayAttr([IntegerAttr(v, i64) for v in required])
    if tune:
        from irc.targets.opencl.device import DeviceError
        from irc.targets.opencl.runtime import OpenCLLoadError

        try:
            _tune(executable, program, bodies)
        except (DeviceError, OpenCLLoadError) as exc:
            emit_error(executable, f"{pass_name}: tune=true needs the OpenCL device: {exc}")
        return
    for _, launch in _launches(executable):
        if not launch.local_size.data:
            local = rule_local_size([g.value.data for g in launch.global_size.data])
            launch.local_size = ArrayAttr([IntegerAttr(v, i64) for v in local])


@dataclass(frozen=True)
class OpenCLCodegenPass(ModulePass):
    """Generate the OpenCL C source of every bufferized OpenCL executable; local sizes by
    rule, or measured on the device with `tune=true`."""

    name = "opencl-codegen"

    tune: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in opencl_executables(op):
            if any(isinstance(p, ocl.ProgramOp) for p in executable.body.block.ops):
                generate_executable(executable, self.tune)
