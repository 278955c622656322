"""C code generation of the CPU target: one C function per entry of a `delegate.executable`.

`generate_function(func, c_name, constants)` (the heart of `cpu-codegen`) turns an entry
(a `func.func` of `nn` ops and `cpu.fusion`s on static float32 tensors, or of the integer
form `lower-quantized` gives quantized ops: integer `nn` ops, `quant.scast`,
`quant.rescale`) into one C function that runs all of its
ops; pointers carry each value's C type (`float`, `int8_t`, `uint8_t`, `int16_t`,
`int32_t`; a quantized tensor is its storage integers):

    void irc_fn_0(const float *in0, ..., int8_t *out0, ..., const void *const *consts,
                  float *ws);

* **Buffer plan.** Arguments are read in place and results written in place: the op that
  produces a returned value writes straight into the caller's output buffer. Every other
  intermediate tensor, and the scratch an op needs (a zero-padded input, a filter packed at
  run time), gets an offset in one workspace arena: first-fit over live ranges, 64-byte
  aligned, so buffers are reused as soon as their last reader ran. Reshapes are free (the
  result shares its input's buffer). `plan_function` computes the plan and records it on
  the entry (`cpu-plan-memory`: `cpu.offsets`, `cpu.scratch`, `cpu.alias`,
  `cpu.workspace`); `FunctionCodegen.generate` follows the recorded plan (`read_plan`
  checks it against the ops).
* **Constants.** `nn.constant` values are passed in the constants table `consts`, which the
  runtime builds once at load time; filters are packed at compile time into the layout
  their kernel reads (`packing`), so the table holds them packed. A constant operand of an
  elementwise op whose elements are all equal becomes a literal instead.
* **Integers.** `quant.scast` is free (an alias); `quant.rescale` runs `irc_mbqm`, the C
  mirror of the reference's MultiplyByQuantizedMultiplier (bit-exact, tested), on 8 int64
  vector lanes (`irc_mbqm_q8`; channels innermost step 8 channels at a time, per-lane
  multipliers and shifts), scalar only for tails, split across threads when large; a
  widening `nn.cast` whose only use is an integer binary op is an alias that op reads
  through (zero-point subtraction reads the int8 input directly); integer
  conv2d / fully_connected accumulate exactly in int32 (`irc_conv2d_i32`,
  `irc_depthwise_i32`, inputs widened to int32 and zero-padded in the workspace, constant
  filters packed to int32 at compile time); pools, reductions, casts, clamps and
  add/sub/mul (wrapping, as numpy's int32) follow the reference kernels exactly.
* **Fusion.** A `cpu.fusion` (`cpu-fuse`) is one kernel: kind "qconv", an int8 chain
  `x -> i32 - zp -> conv2d / fully_connected -> rescale [-> clip]` read back from the region
  with `qfusion.match_chain`, runs as ONE kernel that reads the int8 input and writes the
  int8 result (`fused_int8`: vpdpbusd dot products with the zero-point correction folded
  into the bias, or the depthwise kernel on column quads of 4 kernel rows, its int16 form
  for very wide kernels; requantization in the epilogue); "qadd",
  the int8 add (`fused_int8_add`); "conv_add", a float conv2d with the residual add (and
  a relu after it) in its epilogue. A fusion whose ops are not a chain of its kind is
  refused. `IRC_CPU_PROFILE=1` times every kernel (`KernelProfiler`, read with
  `targets/cpu/profiling.py`).
* **Steps.** An entry of more than `steps.OPS_PER_STEP` ops calls its op blocks, in order,
  in small static functions of that many ops each (`steps.split_into_steps`): gcc's time
  on one function grows faster than the function (DenseNet-121's 430-op entry: 21 -> 10 s).
* **Lowerings.** How each op runs comes from the op -> lowering registry
  (`irc.targets.cpu.lowerings`, one module per op family: `lower(op, ctx)`), after the
  target's `supports()` accepted it (every member of a fusion too).
* **Kernels.** Heavy ops call the kernel library (`csrc`: convolution as a register-blocked
  implicit GEMM, depthwise, pooling, softmax, resize); elementwise ops, reductions and data
  movement become loop nests with literal bounds, their dimensions collapsed where the data
  is contiguous so that the innermost loop is long and gcc vectorises it.

No text from the model reaches the source: C names are generated (`in0`, `out1`, `K[3]`,
`irc_fn_0`) and comments hold only op names of the dialect and shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, UnitAttr, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from irc.dialects import cpu, nn, quant
from irc.sanitize import c_comment, c_identifier
from irc.targets.cpu import csrc, lowerings
from irc.targets.cpu.c_types import C_TYPES, c_type
from irc.targets.cpu.lowerings.helpers import (
    block,
    c_call,
    c_float,
    ctype,
    describe,
    dtype,
    fusion_inputs,
    numel,
    shape,
    units,
)
from irc.targets.cpu.lowerings.quant_casts import CAST_OPS
from irc.targets.cpu.lowerings.registry import (
    Emitter,
    Lines,
    Lowered,
    LoweringContext,
    LoweringError,
)
from irc.targets.cpu.outline import LoopContext
from irc.targets.cpu.profiling import KernelProfiler, profile_enabled
from irc.targets.cpu.steps import split_into_steps
from irc.targets.cpu.support import check_op

OpLowering = LoweringContext
"""The context a lowering gets (its former name, kept for `dynamic_quant.lower_fusion`)."""

__all__ = [
    "ALIGN_FLOATS",
    "BufferPlan",
    "ConstantTable",
    "Emitter",
    "FunctionCodegen",
    "GeneratedFunction",
    "Lowered",
    "LoweringContext",
    "LoweringError",
    "OpLowering",
    "assemble_source",
    "block",
    "c_call",
    "c_float",
    "describe",
    "fusion_inputs",
    "generate_function",
    "lower_op",
    "plan_function",
    "read_plan",
    "record_plan",
]

ALIGN_FLOATS = 16
"""Workspace allocations start on 64-byte boundaries."""


# ---- Constants ----------------------------------------------------------------------------------


@dataclass
class ConstantTable:
    """The constants of one `cpu.module`: (packing, float32 or integer array), from 0."""

    entries: list[tuple[str, np.ndarray]] = field(default_factory=list)
    _index: dict[tuple[SSAValue, str], int] = field(default_factory=dict)

    def add(self, key: SSAValue, packing_name: str, make: Callable[[], np.ndarray]) -> int:
        """The index of `key`'s constant packed as `packing_name` (packed once)."""
        ident = (key, packing_name)
        if ident not in self._index:
            self._index[ident] = len(self.entries)
            array = np.ascontiguousarray(make())
            if array.dtype.kind == "f":
                array = array.astype(np.float32, copy=False)
            self.entries.append((packing_name, array))
        return self._index[ident]


# ---- Per-op lowering ----------------------------------------------------------------------------


@dataclass
class Storage:
    """Where a value lives during one call: an argument, a result, a constant or the arena."""

    kind: str
    """"in", "out", "const" or "ws"."""
    index: int
    """Argument/result/constant index, or the arena offset in floats."""
    ct: str = "float"
    """The C type of the elements."""

    def expr(self) -> str:
        match self.kind:
            case "in":
                return f"in{self.index}"
            case "out":
                return f"out{self.index}"
            case "const":
                if self.ct != "float":
                    return f"((const {self.ct} *)K[{self.index}])"
                return f"K[{self.index}]"
        if self.ct != "float":
            return f"(({self.ct} *)(ws + {self.index}))"
        return f"(ws + {self.index})"


def lower_op(op: Operation, ctx: LoweringContext) -> Lowered:
    """How `op` (an `nn` / `quant` op or a `cpu.fusion`) runs: checked with the target's
    `supports()` (each member of a fusion), then the first of its registered lowerings that
    gives it (`lowerings.lower`); `LoweringError` with the reason otherwise."""
    for member in op.members if isinstance(op, cpu.FusionOp) else (op,):
        support = check_op(member)
        if not support:
            raise LoweringError(member, support.reason.removeprefix("cpu: "))
    return lowerings.lower(op, ctx)


# ---- The function -------------------------------------------------------------------------------


@dataclass
class GeneratedFunction:
    """One entry lowered to C."""

    name: str
    """The C function's name (generated, never taken from the model)."""
    source: str
    """Its C definition."""
    workspace_bytes: int
    snippets: frozenset[str]
    num_inputs: int
    num_outputs: int


class _Arena:
    """First-fit allocation of aligned blocks in the workspace; tracks the peak."""

    def __init__(self) -> None:
        self.live: dict[int, tuple[int, int]] = {}
        self.peak = 0
        self._next_id = 0

    def alloc(self, size: int) -> tuple[int, int]:
        size = max(ALIGN_FLOATS, -(-size // ALIGN_FLOATS) * ALIGN_FLOATS)
        offset = 0
        for start, length in sorted(self.live.values()):
            if start - offset >= size:
                break
            offset = max(offset, start + length)
        ident = self._next_id
        self._next_id += 1
        self.live[ident] = (offset, size)
        self.peak = max(self.peak, offset + size)
        return ident, offset

    def free(self, ident: int) -> None:
        del self.live[ident]


@dataclass
class BufferPlan:
    """Where an entry's values and scratch live: what `cpu-plan-memory` records."""

    results: dict[Operation, list[int]]
    """Per op running a kernel: each result's workspace offset in floats, -1 for an entry
    result (written in place into the caller's output buffer)."""
    scratch: dict[Operation, list[int]]
    """Per op running a kernel: its scratch buffers' workspace offsets in floats."""
    aliases: set[Operation]
    """Ops whose result shares operand 0's buffer (nothing runs)."""
    workspace_floats: int


class FunctionCodegen:
    """Generates the C function of one entry (see the module docstring)."""

    def __init__(self, func: FuncOp, c_name: str, constants: ConstantTable):
        self.func = func
        self.c_name = c_identifier(c_name)
        self.constants = constants
        self._storage: dict[SSAValue, Storage] = {}
        self._constant_values: dict[SSAValue, np.ndarray] = {}
        self._base: dict[SSAValue, SSAValue] = {}
        self._plan_comment: Lines = []

    def constant_array(self, value: SSAValue) -> np.ndarray | None:
        return self._constant_values.get(value)

    def constant_splat(self, value: SSAValue) -> float | None:
        """The value of a constant all of whose elements are equal (None otherwise)."""
        array = self._constant_values.get(self.base(value))
        if array is None or array.size == 0 or array.dtype.kind != "f":
            return None
        first = array.reshape(-1)[0]
        if np.isnan(first) or not np.all(array == first):
            return None
        return float(first)

    def base(self, value: SSAValue) -> SSAValue:
        while value in self._base:
            value = self._base[value]
        return value

    def pointer(self, value: SSAValue) -> str:
        base = self.base(value)
        if base in self._constant_values and base not in self._storage:
            array = self._constant_values[base]
            index = self.constants.add(base, "raw", lambda: array)
            self._storage[base] = Storage("const", index, C_TYPES[array.dtype])
        return self._storage[base].expr()

    def _analyse(self) -> tuple[list[tuple[Operation, Lowered]], list[SSAValue]]:
        """How every op runs (constants aside) and the returned values; checks the entry."""
        block = self.func.body.block
        ops = list(block.ops)
        if not ops or not isinstance(ops[-1], ReturnOp):
            raise LoweringError(self.func, "the entry must end with func.return")
        returned = list(ops[-1].operands)
        for i, arg in enumerate(block.args):
            ct = c_type(arg.type) or "float"  # checked after the ops
            self._storage[arg] = Storage("in", i, ct)
        ctx = LoweringContext(self)
        plans: list[tuple[Operation, Lowered]] = []
        for op in ops[:-1]:
            if isinstance(op, nn.ConstantOp):
                support = check_op(op)
                if not support:
                    raise LoweringError(op, support.reason.removeprefix("cpu: "))
                array = np.ascontiguousarray(op.to_array()).astype(dtype(op.output), copy=False)
                self._constant_values[op.output] = array
                continue
            if not isinstance(op, nn.NNOp | quant.SCastOp | quant.RescaleOp | cpu.FusionOp) and (
                type(op) not in CAST_OPS
            ):
                raise LoweringError(op, f"no kernel for '{op.name}'")
            lowered = lower_op(op, ctx)
            if lowered.alias:
                self._base[op.results[0]] = op.operands[0]
            plans.append((op, lowered))
        # Ops first (their refusals say most), then what crosses the boundary.
        for arg in block.args:
            self._check_tensor(arg, self.func)
        for value in returned:
            self._check_tensor(value, ops[-1])
        return plans, returned

    def plan_memory(self) -> BufferPlan:
        """The entry's buffer plan (see the module docstring), computed from its ops."""
        plans, returned = self._analyse()
        return self._plan_buffers(plans, returned)

    def generate(self) -> GeneratedFunction:
        """The C function, following the buffer plan recorded on the entry's ops."""
        plans, returned = self._analyse()
        plan = read_plan(self.func, plans, self._output_of(plans, returned))
        temps_of = self._apply_plan(plans, plan, returned)
        block = self.func.body.block
        emitter = Emitter(self)
        profiling = profile_enabled()
        profiler = KernelProfiler(self.c_name)
        params = [(f"const {ctype(a)} *", f"in{i}") for i, a in enumerate(block.args)]
        params += [(f"{ctype(v)} *", f"out{j}") for j, v in enumerate(returned)]
        shared = [*params, ("const float *const *", "K"), ("float *", "ws")]
        loops = LoopContext(self.c_name, shared)
        ops: list[Lines] = []
        snippets: set[str] = {"common"}
        for op, lowered in plans:
            if lowered.alias:
                continue
            results = [self.pointer(r) for r in op.results]
            lines = loops.outline(lowered.emit(emitter, results, temps_of[op]))
            if profiling:
                timed, data = lowered.timed or (op, tuple(op.operands))
                element = ctype(self.base(data[0])) if data else ctype(op.results[0])
                lines = profiler.wrap(timed, f"{describe(timed)} {element}", lines)
            ops.append(lines)
            snippets.update(lowered.snippets)
        steps, body = split_into_steps(self.c_name, shared, ops, loops.entry_declaration())
        for j, value in enumerate(returned):
            src = self.pointer(value)
            if src != f"out{j}":
                count = numel(shape(value))
                size = f"sizeof({ctype(value)}) * {count}"
                body.append(f"memcpy(out{j}, {src}, {size}); /* result {j} */")

        signature = [f"{ct}{name}" for ct, name in params]
        signature += ["const void *const *consts", "float *ws"]
        header = [
            f"/* {c_comment(self.c_name)}: {len(plans)} ops, "
            f"workspace {plan.workspace_floats * 4} bytes. */",
            *self._plan_comment,
            f"void {self.c_name}({', '.join(signature)}) {{",
            "  const float *const *K = (const float *const *)consts;",
            "  (void)K;",
            "  (void)ws;",
            "  irc_pool_run_begin(); /* the pool's workers spin between this run's kernels */",
        ]
        body.append("irc_pool_run_end(); /* and sleep after it */")
        source = "\n".join([*header, *("  " + line for line in body), "}"]) + "\n"
        source = loops.definitions() + steps + source
        if profiling:
            source = profiler.table() + source
            snippets.add("profile")
        return GeneratedFunction(
            self.c_name,
            source,
            plan.workspace_floats * 4,
            frozenset(snippets),
            len(block.args),
            len(returned),
        )

    def _check_tensor(self, value: SSAValue, op: Operation) -> None:
        type_ = value.type
        if not isinstance(type_, TensorType) or any(d < 0 for d in type_.get_shape()):
            raise LoweringError(op, f"expected a tensor of static shape, got {type_}")
        if c_type(type_) is None:
            raise LoweringError(
                op, f"entry arguments and results must be float32 or integer tensors, got {type_}"
            )

    def _output_of(
        self, plans: list[tuple[Operation, Lowered]], returned: list[SSAValue]
    ) -> dict[SSAValue, int]:
        """Returned values produced here -> the output buffer they are written into."""
        produced = {r for op, lowered in plans if not lowered.alias for r in op.results}
        outputs: dict[SSAValue, int] = {}
        for j, value in enumerate(returned):
            base = self.base(value)
            if base in produced and base not in outputs:
                outputs[base] = j
        return outputs

    def _plan_buffers(
        self, plans: list[tuple[Operation, Lowered]], returned: list[SSAValue]
    ) -> BufferPlan:
        """First-fit over live ranges: every produced value and every op's scratch."""
        outputs = self._output_of(plans, returned)
        # Last use of every buffer (through aliases), in op positions.
        last_use: dict[SSAValue, int] = {}
        for i, (op, lowered) in enumerate(plans):
            for value in (*op.operands, *op.results, *lowered.reads):
                last_use[self.base(value)] = i
        arena = _Arena()
        live: dict[SSAValue, int] = {}
        plan = BufferPlan({}, {}, set(), 0)
        for i, (op, lowered) in enumerate(plans):
            if lowered.alias:
                plan.aliases.add(op)
            else:
                offsets = []
                for result in op.results:
                    if result in outputs:
                        offsets.append(-1)
                        continue
                    ident, offset = arena.alloc(units(result))
                    live[result] = ident
                    offsets.append(offset)
                plan.results[op] = offsets
                scratch = [arena.alloc(size) for size in lowered.temps]
                plan.scratch[op] = [offset for _, offset in scratch]
                for ident, _ in scratch:
                    arena.free(ident)
            for value, ident in list(live.items()):
                if last_use.get(value, i) <= i:
                    arena.free(ident)
                    del live[value]
        plan.workspace_floats = arena.peak
        return plan

    def _apply_plan(
        self, plans: list[tuple[Operation, Lowered]], plan: BufferPlan, returned: list[SSAValue]
    ) -> dict[Operation, list[str]]:
        """Give every produced value its storage; returns each op's scratch pointers."""
        outputs = self._output_of(plans, returned)
        temps_of: dict[Operation, list[str]] = {}
        lines: Lines = []
        for i, (op, lowered) in enumerate(plans):
            if lowered.alias:
                continue
            for result, offset in zip(op.results, plan.results[op], strict=True):
                if offset < 0:
                    self._storage[result] = Storage("out", outputs[result], ctype(result))
                    lines.append(f" *   op {i} result: {self._storage[result].expr()}")
                else:
                    self._storage[result] = Storage("ws", offset, ctype(result))
                    lines.append(f" *   op {i} result: ws[{offset}..+{units(result)}]")
            temps_of[op] = [f"(ws + {offset})" for offset in plan.scratch[op]]
            for offset, size in zip(plan.scratch[op], lowered.temps, strict=True):
                lines.append(f" *   op {i} scratch: ws[{offset}..+{size}]")
        self._plan_comment = (
            ["/*", " * Buffer plan (offsets in floats):", *lines, " */"] if lines else []
        )
        return temps_of


def record_plan(func: FuncOp, plan: BufferPlan) -> None:
    """Write `plan` on the entry and its ops (`cpu.offsets`, `cpu.scratch`, `cpu.alias`,
    `cpu.workspace`; byte offsets), replacing an earlier plan."""
    for op in func.body.block.ops:
        for name in (cpu.PLAN_OFFSETS, cpu.PLAN_SCRATCH, cpu.PLAN_ALIAS):
            op.attributes.pop(name, None)
    for op in plan.aliases:
        op.attributes[cpu.PLAN_ALIAS] = UnitAttr()
    for op, offsets in plan.results.items():
        op.attributes[cpu.PLAN_OFFSETS] = DenseArrayBase.from_list(
            i64, [o * 4 if o >= 0 else -1 for o in offsets]
        )
        if plan.scratch[op]:
            op.attributes[cpu.PLAN_SCRATCH] = DenseArrayBase.from_list(
                i64, [o * 4 for o in plan.scratch[op]]
            )
    func.attributes[cpu.PLAN_WORKSPACE] = IntegerAttr(plan.workspace_floats * 4, i64)


def _byte_offsets(op: Operation, name: str) -> list[int] | None:
    attr = op.attributes.get(name)
    if attr is None:
        return None
    if not isinstance(attr, DenseArrayBase) or attr.elt_type != i64:
        raise LoweringError(op, f"'{name}' must be an array<i64: ...> of byte offsets")
    return [int(v) for v in attr.get_values()]


def read_plan(
    func: FuncOp,
    plans: list[tuple[Operation, Lowered]],
    outputs: dict[SSAValue, int],
) -> BufferPlan:
    """The plan recorded by `cpu-plan-memory`, checked against the ops (offsets in floats)."""
    workspace = func.attributes.get(cpu.PLAN_WORKSPACE)
    if workspace is None:
        raise LoweringError(
            func, f"the entry has no buffer plan ('{cpu.PLAN_WORKSPACE}'): run cpu-plan-memory"
        )
    if not isinstance(workspace, IntegerAttr) or workspace.value.data < 0:
        raise LoweringError(func, f"'{cpu.PLAN_WORKSPACE}' must be a non-negative integer")
    limit = workspace.value.data
    align = ALIGN_FLOATS * 4
    if limit % 4:
        raise LoweringError(func, f"'{cpu.PLAN_WORKSPACE}' must be a multiple of 4 bytes")
    plan = BufferPlan({}, {}, set(), limit // 4)
    for op, lowered in plans:
        if lowered.alias:
            if cpu.PLAN_ALIAS not in op.attributes:
                raise LoweringError(op, f"the op is an alias but lacks '{cpu.PLAN_ALIAS}'")
            plan.aliases.add(op)
            continue
        if cpu.PLAN_ALIAS in op.attributes:
            raise LoweringError(op, f"'{cpu.PLAN_ALIAS}' on an op that runs a kernel")
        offsets = _byte_offsets(op, cpu.PLAN_OFFSETS)
        if offsets is None or len(offsets) != len(op.results):
            raise LoweringError(
                op, f"expected '{cpu.PLAN_OFFSETS}' with one offset per result (the plan)"
            )
        scratch = _byte_offsets(op, cpu.PLAN_SCRATCH) or []
        if len(scratch) != len(lowered.temps):
            raise LoweringError(
                op,
                f"the kernel needs {len(lowered.temps)} scratch buffers, the plan has "
                f"{len(scratch)}",
            )
        sizes = [units(r) * 4 for r in op.results]
        for result, offset in zip(op.results, offsets, strict=True):
            if offset == -1 and result not in outputs:
                raise LoweringError(op, "offset -1 for a value that is not an entry result")
        for offset, size in [
            *zip(offsets, sizes),
            *((s, t * 4) for s, t in zip(scratch, lowered.temps)),
        ]:
            if offset == -1:
                continue
            if offset < 0 or offset % align or offset + size > limit:
                raise LoweringError(
                    op,
                    f"planned offset {offset} (+{size} bytes) is not {align}-byte aligned "
                    f"inside the {limit}-byte workspace",
                )
        plan.results[op] = [o // 4 if o >= 0 else -1 for o in offsets]
        plan.scratch[op] = [o // 4 for o in scratch]
    return plan


def plan_function(func: FuncOp) -> BufferPlan:
    """Compute the buffer plan of one entry and record it on it (`cpu-plan-memory`)."""
    plan = FunctionCodegen(func, "plan", ConstantTable()).plan_memory()
    record_plan(func, plan)
    return plan


def generate_function(func: FuncOp, c_name: str, constants: ConstantTable) -> GeneratedFunction:
    """Lower one entry to C (raises LoweringError on an op it cannot run); the entry is
    planned first (`plan_function`) when it carries no buffer plan."""
    if cpu.PLAN_WORKSPACE not in func.attributes:
        plan_function(func)
    return FunctionCodegen(func, c_name, constants).generate()


def assemble_source(functions: Sequence[GeneratedFunction]) -> str:
    """The translation unit: the kernel library's glue headers and the helpers the functions
    use (`library.glue_source`; with `IRC_CPU_KERNEL_LIBRARY=0` the kernel snippets used,
    bodies and all), a banner, then the functions."""
    from irc.targets.cpu import library

    snippets = set().union(*(f.snippets for f in functions)) if functions else {"common"}
    banner = "/* Generated by irc's CPU target (lower-cpu); do not edit. */\n"
    if library.enabled():
        kernels = library.glue_source(snippets)
    else:
        kernels = csrc.source_for(snippets)
    return banner + kernels + "\n" + "\n".join(f.source for f in functions)
