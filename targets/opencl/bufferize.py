"""`opencl-bufferize{precision=fp32}`: OpenCL entries on tensors → `ocl.execute` on device buffers.

For every OpenCL executable not bufferized yet, each op of each entry (an `ocl.fusion`
counting as one op) gets its shape-specialised kernels from its lowering
(`irc.targets.opencl.lowerings`: one module per op family, found by op type), and the
executable gets one `ocl.program` holding the constants to upload once (`ocl.upload`) and
those kernels (`ocl.kernel`, identical kernels shared by all entries). Each entry's body
becomes one `ocl.execute`: an `ocl.alloc` per intermediate tensor (no reuse yet:
`opencl-plan-memory` does that) and an `ocl.launch` per kernel run, naming its buffers and
global size (local sizes are set by `opencl-codegen`); the launches of an op with several
results (`nn.split`) write one buffer per result (`writes`).

`precision` (`fp32` by default, `fp16` or `fp16-native`) is the storage of float tensors:
with `fp16` the kernels keep float tensors as half bits in memory and every value as float
in registers (program.py, half_storage.py: `vload_half`/`vstore_half_rte`, core OpenCL, any
device); with `fp16-native` they are generated on half buffers and values (program.py's
F32_F16 scheme: half elementwise arithmetic, float accumulators; needs cl_khr_fp16). In both,
float constants are uploaded as float16 and the planned buffers take 2 bytes per element. An
explicit `precision` is recorded on the `ocl.program`, which `opencl-codegen` and the runtime
read; without the option the program has none and is fp32. The pass needs no device (the
runtime refuses to load an `fp16-native` program on a device without cl_khr_fp16).

`kernels` (`cpu` by default, or `gpu`) picks how conv, fully_connected and last-axis softmax
kernels are shaped (program.py's `KERNEL_STYLES`): `cpu` gives each work-item a register tile
(conv_kernels.py), `gpu` one float4 of output channels per work-item with the K loop split
over a work-group when the launch would leave a GPU idle (gpu_kernels.py), sized for
`compute-units` (the device's; 0: a default of 64). The target's `lowering_passes()` asks for
`gpu` on a GPU device. Neither option needs a device.

A tensor an int8 model leaves between two kernels as a qcast -> dcast round trip is stored
as its 8-bit integer where its readers dequantize it (int8_storage.py: the producing kernel
claims the storage offered, a reader that does not gets a dequantizing launch); an int8
input's standalone dcast is then not launched.

`generate_entry` is the work per entry: kernels, launches and one buffer per intermediate
tensor. An op the target cannot run fails the pass with an error at that op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error
from irc.dialects import delegate, nn, ocl
from irc.dialects.nn import array_from_dense, dense_from_array
from irc.dialects.nn.base import get_str
from irc.targets.opencl.fuse import is_bufferized, opencl_executables
from irc.targets.opencl.int8_storage import Int8Storage, Offer, set_offer
from irc.targets.opencl.int8_storage_plan import dequantize_kernel, elided_dcast, offer_for
from irc.targets.opencl.lowerings import LoweringError, emit
from irc.targets.opencl.lowerings.epilogue import channel_pad_view, epilogue_inputs
from irc.targets.opencl.lowerings.helpers import (
    CTYPE_BYTES,
    REAL,
    _ctype,
    _kernel,
    _numel,
    _shape,
)
from irc.targets.opencl.program import KERNEL_STYLES, Program
from irc.targets.opencl.support import check_op

PROGRAM_NAME = "kernels"


@dataclass
class Launch:
    kernel: str
    args: list[str]
    global_size: list[int]
    writes: int = 1
    """How many trailing `args` the kernel writes (one per result of the op)."""
    label: str | None = None
    """What this launch computes, when it differs from its kernel's comment (a kernel shared
    by identical ops describes the first of them)."""


@dataclass
class GeneratedEntry:
    source_kernels: dict[str, str]
    """Kernel body -> name (shared across the executable's entries)."""
    launches: list[Launch] = field(default_factory=list)
    allocs: list[int] = field(default_factory=list)
    """Bytes of each planned buffer b<i>."""


def _check_layout(op: Operation) -> None:
    if not isinstance(op, nn.NNOp):
        return
    props = op.all_properties()
    if "layout" in props and get_str(props, "layout") != "NHWC":
        layout = get_str(props, "layout")
        raise LoweringError(
            op, f"'{op.name}' is {layout}; opencl runs NHWC: run convert-layout{{to=NHWC}} first"
        )


FUSED_MARK = " + fused "
"""Separates a fused kernel's description from its epilogue ops' names."""


def _fusion_parts(op: Operation) -> tuple[Operation, list[Operation], SSAValue]:
    """(producer, epilogue ops, final value) of an op or an `ocl.fusion`."""
    if isinstance(op, ocl.FusionOp):
        return op.producer, op.epilogue, op.outputs[0]
    return op, [], op.results[0]


def generate_entry(func: FuncOp, program: Program) -> tuple[list[Launch], list[int]]:
    """Kernels (added to `program`), launches and buffer sizes for one entry.

    Every op (or `ocl.fusion`: one kernel for the producer and its epilogue) writes its
    result (each of its results: the last arguments of its launches) to the entry's output
    buffer `out<j>` when the entry returns it, else to a planned buffer `b<i>` of its own
    (`opencl-plan-memory` reuses them by liveness). Constants are uploaded only when a
    launch reads them (a packed filter replaces its raw constant)."""
    ops = list(func.body.block.ops)
    ret = ops[-1] if ops else None
    if not isinstance(ret, ReturnOp):
        raise LoweringError(func, "entry does not end in func.return")
    names: dict[SSAValue, str] = {arg: f"in{i}" for i, arg in enumerate(func.body.block.args)}
    outputs: dict[SSAValue, str] = {}
    for j, v in enumerate(ret.operands):
        if v not in outputs and v not in names:
            outputs[v] = f"out{j}"
    launches: list[Launch] = []
    allocs: list[int] = []
    lazy: dict[SSAValue, nn.ConstantOp] = {}
    int8: dict[SSAValue, Int8Storage] = {}
    """Tensors stored as 8-bit between kernels (int8_storage.py)."""

    def ref(v: SSAValue | str) -> str:
        if isinstance(v, str):
            return v
        if v not in names and v in lazy:
            names[v] = program.constant(array_from_dense(lazy[v].value))
        return names[v]

    for op in ops[:-1]:
        if isinstance(op, nn.ConstantOp):
            lazy[op.output] = op
            continue
        if isinstance(op, nn.PadOp) and channel_pad_view(op.output) is not None:
            continue  # read unpadded by the fused epilogue that uses it
        if (storage := elided_dcast(op, outputs)) is not None:
            dcast = op.results[0]  # its readers dequantize its 8-bit input
            names[dcast], int8[dcast] = ref(op.operands[0]), storage
            continue
        producer, epilogue, final = _fusion_parts(op)
        _check_layout(producer)
        # an op with several results (nn.split) writes all of them in each of its launches
        written = list(producer.results) if len(producer.results) > 1 else [final]
        for value in written:
            if value in outputs:
                names[value] = outputs[value]
            else:
                names[value] = f"b{len(allocs)}"
                allocs.append(_storage_bytes(value, program))
        residuals = epilogue_inputs(producer, epilogue)
        offer = offer_for(op, producer, epilogue, residuals, int8, set(outputs))
        first_request = len(program.requests)
        set_offer(program, offer)
        try:
            emitted = emit(producer, epilogue, program)
        finally:
            set_offer(program, None)
        if residuals and len(emitted) != 1:
            raise LoweringError(producer, f"'{producer.name}' cannot fuse a residual epilogue")
        asked = dict(program.requests[first_request:])  # this op's own descriptions
        dequantized = _claim(offer, final, names, allocs, launches, program, int8)
        fused = f"{FUSED_MARK}{', '.join(e.name for e in epilogue)}" if epilogue else ""
        for kernel, inputs, gsize in emitted:
            if epilogue and FUSED_MARK not in program.comments[kernel]:
                program.comments[kernel] += fused
            if min(gsize) == 0:
                continue
            read = [dequantized.get(v, v) if isinstance(v, SSAValue) else v for v in inputs]
            read += [dequantized.get(v, v) for v in residuals]
            args = [ref(v) for v in read] + [names[v] for v in written]
            label = asked.get(kernel, program.comments[kernel])
            if epilogue and FUSED_MARK not in label:
                label += fused
            own = label if label != program.comments[kernel] else None
            launches.append(Launch(kernel, args, gsize, len(written), own))

    # results that are entry arguments, constants or repeated: copy into the output buffer
    for j, v in enumerate(ret.operands):
        out = f"out{j}"
        if names.get(v) == out:
            continue
        n = _numel(_shape(v))
        if n == 0:
            continue
        ct = _ctype(v)
        k = program.kernel(_kernel(1, "    y[gid] = x0[gid];\n", ct, ct), f"copy {ct}")
        launches.append(Launch(k, [ref(v), out], [n]))
    return launches, allocs


def _claim(
    offer: Offer | None,
    final: SSAValue,
    names: dict[SSAValue, str],
    allocs: list[int],
    launches: list[Launch],
    program: Program,
    int8: dict[SSAValue, Int8Storage],
) -> dict[SSAValue, str]:
    """Settle an op's 8-bit storage offer after its kernels are generated: a claimed result
    is stored 8-bit (its buffer shrinks to a byte per element); an offered input that its
    kernels did not claim is dequantized into a float buffer by a launch before them.
    Returns the float buffer of each such input."""
    if offer is None:
        return {}
    if offer.result is not None and offer.claimed_result:
        int8[final] = offer.result
        allocs[int(names[final][1:])] = _numel(_shape(final))
    dequantized: dict[SSAValue, str] = {}
    for value, storage in offer.inputs.items():
        if value in offer.claimed_inputs:
            continue
        name = f"b{len(allocs)}"
        allocs.append(_storage_bytes(value, program))
        kernel = dequantize_kernel(storage, program)
        launches.append(Launch(kernel, [names[value], name], [_numel(_shape(value))]))
        dequantized[value] = name
    return dequantized


def _storage_bytes(value: SSAValue, program: Program) -> int:
    """Bytes of a tensor's device buffer (4 per float, 2 in fp16; 1 per 8-bit quantized
    element or `i1` mask, 4 / 8 per i32 / i64 element)."""
    ct = _ctype(value)
    return (program.real_bytes if ct == REAL else CTYPE_BYTES[ct]) * _numel(_shape(value))


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
        emit_error(
            executable,
            f"{pass_name}: precision must be fp32, fp16 or fp16-native, got '{precision}'",
        )
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
    """Storage of float tensors: `fp32` (the default, also when absent), `fp16` (half bits,
    any device) or `fp16-native` (half values, cl_khr_fp16)."""

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
